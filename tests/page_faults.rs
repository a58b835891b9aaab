//! The gate on a run's page faults (issue 25): the minor page faults of
//! the helper's processes (stub, init, worker) on a command that is not
//! found, so that no command's own faults count, median of [`RUNS`] runs,
//! are at most the number written in [`LIMITS`] for each case. A change
//! that makes a run touch more of the binary or of memory raises it; one
//! that raises it on purpose changes the number here in the same commit,
//! with the reason in its message.
//!
//! One run's count moves by a few pages (29-34 on the host as root here;
//! the kernel maps whole page-cache folios and fault-around windows, and
//! the layout moves with ASLR), but the median of 41 moves by one at most:
//! 31-32 in five readings (and, counted with `/usr/bin/time`, which adds
//! its own child's, 50 in eleven, with the binary freshly written, dropped
//! from the page cache or left in it, on ext4 and on tmpfs). The limits
//! leave two pages above the highest median seen. Counted for the release build the project
//! ships (musl, static-pie); the glibc fallback of CI is another binary,
//! with other numbers, and is not gated.
//!
//! Counted with `getrusage(RUSAGE_CHILDREN)` around each run: a child's
//! figures include those of the descendants it reaped (init and the
//! worker), and this file holds one test, so no other test's children
//! are counted.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{NOBODY, User, fixture, is_root};
use nix::sys::resource::{UsageWho, getrusage};

/// Readings per case; the median is gated.
const RUNS: usize = 41;

/// (case, most minor page faults of the helper's processes, median).
// Measured at 59e4cdb, five readings each: host root 31-32, uid 65534
// 41-42 (the user namespace's path, and std starts a child that changes
// its uid with fork and exec, whose copy-on-write faults count; as root
// it uses posix_spawn). The same count of the builds before: 30cd3ee 27,
// 188c175 31; the C helper of srt 0.0.83 61.
// 2026-12-05: the own-sockets policy's listener (b076a5e, 771f7ba) left
// the medians at the limits: 0b7da3c, before the refusal report, read
// 34 and 45 here; with the report (291fbeb-8a08709) seven readings gave
// 33-34 and 43-45, and one CI run failed at 45 > 44. Two pages above the
// highest median seen again.
// 2026-12-06: uid 65534's median read 45-48 in twelve readings of
// c86c4e8 and after (c86c4e8 itself 47, at the limit; one CI run of
// 169388c failed at 48 > 47 with a call more on the run path, since
// removed), host root 34-36: the spread, not a new page. One above the
// highest median seen: 37 and 49 (issue 56 is to lower them).
// Issue 56: the shipped build is laid out by link/run-order.txt at last
// (the file had listed the names of a build with its symbols kept, whose
// hashes differ: 103 of 538 matched the shipped build's); a run maps 58
// pages of text instead of 154. Four readings: 31 and 43-44. One above
// the highest median seen: 32 and 45.
// Issue 57: the task cap on every run (the stub's uname and prlimit64,
// init's pid_max write and its count of what is left) touches a page or
// two more: root's median read 32-33 in four readings (31 before), uid
// 65534's 44-45 (43-44); one CI run failed at 33 > 32. One above the
// highest median seen: 34 and 46.
const LIMITS: [(&str, User, i64); 2] = [
    ("host root", User::Root, 34),
    ("host uid 65534", User::Unprivileged, 46),
];

/// The release build, copied where uid 65534 can run it (as
/// tests/syscalls.rs builds it: a debug build is another binary).
fn release_helper() -> PathBuf {
    let built = if cfg!(debug_assertions) {
        common::release_build(common::RELEASE, &[], "apply-seccomp-release")
    } else {
        fixture().helper.clone()
    };
    let dir = common::fresh_folder("page-faults");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let copy = dir.join("apply-seccomp");
    common::install(&built, &copy, 0o755);
    copy
}

/// Writes `binary` back and drops its pages from the page cache, so that
/// the runs map it as they would an installed binary (the bench does the
/// same: benches/compare.rs).
fn evict(binary: &Path) {
    use nix::fcntl::{PosixFadviseAdvice, posix_fadvise};
    let f = std::fs::File::open(binary).unwrap();
    f.sync_all().unwrap();
    posix_fadvise(&f, 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED).unwrap();
}

/// The minor faults of one run of `helper` on a missing command.
fn faults_once(helper: &Path, user: User) -> i64 {
    let mut cmd = Command::new(helper);
    cmd.arg("/nonexistent/command")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if user == User::Unprivileged && is_root() {
        cmd.uid(NOBODY).gid(NOBODY);
    }
    let before = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap();
    let status = cmd.status().expect("run the helper");
    let after = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap();
    // 127: the command was not found, after the whole set-up.
    assert_eq!(status.code(), Some(127), "{status:?}");
    after.minor_page_faults() - before.minor_page_faults()
}

#[test]
fn a_run_takes_no_more_page_faults_than_written() {
    if !cfg!(target_env = "musl") {
        eprintln!("not the musl build: its page faults are not gated");
        return;
    }
    let helper = release_helper();
    let mut over = Vec::new();
    for (name, user, limit) in LIMITS {
        if user == User::Root && !is_root() {
            common::skip(&format!("{name}: not root"));
            continue;
        }
        evict(&helper);
        let mut counts: Vec<i64> = (0..RUNS).map(|_| faults_once(&helper, user)).collect();
        counts.sort_unstable();
        let median = counts[RUNS / 2];
        eprintln!("{name}: median {median} (limit {limit}), all {counts:?}");
        if median > limit {
            over.push(format!("{name}: {median} > {limit}"));
        }
    }
    assert!(over.is_empty(), "more page faults than written: {over:?}");
}
