//! The mount guard (src/run/guard.rs), under real bubblewrap, as root and as
//! uid 65534, on both ways in: a protecting mount removed on the host
//! while the command runs stops it before its write; one removed before
//! the helper starts stops it unrun; a normal run is never stopped. Then
//! the same through the published client (its `applyPath`, and the shim),
//! and several clients looping in one directory.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::threats::WAYS;
use common::{BWRAP_OPTIONS, NOBODY, User, fixture, is_root, users};

fn have_bwrap() -> bool {
    common::which("bwrap").is_some() || common::skip("bubblewrap is not installed")
}

/// A fresh folder writable by `user`, with `F` (an existing file, self-bound
/// read-only) and two fifos.
fn folder(user: User, tag: &str) -> PathBuf {
    let dir = common::fresh_folder(&format!("guard-{tag}-{user:?}"));
    std::fs::write(dir.join("F"), "orig\n").unwrap();
    for fifo in ["go", "start"] {
        let status = Command::new("mkfifo").arg(dir.join(fifo)).status().unwrap();
        assert!(status.success());
    }
    if user == User::Unprivileged && is_root() {
        for entry in ["", "F", "go", "start"] {
            std::os::unix::fs::chown(dir.join(entry), Some(NOBODY), Some(NOBODY)).unwrap();
        }
    }
    dir
}

/// bubblewrap with srt's options, the folder read-write, a placeholder
/// `P` (`--ro-bind /dev/null`, created by bwrap) and `F` bound onto
/// itself read-only, running `argv`.
fn sandbox(user: User, dir: &Path, argv: &[String]) -> Command {
    sandbox_with(user, dir, &[], argv)
}

/// [`sandbox`], with `more` options after its mounts.
fn sandbox_with(user: User, dir: &Path, more: &[String], argv: &[String]) -> Command {
    let d = dir.to_string_lossy().into_owned();
    let mut args: Vec<String> = BWRAP_OPTIONS.iter().map(|s| s.to_string()).collect();
    if user == User::Root {
        args.extend(["--cap-add".into(), "CAP_SETFCAP".into()]);
    }
    args.extend([
        "--bind".into(),
        d.clone(),
        d.clone(),
        "--ro-bind".into(),
        "/dev/null".into(),
        format!("{d}/P"),
        "--ro-bind".into(),
        format!("{d}/F"),
        format!("{d}/F"),
    ]);
    args.extend(more.iter().cloned());
    args.push("--".into());
    args.extend(argv.iter().cloned());
    common::command(
        common::Place::Host,
        user,
        &[],
        &common::which("bwrap").unwrap(),
        &args,
    )
}

type Lines = std::io::Lines<BufReader<std::process::ChildStdout>>;

/// Starts `argv` in the sandbox and waits for its first line, `first`.
fn start_sandbox(user: User, dir: &Path, argv: &[String], first: &str) -> (Child, Lines) {
    let mut child = sandbox(user, dir, argv)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(
        lines.next().map(Result::unwrap).as_deref(),
        Some(first),
        "{user:?}: {}",
        read_all(child.stderr.take())
    );
    (child, lines)
}

/// Writes a line to a fifo if anyone reads it (never blocks).
fn release(fifo: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo)
    {
        let _ = std::io::Write::write_all(&mut f, b"go\n");
    }
}

