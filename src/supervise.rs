//! The process tree, built after `userns::enter`. On the namespace way:
//!
//! ```text
//! caller (bwrap's shell, srt, a library)
//!  └─ apply-seccomp: outer stub        caller's PID namespace; non-dumpable
//!     │  before init starts; then no_new_privs, the unix and namespaces
//!     │  filters on itself (while init works on the other CPU); forwards
//!     │  TERM INT HUP QUIT USR1 USR2, reaps its child, prints the
//!     │  reports the inner processes send over the control channel, exits
//!     │  with the child's status (code, or 128+signal)
//!     └─ inner init, PID 1             new PID + mount namespaces, no filter
//!        │  (as upstream), in the stub's memory (sys::spawn_shared);
//!        │  PDEATHSIG=KILL (checked against a parent already gone),
//!        │  non-dumpable (the shared memory map's flag), / private, fresh
//!        │  /proc, max_user_namespaces=0, starts the worker the way
//!        │  posix_spawn does (sys::spawn_vfork), forwards the same
//!        │  signals, reaps every child, exits with the worker's status
//!        └─ worker, PID 2              worker.rs: no_new_privs, the unix
//!                                      and namespaces filters,
//!                                      execvp(command)
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
//!  └─ apply-seccomp: outer stub        as above; outside the Landlock domain
//!     └─ worker                        worker.rs: PDEATHSIG=KILL, no_new_privs,
//!                                      landlock_restrict_self, the filters,
//!                                      execvp(command)
//! ```
//!
//! Why shared memory: a fork copies the stub's page tables, both sides
//! then take copy-on-write faults, and init's exit tears its copy down,
//! all between the caller's start of the helper and its end (README,
//! "Measured"). The price is discipline: init and the worker run while
//! the stub runs on, so they read only `'static` data prepared before
//! init starts (the command line is leaked by main.rs, the filters are
//! embedded, the rest is copied into init's closure), write nothing but
//! their own stacks, never allocate, and make system calls only through
//! `sys`'s raw wrappers, which leave libc's errno alone: prctl
//! (PDEATHSIG, no_new_privs), ppoll, mount, openat/write/close, mmap and
//! mprotect (the worker's stack), clone, rt_sigprocmask,
//! rt_sigtimedwait, kill, wait4, seccomp, sendmsg, execve (through
//! execvp's search), write of an 8-byte report, `_exit`.
//!
//! The control channel is a SOCK_SEQPACKET pair: the inner processes write
//! fixed 8-byte reports to their end (close-on-exec, so the command never
//! holds it); the stub reads them once its child is reaped. The inner end
//! also tells init whether the stub is still alive (POLLHUP once it is not).

use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::prctl;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use crate::error::{EXIT_SETUP, Error, Step};
use crate::filter::Filters;
use crate::guard::{Guard, Lost};
use crate::observe::Observer;
use crate::sys::{self, ExecArgs};
use crate::terminal::Terminal;
use crate::worker;

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

/// What the inner processes need, prepared before init starts. init
/// runs in the stub's memory while the stub goes on (sys::spawn_shared),
/// so all of it is `'static`: the command line is leaked by main.rs, the
/// filters are embedded.
#[derive(Clone, Copy)]
pub struct Plan {
    pub exec: &'static ExecArgs,
    pub filters: Filters,
    pub way: Way,
    /// The read end of the go-ahead pipe: the worker waits on it, just
    /// before its exec, for the stub's mount check (guard.rs). `None`: no
    /// check to wait for.
    pub go: Option<RawFd>,
    /// The caller's terminal, whose foreground the worker gives the
    /// command's group (terminal.rs); `None`: no terminal, or the stub's
    /// group is not in front.
    pub tty: Option<RawFd>,
    /// The stub has a controlling terminal: the command's stops are passed
    /// up (init reports them; the capability-free stub sees them itself).
    pub job_control: bool,
}

