//! The process tree, built after `userns::enter`. On the namespace way:
//!
//! ```text
//! caller (bwrap's shell, srt, a library)
//!  └─ apply-seccomp: outer stub        caller's PID namespace; non-dumpable
//!     │  before init starts; under bubblewrap the mount guard's check
//!     │  (its key of the worker's gate); then no_new_privs, the unix
//!     │  and namespaces rules on itself in one filter (while init
//!     │  works); forwards TERM INT HUP QUIT USR1 USR2, reaps its child
//!     │  (or, under bubblewrap, takes init's status report), prints the
//!     │  reports the inner processes send over the control channel,
//!     │  exits with the command's status (code, or 128+signal)
//!     └─ inner init, PID 1             new PID + mount namespaces, no filter
//!        │  (as upstream), in the stub's memory (sys::spawn_sharing_files),
//!        │  started on the stub's CPU (the caller's CPUs back at once);
//!        │  PDEATHSIG=KILL (checked against a parent already gone),
//!        │  non-dumpable (the shared memory map's flag), / private, fresh
//!        │  /proc, max_user_namespaces=0 (the worker, started first in
//!        │  the same memory, sys::spawn_sharing_files, makes its filters
//!        │  meanwhile), turns its key of the worker's gate, forwards the
//!        │  same signals, reaps every child, exits with the worker's status;
//!        │  under bubblewrap (`Plan::init_outlives_stub`) ends and reaps
//!        │  the rest of its namespace, reports the status and waits for
//!        │  the stub's exit to kill it, holding the run's mount namespace,
//!        │  the memory and the guard's inotify instance till then
//!        └─ worker, PID 2              worker.rs: no_new_privs, the unix
//!                                      and namespaces filters, waits for
//!                                      the gate's keys, execvp(command)
//! ```
//!
//! On the capability-free way (capfree.rs) there are no namespaces, so no
//! init: the stub (a child subreaper, so the command's orphans come back
//! to it) starts the worker itself, and the worker arms PDEATHSIG as init
//! does, then joins the Landlock domain before its filters. When the
//! worker has ended, the stub kills and reaps whatever the command left
//! behind, as the end of a PID namespace would.
//!
//! ```text
//! caller
//!  ├─ apply-seccomp: outer stub        as above; outside the Landlock domain
//!  │  └─ worker                        worker.rs: PDEATHSIG=KILL, no_new_privs,
//!  │                                   landlock_restrict_self, the filters,
//!  │                                   the gate (the guard's key), execvp
//!  └─ holder                           under bubblewrap: the stub's sibling,
//!                                      holding the mount guard's inotify
//!                                      instance until the stub has exited
//!                                      (holder.rs)
//! ```
//!
//! Why shared memory: a fork copies the stub's page tables, both sides
//! then take copy-on-write faults, and init's exit tears its copy down,
//! all between the caller's start of the helper and its end
//! (docs/performance.md). The price is discipline: init and the worker
//! run while the stub runs on, so they read only `'static` data prepared before
//! init starts (the command line is leaked by run/mod.rs, the filters are
//! embedded, the rest is copied into init's closure), write nothing but
//! their own stacks, never allocate, and make system calls only through
//! `sys`'s raw wrappers, which leave libc's errno alone:
//! sched_setaffinity, prctl (PDEATHSIG, no_new_privs), ppoll, getppid,
//! mount, openat/write/close, mmap, mprotect (the worker's stack), clone,
//! futex (the gate), rt_sigprocmask, rt_sigtimedwait, kill, wait4, seccomp,
//! epoll_ctl (the listener to the stub), execve (execvp's search), `_exit`.
//!
//! Why a shared file table (sys::spawn_sharing_files): the listener the
//! worker installs is the stub's at once (a socket pair and its messages
//! cost a run 2.5%: docs/performance.md); the exec leaves the command a
//! copy without the close-on-exec descriptors (all of the helper's).
//!
//! The control channel is a pipe: the inner processes write fixed 8-byte
//! reports to its write end (close-on-exec, so the command never holds
//! it; each write is one atomic unit, so a read returns whole reports);
//! the stub reads them as they come where it serves a poll loop, and once
//! its child is reaped. The write end stays open in the shared table for
//! the stub's life: init sees the stub die before its PDEATHSIG took in a
//! word the kernel clears then (sys::clear_on_exit), the capability-free
//! worker by `getppid`.
//!
//! This file builds the tree and waits for it: `run` is the list of its
//! steps (start.rs the start: signals, control channel, mount guard,
//! terminal, the child; `stub_ready` the guard's check, the gate and the
//! stub's filter; listener.rs the listener and what its users say after;
//! end.rs the ends). serve.rs is the stub's side while the command runs
//! (signals, reports, observation, the mount guard, job control), reap.rs
//! the signals and reaping, control.rs init's reports; init.rs is init.
//! The types the worker shares with them are in plan.rs.

