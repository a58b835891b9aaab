//! Node.js, which srt runs on: srt 0.0.83 asks for Node >= 22.12 (its
//! `engines`; npm warns `EBADENGINE` on an older one, and Debian 12's
//! `nodejs` is 18). Found on `PATH` as a client would (absolute entries
//! only), asked `--version` in a bounded child, unless it lies where a
//! sandboxed command may write (srt's settings): never run one a command
//! could have planted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Check, run_bounded};
use crate::shim;

const NAME: &str = "node";

/// What srt 0.0.83's `engines` asks for.
const WANTED: (u32, u32) = (22, 12);

/// `v22.12.0` as (22, 12).
pub fn version(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.trim().strip_prefix('v')?.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// `writable`: the folders a sandboxed command may write (srt's
/// settings): a `node` there, as named or as its links lead, could have
/// been planted by one, and is not run.
pub fn check(writable: &[(String, PathBuf)]) -> Check {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let Some(node) = shim::search_dirs(Some(&path))
        .0
        .into_iter()
        .map(|d| d.join("node"))
        .find(|p| shim::executable(p))
    else {
        return Check::ok(
            NAME,
            "no node on PATH: srt needs Node.js (>= 22.12), Claude Code's own build does not",
        );
    };
    let at = node.display();
    let resolved = std::fs::canonicalize(&node).unwrap_or_else(|_| node.clone());
    let as_named = node
        .parent()
        .and_then(|d| std::fs::canonicalize(d).ok())
        .map(|d| d.join("node"));
    let inside = writable.iter().find(|(_, dir)| {
        [Some(&resolved), as_named.as_ref()]
            .into_iter()
            .flatten()
            .any(|p| p.starts_with(dir))
    });
    if let Some((why, dir)) = inside {
        return Check::warn(
            NAME,
            format!(
                "{at} lies inside {} ({why}), where a sandboxed command may write: not run (a \
                 command could have put it there), and srt runs the first node on PATH",
                dir.display()
            ),
            format!(
                "take {} off the PATH srt starts with, or out of srt's allowWrite",
                node.parent().unwrap_or(&node).display()
            ),
        );
    }
    let mut cmd = std::process::Command::new(&node);
    cmd.arg("--version");
    let said = match run_bounded(cmd, Duration::from_secs(5)) {
        Ok(r) if r.status.is_some_and(|s| s.success()) => r.stdout,
        Ok(r) => return unknown(&node, &r.describe(Duration::from_secs(5))),
        Err(e) => return unknown(&node, &e.to_string()),
    };
    match version(&said) {
        Some(v) if v >= WANTED => Check::ok(NAME, format!("{at} is {}", said.trim())),
        Some(_) => Check::warn(
            NAME,
            format!(
                "{at} is {}: srt 0.0.83 asks for Node >= {}.{} (npm warns EBADENGINE when \
                 installing it); it ran on this one in this project's tests, but that is not \
                 what srt supports",
                said.trim(),
                WANTED.0,
                WANTED.1
            ),
            "install Node.js 22.12 or newer (https://nodejs.org/en/download, or nvm install 22) \
             and put it first on PATH",
        ),
        None => unknown(&node, &format!("it answered {:?}", said.trim())),
    }
}

fn unknown(node: &Path, why: &str) -> Check {
    Check::warn(
        NAME,
        format!("{}: no version from --version ({why})", node.display()),
        "check that it is Node.js: srt needs Node.js >= 22.12",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_and_compared() {
        assert_eq!(version("v22.12.0\n"), Some((22, 12)));
        assert_eq!(version("v20.20.2"), Some((20, 20)));
        assert!(version("v20.20.2").unwrap() < WANTED);
        assert!(version("v23.0.1").unwrap() >= WANTED);
        assert!(version("v22.11.9").unwrap() < WANTED);
        assert_eq!(version("node"), None);
    }
}
