//! The run's task cap: at most so many tasks (processes and threads) of
//! the command at once, so that a fork bomb, or a test suite leaking
//! workers, meets EAGAIN inside its run instead of filling the user's
//! process limit or the machine's PIDs (issue 57).
//!
//! The kernel keeps it, in up to two ways ([`Means`]):
//! - `RLIMIT_NPROC`, where the helper made a user namespace: the stub
//!   sets it (soft and hard) after the unshare. The kernel counts a
//!   user's tasks per user namespace, so the limit counts the run's tasks
//!   only (the stub's and init's added to it), and they count against
//!   the caller's own limit as before. Exact, on every kernel; but the
//!   kernel checks no one whose real user is root (nor who holds
//!   CAP_SYS_RESOURCE or CAP_SYS_ADMIN in the initial namespace).
//! - the run's PID namespace's own `pid_max` (Linux 6.14 and later;
//!   before, the file is the machine's), written by init, where the
//!   limit above holds nothing: on the direct way (root, or
//!   CAP_SYS_ADMIN), and for a caller who is root outside the user
//!   namespace the helper made (srt's bubblewrap as root). Not beside the
//!   limit: its open, write and close cost a run 3-5 us more. PIDs
//!   1 to `pid_max - 1` on a first pass, so the command's tasks stop at
//!   the cap; past a wrap the kernel hands out PIDs from 300 up only, so a
//!   run that has wrapped has between `cap - 298` and `cap`, and the
//!   kernel's floor (301) makes this way's cap 299 at least.
//!
//! The capability-free way has no namespace to count in
//! (`RLIMIT_NPROC` there would count the user's host processes too): no
//! cap by default, a refusal when one is asked for, and the doctor says
//! so. Nor is a root caller capped on a kernel before 6.14.

use crate::cli::caps::{RUN_TASKS, TASKS, Tasks};
use crate::error::{Error, Step};
use crate::run::userns::Path;
use crate::sys;

/// The default is this many tasks, or [`PER_CPU`] per CPU the caller may
/// run on, whichever is more. Peaks of real work on 2 CPUs (processes
/// and threads, sampled every 10 ms): this project's `cargo build
/// --release` 24, `cargo test --release` 21, headless Chromium 125, a
/// `javac` and `java` parallel stream 23. Chromium's and cargo's counts
/// grow with the CPUs, hence the per-CPU term.
pub const FLOOR: u32 = 1024;
pub const PER_CPU: u32 = 128;

/// The kernel's lowest `pid_max` (RESERVED_PIDS + 1): a cap kept by
/// `pid_max` is at least this less 2.
pub const PID_MAX_MIN: u32 = 301;

/// How the kernel keeps the cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Means {
    /// `RLIMIT_NPROC`, set by the stub.
    Rlimit,
    /// The PID namespace's `pid_max`, written by init.
    PidMax,
}

/// The cap of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cap {
    /// The command's tasks at once.
    pub tasks: u32,
    pub means: Means,
    /// Tasks for: where the kernel refuses it, the run ends.
    pub asked: bool,
}

/// The helper's own tasks in the count of `RLIMIT_NPROC`: the stub
/// and init.
pub const HELPER_TASKS: u32 = 2;

/// The cap of a run: `means` where the way in has one, `cpus` the caller
/// may run on, `own` the caller's soft `RLIMIT_NPROC` (`None`: unlimited).
/// Never more than half of `own`: the run's tasks count against it too,
/// and a cap at it would leave the user's other processes nothing.
pub fn resolve(
    asked: Tasks,
    means: Result<Means, &'static str>,
    cpus: u32,
    own: Option<u64>,
) -> Result<Option<Cap>, Error> {
    let (tasks, is_asked) = match asked {
        Tasks::Off => return Ok(None),
        Tasks::Default => (FLOOR.max(PER_CPU.saturating_mul(cpus)), false),
        Tasks::At(n) => (n, true),
    };
    let means = match means {
        Ok(m) => m,
        Err(_) if !is_asked => return Ok(None),
        Err(why) => {
            return Err(Error::Usage(format!(
                "{TASKS}={tasks}: no task cap can be kept here ({why}); unset it (or set 0) \
                 to run without one"
            )));
        }
    };
    let half = own.map_or(u64::from(u32::MAX), |l| l / 2);
    let mut tasks = u32::try_from(u64::from(tasks).min(half)).unwrap_or(u32::MAX);
    if means == Means::PidMax {
        if tasks < PID_MAX_MIN - 2 {
            if is_asked {
                return Err(Error::Usage(format!(
                    "{TASKS}={tasks}: as root the cap is the PID namespace's pid_max, which \
                     the kernel keeps at {PID_MAX_MIN} or more: at least {} tasks",
                    PID_MAX_MIN - 2
                )));
            }
            tasks = PID_MAX_MIN - 2;
        }
        // The kernel's pid_max_max.
        tasks = tasks.min(4 * 1024 * 1024 - 2);
    }
    Ok(Some(Cap {
        tasks,
        means,
        asked: is_asked,
    }))
}

