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

use crate::filter::interp::{Decoded, SeccompData};
use crate::filter::{self, Program, rules};
use crate::json;
use crate::observe::Observer;
use crate::sys;

const SECCOMP_RET_ACTION_FULL: u32 = 0xffff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
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
    /// Today's programs, newest first; decoded at the first notification
    /// (a run that makes none pays nothing).
    chain: Vec<Program>,
    decoded: Vec<Decoded>,
    audit_arch: u32,
    /// `/proc` as the caller sees it, opened before init mounts its own:
    /// the own-sockets policy's, or this one's.
    proc_dir: RawFd,
    _proc_dir: Option<OwnedFd>,
    /// Every refused call.
    pub count: u64,
    groups: Vec<Group>,
    /// The last pid asked about, and the answer.
    last: Option<(i32, Who)>,
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
        for set in reported.today().into_iter().rev() {
            chain.push(program(set)?);
        }
        Ok(Refusals {
            chain,
            decoded: Vec::new(),
            audit_arch: filter::AUDIT_ARCH,
            proc_dir: proc_dir
                .or(own.as_ref().map(|d| d.as_raw_fd()))
                .unwrap_or(-1),
            _proc_dir: own,
            count: 0,
            groups: Vec::new(),
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
        let mut strictest: Option<u32> = None;
        for prog in &self.decoded {
            // A program that cannot run here refuses: never less than asked.
            let ret = prog.run(&data).unwrap_or(SECCOMP_RET_ERRNO | rules::EPERM);
            let action = |r: u32| (r & SECCOMP_RET_ACTION_FULL) as i32;
            if strictest.is_none_or(|s| action(ret) < action(s)) {
                strictest = Some(ret);
            }
        }
        let ret = strictest?;
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
        let call = describe(self.audit_arch, &notif.data);
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
        self.count += 1;
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

    /// Who the process `pid` (in the stub's view) is.
    pub fn who(&mut self, pid: i32) -> Who {
        if let Some((p, who)) = &self.last {
            if *p == pid {
                return who.clone();
            }
        }
        let who = who_at(self.proc_dir, pid);
        self.last = Some((pid, who.clone()));
        who
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
                format!("{}{times} by {} (pid {pid})", g.call, g.comm)
            })
            .collect();
        let listed: u64 = self.groups.iter().take(shown).map(|g| g.count).sum();
        if self.count > listed {
            parts.push(format!("{} more", self.count - listed));
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

/// The listener's program of a run: its policy (`own` sockets or none),
/// way in, observation and nesting.
pub fn reported(own: bool, capfree: bool, observe: bool, nested: bool) -> rules::Reported {
    rules::Reported {
        unix: match (own, capfree) {
            (true, false) => rules::Set::UnixOwn,
            (true, true) => rules::Set::UnixOwnCapabilityFree,
            (false, false) => rules::Set::Unix,
            (false, true) => rules::Set::UnixCapabilityFree,
        },
        observe,
        nested,
    }
}

fn program(set: rules::Set) -> Result<Program, String> {
    filter::program(set.name()).map_err(|e| e.to_string())
}

/// Who `pid` is, from `/proc/PID/comm` and `status` under `proc_dir`: its
/// name made printable (a command's name may hold any byte but NUL;
/// status escapes some) and its pid in the innermost namespace. Gone: `?`
/// and the pid given.
pub fn who_at(proc_dir: std::os::fd::RawFd, pid: i32) -> Who {
    let read = |file: &str| {
        std::ffi::CString::new(format!("{pid}/{file}"))
            .ok()
            .and_then(|name| sys::read_file_at(proc_dir, &name).ok())
            .unwrap_or_default()
    };
    let comm = read("comm");
    let comm = comm.strip_suffix(b"\n").unwrap_or(&comm);
    let comm = if comm.is_empty() {
        "?".to_string()
    } else {
        printable(&String::from_utf8_lossy(comm), COMM_MAX)
    };
    let status = read("status");
    let text = String::from_utf8_lossy(&status);
    let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key));
    let inner = field("NSpid:")
        .and_then(|v| v.split_whitespace().last())
        .and_then(|v| v.parse().ok());
    Who { comm, pid: inner }
}

