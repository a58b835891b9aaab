//! Shared plumbing for the end-to-end tests: they run the BUILT binary
//! (never unsharing inside this multi-threaded harness), directly on the
//! host and under real bubblewrap with the client's options, as root and as
//! uid 65534.
//!
//! The binary and the probe are copied to a world-readable folder under
//! /tmp, since uid 65534 may not reach the checkout. It is removed once
//! the test binary has exited (and a folder a killed run left, when the
//! next run starts).
//!
//! A test that needs something missing (root, bubblewrap, strace, a C
//! compiler) skips with a `SKIP:` line; with `APPLY_SECCOMP_MUST_WORK=1`
//! (set by `.ci/run`) every skip is a failure instead. A test that changes
//! the machine (a system-wide install, `./setup`'s packages), boots VMs or
//! loops for long runs only in the full suite, `APPLY_SECCOMP_FULL=1`
//! (set by `.ci/run`): `cargo test` alone is the developer's loop.
#![allow(dead_code)]

pub mod package;
pub mod srt_cli;
pub mod threats;

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

pub const NOBODY: u32 = 65534;
const PREFIX: &str = "apply-seccomp-test-";

// The options srt gives bubblewrap around the helper: `BWRAP_OPTIONS`,
// the same list the doctor's bubblewrap run uses.
include!("../../src/doctor/srt_options.rs");

pub fn must_work() -> bool {
    std::env::var_os("APPLY_SECCOMP_MUST_WORK").is_some_and(|v| v == "1")
}

/// Skips the calling test (returns `false`) or, in CI, fails it. The
/// `SKIP:` line, with the test's name and a count for this test binary,
/// goes straight to stderr, past the harness's capture: a plain
/// `cargo test` shows it (a skipped test still reads `ok`).
pub fn skip(reason: &str) -> bool {
    if must_work() {
        panic!("APPLY_SECCOMP_MUST_WORK=1 and this test cannot run: {reason}");
    }
    static SKIPPED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SKIPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    say_past_capture("SKIP", n, reason);
    false
}

/// The full suite: `APPLY_SECCOMP_FULL=1` (`.ci/run` sets it).
pub fn full_suite() -> bool {
    std::env::var_os("APPLY_SECCOMP_FULL").is_some_and(|v| v == "1")
}

/// Whether the calling test (or the part of it named `what`) runs: in the
/// full suite always; in a plain `cargo test` it is left out, and a
/// `FULL SUITE ONLY` line says so past the harness's capture. Not a skip:
/// the machine lacks nothing, the developer's loop leaves it to CI.
pub fn in_full_suite(what: &str) -> bool {
    if full_suite() {
        return true;
    }
    static LEFT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = LEFT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    say_past_capture(
        "FULL SUITE ONLY",
        n,
        &format!("{what} (APPLY_SECCOMP_FULL=1 runs it)"),
    );
    false
}

/// How many rounds a stress loop makes: `full` in the full suite, `quick`
/// in a plain `cargo test` (the same checks, fewer tries at a race).
pub fn rounds(full: u32, quick: u32) -> u32 {
    if full_suite() { full } else { quick }
}

/// `KIND (N in tests/F.rs): TEST: WHY` on stderr, past the capture.
fn say_past_capture(kind: &str, n: usize, reason: &str) {
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let binary = std::env::current_exe()
        .ok()
        .and_then(|e| e.file_name().map(|n| n.to_string_lossy().into_owned()))
        .map(|n| {
            n.rsplit_once('-')
                .map_or(n.clone(), |(name, _)| name.to_string())
        })
        .unwrap_or_default();
    let line = format!("{kind} ({n} in tests/{binary}.rs): {test}: {reason}\n");
    use std::io::Write;
    let _ = std::io::stderr().write_all(line.as_bytes());
}

