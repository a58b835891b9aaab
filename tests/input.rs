//! Bad input: every case gets its documented exit code and a clear
//! `apply-seccomp: ` message, never a panic, never the command run with
//! less isolation than asked.

mod common;

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use common::{helper, matrix, status_field, stderr, stdout};

fn no_panic(out: &Output, what: &str) {
    let err = stderr(out);
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert!(!err.contains("RUST_BACKTRACE"), "{what}: {err}");
    assert!(out.status.code().is_some(), "{what}: killed by a signal");
}

#[test]
fn unusable_command_lines_get_their_codes() {
    let dir = common::fixture().dir.to_string_lossy().into_owned();
    for (place, user) in matrix() {
        let cases: [(Vec<&str>, i32, &str); 12] = [
            (vec![], 125, "apply-seccomp: no command given"),
            (vec!["--"], 125, "apply-seccomp: no command given"),
            (
                vec!["--frobnicate", "true"],
                125,
                "apply-seccomp: unknown option --frobnicate",
            ),
            // Issue 58: a first word starting with `-` is an option, `-h`
            // the help, and nothing may follow --help or --version.
            (vec!["-x", "true"], 125, "apply-seccomp: unknown option -x"),
            (
                vec!["--version", "extra"],
                125,
                "apply-seccomp: --version takes nothing after it, not extra",
            ),
            (
                vec!["-h", "true"],
                125,
                "apply-seccomp: -h takes nothing after it, not true",
            ),
            (
                vec!["--", "-h"],
                127,
                "apply-seccomp: execvp(-h): No such file or directory",
            ),
            (
                vec![""],
                127,
                "apply-seccomp: execvp(): No such file or directory",
            ),
            (
                vec!["definitely-not-a-command-x"],
                127,
                "apply-seccomp: execvp(definitely-not-a-command-x): No such file or directory",
            ),
            (
                vec!["/etc/passwd"],
                126,
                "apply-seccomp: execvp(/etc/passwd): Permission denied",
            ),
            (vec![&dir], 126, "): Permission denied"),
            (
                vec!["/etc/passwd/x"],
                127,
                "apply-seccomp: execvp(/etc/passwd/x): Not a directory",
            ),
        ];
        for (args, code, message) in cases {
            let what = format!("{place:?} {user:?} {args:?}");
            let out = helper(place, user, &[], &args);
            no_panic(&out, &what);
            assert_eq!(out.status.code(), Some(code), "{what}: {}", stderr(&out));
            assert!(stderr(&out).contains(message), "{what}: {}", stderr(&out));
            assert!(
                stderr(&out).starts_with("apply-seccomp: "),
                "{what}: {}",
                stderr(&out)
            );
        }
    }
}

#[test]
fn dash_h_is_the_help() {
    let (place, user) = matrix()[0];
    let out = helper(place, user, &[], &["-h"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("usage: apply-seccomp [-h | --help | --version]"));
    assert_eq!(stdout(&out), stdout(&helper(place, user, &[], &["--help"])));
}

#[test]
fn a_100_kb_argument_arrives_whole() {
    let big = "x".repeat(100 * 1024);
    for (place, user) in matrix() {
        let out = helper(
            place,
            user,
            &[],
            &["/bin/sh", "-c", "printf %s \"$1\" | wc -c", "sh", &big],
        );
        no_panic(&out, "100 KB");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{place:?} {user:?}: {}",
            stderr(&out)
        );
        assert_eq!(stdout(&out).trim(), "102400");
    }
}

#[test]
fn a_long_argument_list_reaches_a_script_without_shebang() {
    // execvp runs such a script with /bin/sh, copying the argument pointers
    // onto the worker's stack: 100,000 of them must fit.
    let script = common::fixture().script("no-shebang", "echo ran $#\n");
    for (place, user) in matrix() {
        // bubblewrap itself takes at most 9000 arguments.
        let n = if place == common::Place::Bwrap {
            8_000
        } else {
            100_000
        };
        let mut args = vec![script.to_string_lossy().into_owned()];
        args.extend(std::iter::repeat_n("x".to_string(), n));
        let out = helper(place, user, &[], &args);
        no_panic(&out, "long argv");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{place:?} {user:?}: {}",
            stderr(&out)
        );
        assert_eq!(stdout(&out), format!("ran {n}\n"), "{place:?} {user:?}");
    }
}

