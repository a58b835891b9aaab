//! Node.js, which srt runs on: srt 0.0.83 asks for Node >= 22.12 (its
//! `engines`; npm warns `EBADENGINE` on an older one, and Debian 12's
//! `nodejs` is 18). Found on `PATH` as a client would (absolute entries
//! only), and never run (issue 54): a `node` a sandboxed command put on
//! `PATH` (a project's `bin`, in a folder srt's `allowWrite: ["."]` lets
//! it write wherever srt starts) would run outside every sandbox. Its
//! version is read instead: the `include/node/node_version.h` that
//! Node's own builds, nvm and NodeSource install beside `bin`, else
//! dpkg's record of Debian's `nodejs` when dpkg lists the file. A planted
//! file could lie there, which changes only this line.

use std::path::{Path, PathBuf};

use super::Check;
use crate::settings;
use crate::shim;

const NAME: &str = "node";

/// What srt 0.0.83's `engines` asks for.
const WANTED: (u32, u32) = (22, 12);

/// The most read of dpkg's status file (a few MiB on a big system).
const STATUS_MAX: u64 = 64 << 20;
/// Of any other file read here.
const SMALL_MAX: u64 = 1 << 20;

/// `v22.12.0` as (22, 12).
pub fn version(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.trim().strip_prefix('v')?.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The version `node_version.h` defines: `v22.12.0`.
fn from_header(text: &str) -> Option<String> {
    let define = |name: &str| {
        text.lines().find_map(|l| {
            let rest = l.trim().strip_prefix("#define")?.trim_start();
            let value = rest.strip_prefix(name)?.trim();
            value.parse::<u32>().ok()
        })
    };
    Some(format!(
        "v{}.{}.{}",
        define("NODE_MAJOR_VERSION")?,
        define("NODE_MINOR_VERSION")?,
        define("NODE_PATCH_VERSION")?
    ))
}

/// The installed `nodejs` package's version in dpkg's `status` text, as
/// `v20.19.2` (its upstream part).
fn from_dpkg_status(text: &str) -> Option<String> {
    let stanza = text.split("\n\n").find(|s| {
        s.lines().any(|l| l == "Package: nodejs") && s.contains("install ok installed")
    })?;
    let version = stanza.lines().find_map(|l| l.strip_prefix("Version: "))?;
    let upstream = version.split_once(':').map_or(version, |(_, v)| v);
    let upstream: String = upstream
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    Some(format!("v{}", upstream.trim_end_matches('.')))
}

/// Node's version at `resolved` (links followed), read, and from where.
fn read_version(named: &Path, resolved: &Path) -> Option<(String, PathBuf)> {
    let read = |p: &Path, max| {
        settings::read_at_most(p, max)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    if let Some(prefix) = resolved.parent().and_then(Path::parent) {
        let header = prefix.join("include/node/node_version.h");
        if let Some(v) = read(&header, SMALL_MAX).as_deref().and_then(from_header) {
            return Some((v, header));
        }
    }
    let list = Path::new("/var/lib/dpkg/info/nodejs.list");
    let listed = read(list, SMALL_MAX).is_some_and(|l| {
        l.lines()
            .any(|f| Path::new(f) == resolved || Path::new(f) == named)
    });
    let status = Path::new("/var/lib/dpkg/status");
    listed
        .then(|| read(status, STATUS_MAX))
        .flatten()
        .as_deref()
        .and_then(from_dpkg_status)
        .map(|v| (v, status.to_path_buf()))
}

/// The node check: the first `node` on `PATH` and its version, read.
pub fn check() -> Check {
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
    let Some((said, from)) = read_version(&node, &resolved) else {
        return Check::warn(
            NAME,
            format!(
                "{at}: its version is not written beside it (no include/node/node_version.h, no \
                 dpkg record), and the doctor runs no node (a sandboxed command could have put \
                 one on PATH)"
            ),
            "check that `node --version` says v22.12 or newer: srt needs it",
        );
    };
    let read_from = format!("(read from {}; not run)", from.display());
    match version(&said) {
        Some(v) if v >= WANTED => Check::ok(NAME, format!("{at} is {said} {read_from}")),
        Some(_) => Check::warn(
            NAME,
            format!(
                "{at} is {said} {read_from}: srt 0.0.83 asks for Node >= {}.{} (npm warns \
                 EBADENGINE when installing it on an older one)",
                WANTED.0, WANTED.1
            ),
            "install Node.js 22.12 or newer (https://nodejs.org/en/download, or nvm install 22) \
             and put it first on PATH",
        ),
        None => Check::warn(
            NAME,
            format!("{at}: {from:?} says {said:?}, not a version"),
            "check that it is Node.js: srt needs Node.js >= 22.12",
        ),
    }
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

    #[test]
    fn versions_are_read_from_the_install() {
        let header = "#define NODE_MAJOR_VERSION 22\n#define NODE_MINOR_VERSION 12\n\
                      #define NODE_PATCH_VERSION 0\n#define NODE_VERSION_IS_RELEASE 1\n";
        assert_eq!(from_header(header).as_deref(), Some("v22.12.0"));
        assert_eq!(from_header("#define NODE_MAJOR_VERSION 22\n"), None);
        let status = "Package: libc6\nStatus: install ok installed\nVersion: 2.36-9\n\n\
                      Package: nodejs\nStatus: install ok installed\nVersion: \
                      18.19.0+dfsg-6~deb12u2\n\nPackage: zlib1g\nVersion: 1:1.2.13\n";
        assert_eq!(from_dpkg_status(status).as_deref(), Some("v18.19.0"));
        let removed = "Package: nodejs\nStatus: deinstall ok config-files\nVersion: 20.1.0\n";
        assert_eq!(from_dpkg_status(removed), None);
    }
}
