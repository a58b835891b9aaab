//! What a hostile command tries against its caller, and what it must see
//! (THREATS rows 19-22): typing into the caller's terminal, signalling or
//! renicing processes outside through a shared process group, raising the
//! namespace limit, passing its own status off as the helper's. And what
//! the fixes must not break: a command on a terminal reads it, Ctrl-C
//! reaches it, Ctrl-Z stops the caller's job and `fg` resumes it.

mod common;

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::threats::WAYS;
use common::{NOBODY, Place, User, fixture, helper, is_root, probe_results, stderr, stdout};

fn users() -> Vec<User> {
    if is_root() {
        vec![User::Root, User::Unprivileged]
    } else {
        vec![User::Unprivileged]
    }
}

/// A program running on a new pseudo-terminal, as the leader of a new
/// session whose controlling terminal it is (`setsid -c`), so that it is
/// in the terminal's foreground as a program started by a login is.
struct OnTerminal {
    child: Child,
    master: File,
    seen: String,
}

impl OnTerminal {
    fn start(user: User, program: &Path, args: &[&str], env: &[(&str, &str)]) -> OnTerminal {
        let pty = nix::pty::openpty(None, None).expect("openpty");
        let slave: OwnedFd = pty.slave;
        let mut cmd = Command::new("setsid");
        cmd.arg("-c")
            .arg(program)
            .args(args)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("TERM", "dumb")
            .envs(env.iter().copied())
            .current_dir("/")
            .stdin(File::from(slave.try_clone().unwrap()))
            .stdout(File::from(slave.try_clone().unwrap()))
            .stderr(File::from(slave));
        if user == User::Unprivileged && is_root() {
            cmd.uid(NOBODY).gid(NOBODY);
        }
        let child = cmd.spawn().expect("setsid -c");
        OnTerminal {
            child,
            master: File::from(pty.master),
            seen: String::new(),
        }
    }

    /// Reads the terminal until `text` has appeared `times` times in all
    /// (or the program has closed it, or 20 s have passed); true if it did.
    fn wait_for(&mut self, text: &str, times: usize) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.seen.matches(text).count() < times {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let mut fds = [nix::poll::PollFd::new(
                self.master.as_fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            let ms = left.as_millis().min(1000) as u16;
            if nix::poll::poll(&mut fds, ms).unwrap_or(0) == 0 {
                continue;
            }
            let mut buf = [0u8; 4096];
            match self.master.read(&mut buf) {
                Ok(n) if n > 0 => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
                // EIO: every holder of the other side has closed it.
                _ => return self.seen.matches(text).count() >= times,
            }
        }
        true
    }

    fn type_in(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
    }

    /// The exit status, within 20 s (then killed: `None`).
    fn status(&mut self) -> Option<i32> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.code();
            }
            // Drain the terminal, so the program never blocks writing.
            self.wait_for("\u{0}", 1);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }
}

impl Drop for OnTerminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Row 19. On the caller's terminal (no bubblewrap `--new-session`), the
/// command pushes a newline into the terminal's input with TIOCSTI: the
/// caller's shell would read it as typed. The same probe outside the
/// helper shows the kernel here allows it, so the EPERM is the filter's.
#[test]
fn the_command_cannot_type_into_the_callers_terminal() {
    let Some(probe) = fixture().probe() else {
        return;
    };
    let probe_s = probe.to_str().unwrap();
    for user in users() {
        let mut bare = OnTerminal::start(user, probe, &["tiocsti-tty"], &[]);
        assert!(bare.wait_for("tiocsti-tty=", 1), "{}", bare.seen);
        if !bare.seen.contains("tiocsti-tty=ok") {
            common::skip(&format!(
                "{user:?}: this kernel refuses TIOCSTI itself ({}; dev.tty.legacy_tiocsti=0?): \
                 row 19 is not testable here",
                bare.seen.trim()
            ));
            continue;
        }
        for way in WAYS {
            let args = way.args(&[probe_s, "tiocsti-tty"]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut t = OnTerminal::start(user, &fixture().helper, &args, &[]);
            assert!(
                t.wait_for("tiocsti-tty=", 1),
                "{way:?} {user:?}: {}",
                t.seen
            );
            assert_eq!(
                probe_results(&t.seen.replace('\r', ""))["tiocsti-tty"],
                "errno:EPERM",
                "{way:?} {user:?}: {}",
                t.seen
            );
            assert_eq!(t.status(), Some(0), "{way:?} {user:?}: {}", t.seen);
        }
    }
}

/// The process group of the process running `argv` exactly, once it runs.
fn group_of(argv: &[&str]) -> Option<(i32, i32)> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        for (pid, _) in processes() {
            // The group is read again once the command line matches: the
            // listing may have seen the process before its exec (and the
            // worker's `setpgid` just before it).
            if std::fs::read(format!("/proc/{pid}/cmdline")).ok() == Some(want.clone()) {
                return group(pid).map(|g| (pid, g));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The process group of `pid`, from its stat line.
fn group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After "pid (comm) ": state, ppid, pgrp.
    let rest = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    rest.split(' ').nth(2).and_then(|p| p.parse().ok())
}

/// (pid, process group) of every process on the machine.
fn processes() -> Vec<(i32, i32)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Some(pgrp) = group(pid) {
            out.push((pid, pgrp));
        }
    }
    out
}

