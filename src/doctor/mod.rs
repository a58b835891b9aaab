//! `apply-seccomp --doctor`: why a sandbox can or cannot start here, in one
//! command anyone can run, before an agent guesses. Each check prints one
//! line (ok, warning or fail, what it found, and for anything not ok the
//! one thing to do), then a verdict; exit 0 when a sandboxed command can
//! run here through this helper, 1 when it cannot.
//!
//! The checks run in the doctor's own process, which never starts a thread
//! and never changes the system: whatever must really be tried (the
//! helper's entry, a run of the helper, one under bubblewrap) runs in a
//! child process of its own, in its own process group, killed with the
//! group at its deadline ([`run_bounded`]).
//!
//! - bounded.rs: the child runner (own process group, deadline, group
//!   killed after).
//! - child.rs: what the children run (`--doctor-entry`, `--doctor-probe`,
//!   `--doctor-connect`).
//! - sockets.rs: the Unix socket policy and the host sockets named.
//! - machine.rs: kernel, seccomp, this process's filter, container or WSL,
//!   Landlock.
//! - sandbox.rs: the helper's entry and a run of it, on the host and under
//!   bubblewrap.
//! - probe.rs: what the probe, the command of those runs, saw, judged.
//! - container.rs: a container's masked `/proc` and dropped `CAP_SETFCAP`,
//!   and srt's weaker line where they stop bubblewrap.
//! - clients.rs: srt's settings file (`seccomp.applyPath`, `bwrapPath`);
//!   named.rs: a binary a client's setting names, judged.
//! - node.rs: the Node.js srt runs on, and the version it asks for.
//! - claude.rs: Claude Code's `bwrap` (managed settings, or PATH), and the
//!   shim's placeholders left in the current folder.

mod bounded;
mod child;
mod claude;
mod clients;
mod container;
mod limits;
mod machine;
mod named;
mod node;
mod probe;
mod sandbox;
mod sockets;
mod srt_options;
mod trust;

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::json;

use bounded::run_bounded;
pub use child::{connect_report, entry_report, probe_report};
pub use claude::managed_settings_file;
pub use clients::{home, writable_folders};

/// `--doctor [--json] [--srt-settings FILE]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub json: bool,
    /// The srt settings file to check; `None`: `~/.srt-settings.json`.
    pub srt_settings: Option<OsString>,
}

/// Parses the words after `--doctor`.
pub fn parse(args: &[OsString]) -> Result<Config, String> {
    let mut cfg = Config {
        json: false,
        srt_settings: None,
    };
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_bytes() {
            b"--json" => cfg.json = true,
            b"--srt-settings" => match words.next() {
                Some(file) => cfg.srt_settings = Some(file.clone()),
                None => return Err("--srt-settings takes a file".into()),
            },
            other => {
                return Err(format!(
                    "--doctor takes --json and --srt-settings FILE, not {}",
                    String::from_utf8_lossy(other)
                ));
            }
        }
    }
    Ok(cfg)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Warning,
    Fail,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warning => "warning",
            Status::Fail => "fail",
        }
    }
}

/// One check's answer.
#[derive(Clone, Debug)]
pub struct Check {
    /// Short and stable, for tools: `kernel`, `user-namespaces`, ...
    pub name: &'static str,
    pub status: Status,
    /// What it found.
    pub found: String,
    /// For anything not ok: the one thing to do about it.
    pub fix: Option<String>,
}

