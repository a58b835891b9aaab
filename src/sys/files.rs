//! File calls made with the raw instruction (raw.rs), above all those of
//! the bwrap shim's placeholder keeper (shim/keep/): the keeper's holder
//! runs in the shim's memory while the shim goes on to exec bubblewrap
//! ([`super::spawn_shared`]), so it may not touch libc's errno nor
//! allocate, and the shim makes the same calls through the same wrappers.
//! `renameat2(RENAME_NOREPLACE)`; `stat`, `open`, `mkdir` and
//! `unlink` relative to a folder; reading a folder's names into a buffer;
//! closing every descriptor but some; `pidfd_open`, `setsid`, waiting for
//! a descriptor. The outer stub uses `open_at` and the
//! small-file reads (the mount guard, the capability-free ruleset, the
//! terminal): one system call each where musl's `open` makes two (it
//! follows `O_CLOEXEC` with an `fcntl`). `read_file_at` allocates: the
//! stub's only, never between fork and exec.

use std::ffi::CStr;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd, RawFd};

use nix::errno::Errno;

use super::raw::{numeric, raw_result, syscall6};

/// `renameat2(dir, old, dir, new, RENAME_NOREPLACE)`: the rename, or
/// `EEXIST` if `new` is there; `EINVAL` or `ENOSYS` where the file system
/// or the kernel cannot do it.
pub fn rename_noreplace(dir: RawFd, old: &CStr, new: &CStr) -> Result<(), Errno> {
    // SAFETY: both names are NUL-terminated strings alive for the call,
    // which only reads them.
    raw_result(unsafe {
        syscall6(
            libc::SYS_renameat2,
            [
                dir as usize,
                old.as_ptr() as usize,
                dir as usize,
                new.as_ptr() as usize,
                libc::RENAME_NOREPLACE as usize,
                0,
            ],
        )
    })
    .map(drop)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: what `name` itself is.
pub fn stat_at(dir: RawFd, name: &CStr) -> Result<libc::stat, Errno> {
    stat_flags(dir, name, libc::AT_SYMLINK_NOFOLLOW)
}

/// `fstat(fd)`.
pub fn stat_fd(fd: RawFd) -> Result<libc::stat, Errno> {
    stat_flags(fd, c"", libc::AT_EMPTY_PATH)
}

fn stat_flags(dir: RawFd, name: &CStr, flags: libc::c_int) -> Result<libc::stat, Errno> {
    // SAFETY: a zeroed stat is a valid buffer for the kernel to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `name` is NUL-terminated; the kernel writes one stat into
    // `st`, alive for the call.
    raw_result(unsafe {
        syscall6(
            libc::SYS_newfstatat,
            [
                dir as usize,
                name.as_ptr() as usize,
                (&raw mut st) as usize,
                flags as usize,
                0,
                0,
            ],
        )
    })?;
    Ok(st)
}

/// The whole of the small file `name` in `dir` (procfs: its size says
/// 0), in plain reads into a buffer that doubles when full: an open, the
/// reads, a close.
pub fn read_file_at(dir: RawFd, name: &CStr) -> Result<Vec<u8>, Errno> {
    let fd = owned(open_at(dir, name, libc::O_RDONLY, 0)?);
    let mut text = vec![0u8; 4096];
    let mut len = 0;
    loop {
        if len == text.len() {
            text.resize(2 * len, 0);
        }
        match super::raw_read(std::os::fd::AsRawFd::as_raw_fd(&fd), &mut text[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    text.truncate(len);
    Ok(text)
}

/// The start of the file `path`: one read into `buf`, how many bytes.
/// Allocates nothing.
pub fn read_head(path: &CStr, buf: &mut [u8]) -> Result<usize, Errno> {
    let fd = open_path(path, libc::O_RDONLY)?;
    loop {
        match super::raw_read(std::os::fd::AsRawFd::as_raw_fd(&fd), buf) {
            Err(Errno::EINTR) => {}
            other => return other,
        }
    }
}

/// [`super::raw_open`], owned.
pub fn open_path(path: &CStr, flags: libc::c_int) -> Result<OwnedFd, Errno> {
    super::raw_open(path, flags).map(owned)
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`: the new descriptor, a
/// number the caller owns (see [`owned`]).
pub fn open_at(dir: RawFd, name: &CStr, flags: libc::c_int, mode: u32) -> Result<RawFd, Errno> {
    // SAFETY: `name` is NUL-terminated and only read; `mode` is a number.
    raw_result(unsafe {
        syscall6(
            libc::SYS_openat,
            [
                dir as usize,
                name.as_ptr() as usize,
                (flags | libc::O_CLOEXEC) as usize,
                mode as usize,
                0,
                0,
            ],
        )
    })
    .map(|fd| fd as RawFd)
}

/// A descriptor just returned by [`open_at`], owned from now on.
pub fn owned(fd: RawFd) -> OwnedFd {
    // SAFETY: `fd` was just opened by the caller and belongs to nothing
    // else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// `mkdirat(dir, name, mode)`.
pub fn mkdir_at(dir: RawFd, name: &CStr, mode: u32) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated and only read.
    raw_result(unsafe {
        syscall6(
            libc::SYS_mkdirat,
            [dir as usize, name.as_ptr() as usize, mode as usize, 0, 0, 0],
        )
    })
    .map(drop)
}

/// `unlinkat(dir, name, flags)` (`AT_REMOVEDIR` for a folder).
pub fn unlink_at(dir: RawFd, name: &CStr, flags: libc::c_int) -> Result<(), Errno> {
    // SAFETY: `name` is NUL-terminated and only read.
    raw_result(unsafe {
        syscall6(
            libc::SYS_unlinkat,
            [
                dir as usize,
                name.as_ptr() as usize,
                flags as usize,
                0,
                0,
                0,
            ],
        )
    })
    .map(drop)
}

/// `pread(fd, buf, offset)`: the bytes read.
pub fn pread(fd: RawFd, buf: &mut [u8], offset: u64) -> Result<usize, Errno> {
    // SAFETY: the kernel writes at most `buf.len()` bytes to `buf`.
    raw_result(unsafe {
        syscall6(
            libc::SYS_pread64,
            [
                fd as usize,
                buf.as_mut_ptr() as usize,
                buf.len(),
                offset as usize,
                0,
                0,
            ],
        )
    })
}

/// `pwrite(fd, buf, offset)`: the bytes written.
pub fn pwrite(fd: RawFd, buf: &[u8], offset: u64) -> Result<usize, Errno> {
    // SAFETY: the kernel reads at most `buf.len()` bytes from `buf`.
    raw_result(unsafe {
        syscall6(
            libc::SYS_pwrite64,
            [
                fd as usize,
                buf.as_ptr() as usize,
                buf.len(),
                offset as usize,
                0,
                0,
            ],
        )
    })
}

/// Calls `each` with every name in the folder open on `fd` ("." and ".."
/// too), read from the start in `buf`-sized batches, until `each` says
/// stop (false). Allocates nothing.
pub fn each_name(
    fd: RawFd,
    buf: &mut [u8],
    mut each: impl FnMut(&CStr) -> bool,
) -> Result<(), Errno> {
    numeric(
        libc::SYS_lseek,
        [fd as usize, 0, libc::SEEK_SET as usize, 0, 0, 0],
    )?;
    each_entry(fd, buf, |name, _| each(name))
}

/// Calls `each` with every name in the folder open on `fd` ("." and ".."
/// too) and its type as the folder tells it (`DT_DIR`, `DT_LNK`, ...,
/// `DT_UNKNOWN` where the file system does not say), from where the
/// descriptor stands (a fresh one: the start), in `buf`-sized batches,
/// until `each` says stop (false). Allocates nothing.
pub fn each_entry(
    fd: RawFd,
    buf: &mut [u8],
    mut each: impl FnMut(&CStr, u8) -> bool,
) -> Result<(), Errno> {
    loop {
        // SAFETY: the kernel writes at most `buf.len()` bytes of records
        // into `buf`.
        let n = raw_result(unsafe {
            syscall6(
                libc::SYS_getdents64,
                [fd as usize, buf.as_mut_ptr() as usize, buf.len(), 0, 0, 0],
            )
        })?;
        if n == 0 {
            return Ok(());
        }
        // Each record: inode (8), offset (8), length (2), type (1), then
        // the NUL-terminated name, within the record's length.
        let mut at = 0;
        while at + 19 < n {
            let len = usize::from(u16::from_ne_bytes([buf[at + 16], buf[at + 17]]));
            if len < 20 || at + len > n {
                return Err(Errno::EIO);
            }
            let Ok(name) = CStr::from_bytes_until_nul(&buf[at + 19..at + len]) else {
                return Err(Errno::EIO);
            };
            if !each(name, buf[at + 18]) {
                return Ok(());
            }
            at += len;
        }
    }
}

/// Closes every descriptor but those in `keep` (sorted, ascending):
/// `close_range` over the gaps between them (Linux 5.9), else `close` of
/// every number below the descriptor limit. Allocates nothing.
pub fn close_all_but(keep: &[RawFd]) {
    let mut from: usize = 0;
    let mut ranged = true;
    for &fd in keep.iter().chain(&[RawFd::MAX]) {
        let fd = fd as usize;
        if fd > from {
            let last = if fd == RawFd::MAX as usize {
                u32::MAX as usize
            } else {
                fd - 1
            };
            ranged &= numeric(libc::SYS_close_range, [from, last, 0, 0, 0, 0]).is_ok();
        }
        from = fd.saturating_add(1);
    }
    if ranged {
        return;
    }
    let top = match super::limits::prlimit(libc::RLIMIT_NOFILE as usize, None) {
        Ok(limit) => limit.rlim_cur.min(1 << 20) as RawFd,
        Err(_) => 1024,
    };
    for fd in 0..top {
        if !keep.contains(&fd) {
            super::raw_close(fd);
        }
    }
}

/// Closes every descriptor of `fds`: one `close_range` for each run of
/// consecutive numbers among them (each number in such a run is one of
/// `fds`, so nothing else is closed), `close` one by one where the kernel
/// has no `close_range` (before 5.9).
pub fn close_many(fds: Vec<OwnedFd>) {
    let mut raw: Vec<RawFd> = fds.into_iter().map(IntoRawFd::into_raw_fd).collect();
    raw.sort_unstable();
    let mut at = 0;
    while at < raw.len() {
        let first = raw[at];
        let mut last = first;
        let mut next = at + 1;
        while next < raw.len() && raw[next] == last + 1 {
            last = raw[next];
            next += 1;
        }
        let ranged = numeric(
            libc::SYS_close_range,
            [first as usize, last as usize, 0, 0, 0, 0],
        );
        if ranged.is_err() {
            for &fd in &raw[at..next] {
                super::raw_close(fd);
            }
        }
        at = next;
    }
}

/// `pidfd_open(pid, 0)`: a descriptor (close-on-exec) that polls readable
/// once `pid` has ended (Linux 5.3).
pub fn pidfd_open(pid: libc::pid_t) -> Result<OwnedFd, Errno> {
    let fd = numeric(libc::SYS_pidfd_open, [pid as usize, 0, 0, 0, 0, 0])?;
    Ok(owned(fd as RawFd))
}

/// `setsid()`: a session (and process group) of this process's own.
pub fn setsid() -> Result<(), Errno> {
    numeric(libc::SYS_setsid, [0; 6]).map(drop)
}

/// Waits until `fd` polls readable (or hung up), however many signals
/// interrupt the wait.
pub fn wait_readable(fd: RawFd) -> Result<(), Errno> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one pollfd, writable; no timeout, no signal mask.
        let ret = raw_result(unsafe {
            syscall6(libc::SYS_ppoll, [(&raw mut pfd) as usize, 1, 0, 0, 8, 0])
        });
        match ret {
            Err(Errno::EINTR) => {}
            other => return other.map(drop),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::{AsRawFd, IntoRawFd};

    use super::*;

    /// The inode a descriptor number refers to now, if it is open.
    fn inode(fd: RawFd) -> Option<u64> {
        stat_fd(fd).ok().map(|st| st.st_ino)
    }

    #[test]
    fn close_many_closes_those_given_and_nothing_between() {
        let dir = std::env::temp_dir().join(format!("close-many-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str| {
            let path = dir.join(name);
            std::fs::write(&path, name).unwrap();
            std::fs::File::open(path).unwrap()
        };
        let given: Vec<std::fs::File> = (0..5).map(|i| file(&format!("given{i}"))).collect();
        let kept = file("kept");
        let more: Vec<std::fs::File> = (0..3).map(|i| file(&format!("more{i}"))).collect();
        let kept_ino = inode(kept.as_raw_fd()).unwrap();
        let closed: Vec<(RawFd, u64)> = given
            .iter()
            .chain(&more)
            .map(|f| (f.as_raw_fd(), inode(f.as_raw_fd()).unwrap()))
            .collect();
        // Runs of numbers with `kept` between them (other tests' threads
        // may open files meanwhile, and make more gaps: fine).
        let fds: Vec<OwnedFd> = given
            .into_iter()
            .chain(more)
            .map(|f| owned(f.into_raw_fd()))
            .collect();
        close_many(fds);
        assert_eq!(inode(kept.as_raw_fd()), Some(kept_ino));
        for (fd, ino) in closed {
            // Closed, or reused since by another test for another file.
            assert_ne!(inode(fd), Some(ino), "fd {fd} still open");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
