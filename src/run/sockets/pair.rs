//! A datagram socketpair where the stub holds the policy (sockets.rs;
//! issue 55, item 6). The ends of an `AF_UNIX` datagram pair can each
//! send to any named datagram socket the command can see (journald's,
//! syslog's) with an addressed `sendto`; the filter notifies such a
//! `socketpair` and the stub makes a sequenced-packet pair in its place:
//! its sends keep the message boundaries and drop any address (the
//! kernel clears it), so the two ends reach each other and nothing else.
//! The pair is made in the run's network namespace and put in the
//! process's table with `SECCOMP_IOCTL_NOTIF_ADDFD` (Linux 5.9); the two
//! numbers are written where the call asked, as the process would write
//! them (`process_vm_writev`, page protections kept), once the place was
//! found writable so.
//!
//! What a program can tell (tests/unix_sockets.rs): `SO_TYPE` says
//! `SOCK_SEQPACKET`; once the peer is closed a read gives end of file
//! (a datagram pair's would wait) and a send `EPIPE`, no `SIGPIPE` (a
//! datagram pair's `ECONNREFUSED`); `SO_PEERCRED` names the stub.

use std::os::fd::{AsFd, BorrowedFd};

use nix::errno::Errno;
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};

use super::Sockets;
use crate::sys;

/// The flags `socketpair` takes in its type word (the same on x86_64
/// and aarch64).
const SOCK_NONBLOCK: u32 = 0x800;
const SOCK_CLOEXEC: u32 = 0x8_0000;

impl Sockets {
    /// Makes the pair `notif` asks for (the filter notifies only an
    /// `AF_UNIX` datagram or raw one): `Ok` once both numbers are where
    /// the call asked, else the errno to answer.
    pub(super) fn pair(
        &mut self,
        listener: BorrowedFd<'_>,
        notif: &libc::seccomp_notif,
    ) -> Result<(), Errno> {
        let args = notif.data.args;
        let kind = args[1] as u32;
        let flags = kind & !0xf;
        if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
            return Err(Errno::EINVAL);
        }
        let protocol = args[2] as u32;
        if protocol != 0 && protocol != libc::AF_UNIX as u32 {
            return Err(Errno::EPROTONOSUPPORT);
        }
        // The place for the two numbers, checked writable as the process
        // would write it before anything is put in its table: its own
        // bytes read and written back (`process_vm_writev` keeps page
        // protections, unlike `/proc/PID/mem`), so a read-only,
        // `PROT_NONE` or sealed page gets `EFAULT`, as from the kernel
        // (issue 67, item 7). The call is checked to be still waiting
        // first, so the pid is the caller's (and the write gives back the
        // bytes just read).
        let at = args[3];
        let pid = notif.pid as libc::pid_t;
        if !sys::notif_id_valid(listener, notif.id) {
            return Err(Errno::ESRCH);
        }
        let mut place = [0u8; 8];
        sys::read_remote_exact(pid, at, &mut place).ok_or(Errno::EFAULT)?;
        sys::write_remote_exact(pid, at, &place).map_err(|_| Errno::EFAULT)?;
        let mut made = SockFlag::SOCK_CLOEXEC;
        if flags & SOCK_NONBLOCK != 0 {
            made |= SockFlag::SOCK_NONBLOCK;
        }
        let pair = || socketpair(AddressFamily::Unix, SockType::SeqPacket, None, made);
        let (one, two) = match pair() {
            Err(Errno::EMFILE) if self.more_descriptors() => pair(),
            other => other,
        }?;
        let cloexec = flags & SOCK_CLOEXEC != 0;
        let first = sys::notif_addfd(listener, notif.id, one.as_fd(), cloexec)?;
        // A second refusal (the process's descriptor limit), or a place
        // unmapped by another thread between the check and the write,
        // leaves the numbers open there: the process never learns them
        // (the kernel reserves both and writes before it installs them;
        // ADDFD installs at once).
        let second = sys::notif_addfd(listener, notif.id, two.as_fd(), cloexec)?;
        place[..4].copy_from_slice(&first.to_ne_bytes());
        place[4..].copy_from_slice(&second.to_ne_bytes());
        // Written as the process would write them (`process_vm_writev`
        // keeps the protections: another thread's `mprotect` or `mseal`
        // since the check gets `EFAULT`, not a write through it), to the
        // pid whose call still waits: the process has not ended, so its
        // pid names no other (a pid is reused only once its process is
        // reaped, and only after the numbers have gone round).
        if !sys::notif_id_valid(listener, notif.id) {
            return Err(Errno::ESRCH);
        }
        sys::write_remote_exact(pid, at, &place).map_err(|_| Errno::EFAULT)?;
        self.pairs += 1;
        Ok(())
    }
}
