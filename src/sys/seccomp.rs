//! seccomp: installing the filters (and the run's listener, handed to
//! the stub through an epoll instance), the notifications (receive,
//! continue, still valid), reading another
//! process's memory, and the doctor's questions (which actions the
//! kernel knows, this process's mode). Called by the worker (install),
//! the stub (notifications) and the doctor.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::errno::Errno;

use super::*;

/// Whether the kernel knows the seccomp filter action `action`
/// (`seccomp(SECCOMP_GET_ACTION_AVAIL)`, Linux 4.14): `Ok` if so,
/// EOPNOTSUPP if not, EINVAL without filter support. For `--doctor`.
pub fn seccomp_action_available(action: u32) -> Result<(), Errno> {
    const SECCOMP_GET_ACTION_AVAIL: usize = 2;
    // SAFETY: the kernel reads one u32 from the pointer, which points to
    // `action`, alive on this frame for the whole call.
    raw_result(unsafe {
        syscall6(
            libc::SYS_seccomp,
            [
                SECCOMP_GET_ACTION_AVAIL,
                0,
                &action as *const u32 as usize,
                0,
                0,
                0,
            ],
        )
    })
    .map(drop)
}

/// This process's seccomp mode (`PR_GET_SECCOMP`): 0 none, 1 strict, 2
/// filter; EINVAL on a kernel built without seccomp.
pub fn seccomp_mode() -> Result<usize, Errno> {
    numeric(
        libc::SYS_prctl,
        [libc::PR_GET_SECCOMP as usize, 0, 0, 0, 0, 0],
    )
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, 0, prog)`.
///
/// `prog` must be a validated program (see `filter::Program`): a whole
/// number of 8-byte `sock_filter` instructions, 1..=4096 of them.
pub fn install_filter(prog: &'static [u8]) -> Result<(), Errno> {
    seccomp_filter(prog, 0).map(drop)
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
/// prog)`: installs `prog` and returns its notification listener.
pub fn install_filter_listener(prog: &'static [u8]) -> Result<OwnedFd, Errno> {
    let fd = seccomp_filter(prog, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER)? as RawFd;
    // SAFETY: with this flag the kernel returns a new file descriptor, owned
    // here only.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `epoll_create1(EPOLL_CLOEXEC)`: the instance the stub sleeps on and
/// the worker puts the run's listener in ([`epoll_add`]), so that the
/// handover wakes no one.
pub fn epoll_new() -> Result<OwnedFd, Errno> {
    let fd = numeric(
        libc::SYS_epoll_create1,
        [libc::EPOLL_CLOEXEC as usize, 0, 0, 0, 0, 0],
    )?;
    // SAFETY: the kernel returns a new file descriptor, owned here only.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `epoll_ctl(epoll, EPOLL_CTL_ADD, fd)` for input, the event's data
/// `fd`'s number. Raw: the worker calls it between clone and exec.
pub fn epoll_add(epoll: RawFd, fd: RawFd) -> Result<(), Errno> {
    let mut event = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: fd as u64,
    };
    // SAFETY: the kernel reads one `epoll_event` from the pointer, which
    // points to `event`, alive on this frame for the whole call.
    raw_result(unsafe {
        syscall6(
            libc::SYS_epoll_ctl,
            [
                epoll as usize,
                libc::EPOLL_CTL_ADD as usize,
                fd as usize,
                (&raw mut event) as usize,
                0,
                0,
            ],
        )
    })
    .map(drop)
}

/// `epoll_pwait(epoll, one event, no wait)`: the ready descriptor's
/// number (the data [`epoll_add`] gave it) and its events (`EPOLLIN` and
/// `EPOLLHUP` are `POLLIN`'s and `POLLHUP`'s bits), if one is.
pub fn epoll_ready(epoll: BorrowedFd<'_>) -> Result<Option<(RawFd, u32)>, Errno> {
    let mut event = libc::epoll_event { events: 0, u64: 0 };
    // SAFETY: the kernel writes at most one `epoll_event` (maxevents 1) to
    // the pointer, which points to `event`, alive on this frame; no
    // signal mask is passed (0).
    let n = raw_result(unsafe {
        syscall6(
            libc::SYS_epoll_pwait,
            [
                epoll.as_raw_fd() as usize,
                (&raw mut event) as usize,
                1,
                0,
                0,
                0,
            ],
        )
    })?;
    let (events, data) = (event.events, event.u64);
    Ok((n == 1).then_some((data as RawFd, events)))
}

fn seccomp_filter(prog: &'static [u8], flags: libc::c_ulong) -> Result<usize, Errno> {
    let fprog = libc::sock_fprog {
        len: (prog.len() / 8) as libc::c_ushort,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: the kernel reads `len` instructions of 8 bytes from `filter`
    // (copy_from_user, so alignment does not matter); `filter::Program`
    // guarantees the slice holds exactly that many, and it is `'static`.
    let ret = unsafe {
        syscall6(
            libc::SYS_seccomp,
            [
                libc::SECCOMP_SET_MODE_FILTER as usize,
                flags as usize,
                (&raw const fprog) as usize,
                0,
                0,
                0,
            ],
        )
    };
    raw_result(ret)
}

/// `SECCOMP_IOCTL_NOTIF_RECV`: the next notification on a listener.
pub fn notif_recv(listener: BorrowedFd<'_>) -> io::Result<libc::seccomp_notif> {
    // SAFETY: the kernel requires a zeroed seccomp_notif and fills it.
    let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: the ioctl writes one seccomp_notif to the pointer.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV as _,
            &mut notif as *mut libc::seccomp_notif,
        )
    };
    check(ret.into()).map(|_| notif)
}

