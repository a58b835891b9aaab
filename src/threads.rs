//! The precondition of `unshare(CLONE_NEWUSER)`: a thread group of one.
//!
//! A joined thread can still count for a few microseconds (its futex wake
//! comes before the kernel unhashes it), so a join is no barrier. This
//! module asks the kernel instead: the entries of `/proc/self/task`.

use std::time::{Duration, Instant};

use crate::error::{Error, Step};
use crate::sys;

/// How long to wait for the thread count to reach one.
pub const WAIT_BUDGET: Duration = Duration::from_millis(100);

/// Calls to `sched_yield` before the first sleep.
const YIELDS: u32 = 3;
const FIRST_SLEEP: Duration = Duration::from_micros(20);
const MAX_SLEEP: Duration = Duration::from_millis(2);

/// What the wait saw.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadWait {
    /// Reads of `/proc/self/task` that showed more than one thread.
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
        match sys::count_threads().map_err(|e| Error::setup(Step::WaitSingleThreaded, e))? {
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
