//! The own-sockets policy's start (sockets.rs): the handle it needs
//! before init mounts its `/proc`, the host sockets the user named as
//! found then, sock_diag at its first use, and the `SRT_DEBUG` line.

use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use nix::errno::Errno;

use super::{Named, Sockets};
use crate::filter::{self, rules};
use crate::sys;

impl Sockets {
    /// The policy's state for a run (`own`: not `APPLY_SECCOMP_UNIX=deny`),
    /// or `None` and the `SRT_DEBUG` line saying why there is none (then
    /// the worker refuses every AF_UNIX socket: never less than asked).
    pub fn start(own: bool, named: &[PathBuf]) -> (Option<Sockets>, String) {
        if !own {
            let mut note = String::from("unix sockets: none (APPLY_SECCOMP_UNIX=deny)");
            if !named.is_empty() {
                note.push_str("; the sockets APPLY_SECCOMP_ALLOW_UNIX names cannot be reached");
            }
            return (None, note);
        }
        match Sockets::open(named) {
            Ok(s) => (Some(s), String::new()),
            Err(why) => (
                None,
                format!("unix sockets: none (the own-sockets policy could not start: {why})"),
            ),
        }
    }

    /// The `SRT_DEBUG` line: what the policy decided.
    pub fn note(&self) -> String {
        let mut note = format!(
            "unix sockets: own (stream and seqpacket; a connect reaches only a socket this run \
             bound{}): {} connect(s) to the run's sockets made, {} to named ones, {} refused",
            if self.named_notes.is_empty() {
                String::new()
            } else {
                format!(", or one named: {}", self.named_notes.join(", "))
            },
            self.allowed,
            self.to_named,
            self.refused
        );
        if self.pairs > 0 {
            note.push_str(&format!(
                "; {} datagram socketpair(s) made as sequenced-packet ones (their sends reach \
                 the other end only)",
                self.pairs
            ));
        }
        if self.fenced > 0 {
            note.push_str(&format!(
                "; {} connect(s) refused to processes under their own Landlock fence (the \
                 helper's outer process could make them only outside it)",
                self.fenced
            ));
        }
        if self.diag_missing {
            note.push_str(&format!("; {}", crate::run::unix_diag::DIAG_MISSING));
        }
        if let Some(n) = self.inherited.filter(|&n| n > 0) {
            note.push_str(&format!(
                "; {n} inherited socket(s) of another network namespace given a name of the \
                 kernel's choosing at the first bind of another family (no command can bind one \
                 to a name there)"
            ));
        }
        if self.kept_dumpable > 0 {
            note.push_str(&format!(
                "; {} prctl(PR_SET_DUMPABLE, 0) answered without being made (the \
                 capability-free stub could otherwise take none of those processes' sockets)",
                self.kept_dumpable
            ));
        }
        if self.unnoted > 0 {
            note.push_str(&format!(
                "; {} bind(s) not noted: {} bound sockets were open at once (connects to those \
                 refused)",
                self.unnoted,
                super::bound::BOUND_MAX
            ));
        }
        for r in &self.refusals {
            note.push_str(&format!(
                "; refused: {} (pid {}) to {}",
                r.who.comm,
                r.who.pid.map_or("?".to_string(), |p| p.to_string()),
                crate::run::report::printable(&r.target, 64)
            ));
            if let Some(why) = &r.why {
                note.push_str(&format!(" ({why})"));
            }
        }
        note
    }

