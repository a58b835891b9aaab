//! Fault injection with strace: EINVAL from `unshare(CLONE_NEWUSER)`, the
//! very answer of the kernel race, once, three times in a row, and always;
//! and EPERM, the answer of a policy that forbids user namespaces.
//!
//! Runs as an unprivileged user (strace -u nobody when the tests are root),
//! so the first `unshare(CLONE_NEWPID|CLONE_NEWNS)` genuinely fails with
//! EPERM and call 2 of `unshare` is `unshare(CLONE_NEWUSER)`.

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::threats::{WAYS, Way};
use common::{Place, fixture, status_field, stderr, stdout};

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
        err.contains(&format!("user namespace unshare retries: {retries},")),
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
        "apply-seccomp: unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID): Invalid argument after ",
    );
    assert!(err.contains("transient setup failure"), "{err}");
    assert!(err.contains("not a policy denial"), "{err}");
}

/// EPERM injected into the user namespace unshare only: a user namespace
/// made to check (clone, not injected) works and so do its capabilities,
/// so the hint names a filter on unshare itself, and none of the causes
/// that do not apply.
#[test]
fn eperm_fails_closed_with_the_hint() {
    let Some(out) = strace_run("error=EPERM:when=2") else {
        return;
    };
    let err = assert_failed_closed(
        &out,
        "apply-seccomp: unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID): Operation not permitted",
    );
    assert!(
        err.contains("its capabilities work, yet this unshare was refused"),
        "{err}"
    );
    for wrong in [
        "kernel.unprivileged_userns_clone",
        "max_user_namespaces",
        "apparmor",
    ] {
        assert!(!err.contains(wrong), "hint names {wrong}: {err}");
    }
}

/// Syscalls of the setup and the errno each is made to fail with. Where
/// the C library picks between equivalent syscalls (musl opens with `open`
/// and forks with `fork` on x86_64, glibc uses `openat` and `clone`), the
/// entry names them all, `|`-separated, and each one made is injected.
const SETUP_CALLS: [(&str, &str); 30] = [
    ("unshare", "EPERM"),
    ("unshare", "EINVAL"),
    ("openat|open", "EACCES"),
    ("write", "EIO"),
    ("newfstatat", "EIO"),
    ("mprotect", "ENOMEM"),
    ("mount", "EPERM"),
    ("prctl", "EINVAL"),
    ("seccomp", "EINVAL"),
    ("clone|fork", "EAGAIN"),
    ("execve", "EACCES"),
    ("pipe2", "EMFILE"),
    ("rt_sigprocmask", "EINVAL"),
    ("rt_sigaction", "EINVAL"),
    ("rt_sigtimedwait", "EINVAL"),
    ("wait4", "ECHILD"),
    ("ppoll|poll", "EINVAL"),
    ("landlock_create_ruleset", "ENOSYS"),
    ("landlock_restrict_self", "EPERM"),
    // The capability-free way's ruleset (capfree.rs): a rule refused ends
    // the run; a folder that cannot be read grants nothing beneath it.
    ("landlock_add_rule", "EINVAL"),
    ("getdents64", "EIO"),
    ("read", "EIO"),
    // init's gate for the worker (sys::Gate): its wake, and the worker's
    // wait where the worker gets there first.
    ("futex", "EINVAL"),
    // init's start on the stub's CPU (supervise/mod.rs): the stub's read
    // of its CPUs, its pin and its own CPUs back, init's CPUs back.
    ("sched_getaffinity", "EINVAL"),
    ("sched_setaffinity", "EINVAL"),
    // The listener's handover (supervise/listener.rs): no epoll instance
    // (the worker then reports the listener on the control channel), the
    // worker's epoll_ctl refused (the same), the stub's read of the
    // instance refused (the run ends).
    ("epoll_create1", "EMFILE"),
    ("epoll_ctl", "ENOMEM"),
    ("epoll_pwait", "EINVAL"),
    // The task cap (tasks.rs): the stub's RLIMIT_NPROC set (with the
    // caller's read in the same call; refused, the run ends) and the
    // kernel's release (unread: no pid_max per namespace is assumed, so
    // root's run has no default cap and an asked one is refused).
    ("prlimit64", "EPERM"),
    ("uname", "EFAULT"),
];

/// One setting of the fault runs: the way in, on the host or inside
/// bubblewrap (with strace inside the sandbox, so only the helper's
/// processes are traced), as root or as nobody.
#[derive(Clone, Copy, Debug)]
struct Run {
    way: Way,
    place: Place,
    nobody: bool,
}

