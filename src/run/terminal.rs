//! The caller's terminal, for a command in a process group of its own.
//!
//! The command leads a process group of its own (worker.rs), so that what
//! it signals or renices by group (`kill(0, ...)`, `killpg`,
//! `setpriority(PRIO_PGRP, 0, ...)`) reaches no process outside the
//! sandbox: not the stub, not the caller, not the caller's other children.
//! On a terminal, that group must then be handled as a shell handles a
//! job, or the command could not read the terminal (SIGTTIN) and Ctrl-C
//! would not reach it:
//!
//! - at the start, if the stub's group is the terminal's foreground, the
//!   worker makes the command's group the foreground just before its exec;
//! - when the command stops (Ctrl-Z, or SIGTTIN from a read in the
//!   background), the stub takes the terminal back and stops itself with
//!   the same signal, so the caller's shell sees its job stop; when
//!   continued, it gives the terminal back if it is in the foreground
//!   again and continues the command's group;
//! - at the end, it takes the terminal back unless another live group
//!   holds it.
//!
//! With no controlling terminal (bubblewrap's `--new-session`, srt) none
//! of this applies: one failed open of `/dev/tty`.

use std::cell::Cell;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use nix::fcntl::{OFlag, openat};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
use nix::sys::stat::Mode;
use nix::unistd::getpgrp;

use crate::sys;

/// The controlling terminal of the stub.
pub struct Terminal {
    fd: OwnedFd,
    /// The stub's own process group.
    own: libc::pid_t,
    /// The caller's `/proc`, opened before init mounts the new PID
    /// namespace's over it in the mount namespace the stub shares: where
    /// the stub finds the command's group in its own numbering.
    proc_dir: Option<OwnedFd>,
    /// The terminal was given to the command's side (by the worker at the
    /// start, by the stub after a stop): only then is it taken back.
    given: Cell<bool>,
}

impl Terminal {
    /// The controlling terminal, when this process has one.
    pub fn open() -> Option<Terminal> {
        let open = |mode| sys::open_path(c"/dev/tty", mode | libc::O_NOCTTY);
        // A terminal another user owns may be readable only; no terminal
        // at all is ENXIO.
        let fd = match open(libc::O_RDWR) {
            Err(nix::errno::Errno::EACCES) => open(libc::O_RDONLY),
            other => other,
        }
        .ok()?;
        Some(Terminal {
            fd,
            own: getpgrp().as_raw(),
            proc_dir: sys::open_path(c"/proc", libc::O_PATH | libc::O_DIRECTORY).ok(),
            given: Cell::new(false),
        })
    }

    /// The first child of `pid` (init's: the worker, which leads the
    /// command's group), as the stub numbers processes.
    pub fn first_child(&self, pid: libc::pid_t) -> Option<libc::pid_t> {
        use std::io::Read;
        let fd = openat(
            self.proc_dir.as_ref()?,
            format!("{pid}/task/{pid}/children").as_str(),
            OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let mut text = String::new();
        std::fs::File::from(fd).read_to_string(&mut text).ok()?;
        text.split_whitespace().next()?.parse().ok()
    }

    /// Close-on-exec: the worker uses it, the command never holds it.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The stub's group is the terminal's foreground.
    pub fn ours_in_front(&self) -> bool {
        sys::foreground(self.fd()) == Ok(self.own)
    }

    /// The terminal to hand to the command's group at its start (the
    /// worker does it), if the stub's group is in front.
    pub fn to_hand_over(&self) -> Option<RawFd> {
        let front = self.ours_in_front();
        self.given.set(front);
        front.then(|| self.fd())
    }

    /// Makes `pgid` the foreground, SIGTTOU blocked as a shell does (the
    /// stub may be in the background when it asks).
    fn give_to(&self, pgid: libc::pid_t) {
        let mut ttou = SigSet::empty();
        ttou.add(Signal::SIGTTOU);
        let mut before = SigSet::empty();
        if sigprocmask(SigmaskHow::SIG_BLOCK, Some(&ttou), Some(&mut before)).is_ok() {
            let _ = sys::raw_set_foreground(self.fd(), pgid);
            let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&before), None);
        }
    }

    /// The command (whose group is `command`, when known) stopped with
    /// `sig`: take the terminal back from the group holding it, stop the
    /// stub the same way, and when continued, give the terminal back to
    /// that group (or the command's) if the stub is in front again, and
    /// continue both. A group that is not the command's (`ours` says) is
    /// neither given the terminal nor continued: the command may have
    /// made another job of the caller's the foreground, and the stub
    /// never signals a group outside the command's tree.
    pub fn command_stopped(
        &self,
        sig: libc::c_int,
        command: Option<libc::pid_t>,
        ours: &dyn Fn(libc::pid_t) -> bool,
    ) {
        let front = sys::foreground(self.fd())
            .ok()
            .filter(|&g| self.given.get() && g > 0 && g != self.own);
        // Taken back whoever holds it; given back and continued only if
        // it is the command's.
        let held = front.filter(|&g| Some(g) == command || ours(g));
        if front.is_some() {
            self.give_to(self.own);
        }
        self.given.set(false);
        // Here the stub stops, until the caller's shell continues it.
        let _ = sys::raw_kill(std::process::id() as libc::pid_t, sig);
        if self.ours_in_front() {
            if let Some(g) = held.or(command) {
                self.give_to(g);
                self.given.set(true);
            }
        }
        for g in [command, held.filter(|&h| Some(h) != command)]
            .into_iter()
            .flatten()
        {
            let _ = sys::raw_kill(-g, libc::SIGCONT);
        }
    }

    /// The end of the run: the terminal comes back to the stub's group,
    /// unless a live group other than the command's holds it (the user
    /// moved this job to the background and another to the front).
    pub fn take_back(&self) {
        if !self.given.get() {
            return;
        }
        match sys::foreground(self.fd()) {
            Ok(g) if g == self.own => {}
            Ok(g) if g > 0 && sys::raw_kill(-g, 0) == Err(nix::errno::Errno::ESRCH) => {
                self.give_to(self.own)
            }
            // 0: a group this namespace cannot see.
            Ok(0) => self.give_to(self.own),
            _ => {}
        }
    }
}