/// Waits for `child`, at most `limit`; `None` if it is still running.
fn wait_for(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits (10 s at most) for a spinning sandbox of trial `trial` to be
/// stopped by the guard: exit status 125 and the guard's words; its
/// standard error.
fn stopped_by_the_guard(child: &mut Child, trial: u32) -> String {
    let Some(status) = wait_for(child, Duration::from_secs(10)) else {
        let _ = child.kill();
        panic!("trial {trial}: the spinning command was never stopped");
    };
    let err = read_all(child.stderr.take());
    assert_eq!(status.code(), Some(125), "trial {trial}: {err}");
    assert!(
        err.contains("the command was stopped"),
        "trial {trial}: {err}"
    );
    err
}

fn read_all(r: Option<impl Read>) -> String {
    let mut s = String::new();
    if let Some(mut r) = r {
        let _ = r.read_to_string(&mut s);
    }
    s
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outside {
    /// The host deletes the placeholder (another sandbox's clean-up).
    UnlinkPlaceholder,
    /// The host renames a new file over the self-bound one (an editor's
    /// atomic save, `git config`).
    RenameOver,
    /// The host renames the self-bound file away and writes a new one in
    /// its place (an editor that keeps a backup: vim's default on many
    /// setups). No mount table changes: the mount moves with the file.
    RenameAway,
}

/// The command waits on a fifo, then writes both protected paths. The
/// test changes the host meanwhile and never releases the fifo unless the
/// helper is still running 5 s later (then the guard has failed, and the
/// writes show it).
#[test]
fn a_protection_removed_on_the_host_stops_the_command_before_its_write() {
    if !have_bwrap() {
        return;
    }
    for way in WAYS {
        for user in users() {
            for outside in [
                Outside::UnlinkPlaceholder,
                Outside::RenameOver,
                Outside::RenameAway,
            ] {
                let what = format!("{way:?} {user:?} {outside:?}");
                let dir = folder(user, "during");
                let d = dir.display();
                let script = format!(
                    "echo ready; read x < {d}/go; echo pwned > {d}/P; echo pwned > {d}/F; \
                     echo wrote"
                );
                let helper = fixture().helper.to_string_lossy().into_owned();
                let argv = [&[helper][..], &way.args(&["/bin/sh", "-c", &script])].concat();
                let (mut child, lines) = start_sandbox(user, &dir, &argv, "ready");
                let path = match outside {
                    Outside::UnlinkPlaceholder => {
                        std::fs::remove_file(dir.join("P")).unwrap();
                        dir.join("P")
                    }
                    Outside::RenameOver => {
                        std::fs::write(dir.join("F.new"), "new\n").unwrap();
                        std::fs::rename(dir.join("F.new"), dir.join("F")).unwrap();
                        dir.join("F")
                    }
                    Outside::RenameAway => {
                        std::fs::rename(dir.join("F"), dir.join("F.bak")).unwrap();
                        std::fs::write(dir.join("F"), "new\n").unwrap();
                        dir.join("F")
                    }
                };
                let status = wait_for(&mut child, Duration::from_secs(5));
                release(&dir.join("go"));
                let status = status.unwrap_or_else(|| child.wait().unwrap());
                let rest: Vec<String> = lines.map_while(Result::ok).collect();
                let err = read_all(child.stderr.take());
                let ctx = format!("{what}: {status:?}\n{rest:?}\n{err}");
                assert_eq!(status.code(), Some(125), "{ctx}");
                assert!(!rest.iter().any(|l| l == "wrote"), "{ctx}");
                let option = match outside {
                    Outside::UnlinkPlaceholder => "--ro-bind /dev/null".to_string(),
                    Outside::RenameOver | Outside::RenameAway => {
                        format!("--ro-bind {}", path.display())
                    }
                };
                let want = format!(
                    "apply-seccomp: mount guard: {p} (bubblewrap's {option} {p}) is no longer \
                     mounted in the sandbox: it was removed from outside or moved away",
                    p = path.display()
                );
                assert!(err.contains(&want), "{ctx}");
                assert!(err.contains("the command was stopped"), "{ctx}");
                assert!(err.contains("Running the command again is safe"), "{ctx}");
                // Nothing the command wrote reached the host: P is gone, or
                // still bwrap's empty placeholder.
                let p = std::fs::read_to_string(dir.join("P")).unwrap_or_default();
                assert_eq!(p, "", "{ctx}");
                assert_eq!(
                    std::fs::read_to_string(dir.join("F")).unwrap(),
                    match outside {
                        Outside::UnlinkPlaceholder => "orig\n",
                        Outside::RenameOver | Outside::RenameAway => "new\n",
                    },
                    "{ctx}"
                );
                if outside == Outside::RenameAway {
                    assert_eq!(
                        std::fs::read_to_string(dir.join("F.bak")).unwrap(),
                        "orig\n"
                    );
                }
                // A rename over leaves a file at the path: the message says
                // so. (After a rename away, the new file may come before the
                // stop or after it.)
                let exists_now =
                    err.contains("exists now: it may have been written while unprotected");
                match outside {
                    Outside::UnlinkPlaceholder => assert!(!exists_now, "{ctx}"),
                    Outside::RenameOver => assert!(exists_now, "{ctx}"),
                    Outside::RenameAway => {}
                }
            }
        }
    }
}

/// With `SRT_OBSERVE_SOCK`, the guard's stop is one JSON line there too.
#[test]
fn the_observation_socket_hears_of_the_stop() {
    if !have_bwrap() {
        return;
    }
    let user = User::Unprivileged;
    let dir = folder(user, "observed");
    let sock = dir.join("observe.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o777)).unwrap();
    let d = dir.display();
    let script = format!("echo ready; read x < {d}/go");
    let argv = vec![
        fixture().helper.to_string_lossy().into_owned(),
        "/bin/sh".into(),
        "-c".into(),
        script,
    ];
    let mut cmd = sandbox(user, &dir, &argv);
    cmd.env("SRT_OBSERVE_SOCK", &sock)
        .env("SRT_ENCODED_CMD", "eA==")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().map(Result::unwrap).as_deref(), Some("ready"));
    std::fs::remove_file(dir.join("P")).unwrap();
    let status = wait_for(&mut child, Duration::from_secs(5));
    release(&dir.join("go"));
    let status = status.unwrap_or_else(|| child.wait().unwrap());
    assert_eq!(status.code(), Some(125));
    let mut text = String::new();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = conn.read_to_string(&mut text);
    let want = format!(
        "{{\"mount_guard\":\"lost\",\"path\":\"{d}/P\",\"before_start\":false,\
         \"exists_now\":false,\"encodedCommand\":\"eA==\"}}"
    );
    assert!(text.lines().any(|l| l == want), "{text}");
}

/// The same sandbox, run normally 1000 times in a loop (ten at a time), as
/// uid 65534 and, on a smaller scale, as root: the guard never stops one.
#[test]
fn normal_runs_are_never_stopped() {
    if !have_bwrap() {
        return;
    }
    for way in WAYS {
        for user in users() {
            let runs = if user == User::Unprivileged {
                common::rounds(1000, 200)
            } else {
                200
            };
            let dir = folder(user, "normal");
            let helper = fixture().helper.to_string_lossy().into_owned();
            let argv = [&[helper][..], &way.args(&["/bin/echo", "ok"])].concat();
            let stops = AtomicU32::new(0);
            let wrong = std::sync::Mutex::new(Vec::new());
            std::thread::scope(|s| {
                for _ in 0..10 {
                    s.spawn(|| {
                        for _ in 0..runs / 10 {
                            let out = sandbox(user, &dir, &argv).output().unwrap();
                            let err = String::from_utf8_lossy(&out.stderr).into_owned();
                            if err.contains("mount guard") {
                                stops.fetch_add(1, Ordering::Relaxed);
                            }
                            if out.status.code() != Some(0) || out.stdout != b"ok\n" {
                                wrong
                                    .lock()
                                    .unwrap()
                                    .push(format!("{:?}: {err}", out.status));
                            }
                        }
                    });
                }
            });
            let wrong = wrong.into_inner().unwrap();
            assert_eq!(
                stops.load(Ordering::Relaxed),
                0,
                "{way:?} {user:?}: {wrong:?}"
            );
            assert!(wrong.is_empty(), "{way:?} {user:?}: {wrong:?}");
        }
    }
}

/// Runs `exec` in the sandbox after a pause: the script there marks that
/// it runs (so bwrap has made the placeholder on the host and mounted it)
/// and waits on a fifo; the test deletes the placeholder meanwhile, then
/// lets the script go on. Returns the status, stdout and stderr.
fn delete_placeholder_then_exec(
    user: User,
    dir: &Path,
    exec: &str,
) -> (std::process::ExitStatus, String, String) {
    let d = dir.display();
    let script = format!(": > {d}/waiting; read x < {d}/start; exec {exec}");
    let argv = vec!["/bin/sh".to_string(), "-c".into(), script];
    let mut child = sandbox(user, dir, &argv)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !dir.join("waiting").exists() {
        assert!(Instant::now() < deadline, "{user:?}: bwrap never got ready");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::fs::remove_file(dir.join("P")).unwrap();
    assert!(
        release_when_read(&dir.join("start")),
        "{user:?}: the script never read"
    );
    let status = child.wait().unwrap();
    let out = read_all(child.stdout.take());
    let err = read_all(child.stderr.take());
    (status, out, err)
}

/// bubblewrap has set up the sandbox and runs a script that waits on a
/// fifo before it execs the helper; the host deletes the placeholder
/// meanwhile. The helper's check before the command finds it gone.
#[test]
fn a_protection_removed_before_the_helper_starts_keeps_the_command_from_running() {
    if !have_bwrap() {
        return;
    }
    for way in WAYS {
        for user in users() {
            let what = format!("{way:?} {user:?}");
            let dir = folder(user, "before");
            let d = dir.display();
            let helper = fixture().helper.display();
            let inner = way.args(&["/bin/sh", "-c", "echo ran"]).join(" ");
            let (status, out, err) =
                delete_placeholder_then_exec(user, &dir, &format!("{helper} {inner}"));
            let ctx = format!("{what}: {status:?}\n{out}\n{err}");
            assert_eq!(status.code(), Some(125), "{ctx}");
            assert!(!out.contains("ran"), "{ctx}");
            assert!(
                err.contains(&format!(
                    "apply-seccomp: mount guard: {d}/P (bubblewrap's --ro-bind /dev/null {d}/P) \
                     is no longer mounted in the sandbox"
                )),
                "{ctx}"
            );
            assert!(err.contains("the command did not run"), "{ctx}");
        }
    }
}

/// The worker waits for the check, on either way in (it starts before
/// the check on both): with strace (inside the sandbox) holding each of
/// the stub's `statx` calls (the check of each destination) for 300 ms, a
/// placeholder already gone still keeps the command from running. Without
/// the wait, the command would run during the hold (checked: a worker
/// that did not wait for the stub's key printed "ran").
#[test]
fn the_command_waits_for_the_check_however_long_it_takes() {
    if !have_bwrap() {
        return;
    }
    let Some(strace) = common::which("strace") else {
        common::skip("strace is not installed");
        return;
    };
    let Some(probe) = fixture().probe() else {
        return;
    };
    for way in WAYS {
        for user in users() {
            let dir = folder(user, "slow");
            let helper = fixture().helper.display();
            // The command is the static probe: no loader, so no statx of
            // its own for strace to hold.
            let inner = way.args(&[probe.to_str().unwrap(), "ran"]).join(" ");
            let exec = format!(
                "{s} -f -qq -o /dev/null -e trace=statx -e inject=statx:delay_enter=300000 \
                 {helper} {inner}",
                s = strace.display(),
            );
            let (status, out, err) = delete_placeholder_then_exec(user, &dir, &exec);
            let ctx = format!("{way:?} {user:?}: {status:?}\n{out}\n{err}");
            assert_eq!(status.code(), Some(125), "{ctx}");
            assert!(!out.contains("ran"), "{ctx}");
            assert!(err.contains("the command did not run"), "{ctx}");
        }
    }
}

/// A restricting mount that a later one covers (here a placeholder made
/// before srt's `--ro-bind / /`, as srt does with its proxy socket) is
/// not even listed by the kernel any more: it is neither required nor
/// watched, and the run goes on.
#[test]
fn a_mount_a_later_one_covers_is_not_required() {
    if !have_bwrap() {
        return;
    }
    for user in users() {
        let dir = folder(user, "covered");
        let mut args: Vec<String> = vec![
            "--ro-bind".into(),
            "/dev/null".into(),
            "/covered-placeholder".into(),
        ];
        args.extend(BWRAP_OPTIONS.iter().map(|s| s.to_string()));
        if user == User::Root {
            args.extend(["--cap-add".into(), "CAP_SETFCAP".into()]);
        }
        args.extend([
            "--".into(),
            fixture().helper.to_string_lossy().into_owned(),
            "/bin/echo".into(),
            "ok".into(),
        ]);
        let out = common::command(
            common::Place::Host,
            user,
            &[("SRT_DEBUG", "1")],
            &common::which("bwrap").unwrap(),
            &args,
        )
        .current_dir(&dir)
        .output()
        .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{user:?}: {err}");
        assert!(
            err.contains(
                "1 covered by a later mount, so protecting nothing in this sandbox: \
                 /covered-placeholder)"
            ),
            "{user:?}: {err}"
        );
    }
}

/// Writes a line to `fifo` once someone has it open for reading (at most
/// 10 s); whether it could.
fn release_when_read(fifo: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        // ENXIO until a reader has it open.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fifo)
        {
            return std::io::Write::write_all(&mut f, b"go\n").is_ok();
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// A git folder for the client, owned by `user`, with the two fifos; the
/// client's own deny paths (`.bashrc`, `.mcp.json`, ...) do not exist, so
/// it has bubblewrap make placeholders for them.
fn client_folder(user: User, tag: &str) -> PathBuf {
    let dir = folder(user, tag);
    let status = Command::new("git")
        .args(["init", "-q"])
        .arg(&dir)
        .status()
        .unwrap();
    assert!(status.success());
    if user == User::Unprivileged && is_root() {
        let status = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success());
    }
    let _ = std::fs::remove_file(dir.join("F"));
    dir
}

/// The client's settings: `allowWrite` the folder, `applyPath` the helper
/// (or a wrapper of it).
fn client_settings(dir: &Path, apply_path: &Path) -> PathBuf {
    let file = dir.join("srt-settings.json");
    std::fs::write(
        &file,
        format!(
            r#"{{"network": {{"allowedDomains": [], "deniedDomains": []}},
  "filesystem": {{"denyRead": [], "allowWrite": ["{d}"], "denyWrite": []}},
  "seccomp": {{"applyPath": "{h}"}}}}"#,
            d = dir.display(),
            h = apply_path.display()
        ),
    )
    .unwrap();
    file
}

/// Runs `cmd` (the client) as `user` in `dir`; returns the child.
fn spawn_client(user: User, dir: &Path, mut cmd: Command) -> Child {
    use std::os::unix::process::CommandExt;
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", dir)
        .env("TMPDIR", common::client_tmp())
        .env("SRT_DEBUG", "1")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if user == User::Unprivileged && is_root() {
        cmd.uid(NOBODY).gid(NOBODY);
    }
    cmd.spawn().expect("run the client")
}

/// Waits for the sandbox's script to signal it is waiting, deletes the
/// client's `.bashrc` placeholder on the host, lets the script go on, and
/// checks the command never ran and the guard said why.
fn delete_placeholder_before_the_helper(what: &str, dir: &Path, mut child: Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !dir.join("waiting").exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "{what}: the client ended first ({status}): {}",
                read_all(child.stderr.take())
            );
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the sandbox never started"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // The client's placeholder (0 bytes), or the shim's (its mark: the
    // guard is the backstop for a user deleting even that one).
    let placeholder = dir.join(".bashrc");
    let found = std::fs::read(&placeholder).ok();
    assert!(
        found.as_deref().is_some_and(|f| f.is_empty()
            || f.starts_with(b"# A placeholder: apply-seccomp's bwrap shim keeps it here")),
        "{what}: no placeholder for .bashrc: {found:?}"
    );
    std::fs::remove_file(&placeholder).unwrap();
    assert!(release_when_read(&dir.join("start")), "{what}");
    let status = child.wait().unwrap();
    let out = read_all(child.stdout.take());
    let err = read_all(child.stderr.take());
    let ctx = format!("{what}: {status:?}\n{out}\n{err}");
    assert!(!out.contains("COMMAND-RAN"), "{ctx}");
    assert!(
        err.contains(&format!(
            "apply-seccomp: mount guard: {p} (bubblewrap's --ro-bind /dev/null {p}) is no longer \
             mounted in the sandbox",
            p = placeholder.display()
        )),
        "{ctx}"
    );
    assert!(err.contains("the command did not run"), "{ctx}");
    assert_ne!(status.code(), Some(0), "{ctx}");
}

/// Through the published client and `seccomp.applyPath`: the path is a
/// wrapper that waits on a fifo inside the sandbox before it execs the
/// helper, so the test can delete a placeholder the client made in that
/// window.
#[test]
fn through_srts_apply_path_a_placeholder_deleted_before_the_start_is_caught() {
    if !have_bwrap() {
        return;
    }
    let Some(package) = common::srt_package() else {
        return;
    };
    for user in users() {
        let dir = client_folder(user, "srt-before");
        let d = dir.display();
        let wrapper = fixture().script(
            &format!("wait-then-helper-{user:?}"),
            &format!(
                "#!/bin/sh\n: > {d}/waiting\nread x < {d}/start\nexec {} \"$@\"\n",
                fixture().helper.display()
            ),
        );
        let settings = client_settings(&dir, &wrapper);
        let mut cmd = Command::new(package.join("node_modules/.bin/srt"));
        cmd.arg("-s")
            .arg(&settings)
            .arg("-c")
            .arg("echo COMMAND-RAN");
        let child = spawn_client(user, &dir, cmd);
        delete_placeholder_before_the_helper(&format!("srt {user:?}"), &dir, child);
    }
}

/// Through the `bwrap` shim, with the command line a multicall client
/// builds (the srt library, `applyPath: /proc/self/fd/3`): a bubblewrap
/// wrapper (`APPLY_SECCOMP_BWRAP`) puts the wait at the head of the
/// sandbox's script, before the helper the shim put in place.
#[test]
fn through_the_shim_a_placeholder_deleted_before_the_start_is_caught() {
    if !have_bwrap() {
        return;
    }
    let Some(package) = common::srt_package() else {
        return;
    };
    let shim = fixture().dir.join("guard-shim-bin");
    if !shim.join("bwrap").exists() {
        std::fs::create_dir_all(&shim).unwrap();
        std::os::unix::fs::symlink(&fixture().helper, shim.join("bwrap")).unwrap();
    }
    for user in users() {
        let dir = client_folder(user, "shim-before");
        let d = dir.display();
        let delaying = fixture().script(
            &format!("delaying-bwrap-{user:?}"),
            &format!(
                "#!/bin/bash\nargs=(\"$@\")\nlast=$((${{#args[@]}} - 1))\n\
                 args[$last]=\": > {d}/waiting; read x < {d}/start; ${{args[$last]}}\"\n\
                 exec {} \"${{args[@]}}\"\n",
                common::which("bwrap").unwrap().display()
            ),
        );
        let standin = fixture().script(
            &format!("guard-stand-in-{user:?}"),
            "#!/bin/sh\necho EMBEDDED-HELPER-RAN\nexec \"$@\"\n",
        );
        let js = dir.join("multicall.mjs");
        std::fs::write(&js, common::multicall_script(package)).unwrap();
        let config = format!(
            r#"{{"network": {{}}, "filesystem": {{"denyRead": [], "allowWrite": ["{d}"], "denyWrite": []}},
                "seccomp": {{"applyPath": "/proc/self/fd/3", "argv0": "apply-seccomp"}}}}"#
        );
        let mut cmd = Command::new("node");
        cmd.arg(&js)
            .arg(config)
            .arg("echo COMMAND-RAN")
            .arg(&standin)
            .arg(dir.join("wrapped.txt"));
        let child = {
            use std::os::unix::process::CommandExt;
            cmd.env_clear()
                .env(
                    "PATH",
                    format!("{}:/usr/local/bin:/usr/bin:/bin", shim.display()),
                )
                .env("APPLY_SECCOMP_BWRAP", &delaying)
                .env("HOME", &dir)
                .env("SRT_DEBUG", "1")
                .current_dir(&dir)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if user == User::Unprivileged && is_root() {
                cmd.uid(NOBODY).gid(NOBODY);
            }
            cmd.spawn().unwrap()
        };
        delete_placeholder_before_the_helper(&format!("shim {user:?}"), &dir, child);
    }
}

