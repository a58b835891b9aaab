//! Memory and CPU caps (and a task cap the kernel keeps for root too)
//! through cgroup v2, on request (issue 57): `APPLY_SECCOMP_MEMORY_MAX`
//! (bytes, with K, M, G or T) and `APPLY_SECCOMP_CPU_MAX` (CPUs: `0.5`,
//! `2`). A cgroup holds a whole run, bubblewrap and helper included.
//!
//! The `bwrap` shim, on the host, makes the run a cgroup of its own in
//! the part of the tree this user may write (a delegated subtree:
//! systemd's `user@UID.service`, or one an administrator chowned), sets
//! the limits, moves itself in and execs bubblewrap; a remover process
//! (shim/limits.rs) kills what is left and removes the cgroup once
//! bubblewrap has ended. With no such subtree the request is refused,
//! never run unlimited.
//!
//! The helper decides on the kernel's objects too: a limit asked must be
//! in force in its own cgroup or one above (the shim's, or a `systemd-run
//! --user --scope -p MemoryMax=...` around the client), or it refuses to
//! run; at its end it says which limit stopped the command (the cgroup's
//! `memory.events` `oom_kill`, `pids.events` `max`, counted from its start).
//! The values asked are read in cli/caps.rs (every door reads them).

use crate::cli::caps::Limits;

mod tree;

pub use tree::{Events, InForce, Tree, delegated};

/// The helper's check before its run: every limit `asked` is in force
/// in its cgroup or one above, or the run is refused; then what its
/// cgroup counted so far, for [`said`] at the end. With `nested`
/// (`SRT_ALLOW_NESTED_USERNS=1`) only a limit this user cannot write
/// counts (tree.rs, `InForce::read_held`): the shim's cgroup, the user's
/// own, holds nothing then, and the run is refused (issue 68).
pub fn for_run(asked: &Limits, nested: bool) -> Result<(Tree, Events), crate::error::Error> {
    let refuse = |why: String| {
        let how = if nested {
            NESTED.to_string()
        } else {
            format!(
                "run it through the `bwrap` shim (`apply-seccomp --setup`), which makes the run \
                 a cgroup with the limits, or under one that has them; {HOW}"
            )
        };
        crate::error::Error::Usage(format!(
            "{}: asked, but no cgroup of this run holds it ({why}): {how}",
            asked.describe()
        ))
    };
    let tree = Tree::read().map_err(refuse)?;
    InForce::read_held(&tree, nested)
        .holds(asked)
        .map_err(refuse)?;
    let before = Events::read(&tree);
    Ok((tree, before))
}

/// The lines for what the run's cgroup stopped since [`for_run`].
pub fn said(asked: &Limits, (tree, before): &(Tree, Events)) -> Vec<String> {
    Events::read(tree).lines(before, asked)
}

/// Why a limit in a cgroup of the user's holds nothing where nested
/// namespaces are allowed, and what does.
pub const NESTED: &str = "with SRT_ALLOW_NESTED_USERNS=1 a command may make user, mount and \
     cgroup namespaces of its own and write through a cgroup2 mount of its own any limit its \
     user may write, the run's own cgroup's (the shim's) included, so only a limit in a cgroup \
     file this user cannot write counts (a root-owned slice's, such as `systemctl set-property \
     user-UID.slice MemoryMax=...`); or leave nested user namespaces off";

/// How to get a subtree of one's own, for a refusal.
pub const HOW: &str = "a cgroup v2 subtree of your own is needed: start the client under \
     `systemd-run --user --scope -p Delegate=yes` (or from a desktop session, whose apps \
     systemd runs in the user's delegated user@UID.service), or have root make a cgroup folder \
     and chown it to you (with its cgroup.procs and cgroup.subtree_control); `apply-seccomp \
     --doctor` says what it finds";
