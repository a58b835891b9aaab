//! The seccomp programs, compiled by `build.rs` from `filter/rules.rs` for
//! the target architecture, embedded, and validated at startup.

use crate::error::Error;

#[cfg(test)]
mod interp;
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

#[cfg(target_arch = "x86_64")]
fn embedded_bytes() -> [&'static [u8]; 9] {
    [
        embed!("x86_64-unix.bpf"),
        embed!("x86_64-namespaces.bpf"),
        embed!("x86_64-unix-capability-free.bpf"),
        embed!("x86_64-observe.bpf"),
        embed!("x86_64-stub.bpf"),
        embed!("x86_64-unix-own.bpf"),
        embed!("x86_64-unix-own-capability-free.bpf"),
        embed!("x86_64-unix-own-observe.bpf"),
        embed!("x86_64-unix-own-capability-free-observe.bpf"),
    ]
}

#[cfg(target_arch = "aarch64")]
fn embedded_bytes() -> [&'static [u8]; 9] {
    [
        embed!("aarch64-unix.bpf"),
        embed!("aarch64-namespaces.bpf"),
        embed!("aarch64-unix-capability-free.bpf"),
        embed!("aarch64-observe.bpf"),
        embed!("aarch64-stub.bpf"),
        embed!("aarch64-unix-own.bpf"),
        embed!("aarch64-unix-own-capability-free.bpf"),
        embed!("aarch64-unix-own-observe.bpf"),
        embed!("aarch64-unix-own-capability-free-observe.bpf"),
    ]
}

/// The architecture this binary runs on, for the observe table.
#[cfg(target_arch = "x86_64")]
pub const ARCH: rules::Arch = rules::Arch::X86_64;
#[cfg(target_arch = "aarch64")]
pub const ARCH: rules::Arch = rules::Arch::Aarch64;

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

/// Validates the embedded programs and picks those to install; `own`:
/// the own-sockets policy (not `APPLY_SECCOMP_UNIX=deny`).
pub fn filters(allow_nested_userns: bool, own: bool) -> Result<Filters, Error> {
    let [
        unix,
        namespaces,
        unix_capability_free,
        observe,
        stub,
        unix_own,
        unix_own_capability_free,
        unix_own_observe,
        unix_own_capability_free_observe,
    ] = embedded_bytes();
    let valid =
        |bytes, name: &str| Program::new(bytes).map_err(|e| Error::Filter(format!("{name}: {e}")));
    let unix = valid(unix, "unix")?;
    let stub = valid(stub, "stub")?;
    let own = if own {
        Some(OwnSockets {
            unix: valid(unix_own, "unix-own")?,
            unix_capability_free: valid(unix_own_capability_free, "unix-own-capability-free")?,
            unix_observed: valid(unix_own_observe, "unix-own-observe")?,
            unix_capability_free_observed: valid(
                unix_own_capability_free_observe,
                "unix-own-capability-free-observe",
            )?,
        })
    } else {
        None
    };
    Ok(Filters {
        unix,
        unix_capability_free: valid(unix_capability_free, "unix-capability-free")?,
        namespaces: (!allow_nested_userns)
            .then(|| valid(namespaces, "namespaces"))
            .transpose()?,
        observe: valid(observe, "observe")?,
        stub: if allow_nested_userns { unix } else { stub },
        own,
    })
}
