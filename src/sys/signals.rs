//! Signals, reaping and process groups: the signal mask and
//! `sigwaitinfo` of the stub and init, reaping with `wait4` (init, the
//! stub on the capability-free way), init's end of its namespace and its
//! wait for the stub's exit, default dispositions, and the
//! terminal's foreground group (the worker's own group, the stub's
//! hand-over and take-back).

use std::io;
use std::os::fd::RawFd;

use nix::errno::Errno;

use super::*;

/// `rt_sigprocmask(SIG_SETMASK, set, NULL)`.
pub fn set_sigmask(set: &libc::sigset_t) -> Result<(), Errno> {
    // SAFETY: `set` is a whole sigset_t; the kernel reads its first
    // _NSIG/8 = 8 bytes (the size passed), as libc does.
    raw_result(unsafe {
        syscall6(
            libc::SYS_rt_sigprocmask,
            [
                libc::SIG_SETMASK as usize,
                set as *const _ as usize,
                0,
                8,
                0,
                0,
            ],
        )
    })
    .map(drop)
}

/// Waits for one of the signals in `set` (which must be blocked) and
/// returns its number; retries EINTR. (nix's `SigSet::wait` reads
/// sigwait's positive error return as success and unwraps an
/// uninitialised signal, a panic.)
pub fn sigwait(set: &libc::sigset_t) -> Result<libc::c_int, Errno> {
    loop {
        // SAFETY: `set` as in `set_sigmask`; no siginfo, no timeout.
        match raw_result(unsafe {
            syscall6(
                libc::SYS_rt_sigtimedwait,
                [set as *const _ as usize, 0, 0, 8, 0, 0],
            )
        }) {
            Ok(sig) => return Ok(sig as libc::c_int),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// [`sigwait`] for at most `millis` milliseconds: `Ok(None)` when none
/// of `set` (blocked) came meanwhile. The stub's end of a
/// capability-free run waits this way for a leftover's end or the
/// caller's signal.
pub fn sigwait_for(set: &libc::sigset_t, millis: u32) -> Result<Option<libc::c_int>, Errno> {
    let timeout = libc::timespec {
        tv_sec: (millis / 1000).into(),
        tv_nsec: ((millis % 1000) * 1_000_000) as libc::c_long,
    };
    // SAFETY: `set` as in `set_sigmask`; `timeout` is a whole timespec on
    // this frame, read by the kernel only; no siginfo written back.
    match raw_result(unsafe {
        syscall6(
            libc::SYS_rt_sigtimedwait,
            [
                set as *const _ as usize,
                0,
                (&raw const timeout) as usize,
                8,
                0,
                0,
            ],
        )
    }) {
        Ok(sig) => Ok(Some(sig as libc::c_int)),
        Err(Errno::EAGAIN | Errno::EINTR) => Ok(None),
        Err(e) => Err(e),
    }
}

/// How a child came back from `wait4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    Exited(libc::c_int),
    Signaled(libc::c_int),
    /// Stopped by this signal (asked for with `untraced` only); not reaped.
    Stopped(libc::c_int),
}

/// `wait4(-1, WNOHANG)`, with `WUNTRACED` when `untraced`: a child that
/// has ended (reaped) or, with `untraced`, stopped; continued children are
/// not asked for.
pub fn reap_any(untraced: bool) -> Result<Option<(libc::pid_t, Ended)>, Errno> {
    let mut status: libc::c_int = 0;
    let flags = libc::WNOHANG | if untraced { libc::WUNTRACED } else { 0 };
    // SAFETY: one writable int for the status; no rusage.
    let pid = raw_result(unsafe {
        syscall6(
            libc::SYS_wait4,
            [
                -1isize as usize,
                (&raw mut status) as usize,
                flags as usize,
                0,
                0,
                0,
            ],
        )
    })? as libc::pid_t;
    if pid == 0 {
        return Ok(None);
    }
    let ended = if libc::WIFSTOPPED(status) {
        Ended::Stopped(libc::WSTOPSIG(status))
    } else if libc::WIFSIGNALED(status) {
        Ended::Signaled(libc::WTERMSIG(status))
    } else {
        Ended::Exited(libc::WEXITSTATUS(status))
    };
    Ok(Some((pid, ended)))
}

/// `wait4(-1, WNOHANG|__WALL)` answered ECHILD: this process has no child,
/// running or ended (one that had ended may be reaped by the call). Every
/// process a run's command leaves descends from the process that ends
/// them (init; the capability-free stub, a subreaper), so where it has no
/// child there is nothing to end. Raw: init calls it.
pub fn no_child_left() -> bool {
    // SAFETY: no status pointer, no rusage: nothing is written back.
    let answer = raw_result(unsafe {
        syscall6(
            libc::SYS_wait4,
            [
                -1isize as usize,
                0,
                (libc::__WALL | libc::WNOHANG) as usize,
                0,
                0,
                0,
            ],
        )
    });
    answer == Err(Errno::ECHILD)
}

/// init's end where it outlives the stub: SIGKILL to every other
/// process of its PID namespace (`kill(-1)` from its init reaches all of
/// them, never itself), then every child reaped, blocking, until there is
/// none (ECHILD). What the end of the namespace would do, before init's
/// own exit instead of in it. Raw calls only: init runs this.
///
/// Every other process of the namespace descends from init (each was
/// made inside it, by the worker or a descendant; an orphan goes to init
/// or to a subreaper below it), so where init has no child left
/// ([`no_child_left`]) there is none, and no `kill(-1)`, which walks every
/// process of the machine to find those of the namespace. Returns how
/// many it reaped (the task cap's count, tasks.rs).
pub fn end_all_others() -> u32 {
    if no_child_left() {
        return 0;
    }
    let _ = numeric(
        libc::SYS_kill,
        [-1isize as usize, libc::SIGKILL as usize, 0, 0, 0, 0],
    );
    let mut reaped_all = 0u32;
    loop {
        // SAFETY: no status pointer, no rusage: nothing is written back.
        let reaped = raw_result(unsafe {
            syscall6(
                libc::SYS_wait4,
                [-1isize as usize, 0, libc::__WALL as usize, 0, 0, 0],
            )
        });
        match reaped {
            Ok(_) => reaped_all = reaped_all.saturating_add(1),
            Err(Errno::EINTR) => {}
            Err(_) => return reaped_all,
        }
    }
}

/// Sleeps until a signal ends the process: init, once it has reported,
/// waits for the stub's exit and its PDEATHSIG (SIGKILL). Its other
/// signals are blocked, so nothing else wakes it for good. Raw: init.
pub fn wait_to_be_killed() -> ! {
    loop {
        // SAFETY: no descriptors, no timeout, no signal mask: ppoll only
        // sleeps.
        let _ = unsafe { syscall6(libc::SYS_ppoll, [0, 0, 0, 0, 8, 0]) };
    }
}

/// Resets `signal`'s disposition to the default (so that, for SIGCHLD, an
/// inherited SIG_IGN cannot make the kernel reap our children for us).
pub fn set_default_disposition(signal: libc::c_int) -> io::Result<()> {
    // SAFETY: SIG_DFL is not a handler function, so no Rust code can run
    // in signal context as a result.
    let prev = unsafe { libc::signal(signal, libc::SIG_DFL) };
    if prev == libc::SIG_ERR {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `setpgid(0, 0)`: this process leads a process group of its own.
pub fn raw_new_process_group() -> Result<(), Errno> {
    numeric(libc::SYS_setpgid, [0, 0, 0, 0, 0, 0]).map(drop)
}

/// `ioctl(fd, TIOCSPGRP, &pgid)`: makes `pgid` (in the caller's PID
/// namespace) the terminal's foreground process group. A caller outside
/// that group is sent SIGTTOU unless it blocks or ignores it.
pub fn raw_set_foreground(fd: RawFd, pgid: libc::pid_t) -> Result<(), Errno> {
    // SAFETY: TIOCSPGRP reads one pid_t from the pointer, which points at
    // `pgid` for the call.
    raw_result(unsafe {
        syscall6(
            libc::SYS_ioctl,
            [
                fd as usize,
                libc::TIOCSPGRP as usize,
                (&raw const pgid) as usize,
                0,
                0,
                0,
            ],
        )
    })
    .map(drop)
}

/// `ioctl(fd, TIOCGPGRP)`: the terminal's foreground process group, as
/// the caller's PID namespace sees it (0: one it cannot see).
pub fn foreground(fd: RawFd) -> Result<libc::pid_t, Errno> {
    let mut pgid: libc::pid_t = 0;
    // SAFETY: TIOCGPGRP writes one pid_t to the pointer, which points at
    // `pgid` for the call.
    raw_result(unsafe {
        syscall6(
            libc::SYS_ioctl,
            [
                fd as usize,
                libc::TIOCGPGRP as usize,
                (&raw mut pgid) as usize,
                0,
                0,
                0,
            ],
        )
    })?;
    Ok(pgid)
}
