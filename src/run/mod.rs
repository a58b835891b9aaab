//! A run: everything the helper executes between its command line and
//! the command's exec, and after it until its status is handed back, in
//! the order it happens. [`run`] is the list of its steps; this door
//! prints its own lines (before the command's output: observation's
//! failure; after it: the reports, the refusals, the caps met).
//!
//! - `userns`: the way in with namespaces: the thread-count wait, the user
//!   namespace (bounded `EINVAL` retry), and the failure's cause; `threads`
//!   the thread count it waits on.
//! - `capfree`: the second way in, where a user namespace gives no usable
//!   capability: the same filters and a Landlock domain, no namespaces;
//!   `way` what each way adds to the filters.
//! - `tasks` and `cgroup`: the run's caps (tasks, memory, CPU), checked
//!   before anything runs.
//! - `plan`: what the processes share (the plan, the control channel).
//! - `supervise`: the outer stub and the inner init: the mounts, the
//!   listener, the serve loop, the end; `terminal` the foreground group.
//! - `worker`: the filters installed, the command exec'd.
//! - `sockets` (with `named_sockets`, `unix_diag`): the own-sockets policy
//!   the stub keeps, or the kernel's.
//! - `guard`: the mount guard.
//! - `observe` and `report`: write observation and the refused calls'
//!   line.
pub mod capfree;
pub mod cgroup;
pub mod guard;
pub mod named_sockets;
pub mod observe;
pub mod plan;
pub mod report;
pub mod sockets;
pub mod supervise;
pub mod tasks;
pub mod terminal;
pub mod threads;
pub mod unix_diag;
pub mod userns;
pub mod way;
pub mod worker;

use std::io;

use crate::cli::{RunConfig, SCRUBBED, UnixPolicy};
use crate::debug;
use crate::error::{self, Error, Step};
use crate::filter::{self, Sockets};
use crate::sys;
use plan::{Kind, Report, Way};
use userns::Backoff;

/// A run of the command: its exit status, or why it could not start.
pub fn run(cfg: &RunConfig) -> Result<i32, Error> {
    // Who holds the socket policy: the kernel where it can (Landlock ABI 9),
    // else the stub (issue 55).
    let sockets = match cfg.unix {
        UnixPolicy::Deny => Sockets::Deny,
        UnixPolicy::Own if sockets::kernel::available() => Sockets::Kernel,
        UnixPolicy::Own => Sockets::Mediated,
    };
    let filters = filter::filters(cfg.allow_nested_userns, sockets, cfg.report)?;
    let kernel_sockets = sockets == Sockets::Kernel;
    if kernel_sockets {
        let note =
            sockets::kernel::name_inherited().map_err(|e| Error::setup(Step::Landlock, e))?;
        debug(cfg.debug && !note.is_empty(), || note);
    }
    // Leaked: init and the worker read it from the stub's memory while the
    // stub runs on (supervise/), so it must never be freed.
    let exec: &'static sys::ExecArgs = Box::leak(Box::new(
        sys::ExecArgs::new(&cfg.argv)
            .ok_or_else(|| Error::Usage("an argument contains a NUL byte".into()))?,
    ));
    // First: the unix filter will refuse the socket, and `/proc` must be the
    // caller's. Fail-open: the command runs on, unobserved.
    let mut observer = cfg
        .observe
        .as_ref()
        .and_then(|o| match observe::Observer::connect(o) {
            Ok(obs) => Some(obs),
            Err(text) => {
                eprintln!("{}", observe::init_error_line(&text));
                None
            }
        });
    // Before init starts, so no process of the tree carries them and
    // the worker needs no allocation to drop them; their strings wiped
    // where /proc/PID/environ of the stub and init shows them.
    sys::scrub_env(&SCRUBBED);

    // Memory and CPU caps asked: a cgroup of the run's must hold them.
    let cgroup = cfg
        .limits
        .as_ref()
        .map(|asked| cgroup::for_run(asked, cfg.allow_nested_userns))
        .transpose()?;
    let pid1 = guard::Pid1::look();
    let entry = userns::enter(&Backoff::default(), cfg.way_in)?;
    debug(cfg.debug, || entry.describe());
    caps::clear(None, caps::CapSet::Ambient)
        .map_err(|e| Error::setup(Step::ClearAmbient, io::Error::other(e.to_string())))?;
    // `ruleset`: held until the run has ended (the worker joins it).
    let way::Confined {
        way,
        ruleset,
        unix_note,
    } = way::confine(&entry.path, cfg, kernel_sockets)?;
    debug(cfg.debug, || way::describe(&filters, &way));
    // Under bubblewrap, init holds what the run's end releases until the
    // stub has exited (plan.rs): bubblewrap's caller goes on as soon as the
    // stub is reaped, and a guarded run's end would otherwise wait there
    // for the kernel (the inotify instance's grace period, the unmount of
    // the run's copy of bubblewrap's mounts). On the host the stub's own
    // exit releases them: measured cheaper there for commands run back to
    // back (docs/performance.md).
    let namespaces = matches!(way, Way::Namespaces { .. });
    let init_outlives_stub = pid1.is_bubblewrap() && namespaces;
    // The CPUs: the default task cap grows with them, and init starts on
    // one of them (supervise/).
    let had = namespaces.then(sys::affinity).flatten();
    let tasks = tasks::for_run(
        cfg.max_tasks,
        &entry.path,
        had.as_ref(),
        cfg.allow_nested_userns,
    )?;
    debug(cfg.debug, || {
        tasks::describe_run(tasks.as_ref(), &entry.path, cfg.allow_nested_userns)
    });
    let outcome = supervise::run(
        plan::Plan {
            exec,
            filters,
            way,
            tty: None,
            job_control: false,
            init_outlives_stub,
            observed: observer.is_some(),
            tasks,
        },
        observer.as_mut(),
        (pid1, had),
        (cfg.debug, &cfg.allow_unix, unix_note),
    )?;
    said_after(cfg, tasks, &outcome, observer.as_ref());
    if let (Some(asked), Some(held)) = (&cfg.limits, &cgroup) {
        cgroup::said(asked, held)
            .iter()
            .for_each(|l| eprintln!("{l}"));
    }
    drop(ruleset);
    Ok(outcome.status)
}

