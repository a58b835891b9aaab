//! The gate on a run's system calls (issue 25): each process of a run of
//! `apply-seccomp /bin/true`, traced with `strace -f -ff`, makes at most
//! the number of system calls written in [`LIMITS`] before the command's
//! `execve` (the command's own calls are not counted). A change that adds
//! a call on a run's path changes its number here on purpose, in the same
//! commit, with the reason in its message; one that removes calls lowers
//! it (the test prints what it counted).
//!
//! Counted deterministically: the same binary makes the same calls on a
//! path (no polling on these paths: the thread count is right at once,
//! nothing retries); each case runs three times and the fewest count, so
//! an interrupted call repeated now and then does not fail it. Page faults
//! move by a few pages between runs; their median is gated in
//! tests/page_faults.rs.

mod common;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::threats::Way;
use common::{BWRAP_OPTIONS, NOBODY, Place, User, fixture, is_root, which};

/// (case, calls of each process before the command's exec, in the order
/// the processes started: the outer stub, then inner init and the worker
/// on the namespace way, the worker alone on the capability-free way, or
/// under bubblewrap the guard's holder and the worker).
// The stub's filter is one program (filter/rules.rs, `Set::Stub`): one
// seccomp call, not two, on every path. Whether PID 1 is bubblewrap is
// told by its name, /proc/1/comm (guard/pid1.rs): an openat, read and
// close, where the host's took a readlinkat of /proc/1/exe (EACCES) and
// the same three calls for /proc/1/cmdline (-1), and bubblewrap's the
// readlinkat alone (+2).
// init starts the worker before its mounts and opens a gate after them
// (sys::Gate): init's futex wake (+1), so the worker's filters are made
// while init mounts. The worker's futex wait, made only when it gets there
// before init turns the key, is a matter of scheduling and is not counted
// (calls_before_exec): CI's machine made it in every one of three runs,
// 8 calls where 7 are written (the CI run after b076a5e). The worker's clone is counted in
// init as before (a clone without CLONE_VFORK now).
// init starts on the stub's CPU (supervise/mod.rs): the stub reads its
// CPUs and keeps itself on the one it runs on around init's clone (the CPU
// from the vDSO, no call), then takes them back (+3, sched_getaffinity and
// two sched_setaffinity); init gives itself the caller's CPUs first thing
// (+1). Not on the capability-free way.
// The own-sockets policy (issue 43): the stub asks whether the kernel has
// pidfd_getfd (one failing call), opens the caller's /proc and a
// socketpair for the listener, closes its copy of the inner end, and
// serves the listener (signalfd, two or three polls, recvmsg, read in
// place of one sigtimedwait): +9 on the host, +5 or +6 where it served a
// poll loop already (a terminal, bubblewrap); the worker sends the listener and
// closes it (+1, +3 on the capability-free way, whose worker also closes
// the stub's end); init closes the stub's end (+1, +2 when its end and
// the listener's hang-up come in two wakes). Nothing more until a connect
// or a bind.
// The listener handed over in a shared file table (init and the worker
// are made with CLONE_FILES, supervise/mod.rs): no socketpair, no close of
// its inner end, no recvmsg in the stub (-3; read of the worker's 8-byte
// report in the recvmsg's place, and a short read ends the reading: no
// read that hears EAGAIN), and for init a pidfd of the stub (+1:
// pidfd_open, and the getpid before it) where init polled the channel;
// the stub's fcntl asking whether stderr is open (main.rs,
// sys::hold_stderr, +1). init closes no stub end (-2); the worker neither
// sends nor closes the listener (-1; on the capability-free way -3, its
// ppoll a getppid).
// Who holds the socket policy (issue 55): the stub asks the kernel's
// Landlock ABI once (landlock_create_ruleset's version query, +1 in the
// stub on every path with the own-sockets policy); on this machine's
// kernel (ABI 7) the stub keeps it, and nothing else changes.
// Issue 56: that answer is kept (sys::landlock_abi), and a kernel that
// gave one is Linux 5.13 or later, so the stub no longer probes for
// pidfd_getfd (5.6) when its policy starts (-1 in the stub on every
// path; on the capability-free way the domain's second ABI query is the
// kept answer too). The worker puts the listener in the stub's epoll
// instance (epoll_ctl in its write's place) and the stub, polling the
// instance, is not woken for it: epoll_create1 and, once the command's
// tree is gone, epoll_pwait and the listener's close (closed then, not by
// the stub's exit, which the caller waits for), +3; no read of the
// report nor poll after it (-2); the control channel is left to the
// stub's exit too (-1 close): 37 as before on the host. Under bubblewrap
// 64 (from 65-66): the report's read and its poll gone as on the host.
// init sees the stub's death before its PDEATHSIG took in a word the
// kernel clears at the stub's exit (sys::clear_on_exit): the stub's
// set_tid_address in place of getpid and pidfd_open (-1), no ppoll in
// init (-1).
// The task cap (src/run/tasks.rs), on by default: where the stub made the
// user namespace it sets RLIMIT_NPROC, reading the caller's in the same
// call (prlimit64: +1); as root, whom that limit holds to nothing, it
// reads the kernel's release (uname: +1) and init writes its PID
// namespace's pid_max (open, write, close: +3). init, once the command
// is reaped, asks whether anything is left to end and count (wait4,
// WNOHANG: +1; under bubblewrap it asked already).
const LIMITS: &[(&str, &[usize])] = &[
    ("host root", &[37, 16, 6]),
    ("host uid 65534", &[51, 16, 6]),
    // The ruleset's folders are listed through their own descriptors
    // (capfree.rs): no fcntl after each folder's open, which musl's
    // opendir made (-1 per folder listed: -4 here, four folders on the way
    // to the carved mounts), and the entries are opened relative to them.
    // Its rules are added raw: no fstat per rule (a rule now costs open
    // and landlock_add_rule, taken off as 2 per rule; their descriptors
    // are closed together, a close_range per run of numbers, left out).
    // The end (serve.rs, end_leftovers) asks first whether the stub has a
    // child left (wait4, WNOHANG): with none, nothing the command started
    // runs, and /proc/thread-self/children is not read (-3: open, read,
    // close; the wait4 that said ECHILD after it is this one).
    ("host root, capability-free", &[48, 9]),
    // 42 or 43: the terminal's foreground handed over and back.
    ("host root, terminal", &[47, 16, 10]),
    // init outlives the stub (src/run/plan.rs): the stub waits on the control
    // channel for init's status (signalfd and poll) instead of reaping it,
    // and its guard's inotify instance is made before init starts so that
    // init holds it; init, once the command is reaped, kills and reaps the
    // rest of its namespace (kill, wait4), reports the status (write) and
    // sleeps until the stub's exit kills it (ppoll). No teardown process
    // (it was 5 calls, and the stub's 7 for it).
    // The mount guard's check turns the stub's key of the worker's gate
    // (sys::Gate) instead of a hand-over to init: no socketpair, byte or
    // answer in the stub (-3), its futex wake (+1); init no longer reads
    // the byte, polls `mountinfo`, checks each destination and answers
    // (-7). The `mountinfo` polled is bubblewrap's mount namespace's,
    // opened before the helper's own (guard/pid1.rs), so init's mounts
    // wake no check: the stub's poll never wakes in this run (-2).
    // The stub yields once after its key, as it did after its byte (the
    // worker often shares its CPU; its wait for the key is not counted).
    // init's end (sys::end_all_others) asks first whether it has a child
    // left (wait4, WNOHANG): with none, the namespace holds no other
    // process, and there is no kill(-1) nor the blocking wait4 (-1).
    ("bwrap uid 65534", &[64, 17, 6]),
    // Under bubblewrap the capability-free stub starts a holder for the
    // mount guard's inotify instance (supervise/mod.rs, start_holder):
    // getpid, pidfd_open, the stack's mprotect, clone, close (+5); at its
    // end no pause before the close and no inotify_rm_watch for each
    // folder watched (-1, and -1 for each folder: one in this sandbox):
    // +3 in all. The holder: its close_range
    // calls (left out, as everywhere), ppoll on the stub's pidfd,
    // exit_group.
    // The capability-free worker starts before the mount guard's start and
    // check, in the stub's memory (sys::spawn_shared, no CLONE_VFORK), and
    // makes its filters meanwhile; it execs once the stub's key of the
    // gate is turned: the stub's futex wake and its yield after it (+2;
    // the worker's futex wait, when it gets there first, is not counted).
    ("bwrap uid 65534, capability-free", &[70, 2, 9]),
];

