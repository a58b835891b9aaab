//! The real client: the published `@anthropic-ai/sandbox-runtime`, from the
//! npm registry into the test fixture (never committed), pointed at our
//! binary through `seccomp.applyPath`, through its `srt` CLI and through its
//! library's `wrapWithSandbox`, as root and as uid 65534.
//!
//! The client silently falls back to its bundled helper when applyPath is
//! missing, so every run checks for OUR `SRT_DEBUG` lines
//! (`apply-seccomp: entry: ...`), which the bundled helper never prints.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use common::{NOBODY, fixture, is_root, probe_results, status_field, stderr, stdout};

struct Client {
    /// Folder holding node_modules/@anthropic-ai/sandbox-runtime.
    prefix: &'static Path,
    /// Port of a loopback HTTP server that answers with `BODY`.
    port: u16,
}

const BODY: &str = "reached-through-the-srt-proxy";

fn client() -> Option<&'static Client> {
    static C: OnceLock<Option<Client>> = OnceLock::new();
    C.get_or_init(|| {
        if common::which("curl").is_none() {
            common::skip("curl is not installed: the proxy test needs it");
            return None;
        }
        Some(Client {
            prefix: common::srt_package()?,
            port: serve_marker(),
        })
    })
    .as_ref()
}

/// A loopback HTTP server, in a thread of this test process, that answers
/// every request with `BODY`.
fn serve_marker() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
                BODY.len()
            );
            let _ = conn.write_all(reply.as_bytes());
        }
    });
    port
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum As {
    Root,
    Nobody,
}

fn users() -> Vec<As> {
    if is_root() {
        vec![As::Root, As::Nobody]
    } else {
        common::skip("not root: the srt tests run as the current user only");
        vec![As::Nobody]
    }
}

/// A fresh work folder for one run (the tests run in parallel), owned by
/// `user`, with a file the settings deny writing.
fn work_dir(user: As, tag: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = fixture().dir.join(format!("srt-work-{user:?}-{tag}-{n}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("protected.txt"), "original\n").unwrap();
    if user == As::Nobody && is_root() {
        for p in [dir.clone(), dir.join("protected.txt")] {
            std::os::unix::fs::chown(&p, Some(NOBODY), Some(NOBODY)).unwrap();
        }
    }
    dir
}

fn settings(work: &Path, nested: bool) -> String {
    format!(
        r#"{{
  "network": {{"allowedDomains": ["localhost"], "deniedDomains": []}},
  "filesystem": {{"denyRead": [], "allowWrite": ["{w}"], "denyWrite": ["{w}/protected.txt"]}},
  "allowNestedUserNamespaces": {nested},
  "seccomp": {{"applyPath": "{h}"}}
}}"#,
        w = work.display(),
        h = fixture().helper.display()
    )
}

fn run_as(user: As, work: &Path, cmd: Command) -> Output {
    run_with(user, work, cmd, &[])
}

/// [`run_as`] with more variables in the client's environment.
fn run_with(user: As, work: &Path, mut cmd: Command, env: &[(&str, &str)]) -> Output {
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", work)
        .env("TMPDIR", common::client_tmp())
        .env("SRT_DEBUG", "1")
        .envs(env.iter().copied())
        .current_dir(work)
        .stdin(Stdio::null());
    if user == As::Nobody && is_root() {
        cmd.uid(NOBODY).gid(NOBODY);
    }
    cmd.output().expect("run the client")
}

/// `srt -s <settings> -c <script>` in a fresh work folder.
fn srt(c: &Client, user: As, nested: bool, script: &str) -> (Output, PathBuf) {
    let (cmd, work) = srt_command(c, user, nested, script);
    (run_as(user, &work, cmd), work)
}

fn srt_command(c: &Client, user: As, nested: bool, script: &str) -> (Command, PathBuf) {
    let work = work_dir(user, "cli");
    let file = work.join("srt-settings.json");
    std::fs::write(&file, settings(&work, nested)).unwrap();
    let mut cmd = Command::new(c.prefix.join("node_modules/.bin/srt"));
    cmd.arg("-s").arg(&file).arg("-c").arg(script);
    (cmd, work)
}

