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
use crate::sys;

use super::control::{Job, Read, read_control};
use super::reap::{Event, on_signal, stop_tree};
use super::*;

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
#[allow(clippy::too_many_arguments)]
pub(super) fn serve(
    child: Pid,
    set: &SigSet,
    way: Way,
    (notify, guard): (Option<Notify<'_>>, Option<&Guard>),
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
    let control =
        (notify.is_some() || (!capfree && (job.is_some() || status_from_init))).then_some(ours);
    let untraced = job.is_some() && capfree;
    let mut run = Served::new(child, way, notify, guard, control);
    loop {
        let (mut fds, at) = run.watched(signals.as_fd());
        match poll(&mut fds, run.timeout()) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
        let ready: Vec<PollFlags> = fds
            .iter()
            .map(|f| f.revents().unwrap_or(PollFlags::empty()))
            .collect();
        drop(fds);
        run.on_guard(&at, &ready);
        run.on_pending(&at, &ready);
        run.on_listener(&at, &ready)?;
        if let Some(o) = run.obs.as_mut() {
            o.flush();
        }
        let ended = match run.on_control(&at, &ready, job, errors, early) {
            Some(status) => Some(status),
            None if !ready[0].is_empty() => run.on_signals(&signals, untraced, job)?,
            None => None,
        };
        if let Some(status) = ended {
            if let Some(o) = run.obs.as_mut() {
                o.flush();
            }
            return Ok((status, run.lost));
        }
    }
}

/// What the serve loop holds from one poll to the next.
struct Served<'a> {
    child: Pid,
    way: Way,
    obs: Option<&'a mut Observer>,
    sockets: Option<&'a mut Sockets>,
    unix_note: Option<&'a mut String>,
    refusals: Option<&'a mut Refusals>,
    /// The epoll instance the worker puts the listener in, until the stub
    /// holds the listener.
    handover: Option<BorrowedFd<'a>>,
    listener: Option<ManuallyDrop<OwnedFd>>,
    /// The mount guard, until it finds a loss.
    guard: Option<&'a Guard>,
    lost: Option<Lost>,
    /// The control channel, until every inner end is closed.
    control: Option<&'a OwnedFd>,
}

/// Where each watched descriptor is in a poll's list (the signals first).
struct At {
    listener: Option<usize>,
    guard: Option<usize>,
    renames: Option<usize>,
    control: Option<usize>,
    /// The first connect of another family still connecting; with each,
    /// its index in the pending list.
    pending: usize,
    handshakes: Vec<usize>,
}