pub fn is_root() -> bool {
    // SAFETY-free: read from /proc rather than calling geteuid().
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(["/usr/bin".into(), "/bin".into(), "/usr/sbin".into()])
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

pub struct Fixture {
    pub dir: PathBuf,
    pub helper: PathBuf,
    probe: Option<PathBuf>,
    probe_error: String,
}

/// Puts a copy of `src` at `dst` with `mode`, written by a child process
/// (`install`). Writing an executable from this multi-threaded harness
/// would let another thread's fork inherit the write descriptor for a
/// moment, and exec of the file would then fail with ETXTBSY.
pub fn install(src: &Path, dst: &Path, mode: u32) {
    let status = Command::new("install")
        .arg("-m")
        .arg(format!("{mode:o}"))
        .arg(src)
        .arg(dst)
        .status()
        .expect("run install");
    assert!(
        status.success(),
        "install {} {}",
        src.display(),
        dst.display()
    );
}

fn pid_alive(pid: &str) -> bool {
    Path::new("/proc").join(pid).exists()
}

fn make_fixture() -> Fixture {
    let tmp = std::env::temp_dir();
    if let Ok(entries) = std::fs::read_dir(&tmp) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(rest) = name.strip_prefix(PREFIX) {
                let pid = rest.split('-').next().unwrap_or("");
                if !pid_alive(pid) {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    }
    let dir = tmp.join(format!("{PREFIX}{}-{}", std::process::id(), nonce()));
    std::fs::create_dir_all(&dir).expect("create fixture folder");
    // Gone once this test binary has exited (it has no end to hook): a
    // shell of its own waits for it, then removes the folder (issue 46: each
    // run left tens of MB in /tmp).
    let _ = Command::new("/bin/sh")
        .args([
            "-c",
            "while kill -0 \"$1\" 2>/dev/null; do sleep 0.5; done; rm -rf -- \"$2\"",
            "sh",
        ])
        .arg(std::process::id().to_string())
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let helper = dir.join("apply-seccomp");
    install(
        Path::new(env!("CARGO_BIN_EXE_apply-seccomp")),
        &helper,
        0o755,
    );

    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probe/probe.c");
    let probe = dir.join("probe");
    let (probe, probe_error) = match which("cc").or_else(|| which("gcc")) {
        None => (None, "no C compiler (cc) to build the probe".to_string()),
        Some(cc) => {
            let out = Command::new(cc)
                .args(["-static", "-O1", "-pthread", "-o"])
                .arg(&probe)
                .arg(&src)
                .output()
                .expect("run cc");
            if out.status.success() {
                (Some(probe), String::new())
            } else {
                (
                    None,
                    format!(
                        "cannot build the probe (static glibc?): {}",
                        String::from_utf8_lossy(&out.stderr)
                    ),
                )
            }
        }
    };
    Fixture {
        dir,
        helper,
        probe,
        probe_error,
    }
}

fn nonce() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

pub fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(make_fixture)
}

impl Fixture {
    /// The probe, or a skip.
    pub fn probe(&self) -> Option<&Path> {
        match &self.probe {
            Some(p) => Some(p),
            None => {
                skip(&self.probe_error);
                None
            }
        }
    }

    /// A copy of the helper with the given mode, for install-mode tests.
    pub fn helper_copy(&self, name: &str, mode: u32) -> PathBuf {
        let path = self.dir.join(name);
        install(&self.helper, &path, mode);
        path
    }

    /// An executable script with `text`, named `name` in the fixture.
    pub fn script(&self, name: &str, text: &str) -> PathBuf {
        let src = self.dir.join(format!("{name}.src"));
        std::fs::write(&src, text).expect("write script");
        let path = self.dir.join(name);
        install(&src, &path, 0o755);
        path
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    /// uid 0 (only when the tests run as root).
    Root,
    /// uid 65534 when the tests run as root; else the current user.
    Unprivileged,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Host,
    /// Inside bubblewrap with the client's options.
    Bwrap,
}

/// Every (place, user) this machine can run; the rest are skipped.
pub fn matrix() -> Vec<(Place, User)> {
    let mut users = vec![User::Unprivileged];
    if is_root() {
        users.insert(0, User::Root);
    } else {
        skip("not running as root: the root cases are left out");
    }
    let mut places = vec![Place::Host];
    if which("bwrap").is_some() {
        places.push(Place::Bwrap);
    } else {
        skip("bubblewrap (bwrap) is not installed: the bwrap cases are left out");
    }
    let mut m = Vec::new();
    for &p in &places {
        for &u in &users {
            m.push((p, u));
        }
    }
    m
}

/// [`matrix`] on each way in.
pub fn ways_matrix() -> Vec<(threats::Way, Place, User)> {
    let m = matrix();
    threats::WAYS
        .into_iter()
        .flat_map(|w| m.iter().map(move |&(p, u)| (w, p, u)))
        .collect()
}

/// A command that runs `program args...` as `user` at `place`, with a clean
/// environment plus `env`.
pub fn command<S: AsRef<OsStr>>(
    place: Place,
    user: User,
    env: &[(&str, &str)],
    program: &Path,
    args: &[S],
) -> Command {
    let mut cmd = match place {
        Place::Host => Command::new(program),
        Place::Bwrap => {
            let mut c = Command::new(which("bwrap").expect("bwrap"));
            c.args(BWRAP_OPTIONS);
            if user == User::Root {
                c.args(["--cap-add", "CAP_SETFCAP"]);
            }
            c.arg("--").arg(program);
            c
        }
    };
    cmd.args(args);
    cmd.env_clear();
    cmd.env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
    for (k, v) in env {
        cmd.env(k, v);
    }
    if user == User::Unprivileged && is_root() {
        cmd.uid(NOBODY).gid(NOBODY);
    }
    cmd.current_dir("/");
    cmd.stdin(Stdio::null());
    cmd
}

/// Runs `program args...` at `place` as `user` (see [`command`]).
pub fn run<S: AsRef<OsStr>>(place: Place, user: User, program: &Path, args: &[S]) -> Output {
    command(place, user, &[], program, args)
        .output()
        .expect("spawn")
}

/// Runs the helper on `args` at `place` as `user`.
pub fn helper<S: AsRef<OsStr>>(
    place: Place,
    user: User,
    env: &[(&str, &str)],
    args: &[S],
) -> Output {
    command(place, user, env, &fixture().helper, args)
        .output()
        .expect("spawn")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `key:\tvalue` from a /proc status text.
pub fn status_field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .map(str::trim)
}

/// Parses the probe's `name=result` lines.
pub fn probe_results(out: &str) -> std::collections::BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The published srt client, installed once per test binary from the npm
/// registry into the fixture (never committed): the folder holding
/// `node_modules/@anthropic-ai/sandbox-runtime`, or a skip.
/// `APPLY_SECCOMP_SRT_VERSION` overrides the release (default 0.0.83).
/// The client's temporary folder (`TMPDIR`): srt names its proxy sockets
/// by its PID there (`srt-mux-<pid>-0.sock`) and leaves some behind; in
/// `/tmp` a later client, as another user and with a reused PID, then
/// failed to listen (EADDRINUSE). Here, one sticky folder for every user,
/// removed with the fixture.
pub fn client_tmp() -> &'static Path {
    static T: OnceLock<PathBuf> = OnceLock::new();
    T.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = fixture().dir.join("client-tmp");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        dir
    })
}