/// The way in, as the process tree sees it.
#[derive(Clone, Copy, Debug)]
pub enum Way {
    /// init in new PID and mount namespaces, then the worker.
    Namespaces {
        /// Write 0 to `max_user_namespaces` (the helper made the user
        /// namespace and nesting is not allowed).
        limit_userns: bool,
    },
    /// No namespaces: the worker straight from the stub, joining the
    /// Landlock domain of `ruleset` (a descriptor the stub holds for the
    /// run; close-on-exec).
    CapabilityFree { ruleset: RawFd },
}

/// How serious a report from an inner process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The step failed and the process exited: the command did not run.
    Fatal = 1,
    /// The step failed and the run went on (documented as non-fatal).
    Warning = 2,
    /// A tolerated failure, shown with `SRT_DEBUG`.
    Debug = 3,
    /// Not a failure: the command stopped, with the signal in `errno`
    /// (init to the stub, with job control only).
    Stopped = 4,
}

/// One report from an inner process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    pub kind: Kind,
    pub step: Step,
    pub errno: i32,
}

impl Report {
    const SIZE: usize = 8;

    fn encode(self) -> [u8; Report::SIZE] {
        let e = self.errno.to_le_bytes();
        [
            self.kind as u8,
            self.step as u8,
            0,
            0,
            e[0],
            e[1],
            e[2],
            e[3],
        ]
    }

    fn decode(b: &[u8]) -> Option<Report> {
        if b.len() != Report::SIZE {
            return None;
        }
        let kind = match b[0] {
            1 => Kind::Fatal,
            2 => Kind::Warning,
            3 => Kind::Debug,
            4 => Kind::Stopped,
            _ => return None,
        };
        Some(Report {
            kind,
            step: Step::from_u8(b[1])?,
            errno: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        })
    }
}

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
    /// What the mount guard watched, for `SRT_DEBUG`.
    pub guard_note: String,
}

/// The inner end of the control channel, as seen by init and the worker
/// (a descriptor number: they share the stub's memory, not its file
/// table, and close what they do not need with raw calls).
#[derive(Clone, Copy)]
pub struct Channel(RawFd);

impl Channel {
    /// Sends a report; failure to send is ignored (the exit code still
    /// tells the stub something went wrong).
    pub fn report(self, kind: Kind, step: Step, errno: Errno) {
        let bytes = Report {
            kind,
            step,
            errno: errno as i32,
        }
        .encode();
        let _ = sys::raw_write(self.0, &bytes);
    }

    /// Reports a fatal failure and leaves with the setup exit code.
    pub fn fail(self, step: Step, errno: Errno) -> ! {
        self.report(Kind::Fatal, step, errno);
        sys::exit_now(EXIT_SETUP)
    }