/// The library: initialize, wrapWithSandbox, spawn with a shell, reset.
fn library(c: &Client, user: As, nested: bool, script: &str) -> (Output, PathBuf) {
    let work = work_dir(user, "lib");
    let js = work.join("wrap.mjs");
    let index = c
        .prefix
        .join("node_modules/@anthropic-ai/sandbox-runtime/dist/index.js");
    std::fs::write(
        &js,
        format!(
            // Async spawn: the client's proxy runs in this Node process, and
            // spawnSync would stall it.
            "import {{ SandboxManager }} from '{}';\n\
             import {{ spawn }} from 'node:child_process';\n\
             import {{ constants }} from 'node:os';\n\
             const config = JSON.parse(process.argv[2]);\n\
             await SandboxManager.initialize(config);\n\
             const wrapped = await SandboxManager.wrapWithSandbox(process.argv[3]);\n\
             const child = spawn(wrapped, {{ shell: true, stdio: ['ignore', 'inherit', 'inherit'] }});\n\
             const code = await new Promise(done => child.on('exit', (code, signal) =>\n\
               done(code ?? 128 + (constants.signals[signal] ?? 0))));\n\
             await SandboxManager.reset();\n\
             process.exit(code);\n",
            index.display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&js).arg(settings(&work, nested)).arg(script);
    (run_as(user, &work, cmd), work)
}

type Runner = fn(&Client, As, bool, &str) -> (Output, PathBuf);
const RUNNERS: [(&str, Runner); 2] = [("srt CLI", srt), ("library", library)];

fn ours_ran(out: &Output, what: &str) {
    let err = stderr(out);
    assert!(
        err.contains("apply-seccomp: entry: user namespace path"),
        "{what}: our helper's debug lines are missing (did the client fall back to its bundled helper?):\n{err}"
    );
}

#[test]
fn the_command_is_filtered_and_the_proxy_path_works() {
    let Some(c) = client() else { return };
    let Some(probe) = fixture().probe() else {
        return;
    };
    let script = format!(
        "grep -E '^(Seccomp_filters|NoNewPrivs):' /proc/self/status; \
         {} unix-stream unix-dgram pair-dgram inet; \
         echo \"http=$(curl -s --noproxy '' --max-time 20 http://localhost:{}/)\"",
        probe.display(),
        c.port
    );
    for user in users() {
        for (name, run) in RUNNERS {
            let what = format!("{name} as {user:?}");
            let (out, _) = run(c, user, false, &script);
            ours_ran(&out, &what);
            let text = stdout(&out);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{what}: {text}\n{}",
                stderr(&out)
            );
            assert_eq!(
                status_field(&text, "Seccomp_filters"),
                Some("2"),
                "{what}: {text}"
            );
            assert_eq!(
                status_field(&text, "NoNewPrivs"),
                Some("1"),
                "{what}: {text}"
            );
            let got = probe_results(&text);
            // The own-sockets policy (the default): stream made, a
            // datagram socket refused, a datagram pair made (issue 55).
            assert_eq!(got["unix-stream"], "ok", "{what}");
            assert_eq!(got["unix-dgram"], "errno:EPERM", "{what}");
            assert_eq!(got["pair-dgram"], "ok", "{what}");
            assert_eq!(got["inet"], "ok", "{what}");
            assert_eq!(got["http"], BODY, "{what}: the proxy path failed");
        }
    }
}

/// A user's exported `SRT_HELPER_FEATURES=1` reaches the helper (srt
/// 0.0.83 neither sets nor clears it): the command still runs, filtered.
#[test]
fn a_users_feature_variable_never_replaces_the_command() {
    let Some(c) = client() else { return };
    for user in users() {
        let script = "echo RAN; grep Seccomp_filters /proc/self/status; exit 7";
        let (cmd, work) = srt_command(c, user, false, script);
        let out = run_with(user, &work, cmd, &[("SRT_HELPER_FEATURES", "1")]);
        let text = stdout(&out);
        let what = format!("{user:?}: {text}\n{}", stderr(&out));
        assert_eq!(out.status.code(), Some(7), "{what}");
        assert!(text.starts_with("RAN\n"), "{what}");
        assert_eq!(status_field(&text, "Seccomp_filters"), Some("2"), "{what}");
        assert!(!text.contains("userns-limit"), "{what}");
    }
}

#[test]
fn exit_status_and_signal_deaths_come_back_through_the_client() {
    let Some(c) = client() else { return };
    for user in users() {
        for (name, run) in RUNNERS {
            for (script, code) in [
                ("exit 42", 42),
                ("kill -TERM $$", 143),
                ("kill -KILL $$", 137),
            ] {
                let what = format!("{name} as {user:?}: {script}");
                let (out, _) = run(c, user, false, script);
                ours_ran(&out, &what);
                assert_eq!(out.status.code(), Some(code), "{what}: {}", stderr(&out));
            }
        }
    }
}