pub fn srt_package() -> Option<&'static Path> {
    static P: OnceLock<Option<PathBuf>> = OnceLock::new();
    P.get_or_init(|| {
        for tool in ["node", "npm", "bwrap", "socat", "rg"] {
            if which(tool).is_none() {
                skip(&format!("{tool} is not installed: the srt client needs it"));
                return None;
            }
        }
        let prefix = fixture().dir.join("srt-client");
        let version =
            std::env::var("APPLY_SECCOMP_SRT_VERSION").unwrap_or_else(|_| "0.0.83".into());
        let out = Command::new("npm")
            // Its cache (and its logs) in the target folder, not ~/.npm.
            .env("npm_config_cache", target_dir().join("npm-cache"))
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--prefix",
            ])
            .arg(&prefix)
            .arg(format!("@anthropic-ai/sandbox-runtime@{version}"))
            .stdin(Stdio::null())
            .output()
            .expect("run npm");
        if !out.status.success() {
            skip(&format!("npm install failed: {}", stderr(&out)));
            return None;
        }
        Some(prefix)
    })
    .as_deref()
}

/// The client library's entry module, for `import` from a Node script.
pub fn srt_index(package: &Path) -> PathBuf {
    package.join("node_modules/@anthropic-ai/sandbox-runtime/dist/index.js")
}

