//! `apply-seccomp --doctor`: each verdict from a real situation, never a
//! mock: root and uid 65534 on the host and inside bubblewrap; under a
//! seccomp filter that refuses `unshare` (the doctor run through this
//! helper); `user.max_user_namespaces=0` in a user namespace; no bubblewrap
//! on PATH; a bubblewrap that never answers (the time bound, and nothing
//! left running); srt settings files whose `applyPath` is missing,
//! relative, inside an `allowWrite` folder, or right; the shim first on
//! PATH and not. The JSON is read with serde_json, as a tool would.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Place, User, fixture, is_root, which};
use serde_json::Value;

/// One run of the doctor (`--json`), read.
struct Doctor {
    status: i32,
    report: Value,
    stderr: String,
}

impl Doctor {
    fn check(&self, name: &str) -> &Value {
        self.report["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name}: {}", self.report))
    }

    fn status_of(&self, name: &str) -> &str {
        self.check(name)["status"].as_str().unwrap()
    }

    fn found(&self, name: &str) -> &str {
        self.check(name)["found"].as_str().unwrap()
    }

    fn fix(&self, name: &str) -> &str {
        self.check(name)["fix"].as_str().unwrap_or("")
    }

    /// Panics with the whole report unless `name` has `status` and its
    /// found text holds `want`.
    fn expect(&self, name: &str, status: &str, want: &str) {
        assert_eq!(self.status_of(name), status, "{name}: {}", self.report);
        assert!(
            self.found(name).contains(want),
            "{name} lacks {want:?}: {}",
            self.report
        );
    }
}