/// The most calls any one process makes to each syscall in a clean run.
fn calls_per_process(strace: &Path, run: Run, dir: &Path) -> BTreeMap<String, usize> {
    let names: Vec<&str> = SETUP_CALLS.iter().flat_map(|c| c.0.split('|')).collect();
    let logs = run_traced(strace, run, dir, &names.join(","), None);
    let mut most = BTreeMap::new();
    for (_, lines) in &logs.per_process {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for l in lines {
            if let Some(name) = l.split('(').next() {
                *counts.entry(name.to_string()).or_default() += 1;
            }
        }
        for (name, n) in counts {
            let e = most.entry(name).or_insert(0);
            *e = (*e).max(n);
        }
    }
    most
}

struct Traced {
    output: Output,
    /// Each process's syscall lines, in order.
    per_process: Vec<(String, Vec<String>)>,
}

/// Runs the helper on the probe under `strace -ff`, one log per process.
/// Inside bubblewrap the sandbox has a placeholder mount, so the mount
/// guard's calls are made too.
fn run_traced(strace: &Path, run: Run, dir: &Path, trace: &str, inject: Option<&str>) -> Traced {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    if run.nobody {
        std::os::unix::fs::chown(dir, Some(common::NOBODY), Some(common::NOBODY)).unwrap();
    }
    let mut words: Vec<String> = vec![
        strace.to_string_lossy().into_owned(),
        "-ff".into(),
        "-qq".into(),
        "-o".into(),
        dir.join("log").to_string_lossy().into_owned(),
        // clone and fork too: the stub's fork marks what init and the
        // worker inherit.
        "-e".into(),
        format!("trace=execve,prctl,seccomp,landlock_restrict_self,clone,fork,{trace}"),
    ];
    if let Some(inject) = inject {
        words.extend(["-e".into(), format!("inject={inject}")]);
    }
    if run.nobody && run.place == Place::Host {
        words.extend(["-u".into(), "nobody".into()]);
    }
    let probe = fixture().probe().expect("probe").to_path_buf();
    words.push(faults_helper().to_string_lossy().into_owned());
    words.extend(run.way.args(&[probe.to_str().unwrap(), "inet"]));
    let mut cmd = match run.place {
        Place::Host => {
            let mut c = Command::new(&words[0]);
            c.args(&words[1..]);
            c
        }
        Place::Bwrap => {
            let d = dir.to_string_lossy().into_owned();
            let placeholder = format!("{d}/placeholder");
            let mut c = Command::new(common::which("bwrap").expect("bwrap"));
            c.args(common::BWRAP_OPTIONS);
            if !run.nobody {
                c.args(["--cap-add", "CAP_SETFCAP"]);
            }
            c.args([
                "--bind",
                &d,
                &d,
                "--ro-bind",
                "/dev/null",
                &placeholder,
                "--",
            ])
            .args(&words);
            if run.nobody {
                c.uid(common::NOBODY).gid(common::NOBODY);
            }
            c
        }
    };
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir("/")
        .stdin(Stdio::null());
    let output = cmd.output().expect("run strace");
    let mut per_process = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if !entry.file_name().to_string_lossy().starts_with("log") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let name = entry.file_name().to_string_lossy().into_owned();
        per_process.push((name, text.lines().map(str::to_string).collect()));
    }
    Traced {
        output,
        per_process,
    }
}

/// A copy of the helper for this file alone, so "nothing left running" can
/// look for its path without seeing other tests' runs.
fn faults_helper() -> &'static Path {
    static COPY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    COPY.get_or_init(|| fixture().helper_copy("apply-seccomp-faults", 0o755))
}