/// The lines after the command's own output, in order: what its
/// processes reported, the note on 125-127, and last what the sandbox
/// refused.
fn said_after(
    cfg: &RunConfig,
    tasks: Option<tasks::Cap>,
    outcome: &supervise::Outcome,
    observer: Option<&observe::Observer>,
) {
    for text in &outcome.observe_errors {
        eprintln!("{}", observe::init_error_line(text));
    }
    debug(cfg.debug, || outcome.guard_note.clone());
    debug(cfg.debug, || outcome.unix_note.clone());
    if let Some(lost) = &outcome.lost {
        eprintln!("{}", lost.message());
    }
    if let Some(obs) = observer {
        debug(cfg.debug, || {
            format!(
                "observed: {} lines reported, {} dropped",
                obs.reported, obs.dropped
            )
        });
    }
    for report in &outcome.reports {
        print_report(cfg, tasks, report);
    }
    // The helper's own failures use 125-127 too: a command exiting with
    // one of them could pass its own message off as the helper's.
    if command_ran(outcome) && matches!(outcome.status, 125..=127) {
        eprintln!(
            "apply-seccomp: the sandbox was set up and the command ran; exit status {} is the \
             command's own",
            outcome.status
        );
    }
    debug(cfg.debug, || format!("exit status {}", outcome.status));
    // Last, after the command's own output: what the sandbox refused.
    if let Some(line) = &outcome.refusal_line {
        eprintln!("{line}");
    }
}

/// The status is the command's: nothing stopped it (the mount guard) and
/// no step failed before its exec, which every inner failure reports.
fn command_ran(outcome: &supervise::Outcome) -> bool {
    outcome.lost.is_none() && !outcome.reports.iter().any(|r| r.kind == Kind::Fatal)
}

fn print_report(cfg: &RunConfig, tasks: Option<tasks::Cap>, r: &Report) {
    let source = io::Error::from_raw_os_error(r.errno);
    match (r.kind, r.step) {
        (Kind::Fatal, Step::Exec) => eprintln!(
            "{}",
            Error::Exec {
                program: cfg.argv[0].to_string_lossy().into_owned(),
                source
            }
        ),
        (Kind::Fatal, step) => eprintln!("{}", Error::setup(step, source)),

        (Kind::Warning, step) => eprintln!(
            "apply-seccomp: {}: {} (not fatal)",
            step.describe(),
            error::strerror(&source)
        ),
        (Kind::TaskCap, _) => {
            if let Some(cap) = &tasks {
                eprintln!("{}", cap.line(u32::try_from(r.errno).unwrap_or(0)));
            }
        }
        (Kind::Stopped | Kind::Exited | Kind::Listener, _) => {}
        // Notes a command cannot act on: SRT_DEBUG's and the doctor's,
        // never every command's stderr (issue 46).
        (Kind::Debug, Step::LimitUserns) => debug(cfg.debug, || {
            format!(
                "could not set user.max_user_namespaces ({}): the seccomp filter alone keeps \
                 the command from making namespaces",
                error::strerror(&source)
            )
        }),
        (Kind::Debug, Step::MountProc) => debug(cfg.debug, || {
            format!(
                "note, nothing to do: the command sees the /proc it was given, read-only; \
                 the kernel refuses a fresh one here ({}), as it does under bubblewrap's \
                 --proc for a root caller and in a container's masked /proc",
                error::strerror(&source)
            )
        }),
        (Kind::Debug, step) => debug(cfg.debug, || {
            format!(
                "{}: {} (tolerated)",
                step.describe(),
                error::strerror(&source)
            )
        }),
    }
}
