//! One placeholder on the host: made already holding its mark, told from
//! a user's file by that mark, held by each run that uses it with a write
//! lock (an open file description lock, which a command that can only
//! read the file cannot take) on its own inode or its folder's mark, and
//! removed only while no other run holds it and it holds nothing else.
//!
//! The mark: a file holds one line, [`FILE_MARK`], a comment saying what
//! it is; a folder holds one entry, `.apply-seccomp-placeholder`, a file
//! saying the same. Either is made under a passing name no one can guess
//! and renamed once marked: no moment shows the 0-byte file or empty
//! folder the clients delete, no name a command planted can stop it, and
//! a shim killed midway leaves at most a passing name, which the holder
//! of the next run with that place removes.
//!
//! What a run's holder does at the end ([`shape`], [`remove`]) runs in
//! the shim's memory (hold.rs): system calls through `sys` only, no
//! allocation.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use nix::errno::Errno;

use super::passing::passing_name;
use crate::sys;

/// What a placeholder is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A file on the host, `/dev/null` bound on it.
    File,
    /// A folder on the host, an empty folder bound on it.
    Dir,
}

/// A held file placeholder's content: not the 0-byte file the clients
/// delete; a comment to every reader of those names on the host that
/// takes comments (shell start-up files, git and ripgrep configuration),
/// and no more JSON to the JSON settings than the empty file was; and a
/// line no one's own file holds alone by chance. (The command sees
/// `/dev/null` there.)
pub const FILE_MARK: &[u8] = b"# A placeholder: apply-seccomp's bwrap shim keeps it here while a \
sandboxed command protects this path, and removes it when none does.\n";
/// The one entry of a held folder placeholder, and what it says to a
/// person who finds it.
pub const DIR_MARK: &CStr = c".apply-seccomp-placeholder";
const DIR_MARK_TEXT: &[u8] =
    b"This folder is a placeholder: a sandbox (apply-seccomp's bwrap shim) \
keeps it here while a sandboxed command protects this path, and removes it when none does.\n";

/// A file's device and inode.
pub type Id = (u64, u64);

fn identity(st: &libc::stat) -> Id {
    (st.st_dev, st.st_ino)
}

pub(super) fn kind_of(st: &libc::stat) -> u32 {
    st.st_mode & libc::S_IFMT
}

/// A placeholder, open.
pub struct Held {
    pub kind: Kind,
    pub fd: OwnedFd,
    pub id: Id,
    /// A folder's mark, open for writing: where its holds are taken.
    pub mark: Option<OwnedFd>,
}

impl Held {
    /// The file a run's hold is taken on (an open file description
    /// lock, which needs it open for writing): the placeholder file
    /// itself, or a folder's mark.
    pub fn hold_fd(&self) -> RawFd {
        self.mark.as_ref().unwrap_or(&self.fd).as_raw_fd()
    }
}

/// Whether a run other than the caller's holds the placeholder whose
/// hold file is open on `fd`. Read locks, which a command that can only
/// read it could take, do not count. Allocates nothing.
pub fn held_by_another(fd: RawFd) -> bool {
    sys::ofd_write_locked(fd).unwrap_or(true)
}