use std::os::fd::AsFd;

use nix::sys::prctl;
use nix::sys::signal::{SigSet, Signal};
use nix::unistd::Pid;

use crate::error::{EXIT_SETUP, Error, Step};
use crate::run::guard::{Guard, Lost, Pid1};
use crate::run::observe::Observer;
use crate::run::plan::{Channel, Kind, Listener, Plan, Report, Way};
use crate::sys;

mod control;
mod end;
mod holder;
mod init;
mod listener;
mod reap;
mod serve;
mod start;

use control::Job;
use control::read_reports;
use end::{end_child, end_leftovers, refused_before_start};
use listener::{Listening, listening};
use reap::supervise;

/// Signals relayed from the stub to init and from init to the worker.
pub const FORWARDED: [Signal; 6] = [
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
];

/// The worker's stack: its deepest path is execvp's search (a PATH-sized
/// buffer) under a few frames.
const WORKER_STACK: usize = 128 * 1024;
/// init's stack: the worker's start and the signal loop, shallow.
const INIT_STACK: usize = 64 * 1024;

/// The gate before the worker's exec on the namespace way: init turns a
/// key once its mounts held, the stub another once the mount guard's
/// check held (where the guard is on).
static GATE: sys::Gate = sys::Gate::new();

/// What the run came to.
pub struct Outcome {
    /// The helper's exit status: the command's, or 125/126/127.
    pub status: i32,
    pub reports: Vec<Report>,
    /// Observation failures found during the run (the command ran on,
    /// unobserved), as `observe_init_error` texts.
    pub observe_errors: Vec<String>,
    /// A protecting mount found gone: the command was stopped or never
    /// started, and the status is 125.
    pub lost: Option<Lost>,
    /// What the mount guard watched, for `SRT_DEBUG` (empty without it).
    pub guard_note: String,
    /// The Unix socket policy in force and what it decided, for
    /// `SRT_DEBUG`.
    pub unix_note: String,
    /// Refused calls (report.rs): the line, where the command failed or
    /// with `SRT_DEBUG`.
    pub refusal_line: Option<String>,
}

fn signal_set() -> SigSet {
    let mut set = SigSet::empty();
    for s in FORWARDED {
        set.add(s);
    }
    set.add(Signal::SIGCHLD);
    set
}

