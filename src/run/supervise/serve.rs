//! The stub's side while the command runs: signals relayed, the child
//! reaped, the inner processes' reports read, write observation served,
//! the mount guard's checks, and job control on the caller's terminal.
//! Runs in the outer stub only (after init or the worker has started).

use std::mem::ManuallyDrop;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::SigSet;
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::Pid;

use crate::run::guard::{Guard, Lost};
use crate::run::observe::Observer;
use crate::run::report::Refusals;
use crate::run::sockets::Sockets;
use crate::run::terminal::Terminal;
use crate::sys;

use super::*;

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

/// The stub's part in job control: its terminal (init reports the
/// command's stops on the control channel).
pub(super) struct Job<'a> {
    pub(super) terminal: &'a Terminal,
}

/// What reading init's reports came to.
enum Read {
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
fn read_control(
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

impl Job<'_> {
    /// The command stopped with `sig`: see terminal.rs. A group holding the
    /// terminal then is given it back and continued only if it is the
    /// command's. On the namespace way it can be no other: the command
    /// names groups in its own PID namespace only (TIOCSPGRP looks the
    /// number up there). On the capability-free way it can make any group
    /// of the caller's session the foreground, so the group must hold a
    /// process of the stub's tree (the command's, and its orphans).
    fn command_stopped(&self, sig: libc::c_int, child: Pid, way: Way) {
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

/// [`supervise`] for a run with more to watch: the observe filter's
/// listener (taken from the worker, its notifications served, the queued
/// lines written as the socket takes them) and the mount guard (a change
/// of the namespace's mounts re-checks the watched ones; one gone stops
/// the command). Signals arrive through a signalfd (they stay blocked), so
/// one poll waits for everything. Observation failures go to `errors` and
/// end only the observation. Returns the child's status and the lost
/// mount, if one stopped the command. With a `job`, the command's stops
/// (init's reports; on the capability-free way, the worker's own) stop the
/// stub in turn; other reports read meanwhile go to `early`. With
/// `status_from_init`, init reports the command's status on the control
/// channel and outlives the stub: that report ends the wait (init's own
/// end still does, should it come first).
/// The listener's side of a run (the worker hands it over through `epoll`,
/// or reports where it is on the control channel): who serves its
/// notifications.
pub(super) struct Notify<'a> {
    pub(super) observer: Option<&'a mut Observer>,
    pub(super) sockets: Option<&'a mut Sockets>,
    pub(super) refusals: Option<&'a mut Refusals>,
    /// Set when the own-sockets policy could not be kept (the worker then
    /// refused every AF_UNIX socket).
    pub(super) unix_note: &'a mut String,
    /// The epoll instance the worker puts the listener in (listener.rs).
    pub(super) epoll: Option<BorrowedFd<'a>>,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn serve(
    child: Pid,
    set: &SigSet,
    way: Way,
    (notify, mut guard): (Option<Notify<'_>>, Option<&Guard>),
    (ours, job, status_from_init): (&OwnedFd, Option<&Job>, bool),
    errors: &mut Vec<String>,
    early: &mut Vec<Report>,
) -> Result<(i32, Option<Lost>), Errno> {
    // The stub exits once this returns: its descriptors here are left to
    // that exit rather than closed one call each (ManuallyDrop).
    let signals = ManuallyDrop::new(SignalFd::with_flags(
        set,
        SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK,
    )?);
    // Init reports stops and its status on the control channel; the
    // capability-free worker is the stub's child, whose stops wait4 shows.
    let capfree = matches!(way, Way::CapabilityFree { .. });
    // The worker's listener report, should the epoll instance fail it,
    // comes on it too.
    let mut control =
        (notify.is_some() || (!capfree && (job.is_some() || status_from_init))).then_some(ours);
    let untraced = job.is_some() && capfree;
    let (mut obs, mut sockets, mut unix_note, mut refusals, mut handover) = match notify {
        Some(n) => (
            n.observer,
            n.sockets,
            Some(n.unix_note),
            n.refusals,
            n.epoll,
        ),
        None => (None, None, None, None, None),
    };
    let mut listener: Option<ManuallyDrop<OwnedFd>> = None;
    let mut lost = None;
    loop {
        let mut fds = vec![PollFd::new(signals.as_fd(), PollFlags::POLLIN)];
        // The listener, once the stub holds it; until then the epoll
        // instance the worker puts it in.
        let listener_at = match (listener.as_ref(), handover) {
            (Some(l), _) => Some(l.as_fd()),
            (None, e) => e,
        }
        .map(|fd| {
            fds.push(PollFd::new(fd, PollFlags::POLLIN));
            fds.len() - 1
        });
        let guard_at = guard.map(|g| {
            fds.push(PollFd::new(g.fd(), PollFlags::POLLPRI));
            fds.len() - 1
        });
        let renames_at = guard.and_then(Guard::renames_fd).map(|fd| {
            fds.push(PollFd::new(fd, PollFlags::POLLIN));
            fds.len() - 1
        });
        let control_at = control.map(|c| {
            fds.push(PollFd::new(c.as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        if let Some(o) = obs.as_ref().filter(|o| o.pending()) {
            fds.push(PollFd::new(o.socket(), PollFlags::POLLOUT));
        }
        // Connects of other families the stub started, still connecting
        // (their index in the pending list with each).
        let pending_at = fds.len();
        let mut handshakes = Vec::new();
        for (i, p) in sockets.iter().flat_map(|s| s.pending.iter()).enumerate() {
            if let Some(fd) = p.handshake() {
                fds.push(PollFd::new(fd, PollFlags::POLLOUT));
                handshakes.push(i);
            }
        }
        // Connects waiting for room in a Unix listener's backlog: tried
        // again every 2 ms.
        let timeout = if sockets.as_ref().is_some_and(|s| s.waiting_for_room()) {
            PollTimeout::from(2u8)
        } else {
            PollTimeout::NONE
        };
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
        let ready: Vec<PollFlags> = fds
            .iter()
            .map(|f| f.revents().unwrap_or(PollFlags::empty()))
            .collect();
        drop(fds);
        if let (Some(at), Some(g)) = (guard_at, guard) {
            let table = ready[at].intersects(PollFlags::POLLPRI | PollFlags::POLLERR);
            let names = renames_at.is_some_and(|r| !ready[r].is_empty());
            // A rename first: reading its events drains them, and a change
            // of the table checks every destination anyway.
            let found = if names { g.renamed() } else { None };
            if let Some(l) = found.or_else(|| table.then(|| g.changed()).flatten()) {
                stop_tree(child, way);
                lost = Some(l);
                guard = None;
            }
        }
        if let (Some(l), Some(s)) = (&listener, sockets.as_deref_mut()) {
            // Backwards: finishing one removes it from the list.
            for (k, r) in ready[pending_at..].iter().enumerate().rev() {
                if !r.is_empty() {
                    s.finish(l.as_fd(), handshakes[k]);
                }
            }
            if s.waiting_for_room() {
                s.retry(l.as_fd());
            }
        }
        if let Some(at) = listener_at {
            let mut ready_listener = ready[at];
            if let (None, Some(e)) = (&listener, handover) {
                // The handover: the listener's number and its events.
                // (A failure here could only be ours: the run ends, as
                // the command's notified calls would wait forever.)
                ready_listener = PollFlags::empty();
                if let Some((fd, events)) = sys::epoll_ready(e)? {
                    listener = Some(ManuallyDrop::new(sys::owned(fd)));
                    handover = None;
                    ready_listener = PollFlags::from_bits_truncate(events as libc::c_short);
                }
            }
            if ready_listener.contains(PollFlags::POLLIN) {
                if let Some(l) = &listener {
                    crate::run::sockets::notified(
                        l.as_fd(),
                        refusals.as_deref_mut(),
                        sockets.as_deref_mut(),
                        obs.as_deref_mut(),
                    );
                }
            } else if ready_listener
                .intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)
            {
                // No process is left under the filter: closed now, while
                // init reaps the command, rather than in the stub's exit,
                // which the caller waits for (10 us a host run).
                if let Some(l) = listener.take() {
                    drop(ManuallyDrop::into_inner(l));
                }
            }
        }
        if let Some(o) = obs.as_mut() {
            o.flush();
        }
        if let (Some(at), Some(c)) = (control_at, control) {
            if !ready[at].is_empty() {
                let read = read_control(c, job, child, way, early);
                // The worker's one listener report.
                if let Some(at) = early.iter().position(|r| r.kind == Kind::Listener) {
                    let value = early.remove(at).errno;
                    handover = None;
                    listener = super::listener::received(
                        value,
                        &mut obs,
                        errors,
                        &mut sockets,
                        unix_note.as_deref_mut(),
                    )
                    .map(ManuallyDrop::new);
                }
                match read {
                    Read::Open => {}
                    Read::Closed => control = None,
                    Read::Exited(status) => {
                        if let Some(o) = obs.as_mut() {
                            o.flush();
                        }
                        return Ok((status, lost));
                    }
                }
            }
        }
        if !ready[0].is_empty() {
            while let Some(info) = signals.read_signal()? {
                match on_signal(child, info.ssi_signo as libc::c_int, untraced)? {
                    Some(Event::Ended(status)) => {
                        if let Some(o) = obs.as_mut() {
                            o.flush();
                        }
                        return Ok((status, lost));
                    }
                    Some(Event::Stopped(sig)) => {
                        if let Some(j) = job {
                            j.command_stopped(sig, child, way);
                        }
                    }
                    None => {}
                }
            }
        }
    }
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
