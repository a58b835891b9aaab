//! The sandbox itself, tried for real: the helper's entry (in a child that
//! exits: `--doctor-entry`, child.rs), a run of the helper on the host, and
//! bubblewrap (found where, which version, setuid or not, and a run with
//! srt's options of this helper). Both runs have the helper run this
//! binary as the command (`--doctor-probe`, child.rs), which says what the
//! command sees.

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::probe::{RUN_LIMIT, field, inherited_filters, judge_probe};
use super::{Check, WayTaken, run_bounded};
use crate::shim;

/// How long a child of the doctor may take.
const ENTRY_LIMIT: Duration = Duration::from_secs(10);
const VERSION_LIMIT: Duration = Duration::from_secs(5);

/// The user-namespaces check: the helper's entry in a child.
pub fn entry(binary: &Path) -> (Check, WayTaken) {
    const NAME: &str = "user namespaces";
    let mut cmd = super::trust::this_binary(binary);
    cmd.arg("--doctor-entry");
    let ran = match run_bounded(cmd, ENTRY_LIMIT) {
        Ok(ran) => ran,
        Err(e) => {
            return (
                Check::fail(
                    NAME,
                    format!("could not run {}: {e}", binary.display()),
                    "see the error",
                ),
                WayTaken::None,
            );
        }
    };
    let (Some(way), Some(found), Some(fix)) = (
        field(&ran.stdout, "way"),
        field(&ran.stdout, "found"),
        field(&ran.stdout, "fix"),
    ) else {
        return (
            Check::fail(
                NAME,
                format!(
                    "the entry child gave no answer ({}; {})",
                    ran.describe(ENTRY_LIMIT),
                    ran.stderr_text()
                ),
                "run `SRT_DEBUG=1 apply-seccomp true` and report what it prints",
            ),
            WayTaken::None,
        );
    };
    match way {
        "namespaces" => (Check::ok(NAME, found), WayTaken::Namespaces),
        "capability-free" => (Check::warn(NAME, found, fix), WayTaken::CapabilityFree),
        _ => (Check::fail(NAME, found, fix), WayTaken::None),
    }
}

/// A run of the helper on the host, the command this binary's probe.
pub fn host_run(binary: &Path, way: WayTaken) -> Check {
    const NAME: &str = "helper run";
    if way == WayTaken::None {
        return Check::warn(
            NAME,
            "not tried: the helper's entry fails here (above)",
            "see the user-namespaces check",
        );
    }
    let mut cmd = super::trust::this_binary(binary);
    cmd.arg("--").arg(binary).arg("--doctor-probe");
    cmd.env_remove("SRT_ALLOW_NESTED_USERNS");
    match run_bounded(cmd, RUN_LIMIT) {
        Ok(ran) if ran.status.is_some_and(|s| s.success()) => {
            match judge_probe(&ran.stdout, inherited_filters()) {
                Ok((_, found)) => Check::ok(NAME, format!("on this host: {found}")),
                Err(wrong) => Check::fail(NAME, wrong, "report it with this line"),
            }
        }
        Ok(ran) => Check::fail(
            NAME,
            format!(
                "apply-seccomp PROBE (the helper, its command this binary's --doctor-probe): \
                 {}: {}",
                ran.describe(RUN_LIMIT),
                ran.stderr_text()
            ),
            "run `SRT_DEBUG=1 apply-seccomp true` for the step that fails",
        ),
        Err(e) => Check::fail(
            NAME,
            format!("could not run the helper: {e}"),
            "see the error",
        ),
    }
}

/// Where the `bwrap` clients run is: the first on PATH (the shim, if it is
/// this binary, and then the real one it runs).
pub(super) struct Found {
    /// What clients run: the first `bwrap` on PATH.
    pub(super) first: PathBuf,
    /// The real bubblewrap behind it (the same, unless `first` is the shim).
    real: Result<PathBuf, String>,
}

pub(super) fn find_bwrap(binary: &Path) -> Option<Found> {
    let path = std::env::var_os("PATH")?;
    let first = shim::search_dirs(Some(&path))
        .0
        .into_iter()
        .map(|d| d.join("bwrap"))
        .find(|c| shim::executable(c))?;
    let real = if shim::is_ours(&first, binary) {
        shim::find_real_bwrap(
            binary,
            std::env::var_os("APPLY_SECCOMP_BWRAP").as_deref(),
            Some(&path),
            &[],
        )
    } else {
        Ok(first.clone())
    };
    Some(Found { first, real })
}

/// The bubblewrap checks: found where, version, setuid; then a run of this
/// helper under it with srt's options.
pub fn bubblewrap(binary: &Path, weaker: bool) -> (Check, Option<Check>, Option<WayTaken>) {
    match bubblewrap_found(binary) {
        Err(check) => (check, None, None),
        Ok((check, first, setuid)) => {
            let (run, way) = bubblewrap_run(&first, binary, weaker, setuid);
            (check, Some(run), way)
        }
    }
}

