//! The limits check: the task cap a run gets (src/run/tasks.rs), read off a
//! real run of this helper inside bubblewrap with srt's options (its
//! `SRT_DEBUG` line), and the caller's own process limit it leaves room
//! in; the memory and CPU caps (src/run/cgroup/mod.rs): whether a cgroup v2
//! subtree of this user's can hold them, those asked, and the limits in
//! force on this process.

use std::path::Path;
use std::time::Duration;

use super::Check;
use super::bounded::run_bounded;
use super::srt_options::BWRAP_OPTIONS;
use crate::cli::caps::{self, TASKS};

const NAME: &str = "limits";

pub fn check(binary: &Path) -> Check {
    let own = match crate::sys::process_limit() {
        Ok(Some(n)) => format!("your process limit (ulimit -u) {n}"),
        Ok(None) => "no process limit of yours (ulimit -u unlimited)".into(),
        Err(e) => format!("your process limit unread ({e})"),
    };
    let (caps, held) = cgroup_caps();
    let tail = format!("{own}; {caps}");
    if let Err(why) = held {
        return Check::warn(NAME, tail, why);
    }
    match cap_in_bubblewrap(binary) {
        Ok(line) if line.starts_with("task cap: none") => Check::warn(
            NAME,
            format!("no task cap for a run here ({line}); {tail}"),
            format!(
                "a fork bomb in a run can take every process your user may have: unset \
                 {TASKS} (or set a number) where it is 0; as root, a kernel of 6.14 or \
                 later keeps the cap"
            ),
        ),
        Ok(line) => Check::ok(NAME, format!("a run under bubblewrap: {line}; {tail}")),
        Err(why) => Check::warn(
            NAME,
            format!("the task cap of a run under bubblewrap is not known ({why}); {tail}"),
            "see the bubblewrap checks above",
        ),
    }
}

/// The helper's `task cap:` line from a run of `/bin/true` under the first
/// bubblewrap on PATH with srt's options.
fn cap_in_bubblewrap(binary: &Path) -> Result<String, String> {
    let found = super::sandbox::find_bwrap(binary).ok_or("no bwrap on PATH")?;
    let mut cmd = super::trust::command(&found.first)?;
    cmd.args(BWRAP_OPTIONS);
    if nix::unistd::geteuid().is_root() {
        cmd.args(["--cap-add", "CAP_SETFCAP"]);
    }
    cmd.arg("--")
        .arg(binary)
        .arg("/bin/true")
        .env("SRT_DEBUG", "1");
    let ran = run_bounded(cmd, Duration::from_secs(20)).map_err(|e| e.to_string())?;
    let line = ran
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("apply-seccomp: task cap: "))
        .map(|l| format!("task cap: {l}"))
        .ok_or_else(|| format!("no task cap line: {}", ran.stderr_text()))?;
    // init's pid_max refused, where nothing else keeps the cap: said
    // after the line above, as a tolerated step.
    let step = crate::error::Step::TaskCap.describe();
    match ran
        .stderr
        .lines()
        .find(|l| l.contains(step) && l.ends_with("(tolerated)"))
    {
        Some(refused) if !line.contains("RLIMIT_NPROC") => {
            Ok(format!("task cap: none ({refused})"))
        }
        Some(refused) => Ok(format!("{line}; but {refused}")),
        None => Ok(line),
    }
}

/// The memory and CPU caps: what is asked, whether a subtree of this
/// user's can hold it (Err: the fix, where asked and none can), and what
/// is in force here.
fn cgroup_caps() -> (String, Result<(), String>) {
    use crate::run::cgroup::{self, InForce, Tree};
    let asked = caps::Limits::read(
        std::env::var_os(caps::MEMORY).as_deref(),
        std::env::var_os(caps::CPU).as_deref(),
        None,
    );
    let asked = match asked {
        Ok(a) => a,
        Err(e) => return (e.clone(), Err(e)),
    };
    let tree = match Tree::read() {
        Ok(t) => t,
        Err(why) => {
            let text = format!("memory and CPU caps cannot be kept here: {why}");
            let held = asked.map_or(Ok(()), |_| Err(cgroup::HOW.to_string()));
            return (text, held);
        }
    };
    let probe = caps::Limits {
        memory: Some(1),
        cpu: Some(caps::PERIOD),
        pids: Some(1),
    };
    let subtree = cgroup::delegated(&tree, &asked.unwrap_or(probe));
    let show = |v: Option<u64>| v.map_or("max".to_string(), |v| v.to_string());
    let describe = |force: InForce| {
        format!(
            "memory.max {}, cpu.max {}, pids.max {}",
            show(force.memory),
            force
                .cpu
                .map_or("max".to_string(), |v| format!("{v} us per 100 ms")),
            show(force.pids)
        )
    };
    let mut in_force = format!("in force here: {}", describe(InForce::read(&tree)));
    // Issue 68: with nested namespaces allowed, only a limit in a file
    // this user cannot write holds against a command.
    let nested = std::env::var_os("SRT_ALLOW_NESTED_USERNS").is_some_and(|v| v == "1");
    if nested {
        let held = InForce::read_held(&tree, true);
        in_force.push_str(&format!(
            "; with SRT_ALLOW_NESTED_USERNS=1 only these hold (files this user cannot \
             write): {}",
            describe(held)
        ));
        if let Some(Err(why)) = asked.map(|a| held.holds(&a)) {
            return (
                format!(
                    "asked: {}; {in_force}",
                    asked.map(|a| a.describe()).unwrap_or_default()
                ),
                Err(format!("runs are refused ({why}): {}", cgroup::NESTED)),
            );
        }
    }
    let asked_text = asked.map_or(
        format!(
            "no memory or CPU cap asked ({}, {})",
            caps::MEMORY,
            caps::CPU
        ),
        |a| format!("asked: {}", a.describe()),
    );
    match subtree {
        Ok((folder, _)) => (
            format!(
                "{asked_text}; a cgroup v2 subtree of yours can hold a run's ({}); {in_force}",
                folder.display()
            ),
            Ok(()),
        ),
        Err(why) => (
            format!(
                "{asked_text}; no cgroup v2 subtree of yours can hold a run's ({why}); {in_force}"
            ),
            asked.map_or(Ok(()), |_| {
                Err(format!(
                    "runs are refused while the caps are asked: {}",
                    cgroup::HOW
                ))
            }),
        ),
    }
}
