//! The teardown process: what the end of a guarded run would wait for,
//! released after it instead. Started by the stub under bubblewrap, where
//! the mount guard watches (guard/).
//!
//! A run's last process to exit pays for what it leaves: closing the rename
//! watches' inotify instance waits for the kernel's fsnotify grace period
//! (`synchronize_srcu`: 10-15 ms with the watches on; 150-250 us after
//! removing them and sleeping one timer-slack wait, measured in the stub:
//! renames.rs), the last reference to the run's mount namespace unmounts
//! its tree, and the last user of the memory unmaps it. bubblewrap's
//! monitor exits, and its caller goes on, as soon as its PID 1 has reaped
//! the stub, so the stub's exit is on every command's path.
//!
//! Started before the namespaces (it must be in bubblewrap's PID namespace,
//! not the run's, whose end would wait for it), in the stub's memory
//! ([`sys::spawn_shared`]), with its own file table: it closes every
//! descriptor but its end of a `SOCK_SEQPACKET` pair and sleeps until the
//! stub's end closes (SIGKILL on the stub's death besides). The stub sends
//! it, as `SCM_RIGHTS`, the inotify instance and the mount namespace; they
//! stay queued on its end, never received, so the stub's own closes and
//! its exit drop references that are not the last. When the stub exits,
//! the teardown process's exit releases them, and the memory, off the
//! command's path: bubblewrap's PID 1 reaps it (its monitor, and the
//! caller, do not wait), and SIGKILL ends it with bubblewrap's PID
//! namespace at the latest. Measured under bubblewrap with srt's options:
//! 1.5 ms of the helper's own time become 1.1 (docs/performance.md).
//!
//! Nothing depends on it: where it cannot start, or its end is gone, the
//! stub releases everything itself as before.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};

use crate::sys;

/// The teardown process's stack: it calls three raw wrappers (the least
/// [`sys::Stack`] takes, 16 KiB free below the closure, and a page).
const STACK: usize = 20 * 1024;

/// The stub's end of the pair; the process itself is the stub's child.
pub struct Teardown {
    sock: OwnedFd,
}

impl Teardown {
    /// Starts the teardown process. Before the namespaces: the stub's
    /// later children are the run's.
    pub fn start() -> Result<Teardown, Errno> {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )?;
        let keep = theirs.as_raw_fd();
        let stack = sys::Stack::new(STACK)?;
        // Raw calls only, on data copied in: it runs in the stub's memory.
        sys::spawn_shared(stack, move || {
            if sys::set_pdeathsig(libc::SIGKILL).is_err() {
                sys::exit_now(0);
            }
            sys::close_all_but(&[keep]);
            // The stub may have died before the signal was armed; its end
            // is then closed, and this returns at once.
            sys::wait_peer_closed(keep);
            sys::exit_now(0)
        })?;
        Ok(Teardown { sock: ours })
    }

    /// Gives it this process's mount namespace (the run's, once the
    /// namespaces are made): opened through the caller's `/proc`, so
    /// before init mounts its own.
    pub fn keep_mount_namespace(&self) -> Result<(), Errno> {
        let ns = sys::open_path(c"/proc/self/ns/mnt", libc::O_RDONLY)?;
        self.keep(ns.as_fd())
    }

    /// Gives the teardown process a reference to `fd`'s open file, to be
    /// released when it exits. An error (its end is gone): the caller
    /// releases `fd` itself.
    pub fn keep(&self, fd: BorrowedFd<'_>) -> Result<(), Errno> {
        sys::send_fd(self.sock.as_raw_fd(), 0, Some(fd.as_raw_fd()))
    }
}
