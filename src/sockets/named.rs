//! The host sockets a user names (`APPLY_SECCOMP_ALLOW_UNIX`), resolved
//! once when a run starts, for either keeper of the policy (the kernel's
//! Landlock rule on each, sockets/kernel.rs; the stub's inode match,
//! sockets.rs). Issue 55: a path a command can change is no name. If a
//! folder on the way can be written from inside (by this process, which
//! runs where the command will: inside bubblewrap, with the same mounts,
//! user and rights), a run can replace the socket there, or put a link in
//! its place, and the next run's start would name whatever it put there
//! ("one run changes which socket the next run's named socket is"). So
//! each name is walked from `/` without following anything blindly: a
//! folder writable from here refuses it, and so does a link met in one;
//! links in folders nobody here can write (`/var/run` -> `/run`) are
//! followed. The socket is then opened `O_PATH` at the end of the walk,
//! relative to the folder checked, never through a link.

use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::sys;

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
    let read_only = nix::sys::statvfs::fstatvfs(dir)
        .is_ok_and(|v| v.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY));
    if read_only {
        return None;
    }
    let c = CString::new(format!("/proc/self/fd/{}", dir.as_raw_fd())).ok()?;
    if nix::unistd::access(c.as_c_str(), nix::unistd::AccessFlags::W_OK).is_err() {
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

/// The walk: each name opened `O_PATH|O_NOFOLLOW` from the folder
/// before it, refused where [`replaceable`] says it could be replaced; a
/// link met (in a folder nobody here can change) is read and its target
/// walked in turn (at most 40).
pub fn find(path: &Path) -> Result<Found, String> {
    if !path.is_absolute() {
        return Err("relative".into());
    }
    let open = |dir: libc::c_int, name: &std::ffi::CStr, flags| {
        sys::open_at(
            dir,
            name,
            flags | libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0,
        )
        .map(sys::owned)
    };
    let root = || open(libc::AT_FDCWD, c"/", libc::O_DIRECTORY).map_err(|e| e.desc().to_string());
    let mut todo: Vec<OsString> = Vec::new();
    push(&mut todo, path);
    let mut here = PathBuf::from("/");
    let mut dir = root()?;
    let mut links = 0;
    while let Some(name) = todo.pop() {
        if name == ".." {
            here.pop();
            dir = open(dir.as_raw_fd(), c"..", libc::O_DIRECTORY)
                .map_err(|e| e.desc().to_string())?;
            continue;
        }
        let cname = CString::new(name.as_bytes()).map_err(|_| "a NUL in the path".to_string())?;
        let next = here.join(&name);
        let fd = open(dir.as_raw_fd(), &cname, 0)
            .map_err(|e| format!("{}: {}", next.display(), e.desc()))?;
        let st = sys::stat_fd(fd.as_raw_fd()).map_err(|e| e.desc().to_string())?;
        if let Some(why) = replaceable(&dir, &st, &next) {
            return Err(why);
        }
        match st.st_mode & libc::S_IFMT {
            libc::S_IFLNK => {
                links += 1;
                if links > 40 {
                    return Err("too many links".into());
                }
                // The link opened above, read where it is.
                let target = nix::fcntl::readlinkat(&fd, "")
                    .map(PathBuf::from)
                    .map_err(|e| format!("{}: {}", next.display(), e.desc()))?;
                if target.is_absolute() {
                    here = PathBuf::from("/");
                    dir = root()?;
                }
                push(&mut todo, &target);
            }
            libc::S_IFDIR => {
                here = next;
                dir = fd;
            }
            libc::S_IFSOCK if todo.is_empty() => {
                return Ok(Found {
                    path: path.to_path_buf(),
                    file: fd,
                    dev: st.st_dev,
                    ino: st.st_ino,
                });
            }
            _ if todo.is_empty() => return Err("not a socket".into()),
            _ => return Err(format!("{}: not a folder", next.display())),
        }
    }
    Err("a folder, not a socket".into())
}

/// `path`'s names pushed so that the first pops first.
fn push(todo: &mut Vec<OsString>, path: &Path) {
    for c in path.components().rev() {
        match c {
            Component::Normal(n) => todo.push(n.to_owned()),
            Component::ParentDir => todo.push("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
}