impl Check {
    fn ok(name: &'static str, found: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Ok,
            found: found.into(),
            fix: None,
        }
    }

    fn warn(name: &'static str, found: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Warning,
            found: found.into(),
            fix: Some(fix.into()),
        }
    }

    fn fail(name: &'static str, found: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Fail,
            found: found.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Which way in the helper takes here, as its entry decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WayTaken {
    Namespaces,
    CapabilityFree,
    /// None: the helper stops here.
    None,
}

/// Everything the doctor found.
pub struct Report {
    pub binary: PathBuf,
    pub checks: Vec<Check>,
    pub way: WayTaken,
}

impl Report {
    /// A sandboxed command can run here through this helper: no check
    /// failed.
    pub fn can_run(&self) -> bool {
        self.checks.iter().all(|c| c.status != Status::Fail)
    }

    pub fn exit_code(&self) -> i32 {
        if self.can_run() { 0 } else { 1 }
    }

    /// Whether a client runs this helper: srt's `applyPath`, or Claude
    /// Code's `bwrap` (its check ok).
    fn a_client_uses_it(&self) -> bool {
        self.checks
            .iter()
            .any(|c| matches!(c.name, "srt" | "claude code") && c.status == Status::Ok)
    }

    /// The verdict; `where_` says where the warnings are (" above" in the
    /// text, "" in JSON).
    fn verdict(&self, where_: &str) -> String {
        let count = |s| self.checks.iter().filter(|c| c.status == s).count();
        let (fails, warnings) = (count(Status::Fail), count(Status::Warning));
        if fails == 0 {
            format!(
                "a sandboxed command can run here through this helper ({}){}{}",
                match self.way {
                    WayTaken::CapabilityFree => "the capability-free way in: seccomp and Landlock",
                    _ => "namespaces and seccomp",
                },
                if self.a_client_uses_it() {
                    ""
                } else {
                    ", but neither srt nor Claude Code is set up to run it yet (the srt and \
                     claude code lines say what each runs now; apply-seccomp --setup points \
                     both at it)"
                },
                match warnings {
                    0 => String::new(),
                    n => format!("; {n} warning(s){where_}"),
                }
            )
        } else {
            format!(
                "a sandboxed command cannot run here through this helper: {fails} check(s) \
                 failed"
            )
        }
    }

    /// The text: one line per check (and an indented `fix:` line for
    /// anything not ok), then the verdict.
    pub fn text(&self) -> String {
        let mut out = format!(
            "apply-seccomp {} doctor: {}\n",
            crate::install::VERSION,
            self.binary.display()
        );
        for c in &self.checks {
            out += &format!("{:<8} {}: {}\n", c.status.word(), c.name, c.found);
            if let Some(fix) = &c.fix {
                out += &format!("{:<8} fix: {fix}\n", "");
            }
        }
        out += &format!(
            "verdict: {}: {}\n",
            if self.can_run() { "ok" } else { "fail" },
            self.verdict(" above")
        );
        out
    }

    /// The same as one JSON object.
    pub fn json(&self) -> String {
        let s = |t: &str| json::string(t.as_bytes());
        let checks: Vec<String> = self
            .checks
            .iter()
            .map(|c| {
                format!(
                    "{{\"name\":{},\"status\":{},\"found\":{},\"fix\":{}}}",
                    s(c.name),
                    s(c.status.word()),
                    s(&c.found),
                    c.fix.as_deref().map_or("null".into(), s)
                )
            })
            .collect();
        format!(
            "{{\"version\":{},\"commit\":{},\"binary\":{},\"checks\":[{}],\"way_in\":{},\"can_run\":{},\
             \"verdict\":{}}}\n",
            s(env!("CARGO_PKG_VERSION")),
            s(env!("BUILD_COMMIT")),
            json::string(self.binary.as_os_str().as_bytes()),
            checks.join(","),
            match self.way {
                WayTaken::Namespaces => s("namespaces"),
                WayTaken::CapabilityFree => s("capability-free"),
                WayTaken::None => "null".into(),
            },
            self.can_run(),
            s(&self.verdict(""))
        )
    }
}

/// Runs every check, in order.
pub fn run(cfg: &Config) -> Report {
    let binary = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .unwrap_or_else(|_| PathBuf::from("/proc/self/exe"));
    let install = crate::install::detect(&binary);
    let mut checks = vec![Check::ok("install", install.describe(&binary))];
    checks.extend(machine::checks());
    let (entry, way) = sandbox::entry(&binary);
    checks.push(entry);
    checks.push(sandbox::host_run(&binary, way));
    // The way in under bubblewrap, where clients run it, is the one that
    // counts (AppArmor's bwrap profile applies there only).
    let srt_settings = clients::srt_settings(cfg.srt_settings.as_deref());
    let weaker = clients::weaker_nested(srt_settings.as_ref());
    let (bwrap_found, bwrap_run, bwrap_way) = sandbox::bubblewrap(&binary, weaker);
    checks.push(bwrap_found);
    checks.extend(bwrap_run);
    let way = bwrap_way.unwrap_or(way);
    checks.push(sockets::check(&binary));
    checks.push(limits::check(&binary));
    checks.extend(clients::srt(&binary, cfg.srt_settings.as_deref()));
    // Node is never run: its version is read (node.rs).
    checks.push(node::check());
    checks.push(claude::path_entries());
    checks.push(claude::claude_code(&binary));
    checks.push(claude::leftovers());
    Report {
        binary,
        checks,
        way,
    }
}
