//! The own-sockets policy where the kernel holds it (issue 55): Landlock
//! ABI 9 (Linux 7.1) refuses the lookup of a pathname Unix socket, at
//! `connect` and at an addressed `sendmsg`, unless the socket was made in
//! the same Landlock domain or a rule allows its path
//! (`LANDLOCK_ACCESS_FS_RESOLVE_UNIX`); ABI 6's scope does the same for
//! abstract names (`LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET`). Both are
//! decided on the socket itself, in the caller's own domain, so:
//!
//! - no connect or bind goes to the stub (the filter notifies neither:
//!   rules.rs, `Set::UnixKernel`), and every `AF_UNIX` socket type
//!   works, datagram sockets and socketpairs included (an addressed send
//!   is checked like a connect);
//! - a command's own Landlock domain, and the other LSMs' connect checks,
//!   apply to its connects as without this helper; a peer sees the
//!   command's credentials (`SO_PEERCRED`), not the stub's;
//! - a refusal is `EACCES`, as a socket file without write permission
//!   gives: no tool takes it for a stale socket and removes it.
//!
//! The domain is made here in the stub before the worker starts (the
//! crate's ruleset calls allocate), with the crate's best effort turned
//! off, and joined by the worker with one raw `landlock_restrict_self`.
//! The capability-free way has a domain already (capfree.rs): the same
//! right and rules go into it.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use landlock::{AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope};

use crate::run::named_sockets as named;
use crate::sys;

/// The right, as the kernel numbers it.
pub const RESOLVE_UNIX: u64 = AccessFs::ResolveUnix as u64;

/// Whether this kernel can hold the policy: Landlock ABI 9 or later.
pub fn available() -> bool {
    sys::landlock_abi().is_ok_and(crate::cause::holds_unix_sockets)
}

/// A domain for the namespace way: Unix socket resolution handled,
/// abstract names scoped, a rule for each named socket.
pub struct Domain {
    /// The ruleset (close-on-exec), held by the stub for the run.
    pub ruleset: OwnedFd,
    /// The `SRT_DEBUG` line.
    pub note: String,
}

/// The namespace way's domain, or why it could not be made.
pub fn domain(named: &[PathBuf]) -> Result<Domain, String> {
    let made = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::ResolveUnix)
        .and_then(|r| r.scope(Scope::AbstractUnixSocket))
        .and_then(|r| r.create());
    let ruleset = match made.map(Option::<OwnedFd>::from) {
        Ok(Some(ruleset)) => ruleset,
        Ok(None) => return Err("landlock_create_ruleset: no ruleset".into()),
        Err(e) => return Err(format!("landlock_create_ruleset: {e}")),
    };
    let notes = add_named(ruleset.as_raw_fd(), named)?;
    Ok(Domain {
        ruleset,
        note: note(&notes),
    })
}

/// A rule allowing each of `named` that resolves to a socket no command
/// can swap (named.rs), added to `ruleset`; what became of each.
pub fn add_named(ruleset: RawFd, named: &[PathBuf]) -> Result<Vec<String>, String> {
    let (found, notes) = named::resolve(named);
    for f in &found {
        sys::landlock_add_path_rule(ruleset, f.file.as_raw_fd(), RESOLVE_UNIX)
            .map_err(|e| format!("landlock_add_rule ({}): {}", f.path.display(), e.desc()))?;
    }
    // The rules hold the inodes; the descriptors are not needed after.
    Ok(notes)
}

/// The `SRT_DEBUG` line of a run whose policy the kernel holds.
pub fn note(named: &[String]) -> String {
    format!(
        "unix sockets: own, held by the kernel (Landlock ABI {}: every AF_UNIX socket type; a \
         connect or an addressed send reaches only a socket made in this run{}; refused with \
         EACCES)",
        sys::landlock_abi().unwrap_or(0),
        if named.is_empty() {
            String::new()
        } else {
            format!(", or one named: {}", named.join(", "))
        }
    )
}

/// Issue 55, item 4, where the kernel holds the policy: Landlock governs
/// what a socket reaches, not the names it takes. A Unix socket the
/// command inherits from outside the run's network namespace (the stdio
/// socketpairs a Node spawner such as srt's CLI passes) would put a name
/// bound on it in that namespace's abstract names, where it could squat
/// any free one. Each such socket with no name yet is given one of the
/// kernel's choosing here, before the command runs: the kernel takes no
/// second bind of it (`EINVAL`). The `SRT_DEBUG` line (empty: none
/// named); an error ends the run. (Where the stub holds the policy it
/// does the same at the first bind it lets go on: bound.rs.)
pub fn name_inherited() -> Result<String, std::io::Error> {
    let named = inherited(None, None).map_err(std::io::Error::other)?;
    Ok(if named == 0 {
        String::new()
    } else {
        format!(
            "unix sockets: {named} inherited socket(s) of another network namespace given a name \
             of the kernel's choosing (no command can bind one to a name there)"
        )
    })
}

/// The Unix sockets of this process's table that were made outside the
/// network namespace `run` (the cookie; `None`: this one's, asked of a
/// socket made here) and have no name yet, each given one of the
/// kernel's choosing: how many. `proc`: the `/proc` this process has an
/// entry in (the stub's, once init has mounted its own), else
/// `/proc/self`.
pub fn inherited(run: Option<u64>, proc: Option<RawFd>) -> Result<usize, String> {
    let dir = match proc {
        Some(proc) => {
            let fds = std::ffi::CString::new(format!("{}/fd", sys::raw_getpid()))
                .map_err(|e| e.to_string())?;
            sys::open_at(proc, &fds, libc::O_DIRECTORY | libc::O_RDONLY, 0).map(sys::owned)
        }
        None => sys::open_path(c"/proc/self/fd", libc::O_DIRECTORY),
    }
    .map_err(|e| format!("/proc/self/fd: {}", e.desc()))?;
    let mut fds = Vec::new();
    let mut buf = [0u8; 1024];
    sys::each_name(dir.as_raw_fd(), &mut buf, |name| {
        if let Some(fd) = name.to_str().ok().and_then(|n| n.parse::<RawFd>().ok()) {
            fds.push(fd);
        }
        true
    })
    .map_err(|e| format!("/proc/self/fd: {}", e.desc()))?;
    let inherited: Vec<(RawFd, u64)> = fds
        .into_iter()
        .filter(|&fd| fd != dir.as_raw_fd())
        .filter_map(|fd| sys::unnamed_unix_netns(fd).map(|ns| (fd, ns)))
        .collect();
    if inherited.is_empty() {
        return Ok(0);
    }
    let run = match run {
        Some(run) => run,
        None => {
            let here = nix::sys::socket::socket(
                nix::sys::socket::AddressFamily::Unix,
                nix::sys::socket::SockType::Stream,
                nix::sys::socket::SockFlag::SOCK_CLOEXEC,
                None,
            )
            .map_err(|e| format!("socket: {}", e.desc()))?;
            sys::socket_netns_cookie(std::os::fd::AsFd::as_fd(&here))
                .map_err(|e| format!("SO_NETNS_COOKIE: {}", e.desc()))?
        }
    };
    let mut named = 0;
    for (fd, netns) in inherited.into_iter().filter(|&(_, ns)| ns != run) {
        match sys::autobind(fd) {
            // Named meanwhile (a process sharing it): no bind either way.
            Ok(()) | Err(nix::errno::Errno::EINVAL) => named += 1,
            Err(e) => {
                return Err(format!(
                    "descriptor {fd}, a Unix socket of another network namespace ({netns}): \
                     bind: {}",
                    e.desc()
                ));
            }
        }
    }
    Ok(named)
}
