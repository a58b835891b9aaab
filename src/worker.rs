//! The worker, PID 2: the last steps before the command.
//!
//! Runs between fork and exec: no allocation, no formatting, no panics.
//! Calls made: sigprocmask, seccomp (the namespaces filter, unless nesting
//! is allowed), execve (through execvp's PATH search), and on failure a
//! send of one report and `_exit`. no_new_privs and the unix filter were
//! set in the stub before the first fork and are inherited, as is the
//! scrubbed environment (main.rs); inherited file descriptors are left
//! alone.

use nix::sys::signal::{SigSet, SigmaskHow, sigprocmask};

use crate::error::{Step, errno, exec_exit_code};
use crate::supervise::{Channel, Kind, Plan};
use crate::sys;

pub fn run(plan: &Plan, original_mask: &SigSet, chan: Channel) -> ! {
    if let Err(e) = sigprocmask(SigmaskHow::SIG_SETMASK, Some(original_mask), None) {
        chan.fail(Step::Signals, e);
    }
    if let Some(ns) = plan.filters.namespaces {
        if let Err(e) = sys::install_filter(ns.bytes()) {
            chan.fail(Step::FilterNamespaces, errno(&e));
        }
    }
    let err = errno(&sys::execvp(plan.exec));
    chan.report(Kind::Fatal, Step::Exec, err);
    sys::exit_now(exec_exit_code(err as i32))
}
