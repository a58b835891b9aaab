//! The `bwrap` shim: puts this helper in place of the one a client embeds.
//!
//! Claude Code runs its own embedded helper inside bubblewrap as
//! `ARGV0=apply-seccomp /proc/self/fd/3 <shell> -c '<command>'` (fd 3 open on
//! its own executable), somewhere in the script it hands bwrap. Invoked as
//! `bwrap` (a symlink first on PATH) or as `apply-seccomp --bwrap-shim`,
//! this binary rewrites that prefix to its own path, adds `--ro-bind P P`
//! so the path exists inside the sandbox, keeps the line's placeholders
//! (keep/), and execs the real bubblewrap in its own process: the same
//! pid, exit status and signals. Anything it does not recognise passes
//! through unchanged, never half-rewritten.
//!
//! This file: the rewrite (pure) and the `--args` files it reads; find.rs:
//! which bubblewrap to run, never looping; devices.rs: the GPUs passed
//! through on request; log.rs: the replayable record
//! of `APPLY_SECCOMP_LOG`; run.rs: the entry, called by main.rs; keep/: the
//! placeholder keeper. The doctor uses the search and the keeper's list of
//! leftovers.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use crate::bwrap_args::{self, ReadArgs, Unwalked};
use crate::sys;

pub mod devices;
mod find;
pub mod keep;
pub mod limits;
mod log;
pub mod protect;
pub mod run;

pub use find::{
    MAX_HOPS, VISITED, executable, find_real_bwrap, hops, identity, is_ours, search_dirs, unsets,
};
pub use log::{LOG, append, log_record};

/// The prefix the client writes before its shell (after any
/// `SRT_ALLOW_NESTED_USERNS=...`, which stays).
pub const PREFIX: &str = "ARGV0=apply-seccomp /proc/self/fd/3 ";
/// The embedded helper's path in the older hook form.
pub const FD3: &str = "/proc/self/fd/3";

/// What [`rewrite`] decided.
#[derive(Debug, PartialEq, Eq)]
pub struct Rewrite {
    pub args: Vec<OsString>,
    /// Occurrences replaced (0: passed through unchanged).
    pub replaced: usize,
    /// Why it passed through, or what it did: for `SRT_DEBUG`.
    pub note: String,
    /// The `--args` files read (for the log).
    pub args_files: Vec<bwrap_args::ArgsFile>,
    /// The host paths the line makes writable inside the sandbox (the
    /// sources of its read-write binds), where the log must not be;
    /// `None`: the line could not be walked, so it cannot be told.
    pub writable: Option<Vec<Vec<u8>>>,
}

fn unchanged(args: &[OsString], note: impl Into<String>) -> Rewrite {
    Rewrite {
        args: args.to_vec(),
        replaced: 0,
        note: note.into(),
        args_files: Vec::new(),
        writable: None,
    }
}

/// A path that stays one word at every quoting level, in every shell.
pub fn safe_unquoted(path: &[u8]) -> bool {
    !path.is_empty()
        && path
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:=@+,-".contains(b))
}

fn replace_all(hay: &[u8], needle: &[u8], with: &[u8]) -> (Vec<u8>, usize) {
    let mut out = Vec::with_capacity(hay.len());
    let mut n = 0;
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
            n += 1;
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    (out, n)
}

