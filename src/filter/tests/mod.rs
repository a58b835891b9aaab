//! Decision tables for the generated programs of BOTH architectures, run
//! through the BPF interpreter. The syscall numbers and expectations here
//! are written from the kernel's tables and THREATS.md, independently of
//! `rules.rs`, so a wrong rule cannot agree with itself.

use super::interp::{SeccompData, run};

/// The observe filter's answers.
mod observe;
/// The capability-free way's unix filter: THREATS row 24.
mod outside;
/// The own-sockets policy's programs (issue 43).
mod own;
/// The property test and its samples (also the seccompiler check's).
pub(super) mod property;

pub(super) const UNIX_X86_64: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/x86_64-unix.bpf"));
pub(super) const NS_X86_64: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/x86_64-namespaces.bpf"));
pub(super) const UNIX_AARCH64: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/aarch64-unix.bpf"));
pub(super) const NS_AARCH64: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/aarch64-namespaces.bpf"));
pub(super) const STUB_X86_64: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/x86_64-stub.bpf"));
pub(super) const STUB_AARCH64: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/aarch64-stub.bpf"));
pub(super) const UNIX_CAPFREE_X86_64: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/x86_64-unix-capability-free.bpf"));
pub(super) const UNIX_CAPFREE_AARCH64: &[u8] = include_bytes!(concat!(
    env!("OUT_DIR"),
    "/aarch64-unix-capability-free.bpf"
));

const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const AUDIT_ARCH_I386: u32 = 0x4000_0003;
const AUDIT_ARCH_AARCH64: u32 = 0xc000_00b7;
const AUDIT_ARCH_ARM: u32 = 0x4000_0028;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Allow,
    Errno(u32),
    Kill,
    Notify,
}
use Outcome::*;
const EPERM: Outcome = Errno(1);
const ENOSYS: Outcome = Errno(38);

pub(super) fn outcome(ret: u32) -> Outcome {
    match ret & 0xffff_0000 {
        0x7fff_0000 => Allow,
        0x0005_0000 => Errno(ret & 0xffff),
        0x8000_0000 => Kill,
        0x7fc0_0000 => Notify,
        other => panic!("unexpected seccomp action {other:#x}"),
    }
}

/// The kernel runs every stacked filter and keeps the most restrictive
/// action (seccomp_run_filters: the lowest action as a signed number).
fn stacked(programs: &[&[u8]], data: &SeccompData) -> Outcome {
    let ret = programs
        .iter()
        .map(|p| run(p, data).expect("program runs"))
        .min_by_key(|r| (r & 0xffff_0000) as i32)
        .expect("at least one program");
    outcome(ret)
}

struct Abi {
    name: &'static str,
    arch: u32,
    unix: &'static [u8],
    ns: &'static [u8],
    /// The stub's one program: as `unix` and `ns` stacked.
    stub: &'static [u8],
    ioctl: i32,
    socket: i32,
    socketpair: i32,
    unshare: i32,
    clone: i32,
    setns: i32,
    mount: i32,
    umount2: i32,
    pivot_root: i32,
    /// Calls no filter refuses.
    neighbours: &'static [i32],
    /// Other architectures a process of this one can present.
    foreign: &'static [u32],
}

const X86_64: Abi = Abi {
    name: "x86_64",
    arch: AUDIT_ARCH_X86_64,
    unix: UNIX_X86_64,
    ns: NS_X86_64,
    stub: STUB_X86_64,
    ioctl: 16,
    socket: 41,
    socketpair: 53,
    unshare: 272,
    clone: 56,
    setns: 308,
    mount: 165,
    umount2: 166,
    pivot_root: 155,
    // read, write, getpid, connect, sendto, bind, fork, vfork, execve, kill
    neighbours: &[0, 1, 39, 42, 44, 49, 57, 58, 59, 62],
    foreign: &[AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64, AUDIT_ARCH_ARM, 0],
};

const AARCH64: Abi = Abi {
    name: "aarch64",
    arch: AUDIT_ARCH_AARCH64,
    unix: UNIX_AARCH64,
    ns: NS_AARCH64,
    stub: STUB_AARCH64,
    ioctl: 29,
    socket: 198,
    socketpair: 199,
    unshare: 97,
    clone: 220,
    setns: 268,
    mount: 40,
    umount2: 39,
    pivot_root: 41,
    // read, write, getpid, connect, sendto, bind, execve, kill
    neighbours: &[63, 64, 172, 203, 206, 200, 221, 129],
    foreign: &[AUDIT_ARCH_ARM, AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, 0],
};

