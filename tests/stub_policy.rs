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
    for probe in ["pairs.py", "fence.py"] {
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
    for check in ["after", "child", "orphan"] {
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
                continue;
            }
            // The stub makes no connect for a fenced process, its own
            // sockets' included (the kernel alone would allow that one),
            // and says so.
            assert_eq!(got["unix-after"], "errno:13", "{text}");
            assert!(
                stderr(&out).contains("the process keeps a Landlock fence\") by \"python3\""),
                "{text}"
            );
        }
    }
}
