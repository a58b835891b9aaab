//! One error type for every way the helper itself can fail, its messages
//! (bubblewrap's `apply-seccomp: <step>: <strerror>` plus a hint for the
//! errnos people hit) and its exit codes.

use std::fmt;
use std::io;
use std::time::Duration;

use crate::cause::{Lack, Refusal, SCOPED_ABI, WayIn};

/// The last line of a policy refusal's message: where the whole picture is.
pub const DOCTOR_LINE: &str =
    "apply-seccomp: `apply-seccomp --doctor` checks this machine step by step";

/// Exit code for any failure of the helper itself (usage, setup).
pub const EXIT_SETUP: i32 = 125;
/// The command was found but could not be executed.
pub const EXIT_CANNOT_EXEC: i32 = 126;
/// The command was not found.
pub const EXIT_NOT_FOUND: i32 = 127;

/// The setup steps, in the order they run. The numbers travel over the
/// control channel from the inner processes (`plan.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    UnsharePidMount = 1,
    WaitSingleThreaded,
    UnshareUser,
    Setgroups,
    UidMap,
    GidMap,
    Dumpable,
    ClearAmbient,
    Signals,
    ControlChannel,
    Fork,
    ParentDeathSignal,
    MountPrivate,
    MountProc,
    LimitUserns,
    ForkWorker,
    NoNewPrivs,
    FilterUnix,
    FilterNamespaces,
    Exec,
    Wait,
    StubFilters,
    DropPtrace,
    Landlock,
    Subreaper,
    ProcessGroup,
    Foreground,
    ProcSysReadOnly,
    ProcReadOnly,
    Gate,
    Cpus,
    TaskCap,
}

impl Step {
    const ALL: [Step; 32] = [
        Step::UnsharePidMount,
        Step::WaitSingleThreaded,
        Step::UnshareUser,
        Step::Setgroups,
        Step::UidMap,
        Step::GidMap,
        Step::Dumpable,
        Step::ClearAmbient,
        Step::Signals,
        Step::ControlChannel,
        Step::Fork,
        Step::ParentDeathSignal,
        Step::MountPrivate,
        Step::MountProc,
        Step::LimitUserns,
        Step::ForkWorker,
        Step::NoNewPrivs,
        Step::FilterUnix,
        Step::FilterNamespaces,
        Step::Exec,
        Step::Wait,
        Step::StubFilters,
        Step::DropPtrace,
        Step::Landlock,
        Step::Subreaper,
        Step::ProcessGroup,
        Step::Foreground,
        Step::ProcSysReadOnly,
        Step::ProcReadOnly,
        Step::Gate,
        Step::Cpus,
        Step::TaskCap,
    ];

    pub fn from_u8(v: u8) -> Option<Step> {
        Step::ALL.iter().copied().find(|s| *s as u8 == v)
    }

    pub fn describe(self) -> &'static str {
        match self {
            Step::UnsharePidMount => "unshare(CLONE_NEWPID|CLONE_NEWNS)",
            Step::WaitSingleThreaded => "wait for a single thread (/proc/self/task)",
            Step::UnshareUser => "unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID)",
            Step::Setgroups => "write /proc/self/setgroups",
            Step::UidMap => "write /proc/self/uid_map",
            Step::GidMap => "write /proc/self/gid_map",
            Step::Dumpable => "prctl(PR_SET_DUMPABLE)",
            Step::ClearAmbient => "prctl(PR_CAP_AMBIENT_CLEAR_ALL)",
            Step::Signals => "block forwarded signals",
            Step::ControlChannel => "pipe2(control channel)",
            Step::Fork => "fork",
            Step::ParentDeathSignal => "prctl(PR_SET_PDEATHSIG)",
            Step::MountPrivate => "mount(/, MS_REC|MS_PRIVATE)",
            Step::MountProc => "mount(/proc)",
            Step::LimitUserns => "write /proc/sys/user/max_user_namespaces",
            Step::ForkWorker => "fork(worker)",
            Step::NoNewPrivs => "prctl(PR_SET_NO_NEW_PRIVS)",
            Step::FilterUnix => "seccomp(unix filter)",
            Step::FilterNamespaces => "seccomp(namespaces filter)",
            Step::Exec => "execvp",
            Step::Wait => "wait for signals and children (sigwaitinfo, waitpid)",
            Step::StubFilters => "seccomp(outer stub)",
            Step::DropPtrace => "prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE)",
            Step::Landlock => "landlock_restrict_self",
            Step::Subreaper => "prctl(PR_SET_CHILD_SUBREAPER)",
            Step::ProcessGroup => "setpgid(0, 0)",
            Step::Foreground => "tcsetpgrp(terminal, the command's group)",
            Step::ProcSysReadOnly => "mount(/proc/sys, MS_BIND|MS_RDONLY)",
            Step::ProcReadOnly => "mount(/proc, MS_BIND|MS_REC|MS_RDONLY)",
            Step::Gate => "futex(the worker's gate)",
            Step::Cpus => "sched_setaffinity(the caller's CPUs back)",
            Step::TaskCap => "the run's task cap (RLIMIT_NPROC, or pid_max)",
        }
    }
}

