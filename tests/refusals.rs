//! What the sandbox refused, said (issue 44): a command that makes refused
//! calls and fails gets one line after its own output naming each (count,
//! call, argument, program, pid); one that succeeds gets none unless
//! `SRT_DEBUG` is set; `APPLY_SECCOMP_REFUSALS=off` gives none; the calls'
//! errnos are what they were. On the host and under bubblewrap with srt's
//! options, both ways in, as root and as uid 65534.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::threats::{WAYS, Way};
use common::{Place, User, fixture, helper, matrix, probe_results, stderr, stdout};

/// Every kind the filters refuse that the probe makes, and how the line
/// names it.
const CALLS: &[(&str, &str)] = &[
    ("unix-dgram", "socket(AF_UNIX, SOCK_DGRAM)"),
    ("vsock", "socket(AF_VSOCK, SOCK_STREAM)"),
    ("io-uring-setup", "io_uring_setup"),
    ("unshare-user", "unshare(CLONE_NEWUSER)"),
    ("clone-ns", "clone(CLONE_NEWNS)"),
    ("setns", "setns"),
    ("mount", "mount"),
    ("fsopen", "fsopen"),
    ("tiocsti", "ioctl(TIOCSTI)"),
];

fn probe() -> Option<&'static Path> {
    fixture().probe()
}

/// `sh -c SCRIPT` under the helper, `{probe}` in it replaced.
fn sh(place: Place, user: User, way: Way, env: &[(&str, &str)], script: &str) -> Output {
    let script = script.replace("{probe}", &probe().unwrap().to_string_lossy());
    helper(place, user, env, &way.args(&["/bin/sh", "-c", &script]))
}

/// The helper's refusal lines on stderr (`SRT_DEBUG`'s socket line says
/// "refused" too: not one of them).
fn refusal_lines(o: &Output) -> Vec<String> {
    stderr(o)
        .lines()
        .filter(|l| l.starts_with("apply-seccomp: the sandbox refused "))
        .map(str::to_string)
        .collect()
}

fn probe_args() -> String {
    CALLS.iter().map(|(c, _)| *c).collect::<Vec<_>>().join(" ")
}

#[test]
fn a_failing_command_gets_one_line_naming_each_refused_call() {
    if probe().is_none() {
        return;
    }
    for (place, user) in matrix() {
        for way in WAYS {
            let o = sh(
                place,
                user,
                way,
                &[],
                &format!("{{probe}} {}; exit 3", probe_args()),
            );
            let what = format!("{place:?} {user:?} {way:?}");
            assert_eq!(o.status.code(), Some(3), "{what}: {}", stderr(&o));
            // The command saw today's answers.
            let got = probe_results(&stdout(&o));
            for (check, _) in CALLS {
                assert_eq!(
                    got.get(*check).map(String::as_str),
                    Some("errno:EPERM"),
                    "{what}: {check}"
                );
            }
            let lines = refusal_lines(&o);
            assert_eq!(lines.len(), 1, "{what}: {}", stderr(&o));
            let line = &lines[0];
            assert!(
                line.starts_with(&format!(
                    "apply-seccomp: the sandbox refused {} calls: ",
                    CALLS.len()
                )),
                "{what}: {line}"
            );
            for (_, named) in CALLS {
                assert!(
                    line.contains(&format!("{named} by \"probe\" (pid ")),
                    "{what}: {named} not in {line}"
                );
            }
            assert!(line.ends_with("man apply-seccomp, REFUSED CALLS"), "{line}");
            assert!(line.len() < 1200, "{what}: bounded: {} bytes", line.len());
            // The last line, after the command's own.
            assert_eq!(stderr(&o).lines().last(), Some(line.as_str()), "{what}");
        }
    }
}

#[test]
fn a_command_that_succeeds_gets_no_line_unless_srt_debug_is_set() {
    if probe().is_none() {
        return;
    }
    for (place, user) in matrix() {
        let what = format!("{place:?} {user:?}");
        let quiet = sh(
            place,
            user,
            Way::Auto,
            &[],
            "{probe} unix-dgram io-uring-setup",
        );
        assert!(quiet.status.success(), "{what}: {}", stderr(&quiet));
        assert_eq!(refusal_lines(&quiet), Vec::<String>::new(), "{what}");
        let said = sh(
            place,
            user,
            Way::Auto,
            &[("SRT_DEBUG", "1")],
            "{probe} unix-dgram io-uring-setup",
        );
        assert!(said.status.success(), "{what}");
        let lines = refusal_lines(&said);
        assert_eq!(lines.len(), 1, "{what}: {}", stderr(&said));
        assert!(
            lines[0].contains("refused 2 calls: socket(AF_UNIX, SOCK_DGRAM) by \"probe\"")
                && lines[0].contains("io_uring_setup by \"probe\""),
            "{what}: {}",
            lines[0]
        );
    }
}

