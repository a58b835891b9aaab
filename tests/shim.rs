//! The `bwrap` shim, with the command lines a multicall client really
//! builds: the srt library with `seccomp: {applyPath: '/proc/self/fd/3',
//! argv0: 'apply-seccomp'}`, run with `/bin/sh -c` and fd 3 open on a
//! stand-in for the embedded helper that records whether it ran.

mod common;

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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
    let dir = common::fresh_folder("shim-work");
    if let Some(u) = uid {
        std::os::unix::fs::chown(&dir, Some(u), Some(u)).unwrap();
    }
    dir
}

/// What the client is configured with, beyond the defaults.
#[derive(Default)]
struct Client {
    network: bool,
    nested: bool,
    /// Files in `denyWrite`.
    deny_write: Vec<PathBuf>,
    /// `APPLY_SECCOMP_LOG`.
    log: Option<PathBuf>,
}

/// Runs `script` the way a multicall client does, in `dir` (from [`work`])
/// as `uid`; returns the output, the wrapped command line, and whether the
/// stand-in ran.
fn multicall(
    uid: Option<u32>,
    dir: &Path,
    client: &Client,
    script: &str,
) -> (Output, String, bool) {
    let package = common::srt_package().expect("checked by the caller");
    let ran = dir.join("stand-in-ran");
    let standin = fixture().script(
        &format!("stand-in-{}", dir.file_name().unwrap().to_string_lossy()),
        &format!("#!/bin/sh\necho ran > {}\nexec \"$@\"\n", ran.display()),
    );
    let deny = client
        .deny_write
        .iter()
        .map(|p| format!("\"{}\"", p.display()))
        .collect::<Vec<_>>()
        .join(",");
    let config = format!(
        r#"{{"network": {net}, "filesystem": {{"denyRead": [], "allowWrite": ["{d}"], "denyWrite": [{deny}]}},
            "allowNestedUserNamespaces": {nested},
            "seccomp": {{"applyPath": "/proc/self/fd/3", "argv0": "apply-seccomp"}}}}"#,
        net = if client.network {
            r#"{"allowedDomains": [], "deniedDomains": []}"#
        } else {
            "{}"
        },
        nested = client.nested,
        d = dir.display()
    );
    // In a file: a long one passes the limit of one argument.
    let config_file = dir.join("config.json");
    std::fs::write(&config_file, config).unwrap();
    let js = dir.join("multicall.mjs");
    std::fs::write(&js, common::multicall_script(package)).unwrap();
    let record = dir.join("wrapped.txt");
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", shim_dir().display());
    let mut cmd = Command::new("node");
    cmd.arg(&js)
        .arg(format!("@{}", config_file.display()))
        .arg(script)
        .arg(&standin)
        .arg(&record)
        .env_clear()
        .env("PATH", path)
        .env("HOME", dir)
        .env("SRT_DEBUG", "1")
        .current_dir(dir)
        .stdin(Stdio::null());
    if let Some(log) = &client.log {
        cmd.env("APPLY_SECCOMP_LOG", log);
    }
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
    for uid in users() {
        // A listener outside the sandbox, in the folder the line makes
        // writable: the command must not reach it.
        let outside = work(uid).join("outside.sock");
        let _ = std::fs::remove_file(&outside);
        let _listener = std::os::unix::net::UnixListener::bind(&outside).unwrap();
        std::fs::set_permissions(
            &outside,
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap();
        let script = format!(
            "grep -E '^Seccomp_filters:' /proc/self/status; {} unix-stream unix-dgram inet \
             own-unix own-tcp connect-path:{}",
            probe.display(),
            outside.display()
        );
        for network in [true, false] {
            for nested in [false, true] {
                let what = format!("uid {uid:?}, network {network}, nested {nested}");
                let client = Client {
                    network,
                    nested,
                    ..Client::default()
                };
                let (out, wrapped, stand_in_ran) = multicall(uid, &work(uid), &client, &script);
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
                // The own-sockets policy (the default).
                assert_eq!(got["unix-stream"], "ok", "{what}");
                assert_eq!(got["unix-dgram"], "errno:EPERM", "{what}");
                assert_eq!(got["inet"], "ok", "{what}");
                assert_eq!(got["own-unix"], "ok", "{what}");
                assert_eq!(got["own-tcp"], "ok", "{what}");
                assert_eq!(got["connect-path"], "errno:EACCES", "{what}");
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
    let out = through_shim(&HOOKED, &[("SRT_DEBUG", "1")]);
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

/// The hook form a test can run without a client: the older one, with
/// `/proc/self/fd/3` after `--`, which the shim rewrites to the helper.
/// The command shows the filters and whether the shim's list leaked.
const HOOKED: [&str; 16] = [
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
    "grep Seccomp_filters /proc/self/status; echo leaked=$(env | grep -c APPLY_SECCOMP_SHIM)",
];

/// A `bwrap` wrapper script in a folder of its own that logs each run to
/// `count` and then runs a bwrap as `how` says: `naive` (the first `bwrap`
/// on PATH that is not itself), `next` (the first after its own folder),
/// `clearing` (as naive, with a cleared environment).
fn wrapper(how: &str, count: &Path) -> PathBuf {
    let dir = fixture().dir.join(format!("wrapper-{how}"));
    std::fs::create_dir_all(&dir).unwrap();
    let find = match how {
        "next" => {
            "here=$(cd \"$(dirname \"$0\")\" && pwd -P); seen=\n\
             for d in $PATH; do\n\
               if [ -z \"$seen\" ]; then [ \"$(cd \"$d\" 2>/dev/null && pwd -P)\" = \"$here\" ] && seen=1; continue; fi\n\
               [ -x \"$d/bwrap\" ] && exec \"$d/bwrap\" \"$@\"\n\
             done\n\
             exec /usr/bin/bwrap \"$@\"\n"
        }
        _ => {
            "self=$(readlink -f \"$0\")\n\
             for d in $PATH; do\n\
               c=\"$d/bwrap\"; [ -x \"$c\" ] || continue\n\
               [ \"$(readlink -f \"$c\")\" = \"$self\" ] && continue\n\
               EXEC \"$c\" \"$@\"\n\
             done\n\
             exit 127\n"
        }
    };
    let exec = if how == "clearing" {
        "exec env -i PATH=\"$PATH\""
    } else {
        "exec"
    };
    let text = format!(
        "#!/bin/sh\necho \"$0\" >> {}\nIFS=:\n{}",
        count.display(),
        find.replace("EXEC", exec)
    );
    let src = dir.join("bwrap.src");
    std::fs::write(&src, text).unwrap();
    common::install(&src, &dir.join("bwrap"), 0o755);
    dir
}

/// Other `bwrap` wrappers on PATH, before the shim and after it: every
/// combination runs the command under this helper, or stops with the loop
/// message, within a bounded number of execs; none hangs.
#[test]
fn wrappers_on_path_never_make_a_loop() {
    let Some(real) = real_bwrap() else { return };
    let real_dir = real.parent().unwrap().display().to_string();
    for how in ["naive", "next", "clearing"] {
        for shim_first in [false, true] {
            let what = format!(
                "{how} wrapper {}",
                if shim_first {
                    "after the shim"
                } else {
                    "before the shim"
                }
            );
            let count = fixture().dir.join(format!("count-{how}-{shim_first}"));
            let _ = std::fs::remove_file(&count);
            let w = wrapper(how, &count);
            let (first, second) = if shim_first {
                (shim_dir(), w)
            } else {
                (w, shim_dir())
            };
            let path = format!("{}:{}:{real_dir}:/bin", first.display(), second.display());
            let mut child = Command::new("bwrap")
                .args(HOOKED)
                .env_clear()
                .env("PATH", &path)
                .env("SRT_DEBUG", "1")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while child.try_wait().unwrap().is_none() {
                if std::time::Instant::now() > deadline {
                    let _ = child.kill();
                    panic!("{what}: still running after 20 s: a loop");
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let out = child.wait_with_output().unwrap();
            let (text, err) = (stdout(&out), stderr(&out));
            let runs = std::fs::read_to_string(&count)
                .unwrap_or_default()
                .lines()
                .count();
            let ctx = format!(
                "{what}: {:?}, {runs} wrapper runs\n{text}\n{err}",
                out.status
            );
            eprintln!("{what}: exit {:?}, {runs} wrapper runs", out.status.code());
            assert!(runs <= 6, "{ctx}");
            if how == "clearing" && shim_first {
                // The wrapper drops the shim's list every time: the count in
                // the arguments ends it.
                assert_eq!(out.status.code(), Some(125), "{ctx}");
                assert!(err.contains("apply-seccomp: bwrap shim: a loop: "), "{ctx}");
            } else {
                assert_eq!(out.status.code(), Some(0), "{ctx}");
                assert_eq!(status_field(&text, "Seccomp_filters"), Some("2"), "{ctx}");
                assert!(text.contains("leaked=0"), "{ctx}");
                if how != "clearing" {
                    // A clearing wrapper before the shim also drops SRT_DEBUG;
                    // the filters and fd 3 (never opened here) prove the
                    // rewrite there.
                    assert!(err.contains("replaced 1 occurrence(s)"), "{ctx}");
                }
            }
        }
    }
}

/// A profile too long for the command line: the client (srt 0.0.83, in
/// multicall mode) moves the mount options into an unnamed file that
/// bubblewrap reads through `--args 9`. The shim reads it without taking
/// it from bubblewrap and still puts this helper in place.
#[test]
fn a_profile_passed_through_args_is_rewritten_too() {
    if real_bwrap().is_none() || common::srt_package().is_none() {
        return;
    }
    // Both users in the full suite; the developer's loop the last (uid
    // 65534 as root): 18 s a user.
    let all = users();
    let from = if common::full_suite() {
        0
    } else {
        all.len() - 1
    };
    for uid in &all[from..] {
        profile_through_args(*uid);
    }
}

fn profile_through_args(uid: Option<u32>) {
    let dir = work(uid);
    // 1500 existing files the configuration denies writing (450 in the
    // developer's loop), with long names: each is bound onto itself, about
    // 700 KB (250 KB) of options, past the 127 KB srt keeps on the line.
    let files = common::rounds(1500, 450);
    let mut deny_write = Vec::new();
    for i in 0..files {
        let p = dir.join(format!("denied-{i:04}-{}", "x".repeat(200)));
        std::fs::write(&p, "").unwrap();
        deny_write.push(p);
    }
    // Outside the folder the sandbox may write (srt's allowWrite "."),
    // where the shim refuses to keep a log.
    let logs = work(uid);
    let log = logs.join("shim.log");
    let client = Client {
        deny_write,
        log: Some(log.clone()),
        ..Client::default()
    };
    let script = "grep Seccomp_filters /proc/self/status; ls /proc/self/fd | tr '\\n' ' '";
    let (out, wrapped, ran) = multicall(uid, &dir, &client, script);
    let (text, err) = (stdout(&out), stderr(&out));
    let ctx = format!(
        "uid {uid:?}: {:?}\n{text}\n{}",
        out.status,
        err.lines()
            .filter(|l| l.starts_with("apply-seccomp"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        wrapped.contains("--args 9"),
        "not the --args form: {}",
        &wrapped[..wrapped.len().min(300)]
    );
    assert_eq!(out.status.code(), Some(0), "{ctx}");
    assert!(!ran, "the embedded helper ran: {ctx}");
    assert_eq!(status_field(&text, "Seccomp_filters"), Some("2"), "{ctx}");
    assert!(err.contains("replaced 1 occurrence(s)"), "{ctx}");
    assert!(err.contains("--args 9 read ("), "{ctx}");
    // The words went on bubblewrap's line: the mount guard read them all
    // (every denied file, bound read-only), and fd 9 went with the exec.
    let number_after = |what: &str| {
        err.split_once(what)
            .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(0)
    };
    assert!(
        number_after("mount guard: ") >= files
            && err.contains(" restricting mounts watched, and ")
            && err.contains("for renames (")
            && number_after("; all ") >= files,
        "{ctx}"
    );
    let fds = text.lines().last().unwrap_or_default();
    assert!(
        !fds.split(' ').any(|f| f == "9"),
        "fd 9 in the sandbox: {fds}"
    );
    // The log has the file's words in place of `--args 9`, marked; the
    // line, too long for `sh -c`, replays through the shell's input.
    let logged = std::fs::read_to_string(&log).unwrap();
    // srt asks `bwrap --version` first: the call of interest is the last.
    let lines: Vec<&str> = logged.lines().collect();
    let n = lines.len();
    assert!(n >= 3, "{logged}");
    let lines = &lines[n - 3..];
    assert!(lines[0].contains("--args 9 read ("), "{}", lines[0]);
    assert!(
        lines[1].starts_with("# --args 9 inlined: its "),
        "{}",
        lines[1]
    );
    assert!(
        !lines[2].contains(" --args "),
        "--args left in the logged line"
    );
    // The client's own temporary empty directory went with the client; a
    // replay needs it again (docs/shim.md says so).
    let mut made = Vec::new();
    for word in lines[2].split(' ') {
        if let Some(rest) = word.strip_prefix("/tmp/claude-empty-") {
            let d = PathBuf::from(format!("/tmp/claude-empty-{rest}"));
            if std::fs::create_dir(&d).is_ok() {
                if let Some(u) = uid {
                    std::os::unix::fs::chown(&d, Some(u), Some(u)).unwrap();
                }
                made.push(d);
            }
        }
    }
    let mut replay = Command::new("bash");
    if let Some(u) = uid {
        replay.uid(u).gid(u);
    }
    let mut replay = replay
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", shim_dir().display()),
        )
        .env("SRT_DEBUG", "1")
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    replay
        .stdin
        .take()
        .unwrap()
        .write_all(lines[2].as_bytes())
        .unwrap();
    let again = replay.wait_with_output().unwrap();
    for d in made {
        let _ = std::fs::remove_dir(d);
    }
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(status_field(&stdout(&again), "Seccomp_filters"), Some("2"));
    assert!(stderr(&again).contains("replaced 1 occurrence(s)"));
}

/// `--args 9` as bubblewrap reads it, through the shim: a file read from
/// its current offset (the shim must read the same words, and leave the
/// offset where it was), a pipe (not read: that would take the words from
/// bubblewrap), a file holding the command too (passed through), and words
/// too many to go on bubblewrap's line (kept as `--args`). Each case runs
/// the real bubblewrap on fd 9; the pipe's and the command's run the
/// embedded helper, as the client asked.
#[test]
fn args_files_the_shim_reads_and_those_it_leaves() {
    if real_bwrap().is_none() {
        return;
    }
    let dir = work(None);
    let standin = fixture().script(
        "stand-in-embedded",
        "#!/bin/sh\necho embedded-ran\nexec \"$@\"\n",
    );
    // HOOKED's options, its command with the filters alone.
    let options: Vec<String> = HOOKED[..11].iter().map(|w| w.to_string()).collect();
    let command: Vec<String> = HOOKED[12..15]
        .iter()
        .chain(&["grep Seccomp_filters /proc/self/status"])
        .map(|w| w.to_string())
        .collect();
    // 100 optional read-only binds of missing 1.6 KB paths: 330 KB of words.
    let mut many = options.clone();
    for i in 0..100 {
        let p = format!(
            "/nonexistent-{i}/{}",
            format!("{}/", "a".repeat(200)).repeat(8)
        );
        many.extend(["--ro-bind-try".to_string(), p.clone(), p]);
    }
    let with_command: Vec<String> = options
        .iter()
        .chain(["--".to_string()].iter())
        .chain(command.iter())
        .cloned()
        .collect();
    let on_line: Vec<String> = ["--args", "9", "--"]
        .map(String::from)
        .into_iter()
        .chain(command.iter().cloned())
        .collect();
    let open_file = "exec 9<\"$1\" 3<\"$2\"; shift 2; exec bwrap \"$@\"";
    // (name, bytes before the words, words, driver script, line, outcome,
    // note): 'R' rewritten, 'E' the embedded helper ran, 'U' bubblewrap's
    // own usage error, as without the shim.
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a [String],
        &'a str,
        &'a [String],
        char,
        &'a str,
    );
    let cases: [Case; 4] = [
        (
            "a file read from its offset",
            "junk\0",
            &options,
            "exec 9<\"$1\" 3<\"$2\"; shift 2; dd bs=5 count=1 of=/dev/null <&9 2>/dev/null; exec bwrap \"$@\"",
            &on_line,
            'R',
            "--args 9 read (11 words)",
        ),
        (
            "a pipe",
            "",
            &options,
            "exec 3<\"$2\"; f=$1; shift 2; cat \"$f\" | { exec 9<&0 </dev/null; exec bwrap \"$@\"; }",
            &on_line,
            'E',
            "fd 9 is a pipe: reading it would take its content from bubblewrap: not rewritten",
        ),
        (
            "a file holding the command",
            "",
            &with_command,
            open_file,
            &["--args".to_string(), "9".to_string()],
            'U',
            "whose file holds more than options (a command): not rewritten",
        ),
        (
            "words too many for bubblewrap's line",
            "",
            &many,
            &format!("ulimit -s 256; {open_file}"),
            &on_line,
            'R',
            "do not fit on bubblewrap's line (E2BIG): --args kept",
        ),
    ];
    for (what, before, words, driver, line, outcome, note) in cases {
        let file = dir.join("args");
        let mut bytes = before.as_bytes().to_vec();
        for w in words {
            bytes.extend_from_slice(w.as_bytes());
            bytes.push(0);
        }
        std::fs::write(&file, &bytes).unwrap();
        let out = Command::new("/bin/sh")
            .args(["-c", driver, "driver"])
            .arg(&file)
            .arg(&standin)
            .args(line)
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", shim_dir().display()))
            .env("SRT_DEBUG", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let (text, err) = (stdout(&out), stderr(&out));
        let ctx = format!("{what}: {:?}\n{text}\n{err}", out.status);
        assert!(err.contains(note), "{ctx}");
        match outcome {
            'R' => {
                assert_eq!(out.status.code(), Some(0), "{ctx}");
                assert!(err.contains("replaced 1 occurrence(s)"), "{ctx}");
                assert!(!text.contains("embedded-ran"), "{ctx}");
                assert_eq!(status_field(&text, "Seccomp_filters"), Some("2"), "{ctx}");
            }
            'E' => {
                assert_eq!(out.status.code(), Some(0), "{ctx}");
                assert!(text.contains("embedded-ran"), "{ctx}");
                assert_eq!(status_field(&text, "Seccomp_filters"), Some("0"), "{ctx}");
            }
            _ => {
                assert_eq!(out.status.code(), Some(1), "{ctx}");
                assert!(err.contains("usage: "), "{ctx}");
            }
        }
    }
}

/// `APPLY_SECCOMP_LOG`: one record per call, whole however many shims
/// write at once, replayable with bash; a log that cannot be written
/// never stops the call.
#[test]
fn the_log_records_each_call_and_replays_it() {
    if real_bwrap().is_none() {
        return;
    }
    let log = fixture().dir.join("shim.log");
    let _ = std::fs::remove_file(&log);
    let log_s = log.to_string_lossy().into_owned();
    let first = through_shim(&HOOKED, &[("APPLY_SECCOMP_LOG", &log_s)]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    // Twenty at once.
    std::thread::scope(|s| {
        for _ in 0..20 {
            s.spawn(|| through_shim(&["--version"], &[("APPLY_SECCOMP_LOG", &log_s)]));
        }
    });
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Whole records: a comment line, then the command line, 21 times.
    assert_eq!(lines.len(), 42, "{text}");
    for pair in lines.chunks(2) {
        assert!(
            pair[0].starts_with("# ") && pair[0].contains(" apply-seccomp bwrap shim: "),
            "{text}"
        );
        assert!(pair[1].starts_with("bwrap "), "{text}");
    }
    assert!(
        lines[0].contains("replaced 1 occurrence(s)"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("; ran "), "{}", lines[0]);
    // The first record, replayed through the shim, does the same again.
    let replay = Command::new("bash")
        .args(["-c", lines[1]])
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", shim_dir().display()))
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
    assert_eq!(stdout(&replay), stdout(&first));
    // A log that cannot be written: the call goes on, and says so.
    let out = through_shim(
        &["--version"],
        &[
            ("APPLY_SECCOMP_LOG", "/nonexistent/dir/log"),
            ("SRT_DEBUG", "1"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bwrap shim: APPLY_SECCOMP_LOG=/nonexistent/dir/log: No such file or directory; not logged"),
        "{}",
        stderr(&out)
    );
}

/// The shim as `uid` (`None`: this user) on `args`, with `env` and the
/// shim first on PATH, from `/`.
fn shim_as(uid: Option<u32>, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(shim_dir().join("bwrap"));
    cmd.args(args)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", shim_dir().display()))
        .envs(env.iter().copied())
        .current_dir("/")
        .stdin(Stdio::null());
    if let Some(u) = uid {
        cmd.uid(u).gid(u);
    }
    cmd.output().unwrap()
}

/// The sandbox a logged call runs: the whole tree read-only, a user
/// namespace (so uid 65534 can run it too), `words` as the command.
fn sandboxed<'a>(words: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["--unshare-user", "--ro-bind", "/", "/", "--"];
    v.extend(words);
    v
}

/// THREATS of the log itself (issue 23): a command text holding a newline
/// made the record two lines, and docs/shim.md's replay, the last line fed
/// to a shell, ran the command's own last line unsandboxed. Now every
/// record is one line, and the replay runs `bwrap` (here a stand-in that
/// records its arguments) with exactly the words the client gave, nothing
/// else. With the old quoting the marker file appears.
#[test]
fn a_replayed_record_runs_only_bubblewrap_with_the_words_given() {
    if real_bwrap().is_none() {
        return;
    }
    for uid in users() {
        let dir = work(uid);
        let marker = dir.join("ran-unsandboxed");
        let log = dir.join("bwrap.log");
        let text = format!("true\ntouch {} 2>/dev/null; true #", marker.display());
        let words = sandboxed(&["/bin/sh", "-c", &text]);
        let out = shim_as(uid, &words, &[("APPLY_SECCOMP_LOG", log.to_str().unwrap())]);
        assert_eq!(out.status.code(), Some(0), "{uid:?}: {}", stderr(&out));
        assert!(!marker.exists(), "{uid:?}: the sandbox let it write");
        let record = std::fs::read_to_string(&log).unwrap();
        assert_eq!(record.lines().count(), 2, "{uid:?}: {record}");
        // The replay, exactly as docs/shim.md shows it, with `bwrap` a
        // stand-in that writes its arguments, NUL-separated.
        let fake = dir.join("fake-bin");
        std::fs::create_dir_all(&fake).unwrap();
        let seen = dir.join("seen");
        std::fs::write(
            fake.join("bwrap"),
            format!("#!/bin/sh\nprintf '%s\\0' \"$@\" > {}\n", seen.display()),
        )
        .unwrap();
        std::fs::set_permissions(
            fake.join("bwrap"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        if let Some(u) = uid {
            std::os::unix::fs::chown(&fake, Some(u), Some(u)).unwrap();
        }
        let mut replay = Command::new("/bin/sh");
        replay
            .arg("-c")
            .arg(format!("grep -v '^#' {} | tail -n 1 | bash", log.display()))
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", fake.display()))
            .current_dir("/");
        if let Some(u) = uid {
            replay.uid(u).gid(u);
        }
        let replayed = replay.output().unwrap();
        assert!(replayed.status.success(), "{uid:?}: {}", stderr(&replayed));
        assert!(
            !marker.exists(),
            "{uid:?}: the replay ran the command's last line"
        );
        let got = std::fs::read(&seen).unwrap();
        let want: Vec<u8> = words
            .iter()
            .flat_map(|w| [w.as_bytes(), b"\0"].concat())
            .collect();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{uid:?}"
        );
    }
}

/// Where the log may be written: the shim runs unsandboxed, so it never
/// writes through a link a sandbox could have planted, into a file that
/// is not the user's own regular file with one name, or in a folder the
/// line makes writable; each is refused with one `SRT_DEBUG` line and the
/// call goes on. The variable never reaches the sandbox.
#[test]
fn the_log_is_written_only_where_no_sandbox_can_plant_anything() {
    if real_bwrap().is_none() {
        return;
    }
    for uid in users() {
        let dir = work(uid);
        let own = |p: &Path| {
            if let Some(u) = uid {
                std::os::unix::fs::chown(p, Some(u), Some(u)).unwrap();
            }
        };
        let victim = dir.join("authorized_keys");
        std::fs::write(&victim, "ssh-ed25519 AAAA real\n").unwrap();
        own(&victim);
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(m)).unwrap()
        };
        mode(&victim, 0o600);
        // A symlink at the log's path, to a file the user can write.
        let link = dir.join("link.log");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        // A hard link to it.
        let hard = dir.join("hard.log");
        std::fs::hard_link(&victim, &hard).unwrap();
        // The user's file, but writable by its group.
        let group_writable = dir.join("group.log");
        std::fs::write(&group_writable, "").unwrap();
        own(&group_writable);
        mode(&group_writable, 0o620);
        // A FIFO, which no one reads.
        let fifo = dir.join("fifo.log");
        assert!(
            Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        own(&fifo);
        // In a folder the line binds read-write.
        let shared = dir.join("shared");
        std::fs::create_dir_all(&shared).unwrap();
        own(&shared);
        let in_shared = shared.join("bwrap.log");
        let shared_s = shared.to_str().unwrap();
        let plain: Vec<&str> = sandboxed(&["/bin/sh", "-c", "echo ran"]);
        let bound: Vec<&str> = {
            let mut v = vec![
                "--unshare-user",
                "--ro-bind",
                "/",
                "/",
                "--bind",
                shared_s,
                shared_s,
            ];
            v.extend(["--", "/bin/sh", "-c", "echo ran"]);
            v
        };
        let cases: Vec<(&Path, &Vec<&str>, &str)> = vec![
            (&link, &plain, "a symbolic link, not followed"),
            (&hard, &plain, "2 names for one file"),
            (&group_writable, &plain, "writable by others (mode 0620)"),
            (&fifo, &plain, "a FIFO or socket with no reader"),
            (
                &in_shared,
                &bound,
                "which this bubblewrap line makes writable in the sandbox",
            ),
            (Path::new("relative.log"), &plain, "not an absolute path"),
        ];
        for (log, line, why) in cases {
            let log_s = log.to_str().unwrap();
            let out = shim_as(
                uid,
                line,
                &[("APPLY_SECCOMP_LOG", log_s), ("SRT_DEBUG", "1")],
            );
            let ctx = format!("{uid:?} {log_s}: {}", stderr(&out));
            assert_eq!(out.status.code(), Some(0), "{ctx}");
            assert_eq!(stdout(&out), "ran\n", "{ctx}");
            let said = format!("bwrap shim: APPLY_SECCOMP_LOG={log_s}: ");
            let line_said = stderr(&out)
                .lines()
                .find(|l| l.contains(&said))
                .map(str::to_string)
                .unwrap_or_default();
            assert!(
                line_said.contains(why) && line_said.ends_with("; not logged"),
                "{ctx}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "ssh-ed25519 AAAA real\n",
            "{uid:?}: the user's file was written"
        );
        assert!(!in_shared.exists(), "{uid:?}");
        // As root, a log another user owns is not root's to append to.
        if uid.is_none() && is_root() {
            let theirs = dir.join("theirs.log");
            std::fs::write(&theirs, "").unwrap();
            std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
            mode(&theirs, 0o600);
            let out = shim_as(
                None,
                &plain,
                &[
                    ("APPLY_SECCOMP_LOG", theirs.to_str().unwrap()),
                    ("SRT_DEBUG", "1"),
                ],
            );
            assert!(
                stderr(&out).contains("owned by uid 65534, not by this user"),
                "{}",
                stderr(&out)
            );
            assert_eq!(std::fs::read(&theirs).unwrap(), b"");
        }
        // A good log: written, and the sandbox does not see its name.
        let good = dir.join("good.log");
        let out = shim_as(
            uid,
            &sandboxed(&["/bin/sh", "-c", "env | grep -c APPLY_SECCOMP; true"]),
            &[("APPLY_SECCOMP_LOG", good.to_str().unwrap())],
        );
        assert_eq!(stdout(&out), "0\n", "{uid:?}: {}", stderr(&out));
        let record = std::fs::read_to_string(&good).unwrap();
        assert_eq!(record.lines().count(), 2, "{record}");
        let meta = std::fs::metadata(&good).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
            0o600
        );
    }
}
