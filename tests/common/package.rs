//! The packages `./package` builds (tests/package.rs installs and runs
//! them; tests/vm.rs runs the arm64 package's binary in the aarch64 VM):
//! built once per test binary, into `target/tmp/dist`, by a nested cargo
//! with its own target folder (the running one holds the usual one's
//! lock).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::which;

/// The version in Cargo.toml, as the packages' names carry it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `git args` in the checkout: its output.
fn git(args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Whether the checkout has changes not committed (`./package` then needs
/// `--allow-dirty`, and the binaries say "modified").
pub fn modified() -> bool {
    !git(&["status", "--porcelain", "--untracked-files=no"]).is_empty()
}

/// The commit checked out, as `--version` names it.
pub fn commit() -> String {
    git(&["rev-parse", "--short=12", "HEAD"]).trim().to_string()
}

/// What this machine lacks to run `./package`, if anything.
fn lacking() -> Option<String> {
    for tool in ["dpkg-deb", "npm", "gzip", "git", "file"] {
        if which(tool).is_none() {
            return Some(format!("{tool} is not installed (./setup installs it)"));
        }
    }
    let sysroot = Command::new(std::env::var_os("RUSTC").unwrap_or("rustc".into()))
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    for target in ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"] {
        if !sysroot.join("lib/rustlib").join(target).is_dir() {
            return Some(format!("no {target} target (rustup target add {target})"));
        }
    }
    None
}

/// The folder `./package` built into, or why this machine cannot (Err:
/// the caller skips). A failure of `./package` itself fails the test.
pub fn dist() -> Result<&'static Path, String> {
    static DIST: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIST.get_or_init(|| {
        if let Some(why) = lacking() {
            return Err(why);
        }
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let out = tmp.join("dist");
        let mut cmd = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("package"));
        cmd.arg("--out").arg(&out);
        if modified() {
            cmd.arg("--allow-dirty");
        }
        let run = cmd
            .env("CARGO_TARGET_DIR", tmp.join("package-target"))
            .env("npm_config_cache", super::target_dir().join("npm-cache"))
            .env_remove("CARGO_BUILD_TARGET")
            .stdin(Stdio::null())
            .output()
            .expect("run ./package");
        assert!(
            run.status.success(),
            "./package: {:?}\n{}{}",
            run.status,
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        );
        Ok(out)
    })
    .as_deref()
    .map_err(Clone::clone)
}

/// The Debian package of `arch` (`amd64`, `arm64`) in `dist`.
pub fn deb(dist: &Path, arch: &str) -> PathBuf {
    dist.join(format!("apply-seccomp_{VERSION}_{arch}.deb"))
}

/// The npm package in `dist`.
pub fn tgz(dist: &Path) -> PathBuf {
    dist.join(format!("apply-seccomp-{VERSION}.tgz"))
}

/// `member` of the Debian package `deb` (`./usr/bin/apply-seccomp`),
/// written by a child process to `to` with `mode` (see `install`).
pub fn extract_deb(deb: &Path, member: &str, to: &Path, mode: u32) {
    let status = Command::new("sh")
        .args([
            "-c",
            "dpkg-deb --fsys-tarfile \"$1\" | tar -xO \"$2\" > \"$3\" && chmod \"$4\" \"$3\"",
            "sh",
        ])
        .arg(deb)
        .arg(member)
        .arg(to)
        .arg(format!("{mode:o}"))
        .status()
        .expect("dpkg-deb");
    assert!(status.success(), "{member} of {}", deb.display());
}

/// `member` of the npm package `tgz` (`package/native/x86_64/apply-seccomp`),
/// the same way.
pub fn extract_tgz(tgz: &Path, member: &str, to: &Path, mode: u32) {
    let status = Command::new("sh")
        .args([
            "-c",
            "tar -xzOf \"$1\" \"$2\" > \"$3\" && chmod \"$4\" \"$3\"",
            "sh",
        ])
        .arg(tgz)
        .arg(member)
        .arg(to)
        .arg(format!("{mode:o}"))
        .status()
        .expect("tar");
    assert!(status.success(), "{member} of {}", tgz.display());
}
