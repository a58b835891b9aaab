//! Which install this binary is (`--version`, the doctor's `install`
//! check), and the root-owned shim a system-wide install brings, which
//! `--setup` points the clients at instead of making a link of the user's.
//!
//! The packages (`./package`, [setup.md](../docs/setup.md)): the Debian
//! package puts the binary at `/usr/bin/apply-seccomp` and the shim, a
//! link named `bwrap` to it, alone in `/usr/lib/apply-seccomp`, all
//! root's; the npm package puts each architecture's binary at
//! `native/<arch>/apply-seccomp` under its folder, beside its
//! `package.json`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// `0.1.0 (commit 0123456789ab)`: the version and the commit built
/// (build.rs; `, modified` when built from files that were not the
/// commit's).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("BUILD_COMMIT"),
    ")"
);

/// What `--version` prints: one literal, so that the doctor can tell a
/// build of this helper from its bytes, never running it
/// (doctor/clients.rs).
pub const VERSION_LINE: &str = concat!(
    "apply-seccomp ",
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("BUILD_COMMIT"),
    ")\n"
);

/// The version a binary's bytes carry (`0.1.0 (commit 0123456789ab)`),
/// if it is a build of this helper since issue 54's.
pub fn version_in(bytes: &[u8]) -> Option<String> {
    const HEAD: &[u8] = b"apply-seccomp ";
    let mut from = 0;
    while let Some(at) = find(&bytes[from..], HEAD) {
        let start = from + at + HEAD.len();
        let rest = &bytes[start..bytes.len().min(start + 64)];
        if let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&rest[..end]);
            let (number, commit) = line.split_once(" (commit ").unwrap_or(("", ""));
            let good_number =
                !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit() || b == b'.');
            if good_number && commit.ends_with(')') {
                return Some(line.into_owned());
            }
        }
        from = start;
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The Debian package's shim.
pub const SYSTEM_SHIM: &str = "/usr/lib/apply-seccomp/bwrap";

/// Where the Debian package's binary is, and dpkg's list of its files.
const DEBIAN_BINARY: &str = "/usr/bin/apply-seccomp";
const DEBIAN_LIST: &str = "/var/lib/dpkg/info/apply-seccomp.list";

/// Where the running binary came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Install {
    /// The Debian package (dpkg lists the binary as its file).
    Debian,
    /// The npm package whose folder (`package.json`) is this.
    Npm(PathBuf),
    /// `cargo install` (the binary in a cargo home's `bin`).
    Cargo,
    /// A build in a source tree's `target` folder.
    Build(PathBuf),
    /// Anything else: a copy put there by hand.
    Other,
}

impl Install {
    /// In words, for the doctor.
    pub fn describe(&self, binary: &Path) -> String {
        let at = binary.display();
        match self {
            Install::Debian => format!(
                "the Debian package apply-seccomp {VERSION}: {at}, with the root-owned shim {SYSTEM_SHIM}"
            ),
            Install::Npm(dir) => format!(
                "the npm package apply-seccomp {VERSION} in {}: {at}, the binary itself (its `bin` entry, \
                 a shell launcher, is for your shell, never for the clients)",
                dir.display()
            ),
            Install::Cargo => format!("cargo install, {VERSION}: {at}"),
            Install::Build(tree) => format!(
                "a build in the source tree {}, {VERSION}: {at}",
                tree.display()
            ),
            Install::Other => format!("a copy of {VERSION} at {at}, in no package"),
        }
    }
}

/// The most install detection reads of one file: dpkg's list of this
/// package's files and a `package.json` are a few KiB, cargo's lists of
/// installs grow with them.
const READ_AT_MOST: u64 = 4 << 20;