    /// The handle the policy needs, taken before init mounts its `/proc`;
    /// the rest comes at the first call that needs it (a run that makes
    /// no connect pays for no more: each system call costs a few
    /// microseconds here).
    fn open(named: &[PathBuf]) -> Result<Sockets, String> {
        // pidfd_getfd (Linux 5.6), which every connect needs: EBADF for
        // no pidfd where the kernel has it, ENOSYS where it has not. A
        // kernel that answered the run's Landlock question (kept: no call
        // here) with anything but ENOSYS is Linux 5.13 or later, and has
        // it: no probe.
        if sys::landlock_abi() == Err(Errno::ENOSYS) && sys::pidfd_getfd_probe() == Errno::ENOSYS {
            return Err("pidfd_getfd: this kernel has none (Linux 5.6)".into());
        }
        let proc_dir = sys::open_at(
            libc::AT_FDCWD,
            c"/proc",
            libc::O_PATH | libc::O_DIRECTORY,
            0,
        )
        .map(sys::owned)
        .map_err(|e| format!("/proc: {}", e.desc()))?;
        let (connect_nr, bind_nr) = rules::connect_bind(filter::ARCH);
        // Each named path as found now, never one a command could have
        // swapped (named.rs).
        let (found, named_notes) = crate::run::named_sockets::resolve(named);
        let allowed_named = found
            .into_iter()
            .map(|f| Named {
                path: f.path,
                dev: f.dev,
                ino: f.ino,
            })
            .collect();
        Ok(Sockets {
            named: allowed_named,
            named_notes,
            proc_dir,
            last: None,
            in_proc: false,
            diag: None,
            diag_missing: false,
            connect_nr: connect_nr as i32,
            bind_nr: bind_nr as i32,
            prctl_nr: rules::numbers(filter::ARCH).prctl as i32,
            socketpair_nr: rules::numbers(filter::ARCH).socketpair as i32,
            clone_nr: rules::numbers(filter::ARCH).clone as i32,
            fences: Default::default(),
            pairs: 0,
            fenced: 0,
            netns: None,
            inherited: None,
            kept_dumpable: 0,
            bound: std::collections::BTreeMap::new(),
            bound_room: super::bound::BOUND_FLOOR,
            unnoted: 0,
            pending: Vec::new(),
            pending_room: super::PENDING_FLOOR,
            raised: false,
            allowed: 0,
            refused: 0,
            refusals: Vec::new(),
            to_named: 0,
        })
    }

    /// `/proc` as the caller sees it, held for the run.
    pub fn proc_dir(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.proc_dir)
    }

    /// Whether the socket file (`dev`, `ino`) is one the user named, and
    /// its path still leads there.
    pub(super) fn is_named(&self, dev: u64, ino: u64) -> bool {
        self.named.iter().any(|n| {
            n.dev == dev
                && n.ino == ino
                && std::fs::metadata(&n.path).is_ok_and(|m| m.dev() == n.dev && m.ino() == n.ino)
        })
    }

    /// NETLINK_SOCK_DIAG, opened at its first use, if it sees Unix
    /// sockets (diag.rs); if not, said on the `SRT_DEBUG` line.
    ///
    /// A failure of the moment (no descriptor left: the limit is raised
    /// once) is not kept: the caller refuses, and the next asks again.
    pub(super) fn diag(&mut self) -> Option<BorrowedFd<'_>> {
        if self.diag.is_none() && !self.diag_missing {
            let opened = match crate::run::unix_diag::try_unix_diag() {
                Err(Some(Errno::EMFILE)) if self.more_descriptors() => {
                    crate::run::unix_diag::try_unix_diag()
                }
                other => other,
            };
            match opened {
                Ok(d) => self.diag = Some(d),
                Err(None) => self.diag_missing = true,
                Err(Some(_)) => {}
            }
        }
        self.diag.as_ref().map(|d| d.as_fd())
    }

    /// The run's network namespace: `SO_NETNS_COOKIE` of a socket the
    /// stub makes (it is in the run's), asked once; `Ok(None)` before
    /// Linux 5.14, which has no cookie. A failure of the moment (no
    /// descriptor left) is not kept: the caller refuses.
    pub(super) fn run_netns(&mut self) -> Result<Option<u64>, Errno> {
        if let Some(known) = self.netns {
            return Ok(known);
        }
        let make = || {
            nix::sys::socket::socket(
                nix::sys::socket::AddressFamily::Inet,
                nix::sys::socket::SockType::Datagram,
                nix::sys::socket::SockFlag::SOCK_CLOEXEC,
                None,
            )
        };
        let probe = match make() {
            Err(Errno::EMFILE) if self.more_descriptors() => make(),
            other => other,
        }?;
        let known = match sys::socket_netns_cookie(probe.as_fd()) {
            Ok(cookie) => Some(cookie),
            Err(Errno::ENOPROTOOPT) => None,
            Err(e) => return Err(e),
        };
        self.netns = Some(known);
        Ok(known)
    }

    /// Whether `sock` was made in the run's network namespace (an
    /// abstract name is looked up in the namespace of the socket that
    /// binds or connects). Before Linux 5.14, which cannot say, yes.
    pub(super) fn made_in_run(&mut self, sock: BorrowedFd<'_>) -> Result<bool, Errno> {
        match self.run_netns()? {
            Some(run) => Ok(sys::socket_netns_cookie(sock)? == run),
            None => Ok(true),
        }
    }
}