/// A home folder for `user` with nothing in it (no srt settings).
fn empty_home(tag: &str) -> PathBuf {
    let home = fixture().dir.join(format!("home-{tag}"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
    home
}

fn read(out: std::process::Output) -> Doctor {
    let text = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {text}\n{}", common::stderr(&out)));
    let status = out.status.code().expect("an exit status");
    // The exit status and the verdict agree.
    assert_eq!(report["can_run"] == true, status == 0, "{report}");
    Doctor {
        status,
        report,
        stderr: common::stderr(&out),
    }
}

/// `apply-seccomp --doctor --json args...` at `place` as `user`, with a
/// clean environment (PATH, an empty HOME) plus `env`.
fn doctor(place: Place, user: User, env: &[(&str, &str)], args: &[&str]) -> Doctor {
    let home = empty_home(&format!("{place:?}-{user:?}"));
    let mut all = vec![("HOME", home.to_str().unwrap())];
    all.extend(env);
    let mut words = vec!["--doctor", "--json"];
    words.extend(args);
    read(
        common::command(place, user, &all, &fixture().helper, &words)
            .output()
            .expect("run the doctor"),
    )
}

fn bwrap_present() -> bool {
    which("bwrap").is_some() || common::skip("bubblewrap (bwrap) is not installed")
}

#[test]
fn a_sandbox_starts_here_as_root_and_as_nobody_on_the_host() {
    if !bwrap_present() {
        return;
    }
    for &(place, user) in common::matrix().iter().filter(|(p, _)| *p == Place::Host) {
        let d = doctor(place, user, &[], &[]);
        let ctx = format!("{user:?}: {}", d.report);
        assert_eq!(d.status, 0, "{ctx}\n{}", d.stderr);
        assert_eq!(d.report["way_in"], "namespaces", "{ctx}");
        d.expect("user namespaces", "ok", "the helper's entry works");
        let entry = if user == User::Root {
            "directly (this user holds CAP_SYS_ADMIN)"
        } else {
            "a new user namespace"
        };
        d.expect("user namespaces", "ok", entry);
        for run in ["helper run", "bubblewrap run"] {
            d.expect(
                run,
                "ok",
                "2 filters of the helper, its own AF_UNIX stream sockets allowed, datagram ones \
                 refused (EPERM), NoNewPrivs 1, PID 2",
            );
        }
        // srt's options, with --cap-add CAP_SETFCAP for root only.
        assert_eq!(
            d.found("bubblewrap run").contains("--cap-add CAP_SETFCAP"),
            user == User::Root,
            "{ctx}"
        );
        d.expect("bubblewrap", "ok", "(first on PATH), bubblewrap ");
        d.expect("this process", "ok", "no seccomp filter");
        // No settings file, no shim: warnings, each with its one fix.
        d.expect("srt", "warning", "no settings file at");
        assert!(d.fix("srt").ends_with(" --setup --srt"), "{ctx}");
        d.expect("claude code", "warning", "not this binary");
        assert!(d.fix("claude code").contains("ln -sf"), "{ctx}");
    }
}

#[test]
fn inside_bubblewrap_the_entry_works_and_a_nested_bubblewrap_is_judged_as_it_runs() {
    if !bwrap_present() {
        return;
    }
    for &(place, user) in common::matrix().iter().filter(|(p, _)| *p == Place::Bwrap) {
        let d = doctor(place, user, &[], &[]);
        let ctx = format!("{user:?}: {}", d.report);
        d.expect("environment", "ok", "a bubblewrap sandbox (PID 1 is bwrap)");
        d.expect("user namespaces", "ok", "a new user namespace");
        d.expect("helper run", "ok", "2 filters of the helper");
        // Whether bubblewrap starts inside bubblewrap depends on the
        // kernel's view of /proc there: ask it directly, then compare.
        let mut nested = vec!["bwrap"];
        nested.extend(common::BWRAP_OPTIONS);
        if user == User::Root {
            nested.extend(["--cap-add", "CAP_SETFCAP"]);
        }
        nested.extend(["--", "true"]);
        let env_bin = which("env").expect("env");
        let out = common::command(place, user, &[], &env_bin, &nested)
            .output()
            .expect("nested bwrap");
        let works = out.status.success();
        assert_eq!(
            d.status_of("bubblewrap run") == "ok",
            works,
            "{ctx}\nnested bwrap directly: {}",
            common::stderr(&out)
        );
        assert_eq!(d.status == 0, works, "{ctx}");
        if !works {
            assert!(
                d.fix("bubblewrap run").contains("inside a sandbox"),
                "{ctx}"
            );
        }
    }
}

#[test]
fn under_a_filter_that_refuses_unshare_it_names_the_filter() {
    if !bwrap_present() {
        return;
    }
    for &(place, user) in &common::matrix() {
        // The doctor as the command of this helper: its namespaces filter
        // refuses unshare and clone with new namespaces.
        let home = empty_home("filtered");
        let h = fixture().helper.to_str().unwrap();
        let out = common::command(
            place,
            user,
            &[("HOME", home.to_str().unwrap())],
            &fixture().helper,
            &[h, "--doctor", "--json"],
        )
        .output()
        .expect("run");
        let d = read(out);
        let ctx = format!("{place:?} {user:?}: {}", d.report);
        assert_eq!(d.status, 1, "{ctx}");
        assert_eq!(d.report["way_in"], Value::Null, "{ctx}");
        d.expect("this process", "warning", "already runs under seccomp");
        // Under bubblewrap the helper's own /proc mount may be refused
        // (and tolerated: root's case), so the /proc seen can be
        // bubblewrap's.
        d.expect(
            "environment",
            "ok",
            match place {
                Place::Host => "a sandbox of this helper (PID 1 is apply-seccomp)",
                Place::Bwrap => "(PID 1 is ",
            },
        );
        assert_eq!(d.status_of("user namespaces"), "fail", "{ctx}");
        for want in [
            "this process already runs under a seccomp filter",
            "container whose profile refuses user namespaces",
        ] {
            assert!(d.fix("user namespaces").contains(want), "{want}: {ctx}");
        }
        d.expect("helper run", "warning", "not tried");
        assert_eq!(d.status_of("bubblewrap run"), "fail", "{ctx}");
    }
}

#[test]
fn a_namespace_limit_of_zero_is_named_with_its_sysctl() {
    let (Some(unshare), Some(setpriv)) = (which("unshare"), which("setpriv")) else {
        common::skip("unshare and setpriv (util-linux) are needed");
        return;
    };
    for &(place, user) in common::matrix().iter().filter(|(p, _)| *p == Place::Host) {
        // In a user namespace of its own, the limit set to 0; then the
        // doctor with no capability (no root privileges on exec either),
        // so the helper's entry must make a user namespace, and cannot.
        let script = format!(
            "echo 0 > /proc/sys/user/max_user_namespaces && exec {} --securebits \
             +noroot,+noroot_locked --bounding-set -all --inh-caps -all {} --doctor --json",
            setpriv.display(),
            fixture().helper.display()
        );
        let home = empty_home("limit");
        let out = common::command(
            place,
            user,
            &[("HOME", home.to_str().unwrap())],
            &unshare,
            &["--user", "--map-root-user", "/bin/sh", "-c", &script],
        )
        .output()
        .expect("run");
        let d = read(out);
        let ctx = format!("{user:?}: {}", d.report);
        assert_eq!(d.status, 1, "{ctx}\n{}", d.stderr);
        d.expect("user namespaces", "fail", "No space left on device");
        // Every fix names the setting, the value where it was read, and
        // what to set: the entry's and bubblewrap's (whose own message
        // says only ENOSPC).
        let checks: &[&str] = if which("bwrap").is_some() {
            &["user namespaces", "bubblewrap run"]
        } else {
            &["user namespaces"]
        };
        for &check in checks {
            let fix = d.fix(check);
            assert!(
                fix.contains(
                    "user.max_user_namespaces is 0 (read from \
                     /proc/sys/user/max_user_namespaces): set it above 0"
                ),
                "{check}: {ctx}"
            );
            assert!(
                fix.contains("sysctl -w user.max_user_namespaces="),
                "{check}: {ctx}"
            );
        }
        if checks.len() == 2 {
            assert_eq!(d.status_of("bubblewrap run"), "fail", "{ctx}");
        }
    }
}

#[test]
fn the_einval_race_is_called_transient() {
    let Some(strace) = which("strace") else {
        common::skip("strace is not installed");
        return;
    };
    // The entry child's user namespace unshare (its second unshare, after
    // the direct one's EPERM) answers EINVAL every time, as the kernel does
    // while it still counts a thread that has just exited.
    let home = empty_home("einval");
    let mut cmd = Command::new(strace);
    cmd.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=unshare", "-e"])
        .arg("inject=unshare:error=EINVAL:when=2+");
    if is_root() {
        cmd.args(["-u", "nobody"]);
    }
    cmd.arg(&fixture().helper)
        .args(["--doctor", "--json"])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &home)
        .current_dir("/");
    let d = read(cmd.output().expect("run strace"));
    assert_eq!(d.status, 1, "{}", d.report);
    d.expect(
        "user namespaces",
        "fail",
        "unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID): Invalid argument after 12 tries",
    );
    assert!(
        d.fix("user namespaces")
            .starts_with("transient: the kernel still counted another thread"),
        "{}",
        d.report
    );
}

#[test]
fn without_bubblewrap_on_path_it_cannot_run() {
    for &(place, user) in common::matrix().iter().filter(|(p, _)| *p == Place::Host) {
        let d = doctor(place, user, &[("PATH", "/nonexistent")], &[]);
        let ctx = format!("{user:?}: {}", d.report);
        assert_eq!(d.status, 1, "{ctx}");
        d.expect("bubblewrap", "fail", "no bwrap on PATH");
        assert!(
            d.fix("bubblewrap").contains("apt-get install bubblewrap"),
            "{ctx}"
        );
        // The helper itself still works here.
        d.expect("helper run", "ok", "2 filters");
    }
}

/// A bubblewrap that never answers: each step is cut off at its limit
/// and nothing it started is left. The doctor runs only a bubblewrap no
/// sandboxed command could have put there (trust.rs), so the fake lies in
/// a root-owned folder bound over `/usr/local/bin` in a mount namespace of
/// the test's (root only).
#[test]
fn a_step_that_never_answers_is_cut_off_and_leaves_nothing_running() {
    if !common::is_root() {
        common::skip("needs root: a hung bubblewrap bound over /usr/local/bin");
        return;
    }
    let dir = fixture().dir.join("hung-bwrap");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let written = fixture().dir.join("hung-pids");
    std::fs::create_dir_all(&written).unwrap();
    std::fs::set_permissions(&written, std::fs::Permissions::from_mode(0o777)).unwrap();
    let pids = written.join("pids");
    // A `bwrap` that never answers, with a child of its own.
    let src = written.join("bwrap.src");
    std::fs::write(
        &src,
        format!(
            "#!/bin/sh\nsleep 1000 &\necho $! >> {p}\necho $$ >> {p}\nwait\n",
            p = pids.display()
        ),
    )
    .unwrap();
    common::install(&src, &dir.join("bwrap"), 0o755);
    let bind = format!(
        "mount --bind {} /usr/local/bin && exec \"$@\"",
        dir.display()
    );
    let home = empty_home("hung");
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o777)).unwrap();
    for user in common::users() {
        let _ = std::fs::remove_file(&pids);
        let started = std::time::Instant::now();
        let d = read(common::in_mount_ns(
            &bind,
            user,
            &home,
            &[
                ("PATH", "/usr/local/bin:/usr/bin:/bin"),
                ("APPLY_SECCOMP_DOCTOR_LIMIT", "1"),
            ],
            &[&fixture().helper.to_string_lossy(), "--doctor", "--json"],
        ));
        let took = started.elapsed();
        let ctx = format!("{user:?}: {}", d.report);
        d.expect(
            "bubblewrap",
            "warning",
            "--version: no answer in 1 s (killed)",
        );
        d.expect("bubblewrap run", "fail", "no answer in 1 s (killed)");
        assert_eq!(d.status, 1, "{ctx}");
        // Nothing it started is left: every pid the fake wrote is gone.
        let written = std::fs::read_to_string(&pids).unwrap_or_default();
        assert!(written.lines().count() >= 4, "{written:?}");
        // A process killed with SIGKILL is gone once its exit completes,
        // which under load takes some milliseconds: 2 s at most.
        for pid in written.lines() {
            let gone = || {
                !Path::new("/proc").join(pid.trim()).exists()
                    || std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
                        .is_ok_and(|s| s.contains(") Z "))
            };
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            while !gone() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            assert!(gone(), "pid {pid} left running ({ctx})");
        }
        // Bounded: two one-second steps, not the default 5 + 20 s. Not a
        // speed bound: the defaults would take 25 s at least, the limits
        // about 5 s here, and a loaded CI machine took 16.6 s once with
        // the other doctor tests running beside it.
        assert!(took.as_secs() < 24, "took {took:?}");
    }
}

