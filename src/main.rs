//! apply-seccomp: a race-free, single-threaded drop-in for the seccomp
//! helper of Anthropic's sandbox runtime (`srt`).
//!
//! The binary's five doors, each a folder: `run/` (a run, what the clients
//! call for every command), `shim/` (as `bwrap`), `doctor/`, `setup/` and
//! `race/`; below them `cli/`, `filter/` and `sys/`, which name no door.
//! This file reads the command line (`cli`) and calls the door it names
//! with that door's own options. A run's data flows one way: cli ->
//! run::run (its steps: filter, run::userns, run::way, run::supervise's
//! outer stub and inner init, run::worker's exec) -> sys, with the types
//! the processes share (the plan, the control channel) in run/plan.rs.
//! The race tester calls the same entry routine; the doctor runs it in a
//! child. Only the doors' entries print (this file, run/mod.rs,
//! shim/run.rs, setup/mod.rs), and only `sys` holds `unsafe`.
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

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};

use cli::Action;
use error::Error;

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
    match action.and_then(|action| door(action, &argv0, &env)) {
        Ok(status) => status,
        Err(e) => {
            eprintln!("{e}");
            e.exit_code()
        }
    }
}

/// The door `action` names, its own options read by its parser.
fn door(action: Action, argv0: &OsStr, env: &cli::Env) -> Result<i32, Error> {
    /// A door's options refused: the message and the usage.
    fn options<T>(parsed: Result<T, String>) -> Result<T, Error> {
        parsed.map_err(|e| Error::Usage(format!("{e}\n{}", cli::USAGE)))
    }
    Ok(match action {
        Action::BwrapShim(args) => shim::run::run(argv0, &args, env.debug_enabled()),
        Action::Help => print_out(&help()),
        Action::Version => print_out(install::VERSION_LINE),
        Action::Features => print_out(&(cli::FEATURES.join("\n") + "\n")),
        Action::Doctor(words) => {
            let cfg = options(doctor::parse(&words))?;
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
        Action::Setup(words) => setup::run(&options(setup::parse(&words))?),
        Action::DoctorEntry => print_out(&doctor::entry_report()),
        Action::DoctorProbe => print_out(&doctor::probe_report()),
        Action::DoctorConnect(paths) => print_out(&doctor::connect_report(&paths)),
        Action::RaceTest(words) => match race::run(&options(race::parse(&words))?) {
            Ok(report) => {
                print_out(&report.render());
                report.exit_code()
            }
            Err(e) => {
                eprintln!("{e}");
                race::EXIT_CANNOT_RUN
            }
        },
        Action::Run(cfg) => run::run(&cfg)?,
    })
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
