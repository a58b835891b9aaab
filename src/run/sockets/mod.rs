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

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat, openat2};
use nix::sys::stat::{Mode, SFlag, fstat};

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
mod diag;
mod fence;
pub mod kernel;
mod pair;
mod start;
mod take;
mod wait;

use bound::Bound;
pub use wait::Pending;
use wait::{Made, Wait, connect_now, later};

/// `sizeof(struct sockaddr_storage)`: the kernel refuses a longer address.
const ADDR_MAX: usize = 128;
/// `offsetof(struct sockaddr_un, sun_path)`.
const PATH_AT: usize = 2;
/// How many refusals are kept with their details (all are counted).
const KEPT: usize = 16;

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
    /// The processes under a Landlock fence of their own (fence.rs).
    fences: fence::Fences,
    /// Datagram socketpairs made as sequenced-packet ones (pair.rs).
    pub pairs: u64,
    /// Connects refused because a fence was on the process.
    pub fenced: u64,
    /// The run's network namespace: `SO_NETNS_COOKIE` of the stub's
    /// sock_diag socket (made in it), asked at the first abstract bind;
    /// `None` before, or before Linux 5.14.
    netns: Option<u64>,
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
        match self.connect(listener, notif) {
            Ok(Some(p)) => self.pending.push(p),
            Ok(None) => {}
            Err(e) => {
                let _ = sys::notif_answer(listener, notif.id, Err(e));
            }
        }
        After::Done
    }

    /// Decides and makes one connect: `Ok(None)` answered, `Ok(Some)` to
    /// be answered later, `Err` the errno to answer.
    fn connect(
        &mut self,
        listener: BorrowedFd<'_>,
        notif: &libc::seccomp_notif,
    ) -> Result<Option<Pending>, Errno> {
        let args = notif.data.args;
        let pid = notif.pid as libc::pid_t;
        if self.fences.holds(self.proc_dir.as_raw_fd(), pid) {
            self.fenced += 1;
            self.note_refusal(
                pid,
                "any address: the process keeps a Landlock fence".into(),
            );
            return Err(REFUSED);
        }
        let sock = self.take(listener, notif, args[0]).map_err(|e| match e {
            Errno::ESRCH => Errno::ESRCH,
            _ => Errno::EBADF,
        })?;
        let family = sys::socket_int(sock.as_fd(), libc::SO_DOMAIN)?;
        let len = args[2] as u32 as i32;
        let len = usize::try_from(len).map_err(|_| Errno::EINVAL)?;
        if len > ADDR_MAX {
            return Err(Errno::EINVAL);
        }
        let mut addr = [0u8; ADDR_MAX];
        sys::read_remote_exact(pid, args[1], &mut addr[..len]).ok_or(Errno::EFAULT)?;
        let addr = &addr[..len];
        if family != libc::AF_UNIX {
            return Ok(later(
                notif.id,
                connect_now(listener, notif.id, sock, addr, true)?,
            ));
        }
        if addr.len() <= PATH_AT || u16::from_ne_bytes([addr[0], addr[1]]) != libc::AF_UNIX as u16 {
            return Err(Errno::EINVAL);
        }
        let name = &addr[PATH_AT..];
        // A datagram socket (one from outside: the filter refuses making
        // them) would reach journald and syslog.
        let datagram = sys::socket_int(sock.as_fd(), libc::SO_TYPE) == Ok(libc::SOCK_DGRAM);
        if name[0] == 0 {
            let at = At::Abstract(name[1..].to_vec());
            if datagram || !self.is_ours(&at) {
                return Err(self.refuse(pid, &at));
            }
            self.allowed += 1;
            return Ok(later(
                notif.id,
                connect_now(listener, notif.id, sock, addr, false)?,
            ));
        }
        let path = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        // A magic link (`/proc/PID/fd/N`) is refused: the stub follows
        // none, and what it leads to was never decided on.
        // procfs holds no socket file: a path into it reaches one only
        // through a magic link (`/proc/self` itself is one the stub, in
        // another PID namespace, cannot follow for the command).
        let file = match self.resolve(pid, path) {
            Err(Errno::ELOOP | Errno::EXDEV) => return Err(self.refuse_path(pid, path)),
            Err(_) if path.starts_with(b"/proc/") => return Err(self.refuse_path(pid, path)),
            other => other?,
        };
        let st = fstat(&file)?;
        if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFSOCK {
            return Err(Errno::ECONNREFUSED);
        }
        let named = !datagram && self.is_named(&st);
        if !named {
            // sock_diag reports the low 32 bits of the inode number: a
            // socket file whose number needs more (XFS above ~2 TiB, big
            // NFS exports) cannot be told from one of the run's whose low
            // bits are the same, so no decision is made on it: refused
            // (issue 55: a command bound sockets until one matched a host
            // socket's low bits, then reached the host socket).
            if datagram || st.st_ino > u64::from(u32::MAX) {
                return Err(self.refuse_path(pid, path));
            }
            let at = At::File {
                dev: diag::file_system(&file, &st, self.proc_dir.as_fd(), pid),
                ino: st.st_ino,
            };
            if !self.is_ours(&at) {
                return Err(self.refuse_path(pid, path));
            }
        }

        // Through /proc/self/fd of the descriptor checked: the socket file
        // connected to is the one decided on, whatever the path now names.
        let through = format!("self/fd/{}", file.as_raw_fd());
        let mut un = Vec::with_capacity(PATH_AT + through.len() + 1);
        un.extend_from_slice(&(libc::AF_UNIX as u16).to_ne_bytes());
        un.extend_from_slice(through.as_bytes());
        un.push(0);
        if named {
            self.to_named += 1;
        } else {
            self.allowed += 1;
        }
        let made = self.through_proc(listener, notif.id, sock, &un)?;
        Ok(match made {
            Made::Later(sock, Wait::Backlog { addr, .. }) => Some(Pending {
                id: notif.id,
                sock,
                wait: Wait::Backlog {
                    addr,
                    _file: Some(file),
                },
            }),
            other => later(notif.id, other),
        })
    }

    /// `path` as the process `pid` would find it: from its root or its
    /// working folder, no magic link followed (a `/proc/PID/fd` link
    /// would lead the stub to its own descriptors), `O_PATH`.
    fn resolve(&self, pid: libc::pid_t, path: &[u8]) -> Result<OwnedFd, Errno> {
        let (from, rel, how) = if path.starts_with(b"/") {
            ("root", &path[1..], ResolveFlag::RESOLVE_IN_ROOT)
        } else {
            ("cwd", path, ResolveFlag::empty())
        };
        let base = openat(
            self.proc_dir.as_fd(),
            format!("{pid}/{from}").as_str(),
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let rel = if rel.is_empty() { &b"."[..] } else { rel };
        openat2(
            base.as_fd(),
            std::ffi::OsStr::from_bytes(rel),
            OpenHow::new()
                .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
                .resolve(how | ResolveFlag::RESOLVE_NO_MAGICLINKS),
        )
    }

    fn refuse(&mut self, pid: libc::pid_t, at: &At) -> Errno {
        let target = match at {
            At::Abstract(name) => format!("@{}", String::from_utf8_lossy(name)),
            At::File { .. } => String::new(),
        };
        self.note_refusal(pid, target);
        REFUSED
    }

    fn refuse_path(&mut self, pid: libc::pid_t, path: &[u8]) -> Errno {
        self.note_refusal(pid, String::from_utf8_lossy(path).into_owned());
        REFUSED
    }

    fn note_refusal(&mut self, pid: libc::pid_t, target: String) {
        self.note_refused_call(pid, target, "connect");
    }

    fn note_refused_call(&mut self, pid: libc::pid_t, target: String, call: &'static str) {
        self.refused += 1;
        if self.refusals.len() < KEPT {
            let who = crate::run::report::who_at(self.proc_dir.as_raw_fd(), pid);
            self.refusals.push(Refusal { who, target, call });
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