/// A settings file that is no regular file, or too large: a FIFO (no
/// writer ever comes), `/dev/zero` (endless), 2 MiB of spaces. The doctor
/// answers at once that it did not read it, and why; named with
/// `--srt-settings` and at the default `~/.srt-settings.json`. Before the
/// fix the FIFO blocked it forever and `/dev/zero` was read until memory
/// ran out: the time bound here kills it and fails.
#[test]
fn a_settings_file_that_cannot_be_read_safely_is_refused_at_once() {
    let fifo = fixture().dir.join("srt-fifo.json");
    let _ = std::fs::remove_file(&fifo);
    assert!(
        Command::new("mkfifo")
            .arg("-m")
            .arg("0666")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let big = settings("srt-big.json", &" ".repeat(2 << 20));
    let cases = [
        (fifo.clone(), "a FIFO, not a regular file: not read"),
        (
            PathBuf::from("/dev/zero"),
            "a character device, not a regular file: not read",
        ),
        (
            big,
            "2097152 bytes, larger than such a file can be (1048576 bytes): not read",
        ),
    ];
    for &(place, user) in common::matrix().iter().filter(|(p, _)| *p == Place::Host) {
        for (file, want) in &cases {
            let ctx = format!("{user:?} {}", file.display());
            // Named on the command line, and as the default file.
            let home = empty_home(&format!("odd-{user:?}"));
            let default = home.join(".srt-settings.json");
            let _ = std::fs::remove_file(&default);
            std::os::unix::fs::symlink(file, &default).unwrap();
            for args in [&["--srt-settings", file.to_str().unwrap()][..], &[][..]] {
                let mut words = vec!["--doctor", "--json"];
                words.extend(args);
                let child = common::command(
                    place,
                    user,
                    &[("HOME", home.to_str().unwrap())],
                    &fixture().helper,
                    &words,
                );
                let d = read(bounded(child, &format!("{ctx} {args:?}")));
                d.expect("srt", "fail", want);
                let named = if args.is_empty() { &default } else { file };
                assert!(
                    d.found("srt").starts_with(&*named.to_string_lossy()),
                    "{ctx}: {}",
                    d.report
                );
                assert!(d.fix("srt").contains("regular file"), "{ctx}: {}", d.report);
            }
        }
    }
}

/// Runs `cmd` (the doctor, or `--setup`) for at most 60 s: one still
/// running then hung on a file, and fails the test.
fn bounded(mut cmd: Command, what: &str) -> std::process::Output {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: it hung on a file");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Install detection reads bounded regular files only (issue 54): a
/// project-local npm install's `package.json`, and cargo's lists beside a
/// `bin` folder, lie where sandboxed commands may write. A FIFO there (no
/// writer ever comes) or a link to `/dev/zero` (endless) must not hang the
/// doctor or `--setup`; the install is then "a copy". Before, the FIFO
/// blocked both forever (the time bound kills them and fails).
#[test]
fn install_detection_never_hangs_on_a_planted_file() {
    let arch = std::env::consts::ARCH;
    for (layout, planted) in [
        (
            format!("node_modules/apply-seccomp/native/{arch}"),
            "package.json",
        ),
        ("cargo/bin".to_string(), ".crates2.json"),
    ] {
        for kind in ["fifo", "zero"] {
            let root = common::fresh_folder("planted-install");
            let bin_dir = root.join(&layout);
            std::fs::create_dir_all(&bin_dir).unwrap();
            let binary = bin_dir.join("apply-seccomp");
            common::install(&fixture().helper, &binary, 0o755);
            let up = if planted == "package.json" { 2 } else { 1 };
            let file = bin_dir.ancestors().nth(up).unwrap().join(planted);
            match kind {
                "fifo" => {
                    nix::unistd::mkfifo(&file, nix::sys::stat::Mode::from_bits_truncate(0o666))
                        .unwrap()
                }
                _ => std::os::unix::fs::symlink("/dev/zero", &file).unwrap(),
            }
            let what = format!("{layout} {planted} {kind}");
            let home = empty_home(&format!("planted-install-{kind}"));
            let mut doctor = Command::new(&binary);
            doctor.args(["--doctor", "--json"]).env("HOME", &home);
            let d = read(bounded(doctor, &what));
            assert!(
                d.found("install").starts_with("a copy of"),
                "{what}: {}",
                d.report
            );
            let mut setup = Command::new(&binary);
            setup
                .args(["--setup", "--srt", "--dry-run"])
                .env("HOME", &home);
            let out = bounded(setup, &what);
            assert!(
                out.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Writes an srt settings file (mode 0644) and returns its path.
fn settings(name: &str, text: &str) -> PathBuf {
    let p = fixture().dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    p
}

#[test]
fn the_srt_settings_file_names_this_helper_out_of_reach() {
    let h = fixture().helper.to_str().unwrap().to_string();
    let dir = fixture().dir.to_str().unwrap().to_string();
    let cases: [(&str, String, &str, &str); 7] = [
        (
            "missing",
            format!(r#"{{"seccomp": {{"applyPath": "{dir}/not-there"}}}}"#),
            "fail",
            "srt silently falls back to its bundled helper",
        ),
        (
            "relative",
            r#"{"seccomp": {"applyPath": "bin/apply-seccomp"}}"#.into(),
            "fail",
            "is relative",
        ),
        (
            "writable",
            format!(
                r#"{{"filesystem": {{"allowWrite": ["/nowhere", "{dir}"]}},
                    "seccomp": {{"applyPath": "{h}"}}}}"#
            ),
            // Commands still run (issue 46: the verdict says what a run
            // does): a warning, with a fix that works.
            "warning",
            "a sandboxed command can replace the helper",
        ),
        (
            "glob",
            format!(
                r#"{{"filesystem": {{"allowWrite": ["{dir}/../apply-seccomp-test-*"]}},
                    "seccomp": {{"applyPath": "{h}"}}}}"#
            ),
            "warning",
            "a sandboxed command can replace the helper",
        ),
        (
            "right",
            format!(
                r#"{{"filesystem": {{"allowWrite": ["{dir}/work"]}},
                    "seccomp": {{"applyPath": "{h}"}}}}"#
            ),
            "ok",
            "is this binary, executable, outside every allowWrite folder",
        ),
        (
            "unset",
            r#"{"filesystem": {"allowWrite": []}}"#.into(),
            "warning",
            "seccomp.applyPath is not set",
        ),
        (
            "broken",
            r#"{"seccomp": {"applyPath": "#.into(),
            "fail",
            "not JSON",
        ),
    ];
    // Another build of this helper (another file), and not a helper at all.
    let other = fixture().helper_copy("other-build", 0o755);
    let cases: Vec<_> = cases
        .into_iter()
        .chain([
            (
                "other-build",
                format!(r#"{{"seccomp": {{"applyPath": "{}"}}}}"#, other.display()),
                "warning",
                "is not this binary but another copy of this same build, 0.1.0 (commit ",
            ),
            (
                "not-a-helper",
                r#"{"seccomp": {"applyPath": "/bin/true"}}"#.into(),
                "warning",
                "is not this binary but a program that is not this helper",
            ),
        ])
        .collect();
    for (name, text, status, want) in cases {
        let file = settings(&format!("srt-{name}.json"), &text);
        for &(place, user) in common::matrix().iter().filter(|(p, _)| *p == Place::Host) {
            let d = doctor(
                place,
                user,
                &[],
                &["--srt-settings", file.to_str().unwrap()],
            );
            d.expect("srt", status, want);
            // A bad applyPath is a failed verdict; the right one is not.
            assert_eq!(d.status == 0, status != "fail", "{name}: {}", d.report);
            if status != "ok" {
                assert!(!d.fix("srt").is_empty(), "{name}: {}", d.report);
            }
        }
    }
    // The default file is ~/.srt-settings.json.
    let home = empty_home("with-settings");
    std::fs::copy(
        fixture().dir.join("srt-relative.json"),
        home.join(".srt-settings.json"),
    )
    .unwrap();
    let out = common::command(
        Place::Host,
        User::Unprivileged,
        &[("HOME", home.to_str().unwrap())],
        &fixture().helper,
        &["--doctor", "--json"],
    )
    .output()
    .unwrap();
    let d = read(out);
    d.expect(
        "srt",
        "fail",
        ".srt-settings.json: seccomp.applyPath bin/apply-seccomp is relative",
    );
}

#[test]
fn the_shim_first_on_path_is_found_with_what_it_runs() {
    if !bwrap_present() {
        return;
    }
    let dir = fixture().dir.join("shim-bin");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let link = dir.join("bwrap");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&fixture().helper, &link).unwrap();
    std::fs::create_dir_all(fixture().dir.join("wrapper-bin")).unwrap();
    std::fs::set_permissions(
        fixture().dir.join("wrapper-bin"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let wrapper = fixture().script(
        "wrapper-bin/bwrap",
        "#!/bin/sh\nexec /usr/bin/bwrap \"$@\"\n",
    );
    let real = which("bwrap").unwrap();
    let real_dir = real.parent().unwrap().display().to_string();
    let first = format!("{}:{real_dir}:/usr/bin:/bin", dir.display());
    let behind_wrapper = format!(
        "{}:{}:{real_dir}:/usr/bin:/bin",
        wrapper.parent().unwrap().display(),
        dir.display()
    );
    let after_real = format!("{real_dir}:{}:/usr/bin:/bin", dir.display());
    for &(place, user) in common::matrix().iter().filter(|(p, _)| *p == Place::Host) {
        let d = doctor(place, user, &[("PATH", &first)], &[]);
        let ctx = format!("{user:?}: {}", d.report);
        d.expect(
            "claude code",
            "ok",
            &format!(
                "leads to this binary, {} (the shim), through no wrapper",
                link.display()
            ),
        );
        d.expect(
            "claude code",
            "ok",
            &format!("the real bubblewrap {}", real.display()),
        );
        // The run goes through the shim, as Claude Code's would.
        d.expect(
            "bubblewrap",
            "ok",
            &format!("behind the shim {}", link.display()),
        );
        d.expect("bubblewrap run", "ok", "2 filters");
        assert_eq!(d.status, 0, "{ctx}");

        let d = doctor(place, user, &[("PATH", &behind_wrapper)], &[]);
        d.expect("claude code", "ok", "through 1 wrapper(s)");

        let d = doctor(place, user, &[("PATH", &after_real)], &[]);
        d.expect(
            "claude code",
            "warning",
            &format!("{} comes first", real.display()),
        );
        assert!(d.fix("claude code").contains("ln -sf"), "{}", d.report);
        assert_eq!(d.status, 0, "a missing shim is a warning: {}", d.report);
    }
}

#[test]
fn the_text_has_one_line_per_check_and_a_verdict() {
    let out = common::command(
        Place::Host,
        if is_root() {
            User::Root
        } else {
            User::Unprivileged
        },
        &[
            ("HOME", empty_home("text").to_str().unwrap()),
            ("PATH", "/nonexistent"),
        ],
        &fixture().helper,
        &["--doctor"],
    )
    .output()
    .unwrap();
    let text = common::stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("apply-seccomp "), "{text}");
    assert!(
        lines.last().unwrap().starts_with("verdict: fail: "),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1));
    for l in &lines[1..lines.len() - 1] {
        let word = l.split_whitespace().next().unwrap();
        assert!(["ok", "warning", "fail", "fix:"].contains(&word), "{l}");
    }
    // Anything not ok is followed by its fix.
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("warning ") || l.starts_with("fail ") {
            assert!(lines[i + 1].trim_start().starts_with("fix: "), "{text}");
        }
    }
    // A bad option is a usage error (125), not a verdict.
    let bad = Command::new(&fixture().helper)
        .args(["--doctor", "--bogus"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(125));
}

/// `bwrapPath` in srt's settings (the shim, which keeps the placeholders
/// of sessions sharing a folder) and `sandbox.bwrapPath` in Claude Code's
/// managed settings: set, executable, a link named `bwrap` to this
/// binary, outside every writable folder.
#[test]
fn the_bwrap_paths_of_both_clients_lead_to_the_shim() {
    let h = fixture().helper.to_str().unwrap().to_string();
    let dir = fixture().dir.to_str().unwrap().to_string();
    let links = fixture().dir.join("doctor-links");
    std::fs::create_dir_all(&links).unwrap();
    let shim = links.join("bwrap");
    let _ = std::os::unix::fs::symlink(&fixture().helper, &shim);
    let work = fixture().dir.join("doctor-links-work");
    std::fs::create_dir_all(&work).unwrap();
    let inside = work.join("bwrap");
    let _ = std::os::unix::fs::symlink(&fixture().helper, &inside);
    let s = shim.display();
    let cases: [(&str, String, &str, &str); 4] = [
        (
            "bwrap-unset",
            format!(r#"{{"seccomp": {{"applyPath": "{h}"}}}}"#),
            "warning",
            "bwrapPath is not set",
        ),
        (
            "bwrap-right",
            format!(r#"{{"seccomp": {{"applyPath": "{h}"}}, "bwrapPath": "{s}"}}"#),
            "ok",
            "the shim, which keeps every session's placeholders",
        ),
        (
            "bwrap-misnamed",
            format!(r#"{{"seccomp": {{"applyPath": "{h}"}}, "bwrapPath": "{h}"}}"#),
            "fail",
            "is this binary, but not as `bwrap`",
        ),
        (
            "bwrap-writable",
            format!(
                r#"{{"filesystem": {{"allowWrite": ["{dir}/doctor-links-work"]}},
                    "seccomp": {{"applyPath": "{h}"}}, "bwrapPath": "{}"}}"#,
                inside.display()
            ),
            // The shim protects its own link in every line it runs.
            "ok",
            "is this binary (the shim), executable; inside",
        ),
    ];
    for (name, text, status, want) in cases {
        let file = settings(&format!("srt-{name}.json"), &text);
        let d = doctor(
            Place::Host,
            User::Unprivileged,
            &[],
            &["--srt-settings", file.to_str().unwrap()],
        );
        d.expect("srt bwrapPath", status, want);
        assert_eq!(d.status_of("srt"), "ok", "{name}: {}", d.report);
    }
    // Claude Code's managed settings.
    for (name, value, status, want) in [
        (
            "managed-right",
            s.to_string(),
            "ok",
            "Claude Code runs the shim",
        ),
        ("managed-misnamed", h.clone(), "fail", "not as `bwrap`"),
        (
            "managed-missing",
            format!("{dir}/no-such-bwrap"),
            "fail",
            "Claude Code finds no bubblewrap there",
        ),
    ] {
        let file = settings(
            &format!("claude-{name}.json"),
            &format!(r#"{{"sandbox": {{"bwrapPath": "{value}"}}}}"#),
        );
        let d = doctor(
            Place::Host,
            User::Unprivileged,
            &[(
                "APPLY_SECCOMP_CLAUDE_MANAGED_SETTINGS",
                file.to_str().unwrap(),
            )],
            &[],
        );
        d.expect("claude code", status, want);
        assert!(
            d.found("claude code").contains("sandbox.bwrapPath"),
            "{name}: {}",
            d.report
        );
    }
}

/// Issue 58: settings naming another copy of this same build, `applyPath`
/// the copy and `bwrapPath` a link `bwrap` to it, are worded alike (one
/// said "another build", the other "not this helper"); with no settings
/// file the verdict says srt is not set up, not that it names another.
#[test]
fn a_copy_of_this_build_is_named_alike_by_both_keys() {
    let dir = fixture().dir.join("doctor-copy");
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    let copy = dir.join("apply-seccomp");
    common::install(&fixture().helper, &copy, 0o755);
    let link = dir.join("lib/bwrap");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&copy, &link).unwrap();
    let file = settings(
        "srt-copy.json",
        &format!(
            r#"{{"seccomp": {{"applyPath": "{}"}}, "bwrapPath": "{}"}}"#,
            copy.display(),
            link.display()
        ),
    );
    let d = doctor(
        Place::Host,
        User::Unprivileged,
        &[],
        &["--srt-settings", file.to_str().unwrap()],
    );
    let same = "is not this binary but another copy of this same build, 0.1.0 (commit ";
    d.expect("srt", "warning", same);
    d.expect("srt", "warning", "srt runs that file as its helper");
    d.expect("srt bwrapPath", "warning", same);
    d.expect(
        "srt bwrapPath",
        "warning",
        "srt runs that file as bubblewrap",
    );

    // No settings file at all (the doctor's HOME is empty).
    let none = doctor(Place::Host, User::Unprivileged, &[], &[]);
    none.expect("srt", "warning", "no settings file at ");
    let verdict = none.report["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("neither srt nor Claude Code is set up to run it yet"),
        "{verdict}"
    );
    assert!(!verdict.contains("name another"), "{verdict}");
}
