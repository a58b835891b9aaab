//! The capability-free way in: for where a new user namespace grants no
//! usable capability (AppArmor's `unpriv_bwrap`, which Ubuntu stacks on
//! everything bubblewrap runs), so no namespace can be built. The command
//! gets the same no_new_privs and seccomp filters as on the namespace way,
//! and a Landlock domain that scopes signals and abstract Unix sockets and,
//! as every Landlock domain does, bars ptrace-mode access (ptrace,
//! `/proc/<pid>/mem`, `environ`, `fd`, ...) to every process outside it.
//! None of that needs a capability. README, "Two ways in", holds the table
//! of how each THREATS row is held on either way.
//!
//! The ruleset is made here, in the outer stub before the worker starts
//! (it allocates); the worker joins it with one raw
//! `landlock_restrict_self` (sys/raw.rs) before its filters and exec.

use std::os::fd::OwnedFd;

use landlock::{CompatLevel, Compatible, Ruleset, RulesetAttr, Scope};
use nix::errno::Errno;

use crate::cause::{Lack, SCOPED_ABI};
use crate::sys;

/// A Landlock ruleset that handles nothing but scopes signals and abstract
/// Unix sockets, or what the kernel lacks for it. Made by the `landlock`
/// crate with its best-effort fallback turned off: a kernel without
/// scoping is an error here, never a weaker domain.
pub fn ruleset() -> Result<OwnedFd, Lack> {
    let made = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .and_then(|r| r.create());
    let made = match made.map(Option::<OwnedFd>::from) {
        Ok(Some(fd)) => return Ok(fd),
        Ok(None) => "no ruleset was made".to_string(),
        Err(e) => e.to_string(),
    };
    // The crate says what failed, not which ABI the kernel has: ask it.
    Err(match abi() {
        Err(Errno::EOPNOTSUPP) => Lack::NotEnabled,
        Err(_) => Lack::NotBuilt,
        Ok(v) if v < SCOPED_ABI => Lack::NoScoping(v),
        Ok(_) => Lack::Other(made),
    })
}

/// The kernel's Landlock ABI, for `SRT_DEBUG` and messages.
pub fn abi() -> Result<i32, Errno> {
    sys::landlock_abi()
}
