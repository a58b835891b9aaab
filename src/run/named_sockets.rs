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

/// Whether this process could replace the entry `st` (at `shown`) of the
/// folder open on `dir`: the folder lies on a mount it may write and it
/// may write the folder, unless the folder is sticky (`/tmp`) and the
/// entry is another user's (root, holding `CAP_FOWNER`, is not held back
/// by the bit).
fn replaceable(dir: &OwnedFd, st: &libc::stat, shown: &Path) -> Option<String> {
    if walk::on_read_only_mount(dir) || !walk::writable_by_me(dir) {
        return None;
    }
    let euid = nix::unistd::geteuid();
    let sticky = sys::stat_fd(dir.as_raw_fd()).is_ok_and(|d| d.st_mode & libc::S_ISVTX != 0);
    if sticky && !euid.is_root() && st.st_uid != euid.as_raw() {
        return None;
    }
    Some(format!(
        "{} lies in a folder that can be written from inside the sandbox: a command could put \
         another socket or a link there for the next run",
        shown.display()
    ))
}

/// The walk (walk.rs), each name refused where [`replaceable`] says it
/// could be replaced, the links met (in folders nobody here can change)
/// followed; the socket it ends on.
pub fn find(path: &Path) -> Result<Found, String> {
    let end = walk::walk(path, &mut |n| match replaceable(n.folder, n.st, n.path) {
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