/// A Node script that runs a command the way a multicall client does
/// (Claude Code): the srt library builds the bubblewrap line
/// (`wrapWithSandbox`), which runs with `/bin/sh -c` and fd 3 open on the
/// embedded helper. Its arguments: the config (JSON), the command, the
/// embedded helper (a stand-in), a file to record the wrapped line in.
/// Exits with the command's status.
pub fn multicall_script(package: &Path) -> String {
    format!(
        "import {{ SandboxManager }} from '{}';\n\
         import {{ spawn }} from 'node:child_process';\n\
         import {{ openSync, readFileSync, writeFileSync }} from 'node:fs';\n\
         const [config, cmd, standin, record] = process.argv.slice(2);\n\
         // `@FILE`: the configuration is in FILE (too long for one argument).\n\
         const text = config.startsWith('@') ? readFileSync(config.slice(1), 'utf8') : config;\n\
         await SandboxManager.initialize(JSON.parse(text));\n\
         const wrapped = await SandboxManager.wrapWithSandbox(cmd);\n\
         writeFileSync(record, wrapped);\n\
         // As Claude Code: /bin/sh -c, with fd 3 open on the embedded helper.\n\
         const child = spawn('/bin/sh', ['-c', wrapped], {{ stdio: ['ignore', 'inherit', 'inherit', openSync(standin, 'r')] }});\n\
         const code = await new Promise(done => child.on('exit', c => done(c ?? 128)));\n\
         await SandboxManager.reset();\n\
         process.exit(code);\n",
        srt_index(package).display()
    )
}

/// What client runs sharing a folder came to (tests/guard.rs, tests/keep.rs).
#[derive(Debug, Default)]
pub struct Tally {
    pub runs: u32,
    /// bubblewrap failed before the helper started (the clients' own race:
    /// `Can't find source path`, `Can't get type of source`, `Unable to
    /// remount destination`).
    pub setup_failures: u32,
    /// Stopped by the mount guard, before or during the command.
    pub guard_stops: u32,
    /// Denied paths a command wrote.
    pub writes: u32,
    /// Writes to `.claude/settings.json` through srt's own covered mount
    /// (tests/guard.rs says why).
    pub covered_writes: u32,
    pub other_failures: Vec<String>,
}

impl Tally {
    /// Counts one run, which wrote `writes` denied paths.
    pub fn add(&mut self, out: &Output, writes: u32) {
        let err = String::from_utf8_lossy(&out.stderr);
        self.runs += 1;
        self.writes += writes;
        if err.contains("apply-seccomp: mount guard: ") {
            self.guard_stops += 1;
        } else if err.contains("bwrap: ") {
            self.setup_failures += 1;
        } else if out.status.code() != Some(0) {
            self.other_failures.push(format!("{:?}: {err}", out.status));
        }
    }
}

/// A fresh, empty folder under the fixture's, `name` and a number (the
/// tests of one binary run in parallel).
pub fn fresh_folder(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = fixture().dir.join(format!("{name}-{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The file names srt 0.0.83 protects in a git folder (its folders are
/// `.vscode`, `.idea`, `.claude/commands`, `.claude/agents`): the
/// placeholder tests and the keeper's benchmark.
pub const SRT_DENIED_FILES: [&str; 9] = [
    ".gitconfig",
    ".gitmodules",
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".profile",
    ".ripgreprc",
    ".mcp.json",
];

/// Root (when the tests run as root) and the unprivileged user; without
/// root the root cases are skipped, and said so.
pub fn users() -> Vec<User> {
    if is_root() {
        vec![User::Root, User::Unprivileged]
    } else {
        skip("not root: the root cases are left out");
        vec![User::Unprivileged]
    }
}

/// The users a long, srt-driven test runs as: [`users()`] in the full
/// suite; in the developer's loop only the last of them (uid 65534 when
/// the tests run as root), the one the clients' commands run as.
pub fn users_in_loop() -> Vec<User> {
    let mut all = users();
    if !full_suite() && all.len() > 1 {
        all.drain(..all.len() - 1);
    }
    all
}

/// The uid a command of `user`'s is dropped to: uid 65534 for the
/// unprivileged user when the tests run as root, else none (it runs as the
/// tests do).
pub fn uid_of(user: User) -> Option<u32> {
    (user == User::Unprivileged && is_root()).then_some(NOBODY)
}

/// `--setup --undo` as `user` with `HOME` set to `home` when it goes,
/// passed or failed: a setup in a home that is not the passwd entry's
/// keeps its record in the user's keeper folder (uid 65534's is
/// `/tmp/apply-seccomp-65534`, a user's own is in their real home), which
/// the test's home going takes nothing of.
pub struct UndoSetup(pub User, pub PathBuf);

impl Drop for UndoSetup {
    fn drop(&mut self) {
        let mut cmd = Command::new(&fixture().helper);
        cmd.args(["--setup", "--undo"])
            .env_clear()
            .env("HOME", &self.1)
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&self.1)
            .stdin(Stdio::null());
        if let Some(u) = uid_of(self.0) {
            cmd.uid(u).gid(u);
        }
        let _ = cmd.output();
    }
}

/// Root's home by its passwd entry, if tests/runner made it a temporary
/// folder of this run's (never the real one: a test that writes settings
/// there for the Debian package's prerm to find uses it).
pub fn runner_root_home() -> Option<PathBuf> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    let home = passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 6 && f[2] == "0").then(|| PathBuf::from(f[5]))
    })?;
    let name = home.parent()?.file_name()?.to_string_lossy().into_owned();
    (home.starts_with(std::env::temp_dir()) && name.starts_with(PREFIX)).then_some(home)
}

