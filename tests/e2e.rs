//! The built helper, run for real: on the host and under bubblewrap with
//! the client's options, as root and as uid 65534.

mod common;

use common::threats::{self, WAYS, Way};
use common::{Place, User, fixture, helper, matrix, probe_results, status_field, stderr, stdout};

/// Whether the command holds a usable CAP_SYS_ADMIN: root in the helper's
/// own user namespace (namespace way), or host root (either way). Under
/// bubblewrap's `--cap-drop ALL`, the capability-free way leaves root none.
fn privileged(way: Way, place: Place, user: User) -> bool {
    user == User::Root && (way == Way::Auto || place == Place::Host)
}

fn check_probe(way: Way, place: Place, user: User, nested: bool, stacked: bool) {
    check_probe_under(way, place, user, nested, stacked, threats::Unix::Own);
}

fn check_probe_under(
    way: Way,
    place: Place,
    user: User,
    nested: bool,
    stacked: bool,
    unix: threats::Unix,
) {
    let Some(probe) = fixture().probe() else {
        return;
    };
    let mut args = vec![probe.to_str().unwrap()];
    args.extend(threats::filter_checks(threats::HOST, stacked));
    let policy = if unix == threats::Unix::Deny {
        "deny"
    } else {
        "own"
    };
    let env = [
        ("SRT_ALLOW_NESTED_USERNS", if nested { "1" } else { "0" }),
        ("APPLY_SECCOMP_UNIX", policy),
    ];
    let out = helper(place, user, &env, &way.args(&args));
    let what = format!("{way:?} {place:?} {user:?} nested={nested} stacked={stacked} {unix:?}");
    assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
    let got = probe_results(&stdout(&out));
    let wrong = threats::filter_mismatches(
        threats::HOST,
        &got,
        nested,
        privileged(way, place, user),
        stacked,
        unix,
    );
    assert!(wrong.is_empty(), "{what}:\n{}", wrong.join("\n"));
}

#[test]
fn filters_hold_inside_the_helper() {
    for way in WAYS {
        for (place, user) in matrix() {
            check_probe(way, place, user, false, false);
            check_probe_under(way, place, user, false, false, threats::Unix::Deny);
        }
    }
}

#[test]
fn a_permissive_filter_stacked_by_the_command_changes_nothing() {
    for way in WAYS {
        for (place, user) in matrix() {
            check_probe(way, place, user, false, true);
            check_probe(way, place, user, true, true);
        }
    }
}

#[test]
fn the_command_cannot_reach_the_inner_init_or_anything_outside() {
    for (place, user) in matrix() {
        let Some(probe) = fixture().probe() else {
            return;
        };
        let args = [
            probe.to_str().unwrap(),
            "ptrace-init",
            "mem-init",
            "foreign",
        ];
        let out = helper(place, user, &[], &args);
        let got = probe_results(&stdout(&out));
        let ctx = format!("{place:?} {user:?}: {got:?} {}", stderr(&out));
        assert_eq!(got["ptrace-init"], "errno:EPERM", "{ctx}");
        assert_eq!(got["mem-init"], "errno:EACCES", "{ctx}");
        let foreign: Vec<&str> = got["foreign"].split(',').collect();
        assert!(
            foreign.iter().all(|p| p.ends_with(":EACCES")),
            "{ctx}: a process outside the filters is open to the command"
        );
        if (place, user) == (Place::Bwrap, User::Root) {
            // bubblewrap's --proc refuses a fresh /proc to a root caller
            // (its read-only submounts make it "too revealing"): the command
            // sees bwrap's PID namespace, but can open none of it.
            assert!(foreign.len() > 1, "{ctx}");
        } else {
            // A fresh /proc: only the inner init besides the command.
            assert_eq!(foreign, ["1:EACCES"], "{ctx}");
        }
    }
}

