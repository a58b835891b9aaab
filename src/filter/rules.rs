//! The rule table of both filters, as plain data.
//!
//! `build.rs` compiles this file (through `#[path]`) with seccompiler for
//! x86_64 and aarch64; the binary only embeds the resulting programs. Keep it
//! free of dependencies: it is built for the build host, not the target.
//!
//! Every argument test compares the LOW 32 BITS only (seccompiler's `Dword`):
//! the kernel truncates `int` arguments and the flag words of `clone` and
//! `unshare` are examined on their low half, so upper bits must not let a
//! call slip past (THREATS rows 3, 10, 11).

/// The architectures a filter is generated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Aarch64];

    /// Name used for the generated file names and `cfg(target_arch)`.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }
}

/// Which of the two stacked filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Set {
    /// THREATS rows 1-9: Unix/vsock sockets, DGRAM socketpairs, io_uring.
    Unix,
    /// THREATS rows 10-13: new user/mount namespaces and mount-type calls.
    Namespaces,
}

impl Set {
    pub const ALL: [Set; 2] = [Set::Unix, Set::Namespaces];

    pub fn name(self) -> &'static str {
        match self {
            Set::Unix => "unix",
            Set::Namespaces => "namespaces",
        }
    }
}

/// One condition on an argument: `(args[arg] & mask) == value`, on the low
/// 32 bits of the argument.
#[derive(Clone, Copy, Debug)]
pub struct Cond {
    pub arg: u8,
    pub mask: u32,
    pub value: u32,
}

/// A syscall is refused when ANY of its alternatives holds; an alternative
/// holds when ALL of its conditions hold. No alternatives: always refused.
#[derive(Clone, Debug)]
pub struct Rule {
    pub nr: u32,
    pub any_of: Vec<Vec<Cond>>,
}

const AF_UNIX: u32 = 1;
const AF_VSOCK: u32 = 40;
const SOCK_TYPE_MASK: u32 = 0xf;
const SOCK_DGRAM: u32 = 2;
/// `AF_UNIX` turns `SOCK_RAW` into `SOCK_DGRAM` (net/unix/af_unix.c).
const SOCK_RAW: u32 = 3;
const CLONE_NEWNS: u32 = 0x0002_0000;
const CLONE_NEWUSER: u32 = 0x1000_0000;

/// x32 syscall numbers have this bit set (x86_64 only).
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;
/// `clone3` has the same number on both architectures; it answers ENOSYS so
/// that libc falls back to `clone`, whose flags the filter can read.
pub const CLONE3: u32 = 435;
pub const ENOSYS: u32 = 38;
pub const EPERM: u32 = 1;

/// Syscall numbers that differ between the architectures.
struct Numbers {
    socket: u32,
    socketpair: u32,
    unshare: u32,
    clone: u32,
    setns: u32,
    mount: u32,
    umount2: u32,
    pivot_root: u32,
}

fn numbers(arch: Arch) -> Numbers {
    match arch {
        Arch::X86_64 => Numbers {
            socket: 41,
            socketpair: 53,
            unshare: 272,
            clone: 56,
            setns: 308,
            mount: 165,
            umount2: 166,
            pivot_root: 155,
        },
        Arch::Aarch64 => Numbers {
            socket: 198,
            socketpair: 199,
            unshare: 97,
            clone: 220,
            setns: 268,
            mount: 40,
            umount2: 39,
            pivot_root: 41,
        },
    }
}

// Numbers from the generic table, the same on x86_64 and aarch64.
const IO_URING_SETUP: u32 = 425;
const IO_URING_ENTER: u32 = 426;
const IO_URING_REGISTER: u32 = 427;
const OPEN_TREE: u32 = 428;
const MOVE_MOUNT: u32 = 429;
const FSOPEN: u32 = 430;
const FSCONFIG: u32 = 431;
const FSMOUNT: u32 = 432;
const FSPICK: u32 = 433;
const MOUNT_SETATTR: u32 = 442;
const OPEN_TREE_ATTR: u32 = 467;

fn eq(arg: u8, value: u32) -> Cond {
    Cond {
        arg,
        mask: u32::MAX,
        value,
    }
}

fn has_bits(arg: u8, bits: u32) -> Cond {
    Cond {
        arg,
        mask: bits,
        value: bits,
    }
}

fn always(nr: u32) -> Rule {
    Rule {
        nr,
        any_of: Vec::new(),
    }
}

/// The rules answered with EPERM by the given filter. `clone3` (ENOSYS) and
/// the x32 check are not expressible as seccompiler rules; `build.rs` adds
/// them and documents where.
pub fn rules(arch: Arch, set: Set) -> Vec<Rule> {
    let n = numbers(arch);
    match set {
        Set::Unix => vec![
            Rule {
                nr: n.socket,
                any_of: vec![vec![eq(0, AF_UNIX)], vec![eq(0, AF_VSOCK)]],
            },
            // Stricter than upstream: a DGRAM pair can sendto() any named
            // datagram socket in the mount tree (THREATS row 6).
            Rule {
                nr: n.socketpair,
                any_of: vec![
                    vec![
                        eq(0, AF_UNIX),
                        Cond {
                            arg: 1,
                            mask: SOCK_TYPE_MASK,
                            value: SOCK_DGRAM,
                        },
                    ],
                    vec![
                        eq(0, AF_UNIX),
                        Cond {
                            arg: 1,
                            mask: SOCK_TYPE_MASK,
                            value: SOCK_RAW,
                        },
                    ],
                ],
            },
            always(IO_URING_SETUP),
            always(IO_URING_ENTER),
            always(IO_URING_REGISTER),
        ],
        Set::Namespaces => {
            let ns_flags = vec![
                vec![has_bits(0, CLONE_NEWUSER)],
                vec![has_bits(0, CLONE_NEWNS)],
            ];
            vec![
                Rule {
                    nr: n.unshare,
                    any_of: ns_flags.clone(),
                },
                Rule {
                    nr: n.clone,
                    any_of: ns_flags,
                },
                always(n.setns),
                always(n.mount),
                always(n.umount2),
                always(n.pivot_root),
                always(OPEN_TREE),
                always(MOVE_MOUNT),
                always(FSOPEN),
                always(FSCONFIG),
                always(FSMOUNT),
                always(FSPICK),
                always(MOUNT_SETATTR),
                always(OPEN_TREE_ATTR),
            ]
        }
    }
}
