//! The ends of a run that does not go on: the stub's child killed and
//! reaped, and the outcome of a run a lost mount stopped before its
//! command.

use std::os::fd::OwnedFd;

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use super::Outcome;
use super::serve::read_reports;
use crate::error::EXIT_SETUP;
use crate::guard::Lost;
use crate::observe::Observer;

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
