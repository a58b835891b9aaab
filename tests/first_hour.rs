//! A newcomer's first hour (issue 46), as root and as uid 65534, in fresh
//! home folders: every fix the doctor prints for srt's settings, followed
//! as printed, then the doctor again and a real srt run; the doctor after
//! `--setup --undo`, after `--setup` (Claude Code's fix no longer repeats
//! the link), in JSON; the policy a new settings file gets, said; the
//! Node.js srt asks for.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{User, fixture, stderr, stdout, uid_of, users, which};
use serde_json::Value;

const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A fresh, empty home folder of `user`'s.
fn home(user: User, tag: &str) -> PathBuf {
    let home = common::fresh_folder(&format!("first-hour-{tag}-{user:?}"));
    if let Some(u) = uid_of(user) {
        std::os::unix::fs::chown(&home, Some(u), Some(u)).unwrap();
    }
    home
}

/// `program args` as `user` in `home`, with `HOME` and `PATH` alone.
fn as_user(user: User, home: &Path, program: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", PATH)
        .env("TMPDIR", common::client_tmp())
        .current_dir(home)
        .stdin(Stdio::null());
    if let Some(u) = uid_of(user) {
        cmd.uid(u).gid(u);
    }
    cmd.output().unwrap()
}

/// `sh -c line` as `user` in `home`: a fix as the doctor printed it.
fn follow(user: User, home: &Path, line: &str) -> Output {
    as_user(user, home, Path::new("/bin/sh"), &["-c", line])
}

/// The doctor's report, as JSON.
fn doctor(user: User, home: &Path) -> Value {
    let out = as_user(user, home, &fixture().helper, &["--doctor", "--json"]);
    serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&out), stderr(&out)))
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    try_check(report, name).unwrap_or_else(|| panic!("no check {name}: {report}"))
}

fn try_check<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
}

/// srt's settings with `rest` (JSON members, or "") beside a whole
/// policy srt accepts.
fn srt_settings(allow_write: &str, rest: &str) -> String {
    format!(
        r#"{{"network": {{"allowedDomains": [], "deniedDomains": []}},
  "filesystem": {{"denyRead": [], "allowWrite": [{allow_write}], "denyWrite": []}}{}{rest}}}"#,
        if rest.is_empty() { "" } else { ",\n  " }
    )
}

/// A real srt run of `echo ran` with the settings in `home`: Err(why)
/// unless this helper ran it.
fn srt_runs_it(user: User, home: &Path) -> Result<(), String> {
    let Some(srt) = common::srt_package() else {
        return Ok(());
    };
    let project = common::srt_cli::project(user, "first-hour");
    let mut cmd = Command::new(srt.join("node_modules/.bin/srt"));
    cmd.args(["-c", "echo ran"])
        .env_clear()
        .env("HOME", home)
        .env("PATH", PATH)
        .env("TMPDIR", common::client_tmp())
        .env("SRT_DEBUG", "1")
        .current_dir(&project)
        .stdin(Stdio::null());
    if let Some(u) = uid_of(user) {
        cmd.uid(u).gid(u);
    }
    let out = cmd.output().unwrap();
    let (o, e) = (stdout(&out), stderr(&out));
    if out.status.success() && o.contains("ran\n") && e.contains("apply-seccomp: entry: ") {
        Ok(())
    } else {
        Err(format!("{:?}\n{o}{e}", out.status))
    }
}

