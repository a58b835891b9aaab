//! Signals reach the command, and nothing outlives the helper.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::{Place, User, fixture};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

fn users() -> Vec<User> {
    common::matrix()
        .into_iter()
        .filter(|(p, _)| *p == Place::Host)
        .map(|(_, u)| u)
        .collect()
}

fn spawn(user: User, script: &str) -> Child {
    common::command(
        Place::Host,
        user,
        &[],
        &fixture().helper,
        &["/bin/sh", "-c", script],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn helper")
}

/// Reads stdout lines until `want` appears; panics at EOF.
fn wait_for_line(lines: &mut impl Iterator<Item = std::io::Result<String>>, want: &str) {
    for line in lines.by_ref() {
        if line.expect("read") == want {
            return;
        }
    }
    panic!("the command never printed {want:?}");
}

/// Waits for the helper, at most 10 s; a helper still running then has
/// failed the test (and is killed, so nothing hangs).
fn wait_bounded(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: the helper did not end within 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(marker) {
                found.push(format!("{name}: {cmdline}"));
            }
        }
    }
    found
}

/// Waits (bounded) until no process carries `marker`; returns survivors.
fn survivors(marker: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A sleep length no other process uses (this test's pid and a counter).
fn marker() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}.{n}", 900_000 + std::process::id() % 90_000)
}

#[test]
fn forwarded_signals_reach_the_command() {
    for user in users() {
        for (signal, name, code) in [
            (Signal::SIGTERM, "TERM", 71),
            (Signal::SIGINT, "INT", 72),
            (Signal::SIGHUP, "HUP", 73),
            (Signal::SIGQUIT, "QUIT", 74),
            (Signal::SIGUSR1, "USR1", 75),
            (Signal::SIGUSR2, "USR2", 76),
        ] {
            let script = format!(
                "trap 'echo got-{name}; exit {code}' {name}; echo ready; \
                 while :; do sleep 0.05; done"
            );
            let mut child = spawn(user, &script);
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            wait_for_line(&mut lines, "ready");
            kill(Pid::from_raw(child.id() as i32), signal).unwrap();
            let status = wait_bounded(&mut child, &format!("{user:?} {name}"));
            assert_eq!(status.code(), Some(code), "{user:?} {name}");
            wait_for_line(&mut lines, &format!("got-{name}"));
        }
    }
}

#[test]
fn sigkill_of_the_helper_leaves_nothing_running() {
    for user in users() {
        let m = marker();
        // A background grandchild, a foreground child, and the shell.
        let script = format!("sleep {m} & sleep {m} & echo ready; sleep {m}; wait");
        let mut child = spawn(user, &script);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        wait_for_line(&mut lines, "ready");
        assert!(
            !processes_with(&m).is_empty(),
            "the command should be running"
        );
        kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
        let status = wait_bounded(&mut child, &format!("{user:?}"));
        assert_eq!(status.code(), None, "killed, not exited");
        let left = survivors(&m);
        assert!(
            left.is_empty(),
            "{user:?}: still running after SIGKILL:\n{}",
            left.join("\n")
        );
    }
}

#[test]
fn orphans_end_with_the_helper() {
    for user in users() {
        let m = marker();
        // The worker exits at once, leaving an orphan for init to reap; the
        // helper then ends with the worker's status and the orphan with it.
        let script = format!("sleep {m} & echo ready; exit 3");
        let mut child = spawn(user, &script);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        wait_for_line(&mut lines, "ready");
        let status = wait_bounded(&mut child, &format!("{user:?}"));
        assert_eq!(status.code(), Some(3), "{user:?}");
        let left = survivors(&m);
        assert!(
            left.is_empty(),
            "{user:?}: orphan outlived the helper:\n{}",
            left.join("\n")
        );
    }
}
