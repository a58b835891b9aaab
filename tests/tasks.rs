//! The run's task cap (issue 57, src/run/tasks.rs): a fork bomb meets it and
//! ends, the host goes on forking, nothing of the bomb is left and the
//! line names the cap; the cap is exact where asked, off at 0, refused
//! where it cannot be kept. Root and uid 65534; the helper on the host,
//! under bubblewrap, and the real srt CLI through the shim.
//!
//! Every bomb runs inside a safety net, so a missing cap fails the test
//! instead of the machine: a host `RLIMIT_NPROC` for uid 65534, and a
//! pids cgroup for root (whom the kernel never holds to RLIMIT_NPROC).

mod common;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{Place, User, fixture, stderr, stdout, uid_of};

/// Forks until refused, every child doing the same and then pausing;
/// the first process says how it was refused and exits 11 on EAGAIN.
const BOMB: &str = r#"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    for (int n = 0;; n++) {
        pid_t p = fork();
        if (p == 0) { for (;;) if (fork() < 0) pause(); }
        if (p < 0) {
            fprintf(stderr, "bomb: fork %d refused: %s\n", n + 1, strerror(errno));
            return errno == EAGAIN ? 11 : 1;
        }
    }
}
"#;

/// Forks children that pause until a fork is refused: how many, and the
/// errno.
const COUNTER: &str = include_str!("probe/counter.c");

/// The C programs, built once (static, so they run under bubblewrap).
fn program(name: &str) -> Option<&'static Path> {
    static BUILT: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let dir = fixture().dir.join("tasks");
        std::fs::create_dir_all(&dir).unwrap();
        Some((
            common::static_c(&dir, "bomb", BOMB)?,
            common::static_c(&dir, "counter", COUNTER)?,
        ))
    });
    match (built, name) {
        (Some((bomb, _)), "bomb") => Some(bomb),
        (Some((_, counter)), _) => Some(counter),
        (None, _) => {
            common::skip("gcc with static glibc (libc6-dev) is needed for the test programs");
            None
        }
    }
}

/// The safety net of one test: the tasks a bomb may take on the host
/// whatever the helper does. For root, a pids cgroup (removed on drop);
/// for uid 65534, RLIMIT_NPROC.
struct Net {
    cgroup: Option<PathBuf>,
    limit: u64,
}

