//! The precondition of `unshare(CLONE_NEWUSER)`: a thread group of one.
//!
//! A joined thread can still count for a few microseconds (its futex wake
//! comes before the kernel unhashes it), so a join is no barrier. This
//! module asks the kernel instead, through `/proc/self/task`: its link
//! count is two plus the thread group's `nr_threads` (proc_task_getattr),
//! which drops in the same step (`__exit_signal`) that takes a dead thread
//! off the list `unshare` checks. One `stat`, where listing the directory
//! took a path walk, a directory read and an inode for each entry.

use std::time::{Duration, Instant};

use nix::errno::Errno;

use crate::error::{Error, Step};

/// How long to wait for the thread count to reach one.
pub const WAIT_BUDGET: Duration = Duration::from_millis(100);

/// Calls to `sched_yield` before the first sleep.
const YIELDS: u32 = 3;
const FIRST_SLEEP: Duration = Duration::from_micros(20);
const MAX_SLEEP: Duration = Duration::from_millis(2);

/// What the wait saw.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadWait {
    /// Looks at `/proc/self/task` that showed more than one thread.
    pub polls: u32,
    /// `false` when `/proc` could not be read: the EINVAL retry is then the
    /// only defence.
    pub checked: bool,
}

/// The pause before poll number `n` (0-based): a few yields, then sleeps
/// doubling from 20 us up to 2 ms.
pub fn pause(n: u32) {
    if n < YIELDS {
        std::thread::yield_now();
    } else {
        let shift = (n - YIELDS).min(16);
        std::thread::sleep(FIRST_SLEEP.saturating_mul(1 << shift).min(MAX_SLEEP));
    }
}

/// Waits, bounded by `budget`, until this process has exactly one thread.
pub fn wait_single_threaded(budget: Duration) -> Result<ThreadWait, Error> {
    let start = Instant::now();
    let mut polls = 0;
    loop {
        match count_threads().map_err(|e| Error::setup(Step::WaitSingleThreaded, e))? {
            None => {
                return Ok(ThreadWait {
                    polls,
                    checked: false,
                });
            }
            Some(n) if n <= 1 => {
                return Ok(ThreadWait {
                    polls,
                    checked: true,
                });
            }
            Some(n) => {
                let waited = start.elapsed();
                if waited >= budget {
                    return Err(Error::StillThreaded { threads: n, waited });
                }
                pause(polls);
                polls += 1;
            }
        }
    }
}

/// The threads of this process as the kernel counts them, or `None` when
/// `/proc` is absent or closed to this process (or answers a link count
/// this code does not know).
pub fn count_threads() -> Result<Option<usize>, Errno> {
    match nix::sys::stat::stat("/proc/self/task") {
        Ok(st) if st.st_nlink >= 3 => Ok(Some(st.st_nlink as usize - 2)),
        Ok(_) | Err(Errno::ENOENT | Errno::EACCES) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{self, Forked};

    #[test]
    fn a_fresh_fork_counts_one_and_a_live_thread_counts() {
        // This test process runs the harness's threads: at least this one
        // and the one below while it waits.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let waiter = std::thread::spawn(move || rx.recv());
        let here = count_threads().unwrap().expect("/proc is mounted");
        assert!(here >= 2, "{here} threads counted with two alive");
        // A forked child has exactly one. It only stats (nix builds the
        // path on the stack) and exits: no allocation after this fork.
        match sys::fork().unwrap() {
            Forked::Child => {
                let code = match count_threads() {
                    Ok(Some(1)) => 0,
                    Ok(Some(_)) => 1,
                    Ok(None) => 2,
                    Err(_) => 3,
                };
                sys::exit_now(code)
            }
            Forked::Parent(pid) => {
                let status = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
                assert_eq!(
                    status.unwrap(),
                    nix::sys::wait::WaitStatus::Exited(nix::unistd::Pid::from_raw(pid), 0),
                    "the child did not count exactly one thread"
                );
            }
        }
        drop(tx);
        waiter.join().unwrap().unwrap_err();
    }
}