const AF_UNIX: u64 = 1;
const AF_INET: u64 = 2;
const AF_INET6: u64 = 10;
const AF_NETLINK: u64 = 16;
const AF_PACKET: u64 = 17;
const AF_VSOCK: u64 = 40;
const SOCK_STREAM: u64 = 1;
const SOCK_DGRAM: u64 = 2;
const SOCK_RAW: u64 = 3;
const SOCK_SEQPACKET: u64 = 5;
const SOCK_NONBLOCK: u64 = 0o4000;
const SOCK_CLOEXEC: u64 = 0o2000000;
const CLONE_NEWNS: u64 = 0x0002_0000;
const CLONE_NEWUSER: u64 = 0x1000_0000;
const CLONE_NEWPID: u64 = 0x2000_0000;
const CLONE_NEWNET: u64 = 0x4000_0000;
const CLONE_THREAD_FLAGS: u64 = 0x003d_0f00;
const SIGCHLD: u64 = 17;
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541c;
/// Terminal ioctls a command needs: TCGETS, TCSETS, TIOCGPGRP, TIOCSPGRP,
/// TIOCGWINSZ, FIONREAD.
const TTY_NEIGHBOURS: [u64; 6] = [0x5401, 0x5402, 0x540f, 0x5410, 0x5413, 0x541b];
const HIGH: u64 = 0x1_0000_0000;
const ALL_HIGH: u64 = 0xffff_ffff_0000_0000;

const MOUNT_API: [i32; 8] = [428, 429, 430, 431, 432, 433, 442, 467];
const IO_URING: [i32; 3] = [425, 426, 427];

struct Case {
    what: String,
    data: SeccompData,
    /// Both filters installed.
    both: Outcome,
    /// `SRT_ALLOW_NESTED_USERNS=1`: the unix filter alone.
    unix_only: Outcome,
}

