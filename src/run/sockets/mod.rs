//! The own-sockets policy, in the stub: a command may connect to a Unix
//! socket that a process of its run bound, and to no other.
//!
//! The worker's unix filter (rules.rs, `Set::UnixOwn`), installed with
//! the run's one seccomp listener, sends every `connect` and `bind` here. A `bind` of an unnamed `AF_UNIX` socket
//! notes the socket (its cookie, never reused while the machine runs, and
//! its inode) and goes on. A `connect` is decided on objects, never on
//! bytes the command can change after the check, and made by the stub:
//!
//! - the socket is taken from the process (`pidfd_getfd`), its family read
//!   from it (`SO_DOMAIN`); the address is copied once from its memory;
//! - any family but `AF_UNIX`: the stub connects the taken socket to its
//!   copy of the address (so no other thread can swap the descriptor for
//!   a Unix socket after the check), a blocking one's TCP handshake
//!   finished in the stub's poll;
//! - a pathname: resolved in the command's view (`/proc/PID/root` or
//!   `/proc/PID/cwd`, no magic links) to an `O_PATH` descriptor; allowed
//!   when sock_diag shows a noted socket bound at that very inode; the stub
//!   connects through `/proc/self/fd/N` of that descriptor, so the socket
//!   checked is the socket reached;
//! - an abstract name: allowed when a noted socket holds that name (asked
//!   of sock_diag just before the stub connects to it);
//! - a host socket the user named (`APPLY_SECCOMP_ALLOW_UNIX`): allowed
//!   while its path still leads to the socket found at the run's start.
//!
//! Anything else gets EACCES ([`REFUSED`]), and is counted for the
//! refusal report.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

use nix::errno::Errno;

use crate::filter::rules;
use crate::run::observe::Observer;
use crate::run::report::{Refusals, Who};
use crate::sys;

/// The answer to a connect the policy refuses: `EACCES`, what a socket
/// file without write permission gives, and what Landlock gives where the
/// kernel holds the policy (sockets/kernel.rs). Not `ECONNREFUSED` (issue
/// 55): tools read that as a stale socket and remove it (a sandboxed tmux
/// deleted the host tmux server's socket in a folder it could write).
pub const REFUSED: Errno = Errno::EACCES;

mod bound;
mod connect;
mod diag;
mod fence;
mod identity;
pub mod kernel;
mod pair;
mod start;
mod take;
mod wait;

use bound::Bound;
pub use wait::Pending;

/// `sizeof(struct sockaddr_storage)`: the kernel refuses a longer address.
const ADDR_MAX: usize = 128;
/// `offsetof(struct sockaddr_un, sun_path)`.
const PATH_AT: usize = 2;
/// How many refusals are kept with their details (all are counted).
const KEPT: usize = 16;
/// The most connects answered later at once (issue 67, item 5: each
/// holds a descriptor of the stub's): from [`PENDING_FLOOR`] on, those
/// whose callers have gone (killed, or their call given up) are dropped
/// whenever the list doubles, and a new connect finding it full of live
/// ones is refused (`EAGAIN`, said), never made unwatched.
const PENDING_FLOOR: usize = 64;
const PENDING_MAX: usize = 4096;
/// The stub's soft descriptor limit once a run needs more than it had
/// (take.rs): room for every pending connect, its file, and the run's
/// other descriptors.
const DESCRIPTORS: u64 = 3 * PENDING_MAX as u64;

/// A refused connect, for `SRT_DEBUG` and the refusal report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The program and its pid as the command sees them.
    pub who: Who,
    /// The path, or `@name` for an abstract one.
    pub target: String,
    /// The call refused: `connect`, or `bind` (an abstract name on a
    /// socket made in another network namespace).
    pub call: &'static str,
    /// Why, where the answer is not plain from the target: a socket of
    /// the run the kernel's report cannot prove (identity.rs).
    pub why: Option<String>,
}