#[test]
fn refusals_off_says_nothing_and_refuses_the_same() {
    if probe().is_none() {
        return;
    }
    for (place, user) in matrix() {
        for way in WAYS {
            let what = format!("{place:?} {user:?} {way:?}");
            let o = sh(
                place,
                user,
                way,
                &[("APPLY_SECCOMP_REFUSALS", "off"), ("SRT_DEBUG", "1")],
                &format!("{{probe}} {}; exit 3", probe_args()),
            );
            assert_eq!(o.status.code(), Some(3), "{what}: {}", stderr(&o));
            assert_eq!(refusal_lines(&o), Vec::<String>::new(), "{what}");
            let got = probe_results(&stdout(&o));
            for (check, _) in CALLS {
                assert_eq!(got.get(*check).map(String::as_str), Some("errno:EPERM"));
            }
        }
    }
    // A value it does not take is the helper's usage error.
    let o = helper(
        Place::Host,
        User::Unprivileged,
        &[("APPLY_SECCOMP_REFUSALS", "no")],
        &["/bin/true"],
    );
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("APPLY_SECCOMP_REFUSALS=no: it takes on (the default) or off"));
}

#[test]
fn the_commands_output_is_unchanged_and_in_order() {
    if probe().is_none() {
        return;
    }
    for (place, user) in matrix() {
        let what = format!("{place:?} {user:?}");
        let o = sh(
            place,
            user,
            Way::Auto,
            &[],
            "echo out1; echo err1 >&2; {probe} unix-dgram; echo out2; echo err2 >&2; exit 1",
        );
        assert_eq!(o.status.code(), Some(1), "{what}");
        assert_eq!(stdout(&o), "out1\nunix-dgram=errno:EPERM\nout2\n", "{what}");
        let text = stderr(&o);
        let err: Vec<&str> = text.lines().collect();
        assert_eq!(err.len(), 3, "{what}: {err:?}");
        assert_eq!(&err[..2], ["err1", "err2"], "{what}");
        assert!(err[2].starts_with("apply-seccomp: the sandbox refused 1 call: "));
    }
}

/// The probe under a name holding a newline and an escape sequence.
fn strangely_named_probe() -> PathBuf {
    let dir = common::fresh_folder("refusals-name");
    let path = dir.join("pr\nob\x1b[31m");
    common::install(probe().unwrap(), &path, 0o755);
    path
}

#[test]
fn a_program_name_cannot_break_the_line() {
    if probe().is_none() {
        return;
    }
    let named = strangely_named_probe();
    for (place, user) in matrix() {
        let what = format!("{place:?} {user:?}");
        let o = helper(
            place,
            user,
            &[("SRT_DEBUG", "1")],
            &[named.to_str().unwrap(), "unix-dgram"],
        );
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            !err.contains('\x1b'),
            "{what}: an escape got through: {err:?}"
        );
        let lines = refusal_lines(&o);
        assert_eq!(lines.len(), 1, "{what}: {err:?}");
        assert!(
            lines[0].contains("socket(AF_UNIX, SOCK_DGRAM) by \"pr?ob?[31m\" (pid "),
            "{what}: {}",
            lines[0]
        );
    }
}

