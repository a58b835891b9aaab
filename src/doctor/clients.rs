//! srt's settings file: is `seccomp.applyPath` this helper, is
//! `bwrapPath` the shim, and are both out of every command's reach? Claude
//! Code's side is claude.rs.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::Check;
use super::named::binary_at;
use crate::json::{self, Value};
use crate::settings::{self, Unread};
use crate::shim;

/// The home folder as srt (Node's `os.homedir()`) finds it: `$HOME`, else
/// the passwd entry.
pub fn home() -> Option<PathBuf> {
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
    Some(
        std::fs::canonicalize(&folder)
            .unwrap_or_else(|_| shim::protect::lexical(folder.as_os_str().as_bytes())),
    )
}

/// The srt checks: the settings file srt would read, its
/// `seccomp.applyPath` (this helper) and its `bwrapPath` (the shim, which
/// keeps the placeholders of sessions sharing a folder).
pub fn srt(binary: &Path, given: Option<&OsStr>) -> Vec<Check> {
    const NAME: &str = "srt";
    let home = home();
    // What sets both keys right: setup, from this binary (issue 46: a
    // command, never a hand edit; from the Debian package it names the
    // package's shim).
    let set_it = |file: &Path| match given {
        Some(_) => format!(
            "{} --setup --srt --srt-settings {}",
            binary.display(),
            file.display()
        ),
        None => format!("{} --setup --srt", binary.display()),
    };
    let (file, settings) = match srt_file(given, home.as_deref(), &set_it) {
        Ok(read) => read,
        Err(check) => return vec![check],
    };
    let writable = writable_folders(&settings, home.as_deref());
    const BWRAP: &str = "srt bwrapPath";
    let bwrap = match settings.get("bwrapPath") {
        None => Check::warn(
            BWRAP,
            format!(
                "{}: bwrapPath is not set: srt runs bubblewrap itself, and sessions sharing a \
                 folder delete each other's placeholders (their commands fail)",
                file.display()
            ),
            set_it(&file),
        ),
        Some(value) => {
            match binary_at(
                binary,
                &file,
                "bwrapPath",
                value,
                &writable,
                (Some("bwrap"), false),
                "srt refuses to run a command without a bubblewrap there",
            ) {
                Ok(found) => Check::ok(
                    BWRAP,
                    format!("{found}: the shim, which keeps every session's placeholders"),
                ),
                Err(wrong) => wrong.check(BWRAP, set_it(&file)),
            }
        }
    };
    // The shim (bwrapPath ok: this binary as `bwrap`) keeps this binary
    // read-only in every sandbox it runs: an applyPath leading here is as
    // safe as the shim's route.
    let shim_guards = bwrap.status == super::Status::Ok;
    let apply = match settings.get("seccomp").and_then(|s| s.get("applyPath")) {
        None => Check::warn(
            NAME,
            format!(
                "{}: seccomp.applyPath is not set: srt runs its bundled helper, not this one",
                file.display()
            ),
            set_it(&file),
        ),
        Some(value) => match binary_at(
            binary,
            &file,
            "seccomp.applyPath",
            value,
            &writable,
            (None, shim_guards),
            "srt silently falls back to its bundled helper when nothing is there",
        ) {
            Ok(found) => Check::ok(NAME, found),
            Err(wrong) => wrong.check(NAME, set_it(&file)),
        },
    };
    vec![apply, bwrap]
}

/// srt's settings file (`given`, or `~/.srt-settings.json`) read and
/// parsed as srt would; where srt would refuse it or not find it, the
/// check that says so (`set_it`: the command that sets it right).
fn srt_file(
    given: Option<&OsStr>,
    home: Option<&Path>,
    set_it: &dyn Fn(&Path) -> String,
) -> Result<(PathBuf, Value), Check> {
    const NAME: &str = "srt";
    let file = match (given, home) {
        (Some(f), _) => PathBuf::from(f),
        (None, Some(h)) => h.join(".srt-settings.json"),
        (None, None) => {
            return Err(Check::warn(
                NAME,
                "no home folder (HOME unset, no passwd entry): srt's default settings file \
                 cannot be found",
                "name the file srt reads with --srt-settings FILE",
            ));
        }
    };
    let text = match settings::read(&file) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(Unread::Missing) if given.is_none() => {
            return Err(Check::warn(
                NAME,
                format!(
                    "no settings file at {}: srt runs its bundled helper, not this one",
                    file.display()
                ),
                set_it(&file),
            ));
        }
        Err(e) => {
            return Err(Check::fail(
                NAME,
                format!("{}: {e}", file.display()),
                "make it a regular file srt can read, with the settings as JSON (or name \
                 another with --srt-settings FILE)",
            ));
        }
    };
    match json::parse(&text) {
        Ok(v @ Value::Object(_)) => Ok((file, v)),
        Ok(other) => Err(Check::fail(
            NAME,
            format!(
                "{}: holds {}, not an object: srt refuses it",
                file.display(),
                json::kind(&other)
            ),
            "make it a JSON object ({\"seccomp\": {\"applyPath\": ...}, ...})",
        )),
        Err(e) => Err(Check::fail(
            NAME,
            format!("{}: not JSON ({e}): srt refuses it", file.display()),
            "correct the JSON",
        )),
    }
}

/// srt's settings file (`given`, else `~/.srt-settings.json`) as JSON,
/// where it reads and parses: what the checks before srt's own need of it
/// (its weaker line, the folders a command may write).
pub fn srt_settings(given: Option<&OsStr>) -> Option<Value> {
    let file = match given {
        Some(f) => PathBuf::from(f),
        None => home()?.join(".srt-settings.json"),
    };
    let bytes = settings::read(&file).ok()?;
    json::parse(&String::from_utf8_lossy(&bytes)).ok()
}

/// Whether srt's settings ask for its weaker line in containers
/// (`enableWeakerNestedSandbox`: `--bind /proc /proc` for `--proc /proc`).
pub fn weaker_nested(settings: Option<&Value>) -> bool {
    settings.is_some_and(|v| v.get("enableWeakerNestedSandbox") == Some(&Value::Bool(true)))
}

/// The folders a sandboxed command may write, by srt's settings: each
/// `allowWrite` entry and srt's own writable folders, each with why.
pub fn writable_folders(settings: &Value, home: Option<&Path>) -> Vec<(String, PathBuf)> {
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
            if let Some(dir) = folder_of_entry(spelling, literal, home) {
                writable.push((format!("allowWrite entry {spelling:?}"), dir));
            }
        }
    }
    for dir in srt_own_writable(home) {
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        writable.push(("a folder srt makes writable for every command".into(), dir));
    }
    writable
}
