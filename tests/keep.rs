//! The placeholder keeper (src/shim/keep/): sessions that share a folder
//! never break each other's commands. The real srt 0.0.83 CLI, pointed at
//! the shim with `bwrapPath` (and at this helper with `applyPath`), as
//! root and as uid 65534; and srt's library in multicall mode (Claude
//! Code's lines), through the shim on PATH with `--info-fd` and
//! `--sync-fd`.

mod common;

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::srt_cli::{home, left, project, settled, settled_to, srt};
use common::{User, fixture, uid_of, which};

/// A link `bwrap -> apply-seccomp`, for `bwrapPath`.
fn shim() -> &'static Path {
    static SHIM: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    SHIM.get_or_init(|| {
        let dir = fixture().dir.join("keep-shim");
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(&fixture().helper, dir.join("bwrap")).unwrap();
        dir.join("bwrap")
    })
}

/// srt's settings for `dir`: the folder writable, this helper, and the
/// shim as bubblewrap unless `shim` is false. Kept beside the folder.
fn settings(dir: &Path, shim_on: bool) -> PathBuf {
    let file = dir.with_extension("json");
    let bwrap = if shim_on {
        format!(r#", "bwrapPath": "{}""#, shim().display())
    } else {
        String::new()
    };
    std::fs::write(
        &file,
        format!(
            r#"{{"network": {{"allowedDomains": [], "deniedDomains": []}},
  "filesystem": {{"denyRead": [], "allowWrite": ["{d}"], "denyWrite": []}},
  "seccomp": {{"applyPath": "{h}"}}{bwrap}}}"#,
            d = dir.display(),
            h = fixture().helper.display()
        ),
    )
    .unwrap();
    file
}

/// bubblewrap and the srt client are there (else the skip is said).
fn ready() -> bool {
    if which("bwrap").is_none() {
        return common::skip("bubblewrap is not installed");
    }
    common::srt_package().is_some()
}

/// The attack: every path the srt CLI denies written (folders made
/// first), each success said. (The CLI does not deny `.claude/settings.json`;
/// Claude Code adds that one.)
fn write_everything() -> String {
    let files = common::SRT_DENIED_FILES
        .iter()
        .chain(&[
            ".vscode/tasks.json",
            ".idea/workspace.xml",
            ".claude/commands/x.md",
            ".claude/agents/y.md",
        ])
        .map(|p| format!("{p} "))
        .collect::<String>();
    format!(
        "sleep 0.3; for p in {files}; do mkdir -p \"$(dirname \"$p\")\" 2>/dev/null; \
         (echo MARK >> \"$p\") 2>/dev/null && echo \"wrote $p\"; done; true"
    )
}

/// Three sessions in `dir`, each `runs` quick commands (one session's
/// every third command tries `write_everything`), at once.
fn sessions(user: User, dir: &Path, settings: &Path, runs: u32) -> common::Tally {
    let tally = std::sync::Mutex::new(common::Tally::default());
    std::thread::scope(|s| {
        for session in 0..3 {
            let tally = &tally;
            s.spawn(move || {
                for n in 0..runs {
                    let script = if session == 0 && n % 3 == 0 {
                        write_everything()
                    } else {
                        "true".to_string()
                    };
                    let out = srt(user, dir, settings, &script).output().unwrap();
                    let text = String::from_utf8_lossy(&out.stdout);
                    let writes = text.lines().filter(|l| l.starts_with("wrote ")).count();
                    tally.lock().unwrap().add(&out, writes as u32);
                }
            });
        }
    });
    tally.into_inner().unwrap()
}