/// Row 20, structurally: the command's process group holds the command
/// alone, never the stub, init, bubblewrap or the caller (here, this test
/// process: without the fix a `kill(0, ...)` from the command reached it).
#[test]
fn the_command_shares_its_process_group_with_nothing_outside() {
    for (n, (way, place, user)) in common::ways_matrix().into_iter().enumerate() {
        let what = format!("{way:?} {place:?} {user:?}");
        let mark = format!("31.4{}{n}", std::process::id());
        let mut child = common::command(
            place,
            user,
            &[],
            &fixture().helper,
            &way.args(&["/bin/sleep", &mark]),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        let found = group_of(&["/bin/sleep", &mark]);
        let members: Vec<i32> = found.map_or(Vec::new(), |(_, g)| {
            processes()
                .into_iter()
                .filter(|&(_, pg)| pg == g)
                .map(|(p, _)| p)
                .collect()
        });
        let _ = child.kill();
        let _ = child.wait();
        let (pid, group) = found.unwrap_or_else(|| panic!("{what}: the command never ran"));
        assert_eq!(group, pid, "{what}: the command leads its group");
        assert_eq!(members, vec![pid], "{what}: others in the command's group");
    }
}

/// Row 20, the attack itself, on the host: the command renices its
/// process group (refused on the capability-free way, row 24) and sends
/// it SIGTERM. The caller (a shell in a session of its own, so that this
/// test process is out of reach either way) and the caller's other child
/// must feel neither; the command ends by its own SIGTERM (143).
#[test]
fn signals_and_priorities_by_group_stay_in_the_sandbox() {
    let Some(probe) = fixture().probe() else {
        return;
    };
    let script = r#"sleep 30 & victim=$!
"$0" "$@"; echo helper=$?
kill -0 $victim && echo victim=alive
echo nice=$(nice)
kill $victim"#;
    for way in WAYS {
        for user in users() {
            let what = format!("{way:?} {user:?}");
            let mut args = vec!["sh".to_string(), "-c".into(), script.into()];
            args.push(fixture().helper.to_string_lossy().into_owned());
            args.extend(way.args(&[probe.to_str().unwrap(), "group-attack"]));
            let out = common::run(Place::Host, user, Path::new("/usr/bin/setsid"), &args);
            let text = stdout(&out);
            // On the capability-free way no group may be reniced, not even
            // the command's own: it could have joined the caller's first.
            let renice = match way {
                common::threats::Way::CapabilityFree => "renice-group=errno:EPERM",
                common::threats::Way::Auto => "renice-group=ok",
            };
            assert!(text.contains(renice), "{what}: {text}");
            assert!(
                text.contains("helper=143"),
                "{what}: {text}\n{}",
                stderr(&out)
            );
            assert!(text.contains("victim=alive"), "{what}: {text}");
            assert!(text.contains("nice=0"), "{what}: {text}");
        }
    }
}

/// Interactive use on a terminal, with the command in a group of its own:
/// it reads what is typed, and Ctrl-C ends it (130), on either way.
#[test]
fn a_command_on_a_terminal_reads_it_and_ctrl_c_reaches_it() {
    for way in WAYS {
        for user in users() {
            let what = format!("{way:?} {user:?}");
            // In front from the start: its group is the terminal's
            // foreground group (fields 5 and 8 of /proc/PID/stat).
            let read = way.args(&[
                "sh",
                "-c",
                "read _ _ _ _ group _ _ front _ < /proc/$$/stat; \
                 [ $group = $front ] && echo in-front; \
                 echo ready; read line; echo \"got:$line\"",
            ]);
            let read: Vec<&str> = read.iter().map(String::as_str).collect();
            let mut t = OnTerminal::start(user, &fixture().helper, &read, &[]);
            assert!(t.wait_for("ready", 1), "{what}: {}", t.seen);
            assert!(t.seen.contains("in-front"), "{what}: {}", t.seen);
            t.type_in("hello\n");
            assert!(t.wait_for("got:hello", 1), "{what}: {}", t.seen);
            assert_eq!(t.status(), Some(0), "{what}: {}", t.seen);

            // Ctrl-C once the command waits (typed while a shell forks,
            // it can be held until the child ends).
            let mark = format!("32.{}{}", std::process::id(), what.len());
            let sleep = way.args(&["/bin/sleep", &mark]);
            let sleep: Vec<&str> = sleep.iter().map(String::as_str).collect();
            let mut t = OnTerminal::start(user, &fixture().helper, &sleep, &[]);
            assert!(group_of(&["/bin/sleep", &mark]).is_some(), "{what}");
            t.type_in("\u{3}");
            assert_eq!(t.status(), Some(130), "{what}: {}", t.seen);
        }
    }
}

/// Job control through the helper, in an interactive bash on a terminal:
/// Ctrl-Z stops the job (bash says "Stopped"), `fg` resumes it and the
/// command reads the terminal again; a job started in the background that
/// reads the terminal stops ("Stopped"), and `fg` lets it read.
#[test]
fn ctrl_z_stops_the_job_and_fg_resumes_it() {
    let bash = Path::new("/bin/bash");
    if !bash.exists() {
        common::skip("no /bin/bash for the job-control test");
        return;
    }
    let helper = fixture().helper.to_string_lossy().into_owned();
    for way in WAYS {
        for user in users() {
            let what = format!("{way:?} {user:?}");
            let run = format!("{helper} {}", way.args::<&str>(&[]).join(" "));
            let mut t = OnTerminal::start(
                user,
                bash,
                &["--norc", "--noprofile", "-i"],
                &[("PS1", "PROMPT$ ")],
            );
            assert!(t.wait_for("PROMPT$ ", 1), "{what}: {}", t.seen);
            // In front: Ctrl-Z, then fg.
            t.type_in(&format!(
                "{run} sh -c 'echo re''ady; read l; echo go''t:$l'; echo sta''tus=$?\n"
            ));
            assert!(t.wait_for("ready", 1), "{what}: {}", t.seen);
            t.type_in("\u{1a}");
            assert!(t.wait_for("Stopped", 1), "{what}: {}", t.seen);
            assert!(t.wait_for("status=148", 1), "{what}: {}", t.seen);
            t.type_in("fg\n");
            assert!(t.wait_for("read l", 2), "{what}: {}", t.seen);
            t.type_in("first\n");
            assert!(t.wait_for("got:first", 1), "{what}: {}", t.seen);
            // Started in the background: stops at its read.
            t.type_in(&format!(
                "{run} sh -c 'sleep 0.2; read l; echo go''t:$l' &\n"
            ));
            std::thread::sleep(Duration::from_millis(800));
            t.type_in("\n");
            assert!(t.wait_for("Stopped", 2), "{what}: {}", t.seen);
            t.type_in("fg\n");
            assert!(t.wait_for("sleep 0.2", 3), "{what}: {}", t.seen);
            t.type_in("second\n");
            assert!(t.wait_for("got:second", 1), "{what}: {}", t.seen);
            t.type_in("exit\n");
            assert_eq!(t.status(), Some(0), "{what}: {}", t.seen);
        }
    }
}

/// Row 21: the command cannot change `max_user_namespaces` (as root in
/// its user namespace it holds CAP_SYS_RESOURCE there): `/proc/sys` is
/// read-only in the helper's mount namespace. The command writes back the
/// value it reads, so that a failure of this test changes nothing.
#[test]
fn the_namespace_limit_cannot_be_raised() {
    let script = "f=/proc/sys/user/max_user_namespaces; v=$(cat $f); \
                  ( echo $v > $f ) 2>&1 | sed 's/.*: //'; echo value=$(cat $f)";
    for (place, user) in common::matrix() {
        let what = format!("{place:?} {user:?}");
        let out = helper(place, user, &[], &["/bin/sh", "-c", script]);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
        assert!(
            text.starts_with("Read-only file system\n"),
            "{what}: {text}"
        );
    }
}

/// Row 22: a command that exits 125, 126 or 127, as the helper's own
/// failures do, after printing the helper's own words: one more line says
/// the sandbox was set up and the status is the command's. The helper's
/// real failures have no such line.
#[test]
fn a_command_cannot_pass_its_status_off_as_the_helpers() {
    for (way, place, user) in common::ways_matrix() {
        for code in [125, 126, 127] {
            let what = format!("{way:?} {place:?} {user:?} {code}");
            let script = format!(
                "echo 'apply-seccomp: unshare(CLONE_NEWUSER): Invalid argument' >&2; exit {code}"
            );
            let out = helper(place, user, &[], &way.args(&["/bin/sh", "-c", &script]));
            assert_eq!(out.status.code(), Some(code), "{what}");
            assert!(
                stderr(&out).ends_with(&format!(
                    "apply-seccomp: the sandbox was set up and the command ran; exit status \
                     {code} is the command's own\n"
                )),
                "{what}: {}",
                stderr(&out)
            );
        }
        let out = helper(place, user, &[], &way.args(&["/nonexistent/command"]));
        assert_eq!(out.status.code(), Some(127));
        assert!(
            !stderr(&out).contains("the sandbox was set up"),
            "{}",
            stderr(&out)
        );
    }
}

/// THREATS row 24: priorities, resource limits, CPU affinity, scheduling
/// and I/O priority of another process, by PID, group or user. On the
/// namespace way the other processes are out of sight (ESRCH); on the
/// capability-free way, with no PID namespace and no ptrace-mode check for
/// Landlock to hold, the filter refuses each (EPERM) unless it is aimed at
/// the command itself, which works on both ways. The target is a process
/// of the same user, whose nice value stays 0.
#[test]
fn priorities_and_limits_of_processes_outside_stay_out_of_reach() {
    let Some(probe) = fixture().probe() else {
        return;
    };
    const CALLS: [&str; 7] = [
        "setpriority",
        "prlimit",
        "affinity",
        "scheduler",
        "param",
        "attr",
        "ioprio",
    ];
    for way in WAYS {
        for user in users() {
            let what = format!("{way:?} {user:?}");
            let mut victim = Command::new("sleep");
            victim.arg("30").stdin(Stdio::null());
            if user == User::Unprivileged && is_root() {
                victim.uid(NOBODY).gid(NOBODY);
            }
            let mut victim = victim.spawn().expect("sleep");
            let target = format!("outside:{}", victim.id());
            let out = helper(
                Place::Host,
                user,
                &[],
                &way.args(&[probe.to_str().unwrap(), &target, "self-calls"]),
            );
            let nice = std::fs::read_to_string(format!("/proc/{}/stat", victim.id()))
                .ok()
                .and_then(|s| s.rsplit(") ").next().map(str::to_string))
                .and_then(|rest| rest.split(' ').nth(16).map(str::to_string));
            let _ = victim.kill();
            let _ = victim.wait();
            assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
            let got = probe_results(&stdout(&out));
            let outside_answer = match way {
                common::threats::Way::CapabilityFree => "errno:EPERM",
                common::threats::Way::Auto => "errno:ESRCH",
            };
            for call in CALLS
                .iter()
                .chain(&["prio-pgrp", "prio-user", "ioprio-user"])
            {
                assert_eq!(
                    got.get(&format!("outside-{call}")).map(String::as_str),
                    Some(outside_answer),
                    "{what} outside-{call}: {got:?}"
                );
            }
            for call in CALLS {
                assert_eq!(
                    got.get(&format!("self-{call}")).map(String::as_str),
                    Some("ok"),
                    "{what} self-{call}: {got:?}"
                );
            }
            assert_eq!(nice.as_deref(), Some("0"), "{what}: the target was reniced");
        }
    }
}

/// Issue 23, hole 2: on the capability-free way, with no PID namespace,
/// the command could join the caller's process group (same session), then
/// renice and idle it by group, and write procfs knobs of a process
/// outside that take no ptrace-mode check (`oom_score_adj` raised to
/// 1000, `autogroup` reniced). The caller is a shell leading its own
/// group, with a child (the victim), on the host (`setsid`) and under
/// bubblewrap (its payload, as srt's bash): the calls through the group
/// answer EPERM on the capability-free way, the writes EACCES (Landlock);
/// on the namespace way the victim is out of sight (ENOENT), or, as root
/// under bubblewrap where the caller's `/proc` stays, read-only (EROFS).
/// Either way the caller's nice value and I/O class and the victim's
/// knobs stay as they were.
#[test]
fn the_callers_group_and_procfs_knobs_stay_out_of_reach() {
    let Some(probe) = fixture().probe() else {
        return;
    };
    let script = r#"sleep 30 & victim=$!
read -r _ _ _ _ pg _ < /proc/$$/stat
"$0" "$@" join:$pg procfs-write:$victim; echo helper=$?
set -- $(cat /proc/$$/stat); echo caller-nice=${19}
echo caller-ioprio=$(ionice -p $$)
echo victim-oom=$(cat /proc/$victim/oom_score_adj)
[ -e /proc/$victim/autogroup ] && echo victim-autogroup=$(cat /proc/$victim/autogroup)
kill $victim"#;
    for (way, place, user) in common::ways_matrix() {
        let what = format!("{way:?} {place:?} {user:?}");
        let mut args = vec!["-c".to_string(), script.into()];
        args.push(fixture().helper.to_string_lossy().into_owned());
        args.extend(way.args(&[probe.to_str().unwrap()]));
        let out = match place {
            Place::Host => {
                let mut all = vec!["sh".to_string()];
                all.extend(args);
                common::run(place, user, Path::new("/usr/bin/setsid"), &all)
            }
            Place::Bwrap => common::run(place, user, Path::new("/bin/sh"), &args),
        };
        let text = stdout(&out);
        let got = probe_results(&text);
        let ctx = format!("{what}: {text}\n{}", stderr(&out));
        assert_eq!(got.get("helper").map(String::as_str), Some("0"), "{ctx}");
        let (by_group, write) = match (way, place, user) {
            (common::threats::Way::CapabilityFree, _, _) => (Some("errno:EPERM"), "errno:EACCES"),
            (_, Place::Bwrap, User::Root) => (None, "errno:EROFS"),
            _ => (None, "errno:ENOENT"),
        };
        if let Some(want) = by_group {
            assert_eq!(got["renice-joined"], want, "{ctx}");
            assert_eq!(got["ioprio-joined"], want, "{ctx}");
        }
        assert_eq!(got["write-oom_score_adj"], write, "{ctx}");
        if got["write-autogroup"] != "absent" {
            assert_eq!(got["write-autogroup"], write, "{ctx}");
            assert!(got["victim-autogroup"].ends_with(" nice 0"), "{ctx}");
        }
        assert_eq!(got["caller-nice"], "0", "{ctx}");
        assert!(!got["caller-ioprio"].contains("idle"), "{ctx}");
        assert_eq!(got["victim-oom"], "0", "{ctx}");
    }
}

/// Issue 23, hole 3: the command makes another stopped job of the
/// caller's shell the terminal's foreground, then stops itself; when the
/// user types `fg`, the stub must continue and hand the terminal to the
/// command's own group only, never to that other job (before the fix it
/// continued it, on the capability-free way, though Landlock refused the
/// command's own `kill` of it). The other job is a `sleep` stopped with
/// Ctrl-Z, which must still be stopped after.
#[test]
fn the_stub_never_continues_a_group_outside_the_command() {
    let Some(probe) = fixture().probe() else {
        return;
    };
    let bash = Path::new("/bin/bash");
    if !bash.exists() {
        common::skip("no /bin/bash for the job-control test");
        return;
    }
    let helper = fixture().helper.to_string_lossy().into_owned();
    for way in WAYS {
        for user in users() {
            let what = format!("{way:?} {user:?}");
            let mut t = OnTerminal::start(
                user,
                bash,
                &["--norc", "--noprofile", "-i"],
                &[("PS1", "PROMPT$ ")],
            );
            assert!(t.wait_for("PROMPT$ ", 1), "{what}: {}", t.seen);
            let mark = format!("1000.{}{}", std::process::id(), what.len());
            t.type_in(&format!("sleep {mark}\n"));
            let (victim, group) = group_of(&["sleep", &mark]).expect("the sleep job");
            t.type_in("\u{1a}");
            assert!(t.wait_for("Stopped", 1), "{what}: {}", t.seen);
            let run = format!("{helper} {}", way.args::<&str>(&[]).join(" "));
            t.type_in(&format!("{run} {} front-steal:{group}\n", probe.display()));
            assert!(t.wait_for("front-steal=", 1), "{what}: {}", t.seen);
            assert!(t.wait_for("Stopped", 2), "{what}: {}", t.seen);
            t.type_in("fg %2\n");
            assert!(t.wait_for("continued", 1), "{what}: {}", t.seen);
            assert!(t.wait_for("PROMPT$ ", 4), "{what}: {}", t.seen);
            let state = std::fs::read_to_string(format!("/proc/{victim}/stat"))
                .ok()
                .and_then(|s| s.rsplit(") ").next().map(|r| r[..1].to_string()));
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(victim),
                nix::sys::signal::Signal::SIGKILL,
            );
            assert_eq!(
                state.as_deref(),
                Some("T"),
                "{what}: the other job was continued: {}",
                t.seen
            );
            // Dropped: the shell is killed (an `exit` with a job just
            // killed met "There are stopped jobs" and waited 15 s a case).
        }
    }
}
