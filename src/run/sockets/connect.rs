//! A connect, decided and made by the stub (sockets.rs): the socket
//! taken, its family read from it, the address copied once; another
//! family's connect made on the taken socket; a Unix one allowed to a
//! socket the run bound (a path resolved in the command's view, its file
//! proven the run's: identity.rs; an abstract name held by one of them)
//! or one the user named, and refused with why otherwise.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat, openat2};
use nix::sys::stat::Mode;

use super::wait::{Made, Pending, Wait, connect_now, later};
use super::{ADDR_MAX, At, PATH_AT, REFUSED, Sockets, diag, identity};
use crate::sys;

impl Sockets {
    /// Decides and makes one connect: `Ok(None)` answered, `Ok(Some)` to
    /// be answered later, `Err` the errno to answer.
    pub(super) fn connect(
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
            // The name is looked up in the namespace of the socket that
            // connects: one made outside the run's (inherited) would reach
            // an outside name the run bound a decoy of (issue 67).
            let at = At::Abstract(name[1..].to_vec());
            if datagram || self.is_ours(&at).is_none() || !self.made_in_run(sock.as_fd())? {
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
        let file = match self.resolve(pid, path, OFlag::O_PATH) {
            Err(Errno::ELOOP | Errno::EXDEV) => return Err(self.refuse_path(pid, path, None)),
            Err(_) if path.starts_with(b"/proc/") => return Err(self.refuse_path(pid, path, None)),
            other => other?,
        };
        let target = identity::File::of(&file)?;
        if !target.socket {
            return Err(Errno::ECONNREFUSED);
        }
        let named = !datagram && self.is_named(target.dev, target.ino);
        if !named {
            if datagram {
                return Err(self.refuse_path(pid, path, None));
            }
            self.own_file(pid, path, &file, &target)?;
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
    /// would lead the stub to its own descriptors), opened `open`
    /// (`O_PATH`, or a folder read for its file system).
    fn resolve(&self, pid: libc::pid_t, path: &[u8], open: OFlag) -> Result<OwnedFd, Errno> {
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
                .flags(open | OFlag::O_CLOEXEC)
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

    /// A connect to `path` refused, with why where a user can act on it.
    fn refuse_path(&mut self, pid: libc::pid_t, path: &[u8], why: Option<String>) -> Errno {
        let target = String::from_utf8_lossy(path).into_owned();
        self.note_refused_call(pid, target, "connect", why);
        REFUSED
    }

    /// A pathname connect's target `file` (open on `fd`), not a named
    /// host socket: allowed only where a socket the run bound is bound at
    /// that very file, as far as the kernel's report can prove it
    /// (identity.rs).
    fn own_file(
        &mut self,
        pid: libc::pid_t,
        path: &[u8],
        fd: &OwnedFd,
        file: &identity::File,
    ) -> Result<(), Errno> {
        let fs = identity::file_system_of(fd);
        let btrfs = identity::is_btrfs(fs.as_ref());
        let at = At::File {
            dev: diag::file_system(fd, file.dev, btrfs, self.proc_dir.as_fd(), pid),
            ino: file.reported_ino(),
        };
        let Some(since) = self.is_ours(&at) else {
            return Err(self.refuse_path(pid, path, None));
        };
        let why =
            identity::ambiguous(fs.as_ref(), file, || self.parent_of(pid, path)).or_else(|| {
                file.born_before(since).then(|| {
                    "the socket file there was made before this run bound its socket: another's"
                        .to_string()
                })
            });
        match why {
            Some(why) => Err(self.refuse_path(pid, path, Some(why))),
            None => Ok(()),
        }
    }

    /// The folder `path` names its last part in, opened to be read (for
    /// the file system's own words: identity.rs).
    fn parent_of(&self, pid: libc::pid_t, path: &[u8]) -> Option<OwnedFd> {
        let parent = match path.iter().rposition(|&b| b == b'/') {
            Some(0) => &b"/"[..],
            Some(at) => &path[..at],
            None => &b""[..],
        };
        self.resolve(pid, parent, OFlag::O_RDONLY | OFlag::O_DIRECTORY)
            .ok()
    }
}
