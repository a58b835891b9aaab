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

/// Which install `binary` (canonical) is.
pub fn detect(binary: &Path) -> Install {
    if binary == Path::new(DEBIAN_BINARY)
        && std::fs::read_to_string(DEBIAN_LIST).is_ok_and(|l| l.lines().any(|f| f == DEBIAN_BINARY))
    {
        return Install::Debian;
    }
    let up = |n: usize| binary.ancestors().nth(n);
    if let Some(package) =
        up(3).filter(|_| up(2).and_then(Path::file_name) == Some("native".as_ref()))
    {
        let named = std::fs::read_to_string(package.join("package.json"))
            .ok()
            .and_then(|text| crate::json::parse(&text).ok())
            .is_some_and(|v| v["name"].as_str() == Some("apply-seccomp"));
        if named {
            return Install::Npm(package.to_path_buf());
        }
    }
    if let Some(home) = up(2).filter(|_| up(1).and_then(Path::file_name) == Some("bin".as_ref())) {
        let listed = |file: &str| {
            std::fs::read_to_string(home.join(file)).is_ok_and(|t| t.contains("apply-seccomp "))
        };
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
