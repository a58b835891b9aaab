//! srt's settings file: is `seccomp.applyPath` this helper, is
//! `bwrapPath` the shim, and are both out of every command's reach? Claude
//! Code's side is claude.rs.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::Check;
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
    let file = match (given, &home) {
        (Some(f), _) => PathBuf::from(f),
        (None, Some(h)) => h.join(".srt-settings.json"),
        (None, None) => {
            return vec![Check::warn(
                NAME,
                "no home folder (HOME unset, no passwd entry): srt's default settings file \
                 cannot be found",
                "name the file srt reads with --srt-settings FILE",
            )];
        }
    };
    let text = match settings::read(&file) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(Unread::Missing) if given.is_none() => {
            return vec![Check::warn(
                NAME,
                format!(
                    "no settings file at {}: srt runs its bundled helper, not this one",
                    file.display()
                ),
                set_it(&file),
            )];
        }
        Err(e) => {
            return vec![Check::fail(
                NAME,
                format!("{}: {e}", file.display()),
                "make it a regular file srt can read, with the settings as JSON (or name \
                 another with --srt-settings FILE)",
            )];
        }
    };
    let settings = match json::parse(&text) {
        Ok(v @ Value::Object(_)) => v,
        Ok(other) => {
            return vec![Check::fail(
                NAME,
                format!(
                    "{}: holds {}, not an object: srt refuses it",
                    file.display(),
                    json::kind(&other)
                ),
                "make it a JSON object ({\"seccomp\": {\"applyPath\": ...}, ...})",
            )];
        }
        Err(e) => {
            return vec![Check::fail(
                NAME,
                format!("{}: not JSON ({e}): srt refuses it", file.display()),
                "correct the JSON",
            )];
        }
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

/// What is wrong with a binary a setting names.
pub(super) struct Wrong {
    pub found: String,
    /// A failure; else a warning (another program).
    pub fail: bool,
    /// The fix; `None`: correct the setting.
    pub fix: Option<String>,
}

impl Wrong {
    fn fail(found: String, fix: Option<String>) -> Wrong {
        Wrong {
            found,
            fail: true,
            fix,
        }
    }

    /// The check, with `set_it` as the fix where there is none of its own.
    pub fn check(self, name: &'static str, set_it: String) -> Check {
        let fix = self.fix.unwrap_or(set_it);
        if self.fail {
            Check::fail(name, self.found, fix)
        } else {
            Check::warn(name, self.found, fix)
        }
    }
}

/// Checks a settings value that names a binary srt runs (`key` in
/// `file`): absolute, executable, out of every writable folder's reach
/// (as named and as its links lead) unless the shim keeps it read-only,
/// this binary, and, with `named`, a link of that name (the shim answers
/// to it); `when_missing` says what the client does when nothing is
/// there. `(named, shim_guards)`: the name the shim answers to; whether
/// the shim guards this binary (bwrapPath is it). Ok: what was found.
/// Err: what was found, whether it is a failure (srt fails, or runs
/// another helper: else a warning), and its fix (`None`: the setting
/// itself).
pub(super) fn binary_at(
    binary: &Path,
    file: &Path,
    key: &str,
    value: &Value,
    writable: &[(String, PathBuf)],
    (named, shim_guards): (Option<&str>, bool),
    when_missing: &str,
) -> Result<String, Wrong> {
    let Value::String(p) = value else {
        return Err(Wrong::fail(
            format!(
                "{}: {key} is {}, not a string",
                file.display(),
                json::kind(value)
            ),
            None,
        ));
    };
    let path = PathBuf::from(p);
    let at = format!("{}: {key} {}", file.display(), path.display());
    if !path.is_absolute() {
        return Err(Wrong::fail(
            format!(
                "{at} is relative: it is looked up from each command's working folder, where \
                 a command may put a file of its own"
            ),
            None,
        ));
    }
    let meta = std::fs::metadata(&path)
        .map_err(|e| Wrong::fail(format!("{at}: {e}: {when_missing}"), None))?;
    if !meta.is_file() || nix::unistd::access(&path, nix::unistd::AccessFlags::X_OK).is_err() {
        return Err(Wrong::fail(
            format!("{at} is not an executable file for this user"),
            Some(format!("chmod 0755 {}", path.display())),
        ));
    }
    // Replaceable from inside: the file as named (its folder, links in it
    // resolved) or the file it leads to, in or under a writable folder.
    let as_named = path
        .parent()
        .and_then(|d| std::fs::canonicalize(d).ok())
        .map(|d| d.join(path.file_name().unwrap_or_default()));
    let target = std::fs::canonicalize(&path).ok();
    let mut protected = None;
    for (why, dir) in writable {
        if [&as_named, &target]
            .into_iter()
            .flatten()
            .any(|p| p.starts_with(dir))
        {
            // The shim protects its own route in every line it runs.
            if (named.is_some() || shim_guards) && shim::is_ours(&path, binary) {
                protected = Some(format!(
                    "; inside {} ({why}), where {}",
                    dir.display(),
                    shim::protect::LINK_PROTECTION
                ));
                break;
            }
            // Commands still run: a warning (the verdict says what a run
            // does), with a fix that sets both keys right.
            return Err(Wrong {
                found: format!(
                    "{at} is inside {} ({why}): a sandboxed command can replace the helper, and \
                     the next command runs whatever it put there",
                    dir.display()
                ),
                fail: false,
                fix: Some(format!(
                    "as root, install -m 0755 {} /usr/local/bin/apply-seccomp; then, as yourself, \
                     /usr/local/bin/apply-seccomp --setup --srt",
                    binary.display()
                )),
            });
        }
    }
    if !shim::is_ours(&path, binary) {
        // Issue 58: both keys word a copy of this build the same way.
        let runs = if named.is_some() {
            "srt runs that file as bubblewrap"
        } else {
            "srt runs that file as its helper"
        };
        return Err(Wrong {
            found: format!(
                "{at} is not this binary but {}: {runs}",
                which_helper(&path)
            ),
            fail: false,
            fix: None,
        });
    }
    if let Some(name) = named.filter(|n| path.file_name() != Some(OsStr::new(n))) {
        return Err(Wrong::fail(
            format!(
                "{at} is this binary, but not as `{name}`: the shim answers to that name only \
                 (under another it runs the helper)"
            ),
            None,
        ));
    }
    Ok(match protected {
        Some(protected) => format!("{at} is this binary (the shim), executable{protected}"),
        None => format!(
            "{at} is this binary, executable, outside every allowWrite folder and srt's own \
             writable ones (all {} folders a sandboxed command may write)",
            writable.len()
        ),
    })
}

/// Names the helper at `p` from its bytes, never by running it (a file a
/// setting names may have been put there by a sandboxed command:
/// trust.rs): a build of this helper carries its `--version` line
/// (install.rs).
fn which_helper(p: &Path) -> String {
    let text = p.to_string_lossy();
    if text.contains("sandbox-runtime") {
        // Single-threaded C: it does not race, but its filter lets
        // socketpair(AF_UNIX, SOCK_DGRAM) through, and it fails every
        // command under Ubuntu's AppArmor bwrap profile (docs/shim.md).
        return "srt's bundled helper, which leaves SOCK_DGRAM socketpairs open and fails every \
                command under Ubuntu's AppArmor bwrap profile"
            .into();
    }
    match settings::read_at_most(p, HELPER_MAX) {
        Ok(bytes) => match crate::install::version_in(&bytes) {
            Some(v) if v == crate::install::VERSION => {
                format!("another copy of this same build, {v} (its bytes read, not run)")
            }
            Some(v) => format!("another build of this helper, {v} (its bytes read, not run)"),
            None => "a program that is not this helper (no version line of this helper's in \
                     its bytes, read, not run)"
                .into(),
        },
        Err(e) => format!("a file the doctor could not read ({e}), not run"),
    }
}

/// The largest helper binary read (this one is under 1 MiB).
const HELPER_MAX: u64 = 64 << 20;
