//! Fault injection with strace: EINVAL from `unshare(CLONE_NEWUSER)`, the
//! very answer of the kernel race, once, three times in a row, and always;
//! and EPERM, the answer of a policy that forbids user namespaces.
//!
//! Runs as an unprivileged user (strace -u nobody when the tests are root),
//! so the first `unshare(CLONE_NEWPID|CLONE_NEWNS)` genuinely fails with
//! EPERM and call 2 of `unshare` is `unshare(CLONE_NEWUSER)`.

mod common;

use std::process::{Command, Output, Stdio};

use common::{fixture, status_field, stderr, stdout};

const SHOW: &str = "echo COMMAND-RAN; grep -E '^(Seccomp_filters|NoNewPrivs):' /proc/self/status";

fn strace_run(inject: &str) -> Option<Output> {
    let Some(strace) = common::which("strace") else {
        common::skip("strace is not installed");
        return None;
    };
    let mut cmd = Command::new(strace);
    cmd.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=unshare", "-e"]);
    cmd.arg(format!("inject=unshare:{inject}"));
    if common::is_root() {
        cmd.args(["-u", "nobody"]);
    }
    cmd.arg(&fixture().helper).args(["/bin/sh", "-c", SHOW]);
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("SRT_DEBUG", "1")
        .current_dir("/")
        .stdin(Stdio::null());
    Some(cmd.output().expect("run strace"))
}

fn assert_ran_filtered(out: &Output, retries: u32) {
    let (text, err) = (stdout(out), stderr(out));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(text.contains("COMMAND-RAN"), "{text}");
    assert_eq!(status_field(&text, "Seccomp_filters"), Some("2"), "{text}");
    assert_eq!(status_field(&text, "NoNewPrivs"), Some("1"), "{text}");
    assert!(
        err.contains(&format!("unshare(CLONE_NEWUSER) retries: {retries},")),
        "want {retries} retries: {err}"
    );
}

#[test]
fn einval_once_is_retried() {
    if let Some(out) = strace_run("error=EINVAL:when=2") {
        assert_ran_filtered(&out, 1);
    }
}

#[test]
fn einval_three_times_in_a_row_is_retried() {
    if let Some(out) = strace_run("error=EINVAL:when=2..4") {
        assert_ran_filtered(&out, 3);
    }
}

/// The helper exited 125 with `message` and the command never ran.
fn assert_failed_closed(out: &Output, message: &str) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(!stdout(out).contains("COMMAND-RAN"), "the command ran");
    assert!(err.contains(message), "{err}");
    err
}

#[test]
fn einval_forever_fails_closed_as_transient() {
    let Some(out) = strace_run("error=EINVAL:when=2+") else {
        return;
    };
    let err = assert_failed_closed(
        &out,
        "apply-seccomp: unshare(CLONE_NEWUSER): Invalid argument after ",
    );
    assert!(err.contains("transient setup failure"), "{err}");
    assert!(err.contains("not a policy denial"), "{err}");
}

#[test]
fn eperm_fails_closed_with_the_hint() {
    let Some(out) = strace_run("error=EPERM:when=2") else {
        return;
    };
    let err = assert_failed_closed(
        &out,
        "apply-seccomp: unshare(CLONE_NEWUSER): Operation not permitted",
    );
    for cause in [
        "kernel.unprivileged_userns_clone",
        "user.max_user_namespaces",
        "kernel.apparmor_restrict_unprivileged_userns",
        "seccomp profile",
    ] {
        assert!(err.contains(cause), "hint lacks {cause}: {err}");
    }
}
