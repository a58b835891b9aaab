//! Refused calls, counted and said (issue 44): one line an agent reads, so
//! a policy denial is never taken for a bug.
//!
//! Where refusals are reported, the worker's one listener program holds
//! every rule of the run's filters, each answered with
//! SECCOMP_RET_USER_NOTIF (rules.rs, `Reported`), and the stub serves it.
//! A notified call is run through today's programs (the ones installed
//! with `APPLY_SECCOMP_REFUSALS=off`, by the kernel's own rule: the
//! strictest answer of the chain, the newest program first on a tie);
//! where they refuse it, the stub answers with their errno, so the command
//! sees no difference, and counts the call with its deciding argument, the
//! program's name and its pid as the command sees it. What they do not
//! refuse (a connect, a bind, an observed write) goes on to sockets.rs and
//! observe.rs as before.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

use nix::errno::Errno;

use crate::filter::interp::{Decoded, SeccompData, run_chain};
use crate::filter::rules::{EPERM, SECCOMP_RET_ACTION_FULL, SECCOMP_RET_ERRNO};
use crate::filter::{self, Program, rules};
use crate::json;
use crate::run::observe::Observer;
use crate::sys;

mod describe;

use describe::{describe, syscall_of};
pub use describe::{printable, quoted, socket_call, who_at};

/// Calls kept apart by what and who; the rest only counted.
const KEPT: usize = 32;
/// Of them, how many the line shows when the command failed (all with
/// `SRT_DEBUG`).
const SHOWN: usize = 12;
/// A program's name, as the kernel keeps it (`TASK_COMM_LEN` - 1).
const COMM_MAX: usize = 15;
/// An argument shown (a path: `sun_path` holds 108 bytes), at most.
const ARG_MAX: usize = 108;

/// One kind of refused call by one program.
struct Group {
    call: String,
    comm: String,
    pid: Option<i32>,
    count: u64,
}

/// Who made a call: its name (`comm`, made printable) and its pid as the
/// command sees it (the last of `NSpid`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Who {
    pub comm: String,
    /// `None`: the process was gone before it could be asked.
    pub pid: Option<i32>,
}

pub struct Refusals {
    /// Today's programs, in the order installed; decoded at the first
    /// notification (a run that makes none pays nothing).
    chain: Vec<Program>,
    decoded: Vec<Decoded>,
    /// `/proc` as the caller sees it, opened before init mounts its own:
    /// the own-sockets policy's, or this one's.
    proc_dir: RawFd,
    _proc_dir: Option<OwnedFd>,
    /// Every refused call.
    pub count: u64,
    groups: Vec<Group>,
    /// Every refused call by its name (`socket`, `unshare`, ...): a few
    /// dozen names at most.
    by_name: Vec<(String, u64)>,
    /// The last pid asked about, and its pid as the command sees it (its
    /// name is read for each call: it changes).
    last: Option<(i32, Option<i32>)>,
}

impl Refusals {
    /// The refusals of a run whose listener program is `reported`, with
    /// `/proc` as the caller sees it (`proc_dir`, held by the caller for
    /// the run; else opened here). An error where it cannot be opened
    /// (then today's programs are installed: supervise/).
    pub fn start(reported: rules::Reported, proc_dir: Option<RawFd>) -> Result<Refusals, String> {
        let own = match proc_dir {
            Some(_) => None,
            None => Some(
                sys::open_at(
                    libc::AT_FDCWD,
                    c"/proc",
                    libc::O_PATH | libc::O_DIRECTORY,
                    0,
                )
                .map(sys::owned)
                .map_err(|e| format!("/proc: {}", e.desc()))?,
            ),
        };
        let mut chain = Vec::new();
        for set in reported.today() {
            chain.push(program(set)?);
        }
        Ok(Refusals {
            chain,
            decoded: Vec::new(),
            proc_dir: proc_dir
                .or(own.as_ref().map(|d| d.as_raw_fd()))
                .unwrap_or(-1),
            _proc_dir: own,
            count: 0,
            groups: Vec::new(),
            by_name: Vec::new(),
            last: None,
        })
    }

    /// The errno today's programs refuse this call with, if they do.
    pub fn refused(&mut self, data: &libc::seccomp_data) -> Option<Errno> {
        if self.decoded.is_empty() {
            self.decoded = self.chain.iter().map(|p| Decoded::new(p.bytes())).collect();
        }
        let data = SeccompData {
            nr: data.nr,
            arch: data.arch,
            instruction_pointer: data.instruction_pointer,
            args: data.args,
        };
        // A chain that cannot run here refuses: never less than asked.
        let ret = run_chain(&self.decoded, &data).unwrap_or(SECCOMP_RET_ERRNO | EPERM);
        (ret & SECCOMP_RET_ACTION_FULL == SECCOMP_RET_ERRNO)
            .then(|| Errno::from_raw((ret & 0xffff) as i32))
    }

    /// Answers `notif` if today's programs refuse it, and counts it; with
    /// an `observer`, a JSON line for it too.
    pub fn handle(
        &mut self,
        listener: BorrowedFd<'_>,
        notif: &libc::seccomp_notif,
        observer: Option<&mut Observer>,
    ) -> bool {
        let Some(errno) = self.refused(&notif.data) else {
            return false;
        };
        // Who, while the call still waits: once answered, the process
        // may be gone, and its /proc files with it.
        let who = self.who(notif.pid as i32);
        let _ = sys::notif_answer(listener, notif.id, Err(errno));
        let call = describe(&notif.data);
        if let Some(o) = observer {
            o.refusal(&format!(
                "\"refused\":{},\"nr\":{},\"errno\":{},\"comm\":{},\"pid\":{}",
                json::string(call.as_bytes()),
                notif.data.nr,
                errno as i32,
                json::string(who.comm.as_bytes()),
                who.pid.map_or("null".to_string(), |p| p.to_string())
            ));
        }
        self.note(call, who);
        true
    }