#[test]
fn the_path_search_finds_scripts_and_reports_like_glibc() {
    // The search is the helper's own (musl's execvp neither runs a file
    // without `#!` through /bin/sh nor defaults PATH to /bin:/usr/bin).
    let script = common::fixture().script("found-on-path", "echo found $1\n");
    let dir = script.parent().unwrap().to_string_lossy().into_owned();
    let unreadable = common::fixture().dir.join("unreadable-dir");
    std::fs::create_dir_all(&unreadable).unwrap();
    std::fs::set_permissions(&unreadable, std::fs::Permissions::from_mode(0o700)).unwrap();
    for (place, user) in matrix() {
        let path = format!("/nonexistent:{dir}");
        let out = helper(place, user, &[("PATH", &path)], &["found-on-path", "x"]);
        assert_eq!(
            stdout(&out),
            "found x\n",
            "{place:?} {user:?}: {}",
            stderr(&out)
        );
        // Not found anywhere: 127 and ENOENT.
        let out = helper(place, user, &[("PATH", "/nonexistent")], &["found-on-path"]);
        assert_eq!(out.status.code(), Some(127), "{place:?} {user:?}");
        assert!(
            stderr(&out).contains("No such file or directory"),
            "{}",
            stderr(&out)
        );
        // PATH unset: /bin:/usr/bin, as glibc.
        let mut cmd = common::command(place, user, &[], &common::fixture().helper, &["true"]);
        cmd.env_remove("PATH");
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{place:?} {user:?}: {}",
            stderr(&out)
        );
    }
    // A directory the user cannot search: EACCES is remembered and
    // reported (126) when nothing else is found.
    // (Only a root test run has both the folder's owner and another uid.)
    if common::is_root() {
        let path = format!("{}:/nonexistent", unreadable.display());
        let user = common::User::Unprivileged;
        let out = helper(common::Place::Host, user, &[("PATH", &path)], &["x"]);
        assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("Permission denied"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn non_utf8_bytes_pass_through_argv_and_environment() {
    let odd = OsString::from_vec(vec![b'a', 0xff, 0xfe, b'z']);
    for (place, user) in matrix() {
        let mut cmd = common::command(
            place,
            user,
            &[],
            &common::fixture().helper,
            &[
                OsString::from("/bin/sh"),
                OsString::from("-c"),
                OsString::from(
                    "printf %s \"$1\"; printf '|'; printf '%s\\n' \"$ODD\"; grep Seccomp_filters /proc/self/status",
                ),
                OsString::from("sh"),
                odd.clone(),
            ],
        );
        cmd.env("ODD", &odd);
        // A non-UTF-8 value is not "1": the namespaces filter stays.
        cmd.env("SRT_ALLOW_NESTED_USERNS", &odd);
        let out = cmd.output().unwrap();
        no_panic(&out, "non-UTF-8");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{place:?} {user:?}: {}",
            stderr(&out)
        );
        let mut want = odd.as_bytes().to_vec();
        want.push(b'|');
        want.extend_from_slice(odd.as_bytes());
        assert!(out.stdout.starts_with(&want), "{:?}", out.stdout);
        assert_eq!(status_field(&stdout(&out), "Seccomp_filters"), Some("2"));
    }
}

#[test]
fn only_exactly_one_lifts_the_namespaces_filter() {
    for (place, user) in matrix() {
        for value in ["1 ", " 1", "true", "yes", "2", "", "01", "1\n"] {
            let env = [("SRT_ALLOW_NESTED_USERNS", value)];
            let out = helper(
                place,
                user,
                &env,
                &["/bin/grep", "Seccomp_filters", "/proc/self/status"],
            );
            no_panic(&out, value);
            assert_eq!(
                status_field(&stdout(&out), "Seccomp_filters"),
                Some("2"),
                "{value:?}"
            );
        }
    }
}

#[test]
fn helper_features_other_than_one_runs_the_command() {
    for (place, user) in matrix() {
        for value in ["0", "", "yes", "1 ", "true", "2"] {
            let env = [("SRT_HELPER_FEATURES", value)];
            let out = helper(
                place,
                user,
                &env,
                &[
                    "/bin/sh",
                    "-c",
                    "echo RAN; grep Seccomp_filters /proc/self/status",
                ],
            );
            no_panic(&out, value);
            assert_eq!(out.status.code(), Some(0), "{value:?}: {}", stderr(&out));
            let text = stdout(&out);
            assert!(text.starts_with("RAN\n"), "{value:?}: {text}");
            assert_eq!(
                status_field(&text, "Seccomp_filters"),
                Some("2"),
                "{value:?}"
            );
        }
    }
}

#[test]
fn orphans_are_reaped_while_the_command_runs() {
    // A grandchild orphaned at once exits; init must reap it, so no zombie
    // shows in the command's PID namespace while the command goes on.
    let script = "( /bin/sh -c 'exit 0' & ) ; ( /bin/sh -c 'exit 3' & ) ; sleep 0.3; \
                  for s in /proc/[0-9]*/stat; do read -r line < \"$s\" 2>/dev/null && \
                  case \"${line##*) }\" in Z*) echo \"zombie: $line\";; esac; done; echo checked";
    for (place, user) in matrix() {
        let out = helper(place, user, &[], &["/bin/sh", "-c", script]);
        let text = stdout(&out);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{place:?} {user:?}: {}",
            stderr(&out)
        );
        assert!(text.ends_with("checked\n"), "{text}");
        if (place, user) != (common::Place::Bwrap, common::User::Root) {
            // Only with the fresh /proc does /proc show this PID namespace.
            assert!(!text.contains("zombie"), "{place:?} {user:?}: {text}");
        }
    }
}
