//! The run's one seccomp listener, before init starts: the handles of
//! the own-sockets policy (sockets.rs) and of the refusal report
//! (report.rs), and the pair the worker passes the listener over.

use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;

use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};

use crate::error::{Error, Step};
use crate::observe::Observer;
use crate::plan::{Plan, Way};
use crate::report::Refusals;
use crate::sockets::Sockets;
use crate::sys;

/// What [`listening`] made.
pub(super) struct Listening {
    pub(super) sockets: Option<Sockets>,
    pub(super) unix_note: String,
    pub(super) refusals: Option<Refusals>,
    /// The stub's end and the worker's.
    pub(super) pair: Option<(OwnedFd, OwnedFd)>,
    pub(super) observe_errors: Vec<String>,
}

/// The listener's side of a run: what `plan` asks for that can be had, the
/// rest taken out of `plan` (and `observer`) with why.
pub(super) fn listening(
    plan: &mut Plan,
    observer: &mut Option<&mut Observer>,
    named: &[std::path::PathBuf],
) -> Result<Listening, Error> {
    // The own-sockets policy's handles, before init mounts its /proc.
    // Without them the worker gets the filter that refuses every AF_UNIX
    // socket (never less than asked).
    let (sockets, unix_note) = Sockets::start(plan.filters.own.is_some(), named);
    if sockets.is_none() {
        // The reported programs were made for the policy: today's, then.
        if plan.filters.own.take().is_some() {
            plan.filters.reporting = None;
        }
    }
    // Refused calls counted (report.rs); without the handle, today's
    // programs, which refuse the same calls unreported.
    let mut refusals = plan.filters.reporting.and_then(|_| {
        let capfree = matches!(plan.way, Way::CapabilityFree { .. });
        let reported = crate::report::reported(
            plan.filters.own.is_some(),
            capfree,
            plan.observed,
            plan.filters.namespaces.is_none(),
        );
        Refusals::start(reported, sockets.as_ref().map(Sockets::proc_dir)).ok()
    });
    if refusals.is_none() {
        plan.filters.reporting = None;
    }
    let mut observe_errors = Vec::new();
    // The worker passes the listener (own sockets, observation, the
    // refusals) over this one. Observation and the report are fail-open:
    // without the pair the run goes on unobserved, its refusals unsaid;
    // the own-sockets policy is not, and a run without it does not start.
    let pair = || {
        socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
    };
    let wanted = observer.is_some() || sockets.is_some() || refusals.is_some();
    let listener_pair = match wanted.then(pair) {
        Some(Err(e)) if sockets.is_some() => return Err(Error::setup(Step::ControlChannel, e)),
        Some(Err(e)) => {
            if observer.take().is_some() {
                observe_errors.push(format!("socketpair: {}", e.desc()));
            }
            refusals = None;
            plan.filters.reporting = None;
            None
        }
        other => other.and_then(Result::ok),
    };
    Ok(Listening {
        sockets,
        unix_note,
        refusals,
        pair: listener_pair,
        observe_errors,
    })
}

/// The worker's one message on `chan`: the listener, or the errno that
/// kept it (the worker then installed today's programs, refusing every
/// `AF_UNIX` socket: the policy and the observation are off, said in
/// `errors` and `unix_note`); `None` too at end of file (init and the
/// worker ended before sending).
pub(super) fn receive(
    chan: &OwnedFd,
    obs: &mut Option<&mut Observer>,
    errors: &mut Vec<String>,
    sockets: &mut Option<&mut Sockets>,
    unix_note: Option<&mut String>,
) -> Option<OwnedFd> {
    match sys::recv_fd(chan.as_fd()) {
        Ok(Some((0, Some(fd)))) => Some(fd),
        Ok(Some((errno, _))) => {
            let text = format!("seccomp listener: {}", Errno::from_raw(errno).desc());
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
        _ => None,
    }
}