/// Three `srt` processes looping in one git folder, as two terminals and
/// a headless run would: each client deletes the placeholders it made
/// when its command ends, which detaches them in the other clients'
/// running sandboxes. The command waits, then writes the denied paths.
/// No write may land; a command whose protection went away is stopped.
///
/// `.claude/settings.json` is written and counted too, apart: where
/// `.claude` exists (another client's bwrap has just made it as a mount
/// point), srt 0.0.83 binds it read-only before it binds the folder
/// read-write over it, so that protection never holds, whatever the
/// helper; the guard's debug line names it as covered.
#[test]
fn clients_looping_in_one_folder_never_write_a_denied_path() {
    if !have_bwrap() {
        return;
    }
    let Some(package) = common::srt_package() else {
        return;
    };
    const LOOPS: u32 = 3;
    // 12 commands a loop in the full suite, 4 in the developer's loop.
    let runs = common::rounds(12, 4);
    let user = User::Unprivileged;
    let dir = client_folder(user, "loops");
    let settings = client_settings(&dir, &fixture().helper);
    let denied = [".bashrc", ".gitconfig", ".mcp.json", ".vscode/tasks.json"];
    let covered = ".claude/settings.json";
    let script = format!(
        "sleep 0.4; for p in {} {covered}; do mkdir -p \"$(dirname \"$p\")\" 2>/dev/null; \
         (echo MARK >> \"$p\") 2>/dev/null && echo \"wrote $p\"; done; true",
        denied.join(" ")
    );
    let tally = std::sync::Mutex::new(common::Tally::default());
    std::thread::scope(|s| {
        for _ in 0..LOOPS {
            s.spawn(|| {
                for _ in 0..runs {
                    let mut cmd = Command::new(package.join("node_modules/.bin/srt"));
                    cmd.arg("-s").arg(&settings).arg("-c").arg(&script);
                    let child = spawn_client(user, &dir, cmd);
                    let out = child.wait_with_output().unwrap();
                    let text = String::from_utf8_lossy(&out.stdout);
                    let wrote = |p: &str| text.lines().any(|l| l == format!("wrote {p}"));
                    let mut t = tally.lock().unwrap();
                    t.add(&out, denied.iter().filter(|p| wrote(p)).count() as u32);
                    t.covered_writes += u32::from(wrote(covered));
                }
            });
        }
    });
    let t = tally.into_inner().unwrap();
    // On the host too: no denied path holds the command's text.
    let landed: Vec<&str> = denied
        .iter()
        .copied()
        .filter(|p| std::fs::read_to_string(dir.join(p)).is_ok_and(|text| text.contains("MARK")))
        .collect();
    eprintln!(
        "clients in one folder: {} runs, {} setup failures (bwrap), {} guard stops, {} writes \
         reported, denied paths holding the command's text: {landed:?}; through the client's \
         covered .claude: {} writes",
        t.runs, t.setup_failures, t.guard_stops, t.writes, t.covered_writes
    );
    assert_eq!(t.runs, LOOPS * runs);
    assert_eq!(t.writes, 0, "{t:?}");
    assert!(landed.is_empty(), "{landed:?} {t:?}");
    assert!(t.other_failures.is_empty(), "{t:?}");
}