/// Rewrites bubblewrap's arguments (without `argv[0]`) to run `ours` in place
/// of the embedded helper; `--args FD` files are read with `read` (their
/// words must all be options: the command stays on the line). Pure but for
/// `read`: unit-tested on the client's command lines.
pub fn rewrite(args: &[OsString], ours: &Path, read: &mut ReadArgs<'_>) -> Rewrite {
    let ours_bytes = ours.as_os_str().as_bytes();
    // Where the options end: the `--` (or the first word that is not an
    // option), found by walking the options with their arities.
    let walked = match bwrap_args::walk_reading(args, read) {
        Ok(w) => w,
        // Nothing runs in a sandbox, so nothing in one can write.
        Err(Unwalked::NoCommand) => {
            return Rewrite {
                writable: Some(Vec::new()),
                ..unchanged(args, "no command: nothing to rewrite")
            };
        }
        Err(why @ Unwalked::Args(_)) => {
            return unchanged(args, format!("{why}: not rewritten"));
        }
        Err(why) => return unchanged(args, why.to_string()),
    };
    let read_files = walked
        .args_files
        .iter()
        .map(|f| {
            format!(
                "--args {} read ({} words)",
                f.fd.to_string_lossy(),
                f.words.len()
            )
        })
        .collect::<Vec<_>>();
    let writable = Some(
        walked
            .mounts
            .iter()
            .filter(|m| !m.restricts)
            .map(|m| m.source.clone())
            .collect(),
    );
    let (command_at, options_end) = (walked.command_at, walked.options_end);
    let setenv_argv0 = walked.setenv_argv0;
    let mut out: Vec<OsString> = args[..options_end].to_vec();
    let mut replaced = 0;
    let mut command: Vec<OsString> = Vec::with_capacity(args.len() - command_at);
    for (k, arg) in args[command_at..].iter().enumerate() {
        if k == 0 && setenv_argv0 && arg.as_bytes() == FD3.as_bytes() {
            command.push(ours.as_os_str().to_owned());
            replaced += 1;
            continue;
        }
        let mut with = ours_bytes.to_vec();
        with.push(b' ');
        let (text, n) = replace_all(arg.as_bytes(), PREFIX.as_bytes(), &with);
        replaced += n;
        command.push(OsString::from_vec(text));
    }
    if replaced == 0 {
        return Rewrite {
            args_files: walked.args_files,
            writable,
            ..unchanged(args, "no embedded helper in the command: passed through")
        };
    }
    if !safe_unquoted(ours_bytes) {
        return Rewrite {
            writable,
            ..unchanged(
                args,
                format!(
                    "own path {} has characters that need quoting: not rewritten",
                    ours.display()
                ),
            )
        };
    }
    out.push("--ro-bind".into());
    out.push(ours.as_os_str().to_owned());
    out.push(ours.as_os_str().to_owned());
    out.push("--".into());
    out.extend(command);
    Rewrite {
        args: out,
        replaced,
        args_files: walked.args_files,
        writable,
        note: format!(
            "replaced {replaced} occurrence(s) of the embedded helper with {} (--ro-bind \
             added){}{}",
            ours.display(),
            if read_files.is_empty() { "" } else { "; " },
            read_files.join(", ")
        ),
    }
}

/// The words of the `--args` file on `fd` (bubblewrap's format: each word
/// NUL-terminated), read without moving its offset; or why not.
pub fn read_args_fd(fd: &OsString) -> Result<Vec<OsString>, String> {
    let n: i32 = fd
        .to_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("fd {} is not a number", fd.to_string_lossy()))?;
    let mut text = sys::read_rest_of_file(n)?;
    if text.last() == Some(&0) {
        text.pop();
    }
    if text.is_empty() {
        return Ok(Vec::new());
    }
    Ok(text
        .split(|&b| b == 0)
        .map(|w| OsString::from_vec(w.to_vec()))
        .collect())
}

