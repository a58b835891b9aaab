//! The clients: srt's settings file (is `seccomp.applyPath` this helper,
//! and out of every command's reach?) and Claude Code's `bwrap` on PATH (is
//! it this binary, the shim, and what does it run?).

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::Check;
use crate::json::{self, Value};
use crate::settings::{self, Unread};
use crate::shim;

/// The home folder as srt (Node's `os.homedir()`) finds it: `$HOME`, else
/// the passwd entry.
fn home() -> Option<PathBuf> {
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) => Some(PathBuf::from(h)),
        None => nix::unistd::User::from_uid(nix::unistd::getuid())
            .ok()
            .flatten()
            .map(|u| u.dir),
    }
}

/// Folders srt makes writable for every command whatever the settings say
/// (0.0.83: `/tmp/claude`, and under the home folder `.npm/_logs` and
/// `.claude/debug`).
fn srt_own_writable(home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("/tmp/claude")];
    if let Some(h) = home {
        dirs.push(h.join(".npm/_logs"));
        dirs.push(h.join(".claude/debug"));
    }
    dirs
}

/// An `allowWrite` entry as srt reads it: `~` expanded, a relative one
/// against the current folder, a glob cut back to the folder before its
/// first glob character (which covers at least what the glob does), then
/// symbolic links resolved where the path exists.
fn folder_of_entry(entry: &str, literal: bool, home: Option<&Path>) -> Option<PathBuf> {
    let spelled = match (entry, home) {
        ("~", Some(h)) => h.to_path_buf(),
        (e, Some(h)) if e.starts_with("~/") => h.join(&e[2..]),
        (e, _) => std::env::current_dir().ok()?.join(e),
    };
    let text = spelled.to_string_lossy().into_owned();
    let folder = match text.find(['*', '?', '[', ']']) {
        Some(i) if !literal => match text[..i].rfind('/') {
            Some(0) => PathBuf::from("/"),
            Some(j) => PathBuf::from(&text[..j]),
            None => return None,
        },
        _ => spelled,
    };
    Some(std::fs::canonicalize(&folder).unwrap_or_else(|_| lexical(&folder)))
}