/// The guard's limit, measured: a command that retries the write in a
/// tight loop from before the host deletes the placeholder. The guard must
/// still stop it every time; how often the write got in first (within the
/// guard's reaction time) is reported, not asserted: it is the race the
/// docs/mount-guard.md describes, and only the client can close it.
#[test]
fn a_command_spinning_on_the_write_is_still_stopped() {
    if !have_bwrap() {
        return;
    }
    let Some(probe) = fixture().probe() else {
        return;
    };
    const TRIALS: u32 = 20;
    let mut landed = 0;
    for trial in 0..TRIALS {
        let user = User::Unprivileged;
        let dir = folder(user, "spin");
        let target = format!("spin-write:{}/P", dir.display());
        let argv = vec![
            fixture().helper.to_string_lossy().into_owned(),
            probe.to_string_lossy().into_owned(),
            target,
        ];
        let (mut child, _lines) = start_sandbox(user, &dir, &argv, "spinning");
        std::fs::remove_file(dir.join("P")).unwrap();
        let err = stopped_by_the_guard(&mut child, trial);
        if std::fs::read_to_string(dir.join("P")).is_ok_and(|t| t == "pwned\n") {
            landed += 1;
            assert!(
                err.contains("exists now: it may have been written while unprotected"),
                "trial {trial}: a write landed and the message did not say so: {err}"
            );
        }
    }
    eprintln!(
        "a command spinning on the write: stopped in {TRIALS} of {TRIALS} trials; the write \
         landed first in {landed}"
    );
}

