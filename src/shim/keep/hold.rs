//! The holder: the process that keeps a run's placeholders held while its
//! bubblewrap runs, and removes them when it ends.
//!
//! The shim starts it in its own memory (`sys::spawn_shared`: no page
//! tables copied) just before it execs bubblewrap, keeping its pid: the
//! client's bubblewrap is bubblewrap (its pid, signals, exit status,
//! `--die-with-parent`, descriptors). The two run at once on one memory
//! until that exec, so the holder reads only its [`Plan`] (leaked, never
//! written again), allocates nothing, and makes system calls through
//! `sys` only. It starts a session of its own (no terminal's signals reach
//! it), keeps none of the client's descriptors (its pipes, the
//! `--sync-fd` and `--info-fd` of bubblewrap end with bubblewrap), and
//! waits on a pidfd of the shim. A hold (an open file description lock)
//! lasts while any descriptor of it is open: the shim's copies close at its exec (close-on-exec), the
//! holder's when it is done, or when it is killed.

use std::ffi::CString;
use std::os::fd::RawFd;

use super::mark::{self, Id, Kind, Shape};
use super::passing;
use crate::sys;

/// One held placeholder, as the holder sees it.
pub struct Item {
    /// The folder it is in, open.
    pub dir: RawFd,
    pub name: CString,
    pub kind: Kind,
    /// The placeholder, open.
    pub fd: RawFd,
    /// Where this run's hold is (the file itself, or a folder's mark).
    pub hold: RawFd,
    pub id: Id,
    /// How many folders down its path goes: folders go after what is in
    /// them.
    pub depth: usize,
}

/// All the holder needs: made before it starts, then only read.
pub struct Plan {
    /// The per-user lock.
    pub lock: RawFd,
    /// Readable once the shim's process (bubblewrap by then) has ended.
    pub ended: RawFd,
    /// Deepest first.
    pub items: Vec<Item>,
    /// Every descriptor above, sorted.
    pub fds: Vec<RawFd>,
}

impl Plan {
    pub fn new(lock: RawFd, ended: RawFd, mut items: Vec<Item>) -> Plan {
        items.sort_by_key(|i| std::cmp::Reverse(i.depth));
        let mut fds: Vec<RawFd> = items.iter().flat_map(|i| [i.dir, i.fd, i.hold]).collect();
        fds.extend([lock, ended]);
        fds.sort_unstable();
        fds.dedup();
        Plan {
            lock,
            ended,
            items,
            fds,
        }
    }
}

/// Starts the holder for `plan`. Err: no holder (the holds then end with
/// the shim's exec: the placeholders stay, held by no one, until the next
/// run in the folder takes them and removes them).
pub fn start(plan: Plan) -> Result<(), nix::errno::Errno> {
    let plan: &'static Plan = Box::leak(Box::new(plan));
    let stack = sys::Stack::new(64 * 1024)?;
    sys::spawn_shared(stack, move || {
        let _ = sys::setsid();
        sys::close_all_but(&plan.fds);
        if sys::wait_readable(plan.ended).is_ok() {
            release(plan);
        }
        sys::exit_now(0)
    })
    .map(drop)
}

/// The run is over: each placeholder no other run holds is removed,
/// deepest first, if it is still only what the shim made; a folder
/// emptied so goes too; and what a killed shim left at its passing names.
/// Under the per-user lock, so no run takes one while it goes.
fn release(plan: &Plan) {
    // Bounded: a lock held too long leaves the placeholders to the next
    // run in the folder, which removes them.
    if sys::flock_within(plan.lock, libc::LOCK_EX, super::RELEASE_WAIT_MS).is_err() {
        return;
    }
    // What killed shims left at passing names: one look per folder.
    for (k, item) in plan.items.iter().enumerate() {
        if plan.items[..k].iter().all(|o| o.dir != item.dir) {
            mark::clear_stale(item.dir, |n| {
                plan.items
                    .iter()
                    .any(|o| o.dir == item.dir && passing::is_passing_of(n, o.name.to_bytes()))
            });
        }
    }
    for item in &plan.items {
        // No other run holds it (this run's own write lock does not count).
        if mark::held_by_another(item.hold) {
            continue;
        }
        if mark::shape(item.dir, &item.name, item.kind, item.fd, item.id) == Shape::Only {
            mark::remove(item.dir, &item.name, item.kind, item.fd);
        }
    }
}