/// Under bubblewrap init outlives the stub and sends the command's status
/// over the control channel (a pipe, whose reads may join reports) after
/// what it reported before: as root, bubblewrap's `--proc` refuses init a
/// fresh `/proc`, a tolerated failure reported at the start. Both reach
/// the caller, and the status is the command's.
#[test]
fn under_bubblewrap_inits_early_report_and_the_status_both_arrive() {
    if !common::is_root() {
        common::skip("not running as root: bubblewrap refuses /proc to root callers only");
        return;
    }
    if common::which("bwrap").is_none() {
        common::skip("bubblewrap (bwrap) is not installed");
        return;
    }
    let out = helper(
        Place::Bwrap,
        User::Root,
        &[("SRT_DEBUG", "1")],
        &["/bin/sh", "-c", "exit 7"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(
        err.contains(
            "apply-seccomp: note, nothing to do: the command sees the /proc it was given, \
             read-only; the kernel refuses a fresh one here (Operation not permitted)"
        ),
        "{err}"
    );
    assert!(err.contains("apply-seccomp: exit status 7"), "{err}");
}

/// Row 16 on the capability-free way: no PID namespace, so the command
/// sees the processes around it (the host's, or bubblewrap's), and the
/// Landlock domain must keep every one of them out of its reach: no
/// signal, no ptrace, no `/proc/<pid>/mem`; and an abstract socket bound
/// outside (reached through an inherited unbound socket, which no filter
/// can stop) refuses it.
#[test]
fn capability_free_no_process_outside_can_be_signalled_ptraced_or_opened() {
    for (place, user) in matrix() {
        let Some(probe) = fixture().probe() else {
            return;
        };
        let probe = probe.to_str().unwrap();
        let name = format!(
            "apply-seccomp-test-{}-{place:?}-{user:?}",
            std::process::id()
        );
        let connect = format!("abstract-connect:{name}");
        // The wrapper binds the abstract address outside the helper and
        // leaves an unbound socket on fd 3.
        let inner = Way::CapabilityFree.args(&[
            probe,
            "ptrace-init",
            "mem-init",
            "foreign",
            "kill-foreign",
            "ptrace-foreign",
            &connect,
        ]);
        for (policy, refused) in [("own", "errno:EACCES"), ("deny", "errno:EPERM")] {
            let out = common::command(
                place,
                user,
                &[("APPLY_SECCOMP_UNIX", policy)],
                std::path::Path::new(probe),
                &[
                    &["with-abstract", name.as_str()][..],
                    &[fixture().helper.to_str().unwrap()],
                    &inner.iter().map(String::as_str).collect::<Vec<_>>(),
                ]
                .concat(),
            )
            .output()
            .unwrap();
            let got = probe_results(&stdout(&out));
            let ctx = format!("{place:?} {user:?}: {got:?} {}", stderr(&out));
            assert_eq!(out.status.code(), Some(0), "{ctx}");
            assert_eq!(got["ptrace-init"], "errno:EPERM", "{ctx}");
            assert_eq!(got["mem-init"], "errno:EACCES", "{ctx}");
            // At least PID 1 and the outer stub.
            let wrong = threats::outside_mismatches(&got, 2);
            assert!(wrong.is_empty(), "{ctx}:\n{}", wrong.join("\n"));
            // The inherited socket belongs to the network namespace it was
            // made in (the host's, even under bubblewrap's --unshare-net), where
            // the address exists. Under the own-sockets policy the stub refuses
            // its connect (no socket of the run holds that name); under
            // upstream's, only the Landlock scope does (the namespace way lets
            // it through there: inherited descriptors are out of the filters'
            // reach).
            assert_eq!(got["abstract-connect"], refused, "{policy}: {ctx}");
        }
    }
}

#[test]
fn nesting_allowed_lifts_only_the_namespaces_filter() {
    for way in WAYS {
        for (place, user) in matrix() {
            check_probe(way, place, user, true, false);
        }
    }
}

const SHOW: &str = "echo \"pid=$$ ppid=$PPID\"; cat /proc/self/status; \
                    echo \"uid_map=$(cat /proc/self/uid_map)\"; \
                    echo \"limit=$(cat /proc/sys/user/max_user_namespaces)\"";

#[test]
fn the_command_sees_its_own_namespaces_and_filters() {
    let host_limit = std::fs::read_to_string("/proc/sys/user/max_user_namespaces").unwrap();
    for way in WAYS {
        for (place, user) in matrix() {
            let out = helper(
                place,
                user,
                &[("SRT_ALLOW_NESTED_USERNS", "0")],
                &way.args(&["/bin/sh", "-c", SHOW]),
            );
            let text = stdout(&out);
            let ctx = format!("{way:?} {place:?} {user:?}:\n{text}\n{}", stderr(&out));
            assert_eq!(out.status.code(), Some(0), "{ctx}");
            assert_eq!(status_field(&text, "NoNewPrivs"), Some("1"), "{ctx}");
            assert_eq!(status_field(&text, "Seccomp"), Some("2"), "{ctx}");
            assert_eq!(status_field(&text, "Seccomp_filters"), Some("2"), "{ctx}");
            assert_eq!(
                status_field(&text, "CapAmb"),
                Some("0000000000000000"),
                "{ctx}"
            );
            let map = text
                .lines()
                .find_map(|l| l.strip_prefix("uid_map="))
                .unwrap();
            let map: Vec<&str> = map.split_whitespace().collect();
            let limit = text.lines().find_map(|l| l.strip_prefix("limit=")).unwrap();
            let uid = if user == User::Root {
                "0".to_string()
            } else if common::is_root() {
                "65534".to_string()
            } else {
                own_uid()
            };
            match (way, place, user) {
                // No namespaces of its own: the caller's PID namespace (its
                // parent is the outer stub), maps and limit.
                (Way::CapabilityFree, _, _) => {
                    assert!(!text.contains("pid=2 ppid=1"), "{ctx}");
                    let outer = helper_free(place, user, SHOW);
                    let outer_text = stdout(&outer);
                    let outer_map = outer_text
                        .lines()
                        .find_map(|l| l.strip_prefix("uid_map="))
                        .unwrap();
                    assert_eq!(
                        map,
                        outer_map.split_whitespace().collect::<Vec<_>>(),
                        "{ctx}"
                    );
                    let outer_limit = outer_text
                        .lines()
                        .find_map(|l| l.strip_prefix("limit="))
                        .unwrap();
                    assert_eq!(limit, outer_limit, "{ctx}");
                }
                // Root on the host has CAP_SYS_ADMIN: the direct path makes no
                // user namespace, so neither the map nor the limit changes.
                (Way::Auto, Place::Host, User::Root) => {
                    assert!(text.contains("pid=2 ppid=1"), "{ctx}");
                    assert_eq!(map, ["0", "0", "4294967295"], "{ctx}");
                    assert_eq!(limit, host_limit.trim(), "{ctx}");
                }
                (Way::Auto, _, _) => {
                    assert!(text.contains("pid=2 ppid=1"), "{ctx}");
                    assert_eq!(map, [uid.as_str(), uid.as_str(), "1"], "{ctx}");
                    assert_eq!(limit, "0", "{ctx}");
                }
            }
        }
    }
}

fn own_uid() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status_field(&status, "Uid")
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn exit_status_and_signal_deaths_are_relayed() {
    for way in WAYS {
        for (place, user) in matrix() {
            for (script, code) in [
                ("exit 42", 42),
                ("exit 0", 0),
                ("kill -KILL $$", 137),
                ("kill -SEGV $$", 139),
                ("kill -TERM $$", 143),
            ] {
                let out = helper(place, user, &[], &way.args(&["/bin/sh", "-c", script]));
                assert_eq!(
                    out.status.code(),
                    Some(code),
                    "{way:?} {place:?} {user:?} {script}: {}",
                    stderr(&out)
                );
            }
        }
    }
}

#[test]
fn the_environment_is_scrubbed() {
    let env = [
        ("SRT_ALLOW_NESTED_USERNS", "0"),
        ("SRT_OBSERVE_SOCK", "/nonexistent.sock"),
        ("SRT_ENCODED_CMD", "ZWNobw=="),
        ("SRT_HELPER_FEATURES", "0"),
        ("SRT_DEBUG", "1"),
        ("KEEP_ME", "yes"),
    ];
    for (way, place, user) in common::ways_matrix() {
        let out = helper(place, user, &env, &way.args(&["/usr/bin/env"]));
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{way:?}: {}", stderr(&out));
        for gone in [
            "SRT_ALLOW_NESTED_USERNS",
            "SRT_OBSERVE_SOCK",
            "SRT_ENCODED_CMD",
            "SRT_HELPER_FEATURES",
        ] {
            assert!(
                !text.contains(gone),
                "{place:?} {user:?}: {gone} leaked:\n{text}"
            );
        }
        assert!(text.contains("SRT_DEBUG=1"), "{text}");
        assert!(text.contains("KEEP_ME=yes"), "{text}");
    }
}

/// The removed variables cannot be read where the helper's processes
/// started with them either: `/proc/PID/environ` of init (which shares
/// the stub's memory) and of the stub shows the start-up strings, and a
/// root command on the direct path could read init's. The command reads
/// the environ of every process named apply-seccomp it can see; none may
/// hold a value. On the namespace way it sees init (PID 1, or under
/// bubblewrap as root the stub and init in bubblewrap's PID namespace), so
/// the search is not empty there. (Before the fix, as host root: every
/// value, in init's.)
#[test]
fn the_removed_variables_are_unreadable_in_the_helpers_processes() {
    let env = [
        ("SRT_ALLOW_NESTED_USERNS", "nested-marker-0"),
        ("SRT_OBSERVE_SOCK", "/nonexistent/observe-marker.sock"),
        ("SRT_ENCODED_CMD", "encoded-marker-ZWNobw"),
        ("APPLY_SECCOMP_LOG", "/nonexistent/log-marker"),
    ];
    let script = "for d in /proc/[0-9]*; do \
                  [ \"$(cat $d/comm 2>/dev/null)\" = apply-seccomp ] || continue; \
                  echo seen=${d#/proc/}; tr '\\0' '\\n' < $d/environ 2>/dev/null; done";
    for (way, place, user) in common::ways_matrix() {
        let what = format!("{way:?} {place:?} {user:?}");
        let out = helper(place, user, &env, &way.args(&["/bin/sh", "-c", script]));
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
        if way == Way::Auto {
            assert!(text.contains("seen="), "{what}: init not seen: {text}");
        }
        for marker in [
            "nested-marker",
            "observe-marker",
            "encoded-marker",
            "log-marker",
        ] {
            assert!(!text.contains(marker), "{what}: {marker} readable:\n{text}");
        }
    }
}

#[test]
fn nesting_allowed_gives_one_filter_and_a_working_user_namespace() {
    let Some(unshare) = common::which("unshare") else {
        common::skip("util-linux unshare is not installed");
        return;
    };
    let script = format!(
        "grep Seccomp_filters /proc/self/status; {} --user true && echo nested-ok; \
         echo limit=$(cat /proc/sys/user/max_user_namespaces)",
        unshare.display()
    );
    for (way, place, user) in common::ways_matrix() {
        let out = helper(
            place,
            user,
            &[("SRT_ALLOW_NESTED_USERNS", "1")],
            &way.args(&["/bin/sh", "-c", &script]),
        );
        let text = stdout(&out);
        let ctx = format!("{way:?} {place:?} {user:?}:\n{text}\n{}", stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        assert_eq!(status_field(&text, "Seccomp_filters"), Some("1"), "{ctx}");
        assert!(text.contains("nested-ok"), "{ctx}");
        assert!(!text.contains("limit=0\n"), "{ctx}");
        // Any value but exactly 1 keeps both.
        for value in ["0", "1 ", "true", "yes", "2", ""] {
            let out = helper(
                place,
                user,
                &[("SRT_ALLOW_NESTED_USERNS", value)],
                &way.args(&["/bin/sh", "-c", &script]),
            );
            let text = stdout(&out);
            assert_eq!(
                status_field(&text, "Seccomp_filters"),
                Some("2"),
                "{way:?} {value:?}: {text}"
            );
            assert!(!text.contains("nested-ok"), "{way:?} {value:?}: {text}");
        }
    }
}

#[test]
fn an_execute_only_install_works_unprivileged() {
    let xonly = fixture().helper_copy("apply-seccomp-xonly", 0o111);
    for (way, place, user) in common::ways_matrix() {
        if user != User::Unprivileged {
            continue;
        }
        let out = common::command(
            place,
            user,
            &[],
            &xonly,
            &way.args(&[
                "/bin/sh",
                "-c",
                "grep -E '^(Seccomp_filters|NoNewPrivs):' /proc/self/status",
            ]),
        )
        .output()
        .unwrap();
        let text = stdout(&out);
        let ctx = format!("{way:?} {place:?}: {text} {}", stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        assert_eq!(status_field(&text, "Seccomp_filters"), Some("2"), "{ctx}");
        assert_eq!(status_field(&text, "NoNewPrivs"), Some("1"), "{ctx}");
    }
}

/// The feature probe is answered only with no arguments. With a command
/// the variable is a user's, passed through (srt 0.0.83 neither sets nor
/// clears it): the command runs under the filters, and never sees it.
#[test]
fn the_feature_probe_never_stands_in_for_a_run() {
    for (place, user) in matrix() {
        let out = helper::<&str>(place, user, &[("SRT_HELPER_FEATURES", "1")], &[]);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0));
        let words: Vec<&str> = text.lines().collect();
        assert!(words.contains(&"userns-limit"), "{text}");
        assert!(words.contains(&"own-unix-sockets"), "{text}");
        assert!(words.contains(&"race-free"), "{text}");
        assert!(words.contains(&"capability-free"), "{text}");
        for value in ["1", "0"] {
            let out = helper(
                place,
                user,
                &[("SRT_HELPER_FEATURES", value)],
                &[
                    "/bin/sh",
                    "-c",
                    "echo RAN; grep Seccomp_filters /proc/self/status; \
                     echo features=${SRT_HELPER_FEATURES-unset}; exit 3",
                ],
            );
            let text = stdout(&out);
            assert_eq!(out.status.code(), Some(3), "{value}: {}", stderr(&out));
            assert!(text.starts_with("RAN\n"), "{value}: {text}");
            assert_eq!(status_field(&text, "Seccomp_filters"), Some("2"), "{text}");
            assert!(text.contains("features=unset"), "{text}");
        }
    }
}

#[test]
fn failures_have_documented_codes_and_messages() {
    // A binary the kernel cannot run (an ELF header, then garbage): 126,
    // as a shell says, not handed to /bin/sh as a script (which gave 127).
    let bad_elf = fixture().script("bad-elf", "\x7fELF\x02\x01\x01\0\0\0\0garbage\n");
    let bad_elf = bad_elf.to_str().unwrap();
    let bad_elf_message = format!("apply-seccomp: execvp({bad_elf}): Exec format error");
    for (way, place, user) in common::ways_matrix() {
        let cases: [(&[&str], i32, &str); 8] = [
            (&[bad_elf], 126, &bad_elf_message),
            // A folder: the kernel's EACCES, and what it means (issue 46).
            (
                &["/tmp"],
                126,
                "apply-seccomp: execvp(/tmp): Permission denied: /tmp is a folder, not a program",
            ),
            (
                &["/nonexistent/cmd"],
                127,
                "apply-seccomp: execvp(/nonexistent/cmd): No such file or directory",
            ),
            (
                &["no-such-command-anywhere"],
                127,
                "apply-seccomp: execvp(no-such-command-anywhere): No such file or directory",
            ),
            (
                &["/etc/passwd"],
                126,
                "apply-seccomp: execvp(/etc/passwd): Permission denied",
            ),
            (&[], 125, "apply-seccomp: no command given"),
            (&["--"], 125, "apply-seccomp: no command given"),
            (
                &["--bogus", "true"],
                125,
                "apply-seccomp: unknown option --bogus",
            ),
        ];
        for (args, code, message) in cases {
            // The usage errors come before any way is chosen.
            let args = if code == 125 {
                args.iter().map(|a| a.to_string()).collect()
            } else {
                way.args(args)
            };
            let out = helper(place, user, &[], &args);
            let err = stderr(&out);
            assert_eq!(
                out.status.code(),
                Some(code),
                "{way:?} {place:?} {user:?} {args:?}: {err}"
            );
            assert!(err.starts_with(message), "{args:?}: {err}");
            assert!(
                err.lines().all(|l| l.starts_with("apply-seccomp: ")
                    || l.starts_with("usage: ")
                    || l.starts_with("       ")),
                "{err}"
            );
        }
    }
}

#[test]
fn debug_lines_say_which_path_was_taken() {
    for (way, place, user) in common::ways_matrix() {
        let out = helper(place, user, &[("SRT_DEBUG", "1")], &way.args(&["true"]));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(
            err.lines().all(|l| l.starts_with("apply-seccomp: ")),
            "{err}"
        );
        let want = match (way, place, user) {
            (Way::CapabilityFree, _, _) => {
                "capability-free path (asked for with --way-in=capability-free)"
            }
            (Way::Auto, Place::Host, User::Root) => "direct path",
            (Way::Auto, _, _) => "user namespace path",
        };
        assert!(err.contains(want), "{way:?} {place:?} {user:?}: {err}");
        if way == Way::CapabilityFree {
            assert!(err.contains("capability-free: Landlock ABI "), "{err}");
        }
        assert!(err.contains("exit status 0"), "{err}");
    }
}

#[test]
fn the_command_inherits_the_callers_signal_dispositions() {
    // The C helper passes the caller's dispositions through exec; Rust's
    // runtime start-up would have left SIGPIPE ignored for the command,
    // and `yes | head` would then complain of a broken pipe.
    let show = "grep SigIgn /proc/self/status";
    for (way, place, user) in common::ways_matrix() {
        let what = format!("{way:?} {place:?} {user:?}");
        for trap in ["", "trap '' USR1; "] {
            let (plain, wrapped) =
                plain_and_wrapped(way, place, user, trap, show, "; yes | head -1");
            let want = status_field(&stdout(&plain), "SigIgn").map(str::to_owned);
            let got = status_field(&stdout(&wrapped), "SigIgn").map(str::to_owned);
            assert!(want.is_some(), "{what}: {}", stdout(&plain));
            assert_eq!(got, want, "{what} {trap:?}: {}", stdout(&wrapped));
            let pipe_bit = 1u64 << (13 - 1);
            let got = u64::from_str_radix(got.as_deref().unwrap(), 16).unwrap();
            assert_eq!(got & pipe_bit, 0, "{what}: SIGPIPE ignored");
            if !trap.is_empty() {
                assert_ne!(
                    got & (1 << (10 - 1)),
                    0,
                    "{what}: the caller's SIG_IGN was lost"
                );
            }
            assert!(
                !stderr(&wrapped).contains("Broken pipe"),
                "{what}: {}",
                stderr(&wrapped)
            );
        }
    }
}

/// `/bin/sh -c script` at `place` as `user`, without the helper in front.
fn helper_free(place: Place, user: User, script: &str) -> std::process::Output {
    common::command(
        place,
        user,
        &[],
        std::path::Path::new("/bin/sh"),
        &["-c", script],
    )
    .output()
    .unwrap()
}

/// `show` run by a shell at `place` as `user` after `prefix` (a shell
/// statement, or nothing), once as the caller's own process and once as
/// the command of the helper on `way`, followed there by `then`: what the
/// caller has, and what the command gets.
fn plain_and_wrapped(
    way: Way,
    place: Place,
    user: User,
    prefix: &str,
    show: &str,
    then: &str,
) -> (std::process::Output, std::process::Output) {
    let helper_path = fixture().helper.to_string_lossy().into_owned();
    let helper_args = way.args::<&str>(&[]).join(" ");
    let plain = helper_free(place, user, &format!("{prefix}exec /bin/sh -c '{show}'"));
    let wrapped = helper_free(
        place,
        user,
        &format!("{prefix}exec {helper_path} {helper_args} /bin/sh -c '{show}{then}'"),
    );
    (plain, wrapped)
}

/// Where the namespace way is refused, the message names the cause the
/// kernel's answers show, and nothing else; the capability-free way is
/// taken only where capabilities are denied (an LSM: tests/vm.rs), never
/// here. Each situation is real: a seccomp filter around the helper, a
/// filter on unshare alone, a user namespace limit of 0.
#[test]
fn refusals_name_their_own_cause() {
    let Some(probe) = fixture().probe() else {
        return;
    };
    let helper_path = fixture().helper.to_str().unwrap().to_string();
    let probe = probe.to_str().unwrap();
    for user in [User::Root, User::Unprivileged] {
        if user == User::Root && !common::is_root() {
            continue;
        }
        // Inside the helper itself: its filters refuse every new user
        // namespace (clone(CLONE_NEWUSER) too).
        let out = helper(Place::Host, user, &[], &[helper_path.as_str(), "true"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(125), "{user:?}: {err}");
        assert!(
            err.contains(
                "no user namespace can be made here (clone(CLONE_NEWUSER): Operation not permitted)"
            ),
            "{user:?}: {err}"
        );
        assert!(err.contains("already runs under a seccomp filter"), "{err}");
        for wrong in ["unprivileged_userns_clone", "apparmor", "unpriv_bwrap"] {
            assert!(!err.contains(wrong), "{user:?} names {wrong}: {err}");
        }
        // A filter on unshare alone: user namespaces can be made (clone),
        // capabilities work in them, only unshare is refused.
        for way in ["--way-in=auto", "--way-in=namespaces"] {
            let out = common::run(
                Place::Host,
                user,
                std::path::Path::new(probe),
                &["deny-unshare", helper_path.as_str(), way, "true"],
            );
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(125), "{user:?} {way}: {err}");
            assert!(
                err.contains("its capabilities work, yet this unshare was refused"),
                "{user:?} {way}: {err}"
            );
            assert!(!err.contains("seccomp filter (Seccomp: 2"), "{err}");
            assert!(!err.contains("--way-in"), "{err}");
        }
        // The capability-free way needs no unshare at all.
        let out = common::run(
            Place::Host,
            user,
            std::path::Path::new(probe),
            &[
                "deny-unshare",
                helper_path.as_str(),
                "--way-in=capability-free",
                probe,
                "unix-dgram",
            ],
        );
        assert_eq!(stdout(&out), "unix-dgram=errno:EPERM\n", "{}", stderr(&out));
    }
    // user.max_user_namespaces=0 where the helper runs, and no capability
    // for the direct path.
    if let (Some(unshare), Some(setpriv)) = (common::which("unshare"), common::which("setpriv")) {
        let script = format!(
            "echo 0 > /proc/sys/user/max_user_namespaces && \
             exec {} --inh-caps=-all --bounding-set=-all {helper_path} true",
            setpriv.display()
        );
        let out = common::run(
            Place::Host,
            User::Unprivileged,
            &unshare,
            &["--user", "--map-root-user", "/bin/sh", "-c", &script],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(125), "{err}");
        assert!(
            err.contains(
                "user.max_user_namespaces is 0 (read from /proc/sys/user/max_user_namespaces)"
            ),
            "{err}"
        );
    } else {
        common::skip("util-linux unshare and setpriv are not installed");
    }
}

/// init starts on the stub's CPU (supervise/mod.rs) and gives itself the
/// caller's CPUs back before the worker starts: the command runs on the
/// CPUs its caller had, on every way, place and user.
#[test]
fn the_command_runs_on_the_callers_cpus() {
    let show = "grep Cpus_allowed_list /proc/self/status";
    for (way, place, user) in common::ways_matrix() {
        let what = format!("{way:?} {place:?} {user:?}");
        let (plain, wrapped) = plain_and_wrapped(way, place, user, "", show, "");
        let want = status_field(&stdout(&plain), "Cpus_allowed_list").map(str::to_owned);
        let Some(want) = want else {
            panic!("{what}: {}", stdout(&plain));
        };
        if !want.contains(['-', ',']) {
            common::skip("one CPU: the helper keeps no CPU for init's start");
            return;
        }
        let text = stdout(&wrapped);
        let got = status_field(&text, "Cpus_allowed_list");
        assert_eq!(got, Some(want.as_str()), "{what}: {}", stderr(&wrapped));
    }
}