/// The first check: the bubblewrap the clients run (the first `bwrap`
/// on `PATH`, or the real one behind the shim), where, its version,
/// setuid or not; with the first `bwrap` on `PATH` and whether the real
/// one is setuid, for the run. A failure is the check.
fn bubblewrap_found(binary: &Path) -> Result<(Check, PathBuf, bool), Check> {
    const NAME: &str = "bubblewrap";
    let Some(found) = find_bwrap(binary) else {
        return Err(Check::fail(
            NAME,
            "no bwrap on PATH: srt and Claude Code run every sandboxed command through \
             bubblewrap",
            "install bubblewrap (Debian, Ubuntu: apt-get install bubblewrap)",
        ));
    };
    let real = match &found.real {
        Ok(real) => real.clone(),
        Err(e) => {
            return Err(Check::fail(
                NAME,
                format!(
                    "the first bwrap on PATH, {}, is this binary (the shim), and it finds \
                     no real bubblewrap: {e}",
                    found.first.display()
                ),
                "install bubblewrap, or set APPLY_SECCOMP_BWRAP to it",
            ));
        }
    };
    let source = if found.first == real {
        "first on PATH".to_string()
    } else if std::env::var_os("APPLY_SECCOMP_BWRAP").is_some() {
        format!(
            "APPLY_SECCOMP_BWRAP, behind the shim {}",
            found.first.display()
        )
    } else {
        format!("behind the shim {} on PATH", found.first.display())
    };
    // Never one a sandboxed command could have put there (trust.rs): the
    // clients would run it too, so it is said as a failure of the setup.
    let trusted = super::trust::command(&real)
        .and_then(|ask| super::trust::command(&found.first).map(|_| ask));
    let mut ask = match trusted {
        Ok(ask) => ask,
        Err(why) => {
            return Err(Check::fail(
                NAME,
                format!("{why}; srt and Claude Code run the first bwrap on PATH"),
                "install bubblewrap from the distribution (apt-get install bubblewrap) and \
                 take the folder of this one off PATH",
            ));
        }
    };
    ask.arg("--version");
    let version = match run_bounded(ask, VERSION_LIMIT) {
        Ok(r) if r.status.is_some_and(|s| s.success()) => Ok(r.stdout.trim().to_string()),
        Ok(r) => Err(format!("--version: {}", r.describe(VERSION_LIMIT))),
        Err(e) => Err(format!("--version: {e}")),
    };
    let setuid = std::fs::metadata(&real)
        .map(|m| m.mode() & 0o4000 != 0 && m.uid() == 0)
        .unwrap_or(false);
    let what = |version: &str| {
        format!(
            "{} ({source}), {version}, {}",
            real.display(),
            if setuid { "setuid root" } else { "not setuid" }
        )
    };
    let found_check = match &version {
        Ok(v) => Check::ok(NAME, what(v)),
        Err(e) => Check::warn(
            NAME,
            what(e),
            "make sure this is bubblewrap: it does not answer --version as bubblewrap does",
        ),
    };
    Ok((found_check, found.first, setuid))
}

/// The second check: this helper run under the first `bwrap` on `PATH`
/// with srt's options (or its weaker line), its command the probe; where
/// it fails, the cause and the fix.
fn bubblewrap_run(
    first: &Path,
    binary: &Path,
    weaker: bool,
    setuid: bool,
) -> (Check, Option<WayTaken>) {
    // The run: what clients run (the first bwrap on PATH), srt's options.
    const RUN: &str = "bubblewrap run";
    let root = nix::unistd::geteuid().is_root();
    // srt's line, or its weaker one where its settings ask for it.
    let options = super::container::srt_options(weaker);
    let cmd = match super::container::probe_line(first, binary, root, weaker) {
        Ok(cmd) => cmd,
        Err(why) => return (Check::fail(RUN, why, "see the bubblewrap check"), None),
    };
    let line = format!(
        "bwrap {}{} -- apply-seccomp PROBE (the helper under srt's {}bubblewrap line, its \
         command this binary's --doctor-probe)",
        options.join(" "),
        if root { " --cap-add CAP_SETFCAP" } else { "" },
        if weaker {
            "weaker (enableWeakerNestedSandbox) "
        } else {
            ""
        }
    );
    let run_check = match run_bounded(cmd, RUN_LIMIT) {
        Ok(ran) if ran.status.is_some_and(|s| s.success()) => {
            match judge_probe(&ran.stdout, inherited_filters()) {
                Ok((way, what)) => {
                    return (Check::ok(RUN, format!("{line}: {what}")), Some(way));
                }
                Err(wrong) => {
                    Check::fail(RUN, format!("{line}: {wrong}"), "report it with this line")
                }
            }
        }
        Ok(ran) => {
            let text = ran.stderr_text();
            let fix = failed_run_fix(&text, (first, binary), (root, weaker, setuid));
            Check::fail(
                RUN,
                format!("{line}: {}: {text}", ran.describe(RUN_LIMIT)),
                fix,
            )
        }
        Err(e) => Check::fail(
            RUN,
            format!("could not run {}: {e}", first.display()),
            "see the error",
        ),
    };
    (run_check, None)
}