struct Case {
    name: &'static str,
    place: Place,
    user: User,
    way: Way,
    terminal: bool,
}

const CASES: [Case; 6] = [
    Case {
        name: "host root",
        place: Place::Host,
        user: User::Root,
        way: Way::Auto,
        terminal: false,
    },
    Case {
        name: "host uid 65534",
        place: Place::Host,
        user: User::Unprivileged,
        way: Way::Auto,
        terminal: false,
    },
    Case {
        name: "host root, capability-free",
        place: Place::Host,
        user: User::Root,
        way: Way::CapabilityFree,
        terminal: false,
    },
    Case {
        name: "host root, terminal",
        place: Place::Host,
        user: User::Root,
        way: Way::Auto,
        terminal: true,
    },
    Case {
        name: "bwrap uid 65534",
        place: Place::Bwrap,
        user: User::Unprivileged,
        way: Way::Auto,
        terminal: false,
    },
    Case {
        name: "bwrap uid 65534, capability-free",
        place: Place::Bwrap,
        user: User::Unprivileged,
        way: Way::CapabilityFree,
        terminal: false,
    },
];

/// The calls of one traced process before it execs the command (its
/// first `execve` for a child; the second for the stub, whose first is
/// its own start), or all of them if it never does.
///
/// The capability-free way's ruleset grants each entry of `/` (and of the
/// folders above a carved mount) that is no carved mount: how many
/// depends on the machine. So each `landlock_add_rule` with its entry's
/// open (checked to be one open per rule), the folder reads
/// (`getdents64`), the closes of the rules' descriptors (`close_range`,
/// one per run of consecutive numbers) and the memory calls (`mmap`,
/// `munmap`, `brk`: they follow the number of entries) are left out of
/// that count, for every process. A call more per rule shows as one more
/// per entry in the count.
fn calls_before_exec(trace: &str, is_stub: bool) -> usize {
    let mut execs = 0;
    let mut n = 0;
    let mut rules = 0;
    let mut per_rule = 0;
    for line in trace.lines() {
        if line.starts_with("+++") || line.starts_with("---") {
            continue;
        }
        if line.starts_with("execve(") {
            execs += 1;
            if execs == 1 + usize::from(is_stub) {
                break;
            }
        }
        if line.starts_with("landlock_add_rule(") {
            rules += 1;
        } else if line.contains("O_PATH|O_NOFOLLOW") || line.contains("O_NOFOLLOW|O_CLOEXEC|O_PATH")
        {
            per_rule += 1;
        }
        if ["getdents64(", "close_range(", "mmap(", "munmap(", "brk("]
            .iter()
            .any(|c| line.starts_with(c))
        {
            continue;
        }
        // The worker's wait at its gate (sys::Gate) is made only when it
        // gets there before the key is turned: how the two processes were
        // scheduled, not a call of the path. On a machine with few CPUs
        // every run can make it; it is left out of every count.
        if line.starts_with("futex(") && line.contains("FUTEX_WAIT") {
            continue;
        }
        n += 1;
    }
    // Each rule's fd: opened (counted above); closed by a close_range.
    assert_eq!(per_rule, rules, "one open per rule:\n{trace}");
    n - 2 * rules
}