/// The invariant of every fault: each exec of the command came after
/// no_new_privs and both filters (the worker's own, or inherited from what
/// the outer stub set before its fork), and on the capability-free way
/// after landlock_restrict_self; if the command never ran, the helper
/// exited 125-127 with a message (or never started); nothing is left
/// running.
fn check_invariant(t: &Traced, way: Way, what: &str) -> Result<bool, String> {
    let probe = fixture().probe().unwrap().to_string_lossy().into_owned();
    let helper = faults_helper().to_string_lossy().into_owned();
    let ok = |l: &str| l.trim_end().ends_with("= 0"); // strace pads: "...)  = 0"
    let nnp = |l: &str| l.starts_with("prctl(PR_SET_NO_NEW_PRIVS") && ok(l);
    let domain = |l: &str| l.starts_with("landlock_restrict_self(") && ok(l);
    // A filter with a listener returns its descriptor, not 0.
    let returned_fd = |l: &str| {
        l.trim_end()
            .rsplit_once("= ")
            .is_some_and(|(_, r)| r.parse::<u32>().is_ok())
    };
    let filter = |l: &str| l.starts_with("seccomp(SECCOMP_SET_MODE_FILTER") && returned_fd(l);
    // The outer stub's state when it forked init, which init and the
    // worker inherit.
    let stub = t.per_process.iter().find(|(_, lines)| {
        lines
            .first()
            .is_some_and(|l| l.starts_with(&format!("execve(\"{helper}\"")))
    });
    let helper_started = stub.is_some_and(|(_, lines)| ok(&lines[0]));
    let (mut inherited_nnp, mut inherited_filters) = (false, 0);
    if let Some((_, lines)) = stub {
        for l in lines {
            if (l.starts_with("clone(") || l.starts_with("fork(")) && !l.contains("= -1") {
                break;
            }
            inherited_nnp |= nnp(l);
            inherited_filters += usize::from(filter(l));
        }
    }
    let mut ran = false;
    for (_, lines) in &t.per_process {
        let (mut own_nnp, mut own_filters, mut own_domain) = (false, 0, false);
        for l in lines {
            own_nnp |= nnp(l);
            own_filters += usize::from(filter(l));
            own_domain |= domain(l);
            // The command's exec: any successful exec but the helper's own
            // (strace inside bubblewrap, without CAP_SYS_PTRACE, cannot read
            // the path from the worker's non-dumpable memory).
            if l.starts_with("execve(") && ok(l) && !l.starts_with(&format!("execve(\"{helper}\""))
            {
                ran = true;
                let (n, f) = (inherited_nnp || own_nnp, inherited_filters + own_filters);
                if !n || f < 2 || (way == Way::CapabilityFree && !own_domain) {
                    return Err(format!(
                        "{what}: the command ran with no_new_privs={n}, {f} filters, \
                         Landlock domain={own_domain}"
                    ));
                }
            }
        }
    }
    let code = t.output.status.code();
    let err = stderr(&t.output);
    // Counting is per process, so an injection also reaches the command's
    // own calls once it runs: only the strace log above judges a run in
    // which the command started.
    // A static glibc build (CI's fallback) protects its relocated data with
    // mprotect before `main`: a fault there ends the helper before any of
    // its code, with the C library's message and 127. Closed as well.
    let libc_start_up = code == Some(127) && err.contains("error while loading shared libraries");
    if !ran
        && helper_started
        && !libc_start_up
        && (!matches!(code, Some(125..=127)) || !err.contains("apply-seccomp: "))
    {
        return Err(format!(
            "{what}: the command did not run, yet exit {code:?} and stderr {err:?}"
        ));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
                let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                (cmdline.starts_with(&helper) || cmdline.starts_with(&probe)).then_some(cmdline)
            })
            .collect();
        if left.is_empty() {
            break;
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("{what}: left running: {left:?}"));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(ran)
}

/// strace, with the probe built (the traced runs' command), or a skip.
fn strace_and_probe() -> Option<std::path::PathBuf> {
    let Some(strace) = common::which("strace") else {
        common::skip("strace is not installed");
        return None;
    };
    fixture().probe().map(|_| strace)
}

/// init starts the worker before its mounts (supervise/init.rs): a mount
/// refused after that must still stop the run before the command. The
/// third mount of init is `/proc/sys`'s read-only bind; the log shows the
/// worker was started (init's clone) before it, and no exec but the
/// helper's follows.
#[test]
fn a_mount_refused_after_the_worker_started_stops_the_command() {
    let Some(strace) = strace_and_probe() else {
        return;
    };
    for nobody in [false, true] {
        if !nobody && !common::is_root() {
            continue;
        }
        let run = Run {
            way: Way::Auto,
            place: Place::Host,
            nobody,
        };
        let dir = fixture().dir.join(format!("faults-gate-{nobody}"));
        let t = run_traced(
            &strace,
            run,
            &dir,
            "mount,futex",
            Some("mount:error=EPERM:when=3"),
        );
        let err = stderr(&t.output);
        assert_eq!(t.output.status.code(), Some(125), "{err}");
        assert!(
            err.contains("mount(/proc/sys, MS_BIND|MS_RDONLY): Operation not permitted"),
            "{err}"
        );
        let helper = faults_helper().to_string_lossy().into_owned();
        let init = t
            .per_process
            .iter()
            .find(|(_, lines)| lines.iter().any(|l| l.contains("(INJECTED)")))
            .unwrap_or_else(|| panic!("no process had the fault: {:?}", t.per_process));
        let clone = init
            .1
            .iter()
            .position(|l| l.starts_with("clone(") && !l.contains("= -1"));
        let fault = init.1.iter().position(|l| l.contains("(INJECTED)"));
        assert!(
            clone.is_some() && clone < fault,
            "the worker was not started before the mount: {:?}",
            init.1
        );
        for (name, lines) in &t.per_process {
            for l in lines {
                assert!(
                    !l.starts_with("execve(") || l.contains(" = -1 ") || l.contains(&helper),
                    "{name}: the command was executed: {l}"
                );
            }
        }
    }
}

