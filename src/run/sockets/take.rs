//! Taking a descriptor from the process whose call the stub serves
//! (sockets.rs): its pidfd, kept for the last thread.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;

use super::Sockets;
use crate::sys;

impl Sockets {
    /// The process's descriptor `fd`, while its call still waits (so the
    /// pid was not reused).
    ///
    /// The last thread's pidfd is kept: while the thread it names lives,
    /// it holds its number, so a notification from that number is its own
    /// and the descriptor is taken at once (a loop of connects saves
    /// `pidfd_open`, the validity check and the close each time). Once
    /// that thread is reaped its number may name another: `ESRCH`, and the
    /// pidfd is opened anew and checked.
    ///
    /// Out of descriptors (`EMFILE`: a run's connects in progress hold
    /// many), the stub's soft limit is raised once and the take tried
    /// again; past that the caller gets the error, never a call let go on
    /// unchecked (issue 67, item 5).
    pub(super) fn take(
        &mut self,
        listener: BorrowedFd<'_>,
        notif: &libc::seccomp_notif,
        fd: u64,
    ) -> Result<OwnedFd, Errno> {
        match self.take_once(listener, notif, fd) {
            Err(Errno::EMFILE) if self.more_descriptors() => self.take_once(listener, notif, fd),
            other => other,
        }
    }

    /// Raises the stub's soft descriptor limit, once a run needs it
    /// (its children keep theirs): whether it grew.
    pub(super) fn more_descriptors(&mut self) -> bool {
        if std::mem::replace(&mut self.raised, true) {
            return false;
        }
        sys::raise_descriptor_limit(super::DESCRIPTORS)
    }

    fn take_once(
        &mut self,
        listener: BorrowedFd<'_>,
        notif: &libc::seccomp_notif,
        fd: u64,
    ) -> Result<OwnedFd, Errno> {
        let tid = notif.pid as libc::pid_t;
        let fd = fd as u32 as i32;
        if let Some((_, pidfd)) = self.last.as_ref().filter(|(t, _)| *t == tid) {
            match sys::pidfd_getfd(pidfd.as_fd(), fd) {
                Err(Errno::ESRCH) => self.last = None,
                other => return other,
            }
        }
        let (pidfd, thread) = self.pidfd_of(tid)?;
        if !sys::notif_id_valid(listener, notif.id) {
            return Err(Errno::ESRCH);
        }
        let got = sys::pidfd_getfd(pidfd.as_fd(), fd);
        if thread {
            self.last = Some((tid, pidfd));
        }
        got
    }

    /// A pidfd of the thread `tid` reports (a thread of the process on
    /// Linux 6.9, `PIDFD_THREAD`: `true` with it; before, its thread
    /// group's leader, read from `/proc/TID/status`): its descriptors are
    /// the process's.
    fn pidfd_of(&self, tid: libc::pid_t) -> Result<(OwnedFd, bool), Errno> {
        match sys::pidfd_open_thread(tid) {
            Err(Errno::EINVAL) => {}
            other => return other.map(|p| (p, true)),
        }
        let tgid = super::fence::tgid(self.proc_dir.as_raw_fd(), tid).ok_or(Errno::ESRCH)?;
        sys::pidfd_open(tgid).map(|p| (p, false))
    }
}
