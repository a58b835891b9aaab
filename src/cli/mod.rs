//! argv and environment to what the helper should do: the door the first
//! word names. A foundation below the doors, it names none of them: a
//! run's options and variables are read here (command.rs), with the caps
//! every door reads (caps.rs); the other doors' options are handed to
//! their own parsers (main.rs calls them). No syscalls but the
//! environment's read.
//!
//! `apply-seccomp [OPTIONS] [--] <command> [args...]`: options start with
//! `-` and come before the command; `--` ends them; the first word that
//! does not start with `-` is the command. So every upstream invocation
//! (`apply-seccomp /usr/bin/bash -c '...'`) parses as a command, and a
//! command whose name starts with `-` comes after `--`.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use crate::error::Error;

pub mod caps;
mod command;
mod env;
mod unix;

pub use command::{Observe, RunConfig};
pub use env::Env;
pub use unix::UnixPolicy;

pub const USAGE: &str = "usage: apply-seccomp [-h | --help | --version] [--way-in=WAY] [--] <command> [args...]\n       \
                         apply-seccomp --bwrap-shim [bwrap args...]   (or run it as `bwrap`)\n       \
                         apply-seccomp --doctor [--json] [--srt-settings FILE]\n       \
                         apply-seccomp --setup [--srt] [--claude-code] [--managed] [--bin-dir DIR]\n       \
                         [--srt-settings FILE] [--allow-unix-socket PATH] [--gpu] [--max-tasks N]\n       \
                         [--memory-max SIZE] [--cpu-max CPUS] [--dry-run]\n       \
                         apply-seccomp --setup --undo [--dry-run]   (or --undo)\n       \
                         apply-seccomp --race-test [--iterations N] [--strategy naive|helper|both]\n       \
                         [--join futex|spin] [--cpu LIST] [--load N] [--json] [--exec 'HELPER [ARGS]']";

/// Variables removed from the environment before anything is forked, so the
/// command never sees them.
pub const SCRUBBED: [&str; 7] = [
    "SRT_ALLOW_NESTED_USERNS",
    "SRT_OBSERVE_SOCK",
    "SRT_ENCODED_CMD",
    "SRT_HELPER_FEATURES",
    // The bwrap shim's list of bubblewraps already run (shim/find.rs).
    "APPLY_SECCOMP_SHIM_VISITED",
    // The shim's log: a sandboxed command that knew it could aim its next
    // record elsewhere (shim/log.rs).
    "APPLY_SECCOMP_LOG",
    // The host sockets the user named (a nested client must not pass it on).
    "APPLY_SECCOMP_ALLOW_UNIX",
];

/// Words printed for `SRT_HELPER_FEATURES=1` with no arguments, one a line.
pub const FEATURES: [&str; 7] = [
    // max_user_namespaces set to 0 in the namespace the helper made.
    "userns-limit",
    // Thread-count wait and bounded EINVAL retry around the user namespace unshare.
    "race-free",
    // socketpair(AF_UNIX, SOCK_DGRAM or SOCK_RAW) refused.
    "strict-socketpair",
    // SRT_OBSERVE_SOCK: write-intent calls reported (observe.rs).
    "observe",
    // Runs where a new user namespace grants no usable capability (AppArmor's
    // unpriv_bwrap): filters and a Landlock domain instead (capfree.rs).
    "capability-free",
    // Protecting mounts checked before the command and watched during it
    // (guard/).
    "mount-guard",
    // A command's own AF_UNIX stream sockets work (sockets.rs).
    "own-unix-sockets",
];

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Help,
    Version,
    /// `SRT_HELPER_FEATURES=1` and no arguments: print the feature words.
    Features,
    Run(RunConfig),
    /// `--race-test ...`: the race regression tester's words (race/).
    RaceTest(Vec<OsString>),
    /// `--bwrap-shim ...`, or invoked as `bwrap`: bubblewrap's arguments.
    BwrapShim(Vec<OsString>),
    /// `--doctor ...`: why a sandbox can or cannot start here; the
    /// doctor's words (doctor/).
    Doctor(Vec<OsString>),
    /// `--setup ...`: point the clients at this binary (or `--undo` it);
    /// setup's words (setup/), `--undo` the first where it came alone.
    Setup(Vec<OsString>),
    /// `--doctor-entry`: the doctor's child that tries the helper's entry.
    DoctorEntry,
    /// `--doctor-probe`: the doctor's command under the helper.
    DoctorProbe,
    /// `--doctor-connect PATH...`: the doctor's command under the helper
    /// that connects to each named host socket.
    DoctorConnect(Vec<OsString>),
}