/// The cap of a run on the way in `path`, `had` the CPUs the stub may
/// run on: resolved, and on a user namespace the helper made, set
/// (`RLIMIT_NPROC`, before init starts; init writes `pid_max` itself).
pub fn for_run(
    asked: Tasks,
    path: &Path,
    had: Option<&libc::cpu_set_t>,
    nested: bool,
) -> Result<Option<Cap>, Error> {
    if asked == Tasks::Off {
        return Ok(None);
    }
    // RLIMIT_NPROC where the kernel checks it, exact and cheapest (one
    // call); else pid_max, where the kernel keeps one per PID namespace.
    // With nested namespaces allowed a root command makes a mount
    // namespace of its own, remounts /proc/sys writable there (init's
    // read-only bind, made in the command's own user namespace, is not
    // locked) and raises pid_max (issue 68): no pid_max cap is claimed
    // then. RLIMIT_NPROC holds: the kernel counts a user's tasks in each
    // user namespace up the chain, against the limit set in each.
    let pid_max = || sys::kernel_release().is_ok_and(|r| pid_max_per_namespace(&r));
    let means = match path {
        Path::UserNamespace(u) if !u.root_outside => Ok(Means::Rlimit),
        Path::UserNamespace(_) | Path::Direct { .. } if nested => Err(NESTED_ROOT),
        Path::UserNamespace(_) if pid_max() => Ok(Means::PidMax),
        Path::UserNamespace(_) => Err(
            "the caller is root outside the run's user namespace, whom the kernel checks no \
             RLIMIT_NPROC for, and before Linux 6.14 it keeps no pid_max per PID namespace",
        ),
        Path::Direct { .. } if pid_max() => Ok(Means::PidMax),
        Path::Direct { .. } => Err(
            "as root the kernel checks no RLIMIT_NPROC, and before Linux 6.14 it keeps no \
             pid_max per PID namespace",
        ),
        Path::CapabilityFree { .. } => Err(
            "the capability-free way in has no namespace to count the run's tasks in: \
             RLIMIT_NPROC would count the user's processes on the host too",
        ),
    };
    // Where no namespace can keep an asked cap, a cgroup of the run's
    // may: its pids.max (the shim's, with memory or CPU caps) at the cap
    // and the run's own tasks or lower.
    if let (Err(_), Tasks::At(n)) = (means, asked) {
        let held = crate::run::cgroup::Tree::read()
            .ok()
            .and_then(|t| crate::run::cgroup::InForce::read_held(&t, nested).pids);
        if held.is_some_and(|p| p <= u64::from(n) + RUN_TASKS) {
            return Ok(None);
        }
    }
    let cpus = had.map_or(1, sys::cpu_count);
    let cap = resolve(asked, means, cpus, None)?;
    let Some(c) = cap.filter(|c| c.means == Means::Rlimit) else {
        return Ok(cap);
    };
    // Set, and the caller's limit read, in one call; set again, lower,
    // where the cap would take more than half of it (or the caller's
    // hard limit is below the cap: the call is refused, EPERM).
    let setup = |e| Error::setup(Step::TaskCap, e);
    let (own, set) = match sys::set_process_limit(u64::from(c.rlimit())) {
        Ok(own) => (own, true),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            (sys::process_limit().map_err(setup)?, false)
        }
        Err(e) => return Err(setup(e)),
    };
    let fitted = resolve(asked, means, cpus, own)?;
    if fitted != cap || !set {
        if let Some(f) = fitted {
            sys::set_process_limit(u64::from(f.rlimit())).map_err(setup)?;
        }
    }
    Ok(fitted)
}

impl Cap {
    /// `RLIMIT_NPROC`: the cap with the helper's tasks.
    pub fn rlimit(&self) -> u32 {
        self.tasks.saturating_add(HELPER_TASKS)
    }

    /// `pid_max`: the cap with init's PID and the one never used (0), at
    /// the kernel's floor at least.
    pub fn pid_max(&self) -> u32 {
        self.tasks.saturating_add(2).max(PID_MAX_MIN)
    }

    /// Whether the command met the cap, from the processes `left` when
    /// its first one ended (init ends and counts them): within a sixteenth
    /// of the cap (what a process of the run may have left between a
    /// refused fork and its exit), less the PIDs a wrap takes out of use.
    pub fn reached(&self, left: u32) -> bool {
        let floor = if self.means == Means::PidMax {
            self.tasks.saturating_sub(PID_MAX_MIN - 3)
        } else {
            self.tasks
        };
        left.saturating_add(1) >= floor.saturating_sub(self.tasks / 16)
    }

    /// The line said when the command met the cap.
    pub fn line(&self, left: u32) -> String {
        format!(
            "apply-seccomp: the command reached the run's cap of {} tasks ({TASKS}; {} were \
             still running at its end): its forks and new threads beyond the cap failed with \
             EAGAIN (Resource temporarily unavailable)",
            self.tasks, left
        )
    }

