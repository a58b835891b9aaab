//! Inner init, PID 1 of the new PID namespace (the namespace way only):
//! runs in the stub's memory while the stub runs on (sys::spawn_sharing_files),
//! so raw system calls only, no allocation, no formatting, no panics. It
//! takes back the caller's CPUs (it started on the stub's alone), arms
//! PDEATHSIG, starts the worker (in the same memory, which makes its
//! filters meanwhile and waits at a gate), makes `/` private, mounts
//! `/proc` (where refused, binds the caller's read-only), sets the
//! namespace limit, binds `/proc/sys` read-only, turns its key of the
//! worker's gate only if all of that held (else it exits, and with PID 1
//! the worker ends, unrun), relays the forwarded signals, reaps every
//! child and exits with the worker's status; or, where it outlives the
//! stub (`Plan::init_outlives_stub`), ends and reaps every other process
//! of the namespace, reports the status and waits for the stub's exit to
//! kill it.

use nix::errno::Errno;
use nix::sys::signal::SigSet;
use nix::unistd::Pid;

use crate::error::Step;
use crate::run::plan::{Listener, Stub};
use crate::run::worker;
use crate::sys;

use super::*;

/// What init starts with: copies and descriptor numbers only.
pub(super) struct InitArgs {
    pub(super) plan: Plan,
    pub(super) set: SigSet,
    pub(super) original: SigSet,
    pub(super) chan: Channel,
    /// Whether the worker installs the run's listener, and how it hands
    /// it to the stub.
    pub(super) listener: Listener,
    /// How init (or the capability-free worker) sees that the stub is
    /// alive.
    pub(super) stub: Stub,
    /// The keys the worker's gate needs ([`GATE`]): init's (namespace way),
    /// and the stub's where the mount guard checks before the start; none
    /// on the capability-free way without a guard (no gate).
    pub(super) keys: u32,
    /// The CPUs the stub had, where it kept itself on one for init's start
    /// (mod.rs): init gives them back to itself before the worker starts,
    /// so the command runs on the caller's.
    pub(super) cpus: Option<libc::cpu_set_t>,
}

/// PID 1 of the new PID namespace. Never returns. Runs in the stub's
/// memory while the stub runs on (sys::spawn_sharing_files): raw system calls
/// only, no allocation, nothing written but its own stack.
pub(super) fn inner_init(args: InitArgs, limit_userns: bool) -> ! {
    let InitArgs {
        plan,
        set,
        original,
        chan,
        listener,
        stub,
        keys,
        cpus,
    } = args;
    if let Some(cpus) = &cpus {
        if let Err(e) = sys::raw_set_affinity(cpus) {
            chan.fail(Step::Cpus, e);
        }
    }
    chan.arm_parent_death(stub);
    // The worker starts now and makes its last steps (the filters, ~25 us
    // of the kernel's each, the terminal) while init mounts; it execs once
    // init has turned its key of the gate, after every step below held
    // (and the stub its own, for the mount guard). Any `chan.fail` below
    // exits init, and the end of PID 1 kills the waiting worker. Its
    // stack: a raw mmap in the shared memory, never unmapped (init exits,
    // and the stub soon after).
    let worker = sys::Stack::new(WORKER_STACK).and_then(|stack| {
        sys::spawn_sharing_files(stack, move || {
            worker::run(plan, original, chan, listener, (&GATE, keys));
        })
    });
    let worker = match worker {
        Ok(pid) => pid,
        Err(e) => chan.fail(Step::ForkWorker, e),
    };
    mount(&plan, chan, limit_userns);
    // init's key; the stub turns its own once the mount guard's check
    // held (supervise/mod.rs).
    if let Err(e) = GATE.turn() {
        chan.fail(Step::Gate, e);
    }
    // With job control, the command's stops go to the stub, which stops
    // the caller's job in turn (terminal.rs).
    match supervise(Pid::from_raw(worker), &set, plan.job_control, &mut |sig| {
        chan.report(Kind::Stopped, Step::Wait, Errno::from_raw(sig))
    }) {
        Ok(status) => ended(status, &plan, chan),
        Err(e) => chan.fail(Step::Wait, e),
    }
}

