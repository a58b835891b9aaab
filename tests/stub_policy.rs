//! Where the helper's outer process (the stub) holds the own-sockets
//! policy (every kernel before Landlock ABI 9), issue 55: a datagram
//! socketpair works and reaches only its other end (items 6: made as a
//! sequenced-packet pair; what a program can tell is checked), and a
//! command that fences itself with Landlock keeps its fence (item 2: the
//! stub makes no connect for it or what it starts after). Root and uid
//! 65534, on the host and under srt's bubblewrap options, both ways in.
//! Where the kernel holds the policy, the same probes check the kernel's
//! answers (tests/vm.rs runs a kernel that has it).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use common::threats::WAYS;
use common::{Place, User, fixture, matrix, stderr, stdout, uid_of, which};

/// A folder every user may write, holding the probes.
fn shared(tag: &str) -> PathBuf {
    let dir = common::fresh_folder(tag);
    for probe in ["pairs.py", "fence.py", "holes.py"] {
        common::install(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/probe")
                .join(probe),
            &dir.join(probe),
            0o644,
        );
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// `sh -c script` under the helper at `place` as `user`, `dir` writable
/// (bound in under bubblewrap), `SRT_DEBUG` on.
fn under_helper(
    place: Place,
    user: User,
    way: common::threats::Way,
    dir: &Path,
    script: &str,
) -> Output {
    let d = dir.to_str().unwrap();
    let mut cmd = match place {
        Place::Host => Command::new(&fixture().helper),
        Place::Bwrap => {
            let mut c = Command::new(which("bwrap").unwrap());
            c.args(common::BWRAP_OPTIONS).args(["--bind", d, d]);
            if user == User::Root {
                c.args(["--cap-add", "CAP_SETFCAP"]);
            }
            c.arg("--").arg(&fixture().helper);
            c
        }
    };
    cmd.args(way.args(&["/bin/sh", "-c", script]))
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("SRT_DEBUG", "1")
        .current_dir(d)
        .stdin(Stdio::null());
    if let Some(u) = uid_of(user) {
        use std::os::unix::process::CommandExt;
        cmd.uid(u).gid(u);
    }
    cmd.output().unwrap()
}

fn lines(out: &Output) -> BTreeMap<String, String> {
    stdout(out)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Whether the kernel holds the policy here (Landlock ABI 9).
fn kernel_holds_it() -> bool {
    let out = Command::new(&fixture().helper)
        .arg("--doctor")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    stdout(&out).contains("held by the kernel")
}

/// A datagram socket outside every sandbox at `path` (mode 0777), which
/// writes what it receives to `path.got`.
struct Listening(Child);

impl Listening {
    fn at(path: &Path) -> Listening {
        let child = Command::new("python3")
            .arg("-c")
            .arg(
                "import socket,sys,os\n\
                 s=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\n\
                 s.bind(sys.argv[1]); os.chmod(sys.argv[1],0o777)\n\
                 print('ready',flush=True)\n\
                 while True:\n  m=s.recv(100)\n  open(sys.argv[1]+'.got','ab').write(m)\n",
            )
            .arg(path)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut me = Listening(child);
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(me.0.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready\n");
        me
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn python() -> bool {
    which("python3").is_some() || common::skip("python3 is not installed")
}

#[test]
fn a_datagram_socketpair_works_and_reaches_only_its_other_end() {
    if !python() {
        return;
    }
    let kernel = kernel_holds_it();
    for (place, user) in matrix() {
        for way in WAYS {
            let what = format!("{place:?} {user:?} {way:?}");
            let dir = shared(&format!("pairs-{place:?}-{user:?}-{way:?}"));
            let outside = dir.join("outside.dgram");
            let server = Listening::at(&outside);
            let out = under_helper(
                place,
                user,
                way,
                &dir,
                &format!("python3 pairs.py {}", outside.display()),
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(server);
            let got = lines(&out);
            let text = format!("{what}: {}{}", stdout(&out), stderr(&out));
            assert!(out.status.success(), "{text}");
            assert_eq!(got["recv"], "one,two", "{text}");
            assert_eq!(got["flags"], "True,True,False", "{text}");
            // Nothing reached the socket outside the run.
            assert!(!dir.join("outside.dgram.got").exists(), "{text}");
            if kernel {
                // A real datagram pair; the addressed send refused by
                // Landlock (a socket made outside the run's domain).
                assert_eq!(got["type"], "2", "{text}");
                assert_eq!(got["sendto"], "errno:13", "{text}");
                assert_eq!(got["dgram-socket"], "ok", "{text}");
                assert_eq!(got["sigpipe"], "none", "{text}");
                continue;
            }
            // A sequenced-packet pair: its sends drop the address.
            assert_eq!(got["type"], "5", "{text}");
            assert_eq!(got["sendto"], "ok:escaped", "{text}");
            // What differs from a datagram pair once the other end is
            // closed: end of file (a datagram pair's read waits: EAGAIN
            // here), EPIPE (a datagram pair's is ECONNREFUSED).
            assert_eq!(got["eof"], "b''", "{text}");
            assert_eq!(got["send-closed"], "errno:32", "{text}");
            // With SIGPIPE's default action (a C program's), that send
            // raises no signal: a sequenced-packet send goes the datagram
            // way in the kernel, which sends none (a stream socket's does).
            assert_eq!(got["sigpipe"], "none", "{text}");
            // A datagram socket of its own stays refused, and is named.
            assert_eq!(got["dgram-socket"], "errno:1", "{text}");
            assert!(
                stderr(&out).contains("socket(AF_UNIX, SOCK_DGRAM) by \"python3\""),
                "{text}"
            );
            assert!(
                stderr(&out).contains("4 datagram socketpair(s) made as sequenced-packet ones"),
                "{text}"
            );
        }
    }
}

#[test]
fn socat_relays_through_its_datagram_pair() {
    if which("socat").is_none() {
        common::skip("socat is not installed");
        return;
    }
    for (place, user) in matrix() {
        for way in WAYS {
            let what = format!("{place:?} {user:?} {way:?}");
            let dir = shared(&format!("socat-{place:?}-{user:?}-{way:?}"));
            let out = under_helper(place, user, way, &dir, "echo hello | socat - EXEC:cat");
            assert_eq!(stdout(&out), "hello\n", "{what}: {}", stderr(&out));
            assert!(out.status.success(), "{what}");
            // socat 1.7 goes on without its datagram pair (1.8 fails:
            // `bit out of range 0 - FD_SETSIZE on fd_set`); no call of it
            // is refused.
            assert!(
                !stderr(&out).contains("the sandbox refused"),
                "{what}: {}",
                stderr(&out)
            );
        }
    }
}

#[test]
fn a_command_that_fences_itself_with_landlock_keeps_its_fence() {
    if !python() {
        return;
    }
    let kernel = kernel_holds_it();
    // The fence, and who is under it, as the kernel alone says.
    let alone = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probe/fence.py"))
        .output()
        .unwrap();
    let bare = lines(&alone);
    if bare["abi"].parse::<i32>().unwrap() < 4 {
        common::skip("this kernel's Landlock has no network rights (ABI 4, Linux 6.7)");
        return;
    }
    for check in ["after", "child", "orphan", "clone-parent"] {
        assert_eq!(bare[check], "errno:13", "{check} without the helper");
    }
    assert_eq!(bare["sibling"], "ok");
    for (place, user) in matrix() {
        for way in WAYS {
            let what = format!("{place:?} {user:?} {way:?}");
            let dir = shared(&format!("fence-{place:?}-{user:?}-{way:?}"));
            // A process started after the fence by the shell, not under
            // it, connects to the fenced one's port.
            let out = under_helper(
                place,
                user,
                way,
                &dir,
                "python3 fence.py port & while [ ! -e port ]; do sleep 0.02; done; \
                 python3 -c 'import socket; s = socket.socket(); \
                 s.connect((\"127.0.0.1\", int(open(\"port\").read()))); print(\"later=ok\")'; \
                 wait",
            );
            let got = lines(&out);
            let text = format!("{what}: {}{}", stdout(&out), stderr(&out));
            assert!(out.status.success(), "{text}");
            assert_eq!(got["before"], "ok", "{text}");
            // Under the fence: refused, as without the helper.
            for check in ["after", "child", "orphan"] {
                assert_eq!(got[check], "errno:13", "{check}: {text}");
            }
            // Not under it: made.
            assert_eq!(got["sibling"], "ok", "{text}");
            assert_eq!(got["later"], "ok", "{text}");
            if kernel {
                assert_eq!(got["unix-after"], "ok", "{text}");
                assert_eq!(got["clone-parent"], "errno:13", "{text}");
                continue;
            }
            // The stub makes no connect for a fenced process, its own
            // sockets' included (the kernel alone would allow that one),
            // and says so. A child made with CLONE_PARENT would name the
            // shell as its parent, unfenced to the stub: the fenced
            // process may not make one (issue 67, item 3; it connected).
            assert_eq!(got["unix-after"], "errno:13", "{text}");
            assert_eq!(got["clone-parent"], "errno:1", "{text}");
            assert!(
                stderr(&out).contains("the process keeps a Landlock fence\") by \"python3\""),
                "{text}"
            );
        }
    }
}

/// A root command's own PID namespace (issue 67, item 4): its first
/// process, not fenced and started before the fence, takes the orphans of
/// that namespace, a fenced process's among them. The stub takes any
/// process whose parent is the first of its PID namespace, started after
/// the first fence, for fenced (the orphan connected before). Root only:
/// `unshare(CLONE_NEWPID)` needs `CAP_SYS_ADMIN`.
#[test]
fn a_fenced_orphan_stays_fenced_in_a_pid_namespace_of_the_commands() {
    if !python() || !common::is_root() {
        if !common::is_root() {
            common::skip("not root: only root may make a PID namespace");
        }
        return;
    }
    if kernel_holds_it() {
        return;
    }
    for place in [Place::Host, Place::Bwrap] {
        for way in WAYS {
            // Under bubblewrap (--cap-drop ALL) root keeps CAP_SYS_ADMIN
            // only in the user namespace the namespaces way makes.
            if place == Place::Bwrap && way == common::threats::Way::CapabilityFree {
                continue;
            }
            let what = format!("{place:?} {way:?}");
            let dir = shared(&format!("fence-pidns-{place:?}-{way:?}"));
            let out = under_helper(
                place,
                User::Root,
                way,
                &dir,
                "unshare --pid --fork sh -c 'python3 fence.py; true'",
            );
            let got = lines(&out);
            let text = format!("{what}: {}{}", stdout(&out), stderr(&out));
            if got
                .get("abi")
                .is_some_and(|a| a.parse::<i32>().unwrap_or(0) < 4)
            {
                common::skip("this kernel's Landlock has no network rights (ABI 4, Linux 6.7)");
                return;
            }
            assert_eq!(got["after"], "errno:13", "{text}");
            assert_eq!(got["orphan"], "errno:13", "{text}");
            assert_eq!(got["sibling"], "ok", "{text}");
        }
    }
}

/// The emulated datagram pair writes its two numbers only where the
/// caller could write them itself (issue 67, items 7 and 9): into a
/// read-only page and into a `PROT_NONE` page the call gets `EFAULT`, as
/// from the kernel, the page keeps its bytes and no descriptor is left in
/// the caller's table (they were written through `/proc/PID/mem`, which
/// ignores protections, and the pair stayed open there).
#[test]
fn a_datagram_pair_is_written_only_where_the_caller_could_write() {
    if !python() {
        return;
    }
    let bare = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probe/holes.py"))
        .arg("protect")
        .output()
        .unwrap();
    let want = lines(&bare);
    for (place, user) in matrix() {
        for way in WAYS {
            let what = format!("{place:?} {user:?} {way:?}");
            let dir = shared(&format!("protect-{place:?}-{user:?}-{way:?}"));
            let out = under_helper(place, user, way, &dir, "python3 holes.py protect");
            let got = lines(&out);
            let text = format!("{what}: {}{}", stdout(&out), stderr(&out));
            for page in ["read-only", "no-access"] {
                assert_eq!(want[page], "errno:14", "{page} without the helper");
                assert_eq!(got[page], "errno:14", "{page}: {text}");
                assert_eq!(got[&format!("{page}-page")], "kept", "{page}: {text}");
                assert_eq!(got[&format!("{page}-fds")], "0", "{page}: {text}");
            }
        }
    }
}

/// The numbers of an emulated datagram pair are written as the caller
/// would write them (issue 67, items 7 and 9, a review's race): another
/// thread makes the page read-only and seals it while the call waits,
/// and a call that returns success has its numbers in a page that was
/// still writable (the stub wrote through `/proc/PID/mem`, which ignores
/// protections: about one call in ten of 2,000 here).
#[test]
fn a_datagram_pair_never_writes_through_a_protection_made_meanwhile() {
    let Some(probe) = fixture().probe() else {
        return;
    };
    for (place, user) in matrix() {
        for way in WAYS {
            let what = format!("{place:?} {user:?} {way:?}");
            let out = common::command(
                place,
                user,
                &[],
                &fixture().helper,
                &way.args(&[probe.to_str().unwrap(), "pair-race"]),
            )
            .output()
            .unwrap();
            let text = format!("{what}: {}{}", stdout(&out), stderr(&out));
            assert_eq!(
                lines(&out).get("pair-race").map(String::as_str),
                Some("0"),
                "{text}"
            );
        }
    }
}

/// An abstract name is looked up in the namespace of the socket that
/// connects (issue 67, a review's finding): a command holding an
/// unconnected socket made outside the sandbox's network namespace binds
/// the name of an outside listener itself, then connects the outside
/// socket to it; the stub, seeing a name the run holds, made that connect
/// and it reached the outside listener. Now refused (`EACCES`). Under
/// srt's bubblewrap options (`--unshare-net`), both ways in.
#[test]
fn an_outside_socket_never_reaches_an_outside_name_the_run_also_holds() {
    let Some(probe) = fixture().probe() else {
        return;
    };
    if !python() || kernel_holds_it() {
        return;
    }
    for user in common::users() {
        for way in WAYS {
            let what = format!("{user:?} {way:?}");
            let dir = shared(&format!("decoy-{user:?}-{way:?}"));
            let name = format!("decoy-{}-{user:?}-{way:?}", std::process::id());
            let inner = ["python3", "holes.py", "decoy", &name];
            let out = in_bubblewrap(probe, &["loose-unix", &name], user, way, &dir, &inner)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let text = format!("{what}: {}{}", stdout(&out), stderr(&out));
            assert_eq!(
                lines(&out).get("decoy").map(String::as_str),
                Some("errno:13"),
                "{text}"
            );
        }
    }
}

/// A blocking connect the kernel restarts after a handled signal
/// (`SA_RESTART`) waits again for its handshake and connects, as without
/// the helper (issue 67, item 9: the stub answered the restarted call
/// `EALREADY`, a non-blocking socket's answer).
#[test]
fn a_blocking_connect_restarted_after_a_signal_waits_again() {
    if !python() {
        return;
    }
    for (place, user) in matrix() {
        for way in WAYS {
            let what = format!("{place:?} {user:?} {way:?}");
            let dir = shared(&format!("restart-{place:?}-{user:?}-{way:?}"));
            let out = under_helper(place, user, way, &dir, "python3 holes.py restart");
            let text = format!("{what}: {}{}", stdout(&out), stderr(&out));
            assert_eq!(lines(&out)["restarted"], "ok", "{text}");
        }
    }
}

/// `program args...` running the helper on `probe` (a command in `dir`)
/// under srt's bubblewrap options (`--unshare-net`), `dir` bound
/// writable, as `user`: `program` runs what follows its arguments.
fn in_bubblewrap(
    program: &Path,
    args: &[&str],
    user: User,
    way: common::threats::Way,
    dir: &Path,
    probe: &[&str],
) -> Command {
    let d = dir.to_str().unwrap();
    let mut cmd = Command::new(program);
    cmd.args(args)
        .arg(which("bwrap").unwrap())
        .args(common::BWRAP_OPTIONS)
        .args(["--bind", d, d, "--chdir", d]);
    if user == User::Root {
        cmd.args(["--cap-add", "CAP_SETFCAP"]);
    }
    cmd.arg("--")
        .arg(&fixture().helper)
        .args(way.args(probe))
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin");
    if let Some(u) = uid_of(user) {
        use std::os::unix::process::CommandExt;
        cmd.uid(u).gid(u);
    }
    cmd
}

/// `holes.py ARGS` under the helper under srt's bubblewrap options
/// (`--unshare-net`), its standard output a socket made out here (as
/// Node makes a child's), the stub's soft descriptor limit 1,024: its
/// `key=value` lines up to `last`, and whether this (the host's) network
/// namespace held the abstract name `name` meanwhile.
fn with_outside_stdout(
    user: User,
    way: common::threats::Way,
    dir: &Path,
    args: &[&str],
    last: &str,
    name: &str,
) -> (BTreeMap<String, String>, bool, Output) {
    let (mine, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut probe = vec!["python3", "holes.py"];
    probe.extend(args);
    let prlimit = which("prlimit").unwrap();
    let mut cmd = in_bubblewrap(&prlimit, &["--nofile=1024:", "--"], user, way, dir, &probe);
    cmd.env("SRT_DEBUG", "1")
        .stdin(Stdio::piped())
        .stdout(std::process::Stdio::from(std::os::fd::OwnedFd::from(
            theirs,
        )))
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(&mine);
    let mut got = BTreeMap::new();
    let mut line = String::new();
    while !got.contains_key(last) {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some((k, v)) = line.trim().split_once('=') {
            got.insert(k.to_string(), v.to_string());
        }
    }
    // While the command still holds it.
    let held = std::fs::read_to_string("/proc/net/unix")
        .unwrap()
        .contains(&format!("@{name}"));
    drop(child.stdin.take());
    (got, held, child.wait_with_output().unwrap())
}

fn prlimit() -> bool {
    which("prlimit").is_some() || common::skip("prlimit is not installed (util-linux)")
}

/// About 1,200 blocking connects that wait (a full listener of the
/// command's own), their callers killed, with the stub's soft descriptor
/// limit at 1,024 (issue 67, item 5): the stub forgets the connects whose
/// callers are gone, raises its own limit when it must, and a call it
/// cannot take a socket for is refused, never let go on unchecked. So a
/// datagram socketpair is still made (it failed `EMFILE`), and a bind of
/// an abstract name on the command's standard output, a socket made
/// outside the sandbox as Node makes them, is refused (it was let go on,
/// and the name appeared in the host's abstract namespace). Under srt's
/// bubblewrap options (`--unshare-net`), both ways in.
#[test]
fn a_flood_of_connects_never_lets_a_bind_go_on_unchecked() {
    if !python() || !prlimit() || kernel_holds_it() {
        return;
    }
    for user in common::users_in_loop() {
        for way in WAYS {
            let what = format!("{user:?} {way:?}");
            let dir = shared(&format!("flood-{user:?}-{way:?}"));
            let name = format!("holes-{}-{user:?}-{way:?}", std::process::id());
            let (got, held, out) =
                with_outside_stdout(user, way, &dir, &["flood", &name], "own-bind", &name);
            let text = format!("{what}: {got:?} {}", stderr(&out));
            assert!(!held, "{text}");
            assert_eq!(got.get("pair").map(String::as_str), Some("ok"), "{text}");
            assert_ne!(
                got.get("bind-stdout").map(String::as_str),
                Some("ok"),
                "{text}"
            );
            assert_eq!(
                got.get("own-bind").map(String::as_str),
                Some("ok"),
                "{text}"
            );
        }
    }
}

/// A bind the stub lets go on (another family's: the kernel reads its
/// descriptor number and address again then), raced by a thread that puts
/// the command's standard output (a socket made outside the sandbox) at
/// that number and an abstract address in place (issue 67, item 5): the
/// name never appears in the host's abstract namespace (it did). Before
/// the first such bind the stub gives every inherited socket of another
/// network namespace a name of the kernel's choosing, and the kernel takes
/// no second. Under srt's bubblewrap options, both ways in.
#[test]
fn a_bind_let_go_on_cannot_name_an_outside_socket() {
    if !python() || !prlimit() || kernel_holds_it() {
        return;
    }
    for user in common::users_in_loop() {
        for way in WAYS {
            let what = format!("{user:?} {way:?}");
            let dir = shared(&format!("swap-{user:?}-{way:?}"));
            let name = format!("swap-{}-{user:?}-{way:?}", std::process::id());
            let (got, held, out) =
                with_outside_stdout(user, way, &dir, &["swap", &name], "swapped", &name);
            let text = format!("{what}: {got:?} {}", stderr(&out));
            assert_eq!(
                got.get("swapped").map(String::as_str),
                Some("done"),
                "{text}"
            );
            assert!(!held, "{text}");
        }
    }
}

/// The stub's fence lists stay small however often a process fences
/// itself or asks to take orphans (issue 67, item 8): every
/// `landlock_restrict_self` and `PR_SET_CHILD_SUBREAPER` was noted,
/// failed and repeated ones too, and every connect scanned the lists
/// (300,000 calls grew the stub by about 9 MB). The stub's resident
/// memory after 100,000 of each, against a run that makes 1,000 (the
/// same code run, its pages in memory); the
/// helper alone on the host, where the stub is the process started.
#[test]
fn the_fence_lists_stay_small_however_often_a_process_fences_itself() {
    if !python() || kernel_holds_it() {
        return;
    }
    let resident = |pid: u32| -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap()
    };
    for user in common::users_in_loop() {
        for way in WAYS {
            let what = format!("{user:?} {way:?}");
            let dir = shared(&format!("churn-{user:?}-{way:?}"));
            let mut kb = Vec::new();
            for n in ["1000", "100000"] {
                let mut cmd = Command::new(&fixture().helper);
                cmd.args(way.args(&["python3", "holes.py", "churn", n]))
                    .env_clear()
                    .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                    .current_dir(&dir)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped());
                if let Some(u) = uid_of(user) {
                    use std::os::unix::process::CommandExt;
                    cmd.uid(u).gid(u);
                }
                let mut child = cmd.spawn().unwrap();
                let mut line = String::new();
                use std::io::BufRead;
                std::io::BufReader::new(child.stdout.as_mut().unwrap())
                    .read_line(&mut line)
                    .unwrap();
                assert_eq!(line, "churned\n", "{what}");
                kb.push(resident(child.id()));
                drop(child.stdin.take());
                assert!(child.wait().unwrap().success(), "{what}");
            }
            assert!(
                kb[1] < kb[0] + 1024,
                "{what}: the stub grew from {} KB to {} KB",
                kb[0],
                kb[1]
            );
        }
    }
}
