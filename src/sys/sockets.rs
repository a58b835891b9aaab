//! The own-sockets policy's calls in the stub (sockets.rs): a descriptor
//! taken from a notifying process (`pidfd_getfd`), socket options read as
//! integers, a connect to an address given as bytes, and the answer to a
//! notification. Called by the stub only, while the command runs.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

use nix::errno::Errno;

use super::*;

/// `pidfd_getfd(pidfd, fd, 0)` (Linux 5.6): a copy of the process's
/// descriptor `fd`, close-on-exec, on the same open file.
pub fn pidfd_getfd(pidfd: BorrowedFd<'_>, fd: i32) -> Result<OwnedFd, Errno> {
    let got = numeric(
        libc::SYS_pidfd_getfd,
        [pidfd.as_raw_fd() as usize, fd as u32 as usize, 0, 0, 0, 0],
    )?;
    Ok(owned(got as RawFd))
}

/// `pidfd_getfd(-1, 0, 0)`: EBADF where the kernel has the call, ENOSYS
/// where it has not (Linux 5.6).
pub fn pidfd_getfd_probe() -> Errno {
    match numeric(libc::SYS_pidfd_getfd, [usize::MAX, 0, 0, 0, 0, 0]) {
        Ok(fd) => {
            raw_close(fd as RawFd);
            Errno::UnknownErrno
        }
        Err(e) => e,
    }
}

/// `pidfd_open(tid, PIDFD_THREAD)` (Linux 6.9): a pidfd of one thread;
/// EINVAL on older kernels for a thread that does not lead its group.
pub fn pidfd_open_thread(tid: libc::pid_t) -> Result<OwnedFd, Errno> {
    /// `PIDFD_THREAD` is `O_EXCL`.
    const PIDFD_THREAD: usize = libc::O_EXCL as usize;
    let fd = numeric(
        libc::SYS_pidfd_open,
        [tid as usize, PIDFD_THREAD, 0, 0, 0, 0],
    )?;
    Ok(owned(fd as RawFd))
}

/// `getsockopt(fd, SOL_SOCKET, opt)` of an `int` option (`SO_DOMAIN`,
/// `SO_TYPE`).
pub fn socket_int(fd: BorrowedFd<'_>, opt: libc::c_int) -> Result<i32, Errno> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes to `value`, an int on
    // this frame, and the length to `len`.
    let ret = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&raw mut value).cast(),
            &mut len,
        )
    };
    Errno::result(ret).map(|_| value)
}

/// `SO_COOKIE`: the socket's 64-bit cookie, never reused while the
/// machine runs (also what sock_diag reports).
pub fn socket_cookie(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    socket_u64(fd, libc::SO_COOKIE)
}

/// `SO_NETNS_COOKIE` (Linux 5.14): the cookie of the network namespace
/// the socket was made in; `ENOPROTOOPT` before.
pub fn socket_netns_cookie(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    const SO_NETNS_COOKIE: libc::c_int = 71;
    socket_u64(fd, SO_NETNS_COOKIE)
}

/// A `SOL_SOCKET` option of 64 bits.
fn socket_u64(fd: BorrowedFd<'_>, option: libc::c_int) -> Result<u64, Errno> {
    let mut value: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` (8) bytes to `value`.
    let ret = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&raw mut value).cast(),
            &mut len,
        )
    };
    Errno::result(ret).map(|_| value)
}

/// `bind(fd, addr)` of address bytes the stub copied: an abstract name
/// bound by the stub on a socket it took and checked (bound.rs).
pub fn bind_bytes(fd: BorrowedFd<'_>, addr: &[u8]) -> Result<(), Errno> {
    // SAFETY: the kernel reads `addr.len()` bytes of the slice, alive for
    // the call.
    let ret = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            addr.as_ptr().cast(),
            addr.len() as libc::socklen_t,
        )
    };
    Errno::result(ret).map(drop)
}

/// `getsockname`: the socket's address as bytes (at most 128).
pub fn socket_name(fd: BorrowedFd<'_>) -> Result<Vec<u8>, Errno> {
    let mut buf = [0u8; 128];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes to `buf` and the
    // address's length to `len`.
    let ret = unsafe { libc::getsockname(fd.as_raw_fd(), buf.as_mut_ptr().cast(), &mut len) };
    Errno::result(ret).map(|_| buf[..(len as usize).min(buf.len())].to_vec())
}

/// `connect(fd, addr)` with the address as the bytes of a `sockaddr`.
pub fn connect_bytes(fd: BorrowedFd<'_>, addr: &[u8]) -> Result<(), Errno> {
    // SAFETY: the kernel reads `addr.len()` bytes from the slice.
    let ret = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            addr.as_ptr().cast(),
            addr.len() as libc::socklen_t,
        )
    };
    Errno::result(ret).map(drop)
}

/// `SECCOMP_IOCTL_NOTIF_SEND`: the call returns `Err(errno)` or `Ok(0)`,
/// the stub having done (or refused) it.
pub fn notif_answer(
    listener: BorrowedFd<'_>,
    id: u64,
    result: Result<(), Errno>,
) -> io::Result<()> {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: result.err().map_or(0, |e| -(e as i32)),
        flags: 0,
    };
    // SAFETY: the ioctl reads one seccomp_notif_resp from the pointer.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND as _,
            &mut resp as *mut libc::seccomp_notif_resp,
        )
    };
    check(ret.into()).map(drop)
}
