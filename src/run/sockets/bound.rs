//! The sockets a process of the run bound, for the stub's policy
//! (sockets.rs): each noted at its bind by its cookie (64 bits, never
//! reused while the machine runs), looked up through sock_diag when a
//! connect names a place, and forgotten once closed.

use std::os::fd::{AsFd, BorrowedFd};

use nix::errno::Errno;
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
    /// When its first bind was asked (the coarse real-time clock): its
    /// file, if it has one, was born after (identity.rs).
    pub(super) since: (i64, u32),
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
    /// file system's to allow, wherever the socket was made; another
    /// family's bind the kernel's).
    ///
    /// Nothing goes on unchecked (issue 67, item 5): a socket the stub
    /// cannot take (no descriptor left, the number closed) is answered
    /// with the error, since another thread could put an outside socket
    /// at that number before a bind let go on would run. (The inherited
    /// outside sockets are given a name before the command starts, so a
    /// socket swapped in after the check cannot take one either:
    /// kernel.rs.)
    pub(super) fn bind(&mut self, listener: BorrowedFd<'_>, notif: &libc::seccomp_notif) -> bool {
        let sock = match self.take(listener, notif, notif.data.args[0]) {
            Ok(sock) => sock,
            Err(e) => {
                let answer = match e {
                    Errno::EBADF | Errno::ESRCH => e,
                    _ => {
                        self.note_refused_call(
                            notif.pid as libc::pid_t,
                            format!("the socket: the sandbox could not take it ({})", e.desc()),
                            "bind",
                            None,
                        );
                        super::REFUSED
                    }
                };
                let _ = sys::notif_answer(listener, notif.id, Err(answer));
                return true;
            }
        };
        let unix = sys::socket_int(sock.as_fd(), libc::SO_DOMAIN) == Ok(libc::AF_UNIX);
        if !unix && !self.inherited_named() {
            self.note_refused_call(
                notif.pid as libc::pid_t,
                "the socket: the sandbox could not name the inherited ones first".into(),
                "bind",
                None,
            );
            let _ = sys::notif_answer(listener, notif.id, Err(super::REFUSED));
            return true;
        }
        let unnamed = sys::socket_name(sock.as_fd()).is_ok_and(|n| n.len() <= PATH_AT);
        if let (true, true, Ok(cookie), Ok(st)) = (
            unix,
            unnamed,
            sys::socket_cookie(sock.as_fd()),
            fstat(&sock),
        ) {
            // Still before the bind runs: its file, if any, is born after.
            self.note_bound(cookie, &st, sys::coarse_realtime());
        }
        unix && self.abstract_bind(listener, notif, sock.as_fd())
    }

    /// Another family's bind goes on, and the kernel reads its
    /// descriptor number again then: another thread could put a Unix
    /// socket made outside the run's network namespace there, with an
    /// abstract address, and the name would be taken in that namespace
    /// (issue 67, item 5). So before the first one, each such socket the
    /// run inherited (every one reaches the command through the stub's
    /// table, which keeps them) is given a name of the kernel's choosing,
    /// and takes no second (kernel.rs). Whether that is done.
    fn inherited_named(&mut self) -> bool {
        if self.inherited.is_none() {
            // Before Linux 5.14 no socket says where it was made: an
            // abstract bind is let go on there anyway (abstract_bind).
            self.inherited = match self.run_netns() {
                Ok(Some(run)) => super::kernel::inherited(Some(run), Some(self.proc_dir())).ok(),
                Ok(None) => Some(0),
                Err(_) => None,
            };
        }
        self.inherited.is_some()
    }

    /// Notes a socket the run binds: by `cookie`, within the map's room.
    fn note_bound(&mut self, cookie: u64, st: &libc::stat, since: (i64, u32)) {
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
                since,
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
        // What the kernel would answer for an address it cannot take: the
        // bind is not let go on to read it again.
        let early = if !(PATH_AT..=super::ADDR_MAX).contains(&len) {
            Some(Errno::EINVAL)
        } else if sys::read_remote_exact(notif.pid as libc::pid_t, args[1], &mut addr[..len])
            .is_none()
        {
            Some(Errno::EFAULT)
        } else {
            None
        };
        if let Some(e) = early {
            let _ = sys::notif_answer(listener, notif.id, Err(e));
            return true;
        }
        let addr = &addr[..len];
        if len > PATH_AT && addr[PATH_AT] != 0 {
            return false;
        }
        // Before Linux 5.14 the kernel cannot say where a socket was made:
        // as before, the bind goes on.
        let answer = match self.run_netns() {
            Ok(None) => return false,
            Ok(Some(_)) => match self.made_in_run(sock) {
                Ok(true) => sys::bind_bytes(sock, addr),
                Ok(false) => {
                    let name = String::from_utf8_lossy(addr.get(PATH_AT + 1..).unwrap_or_default());
                    self.note_refused_call(
                        notif.pid as libc::pid_t,
                        format!("@{name} on a socket of another network namespace"),
                        "bind",
                        None,
                    );
                    Err(super::REFUSED)
                }
                Err(e) => Err(e),
            },
            // No descriptor to ask with: refused, never let go on.
            Err(e) => Err(e),
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

    /// Whether a socket the run bound is bound at `at` now (sock_diag):
    /// when its bind was asked, if so. Sockets gone are forgotten.
    pub(super) fn is_ours(&mut self, at: &At) -> Option<(i64, u32)> {
        let mut found = None;
        if self.bound.is_empty() {
            return None;
        }
        self.diag()?;
        let diag = self.diag.as_ref().map(|d| d.as_fd())?;
        self.bound.retain(|&cookie, b| {
            if found.is_some() {
                return true;
            }
            match diag_one(diag, b.ino, cookie) {
                Some(now) => {
                    if let Some(now) = now {
                        found = (&now == at).then_some(b.since);
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