/// A host socket the user named: its path, and the inode it led to when
/// the run started.
struct Named {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum At {
    /// The socket file's filesystem and inode.
    File { dev: (u32, u32), ino: u64 },
    /// An abstract name (without its leading NUL).
    Abstract(Vec<u8>),
}

pub struct Sockets {
    /// The host sockets the user named (`APPLY_SECCOMP_ALLOW_UNIX`), as
    /// found when the run started.
    named: Vec<Named>,
    /// Each named socket and what was found there, for `SRT_DEBUG`.
    pub named_notes: Vec<String>,
    /// Connects made to a named socket.
    pub to_named: u64,
    /// `/proc` as the caller sees it, opened before init mounts its own.
    proc_dir: OwnedFd,
    /// The pidfd of the last thread whose descriptor was taken, with its
    /// number (see `take`).
    last: Option<(libc::pid_t, OwnedFd)>,
    /// The stub works in `proc_dir` (from its first connect through it):
    /// it opens no other relative path.
    in_proc: bool,
    /// NETLINK_SOCK_DIAG, in the run's network namespace.
    diag: Option<OwnedFd>,
    /// sock_diag was asked and sees no Unix socket (diag.rs).
    diag_missing: bool,
    connect_nr: i32,
    bind_nr: i32,
    prctl_nr: i32,
    socketpair_nr: i32,
    clone_nr: i32,
    /// The processes under a Landlock fence of their own (fence.rs).
    fences: fence::Fences,
    /// Datagram socketpairs made as sequenced-packet ones (pair.rs).
    pub pairs: u64,
    /// Connects refused because a fence was on the process.
    pub fenced: u64,
    /// The run's network namespace (start.rs, `run_netns`): `None` until
    /// asked, then its cookie, or `None` before Linux 5.14.
    netns: Option<Option<u64>>,
    /// The inherited sockets of another network namespace given a name,
    /// once a bind of another family was let go on (bound.rs): how many.
    pub inherited: Option<usize>,
    /// `PR_SET_DUMPABLE 0` calls answered without being made.
    pub kept_dumpable: u64,
    /// The sockets the run bound, by cookie (a socket's cookie is unique
    /// and never reused), at most [`bound::BOUND_MAX`]; closed ones forgotten at
    /// a connect, and whenever the map reaches `bound_room`.
    bound: std::collections::BTreeMap<u64, Bound>,
    bound_room: usize,
    /// Binds not noted: the map was full of open sockets (a connect to
    /// one is refused).
    pub unnoted: u64,
    pub pending: Vec<Pending>,
    /// The pending list's length at which gone callers are looked for.
    pending_room: usize,
    /// The stub's descriptor limit was raised (take.rs).
    raised: bool,
    /// Connects made for a Unix socket of the run.
    pub allowed: u64,
    /// Connects refused; the first [`KEPT`] of them.
    pub refused: u64,
    pub refusals: Vec<Refusal>,
}

/// What the serve loop does with a notification after [`Sockets::handle`].
pub enum After {
    /// Answered here.
    Done,
    /// A bind noted: the observer (if any) reports it and lets it go on.
    Bind,
    /// Not one of the policy's calls.
    NotMine,
}

impl Sockets {
    /// Serves `notif` if it is a connect or a bind.
    pub fn handle(&mut self, listener: BorrowedFd<'_>, notif: &libc::seccomp_notif) -> After {
        let nr = notif.data.nr;
        if nr == self.bind_nr {
            return match self.bind(listener, notif) {
                true => After::Done,
                false => After::Bind,
            };
        }
        let tid = notif.pid as libc::pid_t;
        if nr == self.prctl_nr {
            let [option, value, ..] = notif.data.args;
            if option == u64::from(rules::PR_SET_DUMPABLE) && value as u32 == 0 {
                // Answered done, not made, so the capability-free stub can
                // still take the process's sockets. It stays as dumpable
                // as every process of the run (Landlock bars ptrace out of
                // the domain, not into it; no core: gpg-agent sets
                // RLIMIT_CORE 0 too).
                self.kept_dumpable += 1;
                let _ = sys::notif_answer(listener, notif.id, Ok(()));
                return After::Done;
            }
            if option == u64::from(rules::PR_SET_CHILD_SUBREAPER) {
                self.fences.subreaper(self.proc_dir.as_raw_fd(), tid);
            }
            let _ = sys::notif_continue(listener, notif.id);
            return After::Done;
        }
        if nr == self.clone_nr {
            // Only with CLONE_PARENT (the filter's condition): refused to
            // a process that may be under a fence (fence.rs).
            if self.fences.may_clone_parent(self.proc_dir.as_raw_fd(), tid) {
                let _ = sys::notif_continue(listener, notif.id);
            } else {
                self.note_refused_call(
                    tid,
                    "CLONE_PARENT: the process keeps a Landlock fence".into(),
                    "clone",
                    None,
                );
                let _ = sys::notif_answer(listener, notif.id, Err(Errno::EPERM));
            }
            return After::Done;
        }
        if nr == rules::LANDLOCK_RESTRICT_SELF as i32 {
            // Noted before it holds: a connect after it is never made.
            self.fences.fence(self.proc_dir.as_raw_fd(), tid);
            let _ = sys::notif_continue(listener, notif.id);
            return After::Done;
        }
        if nr == self.socketpair_nr {
            let made = self.pair(listener, notif);
            let _ = sys::notif_answer(listener, notif.id, made);
            return After::Done;
        }
        if nr != self.connect_nr {
            return After::NotMine;
        }
        if !self.room_to_wait(listener) {
            self.note_refused_call(
                tid,
                format!("any address: {PENDING_MAX} connects of the run are in progress"),
                "connect",
                None,
            );
            let _ = sys::notif_answer(listener, notif.id, Err(Errno::EAGAIN));
            return After::Done;
        }
        match self.connect(listener, notif) {
            Ok(Some(p)) => self.pending.push(p),
            Ok(None) => {}
            Err(e) => {
                let _ = sys::notif_answer(listener, notif.id, Err(e));
            }
        }
        After::Done
    }