/// From inside, on a line that protects a nested path without pinning its
/// folder (srt pins every folder, which makes the rename fail with EBUSY;
/// another client's line may not): the command renames the folder away,
/// makes it again and writes the denied file. The mount table never
/// changes; the guard must see the rename and stop the command (before
/// the fix it ran to the end, status 0). Whether the write got in first
/// is the guard's reaction time, reported, not asserted.
#[test]
fn a_folder_renamed_from_inside_stops_the_command() {
    if !have_bwrap() {
        return;
    }
    let mut landed = 0;
    let mut runs = 0;
    for way in WAYS {
        for user in users() {
            let what = format!("{way:?} {user:?}");
            let dir = folder(user, "inside");
            let d = dir.to_string_lossy().into_owned();
            std::fs::create_dir_all(dir.join("sub")).unwrap();
            if user == User::Unprivileged && is_root() {
                std::os::unix::fs::chown(dir.join("sub"), Some(NOBODY), Some(NOBODY)).unwrap();
            }
            let script = format!(
                "mv {d}/sub {d}/sub.old && mkdir {d}/sub && echo x > {d}/sub/N; echo wrote; \
                 read x < {d}/go"
            );
            let helper = fixture().helper.to_string_lossy().into_owned();
            let argv = [&[helper][..], &way.args(&["/bin/sh", "-c", &script])].concat();
            let mut cmd = sandbox_with(
                user,
                &dir,
                &["--ro-bind".into(), "/dev/null".into(), format!("{d}/sub/N")],
                &argv,
            );
            let mut child = cmd
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let status = wait_for(&mut child, Duration::from_secs(10));
            release(&dir.join("go"));
            let status = status.unwrap_or_else(|| child.wait().unwrap());
            let err = read_all(child.stderr.take());
            let ctx = format!("{what}: {status:?}\n{err}");
            assert_eq!(status.code(), Some(125), "{ctx}");
            assert!(
                err.contains(&format!(
                    "apply-seccomp: mount guard: {d}/sub/N (bubblewrap's --ro-bind /dev/null \
                     {d}/sub/N) is no longer mounted in the sandbox"
                )),
                "{ctx}"
            );
            assert!(err.contains("the command was stopped"), "{ctx}");
            runs += 1;
            if std::fs::read_to_string(dir.join("sub/N")).is_ok_and(|t| t == "x\n") {
                landed += 1;
            }
        }
    }
    eprintln!(
        "a folder renamed from inside: stopped in {runs} of {runs} runs; the write landed first in {landed}"
    );
}