/// The fix for a failed run under bubblewrap (`text` its stderr): a
/// sysctl that refuses every user namespace, whatever the message; a
/// container's marks (unless this runs in a sandbox, whose own mounts
/// over /proc are no container's); the helper's own message; a sandbox
/// around the doctor; a helper bubblewrap cannot show; else bubblewrap's
/// own failure.
fn failed_run_fix(
    text: &str,
    (first, binary): (&Path, &Path),
    (root, weaker, setuid): (bool, bool, bool),
) -> String {
    let in_sandbox = matches!(
        std::fs::read_to_string("/proc/1/comm")
            .as_deref()
            .map(str::trim),
        Ok("bwrap" | "apply-seccomp")
    );
    // A container's marks, unless this runs in a sandbox (whose
    // own mounts over /proc are no container's).
    let container = (!in_sandbox)
        .then(|| {
            super::container::explain(text, setuid, || match weaker {
                true => Err("it is the line above".into()),
                false => super::container::weaker_run(first, binary, root),
            })
        })
        .flatten();
    let fix = if let Some(cause) = &container {
        cause.as_str()
    } else if text.contains("apply-seccomp:") {
        "the helper failed inside bubblewrap: its message (above) says the cause"
    } else if in_sandbox {
        "this doctor runs inside a sandbox (the environment check), where bubblewrap \
         may not start another: run the doctor where the client runs"
    } else if !binary_reachable(binary) {
        "install the helper where every user can read and execute it (a folder \
         bubblewrap's --ro-bind / / shows)"
    } else {
        "bubblewrap itself failed: see its message; bubblewrap needs user namespaces \
         too (the user-namespaces check)"
    };
    // A sysctl that refuses every user namespace is the cause
    // whatever the message: name it, its value, and what to set.
    match crate::cause::Settings::read().userns_blocker() {
        Some(blocker) => format!(
            "no user namespace can be made here, by bubblewrap or by the helper: \
             {blocker}"
        ),
        None => fix.to_string(),
    }
}

/// Whether `binary` and every folder above it can be reached (read and
/// searched) by this user.
fn binary_reachable(binary: &Path) -> bool {
    nix::unistd::access(binary, nix::unistd::AccessFlags::X_OK).is_ok()
        && binary.ancestors().skip(1).all(|d| {
            d.as_os_str() == OsStr::new("")
                || nix::unistd::access(d, nix::unistd::AccessFlags::X_OK).is_ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_must_show_both_filters_and_the_unix_policy() {
        let own = "af_unix=allowed\naf_unix_dgram=EPERM\nunix_policy=own\n";
        let deny = "af_unix=EPERM\naf_unix_dgram=EPERM\nunix_policy=deny\n";
        let good = format!("pid=2\nseccomp_filters=2\nno_new_privs=1\n{own}");
        assert_eq!(judge_probe(&good, 0).unwrap().0, WayTaken::Namespaces);
        let denied = format!("pid=2\nseccomp_filters=2\nno_new_privs=1\n{deny}");
        assert_eq!(judge_probe(&denied, 0).unwrap().0, WayTaken::Namespaces);
        let capfree = format!("pid=812\nseccomp_filters=2\nno_new_privs=1\n{own}");
        assert_eq!(
            judge_probe(&capfree, 0).unwrap().0,
            WayTaken::CapabilityFree
        );
        // Inherited filters do not count as the helper's.
        let inherited = format!("pid=2\nseccomp_filters=3\nno_new_privs=1\n{own}");
        assert!(judge_probe(&inherited, 2).is_err());
        for bad in [
            format!("pid=2\nseccomp_filters=1\nno_new_privs=1\n{own}"),
            "pid=2\nseccomp_filters=2\nno_new_privs=1\naf_unix=allowed\naf_unix_dgram=allowed\nunix_policy=own\n".into(),
            "pid=2\nseccomp_filters=2\nno_new_privs=1\naf_unix=allowed\naf_unix_dgram=EPERM\nunix_policy=deny\n".into(),
            format!("pid=2\nseccomp_filters=2\nno_new_privs=0\n{own}"),
            String::new(),
        ] {
            assert!(judge_probe(&bad, 0).is_err(), "{bad:?}");
        }
    }
}