/// `.` and `..` folded in text (for a path that does not exist).
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The srt check: the settings file srt would read.
pub fn srt(binary: &Path, given: Option<&OsStr>) -> Check {
    const NAME: &str = "srt";
    let home = home();
    let set_it = |file: &Path| {
        format!(
            "put \"seccomp\": {{\"applyPath\": {}}} in {}",
            json::string(binary.as_os_str().as_encoded_bytes()),
            file.display()
        )
    };
    let file = match (given, &home) {
        (Some(f), _) => PathBuf::from(f),
        (None, Some(h)) => h.join(".srt-settings.json"),
        (None, None) => {
            return Check::warn(
                NAME,
                "no home folder (HOME unset, no passwd entry): srt's default settings file \
                 cannot be found",
                "name the file srt reads with --srt-settings FILE",
            );
        }
    };
    let text = match settings::read(&file) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(Unread::Missing) if given.is_none() => {
            return Check::warn(
                NAME,
                format!(
                    "no settings file at {}: srt runs its bundled helper, not this one",
                    file.display()
                ),
                set_it(&file),
            );
        }
        Err(e) => {
            return Check::fail(
                NAME,
                format!("{}: {e}", file.display()),
                "make it a regular file srt can read, with the settings as JSON (or name \
                 another with --srt-settings FILE)",
            );
        }
    };
    let settings = match json::parse(&text) {
        Ok(v @ Value::Object(_)) => v,
        Ok(other) => {
            return Check::fail(
                NAME,
                format!(
                    "{}: holds {}, not an object: srt refuses it",
                    file.display(),
                    other.kind()
                ),
                "make it a JSON object ({\"seccomp\": {\"applyPath\": ...}, ...})",
            );
        }
        Err(e) => {
            return Check::fail(
                NAME,
                format!("{}: not JSON ({e}): srt refuses it", file.display()),
                "correct the JSON",
            );
        }
    };
    let apply = match settings.get("seccomp").and_then(|s| s.get("applyPath")) {
        None => {
            return Check::warn(
                NAME,
                format!(
                    "{}: seccomp.applyPath is not set: srt runs its bundled helper, not this one",
                    file.display()
                ),
                set_it(&file),
            );
        }
        Some(Value::String(p)) => PathBuf::from(p),
        Some(other) => {
            return Check::fail(
                NAME,
                format!(
                    "{}: seccomp.applyPath is {}, not a string",
                    file.display(),
                    other.kind()
                ),
                set_it(&file),
            );
        }
    };
    let at = format!("{}: seccomp.applyPath {}", file.display(), apply.display());
    if !apply.is_absolute() {
        return Check::fail(
            NAME,
            format!(
                "{at} is relative: it is looked up from each command's working folder, where a \
                 command may put a file of its own"
            ),
            set_it(&file),
        );
    }
    let meta = match std::fs::metadata(&apply) {
        Ok(m) => m,
        Err(e) => {
            return Check::fail(
                NAME,
                format!(
                    "{at}: {e}: srt silently falls back to its bundled helper when nothing is \
                     there"
                ),
                set_it(&file),
            );
        }
    };
    if !meta.is_file() || nix::unistd::access(&apply, nix::unistd::AccessFlags::X_OK).is_err() {
        return Check::fail(
            NAME,
            format!("{at} is not an executable file for this user"),
            format!("chmod 0755 {} (or {})", apply.display(), set_it(&file)),
        );
    }
    // Replaceable from inside: the file as named (its folder, links in it
    // resolved) or the file it leads to, in or under a writable folder.
    let named = apply
        .parent()
        .and_then(|d| std::fs::canonicalize(d).ok())
        .map(|d| d.join(apply.file_name().unwrap_or_default()));
    let target = std::fs::canonicalize(&apply).ok();
    let mut writable: Vec<(String, PathBuf)> = Vec::new();
    if let Some(Value::Array(entries)) =
        settings.get("filesystem").and_then(|f| f.get("allowWrite"))
    {
        for e in entries {
            let (spelling, literal) = match e {
                Value::String(s) => (s.as_str(), false),
                obj => match obj.get("path").and_then(Value::as_str) {
                    Some(p) => (p, true),
                    None => continue,
                },
            };
            if let Some(dir) = folder_of_entry(spelling, literal, home.as_deref()) {
                writable.push((format!("allowWrite entry {spelling:?}"), dir));
            }
        }
    }
    for dir in srt_own_writable(home.as_deref()) {
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        writable.push(("a folder srt makes writable for every command".into(), dir));
    }
    for (why, dir) in &writable {
        if [&named, &target]
            .into_iter()
            .flatten()
            .any(|p| p.starts_with(dir))
        {
            return Check::fail(
                NAME,
                format!(
                    "{at} is inside {} ({why}): a sandboxed command can replace the helper, \
                     and the next command runs whatever it put there",
                    dir.display()
                ),
                format!(
                    "install it outside every writable folder (e.g. sudo install -m 0755 {} \
                     /usr/local/bin/apply-seccomp) and point applyPath there",
                    binary.display()
                ),
            );
        }
    }
    if shim::is_ours(&apply, binary) {
        return Check::ok(
            NAME,
            format!(
                "{at} is this binary, executable, outside every allowWrite folder and srt's own \
                 writable ones ({} folders checked)",
                writable.len()
            ),
        );
    }
    Check::warn(
        NAME,
        format!("{at} is another helper: {}", which_helper(&apply)),
        set_it(&file),
    )
}

/// Names the helper at `p`: another build of this one answers the feature
/// probe (`SRT_HELPER_FEATURES=1`, no arguments, so it runs nothing).
fn which_helper(p: &Path) -> String {
    let text = p.to_string_lossy();
    if text.contains("sandbox-runtime") {
        return "srt's bundled helper (no defence against the EINVAL race)".into();
    }
    let mut cmd = std::process::Command::new(p);
    cmd.env("SRT_HELPER_FEATURES", "1");
    match super::run_bounded(cmd, std::time::Duration::from_secs(5)) {
        Ok(r) if r.stdout.lines().any(|l| l == "race-free") => format!(
            "another build of this helper (features: {})",
            r.stdout.split_whitespace().collect::<Vec<_>>().join(" ")
        ),
        _ => "not this helper (it does not answer this helper's feature probe)".into(),
    }
}

