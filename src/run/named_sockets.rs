//! The host sockets a user names (`APPLY_SECCOMP_ALLOW_UNIX`), resolved
//! once when a run starts, for either keeper of the policy (the kernel's
//! Landlock rule on each, sockets/kernel.rs; the stub's inode match,
//! sockets.rs). Issue 55: a path a command can change is no name. If a
//! folder on the way can be written from inside (by this process, which
//! runs where the command will: inside bubblewrap, with the same mounts,
//! user and rights), a run can replace the socket there, or put a link in
//! its place, and the next run's start would name whatever it put there
//! ("one run changes which socket the next run's named socket is"). So
//! each name is walked from `/` (walk.rs) without following anything
//! blindly: a name in a folder writable from here refuses it, a link
//! included; links in folders nobody here can write (`/var/run` ->
//! `/run`) are followed. The socket is the one the walk ends on, open
//! `O_PATH` relative to the folder checked, never through a link.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::{sys, walk};

/// A named socket, open (`O_PATH`) on the socket file the path led to
/// when the run started.
pub struct Found {
    pub path: PathBuf,
    pub file: OwnedFd,
    pub dev: u64,
    pub ino: u64,
}

/// Each of `paths` found, or why it names nothing this run may reach
/// (for `SRT_DEBUG` and the doctor).
pub fn resolve(paths: &[PathBuf]) -> (Vec<Found>, Vec<String>) {
    let mut found = Vec::new();
    let mut notes = Vec::new();
    for path in paths {
        match find(path) {
            Ok(f) => {
                notes.push(format!("{} (a socket)", path.display()));
                found.push(f);
            }
            Err(why) => notes.push(format!("{} ({why}: not allowed)", path.display())),
        }
    }
    (found, notes)
}

/// Whether this process could replace the name `n` (in the folder
/// `n.folder`): the folder lies on a mount it may write, and it may
/// write the folder or could make it writable (its owner: `chmod` it
/// writable, put a link in, `chmod` it back; issue 67, item 6), unless
/// the folder is sticky (`/tmp`) and neither the entry nor the folder is
/// its own (root, holding `CAP_FOWNER`, is not held back by the bit).
fn replaceable(n: &walk::Name<'_>) -> Option<String> {
    let dir = n.folder;
    if walk::on_read_only_mount(dir) {
        return None;
    }
    let why = || {
        Some(format!(
            "{} lies in a folder that can be written from inside the sandbox: a command could put \
             another socket or a link there for the next run",
            n.path.display()
        ))
    };
    let Ok(folder) = sys::stat_fd(dir.as_raw_fd()) else {
        return why();
    };
    if !walk::writable_by_me(dir) && !mine(dir, &folder) {
        return None;
    }
    let root = nix::unistd::geteuid().is_root();
    let sticky = folder.st_mode & libc::S_ISVTX != 0;
    if sticky && !root && !mine(n.fd, n.st) && !mine(dir, &folder) {
        return None;
    }
    why()
}

/// Whether this process owns the file open (`O_PATH`) on `fd`. Its uid
/// says so, but in a user namespace that maps only some users a file of
/// an unmapped one shows the overflow uid (65534), which may be this
/// process's own (issue 67, item 9): there the kernel is asked, by a
/// `chmod` to the mode the file has, which only its owner may make (it
/// changes nothing but the file's change time; a link, or a folder whose
/// setgid bit the call could clear, is taken for this process's own).
fn mine(fd: &OwnedFd, st: &libc::stat) -> bool {
    let euid = nix::unistd::geteuid().as_raw();
    if st.st_uid != euid {
        return false;
    }
    if euid != overflow_uid() || every_user_mapped() {
        return true;
    }
    let kind = st.st_mode & libc::S_IFMT;
    if kind == libc::S_IFLNK || st.st_mode & libc::S_ISGID != 0 {
        return true;
    }
    let mode = nix::sys::stat::Mode::from_bits_truncate(st.st_mode & 0o7777);
    nix::sys::stat::fchmodat(
        nix::fcntl::AT_FDCWD,
        format!("/proc/self/fd/{}", fd.as_raw_fd()).as_str(),
        mode,
        nix::sys::stat::FchmodatFlags::FollowSymlink,
    ) != Err(nix::errno::Errno::EPERM)
}

/// The uid an unmapped owner shows as (`/proc/sys/kernel/overflowuid`).
fn overflow_uid() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/overflowuid")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(65534)
}

/// Whether this user namespace maps every user (the initial one): then
/// no owner is unmapped.
fn every_user_mapped() -> bool {
    std::fs::read_to_string("/proc/self/uid_map").is_ok_and(|m| {
        m.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
        })
    })
}

/// The walk (walk.rs), each name refused where [`replaceable`] says it
/// could be replaced, the links met (in folders nobody here can change)
/// followed; the socket it ends on.
pub fn find(path: &Path) -> Result<Found, String> {
    let end = walk::walk(path, &mut |n| match replaceable(&n) {
        Some(why) => Err(why),
        None => Ok(()),
    })?;
    if end.st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err("not a socket".into());
    }
    Ok(Found {
        path: path.to_path_buf(),
        file: end.fd,
        dev: end.st.st_dev,
        ino: end.st.st_ino,
    })
}
