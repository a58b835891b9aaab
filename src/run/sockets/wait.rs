//! The connects the stub answers later (sockets.rs): another family's
//! handshake finished in the serve loop's poll, a Unix listener's full
//! backlog tried again; and the connect itself, which never blocks the
//! stub.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};

use super::{PATH_AT, Sockets};
use crate::sys;

/// A connect the stub answers later: the command's socket is blocking,
/// and the call would block.
pub struct Pending {
    pub(super) id: u64,
    pub(super) sock: OwnedFd,
    pub(super) wait: Wait,
}

pub(super) enum Wait {
    /// Another family's handshake the kernel is finishing (TCP): the
    /// socket polls writable when done.
    Handshake,
    /// A Unix listener's backlog was full: tried again on a timer (the
    /// kernel would have waited for room), with the address and the
    /// socket file it leads to (kept open: the address names it).
    Backlog {
        addr: Vec<u8>,
        _file: Option<OwnedFd>,
    },
}

/// What [`connect_now`] came to.
pub(super) enum Made {
    Answered,
    Later(OwnedFd, Wait),
}

impl Pending {
    /// The socket to poll for a handshake's end.
    pub fn handshake(&self) -> Option<BorrowedFd<'_>> {
        matches!(self.wait, Wait::Handshake).then(|| self.sock.as_fd())
    }
}

impl Sockets {
    /// [`connect_now`] to a `self/fd/N` address, from the caller's `/proc`.
    pub(super) fn through_proc(
        &mut self,
        listener: BorrowedFd<'_>,
        id: u64,
        sock: OwnedFd,
        addr: &[u8],
    ) -> Result<Made, Errno> {
        if !self.in_proc {
            nix::unistd::fchdir(self.proc_dir.as_fd())?;
            self.in_proc = true;
        }
        connect_now(listener, id, sock, addr, false)
    }

    /// Connects waiting for room in a listener's backlog.
    pub fn waiting_for_room(&self) -> bool {
        self.pending
            .iter()
            .any(|p| matches!(p.wait, Wait::Backlog { .. }))
    }

    /// Tries each connect waiting for room again; those whose call was
    /// given up (a signal, the process gone) are dropped.
    pub fn retry(&mut self, listener: BorrowedFd<'_>) {
        let waiting: Vec<Pending>;
        (waiting, self.pending) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| matches!(p.wait, Wait::Backlog { .. }));
        for p in waiting {
            if !sys::notif_id_valid(listener, p.id) {
                continue;
            }
            let Wait::Backlog { addr, _file } = p.wait else {
                continue;
            };
            let made = if addr.get(PATH_AT) == Some(&0) {
                connect_now(listener, p.id, p.sock, &addr, false)
            } else {
                self.through_proc(listener, p.id, p.sock, &addr)
            };
            match made {
                Ok(Made::Later(sock, Wait::Backlog { addr, .. })) => self.pending.push(Pending {
                    id: p.id,
                    sock,
                    wait: Wait::Backlog { addr, _file },
                }),
                Ok(other) => self.pending.extend(later(p.id, other)),
                Err(e) => {
                    let _ = sys::notif_answer(listener, p.id, Err(e));
                }
            }
        }
    }

    /// A pending handshake is done (its socket polled writable): the
    /// call's answer is the socket's error.
    pub fn finish(&mut self, listener: BorrowedFd<'_>, index: usize) {
        let p = self.pending.remove(index);
        let err = nix::sys::socket::getsockopt(&p.sock, nix::sys::socket::sockopt::SocketError)
            .unwrap_or(libc::EIO);
        let result = if err == 0 {
            Ok(())
        } else {
            Err(Errno::from_raw(err))
        };
        let _ = sys::notif_answer(listener, p.id, result);
    }
}

/// A connect to answer later, as a pending entry.
pub(super) fn later(id: u64, made: Made) -> Option<Pending> {
    match made {
        Made::Answered => None,
        Made::Later(sock, wait) => Some(Pending { id, sock, wait }),
    }
}

/// Connects `sock` to `addr` without blocking the stub: answered at once,
/// or, for a blocking socket, handed back: another family's handshake
/// (`handshake`) for the poll to finish, a full Unix backlog to try again.
pub(super) fn connect_now(
    listener: BorrowedFd<'_>,
    id: u64,
    sock: OwnedFd,
    addr: &[u8],
    handshake: bool,
) -> Result<Made, Errno> {
    let flags = OFlag::from_bits_truncate(fcntl(&sock, FcntlArg::F_GETFL)?);
    let blocking = !flags.contains(OFlag::O_NONBLOCK);
    if blocking {
        fcntl(&sock, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    }
    let mut made = sys::connect_bytes(sock.as_fd(), addr);
    if made == Err(Errno::EINPROGRESS) && blocking && handshake {
        // A handshake with this machine (loopback, a proxy srt runs) is
        // often done by now: a second connect says so (0, or the error),
        // and the answer goes out without a turn of the serve loop;
        // EALREADY while it goes on.
        made = match sys::connect_bytes(sock.as_fd(), addr) {
            Err(Errno::EALREADY) => Err(Errno::EINPROGRESS),
            other => other,
        };
    }
    if blocking {
        let _ = fcntl(&sock, FcntlArg::F_SETFL(flags));
    }
    match made {
        // EALREADY: a blocking connect the kernel restarted after a
        // handled signal, its handshake still going on; the kernel waits
        // again (issue 67, item 9).
        Err(Errno::EINPROGRESS | Errno::EALREADY) if blocking && handshake => {
            Ok(Made::Later(sock, Wait::Handshake))
        }
        Err(Errno::EAGAIN) if blocking && !handshake => Ok(Made::Later(
            sock,
            Wait::Backlog {
                addr: addr.to_vec(),
                _file: None,
            },
        )),
        other => {
            let _ = sys::notif_answer(listener, id, other);
            Ok(Made::Answered)
        }
    }
}
