//! A command's own Landlock fence, where the stub holds the policy
//! (sockets.rs; issue 55, item 2). The stub makes every connect itself,
//! outside every Landlock domain: a process that fenced itself (no TCP
//! connect, abstract names scoped: a test runner, a plugin host, a nested
//! sandbox) would find its connects made regardless. So the filter
//! notifies `landlock_restrict_self`; the stub notes the process and lets
//! the call go on, and from then on makes no connect for it or for what
//! it starts: those are refused (`EACCES`) and said. Only the kernel's
//! policy (Landlock ABI 9) keeps such a fence and the connect both.
//!
//! A process is told by its pid and start time (never reused together),
//! and its descendants by the parent links in `/proc`. An orphan's link
//! leads to whoever took it (the run's init, the capability-free stub, or
//! a process that asked to be a subreaper, which the filter notifies
//! too): a process started after the first fence whose parent takes
//! orphans may be a fenced one's, and is taken for one. What cannot be
//! read is taken for fenced.

use std::os::fd::RawFd;

use crate::sys;

/// How far up the parent links a look goes (a deeper tree is taken for
/// fenced).
const DEPTH: usize = 4096;
/// The most fenced processes and orphan takers kept (issue 67, item 8):
/// from [`ROOM`] on, the ones that have ended are forgotten whenever a
/// list doubles (a fenced process's descendants are orphans then, under
/// one that takes them), and duplicates are never kept. A run with more
/// live ones than this has every connect refused from then on.
const MOST: usize = 4096;
const ROOM: usize = 64;

/// A process: its pid (in the stub's view) and its start time, in clock
/// ticks since boot.
type Known = (libc::pid_t, u64);

#[derive(Default)]
pub(super) struct Fences {
    /// Each process that called `landlock_restrict_self`.
    fenced: Vec<Known>,
    /// The processes that take orphans: the run's reaper (any start
    /// time: 0; pid 0: the stub), and each that asked to be a subreaper.
    takers: Vec<Known>,
    /// The lists' length at which ended processes are looked for.
    room: usize,
    /// The clock, in ticks since boot and rounded down, at the first
    /// fence: a process started before it descends from no fence.
    since: Option<u64>,
    /// A fence or a taker whose process could not be read, or more than
    /// [`MOST`] of them alive: every connect is refused from then on.
    blind: bool,
}

impl Fences {
    /// The thread `tid` fences itself: its process is noted. At the
    /// first, who takes the run's orphans (a run without a fence pays
    /// nothing for it): init, the stub's one child that is PID 1 in its
    /// namespace, or on the capability-free way the stub itself (pid 0
    /// here).
    pub(super) fn fence(&mut self, proc_dir: RawFd, tid: libc::pid_t) {
        let now = boot_ticks(proc_dir);
        if self.since.is_none() {
            match init(proc_dir) {
                Some(reaper) => self.takers.push((reaper, 0)),
                None => self.blind = true,
            }
        }
        match known(proc_dir, tid) {
            Some(p) if !self.fenced.contains(&p) => {
                self.fenced.push(p);
                self.keep_bounded(proc_dir);
            }
            Some(_) => {}
            None => self.blind = true,
        }
        self.since = Some(self.since.map_or(now, |s| s.min(now)));
    }

    /// The thread `tid` asks to take its orphaned descendants.
    pub(super) fn subreaper(&mut self, proc_dir: RawFd, tid: libc::pid_t) {
        match known(proc_dir, tid) {
            Some(p) if !self.takers.contains(&p) => {
                self.takers.push(p);
                self.keep_bounded(proc_dir);
            }
            Some(_) => {}
            None => self.blind = true,
        }
    }

    /// Whether the thread `tid` may make a child with `CLONE_PARENT`
    /// (issue 67, item 3): not if it may be under a fence. Such a child
    /// keeps the fence but names `tid`'s parent as its own, and nothing
    /// the stub can read tells it from that parent's other children.
    pub(super) fn may_clone_parent(&self, proc_dir: RawFd, tid: libc::pid_t) -> bool {
        !self.holds(proc_dir, tid)
    }

    /// Forgets the processes that have ended whenever a list reaches its
    /// room (the run's reaper, any start time, stays); past [`MOST`] live
    /// ones, blind.
    fn keep_bounded(&mut self, proc_dir: RawFd) {
        if self.fenced.len().max(self.takers.len()) < self.room.max(ROOM) {
            return;
        }
        let alive = |&(pid, start): &Known| {
            start == 0 || stat(proc_dir, pid).is_some_and(|(_, now)| now == start)
        };
        self.fenced.retain(alive);
        self.takers.retain(alive);
        let longest = self.fenced.len().max(self.takers.len());
        self.room = (2 * longest).clamp(ROOM, MOST);
        if longest >= MOST {
            self.blind = true;
        }
    }