/// `text` with every byte outside printable ASCII as `?`, at most `max`
/// characters: nothing of a command's can break the line or steer the
/// terminal.
pub fn printable(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .take(max)
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .collect();
    if text.chars().count() > max {
        out.push_str("...");
    }
    out
}

/// A refused connect's target, for the line.
pub fn connect_call(target: &str) -> String {
    format!("connect({})", printable(target, ARG_MAX))
}

/// The call and its deciding argument, as a person writes it.
fn describe(audit_arch: u32, data: &libc::seccomp_data) -> String {
    let nr = data.nr as u32;
    let arg = |i: usize| data.args[i] as u32;
    if audit_arch != filter::AUDIT_ARCH {
        return format!("syscall {nr} of another architecture");
    }
    let n = rules::numbers(filter::ARCH);
    let family = |f: u32| match f {
        rules::AF_UNIX => "AF_UNIX".to_string(),
        rules::AF_VSOCK => "AF_VSOCK".to_string(),
        other => format!("family {other}"),
    };
    let kind = |t: u32| match t & 0xf {
        1 => "SOCK_STREAM".to_string(),
        2 => "SOCK_DGRAM".to_string(),
        3 => "SOCK_RAW".to_string(),
        5 => "SOCK_SEQPACKET".to_string(),
        other => format!("type {other}"),
    };
    let ns_flags = |f: u32| {
        let mut names = Vec::new();
        if f & rules::CLONE_NEWUSER != 0 {
            names.push("CLONE_NEWUSER");
        }
        if f & rules::CLONE_NEWNS != 0 {
            names.push("CLONE_NEWNS");
        }
        names.join("|")
    };
    let name = match nr {
        _ if nr == n.socket => return format!("socket({}, {})", family(arg(0)), kind(arg(1))),
        _ if nr == n.socketpair => {
            return format!("socketpair({}, {})", family(arg(0)), kind(arg(1)));
        }
        _ if nr == n.unshare => return format!("unshare({})", ns_flags(arg(0))),
        _ if nr == n.clone => return format!("clone({})", ns_flags(arg(0))),
        _ if nr == n.ioctl => {
            return match arg(1) {
                rules::TIOCSTI => "ioctl(TIOCSTI)".into(),
                rules::TIOCLINUX => "ioctl(TIOCLINUX)".into(),
                other => format!("ioctl({other:#x})"),
            };
        }
        _ if nr == n.setns => "setns",
        _ if nr == n.mount => "mount",
        _ if nr == n.umount2 => "umount2",
        _ if nr == n.pivot_root => "pivot_root",
        _ if nr == n.setpriority => "setpriority",
        _ if nr == n.ioprio_set => "ioprio_set",
        _ if nr == n.prlimit64 => "prlimit64",
        _ if nr == n.sched_setaffinity => "sched_setaffinity",
        _ if nr == n.sched_setscheduler => "sched_setscheduler",
        _ if nr == n.sched_setparam => "sched_setparam",
        _ if nr == n.sched_setattr => "sched_setattr",
        rules::IO_URING_SETUP => "io_uring_setup",
        rules::IO_URING_ENTER => "io_uring_enter",
        rules::IO_URING_REGISTER => "io_uring_register",
        rules::OPEN_TREE => "open_tree",
        rules::MOVE_MOUNT => "move_mount",
        rules::FSOPEN => "fsopen",
        rules::FSCONFIG => "fsconfig",
        rules::FSMOUNT => "fsmount",
        rules::FSPICK => "fspick",
        rules::MOUNT_SETATTR => "mount_setattr",
        rules::OPEN_TREE_ATTR => "open_tree_attr",
        _ => return format!("syscall {nr}"),
    };
    // The calls aimed at another process (the capability-free way) name
    // it; the rest have no argument worth a word.
    if [
        n.setpriority,
        n.ioprio_set,
        n.prlimit64,
        n.sched_setaffinity,
        n.sched_setscheduler,
        n.sched_setparam,
        n.sched_setattr,
    ]
    .contains(&nr)
    {
        format!("{name}(another process)")
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_keeps_nothing_that_steers_a_terminal() {
        assert_eq!(printable("py\n\x1b[2Jthon", 15), "py??[2Jthon");
        assert_eq!(printable("abcdefghijklmnopq", 4), "abcd...");
        assert_eq!(printable("é", 4), "?");
    }
}
