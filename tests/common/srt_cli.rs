//! The real srt CLI as a client runs it: a fresh git folder and a home
//! folder of the user's, `srt -s SETTINGS -c SCRIPT` in a folder, and what
//! a folder holds once the holders of the runs that ended are done
//! (tests/keep.rs, tests/host.rs).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{User, fixture, uid_of};

/// A fresh git folder owned by `user`, every deny path of srt's absent.
pub fn project(user: User, tag: &str) -> PathBuf {
    let dir = super::fresh_folder(&format!("keep-{tag}-{user:?}"));
    assert!(
        Command::new("git")
            .args(["init", "-q"])
            .arg(&dir)
            .status()
            .unwrap()
            .success()
    );
    if let Some(u) = uid_of(user) {
        assert!(
            Command::new("chown")
                .arg("-R")
                .arg(format!("{u}:{u}"))
                .arg(&dir)
                .status()
                .unwrap()
                .success()
        );
    }
    dir
}

/// A home folder of `user`'s, outside every project (srt keeps files of
/// its own under `~/.claude`).
pub fn home(user: User) -> PathBuf {
    let dir = fixture().dir.join(format!("keep-home-{user:?}"));
    if std::fs::create_dir(&dir).is_ok() {
        if let Some(u) = uid_of(user) {
            std::os::unix::fs::chown(&dir, Some(u), Some(u)).unwrap();
        }
    }
    dir
}

/// `srt -s SETTINGS -c SCRIPT` as `user` in `dir`.
pub fn srt(user: User, dir: &Path, settings: &Path, script: &str) -> Command {
    let package = super::srt_package().expect("checked by the caller");
    let mut cmd = Command::new(package.join("node_modules/.bin/srt"));
    cmd.arg("-s")
        .arg(settings)
        .arg("-c")
        .arg(script)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home(user))
        .env("TMPDIR", super::client_tmp())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(u) = uid_of(user) {
        cmd.uid(u).gid(u);
    }
    cmd
}

/// What is in `dir` but git's own folder.
pub fn left(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".git")
        .collect();
    names.sort();
    names
}

/// What is in `dir` once the holders of the runs that ended are done (a
/// run's placeholders are removed by a process of the shim's when its
/// bubblewrap ends, a moment after the client sees it end): polled for up
/// to 10 s until it is `want`.
pub fn settled_to(dir: &Path, want: &[&str]) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = left(dir);
        if now == want || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn settled(dir: &Path) -> Vec<String> {
    settled_to(dir, &[])
}
