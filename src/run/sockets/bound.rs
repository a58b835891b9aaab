//! The sockets a process of the run bound, for the stub's policy
//! (sockets.rs): each noted at its bind by its cookie (64 bits, never
//! reused while the machine runs), looked up through sock_diag when a
//! connect names a place, and forgotten once closed.

use std::os::fd::{AsFd, BorrowedFd};

use nix::sys::stat::fstat;

use super::diag::diag_one;
use super::{At, PATH_AT, Sockets};
use crate::sys;

/// The fewest noted binds at which closed sockets are looked for, and
/// the most kept (1.5 MiB): past it a bind is not noted, and a connect
/// to that socket is refused (never allowed unchecked). A command holds
/// that many bound sockets open only on purpose; closed ones cost
/// nothing, as the map is cleared of them before it grows (issue 54:
/// 120,000 bind-and-close made a bind 31 -> 81 us, the stub 3.0 -> 6.2 MB).
pub(super) const BOUND_FLOOR: usize = 256;
pub(super) const BOUND_MAX: usize = 1 << 16;

/// A socket a process of the run bound.
pub(super) struct Bound {
    pub(super) ino: u32,
    /// Where it is bound, once sock_diag has shown it.
    pub(super) at: Option<At>,
}

impl Sockets {
    /// A bind: of an unnamed `AF_UNIX` socket, the socket is noted. An
    /// abstract name (or the kernel's choice of one) is bound by the stub
    /// itself, on the socket it took, if that socket lives in the run's
    /// network namespace, and refused if not: a socket made outside (the
    /// stdio socketpairs a Node spawner such as srt's CLI passes) would
    /// put the name in the host's abstract namespace, where it could squat
    /// any free name (issue 55, item 4). Made by the stub, so no other
    /// socket can take the checked one's descriptor number meanwhile. True
    /// when the call was answered here; the rest go on (a path is the
    /// file system's to allow, wherever the socket was made).
    pub(super) fn bind(&mut self, listener: BorrowedFd<'_>, notif: &libc::seccomp_notif) -> bool {
        let Ok(sock) = self.take(listener, notif, notif.data.args[0]) else {
            return false;
        };
        let unix = sys::socket_int(sock.as_fd(), libc::SO_DOMAIN) == Ok(libc::AF_UNIX);
        let unnamed = sys::socket_name(sock.as_fd()).is_ok_and(|n| n.len() <= PATH_AT);
        if let (true, true, Ok(cookie), Ok(st)) = (
            unix,
            unnamed,
            sys::socket_cookie(sock.as_fd()),
            fstat(&sock),
        ) {
            self.note_bound(cookie, &st);
        }
        unix && self.abstract_bind(listener, notif, sock.as_fd())
    }

    /// Notes a socket the run binds: by `cookie`, within the map's room.
    fn note_bound(&mut self, cookie: u64, st: &libc::stat) {
        if self.bound.contains_key(&cookie) {
            return;
        }
        if self.bound.len() >= self.bound_room {
            // Closed ones first; then room for as many again (so the looks
            // cost a bind O(1) on average).
            self.forget_closed();
            self.bound_room = (2 * self.bound.len()).clamp(BOUND_FLOOR, BOUND_MAX);
        }
        if self.bound.len() >= BOUND_MAX {
            self.unnoted += 1;
            return;
        }
        self.bound.insert(
            cookie,
            Bound {
                ino: st.st_ino as u32,
                at: None,
            },
        );
    }

    /// [`Sockets::bind`]'s abstract names: true when answered here.
    fn abstract_bind(
        &mut self,
        listener: BorrowedFd<'_>,
        notif: &libc::seccomp_notif,
        sock: BorrowedFd<'_>,
    ) -> bool {
        let args = notif.data.args;
        let len = args[2] as u32 as usize;
        let mut addr = [0u8; super::ADDR_MAX];
        if !(PATH_AT..=super::ADDR_MAX).contains(&len)
            || sys::read_remote_exact(notif.pid as libc::pid_t, args[1], &mut addr[..len]).is_none()
        {
            return false;
        }
        let addr = &addr[..len];
        if len > PATH_AT && addr[PATH_AT] != 0 {
            return false;
        }
        if self.netns.is_none() {
            self.netns = self.diag().and_then(|d| sys::socket_netns_cookie(d).ok());
        }
        // Before Linux 5.14 the kernel cannot say where a socket was made
        // (nor without sock_diag, where every connect is refused anyway):
        // as before.
        let (Some(run), Ok(made_in)) = (self.netns, sys::socket_netns_cookie(sock)) else {
            return false;
        };
        let answer = if made_in == run {
            sys::bind_bytes(sock, addr)
        } else {
            let name = String::from_utf8_lossy(addr.get(PATH_AT + 1..).unwrap_or_default());
            self.note_refused_call(
                notif.pid as libc::pid_t,
                format!("@{name} on a socket of another network namespace"),
                "bind",
            );
            Err(super::REFUSED)
        };
        let _ = sys::notif_answer(listener, notif.id, answer);
        true
    }

    /// Forgets the noted sockets sock_diag no longer has (closed).
    fn forget_closed(&mut self) {
        if self.diag().is_none() {
            return;
        }
        let Some(diag) = self.diag.as_ref().map(|d| d.as_fd()) else {
            return;
        };
        self.bound
            .retain(|&cookie, b| match diag_one(diag, b.ino, cookie) {
                Some(now) => {
                    b.at = now;
                    true
                }
                None => false,
            });
    }

    /// Whether a socket the run bound is bound at `at` now (sock_diag);
    /// sockets gone are forgotten.
    pub(super) fn is_ours(&mut self, at: &At) -> bool {
        let mut found = false;
        if self.bound.is_empty() {
            return false;
        }
        if self.diag().is_none() {
            return false;
        }
        let Some(diag) = self.diag.as_ref().map(|d| d.as_fd()) else {
            return false;
        };
        self.bound.retain(|&cookie, b| {
            if found {
                return true;
            }
            match diag_one(diag, b.ino, cookie) {
                Some(now) => {
                    if let Some(now) = now {
                        found = &now == at;
                        b.at = Some(now);
                    }
                    true
                }
                // The socket is closed: its cookie will not come back.
                None => false,
            }
        });
        found
    }
}