fn table(abi: &Abi) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut add = |what: String, arch: u32, nr: i32, args: &[u64], both, unix_only| {
        let mut a = [0u64; 6];
        a[..args.len()].copy_from_slice(args);
        cases.push(Case {
            what: format!("{}: {what}", abi.name),
            data: SeccompData {
                nr,
                arch,
                instruction_pointer: 0x7fff_1234,
                args: a,
            },
            both,
            unix_only,
        });
    };
    let arch = abi.arch;

    // Rows 1-3: AF_UNIX and AF_VSOCK sockets, whatever the type and flags,
    // whatever the upper 32 bits of the domain.
    for domain in [AF_UNIX, AF_VSOCK] {
        for ty in [SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET] {
            for flags in [0, SOCK_CLOEXEC, SOCK_NONBLOCK, SOCK_CLOEXEC | SOCK_NONBLOCK] {
                for high in [0, HIGH, ALL_HIGH] {
                    add(
                        format!("socket({:#x}, {:#x})", domain | high, ty | flags),
                        arch,
                        abi.socket,
                        &[domain | high, ty | flags, 0],
                        EPERM,
                        EPERM,
                    );
                }
            }
        }
    }
    // Row 4: other families work, also with junk in the upper bits.
    for domain in [AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, 0, 0xffff_ffff] {
        for high in [0, HIGH] {
            add(
                format!("socket({:#x})", domain | high),
                arch,
                abi.socket,
                &[domain | high, SOCK_STREAM, 0],
                Allow,
                Allow,
            );
        }
    }
    // Rows 5-6: STREAM and SEQPACKET pairs work; DGRAM (and RAW, which
    // AF_UNIX turns into DGRAM) pairs are refused.
    for (ty, expect) in [
        (SOCK_STREAM, Allow),
        (SOCK_SEQPACKET, Allow),
        (SOCK_DGRAM, EPERM),
        (SOCK_RAW, EPERM),
    ] {
        for flags in [0, SOCK_CLOEXEC | SOCK_NONBLOCK] {
            for high in [0, HIGH] {
                add(
                    format!("socketpair(AF_UNIX|{high:#x}, {:#x})", ty | flags),
                    arch,
                    abi.socketpair,
                    &[AF_UNIX | high, ty | flags | high, 0, 0],
                    expect,
                    expect,
                );
            }
        }
    }
    add(
        "socketpair(AF_INET, DGRAM)".into(),
        arch,
        abi.socketpair,
        &[AF_INET, SOCK_DGRAM],
        Allow,
        Allow,
    );
    // Row 7: x32 numbers on x86_64 are killed, -1 is not.
    if abi.arch == AUDIT_ARCH_X86_64 {
        for nr in [
            0x4000_0029u32,
            0x4000_0000,
            0x4000_0000 | 39,
            0x4000_0000 | 425,
            0x7fff_ffff,
        ] {
            add(
                format!("x32 nr {nr:#x}"),
                arch,
                nr as i32,
                &[AF_INET],
                Kill,
                Kill,
            );
        }
        add("nr -1".into(), arch, -1, &[], Allow, Allow);
    }
    // Row 8: any other architecture is killed.
    for &foreign in abi.foreign {
        for nr in [abi.socket, 102, 359, 0, 39] {
            add(
                format!("arch {foreign:#x} nr {nr}"),
                foreign,
                nr,
                &[AF_INET],
                Kill,
                Kill,
            );
        }
    }
    // Row 9: io_uring.
    for nr in IO_URING {
        add(format!("io_uring nr {nr}"), arch, nr, &[0, 0], EPERM, EPERM);
    }
    // Row 19: typing into the terminal, on any fd, whatever the upper bits
    // of the command; other terminal ioctls work.
    for cmd in [TIOCSTI, TIOCLINUX] {
        for high in [0, HIGH, ALL_HIGH] {
            for fd in [0, 1, u64::MAX] {
                add(
                    format!("ioctl({fd:#x}, {:#x})", cmd | high),
                    arch,
                    abi.ioctl,
                    &[fd, cmd | high, 0],
                    EPERM,
                    EPERM,
                );
            }
        }
    }
    for cmd in TTY_NEIGHBOURS {
        for high in [0, HIGH] {
            add(
                format!("ioctl(0, {:#x})", cmd | high),
                arch,
                abi.ioctl,
                &[0, cmd | high, 0],
                Allow,
                Allow,
            );
        }
    }
    // Row 10: unshare with NEWUSER or NEWNS, upper bits or not.
    for flags in [
        CLONE_NEWUSER,
        CLONE_NEWNS,
        CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID,
        CLONE_NEWNET | CLONE_NEWUSER,
        HIGH | CLONE_NEWUSER,
        ALL_HIGH | CLONE_NEWNS,
    ] {
        add(
            format!("unshare({flags:#x})"),
            arch,
            abi.unshare,
            &[flags],
            EPERM,
            Allow,
        );
    }
    for flags in [
        0,
        CLONE_NEWNET,
        CLONE_NEWPID,
        HIGH,
        0x400, /* CLONE_FILES */
    ] {
        add(
            format!("unshare({flags:#x})"),
            arch,
            abi.unshare,
            &[flags],
            Allow,
            Allow,
        );
    }
    // Row 11: clone with NEWUSER or NEWNS, also with bit 32 set.
    for flags in [
        CLONE_NEWUSER | SIGCHLD,
        CLONE_NEWNS | SIGCHLD,
        HIGH | CLONE_NEWUSER | SIGCHLD,
        ALL_HIGH | CLONE_NEWNS,
    ] {
        add(
            format!("clone({flags:#x})"),
            arch,
            abi.clone,
            &[flags],
            EPERM,
            Allow,
        );
    }
    // Row 15 neighbours: plain fork and threads.
    for flags in [
        SIGCHLD,
        CLONE_THREAD_FLAGS,
        HIGH | SIGCHLD,
        CLONE_NEWNET | SIGCHLD,
    ] {
        add(
            format!("clone({flags:#x})"),
            arch,
            abi.clone,
            &[flags],
            Allow,
            Allow,
        );
    }
    // Row 12: clone3 answers ENOSYS.
    add("clone3".into(), arch, 435, &[0, 88], ENOSYS, Allow);
    // Row 13: mount-type calls.
    for nr in [abi.setns, abi.mount, abi.umount2, abi.pivot_root]
        .into_iter()
        .chain(MOUNT_API)
    {
        add(
            format!("mount-type nr {nr}"),
            arch,
            nr,
            &[u64::MAX, 0],
            EPERM,
            Allow,
        );
    }
    // Unrelated calls stay allowed.
    for &nr in abi.neighbours {
        add(
            format!("neighbour nr {nr}"),
            arch,
            nr,
            &[1, 2, 3],
            Allow,
            Allow,
        );
    }
    for nr in [434, 436, 441, 443, 466, 468, 1000] {
        add(
            format!("unlisted nr {nr}"),
            arch,
            nr,
            &[AF_UNIX],
            Allow,
            Allow,
        );
    }
    cases
}