/// The release build, the one that ships: a debug build's `std` checks
/// each descriptor it closes with an extra `fcntl`. A test binary built
/// without optimisation builds it (its own target folder: this `cargo`
/// holds the other's lock), once.
fn release_helper() -> &'static Path {
    static HELPER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HELPER.get_or_init(|| {
        if !cfg!(debug_assertions) {
            return fixture().helper.clone();
        }
        common::release_build(common::RELEASE, &[], "apply-seccomp-release")
    })
}

/// One traced run: the calls of each process, by pid order.
fn traced(case: &Case, strace: &Path, out: &Path) -> Vec<usize> {
    for e in std::fs::read_dir(out).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    let prefix = out.join("r");
    let mut argv: Vec<String> = vec![
        strace.display().to_string(),
        "-f".into(),
        "-ff".into(),
        "-o".into(),
        prefix.display().to_string(),
        release_helper().display().to_string(),
    ];
    argv.extend(case.way.args(&["/bin/true"]));
    let mut cmd = match case.place {
        Place::Host => Command::new(&argv[0]),
        Place::Bwrap => {
            let mut c = Command::new(which("bwrap").unwrap());
            c.args(BWRAP_OPTIONS)
                .arg("--bind")
                .arg(out)
                .arg(out)
                .arg("--")
                .arg(&argv[0]);
            c
        }
    };
    cmd.args(&argv[1..])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    if case.user == User::Unprivileged && is_root() {
        use std::os::unix::process::CommandExt;
        cmd.uid(NOBODY).gid(NOBODY);
    }
    let status = if case.terminal {
        // A session of its own whose controlling terminal is a new pty.
        let pty = nix::pty::openpty(None, None).expect("openpty");
        let mut c = Command::new("setsid");
        c.arg("-c").arg(cmd.get_program()).args(cmd.get_args());
        c.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("TERM", "dumb")
            .current_dir("/")
            .stdin(File::from(pty.slave.try_clone().unwrap()))
            .stdout(File::from(pty.slave.try_clone().unwrap()))
            .stderr(File::from(pty.slave));
        let status = c.status().expect("setsid -c strace");
        drop(pty.master);
        status
    } else {
        cmd.status().expect("strace")
    };
    assert!(status.success(), "{}: {status:?}", case.name);
    let mut traces: Vec<(u32, String)> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let pid = path.extension().unwrap().to_str().unwrap().parse().unwrap();
            (pid, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    traces.sort();
    // Under bubblewrap strace itself is traced by no one; the first file
    // is the stub's (strace's child).
    traces
        .iter()
        .enumerate()
        .map(|(i, (_, t))| calls_before_exec(t, i == 0))
        .collect()
}

#[test]
fn each_process_of_a_run_makes_no_more_calls_than_written() {
    let Some(strace) = which("strace") else {
        common::skip("strace is not installed");
        return;
    };
    let limits: BTreeMap<&str, &[usize]> = LIMITS.iter().copied().collect();
    let mut over = Vec::new();
    for case in &CASES {
        if case.user == User::Root && !is_root() {
            common::skip(&format!("{}: not root", case.name));
            continue;
        }
        if case.place == Place::Bwrap && which("bwrap").is_none() {
            common::skip(&format!("{}: bubblewrap is not installed", case.name));
            continue;
        }
        let out: PathBuf = common::fresh_folder("syscalls");
        if is_root() {
            std::os::unix::fs::chown(&out, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        let runs: Vec<Vec<usize>> = (0..3).map(|_| traced(case, &strace, &out)).collect();
        let want = limits[case.name];
        for r in &runs {
            assert_eq!(r.len(), want.len(), "{}: processes {runs:?}", case.name);
        }
        let fewest: Vec<usize> = (0..want.len())
            .map(|i| runs.iter().map(|r| r[i]).min().unwrap())
            .collect();
        eprintln!("{}: {fewest:?} (limit {want:?})", case.name);
        if fewest.iter().zip(want).any(|(got, max)| got > max) {
            over.push(format!("{}: {fewest:?} > {want:?}", case.name));
        }
    }
    assert!(over.is_empty(), "more system calls than written: {over:?}");
}
