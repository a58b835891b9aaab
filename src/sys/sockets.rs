//! The own-sockets policy's calls in the stub (sockets.rs): a descriptor
//! taken from a notifying process (`pidfd_getfd`), socket options read as
//! integers, a connect to an address given as bytes, the answer to a
//! notification and a descriptor put in the caller's table (`ADDFD`).
//! Called by the stub only: while the command runs, and (the inherited
//! sockets' names, sockets/kernel.rs) before the worker starts.

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

/// `SECCOMP_IOCTL_NOTIF_ADDFD` (Linux 5.9): a copy of `src` put in the
/// waiting process's descriptor table (close-on-exec there when
/// `cloexec`); the number it got there. The call stays waiting.
pub fn notif_addfd(
    listener: BorrowedFd<'_>,
    id: u64,
    src: BorrowedFd<'_>,
    cloexec: bool,
) -> Result<i32, Errno> {
    let mut add = libc::seccomp_notif_addfd {
        id,
        flags: 0,
        srcfd: src.as_raw_fd() as u32,
        newfd: 0,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: the ioctl reads one seccomp_notif_addfd from the pointer,
    // a struct on this frame.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ADDFD as _,
            &mut add as *mut libc::seccomp_notif_addfd,
        )
    };
    Errno::result(ret)
}

/// Of descriptor `fd` (any number: the kernel checks it), if it is an
/// `AF_UNIX` socket with no name yet: the cookie of the network namespace
/// it was made in. `None` for anything else.
pub fn unnamed_unix_netns(fd: RawFd) -> Option<u64> {
    let mut addr = [0u8; 128];
    let mut len = addr.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes to `addr`, on this
    // frame, and the length to `len`; a number that is no socket is its
    // ENOTSOCK or EBADF.
    let ret = unsafe { libc::getsockname(fd, addr.as_mut_ptr().cast(), &mut len) };
    if ret != 0 || len < 2 || u16::from_ne_bytes([addr[0], addr[1]]) != libc::AF_UNIX as u16 {
        return None;
    }
    if len > 2 {
        return None;
    }
    let mut cookie: u64 = 0;
    let mut size = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `size` (8) bytes to `cookie`.
    let ret = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            71,
            (&raw mut cookie).cast(),
            &mut size,
        )
    };
    (ret == 0).then_some(cookie)
}

/// `bind(fd, {AF_UNIX})`: the kernel gives the socket a name of its
/// choosing (an abstract one, five hex digits), after which no other
/// bind of it is taken.
pub fn autobind(fd: RawFd) -> Result<(), Errno> {
    let family = (libc::AF_UNIX as u16).to_ne_bytes();
    // SAFETY: the kernel reads the two bytes of `family`, on this frame.
    let ret = unsafe { libc::bind(fd, family.as_ptr().cast(), 2) };
    Errno::result(ret).map(drop)
}
