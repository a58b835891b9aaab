//! The limits check: the task cap a run gets (src/tasks.rs), read off a
//! real run of this helper inside bubblewrap with srt's options (its
//! `SRT_DEBUG` line), and the caller's own process limit it leaves room
//! in. Memory and CPU caps: none, said.

use std::path::Path;
use std::time::Duration;

use super::Check;
use super::bounded::run_bounded;
use super::srt_options::BWRAP_OPTIONS;
use crate::tasks::VARIABLE;

const NAME: &str = "limits";

pub fn check(binary: &Path) -> Check {
    let own = match crate::sys::process_limit() {
        Ok(Some(n)) => format!("your process limit (ulimit -u) {n}"),
        Ok(None) => "no process limit of yours (ulimit -u unlimited)".into(),
        Err(e) => format!("your process limit unread ({e})"),
    };
    let tail = format!(
        "{own}; no memory or CPU cap (this helper sets none: a run uses what your session \
         may use)"
    );
    match cap_in_bubblewrap(binary) {
        Ok(line) if line.starts_with("task cap: none") => Check::warn(
            NAME,
            format!("no task cap for a run here ({line}); {tail}"),
            format!(
                "a fork bomb in a run can take every process your user may have: unset \
                 {VARIABLE} (or set a number) where it is 0; as root, a kernel of 6.14 or \
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
    ran.stderr
        .lines()
        .find_map(|l| l.strip_prefix("apply-seccomp: task cap: "))
        .map(|l| format!("task cap: {l}"))
        .ok_or_else(|| format!("no task cap line: {}", ran.stderr_text()))
}
