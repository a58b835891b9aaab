//! A binary a client's setting names (srt's `seccomp.applyPath` and
//! `bwrapPath`, Claude Code's `sandbox.bwrapPath`), judged: a string, an
//! absolute path, executable, this helper (or another program), and out
//! of every folder a sandboxed command may write, as named and as its
//! links lead, unless the shim keeps it read-only.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::Check;
use crate::json::{self, Value};
use crate::settings;
use crate::shim;

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