/// Every srt settings file a newcomer may have that the doctor flags, its
/// fix followed as printed: then both srt checks are ok, the verdict says
/// srt runs this helper, and srt does.
#[test]
fn every_fix_for_srts_settings_works_when_followed() {
    let h = fixture().helper.display().to_string();
    let cases: [(&str, Option<String>); 5] = [
        ("no-file", None),
        ("unset", Some(srt_settings("", ""))),
        (
            "bwrap-unset",
            Some(srt_settings(
                "",
                &format!(r#""seccomp": {{"applyPath": "{h}"}}"#),
            )),
        ),
        // srt fails every command: a failure, whose fix sets a `bwrap` link.
        (
            "bwrap-misnamed",
            Some(srt_settings(
                "",
                &format!(r#""seccomp": {{"applyPath": "{h}"}}, "bwrapPath": "{h}""#),
            )),
        ),
        (
            "relative",
            Some(srt_settings("", r#""seccomp": {"applyPath": "bin/x"}"#)),
        ),
    ];
    for user in users() {
        for (tag, text) in &cases {
            let home = home(user, tag);
            let _undo = common::UndoSetup(user, home.clone());
            if let Some(text) = text {
                let file = home.join(".srt-settings.json");
                std::fs::write(&file, text).unwrap();
                if let Some(u) = uid_of(user) {
                    std::os::unix::fs::chown(&file, Some(u), Some(u)).unwrap();
                }
            }
            let before = doctor(user, &home);
            let mut followed = 0;
            for name in ["srt", "srt bwrapPath"] {
                let Some(c) = try_check(&before, name) else {
                    continue;
                };
                if c["status"] == "ok" {
                    continue;
                }
                let fix = c["fix"].as_str().unwrap_or_else(|| panic!("{tag}: {c}"));
                let out = follow(user, &home, fix);
                assert!(
                    out.status.success(),
                    "{tag} {user:?}: `{fix}`: {}{}",
                    stdout(&out),
                    stderr(&out)
                );
                followed += 1;
            }
            assert!(followed > 0, "{tag}: nothing to fix: {before}");
            let after = doctor(user, &home);
            for name in ["srt", "srt bwrapPath"] {
                assert_eq!(
                    check(&after, name)["status"],
                    "ok",
                    "{tag} {user:?}: {after}"
                );
            }
            let verdict = after["verdict"].as_str().unwrap();
            assert!(
                !verdict.contains("neither srt nor Claude Code is set up to run it yet"),
                "{tag}: {verdict}"
            );
            if let Err(e) = srt_runs_it(user, &home) {
                panic!("{tag} {user:?}: srt after the fixes: {e}");
            }
        }
    }
}

/// An `applyPath` a sandboxed command could replace (inside an
/// `allowWrite` folder, no shim): commands still run (a warning, and the
/// verdict says they can), and the fix, followed as root and then as the
/// user, puts the helper out of reach.
#[test]
fn a_replaceable_helper_is_a_warning_whose_fix_works() {
    if !common::in_full_suite("the fix installs /usr/local/bin/apply-seccomp, system-wide") {
        return;
    }
    if !common::is_root() {
        common::skip("not root: the fix installs into /usr/local/bin");
        return;
    }
    let installed = Path::new("/usr/local/bin/apply-seccomp");
    if installed.exists() {
        common::skip("/usr/local/bin/apply-seccomp exists: the fix would replace it");
        return;
    }
    struct Remove<'a>(&'a Path);
    impl Drop for Remove<'_> {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(self.0);
        }
    }
    let _remove = Remove(installed);
    for user in users() {
        let home = home(user, "replaceable");
        let _undo = common::UndoSetup(user, home.clone());
        let file = home.join(".srt-settings.json");
        std::fs::write(
            &file,
            srt_settings(
                &format!("\"{}\"", fixture().dir.display()),
                &format!(
                    r#""seccomp": {{"applyPath": "{}"}}"#,
                    fixture().helper.display()
                ),
            ),
        )
        .unwrap();
        if let Some(u) = uid_of(user) {
            std::os::unix::fs::chown(&file, Some(u), Some(u)).unwrap();
        }
        let before = doctor(user, &home);
        let srt = check(&before, "srt");
        assert_eq!(srt["status"], "warning", "{before}");
        assert_eq!(before["can_run"], true, "{before}");
        let fix = srt["fix"].as_str().unwrap();
        let (as_root, as_user_part) = fix
            .strip_prefix("as root, ")
            .and_then(|f| f.split_once("; then, as yourself, "))
            .unwrap_or_else(|| panic!("{fix}"));
        let out = follow(User::Root, &home, as_root);
        assert!(out.status.success(), "`{as_root}`: {}", stderr(&out));
        let out = follow(user, &home, as_user_part);
        assert!(
            out.status.success(),
            "`{as_user_part}`: {}{}",
            stdout(&out),
            stderr(&out)
        );
        let out = as_user(user, &home, installed, &["--doctor", "--json"]);
        let after: Value = serde_json::from_str(&stdout(&out)).unwrap();
        for name in ["srt", "srt bwrapPath"] {
            assert_eq!(check(&after, name)["status"], "ok", "{user:?}: {after}");
        }
        if let Err(e) = srt_runs_it(user, &home) {
            panic!("{user:?}: srt after the fix: {e}");
        }
    }
}

/// After `--setup`: Claude Code's fix names what is left (the PATH), not
/// the link setup made. After `--setup --undo`: the verdict says no client
/// runs this helper. In JSON the verdict points nowhere ("above"); the
/// bubblewrap run reads as one command, not `-- apply-seccomp --
/// apply-seccomp`.
#[test]
fn the_doctor_after_setup_and_undo_says_what_is_so() {
    for user in users() {
        let home = home(user, "after");
        let out = as_user(user, &home, &fixture().helper, &["--setup"]);
        assert!(
            out.status.success() || out.status.code() == Some(1),
            "{}",
            stderr(&out)
        );
        let report = doctor(user, &home);
        let claude = check(&report, "claude code");
        assert_eq!(claude["status"], "warning", "{report}");
        let fix = claude["fix"].as_str().unwrap();
        assert!(!fix.contains("ln -sf"), "{fix}");
        assert!(
            fix.contains("export PATH=\"$HOME/.local/lib/apply-seccomp:$PATH\""),
            "{fix}"
        );
        let verdict = report["verdict"].as_str().unwrap();
        assert!(!verdict.contains("above"), "{verdict}");
        assert!(
            !verdict.contains("neither srt nor Claude Code is set up to run it yet"),
            "{verdict}"
        );
        if which("bwrap").is_some() {
            let run = check(&report, "bubblewrap run")["found"].as_str().unwrap();
            assert!(!run.contains("-- apply-seccomp -- apply-seccomp"), "{run}");
        }
        let out = as_user(user, &home, &fixture().helper, &["--undo"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let report = doctor(user, &home);
        let verdict = report["verdict"].as_str().unwrap();
        assert!(
            verdict.contains("but neither srt nor Claude Code is set up to run it yet"),
            "{verdict}"
        );
        // The text's verdict points at the warnings above it.
        let out = as_user(user, &home, &fixture().helper, &["--doctor"]);
        assert!(
            stdout(&out).contains(" warning(s) above\n"),
            "{}",
            stdout(&out)
        );
    }
}

/// `--setup` making srt's settings file says the policy it wrote (srt's
/// own: nothing writable) and the one change that widens it.
#[test]
fn a_new_settings_file_says_its_policy_and_how_to_widen_it() {
    for user in users() {
        let home = home(user, "policy");
        let _undo = common::UndoSetup(user, home.clone());
        let out = as_user(user, &home, &fixture().helper, &["--setup", "--srt"]);
        let said = stdout(&out);
        assert!(
            said.contains(
                "has srt's own defaults: commands may write nowhere but srt's temporary folders"
            ) && said.contains("make it \"allowWrite\": [\".\"]"),
            "{said}"
        );
        // A file that was there is the user's policy: nothing said.
        let out = as_user(user, &home, &fixture().helper, &["--setup", "--srt"]);
        assert!(
            !stdout(&out).contains("srt's own defaults"),
            "{}",
            stdout(&out)
        );
    }
}

/// A Node.js install as Node's own builds and nvm lay it out: `bin/node`
/// (a script that writes `ran` and prints `version`), and the version
/// header beside it.
fn fake_node(dir: &Path, version: &str, ran: &Path) {
    let v: Vec<&str> = version.trim_start_matches('v').split('.').collect();
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::create_dir_all(dir.join("include/node")).unwrap();
    std::fs::write(
        dir.join("include/node/node_version.h"),
        format!(
            "#define NODE_MAJOR_VERSION {}\n#define NODE_MINOR_VERSION {}\n\
             #define NODE_PATCH_VERSION {}\n",
            v[0], v[1], v[2]
        ),
    )
    .unwrap();
    let src = dir.join("node.src");
    std::fs::write(
        &src,
        format!("#!/bin/sh\ntouch {}\necho {version}\n", ran.display()),
    )
    .unwrap();
    common::install(&src, &dir.join("bin/node"), 0o755);
}

/// The Node.js on PATH against what srt asks for (>= 22.12): an older one
/// is a warning with its fix, a fitting one ok, none ok; read from its
/// install, never run.
#[test]
fn the_doctor_names_the_node_srt_asks_for() {
    for (version, status) in [
        ("v20.20.2", "warning"),
        ("v22.12.0", "ok"),
        ("v24.1.0", "ok"),
    ] {
        let dir = common::fresh_folder("fake-node");
        let ran = dir.join("ran");
        fake_node(&dir, version, &ran);
        let out = Command::new(&fixture().helper)
            .args(["--doctor", "--json"])
            .env("PATH", format!("{}:{PATH}", dir.join("bin").display()))
            .output()
            .unwrap();
        let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let node = check(&report, "node");
        assert_eq!(node["status"], status, "{version}: {node}");
        let found = node["found"].as_str().unwrap();
        assert!(
            found.contains(version) && found.contains("not run"),
            "{node}"
        );
        if status == "warning" {
            assert!(node["fix"].as_str().unwrap().contains("22.12"), "{node}");
        }
        assert!(!ran.exists(), "{version}: the doctor ran node");
    }
}

/// Claude Code's fix, followed as printed: its command run, then the
/// folder put first on the PATH the client starts with; the doctor's
/// Claude Code check is then ok.
#[test]
fn the_claude_code_fix_works_when_followed() {
    for user in users() {
        let home = home(user, "claude");
        let report = doctor(user, &home);
        let fix = check(&report, "claude code")["fix"]
            .as_str()
            .unwrap()
            .to_string();
        let (command, rest) = fix
            .split_once(", and put ")
            .unwrap_or_else(|| panic!("{fix}"));
        let out = follow(user, &home, command);
        assert!(out.status.success(), "`{command}`: {}", stderr(&out));
        assert!(
            rest.starts_with("~/.local/lib/apply-seccomp before "),
            "{rest}"
        );
        let path = format!("{}:{PATH}", home.join(".local/lib/apply-seccomp").display());
        let mut cmd = Command::new(&fixture().helper);
        cmd.args(["--doctor", "--json"])
            .env_clear()
            .env("HOME", &home)
            .env("PATH", &path)
            .current_dir(&home)
            .stdin(Stdio::null());
        if let Some(u) = uid_of(user) {
            cmd.uid(u).gid(u);
        }
        let out = cmd.output().unwrap();
        let after: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(
            check(&after, "claude code")["status"],
            "ok",
            "{user:?}: {after}"
        );
    }
}

/// Programs a sandboxed command could have planted, with srt's settings
/// as `--setup` suggests them (`allowWrite: ["."]`) and the doctor started
/// in another folder than the project (issue 54: it resolved "." against
/// its own folder, found nothing writable, and ran the project's `node`):
/// a `node` and a `bwrap` first on PATH in the project's `bin`, and
/// srt's `applyPath` naming a file there too. The doctor runs none of
/// them, and says so.
#[test]
fn the_doctor_never_runs_a_planted_program() {
    for user in users() {
        let home = home(user, "planted");
        // Where srt was started, and "." let commands write: not where
        // the doctor runs.
        let project = common::fresh_folder(&format!("planted-project-{user:?}"));
        let bin = project.join("node_modules/.bin");
        let marker = home.join("ran");
        fake_node(&project.join("node"), "v24.0.0", &marker.join("node"));
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&marker).unwrap();
        std::os::unix::fs::symlink(project.join("node/bin/node"), bin.join("node")).unwrap();
        for name in ["bwrap", "helper"] {
            let src = home.join(format!("{name}.src"));
            std::fs::write(
                &src,
                format!(
                    "#!/bin/sh\ntouch {}\necho race-free\n",
                    marker.join(name).display()
                ),
            )
            .unwrap();
            common::install(&src, &bin.join(name), 0o755);
        }
        std::fs::write(
            home.join(".srt-settings.json"),
            srt_settings(
                "\".\"",
                &format!(
                    r#""seccomp": {{"applyPath": "{}"}}"#,
                    bin.join("helper").display()
                ),
            ),
        )
        .unwrap();
        if let Some(u) = uid_of(user) {
            let status = Command::new("chown")
                .args(["-R", &format!("{u}:{u}")])
                .args([&home, &project])
                .status()
                .unwrap();
            assert!(status.success());
        }
        let mut cmd = Command::new(&fixture().helper);
        cmd.args(["--doctor", "--json"])
            .env_clear()
            .env("HOME", &home)
            .env("PATH", format!("{}:{PATH}", bin.display()))
            .current_dir(&home)
            .stdin(Stdio::null());
        if let Some(u) = uid_of(user) {
            cmd.uid(u).gid(u);
        }
        let out = cmd.output().unwrap();
        let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let found = |name: &str| check(&report, name)["found"].as_str().unwrap().to_string();
        assert!(
            found("node").contains("not run"),
            "{user:?}: {}",
            found("node")
        );
        assert!(
            found("bubblewrap").contains("not run"),
            "{user:?}: {}",
            found("bubblewrap")
        );
        assert!(
            found("srt").contains("not run"),
            "{user:?}: {}",
            found("srt")
        );
        let ran: Vec<_> = std::fs::read_dir(&marker)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(ran.is_empty(), "{user:?}: the doctor ran {ran:?}");
    }
}

/// The version header the doctor reads beside a `node` may be planted as
/// well: a FIFO there (no writer ever comes) is not opened for reading,
/// and the doctor says it found no version (issue 54: it reads nothing
/// but bounded regular files).
#[test]
fn a_planted_fifo_for_nodes_version_does_not_hang_the_doctor() {
    let dir = common::fresh_folder("fifo-node");
    let ran = dir.join("ran");
    fake_node(&dir, "v24.0.0", &ran);
    let header = dir.join("include/node/node_version.h");
    std::fs::remove_file(&header).unwrap();
    nix::unistd::mkfifo(&header, nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap();
    let out = Command::new("timeout")
        .arg("60")
        .arg(&fixture().helper)
        .args(["--doctor", "--json"])
        .env("PATH", format!("{}:{PATH}", dir.join("bin").display()))
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(124), "the doctor hung on the FIFO");
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let node = check(&report, "node");
    assert_eq!(node["status"], "warning", "{node}");
    assert!(
        node["found"]
            .as_str()
            .unwrap()
            .contains("its version is not written beside it"),
        "{node}"
    );
    assert!(!ran.exists(), "the doctor ran node");
}