/// The hold of a run: a write lock on one byte of the placeholder's hold
/// file (`at`: this run's own, its shim's pid), which lasts while any
/// descriptor of it is open, however its holder ends; a pid the kernel
/// gave again while an old holder still holds its byte moves on.
pub fn hold(held: &Held, at: u64) -> Result<(), Errno> {
    let mut last = Errno::EAGAIN;
    for k in 0..8 {
        match sys::ofd_lock(held.hold_fd(), libc::F_WRLCK, at + (k << 22)) {
            Ok(()) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The folder `name` in `dir`, opened, not through a link.
pub(super) fn open_folder(dir: RawFd, name: &CStr) -> Result<OwnedFd, Errno> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
    sys::open_at(dir, name, flags, 0).map(sys::owned)
}

fn cstring(name: &OsStr) -> Result<CString, Errno> {
    CString::new(name.as_bytes()).map_err(|_| Errno::EINVAL)
}

/// Writes all of `bytes` to `fd`.
fn write_all(fd: RawFd, bytes: &[u8]) -> Result<(), Errno> {
    match sys::raw_write(fd, bytes)? {
        n if n == bytes.len() => Ok(()),
        _ => Err(Errno::EIO),
    }
}

/// Makes the placeholder `name` in `dir`, already marked. `EEXIST`:
/// something is there. Made under a passing name no one can guess, then
/// renamed into place (`RENAME_NOREPLACE`, which fails if anything is
/// there): no name a command planted decides whether it is made. (An
/// unnamed `O_TMPFILE` file linked through `/proc/self/fd` costs a procfs
/// walk per file, 7% of the keeper's time for a line's 17 places.)
pub fn make(dir: RawFd, name: &OsStr, kind: Kind) -> Result<Held, Errno> {
    let cname = cstring(name)?;
    let passing = passing_name(name)?;
    let fd = match kind {
        Kind::File => {
            let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
            sys::open_at(dir, &passing, flags, 0o644).map(sys::owned)?
        }
        Kind::Dir => {
            sys::mkdir_at(dir, &passing, 0o755)?;
            open_folder(dir, &passing)?
        }
    };
    let marked = match kind {
        Kind::File => write_all(fd.as_raw_fd(), FILE_MARK).map(|()| None),
        Kind::Dir => put_dir_mark(fd.as_raw_fd()).map(|m| Some(sys::owned(m))),
    };
    let named = marked.and_then(|m| sys::rename_noreplace(dir, &passing, &cname).map(|()| m));
    let id = named.and_then(|m| sys::stat_fd(fd.as_raw_fd()).map(|st| (identity(&st), m)));
    match id {
        Ok((id, mark)) => Ok(Held { kind, fd, id, mark }),
        Err(e) => {
            clear_passing(dir, &passing);
            Err(e)
        }
    }
}

/// Writes the folder mark into the folder open on `folder`: the mark,
/// open for reading and writing. Allocates nothing.
fn put_dir_mark(folder: RawFd) -> Result<RawFd, Errno> {
    let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    let mark = sys::open_at(folder, DIR_MARK, flags, 0o644)?;
    match write_all(mark, DIR_MARK_TEXT) {
        Ok(()) => Ok(mark),
        Err(e) => {
            sys::raw_close(mark);
            Err(e)
        }
    }
}

/// The placeholder of the shim's at `name` in `dir`, opened, if that is
/// what is there (a file: holding only its mark; a folder: its mark in
/// it); else `EEXIST`.
pub fn adopt(dir: RawFd, name: &OsStr) -> Result<Held, Errno> {
    let cname = cstring(name)?;
    adopt_found(dir, &cname, &sys::stat_at(dir, &cname)?)
}

/// [`adopt`], with what is there already looked at (`st`).
pub fn adopt_found(dir: RawFd, name: &CStr, st: &libc::stat) -> Result<Held, Errno> {
    match kind_of(st) {
        libc::S_IFREG => {
            let fd = marked_file(dir, name, st)?;
            Ok(Held {
                kind: Kind::File,
                fd: sys::owned(fd),
                id: identity(st),
                mark: None,
            })
        }
        libc::S_IFDIR => {
            let fd = open_folder(dir, name)?;
            let flags = libc::O_RDWR | libc::O_NOFOLLOW | libc::O_NONBLOCK;
            let mark = sys::open_at(fd.as_raw_fd(), DIR_MARK, flags, 0).map(sys::owned);
            let marked = mark.as_ref().is_ok_and(|m| {
                sys::stat_fd(m.as_raw_fd()).is_ok_and(|m| kind_of(&m) == libc::S_IFREG)
            });
            if !marked || identity(&sys::stat_fd(fd.as_raw_fd())?) != identity(st) {
                return Err(Errno::EEXIST);
            }
            Ok(Held {
                kind: Kind::Dir,
                id: identity(st),
                fd,
                mark: mark.ok(),
            })
        }
        _ => Err(Errno::EEXIST),
    }
}

/// The file `name` in `dir` (which `st` describes), opened for reading
/// and writing (a hold needs that), if it is a file placeholder of the
/// shim's: only its mark, the same inode. Else `EEXIST`. Allocates
/// nothing (the holder calls it).
pub(super) fn marked_file(dir: RawFd, name: &CStr, st: &libc::stat) -> Result<RawFd, Errno> {
    if kind_of(st) != libc::S_IFREG || st.st_size != FILE_MARK.len() as i64 {
        return Err(Errno::EEXIST);
    }
    let flags = libc::O_RDWR | libc::O_NOFOLLOW | libc::O_NONBLOCK;
    let fd = sys::open_at(dir, name, flags, 0)?;
    let mut head = [0u8; FILE_MARK.len() + 1];
    let ours = sys::pread(fd, &mut head, 0).is_ok_and(|n| &head[..n] == FILE_MARK)
        && sys::stat_fd(fd).is_ok_and(|now| identity(&now) == identity(st));
    if !ours {
        sys::raw_close(fd);
        return Err(Errno::EEXIST);
    }
    Ok(fd)
}

/// What a held placeholder is now, once no run holds it.
#[derive(Debug, PartialEq, Eq)]
pub enum Shape {
    /// Only its mark: it can go.
    Only,
    /// A folder with its mark and other placeholders in it (the shim's, or
    /// bubblewrap's empty mount points, which their clients remove): it
    /// goes once they are gone.
    Holding,
    /// Not what the shim made any more (gone, replaced, written into).
    NotOurs,
}

/// Whether `name` in the folder `dir` is a placeholder: the shim's (a
/// marked file or folder) or an empty one of bubblewrap's. Allocates
/// nothing.
fn placeholder_in(dir: RawFd, name: &CStr) -> bool {
    let Ok(st) = sys::stat_at(dir, name) else {
        return false;
    };
    match kind_of(&st) {
        libc::S_IFREG if st.st_size == 0 => true,
        libc::S_IFREG => marked_file(dir, name, &st).map(sys::raw_close).is_ok(),
        libc::S_IFDIR => {
            let Ok(inner) = open_folder(dir, name) else {
                return false;
            };
            let mut count = 0;
            let mut marked = false;
            let mut buf = [0u8; 1024];
            let read = sys::each_name(inner.as_raw_fd(), &mut buf, |n| {
                count += 1;
                marked |= n == DIR_MARK;
                count <= 3
            });
            read.is_ok() && (count <= 2 || marked)
        }
        _ => false,
    }
}

/// The shape of the placeholder held on `fd` (of `kind`, inode `id`),
/// still at `name` in `dir`. Allocates nothing.
pub fn shape(dir: RawFd, name: &CStr, kind: Kind, fd: RawFd, id: Id) -> Shape {
    let Ok(st) = sys::stat_at(dir, name) else {
        return Shape::NotOurs;
    };
    if identity(&st) != id {
        return Shape::NotOurs;
    }
    match kind {
        Kind::File => {
            let mut head = [0u8; FILE_MARK.len() + 1];
            match sys::pread(fd, &mut head, 0) {
                Ok(n) if &head[..n] == FILE_MARK && st.st_size == FILE_MARK.len() as i64 => {
                    Shape::Only
                }
                _ => Shape::NotOurs,
            }
        }
        Kind::Dir => {
            let (mut marked, mut others, mut foreign) = (false, false, false);
            let mut buf = [0u8; 2048];
            let read = sys::each_name(fd, &mut buf, |n| {
                match n.to_bytes() {
                    b"." | b".." => {}
                    _ if n == DIR_MARK => marked = true,
                    // Another placeholder in it; anything else is someone's.
                    _ if placeholder_in(fd, n) => others = true,
                    _ => foreign = true,
                }
                !foreign
            });
            match (read.is_ok() && !foreign, marked, others) {
                (true, true, false) => Shape::Only,
                (true, true, true) => Shape::Holding,
                _ => Shape::NotOurs,
            }
        }
    }
}

/// Removes the placeholder held on `fd` from `name` in `dir` (a folder:
/// its mark, then it); false when a folder could not go (something came
/// into it meanwhile: its mark is put back). Allocates nothing.
pub fn remove(dir: RawFd, name: &CStr, kind: Kind, fd: RawFd) -> bool {
    match kind {
        Kind::File => sys::unlink_at(dir, name, 0).is_ok(),
        Kind::Dir => {
            let _ = sys::unlink_at(fd, DIR_MARK, 0);
            match sys::unlink_at(dir, name, libc::AT_REMOVEDIR) {
                Ok(()) | Err(Errno::ENOENT) => true,
                Err(_) => {
                    if let Ok(mark) = put_dir_mark(fd) {
                        sys::raw_close(mark);
                    }
                    false
                }
            }
        }
    }
}

/// Removes what is at the passing name `passing`, if it is what a shim
/// killed midway leaves: a file empty or holding only its mark, a folder
/// holding only its mark. Allocates nothing.
fn clear_passing(dir: RawFd, passing: &CStr) {
    let Ok(st) = sys::stat_at(dir, passing) else {
        return;
    };
    let empty = kind_of(&st) == libc::S_IFREG && st.st_size == 0;
    if empty || marked_file(dir, passing, &st).map(sys::raw_close).is_ok() {
        let _ = sys::unlink_at(dir, passing, 0);
    } else if kind_of(&st) == libc::S_IFDIR {
        if let Ok(stale) = open_folder(dir, passing) {
            let _ = sys::unlink_at(stale.as_raw_fd(), DIR_MARK, 0);
        }
        let _ = sys::unlink_at(dir, passing, libc::AT_REMOVEDIR);
    }
}

/// Removes each name in `dir` that `stale` says is a passing name of a
/// place there, where it holds only a mark (or nothing): what a shim
/// killed midway left. One look at the folder for all its places. With
/// the per-user lock held no shim of the user's is making one. Allocates
/// nothing (the holder calls it, after the run).
pub fn clear_stale(dir: RawFd, stale: impl Fn(&[u8]) -> bool) {
    let mut buf = [0u8; 2048];
    let _ = sys::each_name(dir, &mut buf, |n| {
        if stale(n.to_bytes()) {
            clear_passing(dir, n);
        }
        true
    });
}
