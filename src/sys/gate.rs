//! The gate before the worker's exec (a futex word in static memory):
//! each party that must agree to the command's start turns one key
//! (init once its mounts held; the stub, where the mount guard is on,
//! once its check held), and the worker waits at the gate until every
//! key is turned. Called by the stub, init and the worker, which share
//! the stub's memory: raw calls only.

use std::sync::atomic::{AtomicU32, Ordering};

use nix::errno::Errno;

use super::*;

/// A gate that opens once `keys` parties have each turned their key. A
/// party that cannot agree never turns it and ends the run instead (init
/// by exiting, the stub by killing init): the end of PID 1 kills the
/// waiting worker unrun.
pub struct Gate(AtomicU32);

impl Gate {
    pub const fn new() -> Gate {
        Gate(AtomicU32::new(0))
    }

    /// Turns one key and wakes the waiter. An error (none is expected)
    /// means the waiter may sleep on: the caller must end the run.
    pub fn turn(&self) -> Result<(), Errno> {
        self.0.fetch_add(1, Ordering::Release);
        // SAFETY: FUTEX_WAKE reads no memory through the word's address
        // (it names the futex); the other arguments are numbers.
        raw_result(unsafe {
            syscall6(
                libc::SYS_futex,
                [
                    self.0.as_ptr() as usize,
                    (libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG) as usize,
                    i32::MAX as usize,
                    0,
                    0,
                    0,
                ],
            )
        })
        .map(drop)
    }

    /// Returns once `keys` keys are turned (at once, with no call, for
    /// none); an error other than the word
    /// having changed meanwhile (EAGAIN) or a signal (EINTR) is returned,
    /// and the caller must not take the gate as open.
    pub fn wait(&self, keys: u32) -> Result<(), Errno> {
        loop {
            let turned = self.0.load(Ordering::Acquire);
            if turned >= keys {
                return Ok(());
            }
            // SAFETY: FUTEX_WAIT reads the aligned u32 behind the address,
            // a static valid for the whole run; no timeout (null).
            let ret = raw_result(unsafe {
                syscall6(
                    libc::SYS_futex,
                    [
                        self.0.as_ptr() as usize,
                        (libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG) as usize,
                        turned as usize,
                        0,
                        0,
                        0,
                    ],
                )
            });
            match ret {
                Ok(_) | Err(Errno::EAGAIN) | Err(Errno::EINTR) => {}
                Err(e) => return Err(e),
            }
        }
    }
}
