//! The unix filters of the own-sockets policy (rules.rs, through
//! `#[path]`, so build.rs reads them too): the stub's (`UnixOwn`: stream
//! and seqpacket sockets, every connect and bind notified, datagram
//! socketpairs made by the stub, a fence, a subreaper or a child made
//! with `CLONE_PARENT` noted) and the
//! kernel's (`UnixKernel`: every `AF_UNIX` socket made, nothing notified,
//! Landlock deciding where each reaches), each on both ways in.

use super::{
    AF_UNIX, AF_VSOCK, Arch, Cond, LANDLOCK_RESTRICT_SELF, Rule, Set, notified, numbers, rules,
    when_one_of,
};

/// The `AF_UNIX` socket types the own-sockets policy allows, with every
/// combination of the two flags `socket` takes in its type word
/// (`SOCK_NONBLOCK` 0x800, `SOCK_CLOEXEC` 0x80000: the same on x86_64
/// and aarch64); any other bit there is EINVAL in the kernel.
const UNIX_OWN_TYPES: &[u32] = &[1, 5, 0x801, 0x805, 0x8_0001, 0x8_0005, 0x8_0801, 0x8_0805];
/// `prctl(PR_SET_DUMPABLE, ...)`: a process asking not to be dumpable
/// (gpg-agent does).
pub const PR_SET_DUMPABLE: u32 = 4;
/// `prctl(PR_SET_CHILD_SUBREAPER, ...)`: a process taking its orphaned
/// descendants (the stub tells a fenced process's orphans by it).
pub const PR_SET_CHILD_SUBREAPER: u32 = 36;

/// `clone`'s flag for a child whose parent is the caller's parent.
pub const CLONE_PARENT: u32 = 0x8000;

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
    // A datagram socketpair (`Unix` refuses it: its ends can send to any
    // named datagram socket) is made by the stub as a sequenced-packet
    // pair, whose sends drop any address (issue 55, item 6: socat).
    let pair = all
        .iter_mut()
        .find(|r| r.nr == n.socketpair)
        .expect("in Unix");
    pair.notify = true;
    // A process fencing itself with Landlock: the stub notes it, and
    // makes no connect for it or what it starts after (its fence would
    // not hold for the stub: issue 55, item 2), then lets the call go on.
    all.push(notified(LANDLOCK_RESTRICT_SELF));
    // Which processes take orphans (a fenced process's orphans stay
    // fenced): noted, and let go on. The capability-free stub, with no
    // capability in any user namespace, may take no descriptor from a
    // process that made itself non-dumpable: its binds could not be
    // noted, and its own sockets were refused (gpg-agent; issue 55, item
    // 7). The stub answers `PR_SET_DUMPABLE 0` with success, unmade
    // (sockets.rs).
    let options: &'static [u32] = if set == Set::UnixOwnCapabilityFree {
        &[PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER]
    } else {
        &[PR_SET_CHILD_SUBREAPER]
    };
    all.push(Rule {
        notify: true,
        ..when_one_of(n.prctl, 0, options)
    });
    // A child made with CLONE_PARENT keeps its maker's fence but names
    // the maker's parent as its own, out of the stub's sight: the stub
    // refuses it to a process under a fence (issue 67, item 3) and lets
    // every other go on.
    // `clone3`, whose flags a filter cannot read, answers ENOSYS in the
    // namespaces filter, and libc falls back to `clone`.
    all.push(Rule {
        nr: n.clone,
        all_of: vec![Cond::AnyBit {
            arg: 0,
            bits: CLONE_PARENT,
        }],
        notify: true,
    });
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