#[derive(Debug)]
pub enum Error {
    /// Bad command line.
    Usage(String),
    /// An embedded filter program failed validation.
    Filter(String),
    /// A setup step failed.
    Setup { step: Step, source: io::Error },
    /// A step kept failing with EINVAL because the process was still
    /// multi-threaded in the kernel's eyes, past the retry bound.
    Transient {
        step: Step,
        tries: u32,
        elapsed: Duration,
        source: io::Error,
    },
    /// `unshare` of the namespaces was refused, and the capability-free way
    /// in was not taken: `refusal` says why; `way` is what was allowed.
    Refused {
        step: Step,
        source: io::Error,
        refusal: Refusal,
        way: WayIn,
    },
    /// The capability-free way in is needed (`refusal`) or was asked for
    /// (`None`), and this kernel lacks what it needs.
    NoCapabilityFreeWay {
        refusal: Option<Refusal>,
        lack: Lack,
    },
    /// `/proc/self/task` kept showing other threads past the wait bound.
    StillThreaded { threads: usize, waited: Duration },
    /// The command could not be executed.
    Exec { program: String, source: io::Error },
}

impl Error {
    pub fn setup(step: Step, source: impl Into<io::Error>) -> Error {
        Error::Setup {
            step,
            source: source.into(),
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Exec { source, .. } => exec_exit_code(source.raw_os_error().unwrap_or(0)),
            _ => EXIT_SETUP,
        }
    }

    /// A hint for the errnos people actually hit, or `None`.
    pub fn hint(&self) -> Option<&'static str> {
        let (step, errno) = match self {
            Error::Setup { step, source } => (*step, source.raw_os_error()?),
            _ => return None,
        };
        match (step, errno) {
            (Step::UnshareUser, libc::ENOSPC) | (Step::UnshareUser, libc::EUSERS) => Some(
                "the user namespace limit is reached (user.max_user_namespaces, or the nesting \
                 depth of 32): the caller may already run inside a namespace that forbids more",
            ),
            (Step::UidMap | Step::GidMap | Step::Setgroups, libc::EPERM) => Some(
                "the id map was refused: a root caller inside bubblewrap needs \
                 --cap-add CAP_SETFCAP to map uid 0",
            ),
            (Step::FilterUnix | Step::FilterNamespaces, libc::EINVAL) => {
                Some("the kernel refused the seccomp program: is CONFIG_SECCOMP_FILTER enabled?")
            }
            _ => None,
        }
    }
}

/// The errno inside an `io::Error` (EIO if it carries none), for the
/// reports the inner processes send.
pub fn errno(e: &io::Error) -> nix::errno::Errno {
    nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO))
}

/// The exit code for a failed `execvp`, as shells report it.
pub fn exec_exit_code(errno: i32) -> i32 {
    match errno {
        libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG | libc::ELOOP => EXIT_NOT_FOUND,
        _ => EXIT_CANNOT_EXEC,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(msg) => write!(f, "apply-seccomp: {msg}"),
            Error::Filter(msg) => write!(f, "apply-seccomp: embedded seccomp filter: {msg}"),
            Error::Setup { step, source } => {
                write!(
                    f,
                    "apply-seccomp: {}: {}",
                    step.describe(),
                    strerror(source)
                )?;
                if let Some(hint) = self.hint() {
                    write!(f, "\napply-seccomp: hint: {hint}")?;
                }
                Ok(())
            }
            Error::Refused {
                step,
                source,
                refusal,
                way,
            } => {
                write!(
                    f,
                    "apply-seccomp: {}: {}\napply-seccomp: hint: {}",
                    step.describe(),
                    strerror(source),
                    refusal.hint()
                )?;
                if way.forbade_fallback(refusal) {
                    write!(
                        f,
                        "; the capability-free way in runs here without them: leave out \
                         --way-in=namespaces"
                    )?;
                }
                write!(f, "\n{DOCTOR_LINE}")
            }
            Error::NoCapabilityFreeWay {
                refusal: None,
                lack,
            } => write!(f, "apply-seccomp: --way-in=capability-free: {lack}"),
            Error::NoCapabilityFreeWay {
                refusal: Some(refusal),
                lack,
            } => write!(
                f,
                "apply-seccomp: no namespace can be made here, and the capability-free way in \
                 cannot run: {lack}\n\
                 apply-seccomp: hint: {}. Without capabilities the command is isolated with \
                 seccomp and a Landlock domain instead, which needs Landlock ABI {SCOPED_ABI} \
                 (Linux 6.12 or later, with landlock in the lsm= boot list). {}",
                refusal.hint(),
                crate::cause::NARROWEST_FIX
            )
            .and_then(|()| write!(f, "\n{DOCTOR_LINE}")),
            Error::Transient {
                step,
                tries,
                elapsed,
                source,
            } => write!(
                f,
                "apply-seccomp: {}: {} after {tries} tries over {} us: transient setup failure \
                 (the process still counted as multi-threaded), not a policy denial; running \
                 the command again is expected to work",
                step.describe(),
                strerror(source),
                elapsed.as_micros()
            ),
            Error::StillThreaded { threads, waited } => write!(
                f,
                "apply-seccomp: {}: still {threads} threads after {} us: transient setup \
                 failure, not a policy denial; running the command again is expected to work",
                Step::WaitSingleThreaded.describe(),
                waited.as_micros()
            ),
            Error::Exec { program, source } => {
                write!(f, "apply-seccomp: execvp({program}): {}", strerror(source))?;
                // The kernel's EACCES for a folder names no cause.
                if source.raw_os_error() == Some(libc::EACCES)
                    && program.contains('/')
                    && std::path::Path::new(program).is_dir()
                {
                    write!(f, ": {program} is a folder, not a program")?;
                }
                Ok(())
            }
        }
    }
}

