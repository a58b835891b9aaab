//! A datagram socketpair where the stub holds the policy (sockets.rs;
//! issue 55, item 6). The ends of an `AF_UNIX` datagram pair can each
//! send to any named datagram socket the command can see (journald's,
//! syslog's) with an addressed `sendto`; the filter notifies such a
//! `socketpair` and the stub makes a sequenced-packet pair in its place:
//! its sends keep the message boundaries and drop any address (the
//! kernel clears it), so the two ends reach each other and nothing else.
//! The pair is made in the run's network namespace and put in the
//! process's table with `SECCOMP_IOCTL_NOTIF_ADDFD` (Linux 5.9); the two
//! numbers are written where the call asked, through the process's
//! `/proc/PID/mem` opened while its call was still waiting.
//!
//! What a program can tell (tests/unix_sockets.rs): `SO_TYPE` says
//! `SOCK_SEQPACKET`; once the peer is closed a read gives end of file
//! (a datagram pair's would wait) and a send `EPIPE`, no `SIGPIPE` (a
//! datagram pair's `ECONNREFUSED`); `SO_PEERCRED` names the stub.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

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
        // The process's memory, open before its call is checked to be
        // still waiting: then the file is that process's, whatever its
        // number names later (never another's, reused). The result's
        // place is checked writable before anything is put in its table
        // (its own bytes written back).
        let name =
            std::ffi::CString::new(format!("{}/mem", notif.pid)).map_err(|_| Errno::EINVAL)?;
        let mem = sys::open_at(self.proc_dir(), &name, libc::O_RDWR, 0).map(sys::owned)?;
        if !sys::notif_id_valid(listener, notif.id) {
            return Err(Errno::ESRCH);
        }
        let mut place = [0u8; 8];
        let at = args[3];
        let whole = |n: usize| if n == 8 { Ok(()) } else { Err(Errno::EFAULT) };
        sys::pread(mem.as_raw_fd(), &mut place, at)
            .map_err(|_| Errno::EFAULT)
            .and_then(whole)?;
        sys::pwrite(mem.as_raw_fd(), &place, at)
            .map_err(|_| Errno::EFAULT)
            .and_then(whole)?;
        let mut made = SockFlag::SOCK_CLOEXEC;
        if flags & SOCK_NONBLOCK != 0 {
            made |= SockFlag::SOCK_NONBLOCK;
        }
        let (one, two) = socketpair(AddressFamily::Unix, SockType::SeqPacket, None, made)?;
        let cloexec = flags & SOCK_CLOEXEC != 0;
        let first = sys::notif_addfd(listener, notif.id, one.as_fd(), cloexec)?;
        // A second refusal (the process's descriptor limit) leaves the
        // first number open there: the process never learns it.
        let second = sys::notif_addfd(listener, notif.id, two.as_fd(), cloexec)?;
        place[..4].copy_from_slice(&first.to_ne_bytes());
        place[4..].copy_from_slice(&second.to_ne_bytes());
        sys::pwrite(mem.as_raw_fd(), &place, at)
            .map_err(|_| Errno::EFAULT)
            .and_then(whole)?;
        self.pairs += 1;
        Ok(())
    }
}
