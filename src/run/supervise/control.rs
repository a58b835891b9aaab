//! The control channel's reports, in the stub: read while the command
//! runs (its stops acted on through the stub's part in job control,
//! init's status where init outlives the stub, the rest kept), and what is
//! queued once the run has ended.

use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use nix::unistd::Pid;

use super::reap::tree;
use crate::run::plan::{Kind, Report, Way};
use crate::run::terminal::Terminal;

/// The stub's part in job control: its terminal (init reports the
/// command's stops on the control channel).
pub(super) struct Job<'a> {
    pub(super) terminal: &'a Terminal,
}

impl Job<'_> {
    /// The command stopped with `sig`: see terminal.rs. A group holding the
    /// terminal then is given it back and continued only if it is the
    /// command's. On the namespace way it can be no other: the command
    /// names groups in its own PID namespace only (TIOCSPGRP looks the
    /// number up there). On the capability-free way it can make any group
    /// of the caller's session the foreground, so the group must hold a
    /// process of the stub's tree (the command's, and its orphans).
    pub(super) fn command_stopped(&self, sig: libc::c_int, child: Pid, way: Way) {
        let (group, ours): (_, &dyn Fn(libc::pid_t) -> bool) = match way {
            Way::CapabilityFree { .. } => (Some(child.as_raw()), &|g| {
                let stub = std::process::id() as libc::pid_t;
                tree(stub).into_iter().filter(|&p| p != stub).any(|p| {
                    nix::unistd::getpgid(Some(Pid::from_raw(p))).is_ok_and(|pg| pg.as_raw() == g)
                })
            }),
            // The worker, init's first child, leads the command's group.
            Way::Namespaces { .. } => (self.terminal.first_child(child.as_raw()), &|_| true),
        };
        self.terminal.command_stopped(sig, group, ours);
    }
}

/// What reading init's reports came to.
pub(super) enum Read {
    /// Nothing more for now.
    Open,
    /// Every inner end is closed: nothing more will come.
    Closed,
    /// The command's tree is gone, with this status (init outlives the
    /// stub).
    Exited(i32),
}

/// Reads what init sent on the control channel: stops are acted on (with
/// a `job`), the status ends the wait, other reports are kept for the end.
pub(super) fn read_control(
    control: &OwnedFd,
    job: Option<&Job>,
    child: Pid,
    way: Way,
    early: &mut Vec<Report>,
) -> Read {
    let mut buf = [0u8; 64];
    loop {
        match nix::unistd::read(control.as_fd(), &mut buf) {
            Ok(0) => return Read::Closed,
            Ok(n) => {
                for r in Report::decode_all(&buf[..n]) {
                    match r.kind {
                        Kind::Exited => return Read::Exited(r.errno),
                        Kind::Stopped => {
                            if let Some(j) = job {
                                j.command_stopped(r.errno, child, way);
                            }
                        }
                        _ => early.push(r),
                    }
                }
                // A short read emptied the pipe: no call to hear EAGAIN.
                if n < buf.len() {
                    return Read::Open;
                }
            }
            Err(Errno::EINTR) => {}
            Err(_) => return Read::Open,
        }
    }
}

pub(super) fn read_reports(ours: &OwnedFd) -> Vec<Report> {
    let mut reports = Vec::new();
    let mut buf = [0u8; 64];
    // Non-blocking: every writer has exited (the PID namespace is empty
    // once its init is reaped), so this reads what is queued, then stops.
    while let Ok(n) = nix::unistd::read(ours.as_fd(), &mut buf) {
        if n == 0 {
            break;
        }
        reports.extend(Report::decode_all(&buf[..n]));
    }
    reports
}
