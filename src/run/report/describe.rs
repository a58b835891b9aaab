//! The refusal report's words (report.rs): who made a call, the call and
//! its deciding argument as a person writes it, and text made printable.

use super::{ARG_MAX, COMM_MAX, Who};
use crate::filter::{self, rules};
use crate::sys;

fn read_proc(proc_dir: std::os::fd::RawFd, pid: i32, file: &str) -> Vec<u8> {
    std::ffi::CString::new(format!("{pid}/{file}"))
        .ok()
        .and_then(|name| sys::read_file_at(proc_dir, &name).ok())
        .unwrap_or_default()
}

/// The name of `pid` now, from `/proc/PID/comm` under `proc_dir`, made
/// printable (a command's name may hold any byte but NUL), `?` once it
/// is gone. Read for each call: `PR_SET_NAME` and `execve` change it.
pub fn comm_at(proc_dir: std::os::fd::RawFd, pid: i32) -> String {
    let comm = read_proc(proc_dir, pid, "comm");
    let comm = comm.strip_suffix(b"\n").unwrap_or(&comm);
    if comm.is_empty() {
        "?".to_string()
    } else {
        printable(&String::from_utf8_lossy(comm), COMM_MAX)
    }
}

/// The pid of `pid` in the innermost namespace, from `/proc/PID/status`
/// under `proc_dir` (`None` once it is gone).
pub fn inner_pid_at(proc_dir: std::os::fd::RawFd, pid: i32) -> Option<i32> {
    let status = read_proc(proc_dir, pid, "status");
    let text = String::from_utf8_lossy(&status);
    text.lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .and_then(|v| v.split_whitespace().last())
        .and_then(|v| v.parse().ok())
}

/// Who `pid` is: its name and its pid in the innermost namespace.
pub fn who_at(proc_dir: std::os::fd::RawFd, pid: i32) -> Who {
    Who {
        comm: comm_at(proc_dir, pid),
        pid: inner_pid_at(proc_dir, pid),
    }
}

/// `text` made printable and in double quotes, `"` and `\\` escaped with
/// a backslash: the line's free text (a program's name, a path), which
/// can then never pass for the line's own words (`by x (pid 1), socket(`
/// spelled inside a name).
pub fn quoted(text: &str, max: usize) -> String {
    let inner = printable(text, max)
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    format!("\"{inner}\"")
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

/// The call's name without its argument.
pub(super) fn syscall_of(call: &str) -> &str {
    call.split('(').next().unwrap_or(call)
}

/// A refused socket call (`connect`, `bind`) with its target, for the
/// line.
pub fn socket_call(call: &str, target: &str) -> String {
    format!("{call}({})", quoted(target, ARG_MAX))
}

/// The call and its deciding argument, as a person writes it.
pub(super) fn describe(data: &libc::seccomp_data) -> String {
    let nr = data.nr as u32;
    let arg = |i: usize| data.args[i] as u32;
    if data.arch != filter::AUDIT_ARCH {
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
