//! The unix filters of the own-sockets policy (rules.rs, through
//! `#[path]`, so build.rs reads them too): the stub's (`UnixOwn`: stream
//! and seqpacket sockets, every connect and bind notified) and the
//! kernel's (`UnixKernel`: every `AF_UNIX` socket made, nothing notified,
//! Landlock deciding where each reaches), each on both ways in.

use super::{AF_UNIX, AF_VSOCK, Arch, Cond, Rule, Set, notified, numbers, rules, when_one_of};

/// The `AF_UNIX` socket types the own-sockets policy allows, with every
/// combination of the two flags `socket` takes in its type word
/// (`SOCK_NONBLOCK` 0x800, `SOCK_CLOEXEC` 0x80000: the same on x86_64
/// and aarch64); any other bit there is EINVAL in the kernel.
const UNIX_OWN_TYPES: &[u32] = &[1, 5, 0x801, 0x805, 0x8_0001, 0x8_0005, 0x8_0801, 0x8_0805];
/// `prctl(PR_SET_DUMPABLE, SUID_DUMP_DISABLE)`: a process asking not to
/// be dumpable (gpg-agent does).
const PR_SET_DUMPABLE: u32 = 4;

/// `UnixOwn` and `UnixOwnCapabilityFree`.
pub(super) fn own_sockets(arch: Arch, set: Set) -> Vec<Rule> {
    let n = numbers(arch);
    let base = if set == Set::UnixOwn {
        Set::Unix
    } else {
        Set::UnixCapabilityFree
    };
    let mut all = rules(arch, base);
    // vsock always; AF_UNIX unless a stream or seqpacket socket.
    let socket = all.iter_mut().find(|r| r.nr == n.socket).expect("in Unix");
    socket.all_of.push(Cond::Differs {
        pairs: &[(0, &[AF_UNIX]), (1, UNIX_OWN_TYPES)],
    });
    all.extend([notified(n.connect), notified(n.bind)]);
    // The capability-free stub, with no capability in any user namespace,
    // may take no descriptor from a process that made itself non-dumpable:
    // its binds could not be noted, and its own sockets were refused
    // (gpg-agent; issue 55, item 7). The stub answers that call with
    // success, unmade (sockets.rs).
    if set == Set::UnixOwnCapabilityFree {
        all.push(Rule {
            nr: n.prctl,
            all_of: vec![
                Cond::OneOf {
                    arg: 0,
                    mask: u32::MAX,
                    values: &[PR_SET_DUMPABLE],
                },
                Cond::OneOf {
                    arg: 1,
                    mask: u32::MAX,
                    values: &[0],
                },
            ],
            notify: true,
        });
    }
    all
}

/// `UnixKernel` and `UnixKernelCapabilityFree`.
pub(super) fn kernel_sockets(arch: Arch, set: Set) -> Vec<Rule> {
    let n = numbers(arch);
    let base = if set == Set::UnixKernel {
        Set::Unix
    } else {
        Set::UnixCapabilityFree
    };
    let mut all = rules(arch, base);
    // vsock only: Landlock decides where an AF_UNIX socket reaches, a
    // datagram pair's addressed sends included.
    all.retain(|r| r.nr != n.socketpair);
    let socket = all.iter_mut().find(|r| r.nr == n.socket).expect("in Unix");
    *socket = when_one_of(n.socket, 0, &[AF_VSOCK]);
    all
}