/// The target folder the tests were built in (`CARGO_TARGET_DIR`, else
/// `target/`): every nested build goes under it.
pub fn target_dir() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is the target folder's tmp")
}

/// The nested release build's target folder, under [`target_dir()`]: one
/// for every test that runs the build as shipped (the syscall and
/// page-fault gates, the run order, the unwind check).
pub const RELEASE: &str = "release-nested";

/// A release build of the helper in its own target folder under
/// [`target_dir()`] (the running `cargo` holds the lock of the usual
/// one), with `env` for the nested cargo, copied into the fixture as
/// `name`.
pub fn release_build(target: &str, env: &[(&str, &str)], name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = target_dir().join(target);
    let status = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()))
        .args([
            "build",
            "--release",
            "--bin",
            "apply-seccomp",
            "--target-dir",
        ])
        .arg(&target)
        .envs(env.iter().copied())
        .current_dir(root)
        .status()
        .expect("cargo build --release");
    assert!(status.success(), "cargo build --release: {status:?}");
    let copy = fixture().dir.join(name);
    install(&release_binary(&target), &copy, 0o755);
    copy
}

/// The release binary in the target folder `target`:
/// `<triple>/release`, or `release` without a build target.
fn release_binary(target: &Path) -> PathBuf {
    std::fs::read_dir(target)
        .unwrap()
        .map(|e| e.unwrap().path().join("release/apply-seccomp"))
        .chain([target.join("release/apply-seccomp")])
        .find(|p| p.is_file())
        .expect("the release binary")
}

/// This checkout's release build, as shipped, copied to `to`. Not the
/// binary `cargo bench` builds for its own profile: a profile of another
/// name is another `-C metadata` to cargo, so its functions' names differ
/// in their hashes and `link/run-order.txt` (the shipped build's names)
/// lays none of this crate's out (23 us a host run, 4 page faults).
pub fn shipped_build(to: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ok = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()))
        .args(["build", "--release", "--quiet", "--bin", "apply-seccomp"])
        .current_dir(root)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "cargo build --release");
    std::fs::copy(release_binary(target_dir()), to).expect("copy the release build");
}

/// `name` built in `dir` from the C source `code` with static glibc (so
/// that it runs under bubblewrap's line too); `None` without gcc or
/// static glibc (Debian's gcc and libc6-dev). For the benches' floors.
pub fn static_c(dir: &Path, name: &str, code: &str) -> Option<PathBuf> {
    let src = dir.join(format!("{name}.c"));
    let bin = dir.join(name);
    std::fs::write(&src, code).ok()?;
    let ok = Command::new("gcc")
        .args(["-O2", "-static", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

/// The files under `dir` whose names end in `.ext`, at any depth, in a
/// stable order; build output, git's folder and fetched packages left out.
pub fn files_under(dir: &Path, ext: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if [".git", "target", "node_modules"]
                .iter()
                .any(|n| e.file_name() == *n)
            {
                continue;
            }
            if p.is_dir() {
                walk(&p, ext, out);
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, ext, &mut out);
    out.sort();
    out
}

/// `command` as `user` (uid 65534 through `setpriv` for the unprivileged
/// one) in a mount namespace of its own, after `script` (run as root by
/// `sh -c`, ending in `exec "$@"`), in `dir` with `HOME` there and `env`
/// alone: the emulations of tests/container.rs and tests/devices.rs.
pub fn in_mount_ns(
    script: &str,
    user: User,
    dir: &Path,
    env: &[(&str, &str)],
    command: &[&str],
) -> Output {
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "--", "sh", "-c", script, "mount-ns"]);
    if user == User::Unprivileged {
        let id = NOBODY.to_string();
        cmd.args([
            "setpriv",
            "--reuid",
            &id,
            "--regid",
            &id,
            "--clear-groups",
            "--",
        ]);
    }
    cmd.args(command)
        .env_clear()
        .env("HOME", dir)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null());
    cmd.output().unwrap()
}
