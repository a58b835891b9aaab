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
//! them (`process_vm_writev`, page protections kept), once its map says
//! the place is writable.
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
        // The place for the two numbers, checked writable in the process's
        // map (open before its call is checked to be still waiting, so it
        // is that process's) before anything is put in its table: a
        // read-only, `PROT_NONE` or sealed page gets `EFAULT`, as from the
        // kernel (issue 67, item 7).
        let dir = std::ffi::CString::new(notif.pid.to_string()).map_err(|_| Errno::EINVAL)?;
        let maps = sys::open_at(self.proc_dir(), &dir, libc::O_PATH | libc::O_DIRECTORY, 0)
            .map(sys::owned)
            .and_then(|dir| sys::read_file_at(dir.as_raw_fd(), c"maps"));
        if !sys::notif_id_valid(listener, notif.id) {
            return Err(Errno::ESRCH);
        }
        let at = args[3];
        if !maps.is_ok_and(|m| writable(&m, at, 8)) {
            return Err(Errno::EFAULT);
        }
        let mut place = [0u8; 8];
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
        sys::write_remote_exact(notif.pid as libc::pid_t, at, &place).map_err(|_| Errno::EFAULT)?;
        self.pairs += 1;
        Ok(())
    }
}

/// Whether `len` bytes at `at` lie in mappings the process may write
/// (`/proc/PID/maps`: `start-end perms ...`, hexadecimal, sorted).
fn writable(maps: &[u8], at: u64, len: u64) -> bool {
    let Some(end) = at.checked_add(len) else {
        return false;
    };
    let mut from = at;
    for line in maps.split(|&b| b == b'\n') {
        let mut fields = line.split(|&b| b == b' ');
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let text = String::from_utf8_lossy(range);
        let Some((lo, hi)) = text.split_once('-') else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else {
            continue;
        };
        if hi <= from || lo > from {
            continue;
        }
        if perms.get(1) != Some(&b'w') {
            return false;
        }
        from = hi;
        if from >= end {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::writable;

    #[test]
    fn only_writable_mappings_take_the_numbers() {
        let maps = b"1000-2000 rw-p 0 00:00 0\n2000-3000 rw-p 0 00:00 0\n3000-4000 r--p 0 00:00 0\n5000-6000 ---p 0 00:00 0\n";
        assert!(writable(maps, 0x1000, 8));
        assert!(writable(maps, 0x1ffc, 8), "across two writable mappings");
        assert!(!writable(maps, 0x2ffc, 8), "into a read-only one");
        assert!(!writable(maps, 0x3000, 8));
        assert!(!writable(maps, 0x4000, 8), "unmapped");
        assert!(!writable(maps, 0x5000, 8), "PROT_NONE");
        assert!(!writable(maps, u64::MAX - 3, 8));
    }
}
