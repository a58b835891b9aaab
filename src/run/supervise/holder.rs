//! The capability-free way's holder, under bubblewrap: a process that
//! keeps the mount guard's inotify instance until the stub has exited
//! (supervise/mod.rs starts it before the guard's watches are made).

use std::os::fd::{AsRawFd, RawFd};

use nix::errno::Errno;

use crate::sys;

/// The holder's stack: its closure and one ppoll.
const HOLDER_STACK: usize = 32 * 1024;

/// On the capability-free way under bubblewrap: a process that holds the
/// mount guard's inotify instance until the stub has exited, so that the
/// instance's release, with its watches (the kernel waits for the end of
/// an SRCU grace period: 10-15 ms with the watches in place, 0.1-0.3 ms
/// with them removed and a pause first, renames.rs), comes after the
/// stub's exit instead of in its end: bubblewrap's init reports the
/// stub's status to bubblewrap's caller at once, and reaps the holder
/// later. It is the stub's sibling (`CLONE_PARENT`: the stub never waits
/// for it, and the end of the run, end.rs `end_leftovers`, does not see
/// it), in the stub's memory (no page tables copied; the memory stays
/// non-dumpable), and keeps nothing but the instance and a pidfd of the
/// stub, which polls readable once the stub has exited: then it exits. It
/// runs outside the command's Landlock domain, as the stub does, which
/// bars the command from tracing or signalling it. Raw calls only.
pub(super) fn start_holder(inotify: RawFd) -> Result<(), Errno> {
    let stub = sys::pidfd_open(sys::raw_getpid())?;
    let stack = sys::Stack::new(HOLDER_STACK)?;
    let watch = stub.as_raw_fd();
    let keep = [inotify.min(watch), inotify.max(watch)];
    sys::spawn_sibling(stack, move || {
        sys::close_all_but(&keep);
        let _ = sys::wait_readable(watch);
        sys::exit_now(0)
    })?;
    // The stub's own copy of the pidfd, closed here.
    drop(stub);
    Ok(())
}
