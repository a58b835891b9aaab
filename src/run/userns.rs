//! Race-free namespace entry, run at the top of the helper, and the choice
//! of the way in.
//!
//! 1. `unshare(CLONE_NEWPID|CLONE_NEWNS)` directly: works with
//!    CAP_SYS_ADMIN (root on a bare host). Any error but EPERM ends here.
//! 2. On EPERM, [`enter_user_namespace`]: wait until `/proc/self/task` has
//!    one entry, then one `unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID)`
//!    (the new mount and PID namespaces belong to the new user namespace,
//!    as if made inside it, in one call instead of two), retried on EINVAL
//!    with a bounded backoff (count and total time); then `setgroups` deny
//!    and a 1:1 uid/gid map, with dumpable raised for the writes.
//! 3. Should that be refused with EPERM too, [`probe`] asks the kernel why,
//!    in a child made in a new user namespace. Where the namespace can be
//!    made but no capability in it can be used (an LSM such as AppArmor's
//!    `unpriv_bwrap`), the way in is the capability-free one (capfree.rs);
//!    anything else fails closed with the cause (cause.rs).
//!
//! [`enter_user_namespace`] is also what `--race-test`'s helper strategy
//! calls: the same code, not a copy.

use std::io;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sched::{CloneFlags, unshare};
use nix::sys::prctl;

use crate::cause::{Probe, Refusal, Settings, WayIn};
use crate::error::{Error, Step};
use crate::run::threads::{self, ThreadWait};
use crate::sys;

/// Bounds of the entry routine.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    /// Longest wait for `/proc/self/task` to show one thread.
    pub thread_wait: Duration,
    /// Most `unshare` attempts in all (first try included).
    pub max_tries: u32,
    /// Longest time spent retrying `unshare` on EINVAL.
    pub max_retry_time: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            thread_wait: threads::WAIT_BUDGET,
            max_tries: 12,
            max_retry_time: Duration::from_millis(100),
        }
    }
}

/// Which way the helper got its namespaces, and what that took.
#[derive(Clone, Debug)]
pub enum Path {
    /// `unshare(CLONE_NEWPID|CLONE_NEWNS)` worked as is, after this many
    /// EINVAL retries.
    Direct { retries: u32 },
    /// Through a new user namespace made by the helper.
    UserNamespace(UsernsEntry),
    /// No namespaces: the capability-free way in (capfree.rs).
    CapabilityFree {
        /// `None` when asked for (`--way-in=capability-free`); otherwise
        /// what the kernel refused and answered.
        refusal: Option<Refusal>,
        wait: ThreadWait,
    },
}

/// What the user namespace entry did.
#[derive(Clone, Copy, Debug, Default)]
pub struct UsernsEntry {
    pub wait: ThreadWait,
    /// EINVAL answers retried.
    pub retries: u32,
    pub elapsed: Duration,
    /// The caller was root, mapped to root in the namespace above (or
    /// its map could not be read): RLIMIT_NPROC caps none of its tasks.
    pub root_outside: bool,
}

/// What [`enter`] did.
#[derive(Clone, Debug)]
pub struct Entry {
    pub path: Path,
    pub elapsed: Duration,
}

const PID_MOUNT: CloneFlags = CloneFlags::CLONE_NEWPID.union(CloneFlags::CLONE_NEWNS);

/// The whole entry: new PID and mount namespaces, through a user namespace
/// when the caller lacks CAP_SYS_ADMIN; or, where a user namespace grants
/// no usable capability (or `way` asks for it), none: the capability-free
/// way in. Every way starts with the same wait for a single thread.
pub fn enter(backoff: &Backoff, way: WayIn) -> Result<Entry, Error> {
    let start = Instant::now();
    if way == WayIn::CapabilityFree {
        // Nothing is unshared, but the stub's own filters apply to its
        // calling thread only: one thread, checked.
        let wait = threads::wait_single_threaded(backoff.thread_wait)?;
        return Ok(Entry {
            path: Path::CapabilityFree {
                refusal: None,
                wait,
            },
            elapsed: start.elapsed(),
        });
    }
    // CLONE_NEWNS implies CLONE_FS, which also needs a thread group of one,
    // so the direct attempt retries EINVAL the same way.
    let mut wait = ThreadWait::default();
    match unshare_retrying(PID_MOUNT, Step::UnsharePidMount, backoff, false, &mut wait) {
        Ok(retries) => {
            return Ok(Entry {
                path: Path::Direct { retries },
                elapsed: start.elapsed(),
            });
        }
        Err(Error::Setup { source, .. }) if source.raw_os_error() == Some(libc::EPERM) => {}
        Err(e) => return Err(e),
    }
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    // Root here may be root outside too (srt's bubblewrap as root), whom
    // the kernel never holds to RLIMIT_NPROC (tasks.rs): read before the
    // unshare, while the map shows this namespace's ids outside it.
    let root_outside = uid == 0 && uid_outside(0).is_none_or(|u| u == 0);
    let userns = match enter_user_namespace_with(backoff, &mut wait) {
        Ok(userns) => UsernsEntry {
            root_outside,
            ..userns
        },
        // The kernel said there is no room for one: nothing to probe.
        Err(Error::Setup { step, source })
            if matches!(source.raw_os_error(), Some(libc::ENOSPC | libc::EUSERS)) =>
        {
            let errno = Errno::from_raw(source.raw_os_error().unwrap_or(libc::ENOSPC));
            return Err(Error::Refused {
                step,
                source,
                refusal: Refusal {
                    probe: Probe::NoUserNamespace(errno),
                    settings: Settings::read(),
                },
                way,
            });
        }
        Err(Error::Setup { step, source })
            if matches!(source.raw_os_error(), Some(libc::EPERM | libc::EACCES)) =>
        {
            let mut refusal = Refusal {
                probe: with_dumpable(|| Ok(probe()))?,
                settings: Settings::default(),
            };
            if way.falls_back(&refusal) {
                return Ok(Entry {
                    path: Path::CapabilityFree {
                        refusal: Some(refusal),
                        // The wait before the refused unshare.
                        wait,
                    },
                    elapsed: start.elapsed(),
                });
            }
            // Read for the message only: the capability-free way needs none.
            refusal.settings = Settings::read();
            return Err(Error::Refused {
                step,
                source,
                refusal,
                way,
            });
        }
        Err(e) => return Err(e),
    };
    write_id_maps(uid, gid)?;
    Ok(Entry {
        path: Path::UserNamespace(userns),
        elapsed: start.elapsed(),
    })
}

