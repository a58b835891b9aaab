//! A run's command line and environment: the options before the command
//! (`--way-in=WAY`, `--`), the command, and the variables that shape the
//! run (the Unix socket policy, the caps, observation, nesting, debug).

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::unix::{UnixPolicy, allowed_sockets, refusals_reported};
use super::{Env, USAGE, caps, is};
use crate::cause::WayIn;
use crate::error::Error;

/// `SRT_OBSERVE_SOCK`: where and how to report observed calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observe {
    pub socket: std::ffi::OsString,
    /// `SRT_ENCODED_CMD`, when set and non-empty: sent first, and with
    /// every line.
    pub encoded_cmd: Option<std::ffi::OsString>,
}

/// A run of the helper on a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunConfig {
    pub argv: Vec<OsString>,
    /// `SRT_ALLOW_NESTED_USERNS` is exactly `1`.
    pub allow_nested_userns: bool,
    /// `SRT_DEBUG` is set and non-empty.
    pub debug: bool,
    /// `--way-in=WAY`.
    pub way_in: WayIn,
    /// `SRT_OBSERVE_SOCK`, when set and non-empty: report write-intent
    /// calls to this socket.
    pub observe: Option<Observe>,
    /// The Unix socket policy, and the host sockets a connect may reach
    /// besides the run's own (cli/unix.rs).
    pub unix: UnixPolicy,
    pub allow_unix: Vec<PathBuf>,
    /// Refused calls counted and said (not `APPLY_SECCOMP_REFUSALS=off`).
    pub report: bool,
    /// The run's task cap asked for (`APPLY_SECCOMP_MAX_TASKS`, caps.rs;
    /// kept by run/tasks.rs).
    pub max_tasks: caps::Tasks,
    /// Memory and CPU caps asked for, a cgroup's to hold (caps.rs; run/cgroup/).
    pub limits: Option<caps::Limits>,
}

/// `args` from the first word after the door's (none for a run): the
/// options, then the command.
pub fn parse(args: &[OsString], env: &Env) -> Result<RunConfig, Error> {
    let mut way_in = WayIn::Auto;
    let mut rest = args;
    while let Some(option) = rest.first().map(|a| a.as_bytes()) {
        if option == b"--" {
            rest = &rest[1..];
            break;
        }
        if !option.starts_with(b"-") || option == b"-" {
            break;
        }
        match option.strip_prefix(b"--way-in=").map(WayIn::parse) {
            Some(Some(way)) => way_in = way,
            Some(None) => {
                return Err(Error::Usage(format!(
                    "--way-in takes auto, namespaces or capability-free, not {}\n{USAGE}",
                    String::from_utf8_lossy(&option[b"--way-in=".len()..])
                )));
            }
            None => {
                return Err(Error::Usage(format!(
                    "unknown option {}\n{USAGE}",
                    String::from_utf8_lossy(option)
                )));
            }
        }
        rest = &rest[1..];
    }
    if rest.is_empty() {
        return Err(Error::Usage(format!("no command given\n{USAGE}")));
    }
    let unix = UnixPolicy::read(env.unix.as_deref())?;
    let max_tasks = caps::Tasks::read(env.max_tasks.as_deref())?;
    let allow_unix = allowed_sockets(env.allow_unix.as_deref().unwrap_or_default())?;
    Ok(RunConfig {
        unix,
        allow_unix,
        report: refusals_reported(env.refusals.as_deref())?,
        max_tasks,
        limits: caps::Limits::read(
            env.memory_max.as_deref(),
            env.cpu_max.as_deref(),
            max_tasks.asked_number(),
        )
        .map_err(Error::Usage)?,
        argv: rest.to_vec(),
        allow_nested_userns: is(&env.allow_nested_userns, "1"),
        debug: env.debug_enabled(),
        way_in,
        observe: env
            .observe_sock
            .clone()
            .filter(|s| !s.is_empty())
            .map(|socket| Observe {
                socket,
                encoded_cmd: env.encoded_cmd.clone().filter(|s| !s.is_empty()),
            }),
    })
}