    /// For `SRT_DEBUG` and the doctor.
    pub fn describe(&self) -> String {
        format!(
            "task cap: {} tasks ({}), {}",
            self.tasks,
            if self.asked { TASKS } else { "the default" },
            match self.means {
                Means::Rlimit => "RLIMIT_NPROC in the run's user namespace",
                Means::PidMax => "the run's PID namespace's pid_max",
            }
        )
    }
}

/// Why root's run keeps no task cap where nested namespaces are allowed.
pub const NESTED_ROOT: &str = "with SRT_ALLOW_NESTED_USERNS=1 a root command may make a mount \
     namespace of its own, remount /proc/sys writable there and raise its PID namespace's \
     pid_max: only a pids.max in a cgroup file its user cannot write would hold";

/// `SRT_DEBUG`'s line for a run's cap, or for none and why, where nested
/// namespaces keep root's from holding.
pub fn describe_run(cap: Option<&Cap>, path: &Path, nested: bool) -> String {
    let root = match path {
        Path::UserNamespace(u) => u.root_outside,
        Path::Direct { .. } => true,
        Path::CapabilityFree { .. } => false,
    };
    match cap {
        None if nested && root => format!("task cap: none ({NESTED_ROOT})"),
        _ => describe(cap),
    }
}

/// `SRT_DEBUG`'s line for a run's cap, or for none.
pub fn describe(cap: Option<&Cap>) -> String {
    cap.map_or_else(
        || format!("task cap: none ({TASKS}=0, or none can be kept here)"),
        Cap::describe,
    )
}

/// `n` in decimal, in `buf`, without allocating: init writes `pid_max`.
pub fn decimal(mut n: u32, buf: &mut [u8; 11]) -> &[u8] {
    let mut at = buf.len() - 1;
    buf[at] = b'\n';
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[at..]
}

/// Whether the running kernel keeps `pid_max` per PID namespace (Linux
/// 6.14): before, writing it from a new PID namespace as root sets the
/// machine's.
pub fn pid_max_per_namespace(release: &[u8]) -> bool {
    let mut parts = release.split(|&b| b == b'.' || b == b'-').map(|p| {
        std::str::from_utf8(p)
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
    });
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= (6, 14),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NPROC: Means = Means::Rlimit;
    const PID_MAX: Means = Means::PidMax;

    #[test]
    fn the_default_scales_with_cpus_and_leaves_half_the_callers_limit() {
        let cap = |cpus, own| {
            resolve(Tasks::Default, Ok(NPROC), cpus, own)
                .unwrap()
                .unwrap()
                .tasks
        };
        assert_eq!(cap(2, None), FLOOR);
        assert_eq!(cap(64, None), 64 * PER_CPU);
        assert_eq!(cap(2, Some(1000)), 500);
        assert_eq!(
            resolve(Tasks::At(900), Ok(NPROC), 2, Some(1000))
                .unwrap()
                .unwrap()
                .tasks,
            500
        );
    }

    #[test]
    fn an_asked_cap_where_none_can_be_kept_is_refused_and_a_default_dropped() {
        assert_eq!(
            resolve(Tasks::Default, Err("capability-free"), 2, None).unwrap(),
            None
        );
        assert_eq!(resolve(Tasks::Off, Ok(NPROC), 2, None).unwrap(), None);
        let e = resolve(Tasks::At(64), Err("capability-free"), 2, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("capability-free") && e.contains(TASKS), "{e}");
        let e = resolve(Tasks::At(64), Ok(PID_MAX), 2, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 299"), "{e}");
    }

    #[test]
    fn the_kernel_is_given_the_cap_with_the_helpers_share() {
        let cap = Cap {
            tasks: 20,
            means: NPROC,
            asked: true,
        };
        assert_eq!(cap.rlimit(), 22);
        assert!(cap.reached(19) && cap.reached(18) && !cap.reached(10));
        // pid_max never below the kernel's floor; RLIMIT_NPROC keeps a
        // cap below it.
        assert_eq!(cap.pid_max(), PID_MAX_MIN);
        assert_eq!(
            resolve(Tasks::At(20), Ok(NPROC), 2, None).unwrap(),
            Some(cap)
        );
        let pid = Cap {
            tasks: 1024,
            means: PID_MAX,
            asked: false,
        };
        assert_eq!(pid.pid_max(), 1026);
        assert!(pid.reached(1023) && pid.reached(700) && !pid.reached(100));
    }

    #[test]
    fn numbers_are_written_without_allocating() {
        let mut buf = [0; 11];
        assert_eq!(decimal(0, &mut buf), b"0\n");
        assert_eq!(decimal(4194304, &mut buf), b"4194304\n");
        assert_eq!(decimal(u32::MAX, &mut buf), b"4294967295\n");
    }

    #[test]
    fn pid_max_is_per_namespace_from_6_14() {
        assert!(pid_max_per_namespace(b"6.18.44-fc-v1272"));
        assert!(pid_max_per_namespace(b"6.14.0"));
        assert!(pid_max_per_namespace(b"7.1.3-amd64"));
        assert!(!pid_max_per_namespace(b"6.13.9"));
        assert!(!pid_max_per_namespace(b"6.1.0-28-amd64"));
        assert!(!pid_max_per_namespace(b"garbage"));
    }
}