/// `args` with each `--args FD` in `files` replaced by that file's words:
/// the same options, all on the line (where bubblewrap's PID 1 command
/// line shows them to the mount guard, and a log can replay them).
pub fn inline_args(args: &[OsString], files: &[bwrap_args::ArgsFile]) -> Vec<OsString> {
    let mut out =
        Vec::with_capacity(args.len() + files.iter().map(|f| f.words.len()).sum::<usize>());
    let mut i = 0;
    while i < args.len() {
        match files.iter().find(|f| f.at == i) {
            Some(f) => {
                out.extend(f.words.iter().cloned());
                i += 2;
            }
            None => {
                out.push(args[i].clone());
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::os_words as args;

    const OURS: &str = "/home/u/.cargo/bin/apply-seccomp";

    /// `rewrite` where no `--args` file can be read.
    fn rw(a: &[OsString], ours: &Path) -> Rewrite {
        rewrite(a, ours, &mut |_| Err("not readable here".into()))
    }

    #[test]
    fn an_args_profile_is_read_and_the_line_rewritten() {
        let s = format!("{PREFIX}x");
        let a = args(&["--unshare-pid", "--args", "9", "--", "sh", "-c", &s]);
        let mut read = |_: &OsString| Ok(args(&["--ro-bind", "/dev/null", "/w/.bashrc"]));
        let r = rewrite(&a, Path::new(OURS), &mut read);
        assert_eq!(r.replaced, 1);
        assert!(r.note.contains("--args 9 read (3 words)"), "{}", r.note);
        assert_eq!(r.args[..3], args(&["--unshare-pid", "--args", "9"])[..]);
        assert_eq!(r.args_files.len(), 1);
        // A pipe (or anything unreadable) passes the line through, saying why.
        let r = rw(&a, Path::new(OURS));
        assert_eq!((r.args.clone(), r.replaced), (a.clone(), 0));
        assert!(
            r.note
                .contains("options come from --args, not readable here"),
            "{}",
            r.note
        );
    }

    #[test]
    fn passes_are_counted_in_the_arguments() {
        let marker = ["--unsetenv", VISITED];
        assert_eq!(hops(&args(&["--version"])), 0);
        assert_eq!(hops(&args(&[&marker[..], &["--version"]].concat())), 1);
        let twice = [&marker[..], &marker[..], &["--unsetenv", "X"]].concat();
        assert_eq!(hops(&args(&twice)), 2);
    }

    #[test]
    fn the_multicall_prefix_is_replaced_and_the_binary_bound() {
        let script = "socat ... & SRT_ALLOW_NESTED_USERNS=0 ARGV0=apply-seccomp /proc/self/fd/3 \
                      /usr/bin/bash -c 'echo hi'";
        let a = args(&[
            "--new-session",
            "--ro-bind",
            "/",
            "/",
            "--setenv",
            "X",
            "--",
            "/usr/bin/bash",
            "-c",
            script,
        ]);
        let r = rw(&a, Path::new(OURS));
        assert_eq!(r.replaced, 1);
        let want_script =
            format!("socat ... & SRT_ALLOW_NESTED_USERNS=0 {OURS} /usr/bin/bash -c 'echo hi'");
        let want = args(&[
            "--new-session",
            "--ro-bind",
            "/",
            "/",
            "--setenv",
            "X",
            "--",
            "--ro-bind",
            OURS,
            OURS,
            "--",
            "/usr/bin/bash",
            "-c",
            &want_script,
        ]);
        // `--setenv X --` takes "--" as the value, so the real `--` is the
        // second one: the walk over arities must have found it.
        assert_eq!(r.args, want);
    }

    #[test]
    fn every_occurrence_is_replaced() {
        let s = format!("{PREFIX}a; {PREFIX}b");
        let r = rw(
            &args(&["--unshare-pid", "--", "sh", "-c", &s]),
            Path::new(OURS),
        );
        assert_eq!(r.replaced, 2);
        assert_eq!(
            r.args.last().unwrap(),
            &OsString::from(format!("{OURS} a; {OURS} b"))
        );
    }

    #[test]
    fn the_older_hook_form_is_rewritten() {
        let a = args(&[
            "--setenv",
            "ARGV0",
            "apply-seccomp",
            "--unshare-pid",
            "--",
            FD3,
            "/bin/bash",
            "-c",
            "x",
        ]);
        let r = rw(&a, Path::new(OURS));
        assert_eq!(r.replaced, 1);
        assert_eq!(
            r.args,
            args(&[
                "--setenv",
                "ARGV0",
                "apply-seccomp",
                "--unshare-pid",
                "--ro-bind",
                OURS,
                OURS,
                "--",
                OURS,
                "/bin/bash",
                "-c",
                "x"
            ])
        );
        // Without the ARGV0 setting, /proc/self/fd/3 is not the hook.
        let a = args(&["--unshare-pid", "--", FD3, "x"]);
        assert_eq!(rw(&a, Path::new(OURS)).args, a);
    }

    #[test]
    fn a_command_without_dashdash_is_found() {
        let r = rw(
            &args(&["--unshare-pid", "sh", "-c", PREFIX]),
            Path::new(OURS),
        );
        assert_eq!(r.replaced, 1);
        assert_eq!(
            r.args[..5],
            args(&["--unshare-pid", "--ro-bind", OURS, OURS, "--"])[..]
        );
    }

    #[test]
    fn anything_unrecognised_passes_through_unchanged() {
        let s = format!("{PREFIX}x");
        for a in [
            args(&["--version"]),
            args(&["--ro-bind", "/", "/", "true"]),
            args(&["--frobnicate", "--", "sh", "-c", &s]),
            args(&["--args", "9", "--", "sh", "-c", &s]),
            args(&["--bind", "/a", "--", "sh", "-c", &s][..3]),
            args(&[]),
        ] {
            let r = rw(&a, Path::new(OURS));
            assert_eq!((r.args, r.replaced), (a.clone(), 0), "{a:?}");
        }
    }

    #[test]
    fn a_path_that_needs_quoting_is_refused() {
        let s = format!("{PREFIX}x");
        let a = args(&["--", "sh", "-c", &s]);
        for bad in [
            "/home/my user/apply-seccomp",
            "/tmp/a'b",
            "/tmp/$x",
            "/tmp/a\"b",
            "rel;x",
        ] {
            let r = rw(&a, Path::new(bad));
            assert_eq!((r.args.clone(), r.replaced), (a.clone(), 0), "{bad}");
            assert!(r.note.contains("quoting"), "{}", r.note);
        }
        assert!(safe_unquoted(b"/opt/x_y-1.2/bin:a=b@c+d,e"));
    }
}