/// The name in the line is the one the process had at each call (issue
/// 54: it was kept from its first refused call), and a name or a path is
/// in quotes, so none can spell the line's own words: a probe refused,
/// renames itself to `x" (pid 1), s` and is refused again, then execs
/// itself under the name `innocent` (a link) and is refused once more.
#[test]
fn each_refused_call_is_named_by_the_program_making_it() {
    if probe().is_none() {
        return;
    }
    let dir = common::fresh_folder("refusals-renamed");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let innocent = dir.join("innocent");
    std::os::unix::fs::symlink(probe().unwrap(), &innocent).unwrap();
    for (place, user) in matrix() {
        for way in WAYS {
            let what = format!("{place:?} {user:?} {way:?}");
            let o = helper(
                place,
                user,
                &[("SRT_DEBUG", "1")],
                &way.args(&[
                    probe().unwrap().to_str().unwrap(),
                    "unix-dgram",
                    "set-name:x\" (pid 1), s",
                    "unix-dgram",
                    "unix-dgram",
                    &format!("exec:{}", innocent.display()),
                    "unix-dgram",
                ]),
            );
            let lines = refusal_lines(&o);
            assert_eq!(lines.len(), 1, "{what}: {}", stderr(&o));
            let line = &lines[0];
            let pid = line
                .split("by \"probe\" (pid ")
                .nth(1)
                .and_then(|r| r.split(')').next())
                .unwrap_or_else(|| panic!("{what}: {line}"));
            for want in [
                format!("socket(AF_UNIX, SOCK_DGRAM) by \"probe\" (pid {pid})"),
                format!("socket(AF_UNIX, SOCK_DGRAM) x2 by \"x\\\" (pid 1), s\" (pid {pid})"),
                format!("socket(AF_UNIX, SOCK_DGRAM) by \"innocent\" (pid {pid})"),
            ] {
                assert!(line.contains(&want), "{what}: {want} not in {line}");
            }
        }
    }
}

#[test]
fn a_hundred_thousand_refused_calls_are_all_counted() {
    if probe().is_none() {
        return;
    }
    for (place, user) in matrix() {
        let what = format!("{place:?} {user:?}");
        let o = sh(
            place,
            user,
            Way::Auto,
            &[],
            "{probe} refuse-loop:100000 unix-dgram; exit 1",
        );
        assert_eq!(o.status.code(), Some(1), "{what}: {}", stderr(&o));
        let got = probe_results(&stdout(&o));
        assert_eq!(got["refuse-loop"], "eperm:100000", "{what}");
        let lines = refusal_lines(&o);
        assert_eq!(lines.len(), 1, "{what}");
        assert!(
            lines[0].starts_with(
                "apply-seccomp: the sandbox refused 100001 calls: \
                 socket(AF_UNIX, SOCK_DGRAM) x100001 by \"probe\" (pid "
            ),
            "{what}: {}",
            lines[0]
        );
    }
}

#[test]
fn a_connect_the_socket_policy_refused_is_named() {
    if probe().is_none() || common::which("python3").is_none() {
        common::skip("python3 is not installed");
        return;
    }
    // A socket outside every sandbox, in a folder every user reaches.
    let dir = common::fresh_folder("refusals-connect");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.join("outside.sock");
    let mut server = std::process::Command::new("python3")
        .args([
            "-c",
            "import socket,sys,os,time\n\
             s=socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\nos.chmod(sys.argv[1],0o777)\n\
             s.listen(8)\nprint('ready',flush=True)\ntime.sleep(120)",
            path.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(server.stdout.as_mut().unwrap())
        .read_line(&mut ready)
        .unwrap();
    for (place, user) in matrix().into_iter().filter(|(p, _)| *p == Place::Host) {
        let what = format!("{place:?} {user:?}");
        let o = sh(
            place,
            user,
            Way::Auto,
            &[],
            &format!("{{probe}} connect-path:{}; exit 1", path.display()),
        );
        assert_eq!(
            probe_results(&stdout(&o))
                .get("connect-path")
                .map(String::as_str),
            Some("errno:EACCES"),
            "{what}"
        );
        let lines = refusal_lines(&o);
        assert_eq!(lines.len(), 1, "{what}: {}", stderr(&o));
        assert!(
            lines[0].contains(&format!(
                "connect(\"{}\") by \"probe\" (pid ",
                path.display()
            )),
            "{what}: {}",
            lines[0]
        );
    }
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn a_command_ended_by_a_signal_gets_the_line() {
    if probe().is_none() {
        return;
    }
    for (place, user) in matrix() {
        let what = format!("{place:?} {user:?}");
        let o = sh(
            place,
            user,
            Way::Auto,
            &[],
            "{probe} io-uring-setup; kill -TERM $$",
        );
        assert_eq!(o.status.code(), Some(128 + 15), "{what}: {}", stderr(&o));
        let lines = refusal_lines(&o);
        assert_eq!(lines.len(), 1, "{what}: {}", stderr(&o));
        assert!(
            lines[0].starts_with(
                "apply-seccomp: the sandbox refused 1 call: io_uring_setup by \"probe\""
            ),
            "{what}: {}",
            lines[0]
        );
    }
}