#[test]
fn allow_nested_user_namespaces_is_honoured() {
    let Some(c) = client() else { return };
    let script = "grep Seccomp_filters /proc/self/status; \
                  unshare --user true 2>/dev/null && echo nested=yes || echo nested=no";
    for user in users() {
        for (name, run) in RUNNERS {
            for (nested, filters, answer) in [(false, "2", "no"), (true, "1", "yes")] {
                let what = format!("{name} as {user:?}, nested {nested}");
                let (out, _) = run(c, user, nested, script);
                ours_ran(&out, &what);
                let text = stdout(&out);
                assert_eq!(
                    status_field(&text, "Seccomp_filters"),
                    Some(filters),
                    "{what}: {text}"
                );
                assert!(text.contains(&format!("nested={answer}")), "{what}: {text}");
            }
        }
    }
}

#[test]
fn denied_paths_stay_untouched() {
    let Some(c) = client() else { return };
    let script = "echo changed > protected.txt && echo wrote || echo refused; \
                  echo allowed > scratch.txt && echo wrote-scratch";
    for user in users() {
        for (name, run) in RUNNERS {
            let what = format!("{name} as {user:?}");
            let (out, work) = run(c, user, false, script);
            ours_ran(&out, &what);
            let text = stdout(&out);
            assert!(
                text.contains("refused") && !text.contains("wrote\n"),
                "{what}: {text}"
            );
            assert!(text.contains("wrote-scratch"), "{what}: {text}");
            let kept = std::fs::read_to_string(work.join("protected.txt")).unwrap();
            assert_eq!(kept, "original\n", "{what}");
        }
    }
}

/// The library's own violation monitor (`initialize(config, undefined,
/// true)`): it listens on a socket, passes it to our helper as
/// SRT_OBSERVE_SOCK, and records the write attempts its policy denies.
#[test]
fn the_library_violation_monitor_receives_our_events() {
    let Some(c) = client() else { return };
    let index = c
        .prefix
        .join("node_modules/@anthropic-ai/sandbox-runtime/dist/index.js");
    for user in users() {
        let work = work_dir(user, "monitor");
        let js = work.join("monitor.mjs");
        std::fs::write(
            &js,
            format!(
                "import {{ SandboxManager }} from '{}';\n\
                 import {{ spawn }} from 'node:child_process';\n\
                 const sleep = ms => new Promise(r => setTimeout(r, ms));\n\
                 await SandboxManager.initialize(JSON.parse(process.argv[2]), undefined, true);\n\
                 await sleep(300);\n\
                 const wrapped = await SandboxManager.wrapWithSandbox(process.argv[3]);\n\
                 const child = spawn(wrapped, {{ shell: true, stdio: ['ignore', 'inherit', 'inherit'] }});\n\
                 await new Promise(done => child.on('exit', done));\n\
                 await sleep(500);\n\
                 for (const v of SandboxManager.getSandboxViolationStore().getViolations())\n\
                   console.log('VIOLATION ' + v.line);\n\
                 await SandboxManager.reset();\n\
                 process.exit(0);\n",
                index.display()
            ),
        )
        .unwrap();
        let mut cmd = Command::new("node");
        cmd.arg(&js)
            .arg(settings(&work, false))
            // A refused call too: its line (no path) is ignored.
            .arg(
                "echo changed > protected.txt; echo fine > scratch.txt; cat protected.txt; \
                 unshare -r true 2>/dev/null",
            );
        let out = run_as(user, &work, cmd);
        let what = format!("library monitor as {user:?}");
        ours_ran(&out, &what);
        let text = stdout(&out);
        let protected = work.join("protected.txt");
        assert!(
            text.lines()
                .any(|l| l == format!("VIOLATION deny openat {}", protected.display())),
            "{what}: {text}\n{}",
            stderr(&out)
        );
        // The allowed write is not a violation; the file kept its text.
        assert!(!text.contains("scratch.txt"), "{what}: {text}");
        assert!(text.contains("original"), "{what}: {text}");
        assert!(
            stderr(&out).contains("apply-seccomp: observed: "),
            "{what}: {}",
            stderr(&out)
        );
    }
}
