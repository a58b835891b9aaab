//! Which bubblewrap the shim runs: `APPLY_SECCOMP_BWRAP`, else the first
//! `bwrap` on PATH in a folder after the shim's own (by identity), never
//! this binary and never one this chain of execs already ran (the list in
//! `APPLY_SECCOMP_SHIM_VISITED`, the passes counted in the arguments).
//! Called by the shim before its exec, and by the doctor.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The device and inode of the file at `p` (followed through links), and
/// whether it is an executable file.
fn stat(p: &Path) -> Option<((u64, u64), bool)> {
    std::fs::metadata(p)
        .ok()
        .map(|m| ((m.dev(), m.ino()), m.is_file() && m.mode() & 0o111 != 0))
}

pub fn is_ours(candidate: &Path, ours: &Path) -> bool {
    matches!((stat(candidate), stat(ours)), (Some((a, _)), Some((b, _))) if a == b)
}

pub fn executable(p: &Path) -> bool {
    stat(p).is_some_and(|(_, x)| x)
}

/// The variable the shim sets for what it runs: the bubblewraps (or
/// wrappers) this chain of execs has already run, as `dev:ino` of the
/// file, comma-separated. bubblewrap is told to drop it (`--unsetenv`),
/// and the helper scrubs it too: the sandbox never sees it.
pub const VISITED: &str = "APPLY_SECCOMP_SHIM_VISITED";
/// Most passes through the shim in one chain of execs.
pub const MAX_HOPS: usize = 6;

/// The names of the `--unsetenv NAME` pairs at the head of the
/// arguments, where each pass of the shim puts its own.
fn leading_unsets(args: &[OsString]) -> impl Iterator<Item = &OsString> {
    args.chunks(2)
        .take_while(|pair| pair.len() == 2 && pair[0] == "--unsetenv")
        .map(|pair| &pair[1])
}

/// How many times this chain of execs has passed through the shim: the
/// `--unsetenv APPLY_SECCOMP_SHIM_VISITED` pairs at the head of the
/// arguments, one per pass. Arguments survive a wrapper that clears the
/// environment, where the list of those visited does not.
pub fn hops(args: &[OsString]) -> usize {
    leading_unsets(args).filter(|name| *name == VISITED).count()
}

/// Whether an earlier pass already told bubblewrap to drop `name`.
pub fn unsets(args: &[OsString], name: &str) -> bool {
    leading_unsets(args).any(|n| n == name)
}

/// The `dev:ino` of the file at `p` (followed through links).
pub fn identity(p: &Path) -> Option<String> {
    std::fs::metadata(p)
        .ok()
        .map(|m| format!("{}:{}", m.dev(), m.ino()))
}

/// The folders of a `PATH` value that a search for `bwrap` may use: the
/// absolute ones, in order. A relative or empty entry is looked up from
/// the working folder, where a sandboxed command may have planted a
/// `bwrap` of its own: those come back apart (as spelled, `""` for an
/// empty one), for `SRT_DEBUG` and the doctor, and are never searched.
pub fn search_dirs(path: Option<&OsStr>) -> (Vec<PathBuf>, Vec<String>) {
    let (mut dirs, mut skipped) = (Vec::new(), Vec::new());
    for d in path.map(std::env::split_paths).into_iter().flatten() {
        if d.is_absolute() {
            dirs.push(d);
        } else {
            skipped.push(d.display().to_string());
        }
    }
    (dirs, skipped)
}

/// The real bubblewrap: `APPLY_SECCOMP_BWRAP` (absolute); else the first
/// `bwrap` on PATH in a folder after the one the shim was found in (by
/// the folder's identity, not its spelling), skipping this binary and
/// every relative or empty entry; else `/usr/bin/bwrap`. Never this
/// binary, and never one in `visited` (this chain of execs ran it
/// already, and it led back here: a wrapper).
pub fn find_real_bwrap(
    ours: &Path,
    configured: Option<&OsStr>,
    path: Option<&OsStr>,
    visited: &[String],
) -> Result<PathBuf, String> {
    let ours_id = stat(ours).map(|(id, _)| id);
    let id_text = |id: (u64, u64)| format!("{}:{}", id.0, id.1);
    if let Some(c) = configured {
        let c = PathBuf::from(c);
        if !c.is_absolute() {
            return Err(format!(
                "APPLY_SECCOMP_BWRAP={} is relative: it would be looked up from the working \
                 folder, where a sandboxed command may have put a file of its own",
                c.display()
            ));
        }
        let st = stat(&c);
        if st.is_some_and(|(id, _)| Some(id) == ours_id) {
            return Err(format!(
                "APPLY_SECCOMP_BWRAP={} is this shim itself",
                c.display()
            ));
        }
        let Some((id, true)) = st else {
            return Err(format!(
                "APPLY_SECCOMP_BWRAP={} is not an executable file",
                c.display()
            ));
        };
        if visited.contains(&id_text(id)) {
            return Err(format!(
                "a loop: APPLY_SECCOMP_BWRAP={} ran this shim again; it must name the real \
                 bubblewrap",
                c.display()
            ));
        }
        return Ok(c);
    }
    let (dirs, _) = search_dirs(path);
    // One stat for each candidate: what it is, and whether it is this one.
    let found: Vec<Option<((u64, u64), bool)>> =
        dirs.iter().map(|d| stat(&d.join("bwrap"))).collect();
    // The folder the shim was found in: the first whose bwrap is this
    // binary (a caller searching PATH found that one).
    let found_in = found
        .iter()
        .position(|f| f.is_some_and(|(id, _)| Some(id) == ours_id));
    let own_dir = found_in.and_then(|i| stat(&dirs[i]).map(|(id, _)| id));
    let after = found_in.map_or(0, |i| i + 1);
    let mut passed = Vec::new();
    let candidates = (after..dirs.len())
        .filter(|&i| own_dir.is_none() || stat(&dirs[i]).map(|(id, _)| id) != own_dir)
        .map(|i| (dirs[i].join("bwrap"), found[i]))
        .chain(std::iter::once_with(|| {
            let p = PathBuf::from("/usr/bin/bwrap");
            let st = stat(&p);
            (p, st)
        }));
    for (candidate, st) in candidates {
        let Some((id, true)) = st else { continue };
        if Some(id) == ours_id {
            continue;
        }
        if visited.contains(&id_text(id)) {
            passed.push(candidate.display().to_string());
            continue;
        }
        return Ok(candidate);
    }
    if passed.is_empty() {
        Err(
            "no real bubblewrap found on PATH after this shim's folder or at /usr/bin/bwrap \
             (set APPLY_SECCOMP_BWRAP)"
                .into(),
        )
    } else {
        Err(format!(
            "a loop: this chain of execs already ran {} and came back here; no bubblewrap is \
             left that it has not passed through (a wrapper on PATH runs the first bwrap it \
             finds?). Set APPLY_SECCOMP_BWRAP to the real bubblewrap",
            passed.join(", ")
        ))
    }
}