/// The text of a file install detection reads, or `None`: a regular file
/// of at most [`READ_AT_MOST`] bytes (settings.rs). A project-local npm
/// install's `package.json` lies where a sandboxed command may write: a
/// FIFO there, or a link to `/dev/zero`, must not hang the doctor.
fn read_small(path: &Path) -> Option<String> {
    crate::settings::read_at_most(path, READ_AT_MOST)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Which install `binary` (canonical) is.
pub fn detect(binary: &Path) -> Install {
    if binary == Path::new(DEBIAN_BINARY)
        && read_small(Path::new(DEBIAN_LIST)).is_some_and(|l| l.lines().any(|f| f == DEBIAN_BINARY))
    {
        return Install::Debian;
    }
    let up = |n: usize| binary.ancestors().nth(n);
    if let Some(package) =
        up(3).filter(|_| up(2).and_then(Path::file_name) == Some("native".as_ref()))
    {
        let named = read_small(&package.join("package.json"))
            .and_then(|text| crate::json::parse(&text).ok())
            .is_some_and(|v| v["name"].as_str() == Some("apply-seccomp"));
        if named {
            return Install::Npm(package.to_path_buf());
        }
    }
    if let Some(home) = up(2).filter(|_| up(1).and_then(Path::file_name) == Some("bin".as_ref())) {
        let listed =
            |file: &str| read_small(&home.join(file)).is_some_and(|t| t.contains("apply-seccomp "));
        if listed(".crates2.json") || listed(".crates.toml") {
            return Install::Cargo;
        }
    }
    for dir in binary.ancestors() {
        if dir.file_name() == Some("target".as_ref()) {
            if let Some(tree) = dir.parent().filter(|t| t.join("Cargo.toml").is_file()) {
                return Install::Build(tree.to_path_buf());
            }
        }
    }
    Install::Other
}

/// The Debian package's shim, if it leads to `binary` (canonical) and
/// nobody but root can replace it or a folder on its way.
pub fn system_shim(binary: &Path) -> Option<PathBuf> {
    let shim = Path::new(SYSTEM_SHIM);
    let link = std::fs::symlink_metadata(shim).ok()?;
    if !link.file_type().is_symlink() || link.uid() != 0 {
        return None;
    }
    if std::fs::canonicalize(shim).ok()? != binary {
        return None;
    }
    let root_only = |dir: &Path| {
        std::fs::symlink_metadata(dir)
            .is_ok_and(|m| m.is_dir() && m.uid() == 0 && m.mode() & 0o022 == 0)
    };
    shim.ancestors()
        .skip(1)
        .all(root_only)
        .then(|| shim.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_names_the_commit() {
        let commit = env!("BUILD_COMMIT");
        assert!(VERSION.starts_with(env!("CARGO_PKG_VERSION")));
        assert!(VERSION.ends_with(&format!("(commit {commit})")));
        let hex = commit.split(',').next().unwrap();
        assert!(
            hex == "unknown" || (hex.len() == 12 && hex.bytes().all(|b| b.is_ascii_hexdigit())),
            "{commit}"
        );
    }

    #[test]
    fn a_build_is_told_by_its_version_line() {
        assert_eq!(VERSION_LINE, format!("apply-seccomp {VERSION}\n"));
        let mut bytes = b"\x7fELF 20apply-seccomp: ".to_vec();
        bytes.extend_from_slice(VERSION_LINE.as_bytes());
        bytes.extend_from_slice(b"more");
        assert_eq!(version_in(&bytes).as_deref(), Some(VERSION));
        assert_eq!(version_in(b"apply-seccomp 1.0 (commit x"), None);
        assert_eq!(version_in(b"srt's helper"), None);
        // This binary's own bytes.
        let me = std::fs::read("/proc/self/exe").unwrap();
        assert!(find(&me, VERSION_LINE.as_bytes()).is_some());
    }

    #[test]
    fn installs_told_apart_by_their_folders() {
        let dir = std::env::temp_dir().join(format!("install-test-{}", std::process::id()));
        let npm = dir.join("lib/node_modules/apply-seccomp");
        std::fs::create_dir_all(npm.join("native/x86_64")).unwrap();
        std::fs::write(npm.join("package.json"), "{\"name\": \"apply-seccomp\"}").unwrap();
        let bin = npm.join("native/x86_64/apply-seccomp");
        assert_eq!(detect(&bin), Install::Npm(npm.clone()));
        std::fs::write(npm.join("package.json"), "{\"name\": \"other\"}").unwrap();
        assert_eq!(detect(&bin), Install::Other);
        let cargo = dir.join("cargo");
        std::fs::create_dir_all(cargo.join("bin")).unwrap();
        std::fs::write(
            cargo.join(".crates2.json"),
            "{\"installs\":{\"apply-seccomp 0.1.0 (path+file:///x)\":{}}}",
        )
        .unwrap();
        assert_eq!(detect(&cargo.join("bin/apply-seccomp")), Install::Cargo);
        let tree = dir.join("tree");
        std::fs::create_dir_all(tree.join("target/release")).unwrap();
        std::fs::write(tree.join("Cargo.toml"), "").unwrap();
        assert_eq!(
            detect(&tree.join("target/release/apply-seccomp")),
            Install::Build(tree.clone())
        );
        assert_eq!(detect(Path::new("/opt/x/apply-seccomp")), Install::Other);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