/// Three sessions in one fresh git folder: through the shim, no setup
/// failure, no guard stop, no denied write, and nothing left after (git
/// status clean); without it, the race shows (so the test can fail).
#[test]
fn sessions_sharing_a_folder_never_break_each_other() {
    if !ready() {
        return;
    }
    for user in common::users_in_loop() {
        let dir = project(user, "three");
        // 20 commands a session in the full suite, 8 in the developer's loop.
        let each = common::rounds(20, 8);
        let t = sessions(user, &dir, &settings(&dir, true), each);
        let ctx = format!("{user:?} through the shim: {t:?}, left {:?}", settled(&dir));
        eprintln!("{ctx}");
        assert_eq!(t.runs, 3 * each, "{ctx}");
        assert_eq!(
            (t.setup_failures, t.guard_stops, t.writes),
            (0, 0, 0),
            "{ctx}"
        );
        assert!(t.other_failures.is_empty(), "{ctx}");
        assert!(settled(&dir).is_empty(), "{ctx}");
        let status = Command::new("git")
            .args([
                "-c",
                "safe.directory=*",
                "status",
                "--porcelain",
                "--untracked-files=all",
            ])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&status.stdout), "", "{ctx}");
    }
    // Without the shim (bwrapPath unset), as uid 65534: the clients delete
    // each other's placeholders. Up to 240 runs until it shows.
    let dir = project(User::Unprivileged, "three-without");
    let settings = settings(&dir, false);
    let mut broken = 0;
    let mut runs = 0;
    while broken == 0 && runs < 240 {
        let t = sessions(User::Unprivileged, &dir, &settings, 20);
        runs += t.runs;
        broken += t.setup_failures + t.guard_stops;
    }
    eprintln!("without the shim: {broken} commands broken in {runs}");
    assert!(
        broken > 0,
        "the race never showed without the shim in {runs} runs"
    );
}

/// A folder holding real 0-byte files and empty folders at deny paths:
/// after the sessions, each is the same inode, with the same content and
/// modification time. What is not a placeholder is never touched.
#[test]
fn real_empty_files_and_folders_at_deny_paths_are_left_alone() {
    if !ready() {
        return;
    }
    for user in common::users_in_loop() {
        let dir = project(user, "real");
        let real = [".bashrc", ".mcp.json", ".vscode", ".claude/commands"];
        std::fs::create_dir(dir.join(".claude")).unwrap();
        for name in [".claude"].iter().chain(&real) {
            let p = dir.join(name);
            if name.starts_with(".vscode") || name.starts_with(".claude") {
                let _ = std::fs::create_dir(&p);
            } else {
                std::fs::write(&p, "").unwrap();
            }
            if let Some(u) = uid_of(user) {
                std::os::unix::fs::chown(&p, Some(u), Some(u)).unwrap();
            }
        }
        // An older modification time, so a touch would show.
        let stamp = |p: &Path| {
            let m = std::fs::symlink_metadata(p).unwrap();
            (m.ino(), m.len(), m.mtime(), m.mtime_nsec(), m.is_dir())
        };
        let before: Vec<_> = real.iter().map(|n| stamp(&dir.join(n))).collect();
        std::thread::sleep(Duration::from_millis(20));
        let t = sessions(user, &dir, &settings(&dir, true), 8);
        let ctx = format!("{user:?}: {t:?}");
        assert_eq!(
            (t.setup_failures, t.guard_stops, t.writes),
            (0, 0, 0),
            "{ctx}"
        );
        let after: Vec<_> = real.iter().map(|n| stamp(&dir.join(n))).collect();
        assert_eq!(before, after, "{ctx}");
        // The real folders hold what they held: nothing; .claude its own
        // `commands` (the placeholder made beside it for `agents` is gone).
        assert_eq!(
            std::fs::read_dir(dir.join(".vscode")).unwrap().count(),
            0,
            "{ctx}"
        );
        assert_eq!(
            std::fs::read_dir(dir.join(".claude/commands"))
                .unwrap()
                .count(),
            0,
            "{ctx}"
        );
        assert_eq!(
            settled_to(&dir.join(".claude"), &["commands"]),
            ["commands"],
            "{ctx}"
        );
        // The holder removes deepest first: `.claude`'s placeholder can be
        // gone while the folder's own are still going (CI saw seven left
        // at this check once), so this waits for the folder too.
        let want = [".bashrc", ".claude", ".mcp.json", ".vscode"];
        assert_eq!(settled_to(&dir, &want), want, "{ctx}");
    }
}

