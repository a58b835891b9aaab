//! The start of a run, in the stub, step by step: the signals blocked
//! and the control channel made before anything is started, the mount
//! guard's handles opened, and the stub's child started (init on the
//! namespace way, the worker on the capability-free way).

use std::os::fd::{AsRawFd, OwnedFd};

use nix::fcntl::OFlag;
use nix::sys::prctl;
use nix::sys::signal::{SigSet, SigmaskHow, sigprocmask};

use super::holder::start_holder;
use super::init::{InitArgs, inner_init};
use super::{GATE, INIT_STACK, WORKER_STACK};
use crate::error::{Error, Step};
use crate::run::guard::{Guard, Pid1};
use crate::run::plan::{Channel, Listener, Plan, Stub, Way};
use crate::run::terminal::Terminal;
use crate::run::worker;
use crate::sys;

/// Blocks `set` (the relayed signals and SIGCHLD, given its default
/// disposition back) before init starts; returns the mask the worker
/// restores.
pub(super) fn block_signals(set: &SigSet) -> Result<SigSet, Error> {
    // An inherited SIG_IGN for SIGCHLD would make the kernel reap for us.
    sys::set_default_disposition(libc::SIGCHLD).map_err(|e| Error::setup(Step::Signals, e))?;
    // Blocked before init starts, so no signal can arrive unhandled between
    // its start and the first sigwait; the worker restores `original`.
    let mut original = SigSet::empty();
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(set), Some(&mut original))
        .map_err(|e| Error::setup(Step::Signals, e))?;
    Ok(original)
}

/// The control channel, a pipe: the stub reads (`.0`), init and the
/// worker write (`.1`). In the shared table the write end stays open for
/// the stub's life (no end of file: the stub reads what is queued,
/// non-blocking).
pub(super) fn control_channel() -> Result<(OwnedFd, OwnedFd), Error> {
    nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)
        .map_err(|e| Error::setup(Step::ControlChannel, e))
}

/// The mount guard's handles (or none, and why, for `SRT_DEBUG`).
pub(super) fn open_guard(plan: &Plan, pid1: Pid1) -> (Option<Guard>, String) {
    // The mount guard's handles, before init mounts its /proc. Without
    // them the run goes on unguarded, as every other helper's does. Its
    // rename watches' instance is held past the stub's exit by init where
    // init outlives the stub, and on the capability-free way under
    // bubblewrap by a holder (below).
    let held = if plan.init_outlives_stub {
        Some("init (with the mount namespace)")
    } else if matches!(plan.way, Way::CapabilityFree { .. }) && pid1.is_bubblewrap() {
        Some("a holder process")
    } else {
        None
    };
    let (mut guard, note) = match Guard::open(pid1, held) {
        Ok(g) => (Some(g), String::new()),
        Err(why) => (None, format!("mount guard: off ({why})")),
    };
    // The stub checks while the worker makes its last steps (and on the
    // namespace way while init mounts), and turns its key of the worker's
    // gate once the check held (below). On the capability-free way the
    // holder takes its copy of the watches' instance first.
    if let (Way::CapabilityFree { .. }, Some(g)) = (plan.way, guard.as_mut()) {
        if let Some(fd) = g.instance_to_hold().map(|fd| fd.as_raw_fd()) {
            if start_holder(fd).is_err() {
                g.keep_instance();
            }
        }
    }
    (guard, note)
}

/// The caller's terminal: the command's group gets its foreground if the
/// stub's group has it, and its stops are passed up (terminal.rs).
pub(super) fn terminal(plan: Plan) -> (Option<Terminal>, Plan) {
    let terminal = Terminal::open();
    let plan = Plan {
        tty: terminal.as_ref().and_then(Terminal::to_hand_over),
        job_control: terminal.is_some(),
        ..plan
    };
    (terminal, plan)
}

/// What init (or the capability-free worker) gets: copies and descriptor
/// numbers, nothing borrowed. `chan`: the control channel's end it
/// writes; `guarded`: the stub checks the mount guard before the start.
pub(super) fn init_args(
    plan: Plan,
    (set, original): (SigSet, SigSet),
    chan: &OwnedFd,
    listener: Listener,
    guarded: bool,
) -> InitArgs {
    InitArgs {
        plan,
        set,
        original,
        chan: Channel::new(chan.as_raw_fd()),
        listener,
        stub: Stub::Unknown,
        // init's (namespace way) and the stub's (the guard's check).
        keys: u32::from(matches!(plan.way, Way::Namespaces { .. })) + u32::from(guarded),
        cpus: None,
    }
}

/// Starts the stub's child: init on the namespace way (on this CPU, then
/// out of its way), the worker on the capability-free way; returns its
/// PID. `had`: the caller's CPUs, given back once init has run.
pub(super) fn start_child(inner: InitArgs, had: Option<libc::cpu_set_t>) -> Result<i32, Error> {
    let child = match inner.plan.way {
        Way::Namespaces { limit_userns, .. } => {
            // init's stack, its for the life of this process
            // (sys::spawn_sharing_files).
            let init_stack =
                sys::Stack::new(INIT_STACK).map_err(|e| Error::setup(Step::Fork, e))?;
            // init starts on this CPU, and runs at once (the yield below):
            // left to the kernel, it went to the other, idle CPU in most
            // runs (231 of 298 traced under bubblewrap), and a virtual CPU
            // woken from halt ran it after a median 280 us (p75 1.7 ms),
            // against 6-9 us on this one. init gives itself the caller's
            // CPUs back first thing, before the worker starts; the stub
            // takes them back once init has run. Measured: paired 0.991 and
            // 0.994 of the build before under bubblewrap, 0.984 unpaired;
            // 1.00 on the host (docs/performance.md).
            let had = sys::pin_to_this_cpu(had);
            let inner = InitArgs {
                cpus: had,
                stub: Stub::for_init(),
                ..inner
            };
            let child =
                sys::spawn_sharing_files(init_stack, move || inner_init(inner, limit_userns))
                    .map_err(|e| Error::setup(Step::Fork, e))?;
            // Out of init's way: the kernel puts about half of the new
            // children on this CPU, where init would otherwise wait for the
            // filter installs below (trace, inside bwrap: init's start 105
            // us after its wake-up in that case, 5 us with the yield).
            std::thread::yield_now();
            // Only the stub's own scheduling depends on it: a failure
            // leaves the stub on one CPU, nothing else.
            if let Some(had) = had {
                let _ = sys::raw_set_affinity(&had);
            }
            child
        }
        Way::CapabilityFree { .. } => {
            // The command's orphans come back to the stub, which reaps them
            // and ends those left when the worker is done.
            prctl::set_child_subreaper(true).map_err(|e| Error::setup(Step::Subreaper, e))?;
            // The worker runs on in this memory (sys::spawn_sharing_files), as
            // init's does: its no_new_privs, Landlock domain and filters
            // (~25 us of the kernel's each) while the stub starts and
            // checks the mount guard, whose key of the gate it waits for.
            // Its stack stays mapped for the life of this process.
            let stack =
                sys::Stack::new(WORKER_STACK).map_err(|e| Error::setup(Step::ForkWorker, e))?;
            let stub = Stub::Pid(sys::raw_getpid());
            let inner = InitArgs { stub, ..inner };
            sys::spawn_sharing_files(stack, move || {
                inner.chan.arm_parent_death(inner.stub);
                worker::run(
                    inner.plan,
                    inner.original,
                    inner.chan,
                    inner.listener,
                    (&GATE, inner.keys),
                )
            })
            .map_err(|e| Error::setup(Step::ForkWorker, e))?
        }
    };
    Ok(child)
}
