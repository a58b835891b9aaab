//! What the outer stub, init and the worker share, below all three: the
//! plan of a run (prepared by the stub before init starts, `'static`), the
//! way in, and the control channel with its 8-byte reports. supervise.rs
//! builds the tree from a `Plan`; worker.rs carries it out; neither needs
//! the other's types.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

use nix::errno::Errno;

use crate::error::{EXIT_SETUP, Step};
use crate::filter::Filters;
use crate::sys::{self, ExecArgs};

/// What the inner processes need, prepared before init starts. init
/// runs in the stub's memory while the stub goes on (sys::spawn_shared),
/// so all of it is `'static`: the command line is leaked by run/mod.rs, the
/// filters are embedded.
#[derive(Clone, Copy)]
pub struct Plan {
    pub exec: &'static ExecArgs,
    pub filters: Filters,
    pub way: Way,
    /// The caller's terminal, whose foreground the worker gives the
    /// command's group (terminal.rs); `None`: no terminal, or the stub's
    /// group is not in front.
    pub tty: Option<RawFd>,
    /// The stub has a controlling terminal: the command's stops are passed
    /// up (init reports them; the capability-free stub sees them itself).
    pub job_control: bool,
    /// init outlives the stub (under bubblewrap, namespace way): once the
    /// command's tree is gone it reports the command's status
    /// ([`Kind::Exited`]) instead of exiting with it, and holds what the
    /// run's end releases (the mount namespace, the shared memory, the
    /// mount guard's inotify instance) until the stub's exit kills it
    /// (PDEATHSIG). The stub, and bubblewrap's caller, then wait for none
    /// of that (supervise/mod.rs).
    pub init_outlives_stub: bool,
    /// Write observation is on (`SRT_OBSERVE_SOCK`): its calls go to the
    /// listener too.
    pub observed: bool,
    /// The run's task cap (tasks.rs): init writes `pid_max` where the
    /// cap is kept that way, and counts what the command left.
    pub tasks: Option<crate::run::tasks::Cap>,
}

/// The way in, as the process tree sees it.
#[derive(Clone, Copy, Debug)]
pub enum Way {
    /// init in new PID and mount namespaces, then the worker.
    Namespaces {
        /// Write 0 to `max_user_namespaces` (the helper made the user
        /// namespace and nesting is not allowed).
        limit_userns: bool,
        /// The Landlock domain of the socket policy, where the kernel holds
        /// it (sockets/kernel.rs): a ruleset the worker joins, held by the
        /// stub for the run (close-on-exec).
        sockets: Option<RawFd>,
    },
    /// No namespaces: the worker straight from the stub, joining the
    /// Landlock domain of `ruleset` (a descriptor the stub holds for the
    /// run; close-on-exec).
    CapabilityFree { ruleset: RawFd },
}

/// How a child of the stub sees whether the stub is still alive. The
/// file table is shared (no end of a channel closes with the stub), so:
/// init, in a PID namespace of its own (`getppid` is 0 there), reads a
/// word of the memory it shares with the stub, which the kernel clears at
/// the stub's exit; the capability-free worker compares `getppid` with
/// the stub's PID.
#[derive(Clone, Copy)]
pub enum Stub {
    /// 0 once the stub has exited (sys::clear_on_exit).
    Alive(&'static AtomicU32),
    Pid(libc::pid_t),
    /// Not known yet (before the way in picks one of the above).
    Unknown,
}

impl Stub {
    /// The word the kernel clears when this process (the stub) exits, for
    /// init: one call, no descriptor (a pidfd of the stub, polled by
    /// init, cost 3.7 us a host run).
    pub fn for_init() -> Stub {
        static ALIVE: AtomicU32 = AtomicU32::new(0);
        sys::clear_on_exit(&ALIVE);
        Stub::Alive(&ALIVE)
    }
}

/// How serious a report from an inner process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The step failed and the process exited: the command did not run.
    Fatal = 1,
    /// The step failed and the run went on (documented as non-fatal).
    Warning = 2,
    /// A tolerated failure, shown with `SRT_DEBUG`.
    Debug = 3,
    /// Not a failure: the command stopped, with the signal in `errno`
    /// (init to the stub, with job control only).
    Stopped = 4,
    /// Not a failure: the command's tree is gone, its status in `errno`
    /// (init to the stub, where init outlives the stub).
    Exited = 5,
    /// Not a failure: the worker's seccomp listener, at the descriptor
    /// number in `errno` in the file table it shares with the stub, or
    /// the negated errno of its install (the worker then installed
    /// today's programs).
    Listener = 6,
    /// Not a failure: the command met the run's task cap (tasks.rs), the
    /// processes left at its end in `errno` (init to the stub).
    TaskCap = 7,
}

/// One report from an inner process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    pub kind: Kind,
    pub step: Step,
    pub errno: i32,
}

impl Report {
    pub const SIZE: usize = 8;

    pub fn encode(self) -> [u8; Report::SIZE] {
        let e = self.errno.to_le_bytes();
        [
            self.kind as u8,
            self.step as u8,
            0,
            0,
            e[0],
            e[1],
            e[2],
            e[3],
        ]
    }

