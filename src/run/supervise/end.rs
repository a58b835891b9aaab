//! The ends of a run: the stub's child killed and reaped where the run
//! cannot go on, the outcome of a run a lost mount stopped before its
//! command, and on the capability-free way what the command left behind
//! killed and reaped.

use std::os::fd::OwnedFd;

use nix::errno::Errno;
use nix::sys::signal::{SigSet, Signal, kill};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use super::Outcome;
use super::control::read_reports;
use super::reap::tree;
use crate::error::EXIT_SETUP;
use crate::run::guard::Lost;
use crate::run::observe::Observer;
use crate::sys;

/// Kills and reaps the stub's child where the run cannot go on: init
/// (whose end kills the worker waiting at the gate), or on the
/// capability-free way the worker.
pub(super) fn end_child(child: Pid) {
    let _ = kill(child, Signal::SIGKILL);
    let _ = waitpid(child, None);
}

/// The outcome when a protecting mount was gone before the command
/// started: it did not run.
pub(super) fn refused_before_start(
    lost: Lost,
    observer: Option<&mut Observer>,
    observe_errors: Vec<String>,
    ours: &OwnedFd,
) -> Outcome {
    if let Some(obs) = observer {
        obs.mount_guard(&lost);
    }
    Outcome {
        status: EXIT_SETUP,
        reports: read_reports(ours),
        observe_errors,
        guard_note: "mount guard: a required mount was gone before the command".into(),
        unix_note: String::new(),
        refusal_line: None,
        lost: Some(lost),
    }
}

/// The end of a capability-free run: kills and reaps every process the
/// command left behind, as the end of a PID namespace does on the other
/// way. Each descends from the stub (a subreaper: an orphan comes back to
/// it), so where the stub has no child left (`sys::no_child_left`) there
/// is none, and `/proc` is not read.
///
/// Linear in what is left: a sweep sends SIGKILL to every process of the
/// stub's tree not killed yet (`tree`, the children of each), then every
/// child that has ended is reaped without blocking, and the stub waits
/// for the next one to end (SIGCHLD). Only a wait that hears nothing for
/// [`SWEEP_AFTER_MS`] sweeps again: a process forked between a sweep's
/// look and its kill lives on, and comes back to the stub once its
/// parent is gone. (The end before issue 54 read the list and killed
/// every process on it, zombies included, for each child it reaped: 5,003
/// leftovers took 24.7 s.) The caller's signals (`set`: TERM, INT, ...)
/// are heard while it waits: one ends the wait at once, after sweeps
/// until no new process is found, so nothing is left alive; the killed
/// are reaped by whoever reaps the stub's orphans.
pub(super) fn end_leftovers(set: &SigSet) {
    if sys::no_child_left() {
        return;
    }
    let stub = std::process::id() as libc::pid_t;
    let mut killed = std::collections::BTreeSet::new();
    let mut sweep_now = true;
    loop {
        if sweep_now && !sweep(stub, &mut killed) {
            // No /proc to list them: only the ended are reaped.
            while let Ok(Some(_)) = sys::reap_any(false) {}
            return;
        }
        let mut reaped = 0u32;
        loop {
            match sys::reap_any(false) {
                // Its pid may be used again: a new process there is not
                // one killed.
                Ok(Some((pid, _))) => drop(killed.remove(&pid)),
                Err(Errno::EINTR) => {}
                Ok(None) => break,
                // ECHILD: nothing is left.
                Err(_) => return,
            }
            reaped += 1;
            // Thousands may be waiting: the caller is heard meanwhile.
            if reaped % HEAR_EVERY == 0
                && matches!(sys::sigwait_for(set.as_ref(), 0), Ok(Some(s)) if s != libc::SIGCHLD)
            {
                return last_sweeps(stub, &mut killed);
            }
        }
        match sys::sigwait_for(set.as_ref(), SWEEP_AFTER_MS) {
            Ok(Some(libc::SIGCHLD)) => sweep_now = false,
            Ok(None) => sweep_now = true,
            Ok(Some(_)) | Err(_) => return last_sweeps(stub, &mut killed),
        }
    }
}

/// The caller wants the run over: sweeps until one finds nothing new, so
/// nothing lives on; the reaping is left to whoever reaps the stub's
/// orphans.
fn last_sweeps(stub: libc::pid_t, killed: &mut std::collections::BTreeSet<libc::pid_t>) {
    for _ in 0..MAX_LAST_SWEEPS {
        let before = killed.len();
        if !sweep(stub, killed) || killed.len() == before {
            return;
        }
    }
}

/// How long the end of a run waits for a leftover's end before it looks
/// for processes again: killed ones end within microseconds, so a wait
/// this long means only the unkilled are left.
const SWEEP_AFTER_MS: u32 = 20;
/// Reaps between two looks for the caller's signal.
const HEAR_EVERY: u32 = 32;
/// Sweeps after the caller's signal, at most: each can find only what
/// the processes killed by the one before forked in the meantime.
const MAX_LAST_SWEEPS: usize = 16;

/// SIGKILL to each process of `stub`'s tree (without the stub) not in
/// `killed`, which it joins. False where the stub's own `/proc` entry
/// cannot be read.
fn sweep(stub: libc::pid_t, killed: &mut std::collections::BTreeSet<libc::pid_t>) -> bool {
    if std::fs::metadata(format!("/proc/{stub}/task")).is_err() {
        return false;
    }
    for pid in tree(stub) {
        if pid != stub && killed.insert(pid) {
            let _ = sys::raw_kill(pid, libc::SIGKILL);
        }
    }
    true
}