/// Whether `p` starts with `#!`: a wrapper script, not bubblewrap.
fn is_script(p: &Path) -> bool {
    let mut head = [0u8; 2];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"#!")
}

/// The Claude Code check: the `bwrap` on PATH.
pub fn shim(binary: &Path) -> Check {
    const NAME: &str = "claude code";
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    let bwraps: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join("bwrap"))
        .filter(|c| shim::executable(c))
        .collect();
    let ours = bwraps.iter().position(|b| shim::is_ours(b, binary));
    let put_it_there = || {
        let first_dir = bwraps.first().and_then(|b| b.parent());
        let home_bin = home().map(|h| h.join(".local/bin"));
        let listed_before = home_bin.as_ref().is_some_and(|hb| {
            dirs.iter()
                .take_while(|d| Some(d.as_path()) != first_dir)
                .any(|d| d == hb)
        });
        let link = format!(
            "mkdir -p ~/.local/bin && ln -sf {} ~/.local/bin/bwrap",
            binary.display()
        );
        if listed_before || first_dir.is_none() {
            link
        } else {
            format!(
                "{link}, and put ~/.local/bin before {} on the PATH Claude Code starts with",
                first_dir
                    .map(|d| d.display().to_string())
                    .unwrap_or_default()
            )
        }
    };
    let Some(at) = ours else {
        return Check::warn(
            NAME,
            match bwraps.first() {
                Some(first) => format!(
                    "the first bwrap on PATH is {}, not this binary: Claude Code runs its own \
                     embedded helper (no defence against the EINVAL race)",
                    first.display()
                ),
                None => "no bwrap on PATH at all".into(),
            },
            put_it_there(),
        );
    };
    let before = &bwraps[..at];
    if let Some(real) = before.iter().find(|b| !is_script(b)) {
        return Check::warn(
            NAME,
            format!(
                "this binary is on PATH as {}, but {} comes first and is not a wrapper script: \
                 Claude Code runs that one and its embedded helper",
                bwraps[at].display(),
                real.display()
            ),
            put_it_there(),
        );
    }
    // After the shim: wrappers (scripts) until a real bubblewrap, by the
    // shim's own rule.
    let configured = std::env::var_os("APPLY_SECCOMP_BWRAP");
    let mut visited = Vec::new();
    let mut after = Vec::new();
    let real = loop {
        match shim::find_real_bwrap(binary, configured.as_deref(), Some(&path), &visited) {
            Ok(c) if is_script(&c) && after.len() < shim::MAX_HOPS => {
                visited.extend(shim::identity(&c));
                after.push(c.display().to_string());
            }
            Ok(c) => break Ok(c),
            Err(e) => break Err(e),
        }
    };
    let through = |list: &[String]| match list.len() {
        0 => "no wrapper".to_string(),
        n => format!("{n} wrapper(s): {}", list.join(", ")),
    };
    let wrappers_before: Vec<String> = before.iter().map(|b| b.display().to_string()).collect();
    match real {
        Ok(real) => Check::ok(
            NAME,
            format!(
                "the bwrap Claude Code finds on PATH leads to this binary, {} (the shim), \
                 through {}; the shim runs the real bubblewrap {} through {}",
                bwraps[at].display(),
                through(&wrappers_before),
                real.display(),
                through(&after)
            ),
        ),
        Err(e) => Check::fail(
            NAME,
            format!(
                "this binary is the shim on PATH ({}), but it cannot run a real bubblewrap: {e}",
                bwraps[at].display()
            ),
            "install bubblewrap, or set APPLY_SECCOMP_BWRAP to it",
        ),
    }
}