/// Waits until `path` exists (at most 20 s).
fn wait_exists(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The pids of `pid`'s children.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The descendants of `pid`, nearest first.
fn descendants(pid: u32) -> Vec<u32> {
    let mut all = children(pid);
    let mut i = 0;
    while i < all.len() {
        let below = children(all[i]);
        all.extend(below);
        i += 1;
    }
    all
}

/// The nearest descendant of `pid` running the executable at `exe`.
fn descendant(pid: u32, exe: &Path) -> Option<u32> {
    let exe = std::fs::canonicalize(exe).ok()?;
    descendants(pid)
        .into_iter()
        .find(|p| std::fs::read_link(format!("/proc/{p}/exe")).ok().as_deref() == Some(&exe))
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Waits until `pid` has ended (at most 20 s).
fn wait_gone(pid: u32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(pid) {
        assert!(Instant::now() < deadline, "{what} lives on");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill9(pid: u32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// `--doctor --json` as `user` in `dir`: its "placeholders" check.
fn doctor_placeholders(user: User, dir: &Path) -> serde_json::Value {
    let mut doctor = Command::new(&fixture().helper);
    doctor
        .args(["--doctor", "--json"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home(user))
        .env("APPLY_SECCOMP_DOCTOR_LIMIT", "2")
        .current_dir(dir);
    if let Some(u) = uid_of(user) {
        doctor.uid(u).gid(u);
    }
    let report: serde_json::Value =
        serde_json::from_slice(&doctor.output().unwrap().stdout).unwrap();
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "placeholders")
        .cloned()
        .unwrap_or_else(|| panic!("no placeholders check: {report}"))
}

/// A session killed with SIGKILL mid-run: the client; the shim's holder
/// (the process that holds the run's placeholders and removes them once
/// bubblewrap ends: the shim itself became bubblewrap); bubblewrap. No
/// hold outlives the victim, the doctor names what a killed holder left,
/// the next session runs, and once it ends nothing is left in the folder.
#[test]
fn a_session_killed_mid_run_leaves_no_hold_and_nothing_behind() {
    if !ready() {
        return;
    }
    let real_bwrap = which("bwrap").unwrap();
    for user in common::users_in_loop() {
        for victim in ["client", "holder", "bwrap"] {
            let dir = project(user, &format!("kill-{victim}"));
            let settings = settings(&dir, true);
            let mark = dir.join("running");
            // Short: a killed client leaves bubblewrap and the sandbox
            // running to the command's end, as without the shim.
            let script = format!(": > {}; sleep 2", mark.display());
            let child: Child = srt(user, &dir, &settings, &script).spawn().unwrap();
            wait_exists(&mark);
            let _ = std::fs::remove_file(&mark);
            let ctx = format!("{user:?} {victim}");
            assert!(dir.join(".bashrc").exists(), "{ctx}: no placeholder");
            // The shim exec'd bubblewrap (same pid); its holder is
            // bubblewrap's child, this binary, in a session of its own.
            let bwrap = descendant(child.id(), &real_bwrap).expect("bubblewrap");
            let holder = descendant(bwrap, &fixture().helper)
                .filter(|&h| children(bwrap).contains(&h))
                .unwrap_or_else(|| panic!("{ctx}: no holder among {:?}", children(bwrap)));
            let stat = std::fs::read_to_string(format!("/proc/{holder}/stat")).unwrap();
            let session: u32 = stat
                .rsplit(") ")
                .next()
                .unwrap()
                .split(' ')
                .nth(3)
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(
                session, holder,
                "{ctx}: the holder leads a session of its own"
            );
            // srt's proxies, children of the client: a killed client
            // leaves them (not the shim's to end).
            let proxies = children(child.id());
            kill9(match victim {
                "client" => child.id(),
                "holder" => holder,
                _ => bwrap,
            });
            let out = child.wait_with_output().unwrap();
            match victim {
                "client" => {}
                // The run goes on to its end without its holder.
                "holder" => assert_eq!(out.status.code(), Some(0), "{ctx}: {out:?}"),
                _ => assert_ne!(out.status.code(), Some(0), "{ctx}"),
            }
            // Whatever was left running of the session ends.
            wait_gone(bwrap, &format!("{ctx}: bubblewrap"));
            wait_gone(holder, &format!("{ctx}: the holder"));
            for p in proxies {
                kill9(p);
            }
            if victim == "holder" {
                // Held by no one until the next run: the doctor names them.
                let check = doctor_placeholders(user, &dir);
                assert_eq!(check["status"], "warning", "{ctx}: {check}");
                let found = check["found"].as_str().unwrap();
                assert!(
                    found.contains(&format!("{}/.bashrc", dir.display())),
                    "{ctx}: {found}"
                );
            } else {
                assert_eq!(settled(&dir), Vec::<String>::new(), "{ctx}");
            }
            // The next session runs, and cleans up after both.
            let out: Output = srt(user, &dir, &settings, "echo next").output().unwrap();
            let ctx = format!(
                "{ctx}: {:?} {} / left {:?}",
                out.status,
                String::from_utf8_lossy(&out.stderr),
                left(&dir)
            );
            assert_eq!(out.status.code(), Some(0), "{ctx}");
            assert_eq!(String::from_utf8_lossy(&out.stdout), "next\n", "{ctx}");
            assert_eq!(settled(&dir), Vec::<String>::new(), "{ctx}");
            assert_eq!(doctor_placeholders(user, &dir)["status"], "ok", "{ctx}");
        }
    }
}

/// The shim killed at any moment between its start and its exec of
/// bubblewrap (while it makes and takes the placeholders, or forks their
/// holder): 60 runs of a line with srt's placeholders, each stopped after
/// 0 to 1.5 ms and killed if it has not yet become bubblewrap; then one
/// whose holder is killed mid-run. No hold is left (the next run removes every placeholder),
/// nor anything the next run cannot tell from a user's file.
#[test]
fn the_shim_killed_at_any_moment_leaves_nothing_the_next_run_does_not_remove() {
    if which("bwrap").is_none() {
        common::skip("bubblewrap is not installed");
        return;
    }
    for user in common::users_in_loop() {
        let dir = project(user, "kill-shim");
        let d = dir.display();
        let line = |cmd: &str| {
            let mut c = Command::new(shim());
            c.args([
                "--die-with-parent",
                "--unshare-pid",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--bind",
            ])
            .arg(&dir)
            .arg(&dir);
            for f in [".bashrc", ".mcp.json", ".gitconfig"] {
                c.args(["--ro-bind", "/dev/null"]).arg(format!("{d}/{f}"));
            }
            c.args(["--ro-bind", "/dev/null"])
                .arg(format!("{d}/.claude/commands/x"));
            c.args(["--", "/bin/sh", "-c", cmd])
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("HOME", home(user))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if let Some(u) = uid_of(user) {
                c.uid(u).gid(u);
            }
            c
        };
        // Stopped first, so the kill lands on the shim itself, not on the
        // bubblewrap it may have become meanwhile (which runs to its end).
        let mut killed = 0;
        for n in 0..60u64 {
            let mut child = line("true").spawn().unwrap();
            std::thread::sleep(Duration::from_micros(n * 25));
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP);
            // Stopped for sure (a stop lands when the process next leaves
            // the kernel: it may still exec meanwhile).
            match nix::sys::wait::waitpid(pid, Some(nix::sys::wait::WaitPidFlag::WUNTRACED)) {
                Ok(nix::sys::wait::WaitStatus::Stopped(..)) => {}
                // Ended before the stop (reaped now).
                Ok(nix::sys::wait::WaitStatus::Exited(..)) => continue,
                other => panic!("{user:?}: {other:?}"),
            }
            let exe = std::fs::read_link(format!("/proc/{}/exe", child.id()));
            if exe.is_ok_and(|e| e == std::fs::canonicalize(&fixture().helper).unwrap()) {
                kill9(child.id());
                killed += 1;
            }
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT);
            let _ = child.wait();
        }
        eprintln!("{user:?}: {killed} of 60 runs killed as the shim");
        assert!(
            killed >= 10,
            "{user:?}: only {killed} runs killed before bubblewrap"
        );
        // Holders of the killed shims end with them.
        std::thread::sleep(Duration::from_millis(200));
        // And a run whose holder is killed: its placeholders (a folder
        // made above one among them) stay, held by no one, for the next.
        let child = line("sleep 1").spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let holder = loop {
            if let Some(h) = descendant(child.id(), &fixture().helper) {
                break h;
            }
            assert!(Instant::now() < deadline, "{user:?}: no holder");
            std::thread::sleep(Duration::from_millis(5));
        };
        kill9(holder);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{user:?}: {out:?}");
        // (Besides what the killed shims left at passing names, which
        // only a release clears.)
        let held: Vec<String> = left(&dir)
            .into_iter()
            .filter(|n| !n.contains(".apply-seccomp-"))
            .collect();
        assert_eq!(
            held,
            [".bashrc", ".claude", ".gitconfig", ".mcp.json"],
            "{user:?}"
        );
        let out = line("test -e .bashrc && ! test -s .bashrc")
            .current_dir(&dir)
            .status()
            .unwrap();
        assert!(out.success(), "{user:?}: the next run failed: {out:?}");
        assert_eq!(settled(&dir), Vec::<String>::new(), "{user:?}");
    }
}

/// A real deny file deleted on the host between two commands of a
/// session: the next command runs, the path protected (its write fails),
/// and nothing is left after.
#[test]
fn a_deny_path_deleted_on_the_host_is_protected_in_the_next_command() {
    if !ready() {
        return;
    }
    for user in common::users_in_loop() {
        let dir = project(user, "deleted");
        let settings = settings(&dir, true);
        let bashrc = dir.join(".bashrc");
        std::fs::write(&bashrc, "# mine\n").unwrap();
        if let Some(u) = uid_of(user) {
            std::os::unix::fs::chown(&bashrc, Some(u), Some(u)).unwrap();
        }
        let out = srt(user, &dir, &settings, "true").output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        std::fs::remove_file(&bashrc).unwrap();
        let out = srt(
            user,
            &dir,
            &settings,
            "(echo MARK >> .bashrc) 2>/dev/null && echo wrote; echo done",
        )
        .output()
        .unwrap();
        let ctx = format!("{user:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n", "{ctx}");
        assert!(settled(&dir).is_empty(), "{ctx}: left {:?}", left(&dir));
    }
}

/// Claude Code's lines: srt's library in multicall mode (`applyPath
/// /proc/self/fd/3`), its line run by `/bin/sh -c` with fd 3 on the
/// embedded helper, and, as Claude Code passes them, `--info-fd 5` and
/// `--sync-fd 6` on pipes; the shim first on PATH. The placeholders are
/// kept (made, and gone after), bubblewrap's info arrives on fd 5 (its
/// `child-pid`), and fd 6 ends when the run ends: the shim keeps neither
/// open.
#[test]
fn claude_codes_lines_with_info_and_sync_fds_are_kept_too() {
    if !ready() {
        return;
    }
    let package = common::srt_package().unwrap();
    let script = format!(
        "import {{ SandboxManager }} from '{}';\n\
         import {{ spawn }} from 'node:child_process';\n\
         import {{ openSync, writeFileSync }} from 'node:fs';\n\
         const [dir, standin, out] = process.argv.slice(2);\n\
         await SandboxManager.initialize({{ network: {{}}, filesystem: {{ denyRead: [], allowWrite: [dir], denyWrite: [] }}, seccomp: {{ applyPath: '/proc/self/fd/3', argv0: 'apply-seccomp' }} }});\n\
         let wrapped = await SandboxManager.wrapWithSandbox('echo ran-inside');\n\
         wrapped = wrapped.replace(/^(\\S*bwrap) /, '$1 --info-fd 5 --sync-fd 6 ');\n\
         const child = spawn('/bin/sh', ['-c', wrapped], {{ stdio: ['ignore', 'inherit', 'inherit', openSync(standin, 'r'), 'ignore', 'pipe', 'pipe'] }});\n\
         let info = '';\n\
         child.stdio[5].on('data', d => info += d);\n\
         const synced = new Promise(done => child.stdio[6].on('end', () => done(Date.now())).resume());\n\
         const code = await new Promise(done => child.on('exit', c => done(c ?? 128)));\n\
         const exited = Date.now();\n\
         const syncEnd = await Promise.race([synced, new Promise(done => setTimeout(() => done(null), 5000))]);\n\
         writeFileSync(out, JSON.stringify({{ code, info, syncAfterExitMs: syncEnd === null ? null : syncEnd - exited, wrapped }}));\n\
         await SandboxManager.reset();\n",
        common::srt_index(package).display()
    );
    let shim_bin = shim().parent().unwrap().to_path_buf();
    for user in common::users_in_loop() {
        let dir = project(user, "claude-code");
        let js = dir.with_extension("mjs");
        std::fs::write(&js, &script).unwrap();
        let standin = fixture().script(
            &format!("keep-stand-in-{user:?}"),
            "#!/bin/sh\necho EMBEDDED-HELPER-RAN\nexec \"$@\"\n",
        );
        let out_file = dir.with_extension("out.json");
        let mut cmd = Command::new("node");
        cmd.arg(&js)
            .arg(&dir)
            .arg(&standin)
            .arg(&out_file)
            .env_clear()
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", shim_bin.display()),
            )
            .env("HOME", home(user))
            .env("SRT_DEBUG", "1")
            .current_dir(&dir)
            .stdin(Stdio::null());
        if let Some(u) = uid_of(user) {
            cmd.uid(u).gid(u);
            let _ = std::os::unix::fs::chown(dir.with_extension("out.json"), Some(u), Some(u));
        }
        // The result file is written by the (perhaps unprivileged) client.
        let parent = out_file.parent().unwrap();
        let _ =
            std::fs::set_permissions(parent, std::os::unix::fs::PermissionsExt::from_mode(0o777));
        let out = cmd.output().unwrap();
        let (text, err) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        let ctx = format!("{user:?}: {text}\n{err}");
        assert!(out.status.success(), "{ctx}");
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
        assert_eq!(result["code"], 0, "{ctx}\n{result}");
        assert!(text.contains("ran-inside"), "{ctx}");
        assert!(!text.contains("EMBEDDED-HELPER-RAN"), "{ctx}");
        assert!(
            result["wrapped"]
                .as_str()
                .unwrap()
                .contains("--info-fd 5 --sync-fd 6"),
            "{result}"
        );
        assert!(
            result["info"].as_str().unwrap().contains("\"child-pid\""),
            "{result}"
        );
        // The sync pipe ended with the run, not seconds later.
        assert!(
            result["syncAfterExitMs"]
                .as_i64()
                .is_some_and(|ms| ms < 2000),
            "{result}"
        );
        assert!(err.contains("bwrap shim: placeholders kept ("), "{ctx}");
        assert!(err.contains(" made, "), "{ctx}");
        assert!(settled(&dir).is_empty(), "{ctx}: left {:?}", left(&dir));
    }
}
