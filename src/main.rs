//! apply-seccomp: a race-free, single-threaded drop-in for the seccomp
//! helper of Anthropic's sandbox runtime (`srt`).
//!
//! The binary's five doors, each a folder: `run/` (a run, what the clients
//! call for every command), `shim/` (as `bwrap`), `doctor/`, `setup/` and
//! `race/`; below them `cli/`, `filter/` and `sys/`. A run's data flows one
//! way: cli -> filter (validate) -> run::userns (enter) -> run::supervise
//! (outer stub / inner init) -> run::worker (exec) -> sys, with the types
//! the last three share (the plan, the control channel) in run/plan.rs.
//! The race tester calls the same entry routine; the doctor runs it in a
//! child.
//! Only this file prints (and the shim's entry, shim/run.rs, which ends in
//! bubblewrap's exec and has no caller to return a message to), and only
//! `sys` holds `unsafe`.
//!
//! There is no Rust `main`: `sys` exports the C `main`, which calls
//! [`entry`]. Rust's runtime start-up would set SIGPIPE to ignored, a
//! disposition the command would inherit through exec (the C helper leaves
//! the caller's), and it reads `/proc/self/maps`, installs a `sigaltstack`
//! and polls fds 0-2 on every run. The arguments come from the C `main`,
//! not `std::env::args_os`, which is empty in a musl build without Rust's
//! `main`.
#![cfg_attr(not(test), no_main)]

mod bwrap_args;
mod cause;
mod cli;
mod doctor;
mod error;
mod filter;
mod install;
mod json;
mod race;
mod run;
mod settings;
mod setup;
mod shim;
mod sys;
mod walk;

use std::ffi::OsString;
use std::io::{self, Write};

use cli::{Action, RunConfig};
use error::{Error, Step};
use run::plan::{Kind, Report, Way};
use run::userns::{Backoff, Path};

/// The program: returns the exit status.
#[cfg_attr(test, allow(dead_code))]
pub(crate) fn entry(mut args: Vec<OsString>) -> i32 {
    let argv0 = if args.is_empty() {
        OsString::new()
    } else {
        args.remove(0)
    };
    // A caller that closed stderr: no descriptor of ours takes its number
    // (the helper's lines would go into it; writing one to a pidfd made
    // the print panic).
    sys::hold_stderr();
    let env = cli::Env::from_process();
    // Run as `bwrap` (a symlink first on PATH): the shim, whatever follows.
    let action = if std::path::Path::new(&argv0).file_name() == Some("bwrap".as_ref()) {
        Ok(Action::BwrapShim(args))
    } else {
        cli::parse(&args, &env)
    };
    match action {
        Ok(Action::BwrapShim(args)) => shim::run::run(&argv0, &args, env.debug_enabled()),
        Ok(Action::Help) => print_out(&help()),
        Ok(Action::Version) => print_out(install::VERSION_LINE),
        Ok(Action::Features) => print_out(&(cli::FEATURES.join("\n") + "\n")),
        Ok(Action::Doctor(cfg)) => {
            let report = doctor::run(&cfg);
            match print_out(&if cfg.json {
                report.json()
            } else {
                report.text()
            }) {
                0 => report.exit_code(),
                failed => failed,
            }
        }
        Ok(Action::Setup(cfg)) => setup::run(&cfg),
        Ok(Action::DoctorEntry) => print_out(&doctor::entry_report()),
        Ok(Action::DoctorProbe) => print_out(&doctor::probe_report()),
        Ok(Action::DoctorConnect(paths)) => print_out(&doctor::connect_report(&paths)),
        Ok(Action::RaceTest(cfg)) => match race::run(&cfg) {
            Ok(report) => {
                print_out(&report.render());
                report.exit_code()
            }
            Err(e) => {
                eprintln!("{e}");
                race::EXIT_CANNOT_RUN
            }
        },
        Ok(Action::Run(cfg)) => run(&cfg).unwrap_or_else(|e| {
            eprintln!("{e}");
            e.exit_code()
        }),
        Err(e) => {
            eprintln!("{e}");
            e.exit_code()
        }
    }
}

/// Writes and flushes: the status goes back to C's exit(), which does not
/// know Rust's stdout buffer. A run never touches stdout, so it pays for
/// none of this (std's stdout allocates its buffer on first use).
#[cfg_attr(test, allow(dead_code))]
fn print_out(text: &str) -> i32 {
    let mut out = io::stdout();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(_) => error::EXIT_SETUP,
    }
}