    /// First steps of a child of the stub (init, or the capability-free
    /// worker): closes the stub's ends of the channels in its own file
    /// table, asks for SIGKILL when the stub dies, and checks the stub did
    /// not die before that took effect (its end of this channel is then
    /// closed: POLLHUP). Raw calls only.
    pub fn arm_parent_death(self, stub_ends: [Option<RawFd>; 3]) {
        for fd in stub_ends.into_iter().flatten() {
            sys::raw_close(fd);
        }
        if let Err(e) = sys::set_pdeathsig(libc::SIGKILL) {
            self.fail(Step::ParentDeathSignal, e);
        }
        match sys::peer_closed(self.0) {
            Ok(false) => {}
            Ok(true) => sys::exit_now(EXIT_SETUP),
            Err(e) => self.fail(Step::ParentDeathSignal, e),
        }
    }
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
pub fn run(plan: Plan, mut observer: Option<&mut Observer>) -> Result<Outcome, Error> {
    let set = signal_set();
    // An inherited SIG_IGN for SIGCHLD would make the kernel reap for us.
    sys::set_default_disposition(libc::SIGCHLD).map_err(|e| Error::setup(Step::Signals, e))?;
    // Blocked before init starts, so no signal can arrive unhandled between
    // its start and the first sigwait; the worker restores `original`.
    let mut original = SigSet::empty();
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), Some(&mut original))
        .map_err(|e| Error::setup(Step::Signals, e))?;
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
    )
    .map_err(|e| Error::setup(Step::ControlChannel, e))?;
    // The worker passes the observe filter's listener over this one.
    // Fail-open: without it the run goes on unobserved.
    let mut observe_errors = Vec::new();
    let listener_pair = match observer {
        Some(_) => match socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        ) {
            Ok(pair) => Some(pair),
            Err(e) => {
                observe_errors.push(format!("socketpair: {}", e.desc()));
                observer = None;
                None
            }
        },
        None => None,
    };
    // The stub stays outside the command's PID namespace but shares its
    // user namespace (and, for a root caller, its capabilities there). Where
    // the fresh /proc is refused (under bubblewrap's --proc) the command can
    // see the stub; non-dumpable, its memory and /proc files are closed to
    // the command. Set before init starts, so there is no window.
    prctl::set_dumpable(false).map_err(|e| Error::setup(Step::Dumpable, e))?;

    // The mount guard's handles, before init mounts its /proc. Without
    // them the run goes on unguarded, as every other helper's does.
    let (mut guard, mut guard_note) = match Guard::open() {
        Ok(g) => (Some(g), String::new()),
        Err(why) => (None, format!("mount guard: off ({why})")),
    };
    // On the capability-free way the stub checks before the worker
    // starts (it sleeps while the worker runs to its exec); on the
    // namespace way it checks while init works, and the worker waits for
    // its go-ahead.
    if let (Way::CapabilityFree { .. }, Some(g)) = (plan.way, guard.as_mut()) {
        if let Err(lost) = g.start() {
            return Ok(refused_before_start(lost, observer, observe_errors, &ours));
        }
    }
    let go = match (plan.way, &guard) {
        (Way::Namespaces { .. }, Some(_)) => Some(
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
                .map_err(|e| Error::setup(Step::MountGuard, e))?,
        ),
        _ => None,
    };
    // The caller's terminal: the command's group gets its foreground if
    // the stub's group has it, and its stops are passed up (terminal.rs).
    let terminal = Terminal::open();
    let plan = Plan {
        go: go.as_ref().map(|(read, _)| read.as_raw_fd()),
        tty: terminal.as_ref().and_then(Terminal::to_hand_over),
        job_control: terminal.is_some(),
        ..plan
    };

    // What init (or the capability-free worker) gets: copies and
    // descriptor numbers, nothing borrowed.
    let inner = InitArgs {
        plan,
        set,
        original,
        chan: Channel(theirs.as_raw_fd()),
        listener_chan: listener_pair.as_ref().map(|(_, inner)| inner.as_raw_fd()),
        stub_ends: [
            Some(ours.as_raw_fd()),
            listener_pair.as_ref().map(|(stub, _)| stub.as_raw_fd()),
            go.as_ref().map(|(_, write)| write.as_raw_fd()),
        ],
    };
    let child = match plan.way {
        Way::Namespaces { limit_userns } => {
            // init's stack, its for the life of this process
            // (sys::spawn_shared).
            let init_stack =
                sys::Stack::new(INIT_STACK).map_err(|e| Error::setup(Step::Fork, e))?;
            let child = sys::spawn_shared(init_stack, move || inner_init(inner, limit_userns))
                .map_err(|e| Error::setup(Step::Fork, e))?;
            // Out of init's way: the kernel puts about half of the new
            // children on this CPU, where init would otherwise wait for the
            // filter installs below (trace, inside bwrap: init's start 105
            // us after its wake-up in that case, 5 us with the yield).
            std::thread::yield_now();
            child
        }
        Way::CapabilityFree { .. } => {
            // The command's orphans come back to the stub, which reaps them
            // and ends those left when the worker is done.
            prctl::set_child_subreaper(true).map_err(|e| Error::setup(Step::Subreaper, e))?;
            // Returns once the worker has exec'd or exited (CLONE_VFORK),
            // so its stack can go with this frame.
            let mut stack =
                sys::Stack::new(WORKER_STACK).map_err(|e| Error::setup(Step::ForkWorker, e))?;
            sys::spawn_vfork(&mut stack, 0, move || {
                inner.chan.arm_parent_death(inner.stub_ends);
                worker::run(inner.plan, inner.original, inner.chan, inner.listener_chan)
            })
            .map_err(|e| Error::setup(Step::ForkWorker, e))?
        }
    };
    drop(theirs);
    let listener_chan = listener_pair.map(|(stub_end, inner_end)| {
        drop(inner_end);
        stub_end
    });
    let child = Pid::from_raw(child);
    // The check, while init works; then the go-ahead (one byte), or none:
    // the worker then reads the end of the pipe and exits unrun.
    if let (Some((_, write)), Some(g)) = (go, guard.as_mut()) {
        let verdict = match g.start() {
            Ok(()) => sys::raw_write(write.as_raw_fd(), b"g")
                .map(|_| None)
                .map_err(|e| Error::setup(Step::MountGuard, e)),
            Err(lost) => Ok(Some(lost)),
        };
        // Unless it got its byte, the worker now reads the end of the pipe.
        drop(write);
        if !matches!(verdict, Ok(None)) {
            let _ = kill(child, Signal::SIGKILL);
            let _ = waitpid(child, None);
        }
        if let Some(lost) = verdict? {
            return Ok(refused_before_start(lost, observer, observe_errors, &ours));
        }
    }
    if let Some(g) = &guard {
        guard_note = g.summary.clone();
    }
    // The stub needs none of what the filters refuse; filtered, it is no
    // way around them even if the command got hold of it. Here, not before
    // init starts: init would inherit them, and the worker installs its
    // own while this runs.
    if let Err(e) = filter_stub(&plan) {
        let _ = kill(child, Signal::SIGKILL);
        let _ = waitpid(child, None);
        return Err(e);
    }
    let guard = guard.filter(Guard::watching);
    let observed = observer.as_deref_mut().zip(listener_chan);
    let job = terminal.as_ref().map(|terminal| Job {
        terminal,
        control: &ours,
    });
    let mut early = Vec::new();
    let (status, mut lost) = if observed.is_none() && guard.is_none() && job.is_none() {
        supervise(child, &set, false, &mut |_| {}).map(|status| (status, None))
    } else {
        serve(
            child,
            &set,
            plan.way,
            (observed, guard.as_ref()),
            job.as_ref(),
            &mut observe_errors,
            &mut early,
        )
    }
    .map_err(|e| Error::setup(Step::Wait, e))?;
    if let Way::CapabilityFree { .. } = plan.way {
        end_leftovers();
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
    Ok(Outcome {
        status: if lost.is_some() { EXIT_SETUP } else { status },
        reports: early,
        observe_errors,
        lost,
        guard_note,
    })
}

