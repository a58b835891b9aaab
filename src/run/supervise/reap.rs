//! Signals relayed and children reaped (init's loop, and the stub's where
//! it has nothing more to watch), and the command's whole tree stopped.

use nix::errno::Errno;
use nix::sys::signal::SigSet;
use nix::unistd::Pid;

use crate::run::plan::Way;
use crate::sys;

/// Relays the forwarded signals to `child` and reaps every child until
/// `child` itself is reaped; returns its status (code, or 128+signal).
/// With `untraced`, `on_stop` hears each stop of `child`. Raw calls only:
/// init runs this in shared memory.
pub(super) fn supervise(
    child: Pid,
    set: &SigSet,
    untraced: bool,
    on_stop: &mut dyn FnMut(libc::c_int),
) -> Result<i32, Errno> {
    loop {
        let sig = sys::sigwait(set.as_ref())?;
        match on_signal(child, sig, untraced)? {
            Some(Event::Ended(status)) => return Ok(status),
            Some(Event::Stopped(sig)) => on_stop(sig),
            None => {}
        }
    }
}

/// What became of `child`.
pub(super) enum Event {
    /// Reaped: its status (code, or 128+signal).
    Ended(i32),
    /// Stopped by this signal (asked for with `untraced` only).
    Stopped(libc::c_int),
}

/// Forwards `sig` to `child`, or for SIGCHLD reaps what has exited (and,
/// with `untraced`, sees a stop of `child`).
pub(super) fn on_signal(
    child: Pid,
    sig: libc::c_int,
    untraced: bool,
) -> Result<Option<Event>, Errno> {
    if sig != libc::SIGCHLD {
        // ESRCH: the child is already gone; its SIGCHLD is pending.
        let _ = sys::raw_kill(child.as_raw(), sig);
        return Ok(None);
    }
    while let Some((pid, ended)) = sys::reap_any(untraced)? {
        if pid == child.as_raw() {
            return Ok(Some(match ended {
                sys::Ended::Exited(code) => Event::Ended(code),
                sys::Ended::Signaled(sig) => Event::Ended(128 + sig),
                sys::Ended::Stopped(sig) => Event::Stopped(sig),
            }));
        }
    }
    Ok(None)
}

/// Stops the command's whole tree at once, without reaping it: on the
/// namespace way SIGKILL to init ends its PID namespace; on the
/// capability-free way the worker and every descendant `/proc` lists get
/// SIGKILL (what escapes the walk, the end of the run kills).
pub(super) fn stop_tree(child: Pid, way: Way) {
    if let Way::CapabilityFree { .. } = way {
        for pid in tree(child.as_raw()) {
            let _ = sys::raw_kill(pid, libc::SIGKILL);
        }
    }
    let _ = sys::raw_kill(child.as_raw(), libc::SIGKILL);
}

/// `root` and every descendant `/proc` lists (the children of each of
/// their threads), for the capability-free way, whose `/proc` is the
/// caller's. A process forked after its parent was listed is missed.
pub(super) fn tree(root: libc::pid_t) -> Vec<libc::pid_t> {
    let mut todo = vec![root];
    let mut found = Vec::new();
    while let Some(pid) = todo.pop() {
        found.push(pid);
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
        for task in tasks.into_iter().flatten().flatten() {
            let children = std::fs::read_to_string(task.path().join("children"));
            todo.extend(
                children
                    .iter()
                    .flat_map(|t| t.split_whitespace())
                    .filter_map(|p| p.parse::<libc::pid_t>().ok()),
            );
        }
    }
    found
}
