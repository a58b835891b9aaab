//! The worker, PID 2 (or, on the capability-free way, the stub's own
//! child): the last steps before the command.
//!
//! Runs between clone and exec in the stub's memory, while the stub (and
//! on the namespace way init) runs on (sys::spawn_shared), and waits at
//! the gate for their keys before the exec. No allocation, no
//! formatting, no panics, and only `sys`'s raw system calls
//! (supervise/mod.rs says why). Calls made: rt_sigprocmask, setpgid, prctl
//! (no_new_privs), landlock_restrict_self (the capability-free way, and
//! the socket policy where the kernel holds it),
//! seccomp (the unix filter: the run's listener program, or today's
//! programs: the own-sockets policy's with a listener, or the one
//! refusing every AF_UNIX socket, then for an observed run the observe
//! filter with its listener; the namespaces filter, unless nesting is
//! allowed), epoll_ctl putting the listener in the stub's epoll instance
//! (or a write of one 8-byte report saying where it is; the worker
//! shares the stub's file table, so the listener is the stub's at once;
//! the exec leaves the command a copy of the table without it,
//! close-on-exec), getpid and ioctl
//! (TIOCSPGRP, on a terminal: terminal.rs), futex (the gate, on the
//! namespace way: init's mounts and the stub's mount check done), execve
//! (through execvp's PATH search), and on failure a write of one report
//! and `_exit`. On the capability-free way, `Channel::arm_parent_death` came
//! first (prctl, getppid). The environment was scrubbed before the
//! first child started (run/mod.rs); inherited file descriptors are left
//! alone.

use nix::sys::signal::SigSet;

use crate::error::{Step, errno, exec_exit_code};
use crate::filter::Program;
use crate::run::plan::{Channel, Kind, Listener, Plan, Way};
use crate::sys;

pub fn run(
    plan: Plan,
    original_mask: SigSet,
    chan: Channel,
    listener: Listener,
    (gate, keys): (&'static sys::Gate, u32),
) -> ! {
    if let Err(e) = sys::set_sigmask(original_mask.as_ref()) {
        chan.fail(Step::Signals, e);
    }
    // A process group of its own: what the command signals or renices by
    // group reaches nothing outside the sandbox (terminal.rs).
    if let Err(e) = sys::raw_new_process_group() {
        chan.fail(Step::ProcessGroup, e);
    }
    if let Err(e) = sys::set_no_new_privs() {
        chan.fail(Step::NoNewPrivs, e);
    }
    // Before the filters: they would not refuse it, but nothing should come
    // between the domain and the exec that a filter could change.
    // The capability-free way's domain (which holds the socket policy
    // too, where the kernel does), or the socket policy's alone.
    let domain = match plan.way {
        Way::CapabilityFree { ruleset } => Some(ruleset),
        Way::Namespaces { sockets, .. } => sockets,
    };
    if let Some(ruleset) = domain {
        if let Err(e) = sys::landlock_restrict_self(ruleset) {
            chan.fail(Step::Landlock, e);
        }
    }
    // With no PID namespace, the unix filter also keeps priorities, limits
    // and scheduling of processes outside from the command's reach.
    let capfree = matches!(plan.way, Way::CapabilityFree { .. });
    let deny = if capfree {
        plan.filters.unix_capability_free
    } else {
        plan.filters.unix
    };
    // Where refusals are reported (report.rs), one program holds every
    // rule and the listener, and the namespaces filter beside it keeps
    // clone3's ENOSYS alone. Should the listener be refused: today's
    // programs, all of them, and the stub is told why (never less than
    // asked).
    let mut namespaces = plan.filters.namespaces;
    let wanted = listener != Listener::None;
    let unix = match (plan.filters.reporting, wanted) {
        (Some(r), true) => {
            let prog = r.listener[usize::from(capfree)][usize::from(plan.observed)];
            let installed = sys::install_filter_listener(prog.bytes());
            let deny = installed.is_err().then_some(deny);
            if installed.is_ok() {
                namespaces = r.namespaces;
            }
            chan.listener(installed, listener);
            deny
        }
        _ => today(&plan, capfree, deny, wanted.then_some((chan, listener))),
    };
    if let Some(unix) = unix {
        if let Err(e) = sys::install_filter(unix.bytes()) {
            chan.fail(Step::FilterUnix, e);
        }
    }
    if let Some(ns) = namespaces {
        if let Err(e) = sys::install_filter(ns.bytes()) {
            chan.fail(Step::FilterNamespaces, e);
        }
    }
    // The caller's terminal, when the stub's group had it: the command's
    // group takes the foreground, SIGTTOU blocked meanwhile (this group is
    // in the background until the call). Should it fail, the command runs
    // in the background of the terminal, as with `&`.
    if let Some(tty) = plan.tty {
        let mut blocked = original_mask;
        blocked.add(nix::sys::signal::Signal::SIGTTOU);
        let _ = sys::set_sigmask(blocked.as_ref());
        if let Err(e) = sys::raw_set_foreground(tty, sys::raw_getpid()) {
            chan.report(Kind::Debug, Step::Foreground, e);
        }
        let _ = sys::set_sigmask(original_mask.as_ref());
    }
    // init's mounts (namespace way) and the stub's mount guard check are
    // made meanwhile: the command runs only once each held. With no key to
    // wait for (the capability-free way without a guard), no call.
    if let Err(e) = gate.wait(keys) {
        chan.fail(Step::Gate, e);
    }
    let err = errno(&sys::execvp(plan.exec));
    chan.report(Kind::Fatal, Step::Exec, err);
    sys::exit_now(exec_exit_code(err as i32))
}

/// Today's programs (refusals not reported). The own-sockets policy: its
/// unix filter, installed with a listener
/// (its connects and binds, and an observed run's calls, go to the
/// stub: the kernel allows one listener in a chain), the stub told where
/// it is (the command's copy goes with the exec). Without a listener the
/// policy cannot hold: the filter that refuses every AF_UNIX socket
/// instead, and the stub is told why. Observation alone is fail-open, as
/// before. Returns the program still to install.
fn today(
    plan: &Plan,
    capfree: bool,
    deny: Program,
    to_stub: Option<(Channel, Listener)>,
) -> Option<Program> {
    match (plan.filters.own, to_stub) {
        (Some(own), Some((chan, to))) => {
            let prog = match (capfree, plan.observed) {
                (false, false) => own.unix,
                (true, false) => own.unix_capability_free,
                (false, true) => own.unix_observed,
                (true, true) => own.unix_capability_free_observed,
            };
            let installed = sys::install_filter_listener(prog.bytes());
            let deny = installed.is_err().then_some(deny);
            chan.listener(installed, to);
            deny
        }
        (None, Some((chan, to))) => {
            chan.listener(
                sys::install_filter_listener(plan.filters.observe.bytes()),
                to,
            );
            Some(deny)
        }
        _ => Some(deny),
    }
}