    /// The reports of one read of the control channel: a pipe, whose
    /// 8-byte writes each arrive whole, so a read returns some number of
    /// them; anything unknown is skipped.
    pub fn decode_all(b: &[u8]) -> impl Iterator<Item = Report> + '_ {
        b.chunks_exact(Report::SIZE).filter_map(Report::decode)
    }

    pub fn decode(b: &[u8]) -> Option<Report> {
        if b.len() != Report::SIZE {
            return None;
        }
        let kind = match b[0] {
            1 => Kind::Fatal,
            2 => Kind::Warning,
            3 => Kind::Debug,
            4 => Kind::Stopped,
            5 => Kind::Exited,
            6 => Kind::Listener,
            7 => Kind::TaskCap,
            _ => return None,
        };
        Some(Report {
            kind,
            step: Step::from_u8(b[1])?,
            errno: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        })
    }
}

/// Whether the worker installs the run's listener, and how the stub is
/// handed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listener {
    /// No listener wanted.
    None,
    /// Put in the stub's epoll instance, this number, which the stub's
    /// poll watches: no wake-up for the handover (a report if that fails).
    Epoll(RawFd),
    /// Reported on the control channel (the stub has no epoll instance).
    Reported,
}

/// The write end of the control channel (a pipe), as seen by init and
/// the worker (a descriptor number: they share the stub's memory and its
/// file table, which the worker's exec leaves for a copy of its own
/// without the close-on-exec descriptors).
#[derive(Clone, Copy)]
pub struct Channel(RawFd);

impl Channel {
    /// The write end of the channel, as a descriptor number.
    pub fn new(fd: RawFd) -> Channel {
        Channel(fd)
    }

    /// Sends a report; whether it went (a failure is otherwise ignored:
    /// the exit code still tells the stub something went wrong).
    fn send(self, report: Report) -> bool {
        sys::raw_write(self.0, &report.encode()).is_ok()
    }

    /// Reports how a step went.
    pub fn report(self, kind: Kind, step: Step, errno: Errno) {
        let _ = self.send(Report {
            kind,
            step,
            errno: errno as i32,
        });
    }

    /// Reports the command's status (code, or 128+signal), once its whole
    /// tree is gone; whether the report went.
    pub fn exited(self, status: i32) -> bool {
        self.send(Report {
            kind: Kind::Exited,
            step: Step::Wait,
            errno: status,
        })
    }

    /// Reports that the command met the run's task cap, with the
    /// processes it left (not an errno: `Errno` would drop most counts).
    pub fn task_cap(self, left: u32) {
        let _ = self.send(Report {
            kind: Kind::TaskCap,
            step: Step::TaskCap,
            errno: i32::try_from(left).unwrap_or(i32::MAX),
        });
    }

    /// Hands the stub the run's listener (it is the stub's from now: the
    /// table is shared, and the exec drops the command's copy): into the
    /// stub's epoll instance where it has one, which wakes no one, else
    /// in a report saying where it is; or reports why there is none.
    pub fn listener(self, listener: Result<std::os::fd::OwnedFd, Errno>, to: Listener) {
        use std::os::fd::{AsRawFd, IntoRawFd};
        if let (Ok(fd), Listener::Epoll(epoll)) = (&listener, to) {
            if sys::epoll_add(epoll, fd.as_raw_fd()).is_ok() {
                let _ = listener.map(IntoRawFd::into_raw_fd);
                return;
            }
        }
        let errno = match listener {
            Ok(fd) => fd.into_raw_fd(),
            Err(e) => -(e as i32),
        };
        let _ = self.send(Report {
            kind: Kind::Listener,
            step: Step::FilterUnix,
            errno,
        });
    }

    /// Reports a fatal failure and leaves with the setup exit code.
    pub fn fail(self, step: Step, errno: Errno) -> ! {
        self.report(Kind::Fatal, step, errno);
        sys::exit_now(EXIT_SETUP)
    }

    /// First steps of a child of the stub (init, or the capability-free
    /// worker): asks for SIGKILL when the stub dies, and checks the stub
    /// did not die before that took effect. Raw calls only.
    pub fn arm_parent_death(self, stub: Stub) {
        if let Err(e) = sys::set_pdeathsig(libc::SIGKILL) {
            self.fail(Step::ParentDeathSignal, e);
        }
        let gone = match stub {
            Stub::Alive(word) => Ok(word.load(Ordering::Acquire) == 0),
            Stub::Pid(pid) => Ok(sys::raw_getppid() != pid),
            Stub::Unknown => Ok(false),
        };
        match gone {
            Ok(false) => {}
            Ok(true) => sys::exit_now(EXIT_SETUP),
            Err(e) => self.fail(Step::ParentDeathSignal, e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip() {
        let r = Report {
            kind: Kind::Warning,
            step: Step::LimitUserns,
            errno: libc::EACCES,
        };
        assert_eq!(Report::decode(&r.encode()), Some(r));
        let status = Report {
            kind: Kind::Exited,
            step: Step::Wait,
            errno: 137,
        };
        assert_eq!(Report::decode(&status.encode()), Some(status));
        assert_eq!(Report::decode(&[9, 1, 0, 0, 0, 0, 0, 0]), None);
        assert_eq!(Report::decode(&[1, 1, 0]), None);
        // Two reports written back to back come out of one read together.
        let mut both = r.encode().to_vec();
        both.extend(status.encode());
        assert_eq!(
            Report::decode_all(&both).collect::<Vec<_>>(),
            vec![r, status]
        );
    }
}
