//! The locks of the bwrap shim's placeholder keeper (shim/keep/), raw and
//! allocation-free: the keeper's holder runs in the shim's memory while
//! the shim goes on to exec bubblewrap, so it may not touch libc's errno
//! nor allocate. `flock` and a bounded wait for it (the per-user lock);
//! open file description locks (a run's hold on a placeholder, which a
//! read-only descriptor cannot take). The doctor reads the same holds.

use std::os::fd::RawFd;

use nix::errno::Errno;

use super::raw::{numeric, raw_result, syscall6};

/// `flock(fd, op)`: `LOCK_SH`, `LOCK_EX`, `LOCK_UN`, with `LOCK_NB` or not.
/// A blocking lock interrupted by a signal is taken again.
pub fn flock(fd: RawFd, op: libc::c_int) -> Result<(), Errno> {
    loop {
        match numeric(libc::SYS_flock, [fd as usize, op as usize, 0, 0, 0, 0]) {
            Err(Errno::EINTR) => {}
            other => return other.map(drop),
        }
    }
}

/// `flock(fd, op | LOCK_NB)` tried every millisecond until it holds, for
/// at most `ms` milliseconds of pauses: `ETIMEDOUT` then. Whoever holds
/// the lock cannot make the caller wait longer than that. Allocates
/// nothing (the keeper's holder calls it).
pub fn flock_within(fd: RawFd, op: libc::c_int, ms: u32) -> Result<(), Errno> {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    for _ in 0..=ms {
        match flock(fd, op | libc::LOCK_NB) {
            Err(Errno::EWOULDBLOCK) => {}
            other => return other,
        }
        // SAFETY: `pause` is a valid timespec alive for the call, which
        // only reads it; no remainder is asked for (the null pointer).
        let _ = raw_result(unsafe {
            syscall6(
                libc::SYS_clock_nanosleep,
                [
                    libc::CLOCK_MONOTONIC as usize,
                    0,
                    (&raw const pause) as usize,
                    0,
                    0,
                    0,
                ],
            )
        });
    }
    Err(Errno::ETIMEDOUT)
}

/// `fcntl(fd, cmd, lock)` for an open file description lock.
fn ofd(fd: RawFd, cmd: libc::c_int, lock: &mut libc::flock) -> Result<(), Errno> {
    loop {
        // SAFETY: `lock` is a valid, writable `struct flock` alive for the
        // call (F_OFD_GETLK writes the conflicting lock into it).
        let ret = raw_result(unsafe {
            syscall6(
                libc::SYS_fcntl,
                [
                    fd as usize,
                    cmd as usize,
                    lock as *mut libc::flock as usize,
                    0,
                    0,
                    0,
                ],
            )
        });
        match ret {
            Err(Errno::EINTR) => {}
            other => return other.map(drop),
        }
    }
}

fn one_byte(kind: libc::c_int, at: u64, len: u64) -> libc::flock {
    libc::flock {
        l_type: kind as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: at as libc::off_t,
        l_len: len as libc::off_t,
        l_pid: 0,
    }
}

/// An open file description lock on the byte at `at` (`F_OFD_SETLK`, not
/// waiting): `F_WRLCK`, which needs the file open for writing, or
/// `F_UNLCK`; `EAGAIN` where another holds it. It lasts while any
/// descriptor of this open file description is open. Allocates nothing.
pub fn ofd_lock(fd: RawFd, kind: libc::c_int, at: u64) -> Result<(), Errno> {
    ofd(fd, libc::F_OFD_SETLK, &mut one_byte(kind, at, 1))
}

/// Whether another open file description holds a write lock anywhere in
/// the file: `F_OFD_GETLK` for a read lock over all of it, with which read
/// locks (all a read-only descriptor can take) never conflict. Allocates
/// nothing.
pub fn ofd_write_locked(fd: RawFd) -> Result<bool, Errno> {
    let mut lock = one_byte(libc::F_RDLCK, 0, 0);
    ofd(fd, libc::F_OFD_GETLK, &mut lock)?;
    Ok(lock.l_type != libc::F_UNLCK as libc::c_short)
}