fn check(abi: &Abi) {
    let cases = table(abi);
    assert!(cases.len() > 150, "{} cases only", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let both = stacked(&[abi.unix, abi.ns], &case.data);
        let unix_only = stacked(&[abi.unix], &case.data);
        let stub = stacked(&[abi.stub], &case.data);
        if both != case.both || unix_only != case.unix_only || stub != case.both {
            failures.push(format!(
                "{}: both {both:?} (want {:?}), unix only {unix_only:?} (want {:?}), \
                 the stub's one program {stub:?}",
                case.what, case.both, case.unix_only
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn x86_64_programs_match_the_threat_table() {
    check(&X86_64);
}

#[test]
fn aarch64_programs_match_the_threat_table() {
    check(&AARCH64);
}

#[test]
fn embedded_programs_validate() {
    for bytes in [
        UNIX_X86_64,
        NS_X86_64,
        STUB_X86_64,
        UNIX_AARCH64,
        NS_AARCH64,
        STUB_AARCH64,
    ] {
        assert!(super::Program::new(bytes).is_ok());
    }
    use super::Sockets::{Deny, Kernel, Mediated};
    let f = super::filters(false, Mediated, true).expect("valid");
    assert!(f.own.is_some());
    assert!(f.reporting.is_some_and(|r| r.namespaces.is_some()));
    assert!(
        super::filters(false, Deny, true)
            .expect("valid")
            .own
            .is_none()
    );
    // The kernel holds the policy: no own programs, the kernel's unix
    // filter (AF_UNIX allowed) in place of the one refusing it.
    let k = super::filters(false, Kernel, true).expect("valid");
    assert!(k.own.is_none());
    assert_ne!(k.unix.bytes(), f.unix.bytes());
    assert_eq!(
        k.stub.bytes(),
        f.stub.bytes(),
        "the stub refuses AF_UNIX for itself"
    );
    assert!(
        super::filters(false, Mediated, false)
            .expect("valid")
            .reporting
            .is_none()
    );
    assert!(f.namespaces.is_some());
    assert_ne!(f.stub.bytes(), f.unix.bytes(), "the stub's: both rule sets");
    let nested = super::filters(true, Mediated, true).expect("valid");
    assert!(nested.namespaces.is_none());
    assert!(nested.reporting.is_some_and(|r| r.namespaces.is_none()));
    assert_eq!(
        nested.stub.bytes(),
        nested.unix.bytes(),
        "nesting: unix only"
    );
}

#[test]
fn validation_rejects_malformed_programs() {
    static EMPTY: [u8; 0] = [];
    static ODD: [u8; 12] = [0; 12];
    static HUGE: [u8; 8 * 4097] = [0; 8 * 4097];
    assert!(super::Program::new(&EMPTY).is_err());
    assert!(super::Program::new(&ODD).is_err());
    assert!(super::Program::new(&HUGE).is_err());
}

#[test]
fn interpreter_rejects_a_program_that_does_not_return() {
    // ld nr; (no ret)
    let prog = [0x20u8, 0, 0, 0, 0, 0, 0, 0];
    let data = SeccompData {
        nr: 0,
        arch: AUDIT_ARCH_X86_64,
        instruction_pointer: 0,
        args: [0; 6],
    };
    assert!(run(&prog, &data).is_err());
}

pub(super) const OBSERVE_X86_64: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/x86_64-observe.bpf"));
pub(super) const OBSERVE_AARCH64: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/aarch64-observe.bpf"));
