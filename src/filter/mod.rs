//! The seccomp programs, compiled by `build.rs` from `filter/rules.rs` for
//! the target architecture, embedded, and validated at startup.

use crate::error::Error;

/// Runs today's programs on a reported call (report.rs).
pub mod interp;
#[cfg(test)]
mod reference;
/// The rule data; at run time only the observe table is read (observe.rs).
#[allow(dead_code)]
pub mod rules;
#[cfg(test)]
mod tests;

/// Instruction bytes with the alignment of `struct sock_filter` and more.
#[repr(C, align(8))]
struct Aligned<B: ?Sized>(B);

macro_rules! embed {
    ($file:literal) => {{
        static PROGRAM: &Aligned<[u8]> =
            &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/", $file)));
        &PROGRAM.0
    }};
}

/// Every program of the target architecture, by name (build.rs writes
/// the list: `rules::Set::name`, `rules::Reported::name`).
fn embedded() -> &'static [(&'static str, &'static [u8])] {
    static ALL: &[(&str, &[u8])] = &include!(concat!(env!("OUT_DIR"), "/programs.rs"));
    ALL
}

/// The embedded program `name`, validated.
pub fn program(name: &str) -> Result<Program, Error> {
    let (_, bytes) = embedded()
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| Error::Filter(format!("{name}: not built")))?;
    Program::new(bytes).map_err(|e| Error::Filter(format!("{name}: {e}")))
}

/// The architecture this binary runs on, for the observe table.
#[cfg(target_arch = "x86_64")]
pub const ARCH: rules::Arch = rules::Arch::X86_64;
#[cfg(target_arch = "aarch64")]
pub const ARCH: rules::Arch = rules::Arch::Aarch64;
/// Its `AUDIT_ARCH_*`, as `seccomp_data.arch` holds it.
#[cfg(target_arch = "x86_64")]
pub const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
pub const AUDIT_ARCH: u32 = 0xc000_00b7;

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("apply-seccomp has filters for x86_64 and aarch64 only");

/// Size of one `struct sock_filter`.
pub const INSN_SIZE: usize = 8;
/// `BPF_MAXINSNS`: the kernel's limit on a classic BPF program.
pub const MAX_INSNS: usize = 4096;

/// A validated program: non-empty, whole instructions, at most 4096.
#[derive(Clone, Copy, Debug)]
pub struct Program(&'static [u8]);

impl Program {
    pub fn new(bytes: &'static [u8]) -> Result<Program, String> {
        if bytes.is_empty() {
            return Err("empty program".into());
        }
        if bytes.len() % INSN_SIZE != 0 {
            return Err(format!("{} bytes is not a multiple of 8", bytes.len()));
        }
        if bytes.len() / INSN_SIZE > MAX_INSNS {
            return Err(format!("{} instructions, more than 4096", bytes.len() / 8));
        }
        Ok(Program(bytes))
    }

    pub fn bytes(self) -> &'static [u8] {
        self.0
    }
}

/// The filters the worker installs, in order.
#[derive(Clone, Copy, Debug)]
pub struct Filters {
    pub unix: Program,
    /// The capability-free way's unix filter, installed there instead of
    /// `unix`: the same rules, and calls aimed at other processes by PID,
    /// group or user refused (rules.rs, `Set::UnixCapabilityFree`).
    pub unix_capability_free: Program,
    /// `None` when nesting is allowed (`SRT_ALLOW_NESTED_USERNS=1`).
    pub namespaces: Option<Program>,
    /// The USER_NOTIF filter for write-intent calls, installed only when
    /// the run is observed (`SRT_OBSERVE_SOCK`).
    pub observe: Program,
    /// The outer stub's own filter, one program: the unix and namespaces
    /// rules together, or where nesting is allowed the unix filter.
    pub stub: Program,
    /// The own-sockets policy (the default): the programs installed with
    /// a listener the stub serves, in place of `unix` and
    /// `unix_capability_free` (`None`: `APPLY_SECCOMP_UNIX=deny`).
    pub own: Option<OwnSockets>,
    /// The programs of a run that reports its refusals.
    pub reporting: Option<Reporting>,
    /// Who holds the Unix socket policy these programs were picked for.
    pub sockets: Sockets,
}

