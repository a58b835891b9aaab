//! A path walked one name at a time from `/`, for the checks that must
//! see every name on the way, not only where the path ends: what the
//! doctor may run (doctor/trust.rs) and the host sockets a user names
//! (named_sockets.rs). Each name is opened `O_PATH|O_NOFOLLOW` relative
//! to the folder before it and shown to the caller's check with that
//! folder; a link is read where it is and its target walked in turn (at
//! most 40), so what the walk ends on is the file the checked names lead
//! to. The shim's route (shim/protect/steps.rs) splits paths the same way.

use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::sys;

/// One name on the way.
pub struct Name<'a> {
    /// The folder it is in.
    pub folder: &'a OwnedFd,
    /// The name itself, open `O_PATH`, not followed.
    pub fd: &'a OwnedFd,
    pub st: &'a libc::stat,
    /// Where it is, the links before it resolved.
    pub path: &'a Path,
}

/// Where a walk ends: the name the path leads to, neither a folder nor a
/// link, open `O_PATH`.
pub struct End {
    pub path: PathBuf,
    pub fd: OwnedFd,
    pub st: libc::stat,
}

fn open_at(dir: libc::c_int, name: &std::ffi::CStr, flags: libc::c_int) -> Result<OwnedFd, String> {
    sys::open_at(
        dir,
        name,
        flags | libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        0,
    )
    .map(sys::owned)
    .map_err(|e| e.desc().to_string())
}

/// `/`, open as the walk opens each folder.
pub fn root() -> Result<OwnedFd, String> {
    open_at(libc::AT_FDCWD, c"/", libc::O_DIRECTORY)
}

/// Walks the absolute `path`, `check` seeing every name on the way (not
/// `/` itself); its first error ends the walk.
pub fn walk(
    path: &Path,
    check: &mut dyn FnMut(Name<'_>) -> Result<(), String>,
) -> Result<End, String> {
    if !path.is_absolute() {
        return Err("the path is relative".into());
    }
    let mut todo: Vec<OsString> = Vec::new();
    push_components(&mut todo, path);
    let mut here = PathBuf::from("/");
    let mut folder = root()?;
    let mut links = 0;
    while let Some(name) = todo.pop() {
        if name == ".." {
            here.pop();
            folder = open_at(folder.as_raw_fd(), c"..", libc::O_DIRECTORY)?;
            continue;
        }
        let cname = CString::new(name.as_bytes()).map_err(|_| "a NUL in the path".to_string())?;
        let next = here.join(&name);
        let fd = open_at(folder.as_raw_fd(), &cname, 0)
            .map_err(|e| format!("{}: {e}", next.display()))?;
        let st = sys::stat_fd(fd.as_raw_fd()).map_err(|e| e.desc().to_string())?;
        check(Name {
            folder: &folder,
            fd: &fd,
            st: &st,
            path: &next,
        })?;
        match st.st_mode & libc::S_IFMT {
            libc::S_IFLNK => {
                links += 1;
                if links > 40 {
                    return Err(format!("{}: too many links", path.display()));
                }
                // The link opened above, read where it is.
                let target = nix::fcntl::readlinkat(&fd, "")
                    .map(PathBuf::from)
                    .map_err(|e| format!("{}: {}", next.display(), e.desc()))?;
                if target.is_absolute() {
                    here = PathBuf::from("/");
                    folder = root()?;
                }
                push_components(&mut todo, &target);
            }
            libc::S_IFDIR => {
                here = next;
                folder = fd;
            }
            _ if todo.is_empty() => return Ok(End { path: next, fd, st }),
            _ => return Err(format!("{}: not a folder", next.display())),
        }
    }
    Err(format!("{} is a folder", path.display()))
}

/// Whether the file open on `fd` lies on a read-only mount.
pub fn on_read_only_mount(fd: &OwnedFd) -> bool {
    nix::sys::statvfs::fstatvfs(fd)
        .is_ok_and(|v| v.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY))
}

/// Whether this process may write the file open (`O_PATH`) on `fd`, by
/// its permission bits and credentials (`access` through
/// `/proc/self/fd`, which must be this process's `/proc`).
pub fn writable_by_me(fd: &OwnedFd) -> bool {
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .is_ok_and(|c| nix::unistd::access(c.as_c_str(), nix::unistd::AccessFlags::W_OK).is_ok())
}

/// `path`'s names pushed so that the first pops first.
pub fn push_components(todo: &mut Vec<OsString>, path: &Path) {
    for c in path.components().rev() {
        match c {
            Component::Normal(n) => todo.push(n.to_owned()),
            Component::ParentDir => todo.push("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
}
