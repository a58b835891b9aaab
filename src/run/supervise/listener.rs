//! The run's one seccomp listener: before init starts, the handles of
//! the own-sockets policy (sockets.rs) and of the refusal report
//! (report.rs); then what the stub makes of the worker's report on it.
//! The worker shares the stub's file table: the listener it installs is
//! the stub's at once, and the worker puts it in the stub's epoll
//! instance (or reports at which number).

use std::os::fd::{AsRawFd, OwnedFd};

use nix::errno::Errno;

use crate::run::observe::Observer;
use crate::run::plan::{Listener, Plan, Way};
use crate::run::report::Refusals;
use crate::run::sockets::Sockets;
use crate::sys;

/// What [`listening`] made.
pub(super) struct Listening {
    pub(super) sockets: Option<Sockets>,
    pub(super) unix_note: String,
    pub(super) refusals: Option<Refusals>,
    /// Whether the worker installs a listener, and how it hands it over.
    pub(super) handover: Listener,
    /// Where the worker puts the listener: the stub polls this instance
    /// until it holds the listener, so the handover wakes no one (a
    /// report on the control channel should the instance be refused).
    pub(super) epoll: Option<OwnedFd>,
}

/// The listener's side of a run: what `plan` asks for that can be had, the
/// rest taken out of `plan` (and `observer`) with why.
pub(super) fn listening(
    plan: &mut Plan,
    observer: &mut Option<&mut Observer>,
    named: &[std::path::PathBuf],
    kernel_note: Option<String>,
) -> Listening {
    // The own-sockets policy's handles, before init mounts its /proc.
    // Without them the worker gets the filter that refuses every AF_UNIX
    // socket (never less than asked). Where the kernel holds the policy
    // (its domain made already: run/way.rs), the stub has no part in it.
    let (sockets, unix_note) = match (plan.filters.sockets, kernel_note) {
        (crate::filter::Sockets::Kernel, Some(note)) => (None, note),
        _ => Sockets::start(plan.filters.own.is_some(), named),
    };
    if sockets.is_none() {
        // The reported programs were made for the policy: today's, then.
        if plan.filters.own.take().is_some() {
            plan.filters.reporting = None;
            plan.filters.sockets = crate::filter::Sockets::Deny;
        }
    }
    // Refused calls counted (report.rs); without the handle, today's
    // programs, which refuse the same calls unreported.
    let refusals = plan.filters.reporting.and_then(|_| {
        let capfree = matches!(plan.way, Way::CapabilityFree { .. });
        let reported = crate::filter::reported(
            plan.filters.sockets,
            capfree,
            plan.observed,
            plan.filters.namespaces.is_none(),
        );
        Refusals::start(reported, sockets.as_ref().map(Sockets::proc_dir)).ok()
    });
    if refusals.is_none() {
        plan.filters.reporting = None;
    }
    // The worker installs the listener (own sockets, observation, the
    // refusals) and puts it in the stub's epoll instance (or reports where
    // it is on the control channel).
    let wanted = observer.is_some() || sockets.is_some() || refusals.is_some();
    let epoll = wanted.then(|| sys::epoll_new().ok()).flatten();
    let handover = match (&epoll, wanted) {
        (_, false) => Listener::None,
        (Some(e), true) => Listener::Epoll(e.as_raw_fd()),
        (None, true) => Listener::Reported,
    };
    Listening {
        sockets,
        unix_note,
        refusals,
        handover,
        epoll,
    }
}

/// The worker's listener report (`Kind::Listener`): the listener, at
/// number `value` in the table the stub shares with it, or (negative)
/// the errno that kept it (the worker then installed today's programs,
/// refusing every `AF_UNIX` socket: the policy and the observation are
/// off, said in `errors` and `unix_note`).
pub(super) fn received(
    value: i32,
    obs: &mut Option<&mut Observer>,
    errors: &mut Vec<String>,
    sockets: &mut Option<&mut Sockets>,
    unix_note: Option<&mut String>,
) -> Option<OwnedFd> {
    if value >= 0 {
        return Some(sys::owned(value));
    }
    let text = format!("seccomp listener: {}", Errno::from_raw(-value).desc());
    if let Some(o) = obs.as_mut() {
        o.init_error(&text);
        errors.push(text.clone());
    }
    if let (Some(_), Some(note)) = (sockets.take(), unix_note) {
        *note = format!(
            "unix sockets: none (the own-sockets policy needs a {text}: the unix \
             filter refuses every AF_UNIX socket)"
        );
    }
    None
}

/// What the listener's users say once the command is done: the socket
/// policy's note (where none was made before) into `unix_note`, and the
/// refused calls' line where `line` (the command failed, or
/// `SRT_DEBUG`), the connects the policy refused counted among them.
pub(super) fn said_after(
    sockets: Option<&Sockets>,
    refusals: Option<&mut Refusals>,
    unix_note: &mut String,
    line: bool,
    debug: bool,
) -> Option<String> {
    if let Some(s) = sockets.filter(|_| unix_note.is_empty()) {
        *unix_note = s.note();
    }
    let r = refusals?;
    if let Some(s) = sockets {
        for refusal in &s.refusals {
            let mut call = crate::run::report::socket_call(refusal.call, &refusal.target);
            if let Some(why) = &refusal.why {
                call = format!("{call}: {why}");
            }
            r.note(call, refusal.who.clone());
        }
        r.note_unnamed("connect", s.refused - s.refusals.len() as u64);
    }
    line.then(|| r.line(debug)).flatten()
}