/// The own-sockets policy's programs (rules.rs, `Set::UnixOwn` ...): each
/// its way's unix filter with `AF_UNIX` stream and seqpacket sockets
/// allowed and `connect` and `bind` notified; the `observed` ones also
/// the observe filter's calls.
#[derive(Clone, Copy, Debug)]
pub struct OwnSockets {
    pub unix: Program,
    pub unix_capability_free: Program,
    pub unix_observed: Program,
    pub unix_capability_free_observed: Program,
}

/// A run that reports what it refused (issue 44; not with
/// `APPLY_SECCOMP_REFUSALS=off`): the listener's programs, in place of
/// every other program but the one below, by `[capability_free][observed]`
/// (rules.rs, `Reported`), and the namespaces filter beside them
/// (`Set::Clone3`; `None` when nesting is allowed).
#[derive(Clone, Copy, Debug)]
pub struct Reporting {
    pub listener: [[Program; 2]; 2],
    pub namespaces: Option<Program>,
}

/// Who holds a run's Unix socket policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sockets {
    /// `APPLY_SECCOMP_UNIX=deny`: the filter refuses every `AF_UNIX`
    /// socket.
    Deny,
    /// The own-sockets policy, decided by the stub on each connect
    /// (sockets.rs): where the kernel has no Landlock ABI 9.
    Mediated,
    /// The own-sockets policy in the kernel: a Landlock domain
    /// (sockets/kernel.rs) and `Set::UnixKernel`'s filter.
    Kernel,
}

/// Validates the embedded programs and picks those to install;
/// `sockets`: who holds the Unix socket policy; `report`: the refusals
/// reported.
pub fn filters(
    allow_nested_userns: bool,
    sockets: Sockets,
    report: bool,
) -> Result<Filters, Error> {
    let own = sockets == Sockets::Mediated;
    // Refusing every AF_UNIX socket: the unix filter but where the kernel
    // holds the policy, and the stub's own where nesting is allowed.
    let deny = program("unix")?;
    let (unix, unix_capability_free) = match sockets {
        Sockets::Kernel => (
            program("unix-kernel")?,
            program("unix-kernel-capability-free")?,
        ),
        _ => (deny, program("unix-capability-free")?),
    };
    let own_programs = if own {
        Some(OwnSockets {
            unix: program("unix-own")?,
            unix_capability_free: program("unix-own-capability-free")?,
            unix_observed: program("unix-own-observe")?,
            unix_capability_free_observed: program("unix-own-capability-free-observe")?,
        })
    } else {
        None
    };
    let reporting = if report {
        let name = |capfree: bool, observe: bool| {
            program(&reported(sockets, capfree, observe, allow_nested_userns).name())
        };
        Some(Reporting {
            listener: [
                [name(false, false)?, name(false, true)?],
                [name(true, false)?, name(true, true)?],
            ],
            namespaces: (!allow_nested_userns)
                .then(|| program("clone3"))
                .transpose()?,
        })
    } else {
        None
    };
    Ok(Filters {
        unix,
        unix_capability_free,
        namespaces: (!allow_nested_userns)
            .then(|| program("namespaces"))
            .transpose()?,
        observe: program("observe")?,
        stub: if allow_nested_userns {
            deny
        } else {
            program("stub")?
        },
        own: own_programs,
        reporting,
        sockets,
    })
}

/// The listener's program of a run: who holds its socket policy, its way
/// in, observation and nesting.
pub fn reported(sockets: Sockets, capfree: bool, observe: bool, nested: bool) -> rules::Reported {
    use Sockets::*;
    rules::Reported {
        unix: match (sockets, capfree) {
            (Mediated, false) => rules::Set::UnixOwn,
            (Mediated, true) => rules::Set::UnixOwnCapabilityFree,
            (Deny, false) => rules::Set::Unix,
            (Deny, true) => rules::Set::UnixCapabilityFree,
            (Kernel, false) => rules::Set::UnixKernel,
            (Kernel, true) => rules::Set::UnixKernelCapabilityFree,
        },
        observe,
        nested,
    }
}