/// `SECCOMP_IOCTL_NOTIF_SEND` with SECCOMP_USER_NOTIF_FLAG_CONTINUE: the
/// call goes on as if no filter had stopped it.
pub fn notif_continue(listener: BorrowedFd<'_>, id: u64) -> io::Result<()> {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: 0,
        flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
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

/// `SECCOMP_IOCTL_NOTIF_SET_FLAGS` with `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP`
/// (Linux 6.6): a notification wakes the supervisor on the notifying
/// thread's CPU, and the answer wakes the thread on the supervisor's, so a
/// round trip is two switches on one CPU rather than two wake-ups across
/// CPUs. Whether the kernel took it (older ones say `EINVAL`).
pub fn notif_sync_wake(listener: BorrowedFd<'_>) -> bool {
    // SAFETY: this ioctl takes its flags by value (no pointer); an unknown
    // flag or request is refused with an error, nothing else changes.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS as _,
            1u64, // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
        )
    };
    ret == 0
}

/// `SECCOMP_IOCTL_NOTIF_ID_VALID`: the notifying thread still waits, so
/// the pid it gave was not reused.
pub fn notif_id_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    let mut id = id;
    // SAFETY: the ioctl reads one u64 from the pointer.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _,
            &mut id as *mut u64,
        )
    };
    ret == 0
}

/// Reads up to `buf.len()` bytes of another process's memory at `addr`
/// (`process_vm_readv`, a page at a time so an unmapped page after the
/// data does not fail the read), stopping after the chunk that holds a
/// NUL when `to_nul`. Returns how many bytes were read.
fn read_remote(pid: libc::pid_t, addr: u64, buf: &mut [u8], to_nul: bool) -> usize {
    const PAGE: u64 = 4096;
    let mut len = 0;
    while len < buf.len() {
        let Some(at) = addr.checked_add(len as u64) else {
            break;
        };
        let chunk = ((PAGE - at % PAGE) as usize).min(buf.len() - len);
        // SAFETY: `chunk` writable bytes inside `buf` from `len` on; the
        // kernel writes them from the other process's memory at `at`.
        let n = unsafe {
            process_vm(
                libc::SYS_process_vm_readv,
                pid,
                buf[len..].as_mut_ptr(),
                at,
                chunk,
            )
        };
        if n <= 0 {
            break;
        }
        let n = n as usize;
        let found_nul = to_nul && buf[len..len + n].contains(&0);
        len += n;
        if found_nul {
            break;
        }
    }
    len
}

/// Reads a NUL-terminated string of at most `buf.len() - 1` bytes from
/// another process's memory at `addr`. Returns the bytes before the NUL,
/// or `None` if no NUL was found in what could be read.
pub fn read_remote_string(pid: libc::pid_t, addr: u64, buf: &mut [u8]) -> Option<usize> {
    let n = read_remote(pid, addr, buf, true);
    buf[..n].iter().position(|&b| b == 0)
}

/// Writes `bytes` into another process's memory at `addr`, all or an
/// error (`process_vm_writev`, which keeps the page protections: `EFAULT`
/// where the process itself could not write; unlike `/proc/PID/mem`).
/// At most one page's worth of bytes.
pub fn write_remote_exact(pid: libc::pid_t, addr: u64, bytes: &[u8]) -> Result<(), Errno> {
    // SAFETY: `bytes`, which `process_vm_writev` only reads (the pointer
    // is mutable for the iovec's sake); the other process's memory at
    // `addr` is written, not ours.
    let n = unsafe {
        process_vm(
            libc::SYS_process_vm_writev,
            pid,
            bytes.as_ptr().cast_mut(),
            addr,
            bytes.len(),
        )
    };
    match n {
        n if n < 0 => Err(Errno::last()),
        n if n as usize == bytes.len() => Ok(()),
        _ => Err(Errno::EFAULT),
    }
}

/// `process_vm_readv` or `process_vm_writev` (`nr`) of one range: `len`
/// bytes at `local` here and at `remote` in process `pid`; the bytes
/// moved, or -1 (`errno` set).
///
/// # Safety
/// `local` points to `len` bytes of this process that the call may read
/// (writev) or write (readv).
unsafe fn process_vm(
    nr: libc::c_long,
    pid: libc::pid_t,
    local: *mut u8,
    remote: u64,
    len: usize,
) -> libc::c_long {
    let here = libc::iovec {
        iov_base: local.cast(),
        iov_len: len,
    };
    let there = libc::iovec {
        iov_base: remote as usize as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: both iovecs live on this frame for the call; the caller
    // vouches for `local`; the remote range is the other process's.
    unsafe {
        libc::syscall(
            nr,
            pid,
            &here as *const libc::iovec,
            1 as libc::c_ulong,
            &there as *const libc::iovec,
            1 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    }
}

/// Reads exactly `buf.len()` bytes from another process's memory at
/// `addr`, or `None` if not all of them could be read.
pub fn read_remote_exact(pid: libc::pid_t, addr: u64, buf: &mut [u8]) -> Option<()> {
    (read_remote(pid, addr, buf, false) == buf.len()).then_some(())
}