impl<'a> Served<'a> {
    fn new(
        child: Pid,
        way: Way,
        notify: Option<Notify<'a>>,
        guard: Option<&'a Guard>,
        control: Option<&'a OwnedFd>,
    ) -> Served<'a> {
        let (obs, sockets, unix_note, refusals, handover) = match notify {
            Some(n) => (
                n.observer,
                n.sockets,
                Some(n.unix_note),
                n.refusals,
                n.epoll,
            ),
            None => (None, None, None, None, None),
        };
        Served {
            child,
            way,
            obs,
            sockets,
            unix_note,
            refusals,
            handover,
            listener: None,
            guard,
            lost: None,
            control,
        }
    }

    /// What the next poll watches: the signals, the listener (until the
    /// stub holds it, the epoll instance the worker puts it in), the
    /// guard's table and renames, the control channel, the observer's
    /// socket while lines wait, and the connects still connecting.
    fn watched<'f>(&'f self, signals: BorrowedFd<'f>) -> (Vec<PollFd<'f>>, At) {
        let mut fds = vec![PollFd::new(signals, PollFlags::POLLIN)];
        let mut add = |fd, flags| {
            fds.push(PollFd::new(fd, flags));
            fds.len() - 1
        };
        let listener = match (self.listener.as_ref(), self.handover) {
            (Some(l), _) => Some(l.as_fd()),
            (None, e) => e,
        }
        .map(|fd| add(fd, PollFlags::POLLIN));
        let guard = self.guard.map(|g| add(g.fd(), PollFlags::POLLPRI));
        let renames = self
            .guard
            .and_then(Guard::renames_fd)
            .map(|fd| add(fd, PollFlags::POLLIN));
        let control = self.control.map(|c| add(c.as_fd(), PollFlags::POLLIN));
        if let Some(o) = self.obs.as_deref().filter(|o| o.pending()) {
            add(o.socket(), PollFlags::POLLOUT);
        }
        let pending = fds.len();
        let mut handshakes = Vec::new();
        for (i, p) in self
            .sockets
            .iter()
            .flat_map(|s| s.pending.iter())
            .enumerate()
        {
            if let Some(fd) = p.handshake() {
                fds.push(PollFd::new(fd, PollFlags::POLLOUT));
                handshakes.push(i);
            }
        }
        let at = At {
            listener,
            guard,
            renames,
            control,
            pending,
            handshakes,
        };
        (fds, at)
    }

    /// No end to the wait, but while connects wait for room in a Unix
    /// listener's backlog: tried again every 2 ms.
    fn timeout(&self) -> PollTimeout {
        if self.sockets.as_ref().is_some_and(|s| s.waiting_for_room()) {
            PollTimeout::from(2u8)
        } else {
            PollTimeout::NONE
        }
    }

    /// The guard: a rename first (reading its events drains them, and a
    /// change of the table checks every destination anyway); a loss stops
    /// the command's tree and ends the guarding.
    fn on_guard(&mut self, at: &At, ready: &[PollFlags]) {
        let (Some(i), Some(g)) = (at.guard, self.guard) else {
            return;
        };
        let table = ready[i].intersects(PollFlags::POLLPRI | PollFlags::POLLERR);
        let names = at.renames.is_some_and(|r| !ready[r].is_empty());
        let found = if names { g.renamed() } else { None };
        if let Some(l) = found.or_else(|| table.then(|| g.changed()).flatten()) {
            stop_tree(self.child, self.way);
            self.lost = Some(l);
            self.guard = None;
        }
    }

    /// The connects still connecting that are ready, finished (backwards:
    /// finishing one removes it from the list), and those waiting for
    /// room tried again.
    fn on_pending(&mut self, at: &At, ready: &[PollFlags]) {
        let (Some(l), Some(s)) = (&self.listener, self.sockets.as_deref_mut()) else {
            return;
        };
        for (k, r) in ready[at.pending..].iter().enumerate().rev() {
            if !r.is_empty() {
                s.finish(l.as_fd(), at.handshakes[k]);
            }
        }
        if s.waiting_for_room() {
            s.retry(l.as_fd());
        }
    }

    /// The listener: taken from the epoll instance the worker put it in,
    /// its notified calls decided, or closed once no process is left under
    /// it. (A failure of the handover could only be ours: the run ends, as
    /// the command's notified calls would wait forever.)
    fn on_listener(&mut self, at: &At, ready: &[PollFlags]) -> Result<(), Errno> {
        let Some(i) = at.listener else {
            return Ok(());
        };
        let mut ready_listener = ready[i];
        if let (None, Some(e)) = (&self.listener, self.handover) {
            ready_listener = PollFlags::empty();
            if let Some((fd, events)) = sys::epoll_ready(e)? {
                self.listener = Some(ManuallyDrop::new(sys::owned(fd)));
                self.handover = None;
                ready_listener = PollFlags::from_bits_truncate(events as libc::c_short);
            }
        }
        if ready_listener.contains(PollFlags::POLLIN) {
            if let Some(l) = &self.listener {
                crate::run::sockets::notified(
                    l.as_fd(),
                    self.refusals.as_deref_mut(),
                    self.sockets.as_deref_mut(),
                    self.obs.as_deref_mut(),
                );
            }
        } else if ready_listener
            .intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)
        {
            // No process is left under the filter: closed now, while init
            // reaps the command, rather than in the stub's exit, which the
            // caller waits for (10 us a host run).
            if let Some(l) = self.listener.take() {
                drop(ManuallyDrop::into_inner(l));
            }
        }
        Ok(())
    }

    /// The control channel's reports: the worker's listener report (the
    /// listener then received), stops passed up, and init's status where
    /// it outlives the stub (returned).
    fn on_control(
        &mut self,
        at: &At,
        ready: &[PollFlags],
        job: Option<&Job>,
        errors: &mut Vec<String>,
        early: &mut Vec<Report>,
    ) -> Option<i32> {
        let (Some(i), Some(c)) = (at.control, self.control) else {
            return None;
        };
        if ready[i].is_empty() {
            return None;
        }
        let read = read_control(c, job, self.child, self.way, early);
        if let Some(r) = early.iter().position(|r| r.kind == Kind::Listener) {
            let value = early.remove(r).errno;
            self.handover = None;
            self.listener = super::listener::received(
                value,
                &mut self.obs,
                errors,
                &mut self.sockets,
                self.unix_note.as_deref_mut(),
            )
            .map(ManuallyDrop::new);
        }
        match read {
            Read::Open => None,
            Read::Closed => {
                self.control = None;
                None
            }
            Read::Exited(status) => Some(status),
        }
    }

    /// The signals: forwarded, the child reaped (its status returned), a
    /// stop of the command passed up.
    fn on_signals(
        &mut self,
        signals: &SignalFd,
        untraced: bool,
        job: Option<&Job>,
    ) -> Result<Option<i32>, Errno> {
        while let Some(info) = signals.read_signal()? {
            match on_signal(self.child, info.ssi_signo as libc::c_int, untraced)? {
                Some(Event::Ended(status)) => return Ok(Some(status)),
                Some(Event::Stopped(sig)) => {
                    if let Some(j) = job {
                        j.command_stopped(sig, self.child, self.way);
                    }
                }
                None => {}
            }
        }
        Ok(None)
    }
}
