//! The gate between init and its worker (a futex word in static memory):
//! init opens it once its mounts and checks have held, the worker waits
//! at it before its exec. Called by init and the worker, which share the
//! stub's memory: raw calls only.

use std::sync::atomic::{AtomicU32, Ordering};

use nix::errno::Errno;

use super::*;

/// A one-way gate between processes that share this memory: one waits
/// until the other opens it. init starts the worker before its mounts and
/// opens the gate after them; the worker makes its last steps meanwhile
/// and execs only once the gate is open. Should init end first, so does
/// the worker (the end of PID 1 kills the namespace). Raw futex calls, on
/// a word in static memory.
pub struct Gate(AtomicU32);

impl Gate {
    pub const fn new() -> Gate {
        Gate(AtomicU32::new(0))
    }

    /// Opens the gate and wakes the waiter. An error (none is expected)
    /// means a waiter may sleep on: the caller must not go on as if the
    /// gate were open.
    pub fn open(&self) -> Result<(), Errno> {
        self.0.store(1, Ordering::Release);
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

    /// Returns once the gate is open; an error other than the word having
    /// changed (EAGAIN) or a signal (EINTR) is returned, and the caller
    /// must not take the gate as open.
    pub fn wait(&self) -> Result<(), Errno> {
        while self.0.load(Ordering::Acquire) == 0 {
            // SAFETY: FUTEX_WAIT reads the aligned u32 behind the address,
            // a static valid for the whole run; no timeout (null).
            let ret = raw_result(unsafe {
                syscall6(
                    libc::SYS_futex,
                    [
                        self.0.as_ptr() as usize,
                        (libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG) as usize,
                        0,
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
        Ok(())
    }
}
