//! The `bwrap` shim, with the command lines a multicall client really
//! builds: the srt library with `seccomp: {applyPath: '/proc/self/fd/3',
//! argv0: 'apply-seccomp'}`, run with `/bin/sh -c` and fd 3 open on a
//! stand-in for the embedded helper that records whether it ran.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use common::{NOBODY, fixture, is_root, probe_results, status_field, stderr, stdout};

/// A folder with `bwrap -> apply-seccomp`, to put first on PATH.
fn shim_dir() -> PathBuf {
    let dir = fixture().dir.join("shim-bin");
    if !dir.join("bwrap").exists() {
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(&fixture().helper, dir.join("bwrap")).unwrap();
    }
    dir
}

fn real_bwrap() -> Option<PathBuf> {
    let found = common::which("bwrap");
    if found.is_none() {
        common::skip("bubblewrap is not installed");
    }
    found
}

fn users() -> Vec<Option<u32>> {
    if is_root() {
        vec![None, Some(NOBODY)]
    } else {
        vec![None]
    }
}

/// A fresh work folder writable by `uid`, holding the stand-in helper.
fn work(uid: Option<u32>) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = fixture().dir.join(format!(
        "shim-work-{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    if let Some(u) = uid {
        std::os::unix::fs::chown(&dir, Some(u), Some(u)).unwrap();
    }
    dir
}

/// Runs `script` the way a multicall client does; returns the output, the
/// wrapped command line, and whether the stand-in ran.
fn multicall(
    uid: Option<u32>,
    network: bool,
    nested: bool,
    script: &str,
) -> (Output, String, bool) {
    let package = common::srt_package().expect("checked by the caller");
    let dir = work(uid);
    let ran = dir.join("stand-in-ran");
    let standin = fixture().script(
        &format!("stand-in-{}", dir.file_name().unwrap().to_string_lossy()),
        &format!("#!/bin/sh\necho ran > {}\nexec \"$@\"\n", ran.display()),
    );
    let config = format!(
        r#"{{"network": {net}, "filesystem": {{"denyRead": [], "allowWrite": ["{d}"], "denyWrite": []}},
            "allowNestedUserNamespaces": {nested},
            "seccomp": {{"applyPath": "/proc/self/fd/3", "argv0": "apply-seccomp"}}}}"#,
        net = if network {
            r#"{"allowedDomains": [], "deniedDomains": []}"#
        } else {
            "{}"
        },
        d = dir.display()
    );
    let js = dir.join("multicall.mjs");
    std::fs::write(&js, common::multicall_script(package)).unwrap();
    let record = dir.join("wrapped.txt");
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", shim_dir().display());
    let mut cmd = Command::new("node");
    cmd.arg(&js)
        .arg(config)
        .arg(script)
        .arg(&standin)
        .arg(&record)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &dir)
        .env("SRT_DEBUG", "1")
        .current_dir(&dir)
        .stdin(Stdio::null());
    if let Some(u) = uid {
        cmd.uid(u).gid(u);
    }
    let out = cmd.output().expect("run node");
    let wrapped = std::fs::read_to_string(&record).unwrap_or_default();
    (out, wrapped, ran.exists())
}

