//! What setup says besides what it changed: a folder to put first on
//! `PATH`, and a link an earlier setup left where it now costs the user.

use std::path::Path;

use super::files;
use crate::shim;
use crate::{doctor, json};
use std::path::PathBuf;

/// A link `~/.local/bin/bwrap` to this binary (where an earlier setup
/// made it) left beside the one in `bin_dir`: what it costs, and how to
/// remove it. It is left: Claude Code may still find it on `PATH`.
pub fn earlier_link(home: &Path, bin_dir: &Path, binary: &Path) -> Option<String> {
    let old_dir = home.join(".local/bin");
    let old = old_dir.join("bwrap");
    if old_dir == bin_dir || files::link_target(&old).as_deref() != Some(binary) {
        return None;
    }
    Some(format!(
        "{} -> {} (an earlier setup's link) is still there: while PATH names {}, every sandbox \
         that may write it keeps that whole folder read-only (pip install --user fails there); \
         once PATH names {} before it, remove it: rm {}",
        old.display(),
        binary.display(),
        old_dir.display(),
        bin_dir.display(),
        old.display()
    ))
}

/// Whether `dir` comes before every other folder with a `bwrap` on `PATH`;
/// if not, the line to add and where.
pub fn path_order(dir: &Path) -> Option<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let same = |a: &Path| std::fs::canonicalize(a).ok() == std::fs::canonicalize(dir).ok();
    for entry in shim::search_dirs(Some(&path)).0 {
        if same(&entry) {
            return None;
        }
        if entry.join("bwrap").is_file() {
            break;
        }
    }
    let shell = std::env::var("SHELL").unwrap_or_default();
    let rc = if shell.ends_with("zsh") {
        "~/.zshrc"
    } else if shell.ends_with("bash") {
        "~/.bashrc"
    } else {
        "~/.profile"
    };
    Some(format!(
        "one step left for you (setup edits no shell start-up file): {} does not come \
         before every other bwrap on PATH, so Claude Code still runs its own helper; add the \
         line export PATH=\"{}:$PATH\" to {rc} and start Claude Code from a new shell (or, \
         as root, apply-seccomp --setup --managed sets Claude Code's bwrapPath instead)",
        dir.display(),
        dir.display()
    ))
}

/// The folders srt's settings (their text) let a sandboxed command write.
pub fn writable(srt_text: Option<&str>) -> Vec<(String, PathBuf)> {
    let settings = srt_text
        .and_then(|text| json::parse(text).ok())
        .unwrap_or(json::Value::Null);
    doctor::writable_folders(&settings, doctor::home().as_deref())
}

/// Err if `path` is inside one of `writable`.
pub fn out_of_reach(what: &str, path: &Path, writable: &[(String, PathBuf)]) -> Result<(), String> {
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    match writable
        .iter()
        .find(|(_, dir)| path.starts_with(dir) || resolved.starts_with(dir))
    {
        Some((why, dir)) => Err(format!(
            "{what} {} is inside {} ({why}): a sandboxed command could replace it",
            path.display(),
            dir.display()
        )),
        None => Ok(()),
    }
}