fn help() -> String {
    format!(
        "{usage}\n\n\
         Runs <command> in new PID and mount namespaces (through a new user\n\
         namespace when needed) under seccomp filters that refuse vsock\n\
         sockets, io_uring and new user/mount namespaces, and let a Unix socket\n\
         connect reach only what the run bound.\n\n\
         Environment:\n  \
           SRT_ALLOW_NESTED_USERNS=1  leave out the namespaces filter and limit\n  \
           SRT_DEBUG=<non-empty>      diagnostics on stderr\n  \
           APPLY_SECCOMP_UNIX=deny    refuse every AF_UNIX socket (upstream's policy)\n  \
           APPLY_SECCOMP_ALLOW_UNIX=P:Q  host sockets a connect may reach too\n  \
           APPLY_SECCOMP_MAX_TASKS=N  tasks a run may have (1024 or 128/CPU; 0: no cap)\n  \
           SRT_HELPER_FEATURES=1      with no arguments: print supported features\n\n\
         Exit status: the command's own; 125 helper failure; 126 command not\n\
         executable; 127 command not found.\n",
        usage = cli::USAGE
    )
}

/// Words as the argument vector a test hands a parser.
#[cfg(test)]
pub(crate) fn os_words(words: &[&str]) -> Vec<OsString> {
    words.iter().map(OsString::from).collect()
}

pub(crate) fn debug(enabled: bool, line: impl FnOnce() -> String) {
    if enabled {
        eprintln!("apply-seccomp: {}", line());
    }
}