#[test]
fn every_setup_fault_fails_closed() {
    let Some(strace) = strace_and_probe() else {
        return;
    };
    let mut runs = Vec::new();
    for way in WAYS {
        for place in [Place::Host, Place::Bwrap] {
            if place == Place::Bwrap && common::which("bwrap").is_none() {
                common::skip("bubblewrap is not installed: faults inside it are left out");
                continue;
            }
            for nobody in [false, true] {
                if !nobody && !common::is_root() {
                    continue;
                }
                runs.push(Run { way, place, nobody });
            }
        }
    }
    let mut cases = 0;
    let mut called = std::collections::BTreeSet::new();
    let mut failed_closed = 0;
    let mut problems = Vec::new();
    for run in runs {
        let dir = fixture().dir.join(format!(
            "faults-{:?}-{:?}-{}",
            run.way, run.place, run.nobody
        ));
        let most = calls_per_process(&strace, run, &dir);
        called.extend(most.keys().cloned());
        for (name, errno) in SETUP_CALLS
            .iter()
            .flat_map(|(names, errno)| names.split('|').map(move |name| (name, *errno)))
        {
            let n = most.get(name).copied().unwrap_or(0);
            for k in 1..=n.min(12) {
                let what = format!("{run:?} {name} #{k} -> {errno}");
                let inject = format!("{name}:error={errno}:when={k}");
                let t = run_traced(&strace, run, &dir, name, Some(&inject));
                cases += 1;
                match check_invariant(&t, run.way, &what) {
                    Ok(true) => {}
                    Ok(false) => failed_closed += 1,
                    Err(e) => problems.push(e),
                }
            }
        }
    }
    // Every listed syscall is made by some run (the direct path of a root
    // caller makes fewer: no map writes, no thread count).
    for (names, _) in SETUP_CALLS {
        assert!(
            names.split('|').any(|name| called.contains(name)),
            "{names} was never called: {called:?}"
        );
    }
    eprintln!("{cases} injected faults, {failed_closed} failed closed, the rest ran filtered");
    assert!(cases > 40, "only {cases} cases");
    assert!(
        failed_closed > 10,
        "only {failed_closed} faults stopped the command"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The CPUs a process may run on, as `/proc/PID/status` lists them.
fn cpus_of(status: &str) -> Option<String> {
    status_field(status, "Cpus_allowed_list").map(str::to_string)
}

/// init starts on the stub's CPU (supervise/mod.rs): the stub keeps itself
/// on one CPU around init's clone, init gives itself the caller's CPUs
/// back before the worker starts. A refused read of the CPUs or pin (the
/// stub's call 1 of each) leaves everything as it was; a refused return of
/// the stub's own CPUs (its call 2) leaves only the stub on one CPU. In
/// every case the command runs on the caller's CPUs.
#[test]
fn a_refused_cpu_pin_leaves_the_command_on_the_callers_cpus() {
    let Some(strace) = common::which("strace") else {
        common::skip("strace is not installed");
        return;
    };
    let caller = std::fs::read_to_string("/proc/self/status").unwrap();
    let caller = cpus_of(&caller).expect("Cpus_allowed_list");
    if !caller.contains(['-', ',']) {
        common::skip("one CPU: the helper keeps no CPU for init's start");
        return;
    }
    for inject in [
        "sched_getaffinity:error=EINVAL:when=1",
        "sched_setaffinity:error=EINVAL:when=1",
        "sched_setaffinity:error=EINVAL:when=2",
    ] {
        let out = Command::new(&strace)
            .args(["-f", "-qq", "-o", "/dev/null", "-e"])
            .arg(format!("inject={inject}"))
            .arg(&fixture().helper)
            .args(["/bin/sh", "-c", "echo COMMAND-RAN; cat /proc/self/status"])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .current_dir("/")
            .stdin(Stdio::null())
            .output()
            .expect("run strace");
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{inject}: {}", stderr(&out));
        assert!(text.contains("COMMAND-RAN"), "{inject}: {text}");
        assert_eq!(cpus_of(&text), Some(caller.clone()), "{inject}: {text}");
        assert_eq!(
            status_field(&text, "Seccomp_filters"),
            Some("2"),
            "{inject}"
        );
    }
}