impl Net {
    fn new(user: User, limit: u64) -> Option<Net> {
        if uid_of(user).is_some() || !common::is_root() {
            return Some(Net {
                cgroup: None,
                limit,
            });
        }
        // cgroup v2 with the pids controller, else v1's pids hierarchy.
        let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
            .is_ok_and(|c| c.split_whitespace().any(|w| w == "pids"));
        let base = if v2 {
            PathBuf::from("/sys/fs/cgroup")
        } else {
            PathBuf::from("/sys/fs/cgroup/pids")
        };
        let dir = base.join(format!(
            "apply-seccomp-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        if std::fs::create_dir(&dir).is_err()
            || std::fs::write(dir.join("pids.max"), limit.to_string()).is_err()
        {
            let _ = std::fs::remove_dir(&dir);
            common::skip("root's fork bombs need a pids cgroup as a safety net; none can be made");
            return None;
        }
        Some(Net {
            cgroup: Some(dir),
            limit,
        })
    }

    /// The words that start a command inside the net: a shell that
    /// joins the cgroup, or util-linux's `prlimit`.
    fn words(&self) -> Vec<OsString> {
        match &self.cgroup {
            Some(dir) => vec![
                "/bin/sh".into(),
                "-c".into(),
                format!(
                    "echo 0 > {}/cgroup.procs && exec \"$0\" \"$@\"",
                    dir.display()
                )
                .into(),
            ],
            None => vec![
                "/usr/bin/prlimit".into(),
                format!("--nproc={0}:{0}", self.limit).into(),
                "--".into(),
            ],
        }
    }

    /// `program args` as `user` at the host, inside the net.
    fn command<S: AsRef<OsStr>>(
        &self,
        user: User,
        env: &[(&str, &str)],
        program: &Path,
        args: &[S],
    ) -> Command {
        let words = self.words();
        let rest: Vec<OsString> = words[1..]
            .iter()
            .cloned()
            .chain(std::iter::once(program.as_os_str().to_owned()))
            .chain(args.iter().map(|a| a.as_ref().to_owned()))
            .collect();
        common::command(Place::Host, user, env, Path::new(&words[0]), &rest)
    }

    /// How often the net itself refused a fork (root's cgroup only).
    fn refusals(&self) -> u64 {
        self.cgroup.as_ref().map_or(0, |d| {
            std::fs::read_to_string(d.join("pids.events"))
                .unwrap_or_default()
                .trim()
                .strip_prefix("max ")
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        })
    }
}

/// Taken by every test: a bomb's processes count against its user's
/// limit on the host, which another test's counts would then meet.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Drop for Net {
    fn drop(&mut self) {
        if let Some(dir) = &self.cgroup {
            let deadline = Instant::now() + Duration::from_secs(10);
            while std::fs::remove_dir(dir).is_err() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// The safety net's size: far above the default cap on this machine, far
/// below the machine's PIDs.
const NET: u64 = 2500;

/// A command on the host as `user`, in `net`: forks 50 times while the
/// bomb runs; its output says whether every fork worked.
fn host_forker(user: User, net: &Net) -> Child {
    net.command(
        user,
        &[],
        Path::new("/bin/sh"),
        &[
            "-c",
            "i=0; while [ $i -lt 50 ]; do /bin/true || exit 1; i=$((i+1)); sleep 0.02; done; \
             echo forked",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap()
}

/// The processes whose executable is `exe` or whose command line names
/// `marker`.
fn left_running(exe: &Path, marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let p = e.path();
        let is_exe = std::fs::read_link(p.join("exe")).is_ok_and(|l| l == exe);
        let named = std::fs::read(p.join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker));
        if is_exe || named {
            found.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

/// The cap the line names, or `None` without the line.
fn cap_named(err: &str) -> Option<u32> {
    let at = err.find("reached the run's cap of ")? + "reached the run's cap of ".len();
    err[at..].split(' ').next()?.parse().ok()
}

/// Runs `cmd` (a bomb, in `net`) with a host forker beside it, and checks
/// what a user must see: the run ends, the host forked, nothing is left,
/// the line names the default cap.
fn bomb_meets_the_cap(what: &str, user: User, net: &Net, mut cmd: Command, marker: &str) {
    let bomb = program("bomb").unwrap();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let run = cmd.spawn().unwrap();
    let forker = host_forker(user, net);
    let out = run.wait_with_output().unwrap();
    let took = start.elapsed();
    let host = forker.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(
        took < Duration::from_secs(60),
        "{what} as {user:?}: ran {took:?}\n{err}"
    );
    assert_eq!(
        stdout(&host).trim(),
        "forked",
        "{what} as {user:?}: a host command of the same user could not fork meanwhile: {}",
        stderr(&host)
    );
    let cap = cap_named(&err).unwrap_or_else(|| panic!("{what} as {user:?}: no cap line\n{err}"));
    assert!(cap >= 1024, "{what} as {user:?}: default cap {cap}\n{err}");
    assert_eq!(
        net.refusals(),
        0,
        "{what} as {user:?}: the safety net, not the cap, stopped the bomb\n{err}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left = left_running(bomb, marker);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = left_running(bomb, marker);
    }
    assert!(
        left.is_empty(),
        "{what} as {user:?}: {} processes of the bomb left after the run",
        left.len()
    );
}

/// A shell fork bomb as a script whose path marks its processes; it
/// sleeps while the bomb grows, so the run ends with the bomb at its cap.
fn shell_bomb(dir: &Path) -> (PathBuf, String) {
    let marker = format!(
        "shell-bomb-{}.sh",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let path = dir.join(&marker);
    std::fs::write(&path, ":(){ :|:& };:\nsleep 3\n").unwrap();
    (path, marker)
}

#[test]
fn a_fork_bomb_meets_the_default_cap_and_the_host_forks_on() {
    let _serial = one_at_a_time();
    let Some(bomb) = program("bomb") else { return };
    for user in common::users() {
        let Some(net) = Net::new(user, NET) else {
            continue;
        };
        let cmd = net.command(user, &[], &fixture().helper, &[bomb]);
        bomb_meets_the_cap(
            "the C bomb, the helper on the host",
            user,
            &net,
            cmd,
            "\0none\0",
        );
        let dir = common::fresh_folder("shell-bomb");
        let (script, marker) = shell_bomb(&dir);
        let cmd = net.command(
            user,
            &[],
            &fixture().helper,
            &["/bin/bash".as_ref(), script.as_os_str()],
        );
        bomb_meets_the_cap(
            "the shell bomb, the helper on the host",
            user,
            &net,
            cmd,
            &marker,
        );
    }
}

#[test]
fn a_fork_bomb_through_srt_and_the_shim_meets_the_cap() {
    let _serial = one_at_a_time();
    let Some(bomb) = program("bomb") else { return };
    if common::which("bwrap").is_none() {
        common::skip("bubblewrap is not installed");
        return;
    }
    if common::srt_package().is_none() {
        return;
    }
    let shim = fixture().dir.join("tasks-shim");
    std::fs::create_dir_all(&shim).unwrap();
    let _ = std::os::unix::fs::symlink(&fixture().helper, shim.join("bwrap"));
    for user in common::users_in_loop() {
        let Some(net) = Net::new(user, NET) else {
            continue;
        };
        let dir = common::srt_cli::project(user, "tasks");
        let settings = dir.with_extension("json");
        std::fs::write(
            &settings,
            format!(
                r#"{{"network": {{"allowedDomains": [], "deniedDomains": []}},
  "filesystem": {{"denyRead": [], "allowWrite": ["{w}"], "denyWrite": []}},
  "seccomp": {{"applyPath": "{h}"}}, "bwrapPath": "{b}"}}"#,
                w = dir.display(),
                h = fixture().helper.display(),
                b = shim.join("bwrap").display()
            ),
        )
        .unwrap();
        let srt = |script: &str| {
            // srt_cli::srt's line, started inside the net.
            let plain = common::srt_cli::srt(user, &dir, &settings, script);
            let args: Vec<&OsStr> = plain.get_args().collect();
            let mut cmd = net.command(user, &[], Path::new(plain.get_program()), &args);
            cmd.env("HOME", common::srt_cli::home(user))
                .env("TMPDIR", common::client_tmp())
                .current_dir(&dir);
            cmd
        };
        let cmd = srt(&bomb.to_string_lossy());
        bomb_meets_the_cap("the C bomb through srt", user, &net, cmd, "\0none\0");
        let (script, marker) = shell_bomb(&fixture().dir);
        let cmd = srt(&format!("bash {}", script.display()));
        bomb_meets_the_cap("the shell bomb through srt", user, &net, cmd, &marker);
    }
}

/// The counter under the helper at `place` as `user` with `env`, in a net
/// of `limit`: its line, and the run's output.
fn count(place: Place, user: User, env: &[(&str, &str)], limit: u64) -> Option<(String, Output)> {
    let counter = program("counter")?;
    let net = Net::new(user, limit)?;
    let out = match place {
        Place::Host => net.command(user, env, &fixture().helper, &[counter]),
        // bubblewrap inside the net: the words before it, then its line.
        Place::Bwrap => {
            let plain = common::command(place, user, env, &fixture().helper, &[counter]);
            let args: Vec<&OsStr> = plain.get_args().collect();
            net.command(user, env, Path::new(plain.get_program()), &args)
        }
    }
    .output()
    .unwrap();
    Some((stdout(&out).trim().to_string(), out))
}

#[test]
fn an_asked_cap_is_exact() {
    let _serial = one_at_a_time();
    for (place, user) in common::matrix() {
        // Root's cap is its PID namespace's pid_max, 299 at least; the
        // counter is one of the tasks.
        let (cap, forks) = if uid_of(user).is_none() && common::is_root() {
            ("400", 399)
        } else {
            ("20", 19)
        };
        let Some((line, out)) = count(place, user, &[("APPLY_SECCOMP_MAX_TASKS", cap)], NET) else {
            return;
        };
        assert_eq!(
            line,
            format!("forked {forks} errno {}", libc::EAGAIN),
            "{place:?} as {user:?}: {}",
            stderr(&out)
        );
        assert_eq!(out.status.code(), Some(0), "{place:?} {user:?}");
    }
    // The default takes at most half of the caller's own limit: 100 here.
    if let Some((line, out)) = count(Place::Host, User::Unprivileged, &[], 100) {
        let want = format!("forked 49 errno {}", libc::EAGAIN);
        assert_eq!(line, want, "{}", stderr(&out));
    }
}

#[test]
fn a_cap_of_zero_is_none_and_a_bad_value_is_refused() {
    let _serial = one_at_a_time();
    let user = User::Unprivileged;
    // No cap: the net (the host's limit for this user) stops the counter,
    // well past what a cap of 20 would allow.
    if let Some((line, out)) = count(Place::Host, user, &[("APPLY_SECCOMP_MAX_TASKS", "0")], 300) {
        let n: u32 = line
            .strip_prefix("forked ")
            .and_then(|l| l.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{line} {}", stderr(&out)));
        assert!(n > 100, "{line}");
    }
    for bad in ["-1", "many", "5x"] {
        let out = common::helper(
            Place::Host,
            user,
            &[("APPLY_SECCOMP_MAX_TASKS", bad)],
            &["/bin/echo", "ran"],
        );
        assert_eq!(out.status.code(), Some(125), "{bad}");
        assert_eq!(stdout(&out), "", "{bad}: the command ran");
        assert!(
            stderr(&out).contains(&format!("APPLY_SECCOMP_MAX_TASKS={bad}: it takes a number")),
            "{}",
            stderr(&out)
        );
    }
}

/// Where nested user namespaces are allowed (`SRT_ALLOW_NESTED_USERNS=1`)
/// root's cap, its PID namespace's `pid_max`, is no cap (issue 68, item
/// 4): the command makes a mount namespace of its own, remounts
/// `/proc/sys` writable there (init's read-only bind was made in the
/// command's own user namespace, so it is not locked) and raises
/// `pid_max`. The run claims none and says why (`SRT_DEBUG`); an asked one
/// is refused before the command runs (it ran, and the command raised
/// `pid_max` from 1,026 to 4,194,304). uid 65534's (`RLIMIT_NPROC`,
/// counted in each user namespace up the chain) holds: it is kept. On
/// the host and under srt's bubblewrap options.
#[test]
fn with_nested_namespaces_root_claims_no_task_cap_it_cannot_keep() {
    let _serial = one_at_a_time();
    let nested = ("SRT_ALLOW_NESTED_USERNS", "1");
    let raise = [
        "/bin/sh",
        "-c",
        "unshare -m sh -c 'mount -o remount,bind,rw /proc/sys && \
         echo 4194304 > /proc/sys/kernel/pid_max && echo raised'",
    ];
    for (place, user) in common::matrix() {
        let what = format!("{place:?} {user:?}");
        let out = common::helper(place, user, &[nested, ("SRT_DEBUG", "1")], &["/bin/true"]);
        assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
        let asked = common::helper(
            place,
            user,
            &[nested, ("APPLY_SECCOMP_MAX_TASKS", "1024")],
            &raise,
        );
        if user == User::Unprivileged {
            assert!(
                stderr(&out).contains("task cap: 1") && stderr(&out).contains("RLIMIT_NPROC"),
                "{what}: {}",
                stderr(&out)
            );
            continue;
        }
        assert!(
            stderr(&out).contains("task cap: none (with SRT_ALLOW_NESTED_USERNS=1 a root command"),
            "{what}: {}",
            stderr(&out)
        );
        assert_eq!(asked.status.code(), Some(125), "{what}: {}", stderr(&asked));
        assert_eq!(stdout(&asked), "", "{what}: the command ran");
        assert!(
            stderr(&asked).contains(
                "APPLY_SECCOMP_MAX_TASKS=1024: no task cap can be kept here (with \
                 SRT_ALLOW_NESTED_USERNS=1"
            ),
            "{what}: {}",
            stderr(&asked)
        );
    }
}

#[test]
fn the_capability_free_way_keeps_no_cap_and_refuses_an_asked_one() {
    let _serial = one_at_a_time();
    let user = User::Unprivileged;
    let args = ["--way-in=capability-free", "/bin/echo", "ran"];
    let out = common::helper(Place::Host, user, &[("SRT_DEBUG", "1")], &args);
    if stderr(&out).contains("Landlock") && out.status.code() == Some(125) {
        common::skip("no capability-free way on this kernel (Landlock)");
        return;
    }
    assert_eq!(stdout(&out), "ran\n", "{}", stderr(&out));
    assert!(stderr(&out).contains("task cap: none"), "{}", stderr(&out));
    let out = common::helper(
        Place::Host,
        user,
        &[("APPLY_SECCOMP_MAX_TASKS", "64")],
        &args,
    );
    assert_eq!(out.status.code(), Some(125));
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("the capability-free way in has no namespace to count"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_doctor_says_which_cap_a_run_gets() {
    let _serial = one_at_a_time();
    if common::which("bwrap").is_none() {
        common::skip("bubblewrap is not installed");
        return;
    }
    for (env, want) in [
        (
            &[][..],
            "ok       limits: a run under bubblewrap: task cap: ",
        ),
        (
            &[("APPLY_SECCOMP_MAX_TASKS", "0")][..],
            "warning  limits: no task cap for a run here",
        ),
    ] {
        let out = common::helper(Place::Host, User::Unprivileged, env, &["--doctor"]);
        let text = stdout(&out);
        let line = text.lines().find(|l| l.contains(" limits: "));
        assert!(
            line.is_some_and(|l| l.starts_with(want)),
            "{env:?}: {line:?}\n{text}"
        );
        // Issue 58: no cap in force reads "max", not "max us per 100 ms".
        let line = line.unwrap_or_default();
        assert!(
            line.contains(", cpu.max max,") || line.contains(" us per 100 ms,"),
            "{line}"
        );
        assert!(!line.contains("max us"), "{line}");
    }
}

/// Whether this machine's cgroup v2 tree has a memory controller at its
/// root: this project's machines mount cgroup v1's instead, where a
/// memory cap must be refused (the VM suite runs the caps themselves).
fn cgroup2_has_memory() -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            right
                .starts_with("cgroup2 ")
                .then(|| left.split(' ').nth(4))?
        })
        .any(|m| {
            std::fs::read_to_string(Path::new(m).join("cgroup.controllers"))
                .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"))
        })
}

#[test]
fn a_memory_cap_no_cgroup_can_hold_is_refused_before_anything_runs() {
    let _serial = one_at_a_time();
    if cgroup2_has_memory() {
        common::skip("this machine's cgroup v2 has a memory controller: the refusal is the VM's");
        return;
    }
    let asked = [("APPLY_SECCOMP_MEMORY_MAX", "256M")];
    for user in common::users() {
        // The helper alone: no cgroup of its run holds the cap.
        let out = common::helper(Place::Host, user, &asked, &["/bin/echo", "RAN"]);
        assert_eq!(out.status.code(), Some(125), "{user:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{user:?}");
        assert!(
            stderr(&out).starts_with(
                "apply-seccomp: APPLY_SECCOMP_MEMORY_MAX=256M: asked, but no cgroup of this run \
                 holds it (memory.max in force: none)"
            ),
            "{user:?}: {}",
            stderr(&out)
        );
        // The shim: no cgroup can be made for it.
        let shim = fixture().dir.join("tasks-shim");
        std::fs::create_dir_all(&shim).unwrap();
        let _ = std::os::unix::fs::symlink(&fixture().helper, shim.join("bwrap"));
        let mut argv: Vec<&str> = common::BWRAP_OPTIONS.to_vec();
        argv.extend(["--", "/bin/echo", "RAN"]);
        let out = common::command(Place::Host, user, &asked, &shim.join("bwrap"), &argv)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125), "{user:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{user:?}");
        let err = stderr(&out);
        assert!(
            err.starts_with(
                "apply-seccomp: bwrap shim: APPLY_SECCOMP_MEMORY_MAX=256M: asked, but no cgroup \
                 can hold it here ("
            ) && err.contains("systemd-run --user --scope"),
            "{user:?}: {err}"
        );
        // A line that runs nothing (a client's `bwrap --version`) is not
        // refused: there is no run to cap.
        let out = common::command(
            Place::Host,
            user,
            &asked,
            &shim.join("bwrap"),
            &["--version"],
        )
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(0), "{user:?}: {}", stderr(&out));
        assert!(stdout(&out).starts_with("bubblewrap "), "{}", stdout(&out));
    }
    for (var, bad) in [
        ("APPLY_SECCOMP_MEMORY_MAX", "lots"),
        ("APPLY_SECCOMP_CPU_MAX", "0"),
    ] {
        let out = common::helper(
            Place::Host,
            User::Unprivileged,
            &[(var, bad)],
            &["/bin/echo"],
        );
        assert_eq!(out.status.code(), Some(125), "{var}={bad}");
        assert!(
            stderr(&out).contains(&format!("{var}={bad}: it takes")),
            "{}",
            stderr(&out)
        );
    }
}