/// The outcome when a protecting mount was gone before the command
/// started: it did not run.
fn refused_before_start(
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
        lost: Some(lost),
    }
}

/// Stops the command's whole tree at once, without reaping it: on the
/// namespace way SIGKILL to init ends its PID namespace; on the
/// capability-free way the worker and every descendant `/proc` lists get
/// SIGKILL (what escapes the walk, the end of the run kills).
fn stop_tree(child: Pid, way: Way) {
    if let Way::CapabilityFree { .. } = way {
        let mut todo = vec![child.as_raw()];
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
        for pid in found {
            let _ = sys::raw_kill(pid, libc::SIGKILL);
        }
    }
    let _ = sys::raw_kill(child.as_raw(), libc::SIGKILL);
}

fn filter_stub(plan: &Plan) -> Result<(), Error> {
    sys::set_no_new_privs().map_err(|e| Error::setup(Step::NoNewPrivs, e))?;
    for program in [Some(plan.filters.unix), plan.filters.namespaces]
        .into_iter()
        .flatten()
    {
        sys::install_filter(program.bytes()).map_err(|e| Error::setup(Step::StubFilters, e))?;
    }
    Ok(())
}

/// Relays the forwarded signals to `child` and reaps every child until
/// `child` itself is reaped; returns its status (code, or 128+signal).
/// With `untraced`, `on_stop` hears each stop of `child`. Raw calls only:
/// init runs this in shared memory.
fn supervise(
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
enum Event {
    /// Reaped: its status (code, or 128+signal).
    Ended(i32),
    /// Stopped by this signal (asked for with `untraced` only).
    Stopped(libc::c_int),
}

/// Forwards `sig` to `child`, or for SIGCHLD reaps what has exited (and,
/// with `untraced`, sees a stop of `child`).
fn on_signal(child: Pid, sig: libc::c_int, untraced: bool) -> Result<Option<Event>, Errno> {
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

/// The stub's part in job control: its terminal, and the control channel
/// on which init reports the command's stops.
struct Job<'a> {
    terminal: &'a Terminal,
    control: &'a OwnedFd,
}

impl Job<'_> {
    /// The command stopped with `sig`: see terminal.rs.
    fn command_stopped(&self, sig: libc::c_int, child: Pid, way: Way) {
        let group = match way {
            Way::CapabilityFree { .. } => Some(child.as_raw()),
            // The worker, init's first child, leads the command's group.
            Way::Namespaces { .. } => self.terminal.first_child(child.as_raw()),
        };
        self.terminal.command_stopped(sig, group);
    }

    /// Reads what init sent: stops are acted on, other reports kept for
    /// the end. False once the channel is done (every inner end closed).
    fn read(&self, child: Pid, way: Way, early: &mut Vec<Report>) -> bool {
        let mut buf = [0u8; 64];
        loop {
            match nix::unistd::read(self.control.as_fd(), &mut buf) {
                Ok(0) => return false,
                Ok(n) => match Report::decode(&buf[..n]) {
                    Some(r) if r.kind == Kind::Stopped => self.command_stopped(r.errno, child, way),
                    Some(r) => early.push(r),
                    None => {}
                },
                Err(Errno::EINTR) => {}
                Err(_) => return true,
            }
        }
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
/// stub in turn; other reports read meanwhile go to `early`.
fn serve(
    child: Pid,
    set: &SigSet,
    way: Way,
    (mut observed, mut guard): (Option<(&mut Observer, OwnedFd)>, Option<&Guard>),
    job: Option<&Job>,
    errors: &mut Vec<String>,
    early: &mut Vec<Report>,
) -> Result<(i32, Option<Lost>), Errno> {
    let signals = SignalFd::with_flags(set, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)?;
    // Init reports stops on the control channel; the capability-free
    // worker is the stub's child, whose stops wait4 shows.
    let capfree = matches!(way, Way::CapabilityFree { .. });
    let mut control = job.filter(|_| !capfree);
    let untraced = job.is_some() && capfree;
    let (mut obs, mut chan) = match observed.take() {
        Some((obs, chan)) => (Some(obs), Some(chan)),
        None => (None, None),
    };
    let mut listener: Option<OwnedFd> = None;
    let mut lost = None;
    loop {
        let mut fds = vec![PollFd::new(signals.as_fd(), PollFlags::POLLIN)];
        let chan_at = chan.as_ref().map(|c| {
            fds.push(PollFd::new(c.as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        let listener_at = listener.as_ref().map(|l| {
            fds.push(PollFd::new(l.as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        let guard_at = guard.map(|g| {
            fds.push(PollFd::new(g.fd(), PollFlags::POLLPRI));
            fds.len() - 1
        });
        let control_at = control.map(|j| {
            fds.push(PollFd::new(j.control.as_fd(), PollFlags::POLLIN));
            fds.len() - 1
        });
        if let Some(o) = obs.as_ref().filter(|o| o.pending()) {
            fds.push(PollFd::new(o.socket(), PollFlags::POLLOUT));
        }
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
        let ready: Vec<PollFlags> = fds
            .iter()
            .map(|f| f.revents().unwrap_or(PollFlags::empty()))
            .collect();
        drop(fds);
        if let (Some(at), Some(g)) = (guard_at, guard) {
            if ready[at].intersects(PollFlags::POLLPRI | PollFlags::POLLERR) {
                if let Some(l) = g.changed() {
                    stop_tree(child, way);
                    lost = Some(l);
                    guard = None;
                }
            }
        }
        if let (Some(at), Some(o)) = (chan_at, obs.as_mut()) {
            // One message at most: the channel is done either way.
            if !ready[at].is_empty() {
                if let Some(c) = chan.take() {
                    match sys::recv_fd(c.as_fd()) {
                        Ok(Some((0, Some(fd)))) => listener = Some(fd),
                        Ok(Some((errno, _))) => {
                            let text =
                                format!("seccomp listener: {}", Errno::from_raw(errno).desc());
                            o.init_error(&text);
                            errors.push(text);
                        }
                        // EOF: init and the worker ended before sending.
                        _ => {}
                    }
                }
            }
        }
        if let (Some(at), Some(o)) = (listener_at, obs.as_mut()) {
            if ready[at].contains(PollFlags::POLLIN) {
                if let Some(l) = &listener {
                    o.handle(l.as_fd());
                }
            } else if ready[at]
                .intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)
            {
                // No process is left under the filter.
                listener = None;
            }
        }
        if let Some(o) = obs.as_mut() {
            o.flush();
        }
        if let (Some(at), Some(j)) = (control_at, control) {
            if !ready[at].is_empty() && !j.read(child, way, early) {
                control = None;
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

/// The end of a capability-free run: kills and reaps every process the
/// command left behind, as the end of a PID namespace does on the other
/// way. They are children of the stub (a subreaper), listed in
/// `/proc/thread-self/children`; killing one hands its own children to the
/// stub, so the list is read again until nothing is left to reap. Where
/// `/proc` cannot be read, only the finished ones are reaped.
fn end_leftovers() {
    loop {
        let listed = std::fs::read_to_string("/proc/thread-self/children");
        for pid in listed.iter().flat_map(|text| text.split_whitespace()) {
            if let Ok(pid) = pid.parse::<libc::pid_t>() {
                let _ = sys::raw_kill(pid, libc::SIGKILL);
            }
        }
        let reaped = if listed.is_ok() {
            // Blocking: each one listed was just sent SIGKILL.
            waitpid(Pid::from_raw(-1), None).map(drop)
        } else {
            sys::reap_any(false).and_then(|r| r.map(drop).ok_or(Errno::ECHILD))
        };
        match reaped {
            Ok(()) | Err(Errno::EINTR) => {}
            Err(_) => return,
        }
    }
}

fn read_reports(ours: &OwnedFd) -> Vec<Report> {
    let mut reports = Vec::new();
    let mut buf = [0u8; 64];
    // Non-blocking: every writer has exited (the PID namespace is empty
    // once its init is reaped), so this reads what is queued, then stops.
    while let Ok(n) = nix::unistd::read(ours.as_fd(), &mut buf) {
        if n == 0 {
            break;
        }
        if let Some(r) = Report::decode(&buf[..n]) {
            reports.push(r);
        }
    }
    reports
}

/// What init starts with: copies and descriptor numbers only.
struct InitArgs {
    plan: Plan,
    set: SigSet,
    original: SigSet,
    chan: Channel,
    listener_chan: Option<RawFd>,
    /// The stub's ends of the channels and of the go-ahead pipe: init's
    /// (or the worker's) copies are closed.
    stub_ends: [Option<RawFd>; 3],
}

/// PID 1 of the new PID namespace. Never returns. Runs in the stub's
/// memory while the stub runs on (sys::spawn_shared): raw system calls
/// only, no allocation, nothing written but its own stack.
fn inner_init(args: InitArgs, limit_userns: bool) -> ! {
    let InitArgs {
        plan,
        set,
        original,
        chan,
        listener_chan,
        stub_ends,
    } = args;
    chan.arm_parent_death(stub_ends);
    // Non-dumpable already: the flag belongs to the memory map, which is
    // the stub's, cleared before init started.
    if let Err(e) = sys::raw_mount(
        c"none",
        c"/",
        None,
        (libc::MS_REC | libc::MS_PRIVATE) as libc::c_ulong,
    ) {
        chan.fail(Step::MountPrivate, e);
    }
    match sys::raw_mount(
        c"proc",
        c"/proc",
        Some(c"proc"),
        (libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC) as libc::c_ulong,
    ) {
        Ok(()) => {}
        // A masked /proc (unprivileged containers) refuses a new instance.
        Err(Errno::EPERM) => chan.report(Kind::Debug, Step::MountProc, Errno::EPERM),
        Err(e) => chan.fail(Step::MountProc, e),
    }
    if limit_userns {
        if let Err(e) = sys::write_file(c"/proc/sys/user/max_user_namespaces", b"0\n") {
            chan.report(Kind::Warning, Step::LimitUserns, e);
        }
    }
    // Read-only for the command: as root in the user namespace it holds
    // CAP_SYS_RESOURCE there and could raise the limit just set (or, as
    // host root on the direct path, write any sysctl). Mounts are the
    // filter's to refuse, so it stays read-only.
    if let Err(e) = protect_sysctls() {
        chan.fail(Step::ProcSysReadOnly, e);
    }
    // A raw mmap, in the shared memory; never unmapped (init exits, and
    // the stub soon after).
    let mut worker_stack = match sys::Stack::new(WORKER_STACK) {
        Ok(stack) => stack,
        Err(e) => chan.fail(Step::ForkWorker, e),
    };
    let worker = sys::spawn_vfork(&mut worker_stack, 0, move || {
        worker::run(plan, original, chan, listener_chan);
    });
    std::mem::forget(worker_stack);
    match worker {
        Err(e) => chan.fail(Step::ForkWorker, e),
        // With job control, the command's stops go to the stub, which
        // stops the caller's job in turn (terminal.rs).
        Ok(pid) => match supervise(Pid::from_raw(pid), &set, plan.job_control, &mut |sig| {
            chan.report(Kind::Stopped, Step::Wait, Errno::from_raw(sig))
        }) {
            Ok(status) => sys::exit_now(status),
            Err(e) => chan.fail(Step::Wait, e),
        },
    }
}

/// `/proc/sys` bound onto itself read-only (with the flags the fresh
/// `/proc` has, which a user namespace may not drop). Where the bind is
/// refused (a container's masked `/proc`), a `/proc/sys` already read-only
/// will do. Raw calls only: init runs this.
fn protect_sysctls() -> Result<(), Errno> {
    let kept = (libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC) as libc::c_ulong;
    let bound = sys::raw_mount(
        c"/proc/sys",
        c"/proc/sys",
        None,
        libc::MS_BIND as libc::c_ulong,
    )
    .and_then(|()| {
        sys::raw_mount(
            c"none",
            c"/proc/sys",
            None,
            (libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY) as libc::c_ulong | kept,
        )
    });
    match bound {
        Ok(()) => Ok(()),
        Err(e) => match sys::raw_is_read_only(c"/proc/sys") {
            Ok(true) => Ok(()),
            _ => Err(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip() {
        let r = Report {
            kind: Kind::Warning,
            step: Step::LimitUserns,
            errno: libc::EACCES,
        };
        assert_eq!(Report::decode(&r.encode()), Some(r));
        assert_eq!(Report::decode(&[9, 1, 0, 0, 0, 0, 0, 0]), None);
        assert_eq!(Report::decode(&[1, 1, 0]), None);
    }
}