/// The host's rename away while the command spins on the path (the
/// review's attack: wait for `.bashrc.bak` to appear, then append to
/// `.bashrc`): stopped every time; how often the write got in first is
/// reported, not asserted (before the fix: 3 of 3 landed, status 0).
#[test]
fn a_protection_renamed_away_while_the_command_spins_is_stopped() {
    if !have_bwrap() {
        return;
    }
    const TRIALS: u32 = 10;
    let mut landed = 0;
    for trial in 0..TRIALS {
        let user = User::Unprivileged;
        let dir = folder(user, "spin-away");
        let d = dir.display();
        let script = format!(
            "echo ready; until [ -e {d}/F.bak ]; do :; done; echo PWNED >> {d}/F; echo wrote"
        );
        let argv = vec![
            fixture().helper.to_string_lossy().into_owned(),
            "/bin/sh".into(),
            "-c".into(),
            script,
        ];
        let (mut child, _lines) = start_sandbox(user, &dir, &argv, "ready");
        std::fs::rename(dir.join("F"), dir.join("F.bak")).unwrap();
        // The user's editor writes the new file: the user's own.
        std::fs::write(dir.join("F.new"), "new\n").unwrap();
        if is_root() {
            std::os::unix::fs::chown(dir.join("F.new"), Some(NOBODY), Some(NOBODY)).unwrap();
        }
        std::fs::rename(dir.join("F.new"), dir.join("F")).unwrap();
        stopped_by_the_guard(&mut child, trial);
        if std::fs::read_to_string(dir.join("F")).is_ok_and(|t| t.contains("PWNED")) {
            landed += 1;
        }
    }
    eprintln!(
        "a protection renamed away under a spinning command: stopped in {TRIALS} of {TRIALS} \
         trials; the write landed first in {landed}"
    );
}