    /// Whether a connect may be made that could be answered later: the
    /// pending list has room, once the connects whose callers have gone
    /// are dropped (whenever it has doubled since).
    fn room_to_wait(&mut self, listener: BorrowedFd<'_>) -> bool {
        if self.pending.len() >= self.pending_room {
            self.pending.retain(|p| sys::notif_id_valid(listener, p.id));
            self.pending_room = (2 * self.pending.len()).clamp(PENDING_FLOOR, PENDING_MAX);
        }
        self.pending.len() < PENDING_MAX
    }

    pub(super) fn note_refusal(&mut self, pid: libc::pid_t, target: String) {
        self.note_refused_call(pid, target, "connect", None);
    }

    pub(super) fn note_refused_call(
        &mut self,
        pid: libc::pid_t,
        target: String,
        call: &'static str,
        why: Option<String>,
    ) {
        self.refused += 1;
        if self.refusals.len() < KEPT {
            let who = crate::run::report::who_at(self.proc_dir.as_raw_fd(), pid);
            self.refusals.push(Refusal {
                who,
                target,
                call,
                why,
            });
        }
    }
}

/// One notification: a call today's programs refuse answered and counted
/// (report.rs), the own-sockets policy's calls to it, the rest (and a
/// bind, once noted) to the observer, else let go on.
pub fn notified(
    listener: BorrowedFd<'_>,
    refusals: Option<&mut Refusals>,
    sockets: Option<&mut Sockets>,
    mut obs: Option<&mut Observer>,
) {
    let Ok(notif) = sys::notif_recv(listener) else {
        return;
    };
    // At the first notification (a run that makes none pays nothing): the
    // round trips from here on, this one's answer included, stay on one
    // CPU (sys::notif_sync_wake). The stub is single-threaded and serves
    // one listener.
    static SYNC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SYNC.swap(true, std::sync::atomic::Ordering::Relaxed) {
        sys::notif_sync_wake(listener);
    }
    let mut refusals = refusals;
    if let Some(r) = refusals.as_deref_mut() {
        if r.handle(listener, &notif, obs.as_deref_mut()) {
            return;
        }
    }
    if let Some(s) = sockets {
        if let After::Done = s.handle(listener, &notif) {
            return;
        }
    }
    match obs {
        Some(o) => {
            // Writes the read-only mounts refuse count where observation
            // sees them (who, while the call waits).
            let mut looked = o.look(&notif);
            if let Some(r) = refusals.filter(|_| !looked.read_only.is_empty()) {
                let who = r.who(notif.pid as i32);
                for (name, path) in std::mem::take(&mut looked.read_only) {
                    let path = crate::run::report::quoted(&String::from_utf8_lossy(&path), 108);
                    r.note(format!("{name}({path}: read-only)"), who.clone());
                }
            }
            o.finish(listener, &notif, looked);
        }
        None => {
            let _ = sys::notif_continue(listener, notif.id);
        }
    }
}