/// Asks the kernel why a user namespace was refused: a child made with
/// `clone(CLONE_NEWUSER)` (posix_spawn-style, on a small stack in this
/// memory) opens its own `/proc/self/setgroups` for writing, which needs
/// CAP_SYS_ADMIN in that namespace, and exits with 0 or the errno. The
/// child makes only raw calls (sys/raw.rs). Called on the failure path only,
/// with dumpable raised (a non-dumpable process's `/proc/self` files
/// belong to root, and the open would fail for that reason instead).
pub fn probe() -> Probe {
    /// The child's frame is a few words; the rest guards the minimum.
    const PROBE_STACK: usize = 32 * 1024;
    let mut stack = match sys::Stack::new(PROBE_STACK) {
        Ok(stack) => stack,
        Err(e) => return Probe::Inconclusive(e),
    };
    let child = sys::spawn_vfork(&mut stack, libc::CLONE_NEWUSER, || {
        match sys::raw_open(c"/proc/self/setgroups", libc::O_WRONLY) {
            Ok(fd) => {
                sys::raw_close(fd);
                sys::exit_now(0)
            }
            Err(e) => sys::exit_now(e as i32),
        }
    });
    let pid = match child {
        Ok(pid) => nix::unistd::Pid::from_raw(pid),
        Err(e) => return Probe::NoUserNamespace(e),
    };
    match nix::sys::wait::waitpid(pid, None) {
        Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => Probe::CapabilitiesWork,
        Ok(nix::sys::wait::WaitStatus::Exited(_, code)) => match Errno::from_raw(code) {
            e @ (Errno::EACCES | Errno::EPERM) => Probe::CapabilitiesDenied(e),
            e => Probe::Inconclusive(e),
        },
        Ok(_) => Probe::Inconclusive(Errno::ECHILD),
        Err(e) => Probe::Inconclusive(e),
    }
}

impl Entry {
    /// The `SRT_DEBUG` line for the way in: which, and why.
    pub fn describe(&self) -> String {
        let entry = self;
        match &entry.path {
            Path::UserNamespace(u) => format!(
                "entry: user namespace path; threads checked: {}, thread polls: {}, \
                 user namespace unshare retries: {}, userns entry {} us, total {} us",
                if u.wait.checked {
                    "yes"
                } else {
                    "no (/proc unreadable)"
                },
                u.wait.polls,
                u.retries,
                u.elapsed.as_micros(),
                entry.elapsed.as_micros()
            ),
            Path::Direct { retries } => format!(
                "entry: direct path (CAP_SYS_ADMIN); retries: {retries}, total {} us",
                entry.elapsed.as_micros()
            ),
            Path::CapabilityFree { refusal, wait } => format!(
                "entry: capability-free path ({}); threads checked: {}, thread polls: {}, \
                 total {} us",
                match refusal {
                    None => "asked for with --way-in=capability-free".to_string(),
                    Some(r) => format!(
                        "unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID) refused; {}",
                        r.hint()
                    ),
                },
                if wait.checked {
                    "yes"
                } else {
                    "no (/proc unreadable)"
                },
                wait.polls,
                entry.elapsed.as_micros()
            ),
        }
    }
}

/// What `uid` of this user namespace is in the one above it
/// (`/proc/self/uid_map`); `None` where the map cannot be read or does
/// not map it.
fn uid_outside(uid: u32) -> Option<u32> {
    outside(&std::fs::read_to_string("/proc/self/uid_map").ok()?, uid)
}

/// `uid` through `map` (a `uid_map`'s text: inside, outside, count).
fn outside(map: &str, uid: u32) -> Option<u32> {
    map.lines().find_map(|line| {
        let mut f = line.split_whitespace().map(|n| n.parse::<u64>().ok());
        let (inside, outside, count) = (f.next()??, f.next()??, f.next()??);
        let at = u64::from(uid).checked_sub(inside).filter(|&d| d < count)?;
        u32::try_from(outside + at).ok()
    })
}