/// init's steps in its namespaces while the worker makes its filters: `/`
/// private, a fresh `/proc` (or the caller's, read-only), the user
/// namespace limit, the task cap's `pid_max`, `/proc/sys` read-only.
/// A failure ends init (`chan.fail`), and the waiting worker with it.
fn mount(plan: &Plan, chan: Channel, limit_userns: bool) {
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
    let fresh_proc = match sys::raw_mount(
        c"proc",
        c"/proc",
        Some(c"proc"),
        (libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC) as libc::c_ulong,
    ) {
        Ok(()) => true,
        // A masked /proc (unprivileged containers) refuses a new instance,
        // as does bubblewrap's --proc to a root caller.
        Err(Errno::EPERM) => {
            chan.report(Kind::Debug, Step::MountProc, Errno::EPERM);
            false
        }
        Err(e) => chan.fail(Step::MountProc, e),
    };
    if limit_userns {
        if let Err(e) = sys::write_file(c"/proc/sys/user/max_user_namespaces", b"0\n") {
            chan.report(Kind::Debug, Step::LimitUserns, e);
        }
    }
    // The task cap's part in this PID namespace: its own pid_max
    // (tasks.rs; the stub checked the kernel keeps one per namespace).
    // Refused, an asked cap ends the run; the default is said as
    // tolerated (the doctor reads it).
    if let Some(cap) = plan
        .tasks
        .filter(|c| c.means == crate::run::tasks::Means::PidMax)
    {
        let mut buf = [0; 11];
        let value = crate::run::tasks::decimal(cap.pid_max(), &mut buf);
        if let Err(e) = sys::write_file(c"/proc/sys/kernel/pid_max", value) {
            if cap.asked {
                chan.fail(Step::TaskCap, e);
            }
            chan.report(Kind::Debug, Step::TaskCap, e);
        }
    }
    // The caller's /proc stays, listing processes outside, some of whose
    // files take writes with no ptrace-mode check (oom_score_adj,
    // autogroup): read-only for the command, with what is mounted in it.
    if !fresh_proc {
        if let Err(e) = read_only_bind(c"/proc", true) {
            chan.fail(Step::ProcReadOnly, e);
        }
    }
    // Read-only for the command: as root in the user namespace it holds
    // CAP_SYS_RESOURCE there and could raise the limit just set (or, as
    // host root on the direct path, write any sysctl). Mounts are the
    // filter's to refuse, so it stays read-only.
    if let Err(e) = read_only_bind(c"/proc/sys", false) {
        chan.fail(Step::ProcSysReadOnly, e);
    }
}

/// The command has exited with `status`. Where init outlives the stub,
/// what the command left is ended and reaped first, as the end of the
/// namespace would, so that once the stub has the status none of the
/// command's processes runs; with a task cap, what is left is counted
/// the same way (the end of the namespace would end it a moment later):
/// a command that met the cap left about as many processes, and the stub
/// says so. Where init outlives the stub it then waits for the stub's
/// exit (PDEATHSIG), and its own end releases the run; else it exits
/// with the status, and the namespace's end takes the rest.
fn ended(status: i32, plan: &Plan, chan: Channel) -> ! {
    if plan.init_outlives_stub || plan.tasks.is_some() {
        let left = sys::end_all_others();
        if plan.tasks.is_some_and(|cap| cap.reached(left)) {
            chan.task_cap(left);
        }
    }
    // The stub waits for the report, or for init's end: where the
    // report could not be sent (a failed write), init ends now
    // with the status, or the two would wait for each other.
    if plan.init_outlives_stub && chan.exited(status) {
        sys::wait_to_be_killed()
    }
    sys::exit_now(status)
}

/// `path` (in `/proc`) bound onto itself read-only, with the flags a
/// procfs mount has, which a user namespace may not drop; `recursive`
/// takes the mounts beneath along (a non-recursive bind of a mount with
/// locked mounts beneath, a container's masks, is refused). Where the bind
/// is refused (a container's masked `/proc`), a `path` already read-only
/// will do. Raw calls only: init runs this.
pub(super) fn read_only_bind(path: &std::ffi::CStr, recursive: bool) -> Result<(), Errno> {
    let kept = (libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC) as libc::c_ulong;
    let rec = if recursive { libc::MS_REC } else { 0 };
    let bound =
        sys::raw_mount(path, path, None, (libc::MS_BIND | rec) as libc::c_ulong).and_then(|()| {
            sys::raw_mount(
                c"none",
                path,
                None,
                (libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY) as libc::c_ulong | kept,
            )
        });
    match bound {
        Ok(()) => Ok(()),
        Err(e) => match sys::raw_is_read_only(path) {
            Ok(true) => Ok(()),
            _ => Err(e),
        },
    }
}
