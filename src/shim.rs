//! The `bwrap` shim: puts this helper in place of the one a client embeds.
//!
//! Claude Code runs its own embedded helper inside bubblewrap as
//! `ARGV0=apply-seccomp /proc/self/fd/3 <shell> -c '<command>'` (fd 3 open on
//! its own executable), somewhere in the script it hands bwrap. Invoked as
//! `bwrap` (a symlink first on PATH) or as `apply-seccomp --bwrap-shim`,
//! this binary rewrites that prefix to its own path, adds `--ro-bind P P`
//! so the path exists inside the sandbox, and execs the real bubblewrap:
//! no extra process, same exit status and signals. Anything it does not
//! recognise passes through unchanged, never half-rewritten.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::bwrap_args::{self, Unwalked};

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
}

fn unchanged(args: &[OsString], note: impl Into<String>) -> Rewrite {
    Rewrite {
        args: args.to_vec(),
        replaced: 0,
        note: note.into(),
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
/// of the embedded helper. Pure: unit-tested on the client's command lines.
pub fn rewrite(args: &[OsString], ours: &Path) -> Rewrite {
    let ours_bytes = ours.as_os_str().as_bytes();
    // Where the options end: the `--` (or the first word that is not an
    // option), found by walking the options with their arities.
    let walked = match bwrap_args::walk(args) {
        Ok(w) => w,
        Err(Unwalked::NoCommand) => return unchanged(args, "no command: nothing to rewrite"),
        Err(Unwalked::Args) => {
            return unchanged(args, "arguments come from --args: not rewritten");
        }
        Err(why) => return unchanged(args, why.to_string()),
    };
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
        return unchanged(args, "no embedded helper in the command: passed through");
    }
    if !safe_unquoted(ours_bytes) {
        return unchanged(
            args,
            format!(
                "own path {} has characters that need quoting: not rewritten",
                ours.display()
            ),
        );
    }
    out.push("--ro-bind".into());
    out.push(ours.as_os_str().to_owned());
    out.push(ours.as_os_str().to_owned());
    out.push("--".into());
    out.extend(command);
    Rewrite {
        args: out,
        replaced,
        note: format!(
            "replaced {replaced} occurrence(s) of the embedded helper with {} (--ro-bind added)",
            ours.display()
        ),
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

fn is_ours(candidate: &Path, ours: &Path) -> bool {
    same_file(candidate, ours) || std::fs::canonicalize(candidate).ok().as_deref() == Some(ours)
}

fn executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
}

/// The real bubblewrap: `APPLY_SECCOMP_BWRAP`, else the first `bwrap` on
/// PATH that is not this binary, else `/usr/bin/bwrap`; never this binary.
pub fn find_real_bwrap(
    ours: &Path,
    configured: Option<&OsStr>,
    path: Option<&OsStr>,
) -> Result<PathBuf, String> {
    if let Some(c) = configured {
        let c = PathBuf::from(c);
        if is_ours(&c, ours) {
            return Err(format!(
                "APPLY_SECCOMP_BWRAP={} is this shim itself",
                c.display()
            ));
        }
        if !executable(&c) {
            return Err(format!(
                "APPLY_SECCOMP_BWRAP={} is not an executable file",
                c.display()
            ));
        }
        return Ok(c);
    }
    let dirs = path
        .map(|p| std::env::split_paths(p).collect::<Vec<_>>())
        .unwrap_or_default();
    dirs.into_iter()
        .map(|d| d.join("bwrap"))
        .chain([PathBuf::from("/usr/bin/bwrap")])
        .find(|c| executable(c) && !is_ours(c, ours))
        .ok_or_else(|| {
            "no real bubblewrap found on PATH or at /usr/bin/bwrap (set APPLY_SECCOMP_BWRAP)".into()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    const OURS: &str = "/home/u/.cargo/bin/apply-seccomp";

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
        let r = rewrite(&a, Path::new(OURS));
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
        let r = rewrite(
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
        let r = rewrite(&a, Path::new(OURS));
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
        assert_eq!(rewrite(&a, Path::new(OURS)).args, a);
    }

    #[test]
    fn a_command_without_dashdash_is_found() {
        let r = rewrite(
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
            let r = rewrite(&a, Path::new(OURS));
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
            let r = rewrite(&a, Path::new(bad));
            assert_eq!((r.args.clone(), r.replaced), (a.clone(), 0), "{bad}");
            assert!(r.note.contains("quoting"), "{}", r.note);
        }
        assert!(safe_unquoted(b"/opt/x_y-1.2/bin:a=b@c+d,e"));
    }
}