/// Waits for a single thread, then `unshare(CLONE_NEWUSER|CLONE_NEWNS|
/// CLONE_NEWPID)` with bounded retries on EINVAL.
pub fn enter_user_namespace(backoff: &Backoff) -> Result<UsernsEntry, Error> {
    enter_user_namespace_with(backoff, &mut ThreadWait::default())
}

/// [`enter_user_namespace`], adding its thread-count waits to `wait`, which
/// keeps them when the entry fails.
fn enter_user_namespace_with(
    backoff: &Backoff,
    wait: &mut ThreadWait,
) -> Result<UsernsEntry, Error> {
    let start = Instant::now();
    let flags = CloneFlags::CLONE_NEWUSER.union(PID_MOUNT);
    let retries = unshare_retrying(flags, Step::UnshareUser, backoff, true, wait)?;
    Ok(UsernsEntry {
        wait: *wait,
        retries,
        elapsed: start.elapsed(),
        // The caller's (enter) to say: the race tester's needs none.
        root_outside: false,
    })
}

/// `unshare(flags)`, retried while it answers EINVAL (the thread group is
/// not yet empty in the kernel's eyes), within `backoff`. With
/// `wait_first`, waits for one thread before the first attempt; it always
/// waits again before a retry; the waits are added to `wait`. Returns the
/// retries used.
fn unshare_retrying(
    flags: CloneFlags,
    step: Step,
    backoff: &Backoff,
    wait_first: bool,
    wait: &mut ThreadWait,
) -> Result<u32, Error> {
    let start = Instant::now();
    let mut tries = 0u32;
    loop {
        if wait_first || tries > 0 {
            let w = threads::wait_single_threaded(backoff.thread_wait)?;
            wait.polls += w.polls;
            wait.checked = w.checked;
        }
        tries += 1;
        match unshare(flags) {
            Ok(()) => return Ok(tries - 1),
            Err(nix::errno::Errno::EINVAL)
                if tries < backoff.max_tries && start.elapsed() < backoff.max_retry_time =>
            {
                threads::pause(tries - 1);
            }
            Err(nix::errno::Errno::EINVAL) => {
                return Err(Error::Transient {
                    step,
                    tries,
                    elapsed: start.elapsed(),
                    source: io::Error::from_raw_os_error(libc::EINVAL),
                });
            }
            Err(e) => return Err(Error::setup(step, e)),
        }
    }
}

/// `setgroups` deny and 1:1 maps, with dumpable raised.
fn write_id_maps(uid: u32, gid: u32) -> Result<(), Error> {
    with_dumpable(|| write_maps(uid, gid))
}

/// Runs `f` dumpable. A process that started non-dumpable (an execute-only
/// binary) cannot open its own `/proc/self/*_map`, since its `/proc` files
/// then belong to root; dumpable is raised for `f` and the stricter value
/// put back after.
fn with_dumpable<T>(f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    let before = sys::get_dumpable().map_err(|e| Error::setup(Step::Dumpable, e))?;
    if before != 1 {
        prctl::set_dumpable(true).map_err(|e| Error::setup(Step::Dumpable, e))?;
    }
    let result = f();
    if before != 1 {
        // PR_SET_DUMPABLE takes only 0 or 1; 0 is the stricter of both.
        prctl::set_dumpable(false).map_err(|e| Error::setup(Step::Dumpable, e))?;
    }
    result
}

fn write_maps(uid: u32, gid: u32) -> Result<(), Error> {
    // Write-only, no O_CREAT/O_TRUNC (the files exist; proc would ignore
    // both), and no O_CLOEXEC: closed before anything can exec, and musl
    // follows an O_CLOEXEC open with an extra fcntl.
    let write = |path: &str, text: String, step: Step| {
        let fd = nix::fcntl::open(
            path,
            nix::fcntl::OFlag::O_WRONLY,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(|e| Error::setup(step, e))?;
        match nix::unistd::write(&fd, text.as_bytes()) {
            Ok(n) if n == text.len() => Ok(()),
            Ok(_) => Err(Error::setup(step, io::Error::from_raw_os_error(libc::EIO))),
            Err(e) => Err(Error::setup(step, e)),
        }
    };
    write("/proc/self/setgroups", "deny".into(), Step::Setgroups)?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"), Step::UidMap)?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"), Step::GidMap)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_uid_is_followed_through_its_map() {
        let init = "         0          0 4294967295\n";
        assert_eq!(super::outside(init, 0), Some(0));
        let bwrap_as_user = "      1000       1000          1\n";
        assert_eq!(super::outside(bwrap_as_user, 0), None);
        assert_eq!(super::outside(bwrap_as_user, 1000), Some(1000));
        let shifted = "0 100000 65536\n";
        assert_eq!(super::outside(shifted, 0), Some(100000));
        assert_eq!(super::outside(shifted, 70000), None);
        assert_eq!(super::outside("garbage", 0), None);
    }
}