    /// Counts a refused call already answered (a connect sockets.rs
    /// refused).
    pub fn note(&mut self, call: String, who: Who) {
        self.note_unnamed(syscall_of(&call), 1);
        if let Some(g) = self
            .groups
            .iter_mut()
            .find(|g| g.pid == who.pid && g.call == call && g.comm == who.comm)
        {
            g.count += 1;
        } else if self.groups.len() < KEPT {
            self.groups.push(Group {
                call,
                comm: who.comm,
                pid: who.pid,
                count: 1,
            });
        }
    }

    /// Counts `times` refused calls of `name` kept apart from no other
    /// (connects past those sockets.rs kept with their details).
    pub fn note_unnamed(&mut self, name: &str, times: u64) {
        self.count += times;
        match self.by_name.iter_mut().find(|(n, _)| n == name) {
            Some((_, n)) => *n += times,
            None => self.by_name.push((name.to_string(), times)),
        }
    }

    /// Who the process `pid` (in the stub's view) is now: its name read
    /// afresh (a `PR_SET_NAME` or an `execve` since its last refused call
    /// changed it), its pid in the command's view kept from the last call
    /// of the same process.
    pub fn who(&mut self, pid: i32) -> Who {
        let comm = describe::comm_at(self.proc_dir, pid);
        let inner = match self.last {
            Some((p, inner)) if p == pid => inner,
            _ => describe::inner_pid_at(self.proc_dir, pid),
        };
        self.last = Some((pid, inner));
        Who { comm, pid: inner }
    }

    /// The line: `None` with nothing refused. `every`: all the kinds kept
    /// (`SRT_DEBUG`), else the first few.
    pub fn line(&self, every: bool) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        let shown = if every { KEPT } else { SHOWN };
        let mut parts: Vec<String> = self
            .groups
            .iter()
            .take(shown)
            .map(|g| {
                let times = if g.count > 1 {
                    format!(" x{}", g.count)
                } else {
                    String::new()
                };
                let pid = g.pid.map_or("?".to_string(), |p| p.to_string());
                format!(
                    "{}{times} by {} (pid {pid})",
                    g.call,
                    quoted(&g.comm, COMM_MAX)
                )
            })
            .collect();
        let listed: u64 = self.groups.iter().take(shown).map(|g| g.count).sum();
        if self.count > listed {
            // The rest by call: every call's name is in the line.
            let rest: Vec<String> = self
                .by_name
                .iter()
                .filter_map(|(name, all)| {
                    let shown_here: u64 = self
                        .groups
                        .iter()
                        .take(shown)
                        .filter(|g| syscall_of(&g.call) == name)
                        .map(|g| g.count)
                        .sum();
                    let left = all - shown_here;
                    (left > 0).then(|| match left {
                        1 => name.clone(),
                        n => format!("{name} x{n}"),
                    })
                })
                .collect();
            parts.push(format!(
                "{} more ({})",
                self.count - listed,
                rest.join(", ")
            ));
        }
        Some(format!(
            "apply-seccomp: the sandbox refused {} call{}: {}: sandbox policy, not a fault of \
             the command or the machine; man apply-seccomp, REFUSED CALLS",
            self.count,
            if self.count == 1 { "" } else { "s" },
            parts.join(", ")
        ))
    }
}

fn program(set: rules::Set) -> Result<Program, String> {
    filter::program(set.name()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusals() -> Refusals {
        Refusals {
            chain: Vec::new(),
            decoded: Vec::new(),
            proc_dir: -1,
            _proc_dir: None,
            count: 0,
            groups: Vec::new(),
            by_name: Vec::new(),
            last: None,
        }
    }

    #[test]
    fn the_line_names_every_call_even_past_the_kinds_shown() {
        let mut r = refusals();
        assert_eq!(r.line(false), None);
        for pid in 1..=40 {
            let who = Who {
                comm: "p".into(),
                pid: Some(pid),
            };
            r.note("socket(AF_UNIX, SOCK_DGRAM)".into(), who.clone());
            r.note("socket(AF_UNIX, SOCK_DGRAM)".into(), who);
        }
        r.note(
            "mount".into(),
            Who {
                comm: "m".into(),
                pid: None,
            },
        );
        let line = r.line(false).unwrap();
        assert!(line.starts_with(
            "apply-seccomp: the sandbox refused 81 calls: socket(AF_UNIX, SOCK_DGRAM) x2 by \"p\" \
             (pid 1), "
        ));
        // 12 kinds shown (24 calls), 32 kept; mount was past them.
        assert!(
            line.contains("(pid 12), 57 more (socket x56, mount): sandbox policy"),
            "{line}"
        );
        let every = r.line(true).unwrap();
        assert!(
            every.contains("(pid 32), 17 more (socket x16, mount): "),
            "{every}"
        );
    }

    #[test]
    fn printable_keeps_nothing_that_steers_a_terminal() {
        assert_eq!(printable("py\n\x1b[2Jthon", 15), "py??[2Jthon");
        assert_eq!(printable("abcdefghijklmnopq", 4), "abcd...");
        assert_eq!(printable("é", 4), "?");
        assert_eq!(quoted("x\" (pid 1), s\\", 15), "\"x\\\" (pid 1), s\\\\\"");
    }
}