fn run(cfg: &RunConfig) -> Result<i32, Error> {
    // Who holds the socket policy: the kernel where it can (Landlock ABI 9),
    // else the stub (issue 55).
    let sockets = match cfg.unix {
        cli::UnixPolicy::Deny => filter::Sockets::Deny,
        cli::UnixPolicy::Own if run::sockets::kernel::available() => filter::Sockets::Kernel,
        cli::UnixPolicy::Own => filter::Sockets::Mediated,
    };
    let filters = filter::filters(cfg.allow_nested_userns, sockets, cfg.report)?;
    let kernel_sockets = sockets == filter::Sockets::Kernel;
    if kernel_sockets {
        let note =
            run::sockets::kernel::name_inherited().map_err(|e| Error::setup(Step::Landlock, e))?;
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
    let mut observer = match &cfg.observe {
        Some(o) => match run::observe::Observer::connect(o) {
            Ok(obs) => Some(obs),
            Err(text) => {
                eprintln!("{}", run::observe::init_error_line(&text));
                None
            }
        },
        None => None,
    };
    // Before init starts, so no process of the tree carries them and
    // the worker needs no allocation to drop them; their strings wiped
    // where /proc/PID/environ of the stub and init shows them.
    sys::scrub_env(&cli::SCRUBBED);

    // Memory and CPU caps asked: a cgroup of the run's must hold them.
    let cgroup = cfg.limits.as_ref().map(run::cgroup::for_run).transpose()?;
    let pid1 = run::guard::Pid1::look();
    let entry = run::userns::enter(&Backoff::default(), cfg.way_in)?;
    debug(cfg.debug, || entry.describe());

    caps::clear(None, caps::CapSet::Ambient)
        .map_err(|e| Error::setup(Step::ClearAmbient, io::Error::other(e.to_string())))?;
    let unix_note;
    let (way, _ruleset) = match &entry.path {
        Path::CapabilityFree { refusal, .. } => {
            // Held until the run ends; the worker joins it (close-on-exec).
            let domain = run::capfree::ruleset(kernel_sockets).map_err(|lack| {
                Error::NoCapabilityFreeWay {
                    refusal: refusal.clone(),
                    lack,
                }
            })?;
            debug(cfg.debug, || run::capfree::describe(&domain));
            // The socket policy's rules, where the kernel holds it: in
            // this one domain (or the run ends).
            unix_note = kernel_sockets
                .then(|| {
                    let fd = std::os::fd::AsRawFd::as_raw_fd(&domain.ruleset);
                    run::sockets::kernel::add_named(fd, &cfg.allow_unix)
                        .map(|n| run::sockets::kernel::note(&n))
                })
                .transpose()
                .map_err(|e| Error::setup(Step::Landlock, io::Error::other(e)))?;
            // No bounding-set drop here: it needs CAP_SETPCAP, which this way
            // has none of, and Landlock's ptrace rule holds without it.
            let way = Way::CapabilityFree {
                ruleset: std::os::fd::AsRawFd::as_raw_fd(&domain.ruleset),
            };
            (way, Some(domain.ruleset))
        }
        path => {
            // Stricter than upstream: a command running as root (host root
            // on the direct path, or uid 0 in the namespace) could otherwise
            // ptrace the unfiltered inner init, whose non-dumpability only
            // CAP_SYS_PTRACE overrides. Out of the bounding set, no exec can
            // grant it.
            caps::drop(
                None,
                caps::CapSet::Bounding,
                caps::Capability::CAP_SYS_PTRACE,
            )
            .map_err(|e| Error::setup(Step::DropPtrace, io::Error::other(e.to_string())))?;
            let made_userns = matches!(path, Path::UserNamespace(_));
            // The socket policy's domain, where the kernel holds it: made
            // or the run ends (never a run with less than asked).
            let domain = kernel_sockets
                .then(|| run::sockets::kernel::domain(&cfg.allow_unix))
                .transpose()
                .map_err(|e| Error::setup(Step::Landlock, io::Error::other(e)))?;
            let way = Way::Namespaces {
                limit_userns: made_userns && !cfg.allow_nested_userns,
                sockets: domain
                    .as_ref()
                    .map(|d| std::os::fd::AsRawFd::as_raw_fd(&d.ruleset)),
            };
            unix_note = domain.as_ref().map(|d| d.note.clone());
            (way, domain.map(|d| d.ruleset))
        }
    };
    debug(cfg.debug, || {
        format!(
            "filters: unix{}; user namespace limit: {}",
            if filters.namespaces.is_some() {
                " + namespaces"
            } else {
                " only (nesting allowed)"
            },
            match way {
                Way::Namespaces {
                    limit_userns: true, ..
                } => "yes",
                Way::Namespaces {
                    limit_userns: false,
                    ..
                } => "no",
                Way::CapabilityFree { .. } => "no (capability-free: the filter alone)",
            }
        )
    });
    // Under bubblewrap, init holds what the run's end releases until the
    // stub has exited (plan.rs): bubblewrap's caller goes on as soon as the
    // stub is reaped, and a guarded run's end would otherwise wait there
    // for the kernel (the inotify instance's grace period, the unmount of
    // the run's copy of bubblewrap's mounts). On the host the stub's own
    // exit releases them: measured cheaper there for commands run back to
    // back (docs/performance.md).
    let init_outlives_stub = pid1.is_bubblewrap() && matches!(way, Way::Namespaces { .. });
    // The CPUs: the default task cap grows with them, and init starts on
    // one of them (supervise/).
    let had = matches!(way, Way::Namespaces { .. })
        .then(sys::affinity)
        .flatten();
    let tasks = run::tasks::for_run(cfg.max_tasks, &entry.path, had.as_ref())?;
    debug(cfg.debug, || {
        tasks.map_or_else(
            || {
                format!(
                    "task cap: none ({}=0, or none can be kept here)",
                    run::tasks::VARIABLE
                )
            },
            |c| c.describe(),
        )
    });
    let outcome = run::supervise::run(
        run::plan::Plan {
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
    for text in &outcome.observe_errors {
        eprintln!("{}", run::observe::init_error_line(text));
    }
    debug(cfg.debug, || outcome.guard_note.clone());
    debug(cfg.debug, || outcome.unix_note.clone());
    if let Some(lost) = &outcome.lost {
        eprintln!("{}", lost.message());
    }
    if let Some(obs) = &observer {
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
    if command_ran(&outcome) && matches!(outcome.status, 125..=127) {
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
    if let (Some(asked), Some(held)) = (&cfg.limits, &cgroup) {
        run::cgroup::said(asked, held)
            .iter()
            .for_each(|l| eprintln!("{l}"));
    }
    Ok(outcome.status)
}

/// The status is the command's: nothing stopped it (the mount guard) and
/// no step failed before its exec, which every inner failure reports.
fn command_ran(outcome: &run::supervise::Outcome) -> bool {
    outcome.lost.is_none() && !outcome.reports.iter().any(|r| r.kind == Kind::Fatal)
}

fn print_report(cfg: &RunConfig, tasks: Option<run::tasks::Cap>, r: &Report) {
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