#[test]
fn multicall_command_lines_run_our_helper_instead_of_the_embedded_one() {
    if real_bwrap().is_none() || common::srt_package().is_none() {
        return;
    }
    let Some(probe) = fixture().probe() else {
        return;
    };
    let script = format!(
        "grep -E '^Seccomp_filters:' /proc/self/status; {} unix-stream inet",
        probe.display()
    );
    for uid in users() {
        for network in [true, false] {
            for nested in [false, true] {
                let what = format!("uid {uid:?}, network {network}, nested {nested}");
                let (out, wrapped, stand_in_ran) = multicall(uid, network, nested, &script);
                let (text, err) = (stdout(&out), stderr(&out));
                assert!(
                    wrapped.starts_with("bwrap ")
                        && wrapped.contains("ARGV0=apply-seccomp /proc/self/fd/3 "),
                    "{what}: not the multicall form: {wrapped}"
                );
                assert_eq!(network, wrapped.contains("--unshare-net"), "{what}");
                assert_eq!(out.status.code(), Some(0), "{what}: {text}\n{err}");
                assert!(!stand_in_ran, "{what}: the embedded helper ran");
                assert!(
                    err.contains("apply-seccomp: bwrap shim: real bubblewrap "),
                    "{what}: {err}"
                );
                assert!(err.contains("replaced 1 occurrence(s)"), "{what}: {err}");
                assert!(
                    err.contains("apply-seccomp: entry: user namespace path"),
                    "{what}: {err}"
                );
                let filters = if nested { "1" } else { "2" };
                assert_eq!(
                    status_field(&text, "Seccomp_filters"),
                    Some(filters),
                    "{what}: {text}"
                );
                let got = probe_results(&text);
                assert_eq!(got["unix-stream"], "errno:EPERM", "{what}");
                assert_eq!(got["inet"], "ok", "{what}");
            }
        }
    }
}

fn through_shim(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(shim_dir().join("bwrap"));
    cmd.args(args)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", shim_dir().display()));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn probes_and_unrelated_calls_behave_as_the_real_bwrap() {
    let Some(real) = real_bwrap() else { return };
    for args in [
        &["--version"][..],
        &["--help"][..],
        &[
            "--ro-bind",
            "/",
            "/",
            "--unshare-pid",
            "--",
            "/bin/sh",
            "-c",
            "echo $0 plain; exit 3",
        ][..],
        &["--unshare-user", "--ro-bind", "/", "/", "/bin/true"][..],
        &["--no-such-option"][..],
    ] {
        let want = Command::new(&real).args(args).output().unwrap();
        let got = through_shim(args, &[]);
        assert_eq!(got.status.code(), want.status.code(), "{args:?}");
        assert_eq!(got.stdout, want.stdout, "{args:?}");
        assert_eq!(
            stderr(&got).replace(&*real.to_string_lossy(), "bwrap"),
            stderr(&want).replace(&*real.to_string_lossy(), "bwrap"),
            "{args:?}"
        );
    }
    // With SRT_DEBUG it says it left them alone.
    let out = through_shim(&["--version"], &[("SRT_DEBUG", "1")]);
    assert!(
        stderr(&out).contains("apply-seccomp: bwrap shim: real bubblewrap"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_older_hook_form_is_rewritten_too() {
    if real_bwrap().is_none() {
        return;
    }
    let args = [
        "--setenv",
        "ARGV0",
        "apply-seccomp",
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--unshare-pid",
        "--",
        "/proc/self/fd/3",
        "/bin/sh",
        "-c",
        "grep Seccomp_filters /proc/self/status",
    ];
    let out = through_shim(&args, &[("SRT_DEBUG", "1")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        status_field(&stdout(&out), "Seccomp_filters"),
        Some("2"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn it_never_runs_itself_and_says_when_there_is_no_bwrap() {
    let shim = shim_dir().join("bwrap");
    // PATH holds only the shim, APPLY_SECCOMP_BWRAP names the shim.
    let out = Command::new(&shim)
        .arg("--version")
        .env_clear()
        .env("PATH", shim_dir())
        .env("APPLY_SECCOMP_BWRAP", &shim)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains("apply-seccomp: bwrap shim: APPLY_SECCOMP_BWRAP="),
        "{}",
        stderr(&out)
    );
    if Path::new("/usr/bin/bwrap").exists() {
        return; // the fallback exists here: "none at all" cannot be staged
    }
    let out = Command::new(&shim)
        .arg("--version")
        .env_clear()
        .env("PATH", shim_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains("no real bubblewrap found"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn explicit_option_form_works() {
    if real_bwrap().is_none() {
        return;
    }
    let out = Command::new(&fixture().helper)
        .args(["--bwrap-shim", "--version"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).starts_with("bubblewrap "), "{}", stdout(&out));
}
