//! Passive observation (SRT_OBSERVE_SOCK): a listener socket here, the
//! built helper running commands that write through absolute paths,
//! relative paths and directory fds, on the host and under bubblewrap, as
//! root and as uid 65534.

mod common;

use std::collections::BTreeSet;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::mpsc;
use std::time::Duration;

use common::threats::Way;
use common::{Place, User, fixture, helper, matrix, stderr, stdout};

/// A listening socket any uid can connect to; collects what each
/// connection sends.
struct Listener {
    path: PathBuf,
    lines: mpsc::Receiver<String>,
}

impl Listener {
    fn new(name: &str) -> Listener {
        let dir = fixture().dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.join("s.sock");
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let tx = tx.clone();
                std::thread::spawn(move || {
                    let mut text = String::new();
                    let _ = conn.read_to_string(&mut text);
                    for line in text.lines() {
                        let _ = tx.send(line.to_string());
                    }
                });
            }
        });
        Listener { path, lines }
    }

    /// The lines received until none came for a moment (the stub closes
    /// its connection when it exits, before the helper does).
    fn take(&self) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(300)) {
            out.push(line);
        }
        out
    }
}

/// A folder the unprivileged user can write (on the host).
fn workdir(name: &str) -> PathBuf {
    let dir = fixture().dir.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(dir.join("read-only-input"), "data\n").unwrap();
    std::fs::set_permissions(
        dir.join("read-only-input"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    dir
}

/// Writes through a relative path (cwd), an absolute path and a dirfd
/// (`rm -r` unlinks the entries relative to the folder's fd), renames,
/// chmods, links, and reads one file.
const SCRIPT: &str = r#"cd "$1" || exit 9
cat read-only-input
echo one > rel.txt
echo two > "$1/abs.txt"
mkdir sub
mv rel.txt sub/moved.txt
chmod 600 "$1/abs.txt"
ln -s abs.txt link
touch sub/touched
rm -r sub
rm abs.txt link
echo done
"#;

fn run_script(way: Way, place: Place, user: User, dir: &Path, env: &[(&str, &str)]) -> Output {
    helper(
        place,
        user,
        env,
        &way.args(&["/bin/sh", "-c", SCRIPT, "sh", &dir.to_string_lossy()]),
    )
}

/// (syscall, path) of every event line, and the other lines.
fn events(lines: &[String]) -> (BTreeSet<(String, String)>, Vec<String>) {
    let mut events = BTreeSet::new();
    let mut other = Vec::new();
    for line in lines {
        let field = |name: &str| {
            let key = format!("\"{name}\":\"");
            line.find(&key).map(|at| {
                let rest = &line[at + key.len()..];
                rest[..rest.find('"').unwrap()].to_string()
            })
        };
        match (field("syscall"), field("path")) {
            (Some(s), Some(p)) => {
                events.insert((s, p));
            }
            _ => other.push(line.clone()),
        }
    }
    (events, other)
}

fn has(events: &BTreeSet<(String, String)>, syscalls: &[&str], path: &Path) -> bool {
    let path = path.to_string_lossy();
    events
        .iter()
        .any(|(s, p)| syscalls.contains(&s.as_str()) && *p == path)
}

#[test]
fn writes_are_reported_reads_are_not_and_results_do_not_change() {
    for (way, place, user) in common::ways_matrix() {
        let tag = format!("{way:?}-{place:?}-{user:?}").to_lowercase();
        let listener = Listener::new(&format!("obs-{tag}"));
        let sock = listener.path.to_string_lossy().into_owned();
        let observed_dir = workdir(&format!("observed-{tag}"));
        let plain_dir = workdir(&format!("plain-{tag}"));

        let plain = run_script(way, place, user, &plain_dir, &[]);
        let observed = run_script(
            way,
            place,
            user,
            &observed_dir,
            &[("SRT_OBSERVE_SOCK", &sock), ("SRT_ENCODED_CMD", "ZWNobw==")],
        );
        let lines = listener.take();
        let what = format!(
            "{way:?} {place:?} {user:?}: {lines:#?}\n{}",
            stderr(&observed)
        );

        // The command's results are those of an unobserved run (under
        // bubblewrap the folder is read-only: the same failures).
        let dirs = |s: String| s.replace(&*plain_dir.to_string_lossy(), "DIR");
        let odirs = |s: String| s.replace(&*observed_dir.to_string_lossy(), "DIR");
        assert_eq!(plain.status.code(), observed.status.code(), "{what}");
        assert_eq!(dirs(stdout(&plain)), odirs(stdout(&observed)), "{what}");
        assert_eq!(dirs(stderr(&plain)), odirs(stderr(&observed)), "{what}");
        let listing = |d: &Path| {
            let mut names: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        assert_eq!(listing(&plain_dir), listing(&observed_dir), "{what}");
        if place == Place::Host {
            assert_eq!(stdout(&observed), "data\ndone\n", "{what}");
        }

        // The header comes first; every line carries the command.
        assert_eq!(
            lines.first().map(String::as_str),
            Some(r#"{"encodedCommand":"ZWNobw=="}"#),
            "{what}"
        );
        let (ev, other) = events(&lines[1..]);
        assert!(other.is_empty(), "{what}");
        assert!(
            lines[1..]
                .iter()
                .all(|l| l.ends_with(r#","encodedCommand":"ZWNobw=="}"#) && l.contains("\"pid\":")),
            "{what}"
        );
        let d = &observed_dir;
        let open = ["openat", "open", "creat"];
        assert!(has(&ev, &open, &d.join("rel.txt")), "relative: {what}");
        assert!(has(&ev, &open, &d.join("abs.txt")), "absolute: {what}");
        assert!(has(&ev, &["mkdir", "mkdirat"], &d.join("sub")), "{what}");
        let rename = ["rename", "renameat", "renameat2"];
        assert!(has(&ev, &rename, &d.join("rel.txt")), "rename from: {what}");
        assert!(
            has(&ev, &rename, &d.join("sub/moved.txt")),
            "rename to: {what}"
        );
        assert!(
            has(&ev, &["symlink", "symlinkat"], &d.join("link")),
            "{what}"
        );
        assert!(has(&ev, &open, &d.join("sub/touched")), "{what}");
        if place == Place::Host {
            // (Under bubblewrap chmod stops at its stat of the missing file.)
            let chmod = ["chmod", "fchmodat", "fchmodat2"];
            assert!(has(&ev, &chmod, &d.join("abs.txt")), "{what}");
            // rm -r unlinks the entries through the folder's fd: resolved
            // through /proc/<pid>/fd (under bubblewrap the first unlink
            // fails and rm stops earlier).
            let unlink = ["unlinkat", "unlink", "rmdir"];
            assert!(has(&ev, &unlink, &d.join("sub/moved.txt")), "dirfd: {what}");
            assert!(has(&ev, &unlink, &d.join("sub")), "{what}");
            assert!(has(&ev, &unlink, &d.join("abs.txt")), "{what}");
        }
        // Reads are not reported; every path is absolute.
        assert!(
            !ev.iter().any(|(_, p)| p.contains("read-only-input")),
            "{what}"
        );
        assert!(ev.iter().all(|(_, p)| p.starts_with('/')), "{what}");
    }
}

/// Writes the observer used to miss (THREATS row 23): xattrs by path,
/// by link and by a read-only descriptor, fchmod and fchown through a
/// read-only descriptor, futimesat, and bind() of a Unix socket to a path
/// (which creates a file). Each is reported with its path; an abstract
/// address (no file) is not; the results are those of an unobserved run.
#[test]
fn writes_through_descriptors_xattrs_and_bind_are_reported() {
    let Some(probe) = fixture().probe() else {
        return;
    };
    for (way, place, user) in common::ways_matrix() {
        if place != Place::Host {
            continue;
        }
        let tag = format!("fd-{way:?}-{user:?}").to_lowercase();
        let listener = Listener::new(&format!("obs-{tag}"));
        let sock = listener.path.to_string_lossy().into_owned();
        let run = |dir: &Path, env: &[(&str, &str)]| {
            std::fs::write(dir.join("attrs"), "").unwrap();
            if user == User::Unprivileged && common::is_root() {
                std::os::unix::fs::chown(dir.join("attrs"), Some(common::NOBODY), None).unwrap();
            }
            let args = [
                probe.to_str().unwrap(),
                "unobserved-writes",
                dir.to_str().unwrap(),
            ];
            helper(place, user, env, &way.args(&args))
        };
        let plain_dir = workdir(&format!("plain-{tag}"));
        let observed_dir = workdir(&format!("observed-{tag}"));
        let plain = run(&plain_dir, &[]);
        let observed = run(&observed_dir, &[("SRT_OBSERVE_SOCK", &sock)]);
        let lines = listener.take();
        let what = format!("{way:?} {user:?}: {lines:#?}\n{}", stdout(&observed));
        assert_eq!(plain.status.code(), Some(0), "{what}");
        assert_eq!(stdout(&plain), stdout(&observed), "{what}");
        let (ev, other) = events(&lines);
        assert!(other.is_empty(), "{what}");
        let attrs = observed_dir.join("attrs");
        let mut expected = vec![
            "setxattr",
            "lsetxattr",
            "fsetxattr",
            "removexattr",
            "lremovexattr",
            "fremovexattr",
            "fchmod",
            "fchown",
        ];
        if cfg!(target_arch = "x86_64") {
            expected.push("futimesat");
        }
        for call in expected {
            assert!(has(&ev, &[call], &attrs), "{call}: {what}");
        }
        assert!(
            has(&ev, &["bind"], &observed_dir.join("bound.sock")),
            "bind: {what}"
        );
        // The decoy: the kernel read `addrlen` bytes and made real.sock;
        // the line names that file, not the string running on past it.
        assert!(observed_dir.join("real.sock").exists(), "{what}");
        assert!(
            !observed_dir.join("real.sock-decoy-name").exists(),
            "{what}"
        );
        assert!(
            has(&ev, &["bind"], &observed_dir.join("real.sock")),
            "bind with a decoy: {what}"
        );
        // Two bind lines: the abstract address made no file.
        assert_eq!(ev.iter().filter(|(s, _)| s == "bind").count(), 2, "{what}");
    }
}

/// The observe filter's calls share the listener's program (one listener
/// in a chain): two filters, as an unobserved run; under
/// `APPLY_SECCOMP_UNIX=deny` with refusals not reported
/// (`APPLY_SECCOMP_REFUSALS=off`) the observe filter is a third.
#[test]
fn the_command_sees_its_filters_and_neither_variable() {
    let listener = Listener::new("obs-env");
    let sock = listener.path.to_string_lossy().into_owned();
    let script = "grep Seccomp_filters /proc/self/status; env | grep ^SRT_; ls /proc/self/fd";
    for (way, place, user) in common::ways_matrix() {
        for (policy, refusals, filters) in [
            ("own", "on", "2"),
            ("deny", "on", "2"),
            ("deny", "off", "3"),
        ] {
            let env = [
                ("APPLY_SECCOMP_UNIX", policy),
                ("APPLY_SECCOMP_REFUSALS", refusals),
            ];
            let observed = helper(
                place,
                user,
                &[
                    ("SRT_OBSERVE_SOCK", &sock),
                    ("SRT_ENCODED_CMD", "eA=="),
                    ("APPLY_SECCOMP_UNIX", policy),
                    ("APPLY_SECCOMP_REFUSALS", refusals),
                ],
                &way.args(&["/bin/sh", "-c", script]),
            );
            let plain = helper(place, user, &env, &way.args(&["/bin/sh", "-c", script]));
            // No SRT_ variable; the same fds as an unobserved run (the
            // listener and the socket stay with the helper).
            let what = format!(
                "{way:?} {place:?} {user:?} {policy} {refusals}: {}",
                stderr(&observed)
            );
            assert_eq!(
                stdout(&observed),
                stdout(&plain).replace(
                    "Seccomp_filters:\t2",
                    &format!("Seccomp_filters:\t{filters}")
                ),
                "{what}"
            );
            assert!(
                stdout(&observed).starts_with(&format!("Seccomp_filters:\t{filters}\n0\n")),
                "{what}"
            );
        }
    }
}

#[test]
fn an_unreachable_socket_is_reported_and_the_command_runs() {
    for (place, user) in matrix() {
        let out = helper(
            place,
            user,
            &[("SRT_OBSERVE_SOCK", "/nonexistent/obs.sock")],
            &["/bin/sh", "-c", "grep Seccomp_filters /proc/self/status"],
        );
        assert_eq!(out.status.code(), Some(0), "{place:?} {user:?}");
        assert_eq!(stdout(&out), "Seccomp_filters:\t2\n", "{place:?} {user:?}");
        assert_eq!(
            stderr(&out),
            "{\"observe_init_error\":\"connect /nonexistent/obs.sock: No such file or directory\"}\n",
            "{place:?} {user:?}"
        );
    }
    // An empty value means no observation at all.
    let out = helper(
        Place::Host,
        User::Unprivileged,
        &[("SRT_OBSERVE_SOCK", "")],
        &["/bin/sh", "-c", "grep Seccomp_filters /proc/self/status"],
    );
    assert_eq!(
        (stdout(&out), stderr(&out)),
        ("Seccomp_filters:\t2\n".into(), String::new())
    );
}

#[test]
fn the_feature_probe_lists_observe() {
    let out = helper(
        Place::Host,
        User::Unprivileged,
        &[("SRT_HELPER_FEATURES", "1")],
        &[] as &[&str],
    );
    assert!(
        stdout(&out).lines().any(|l| l == "observe"),
        "{}",
        stdout(&out)
    );
}

/// A refused call is a JSON line on the observation socket too (issue
/// 44), with no `path` member (srt's monitor reads a path as a write):
/// the call, its number, the errno, the program and its pid.
#[test]
fn a_refused_call_is_a_line_without_a_path() {
    let Some(probe) = fixture().probe() else {
        return;
    };
    let listener = Listener::new("obs-refused");
    let sock = listener.path.to_string_lossy().into_owned();
    for (way, place, user) in common::ways_matrix() {
        let what = format!("{way:?} {place:?} {user:?}");
        let out = helper(
            place,
            user,
            &[("SRT_OBSERVE_SOCK", &sock), ("SRT_ENCODED_CMD", "eA==")],
            &way.args(&[probe.to_str().unwrap(), "unix-dgram", "unshare-user"]),
        );
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        let lines = listener.take();
        let refused: Vec<&String> = lines.iter().filter(|l| l.contains("\"refused\"")).collect();
        assert_eq!(refused.len(), 2, "{what}: {lines:?}");
        assert!(
            refused[0].starts_with("{\"refused\":\"socket(AF_UNIX, SOCK_DGRAM)\",\"nr\":")
                && refused[0].contains(",\"errno\":1,\"comm\":\"probe\",\"pid\":")
                && refused[0].ends_with(",\"encodedCommand\":\"eA==\"}"),
            "{what}: {}",
            refused[0]
        );
        assert!(refused[1].starts_with("{\"refused\":\"unshare(CLONE_NEWUSER)\""));
        assert!(refused.iter().all(|l| !l.contains("\"path\"")), "{what}");
    }
}

/// Where writes are observed, a write the sandbox's read-only mounts
/// refuse (EROFS, the kernel's answer, no filter's) counts in the refusal
/// line (issue 44); unobserved, it cannot be seen without a round trip
/// for every write, and is not. Under bubblewrap, whose `/` is read-only.
#[test]
fn an_observed_write_to_a_read_only_place_is_a_refusal() {
    let listener = Listener::new("obs-read-only");
    let sock = listener.path.to_string_lossy().into_owned();
    let target = "/etc/apply-seccomp-read-only-test";
    let script = format!("echo x > {target}; exit 1");
    for (way, place, user) in common::ways_matrix() {
        if place != Place::Bwrap {
            continue;
        }
        let what = format!("{way:?} {place:?} {user:?}");
        let observed = helper(
            place,
            user,
            &[("SRT_OBSERVE_SOCK", &sock)],
            &way.args(&["/bin/sh", "-c", &script]),
        );
        let _ = listener.take();
        assert_eq!(observed.status.code(), Some(1), "{what}");
        assert!(
            stderr(&observed).contains("Read-only file system"),
            "{what}"
        );
        let line = stderr(&observed)
            .lines()
            .find(|l| l.starts_with("apply-seccomp: the sandbox refused "))
            .map(str::to_string);
        assert!(
            line.as_deref().is_some_and(|l| l.starts_with(&format!(
                "apply-seccomp: the sandbox refused 1 call: openat(\"{target}\": read-only) by \"sh\" (pid "
            ))),
            "{what}: {}",
            stderr(&observed)
        );
        let plain = helper(place, user, &[], &way.args(&["/bin/sh", "-c", &script]));
        assert!(
            !stderr(&plain).contains("the sandbox refused"),
            "{what}: {}",
            stderr(&plain)
        );
    }
}