/// Builds the tree and supervises it; returns once the command is done.
/// With an `observer`, the worker installs the observe filter and the stub
/// serves its notifications.
pub fn run(
    plan: Plan,
    mut observer: Option<&mut Observer>,
    (pid1, had): (Pid1, Option<libc::cpu_set_t>),
    (debug, named, kernel_note): (bool, &[std::path::PathBuf], Option<String>),
) -> Result<Outcome, Error> {
    let set = signal_set();
    let original = start::block_signals(&set)?;
    let (ours, theirs) = start::control_channel()?;
    let mut plan = plan;
    let Listening {
        mut sockets,
        mut unix_note,
        mut refusals,
        handover,
        epoll,
    } = listening(&mut plan, &mut observer, named, kernel_note);
    let wanted = handover != Listener::None;
    let mut observe_errors = Vec::new();
    // The stub stays outside the command's PID namespace but shares its
    // user namespace (and, for a root caller, its capabilities there). Where
    // the fresh /proc is refused (under bubblewrap's --proc) the command can
    // see the stub; non-dumpable, its memory and /proc files are closed to
    // the command. Set before init starts, so there is no window.
    prctl::set_dumpable(false).map_err(|e| Error::setup(Step::Dumpable, e))?;

    let (mut guard, mut guard_note) = start::open_guard(&plan, pid1);
    let (terminal, plan) = start::terminal(plan);
    let inner = start::init_args(plan, (set, original), &theirs, handover, guard.is_some());
    let child = start::start_child(inner, had)?;
    // The same descriptor as init's and the worker's: kept open.
    std::mem::forget(theirs);
    let child = Pid::from_raw(child);
    if let Err(lost) = stub_ready(guard.as_mut(), &plan, child)? {
        return Ok(refused_before_start(lost, observer, observe_errors, &ours));
    }
    if let Some(g) = guard.as_ref().filter(|_| debug) {
        guard_note = g.summary();
    }
    let guard = guard.filter(Guard::watching);
    let notify = wanted.then_some(serve::Notify {
        observer: observer.as_deref_mut(),
        sockets: sockets.as_mut(),
        refusals: refusals.as_mut(),
        unix_note: &mut unix_note,
        epoll: epoll.as_ref().map(AsFd::as_fd),
    });
    let job = terminal.as_ref().map(|terminal| Job { terminal });
    let mut early = Vec::new();
    let outlives = plan.init_outlives_stub;
    let (status, mut lost) = if notify.is_none() && guard.is_none() && job.is_none() && !outlives {
        supervise(child, &set, false, &mut |_| {}).map(|status| (status, None))
    } else {
        serve::serve(
            child,
            &set,
            plan.way,
            (notify, guard.as_ref()),
            (&ours, job.as_ref(), outlives),
            &mut observe_errors,
            &mut early,
        )
    }
    .map_err(|e| Error::setup(Step::Wait, e))?;
    let refusal_line = listener::said_after(
        sockets.as_ref(),
        refusals.as_mut(),
        &mut unix_note,
        status != 0 || debug,
        debug,
    );
    // Their descriptors and memory go with the stub's exit, soon after.
    std::mem::forget((epoll, sockets, refusals));
    // The guard's inotify instance is in the table init shares: init's end
    // releases it (here it would be the last close, a grace period of
    // 10-15 ms before the caller has its status).
    if outlives {
        std::mem::forget(guard);
    }
    if let Way::CapabilityFree { .. } = plan.way {
        end_leftovers(&set);
    }
    if let Some(t) = &terminal {
        t.take_back();
    }
    if let Some(l) = lost.as_mut() {
        l.look_again();
        if let Some(obs) = observer {
            obs.mount_guard(l);
        }
    }
    early.extend(read_reports(&ours));
    // Closed by the stub's exit, soon after: no call for it here.
    std::mem::forget(ours);
    Ok(Outcome {
        status: if lost.is_some() { EXIT_SETUP } else { status },
        reports: early,
        observe_errors,
        lost,
        guard_note,
        unix_note,
        refusal_line,
    })
}

/// The stub's part before the command: the mount guard's watches and
/// check while init mounts (on the capability-free way, while the worker
/// makes its filters), then its key of the gate; then its own filter. A
/// loss (`Ok(Err(lost))`) or a failure ends the child, and the worker
/// waiting at the gate with it, unrun. A loss after the check is the
/// poll's (serve.rs), on bubblewrap's mount table, which init's own
/// mounts leave alone.
fn stub_ready(
    guard: Option<&mut Guard>,
    plan: &Plan,
    child: Pid,
) -> Result<Result<(), Lost>, Error> {
    // The stub needs none of what the filters refuse; filtered, it is no
    // way around them even if the command got hold of it. Here, not
    // before init starts: init would inherit them, and the worker
    // installs its own while this runs.
    let ready = match guard.map_or(Ok(Ok(())), turn_key) {
        Ok(Ok(())) => filter_stub(plan).map(Ok),
        other => other,
    };
    if !matches!(ready, Ok(Ok(()))) {
        end_child(child);
    }
    ready
}

/// The mount guard's check, then the stub's key of the worker's gate.
fn turn_key(g: &mut Guard) -> Result<Result<(), Lost>, Error> {
    if let Err(lost) = g.start().and_then(|()| g.check()) {
        return Ok(Err(lost));
    }
    GATE.turn().map_err(|e| Error::setup(Step::Gate, e))?;
    // The worker, often on this CPU, waits for this key: it goes on now
    // rather than after the stub's filter install (paired A/B under
    // bubblewrap, 1500-2000 rounds, three runs, with init waiting for a
    // byte in its place: 0.988, 0.994, 0.996 of the build without).
    std::thread::yield_now();
    Ok(Ok(()))
}

/// The stub's filter: the unix and namespaces rules in one program
/// (filter/rules.rs, `Set::Stub`), the command's two answers in one
/// install.
fn filter_stub(plan: &Plan) -> Result<(), Error> {
    sys::set_no_new_privs().map_err(|e| Error::setup(Step::NoNewPrivs, e))?;
    sys::install_filter(plan.filters.stub.bytes()).map_err(|e| Error::setup(Step::StubFilters, e))
}