fn is(value: &Option<OsString>, expected: &str) -> bool {
    value.as_deref() == Some(OsStr::new(expected))
}

/// `args` excludes `argv[0]`.
pub fn parse(args: &[OsString], env: &Env) -> Result<Action, Error> {
    // Exactly "1" with no arguments asks for the feature list. With a
    // command it is a user's variable passed through (srt 0.0.83 does not
    // clear it): the command runs, since a helper given a command must
    // never report success without running it.
    if is(&env.helper_features, "1") && args.is_empty() {
        return Ok(Action::Features);
    }
    // `--help`, `--version`, `--bwrap-shim`, `--race-test` and `--doctor`
    // come alone and end the parse; `--way-in=WAY` may come before the command; `--`
    // ends the options.
    match args.first().map(|a| a.as_bytes()) {
        Some(b"--help" | b"-h" | b"--version") if args.len() > 1 => {
            return Err(Error::Usage(format!(
                "{} takes nothing after it, not {}\n{USAGE}",
                args[0].to_string_lossy(),
                args[1].to_string_lossy()
            )));
        }
        Some(b"--help" | b"-h") => return Ok(Action::Help),
        Some(b"--version") => return Ok(Action::Version),
        Some(b"--bwrap-shim") => return Ok(Action::BwrapShim(args[1..].to_vec())),
        // Each door's own options are its parser's (main.rs calls it).
        Some(b"--doctor") => return Ok(Action::Doctor(args[1..].to_vec())),
        // `--undo` alone is `--setup --undo`, as the README words it.
        Some(b"--undo") => return Ok(Action::Setup(args.to_vec())),
        Some(b"--setup") => return Ok(Action::Setup(args[1..].to_vec())),
        Some(b"--doctor-entry") if args.len() == 1 => return Ok(Action::DoctorEntry),
        Some(b"--doctor-probe") if args.len() == 1 => return Ok(Action::DoctorProbe),
        Some(b"--doctor-connect") => return Ok(Action::DoctorConnect(args[1..].to_vec())),
        Some(b"--race-test") => return Ok(Action::RaceTest(args[1..].to_vec())),
        _ => {}
    }
    command::parse(args, env).map(Action::Run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cause::WayIn;
    use std::os::unix::ffi::OsStringExt;

    use crate::os_words as args;

    fn run(words: &[&str], env: &Env) -> RunConfig {
        match parse(&args(words), env) {
            Ok(Action::Run(cfg)) => cfg,
            other => panic!("expected a run, got {other:?}"),
        }
    }

    #[test]
    fn undo_alone_is_setup_undo() {
        let env = Env::default();
        assert_eq!(
            parse(&args(&["--undo"]), &env).unwrap(),
            parse(&args(&["--setup", "--undo"]), &env).unwrap()
        );
        assert_eq!(
            parse(&args(&["--undo", "--dry-run"]), &env).unwrap(),
            parse(&args(&["--setup", "--undo", "--dry-run"]), &env).unwrap()
        );
        // Setup's parser refuses this one (setup/limits.rs's tests).
        assert_eq!(
            parse(&args(&["--undo", "--srt"]), &env).unwrap(),
            Action::Setup(args(&["--undo", "--srt"]))
        );
    }

    #[test]
    fn upstream_invocation_is_a_command() {
        let cfg = run(&["/usr/bin/bash", "-c", "echo --help"], &Env::default());
        assert_eq!(cfg.argv, args(&["/usr/bin/bash", "-c", "echo --help"]));
        assert!(!cfg.allow_nested_userns);
        assert!(!cfg.debug);
    }

    #[test]
    fn options_come_before_the_command_and_double_dash_ends_them() {
        let alone = |w: &str| parse(&args(&[w]), &Env::default()).unwrap();
        assert_eq!(alone("--help"), Action::Help);
        assert_eq!(alone("-h"), Action::Help);
        assert_eq!(alone("--version"), Action::Version);
        // A command named with a leading `-` comes after `--`.
        for words in [&["--help"][..], &["-h"], &["-x", "--help"]] {
            assert_eq!(
                run(&[&["--"], words].concat(), &Env::default()).argv,
                args(words)
            );
        }
        assert_eq!(run(&["-"], &Env::default()).argv, args(&["-"]));
        assert_eq!(run(&[""], &Env::default()).argv, args(&[""]));
    }

    #[test]
    fn each_door_gets_its_own_words() {
        let env = Env::default();
        let words = |w: &[&str]| parse(&args(w), &env).unwrap();
        assert_eq!(
            words(&["--race-test", "--strategy", "x"]),
            Action::RaceTest(args(&["--strategy", "x"]))
        );
        assert_eq!(
            words(&["--doctor", "--json"]),
            Action::Doctor(args(&["--json"]))
        );
        assert_eq!(
            words(&["--setup", "--srt"]),
            Action::Setup(args(&["--srt"]))
        );
    }

    #[test]
    fn usage_errors() {
        for bad in [
            &[][..],
            &["--"][..],
            &["--bogus", "true"][..],
            &["-x", "--help"][..],
            &["-h", "x"][..],
            &["--help", "x"][..],
            &["--version", "x"][..],
            &["--way-in=sideways", "true"][..],
            &["--way-in", "namespaces", "true"][..],
            &["--way-in=namespaces"][..],
            &["--way-in=namespaces", "--"][..],
        ] {
            let err = parse(&args(bad), &Env::default()).unwrap_err();
            assert_eq!(err.exit_code(), 125);
            assert!(err.to_string().starts_with("apply-seccomp: "));
        }
    }

    #[test]
    fn the_way_in_is_chosen_before_the_command() {
        let way = |words: &[&str]| run(words, &Env::default()).way_in;
        assert_eq!(way(&["true"]), WayIn::Auto);
        assert_eq!(way(&["--way-in=auto", "true"]), WayIn::Auto);
        assert_eq!(way(&["--way-in=namespaces", "true"]), WayIn::Namespaces);
        assert_eq!(
            way(&["--way-in=capability-free", "--", "--way-in=namespaces"]),
            WayIn::CapabilityFree
        );
        // After the command, it is the command's.
        let cfg = run(&["printf", "--way-in=namespaces"], &Env::default());
        assert_eq!(cfg.way_in, WayIn::Auto);
        assert_eq!(cfg.argv, args(&["printf", "--way-in=namespaces"]));
        // The last one given wins.
        assert_eq!(
            way(&["--way-in=namespaces", "--way-in=capability-free", "true"]),
            WayIn::CapabilityFree
        );
    }

    #[test]
    fn only_exactly_one_allows_nesting() {
        for (value, allowed) in [
            ("1", true),
            ("1 ", false),
            ("true", false),
            ("yes", false),
            ("2", false),
            ("", false),
            ("0", false),
        ] {
            let env = Env {
                allow_nested_userns: Some(value.into()),
                ..Env::default()
            };
            assert_eq!(
                run(&["true"], &env).allow_nested_userns,
                allowed,
                "{value:?}"
            );
        }
    }

    #[test]
    fn features_only_for_exactly_one() {
        let env = |v: &str| Env {
            helper_features: Some(v.into()),
            ..Env::default()
        };
        assert_eq!(parse(&args(&[]), &env("1")).unwrap(), Action::Features);
        // With a command, the command runs.
        assert!(matches!(
            parse(&args(&["true"]), &env("1")).unwrap(),
            Action::Run(_)
        ));
        assert!(matches!(
            parse(&args(&["--", "true"]), &env("1")).unwrap(),
            Action::Run(_)
        ));
        for other in ["0", "", "yes", "1 "] {
            assert!(matches!(
                parse(&args(&["true"]), &env(other)).unwrap(),
                Action::Run(_)
            ));
        }
    }

    #[test]
    fn debug_needs_a_non_empty_value() {
        let env = |v: &str| Env {
            debug: Some(v.into()),
            ..Env::default()
        };
        assert!(run(&["true"], &env("1")).debug);
        assert!(!run(&["true"], &env("")).debug);
    }

    #[test]
    fn observation_needs_a_non_empty_socket() {
        let env = |sock: Option<&str>, cmd: Option<&str>| Env {
            observe_sock: sock.map(Into::into),
            encoded_cmd: cmd.map(Into::into),
            ..Env::default()
        };
        assert_eq!(run(&["true"], &env(None, Some("x"))).observe, None);
        assert_eq!(run(&["true"], &env(Some(""), Some("x"))).observe, None);
        assert_eq!(
            run(&["true"], &env(Some("/s"), Some(""))).observe,
            Some(Observe {
                socket: "/s".into(),
                encoded_cmd: None
            })
        );
        assert_eq!(
            run(&["true"], &env(Some("/s"), Some("e30="))).observe,
            Some(Observe {
                socket: "/s".into(),
                encoded_cmd: Some("e30=".into())
            })
        );
    }

    #[test]
    fn non_utf8_arguments_pass_through() {
        let odd = OsString::from_vec(vec![0xff, b'a', 0xfe]);
        let cfg = match parse(&[OsString::from("printf"), odd.clone()], &Env::default()) {
            Ok(Action::Run(cfg)) => cfg,
            other => panic!("{other:?}"),
        };
        assert_eq!(cfg.argv[1], odd);
    }
}