/// Where the guard cannot watch the folders for renames (here no inotify
/// instance may be made: `user.max_inotify_instances` 0 in a user
/// namespace around bubblewrap), a rename away would go unseen: the
/// command does not run, and the message names the limit.
#[test]
fn renames_that_cannot_be_watched_keep_the_command_from_running() {
    if !have_bwrap() {
        return;
    }
    let Some(unshare) = common::which("unshare") else {
        common::skip("util-linux unshare is not installed");
        return;
    };
    for user in users() {
        let dir = folder(user, "unwatchable");
        let mut inner = vec![
            common::which("bwrap")
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        ];
        let line = sandbox(
            User::Root,
            &dir,
            &[
                fixture().helper.to_string_lossy().into_owned(),
                "/bin/sh".into(),
                "-c".into(),
                "echo ran".into(),
            ],
        );
        inner.extend(line.get_args().map(|a| a.to_string_lossy().into_owned()));
        let script = "echo 0 > /proc/sys/user/max_inotify_instances && exec \"$@\"".to_string();
        let mut args = vec![
            "--user".to_string(),
            "--map-root-user".into(),
            "/bin/sh".into(),
            "-c".into(),
            script,
            "sh".into(),
        ];
        args.extend(inner);
        let out = common::run(common::Place::Host, user, &unshare, &args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let ctx = format!("{user:?}: {:?}\n{err}", out.status);
        assert_eq!(out.status.code(), Some(125), "{ctx}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("ran"),
            "{ctx}"
        );
        assert!(
            err.contains(
                "apply-seccomp: mount guard: the folders of bubblewrap's protecting mounts \
                 cannot be watched for renames (inotify_init1: "
            ),
            "{ctx}"
        );
        assert!(err.contains("the command did not run"), "{ctx}");
        assert!(err.contains("user.max_inotify_instances"), "{ctx}");
    }
}

/// On the capability-free way under bubblewrap a holder keeps the rename
/// watches' inotify instance past the stub's exit (supervise/mod.rs,
/// `start_holder`), so that its release is not part of the stub's end:
/// during the run it is there, the stub's sibling (a child of the stub's
/// parent, which reaps it), and once the stub has exited it is gone,
/// though the sandbox runs on. The debug summary names it.
#[test]
fn the_capability_free_guards_holder_lives_as_long_as_the_stub() {
    if !have_bwrap() {
        return;
    }
    for user in users() {
        let dir = folder(user, "holder");
        let helper = fixture().helper.to_string_lossy().into_owned();
        // Each process running the helper: its pid and its parent's.
        let list = format!(
            "for p in /proc/[0-9]*; do \
               c=$(tr '\\0' ' ' < $p/cmdline 2>/dev/null); \
               case \"$c\" in \"{helper} --way-in\"*) \
                 echo \"$1 ${{p#/proc/}} $(sed -n 's/^PPid:[[:space:]]*//p' $p/status)\";; \
               esac; \
             done"
        );
        let script = format!(
            "list() {{ {list}; }}; \
             SRT_DEBUG=1 {helper} --way-in=capability-free /bin/sh -c '{}' sh during; \
             sleep 0.3; list after",
            list.replace('\'', "'\\''").replace("$1", "during")
        );
        let out = sandbox(user, &dir, &["/bin/sh".into(), "-c".into(), script])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{user:?}: {stdout}{stderr}");
        let during: Vec<Vec<&str>> = stdout
            .lines()
            .filter(|l| l.starts_with("during "))
            .map(|l| l.split(' ').collect())
            .collect();
        assert_eq!(during.len(), 2, "{user:?}: stub and holder: {stdout}");
        let (a, b) = (&during[0], &during[1]);
        assert_eq!(a[2], b[2], "{user:?}: siblings, one parent: {stdout}");
        assert!(
            !stdout.lines().any(|l| l.starts_with("after ")),
            "{user:?}: a helper process outlived the stub: {stdout}"
        );
        assert!(
            stderr.contains("a holder process releases the watches after the stub's exit"),
            "{user:?}: {stderr}"
        );
    }
}