    /// Whether the thread `tid` may be under a fence.
    pub(super) fn holds(&self, proc_dir: RawFd, tid: libc::pid_t) -> bool {
        let Some(since) = self.since else {
            return self.blind;
        };
        if self.blind {
            return true;
        }
        // Each process up the parent links read once: its parent and
        // start time.
        let Some(mut pid) = tgid(proc_dir, tid) else {
            return true;
        };
        let Some((mut parent, mut start)) = stat(proc_dir, pid) else {
            return true;
        };
        let me = sys::raw_getpid();
        for _ in 0..DEPTH {
            if self.fenced.contains(&(pid, start)) {
                return true;
            }
            if start < since {
                return false;
            }
            let Some((grand, parent_start)) = stat(proc_dir, parent).filter(|_| parent > 0) else {
                return true;
            };
            // The parent takes orphans: this one may be a fenced one's.
            if self.takers.iter().any(|&(p, s)| {
                (p == parent || p == 0 && parent == me) && (s == 0 || s == parent_start)
            }) {
                return true;
            }
            // The first process of a PID namespace takes that namespace's
            // orphans (issue 67, item 4: a root command's own namespace).
            if first_of_its_namespace(proc_dir, parent) {
                return true;
            }
            (pid, parent, start) = (parent, grand, parent_start);
        }
        true
    }
}

/// Whether `pid` is PID 1 of the innermost PID namespace it is in
/// (`NSpid`'s last number), or unreadable.
fn first_of_its_namespace(proc_dir: RawFd, pid: libc::pid_t) -> bool {
    let Some(status) = read(proc_dir, pid, "status") else {
        return true;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .and_then(|ids| ids.split_whitespace().last())
        .is_none_or(|inner| inner == "1")
}

/// The process of the thread `tid`: its thread group's leader and that
/// one's start time.
fn known(proc_dir: RawFd, tid: libc::pid_t) -> Option<Known> {
    let tgid = tgid(proc_dir, tid)?;
    Some((tgid, stat(proc_dir, tgid)?.1))
}

/// The thread group (the process) of the thread `tid`, from
/// `/proc/TID/status` (take.rs's pidfd before Linux 6.9 too).
pub(super) fn tgid(proc_dir: RawFd, tid: libc::pid_t) -> Option<libc::pid_t> {
    read(proc_dir, tid, "status")?
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The stub's child that is PID 1 of its own namespace (init), if any
/// (`Some(0)`: none, the stub takes the orphans); `None` if unreadable.
fn init(proc_dir: RawFd) -> Option<libc::pid_t> {
    let me = sys::raw_getpid();
    let children = read(proc_dir, me, &format!("task/{me}/children"))?;
    for child in children.split_whitespace() {
        let pid: libc::pid_t = child.parse().ok()?;
        let status = read(proc_dir, pid, "status")?;
        let inner = status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))?
            .split_whitespace()
            .last()?;
        if inner == "1" {
            return Some(pid);
        }
    }
    Some(0)
}

/// Process `pid`'s parent and start time, from `/proc/PID/stat`.
fn stat(proc_dir: RawFd, pid: libc::pid_t) -> Option<(libc::pid_t, u64)> {
    let text = read(proc_dir, pid, "stat")?;
    // The fields after the name, which may hold anything but ends at the
    // last `)`: state, ppid (4th field), ..., starttime (22nd).
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some((fields.get(1)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}

fn read(proc_dir: RawFd, pid: libc::pid_t, file: &str) -> Option<String> {
    let name = std::ffi::CString::new(format!("{pid}/{file}")).ok()?;
    let bytes = sys::read_file_at(proc_dir, &name).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The boot-time clock in clock ticks (`/proc`'s unit, `USER_HZ`: 100
/// on every Linux architecture), rounded down: `/proc/uptime`, which
/// says it in hundredths of a second. 0 (every process after it) if
/// unreadable.
fn boot_ticks(proc_dir: RawFd) -> u64 {
    let Ok(text) = sys::read_file_at(proc_dir, c"uptime") else {
        return 0;
    };
    let text = String::from_utf8_lossy(&text);
    let up = text.split_whitespace().next().unwrap_or_default();
    let (secs, hundredths) = up.split_once('.').unwrap_or((up, "0"));
    secs.parse::<u64>().unwrap_or(0) * 100 + hundredths.parse::<u64>().unwrap_or(0)
}