/// The C library's text for an errno, without Rust's " (os error N)".
pub fn strerror(err: &io::Error) -> String {
    let text = err.to_string();
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_round_trip_through_their_numbers() {
        for step in Step::ALL {
            assert_eq!(Step::from_u8(step as u8), Some(step));
        }
        assert_eq!(Step::from_u8(0), None);
        assert_eq!(Step::from_u8(200), None);
    }

    #[test]
    fn messages_name_the_step_and_the_errno_text() {
        let e = Error::setup(Step::UidMap, io::Error::from_raw_os_error(libc::EPERM));
        let text = e.to_string();
        assert!(text.starts_with(
            "apply-seccomp: write /proc/self/uid_map: Operation not permitted\n\
             apply-seccomp: hint: "
        ));
        assert!(text.contains("CAP_SETFCAP"));
        assert_eq!(e.exit_code(), EXIT_SETUP);
    }

    #[test]
    fn a_refusal_names_its_cause_and_the_way_that_works() {
        use crate::cause::{Probe, Settings};
        let refused = |probe, way| Error::Refused {
            step: Step::UnshareUser,
            source: io::Error::from_raw_os_error(libc::EPERM),
            refusal: Refusal {
                probe,
                settings: Settings::default(),
            },
            way,
        };
        let denied = Probe::CapabilitiesDenied(nix::errno::Errno::EACCES);
        let text = refused(denied, WayIn::Namespaces).to_string();
        assert!(text.starts_with(
            "apply-seccomp: unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID): \
             Operation not permitted\napply-seccomp: hint: "
        ));
        assert!(text.contains("unpriv_bwrap"), "{text}");
        assert!(text.contains("leave out --way-in=namespaces"), "{text}");
        assert!(text.ends_with(&format!("\n{DOCTOR_LINE}")), "{text}");
        let text = refused(Probe::CapabilitiesWork, WayIn::Auto).to_string();
        assert!(!text.contains("--way-in"), "{text}");
        assert!(!text.contains("unpriv_bwrap"), "{text}");

        let e = Error::NoCapabilityFreeWay {
            refusal: Some(Refusal {
                probe: denied,
                settings: Settings::default(),
            }),
            lack: Lack::NoScoping(4),
        };
        let text = e.to_string();
        assert!(text.contains("Landlock ABI is 4"), "{text}");
        assert!(text.contains("unpriv_bwrap"), "{text}");
        assert!(text.contains(crate::cause::NARROWEST_FIX), "{text}");
        assert!(text.ends_with(&format!("\n{DOCTOR_LINE}")), "{text}");
        assert_eq!(e.exit_code(), EXIT_SETUP);
    }

    #[test]
    fn transient_failures_say_so() {
        let e = Error::Transient {
            step: Step::UnshareUser,
            tries: 9,
            elapsed: Duration::from_micros(1234),
            source: io::Error::from_raw_os_error(libc::EINVAL),
        };
        let text = e.to_string();
        assert!(text.contains("Invalid argument after 9 tries over 1234 us"));
        assert!(text.contains("transient setup failure"));
        assert!(text.contains("not a policy denial"));
    }

    #[test]
    fn exec_codes_follow_the_shell() {
        assert_eq!(exec_exit_code(libc::ENOENT), EXIT_NOT_FOUND);
        assert_eq!(exec_exit_code(libc::EACCES), EXIT_CANNOT_EXEC);
        assert_eq!(exec_exit_code(libc::ENOEXEC), EXIT_CANNOT_EXEC);
    }
}
