//! The rule table of both filters, as plain data.
//!
//! `build.rs` compiles this file (through `#[path]`) into classic BPF for
//! x86_64 and aarch64; the binary only embeds the resulting programs. Keep it
//! free of dependencies: it is built for the build host, not the target.
//!
//! Every argument test reads the LOW 32 BITS only: the kernel truncates
//! `int` arguments and the flag words of `clone` and `unshare` are examined
//! on their low half, so upper bits must not let a call slip past (THREATS
//! rows 3, 10, 11).

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

/// Which of the stacked filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Set {
    /// THREATS rows 1-9: Unix/vsock sockets, DGRAM socketpairs, io_uring;
    /// row 19: typing into the terminal (`TIOCSTI`, `TIOCLINUX`).
    Unix,
    /// THREATS rows 10-13: new user/mount namespaces and mount-type calls.
    Namespaces,
    /// Only with `SRT_OBSERVE_SOCK`: write-intent filesystem calls, answered
    /// with SECCOMP_RET_USER_NOTIF (the stub lets each one continue, then
    /// reports it). Never refuses anything.
    Observe,
}

impl Set {
    pub const ALL: [Set; 3] = [Set::Unix, Set::Namespaces, Set::Observe];

    pub fn name(self) -> &'static str {
        match self {
            Set::Unix => "unix",
            Set::Namespaces => "namespaces",
            Set::Observe => "observe",
        }
    }
}

/// Where a written path is found in a call's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathArg {
    /// A path string: `path` is the index of the pointer, `dirfd` that of
    /// the directory it is relative to (`None`: the working directory).
    At { dirfd: Option<u8>, path: u8 },
    /// The file the descriptor at index `fd` is open on (fchmod, fchown,
    /// fsetxattr...: changes through a descriptor open for reading only).
    Fd { fd: u8 },
    /// A Unix socket address at index `addr` (`bind`): the socket file it
    /// creates, for a pathname address; nothing for any other.
    UnixAddr { addr: u8, len: u8 },
}

/// One observed syscall.
#[derive(Clone, Copy, Debug)]
pub struct Observed {
    pub nr: u32,
    pub name: &'static str,
    /// Observed only when this argument has a write-intent open flag
    /// (`OPEN_WRITE_FLAGS`); `None`: always.
    pub flags: Option<u8>,
    /// The paths it writes: one report line each.
    pub paths: &'static [PathArg],
}

/// O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND (the same on both
/// architectures).
pub const OPEN_WRITE_FLAGS: [u32; 5] = [0o1, 0o2, 0o100, 0o1000, 0o2000];

const AT0: &[PathArg] = &[PathArg::At {
    dirfd: Some(0),
    path: 1,
}];
const CWD0: &[PathArg] = &[PathArg::At {
    dirfd: None,
    path: 0,
}];
/// linkat/renameat: (olddirfd, oldpath, newdirfd, newpath).
const AT_TWO: &[PathArg] = &[
    PathArg::At {
        dirfd: Some(0),
        path: 1,
    },
    PathArg::At {
        dirfd: Some(2),
        path: 3,
    },
];
const CWD_TWO: &[PathArg] = &[
    PathArg::At {
        dirfd: None,
        path: 0,
    },
    PathArg::At {
        dirfd: None,
        path: 1,
    },
];
/// symlinkat(target, newdirfd, linkpath): only the link is written.
const SYMLINKAT: &[PathArg] = &[PathArg::At {
    dirfd: Some(1),
    path: 2,
}];
/// symlink(target, linkpath).
const SYMLINK: &[PathArg] = &[PathArg::At {
    dirfd: None,
    path: 1,
}];
/// fchmod(fd, ...), fchown(fd, ...), fsetxattr(fd, ...).
const FD0: &[PathArg] = &[PathArg::Fd { fd: 0 }];
/// bind(fd, addr, len).
const BIND: &[PathArg] = &[PathArg::UnixAddr { addr: 1, len: 2 }];

const fn obs(nr: u32, name: &'static str, paths: &'static [PathArg]) -> Observed {
    Observed {
        nr,
        name,
        flags: None,
        paths,
    }
}

/// Calls with the same number on both architectures: setxattrat and
/// removexattrat (Linux 6.13).
fn observed_generic() -> [Observed; 2] {
    [obs(463, "setxattrat", AT0), obs(466, "removexattrat", AT0)]
}

/// The write-intent calls the observe filter reports (the legacy
/// path-only forms exist on x86_64 only).
pub fn observed(arch: Arch) -> Vec<Observed> {
    let open_at = |nr| Observed {
        nr,
        name: "openat",
        flags: Some(2),
        paths: AT0,
    };
    let mut table = match arch {
        Arch::X86_64 => vec![
            open_at(257),
            Observed {
                nr: 2,
                name: "open",
                flags: Some(1),
                paths: CWD0,
            },
            obs(437, "openat2", AT0),
            obs(85, "creat", CWD0),
            obs(263, "unlinkat", AT0),
            obs(87, "unlink", CWD0),
            obs(84, "rmdir", CWD0),
            obs(258, "mkdirat", AT0),
            obs(83, "mkdir", CWD0),
            obs(259, "mknodat", AT0),
            obs(133, "mknod", CWD0),
            obs(266, "symlinkat", SYMLINKAT),
            obs(88, "symlink", SYMLINK),
            obs(265, "linkat", AT_TWO),
            obs(86, "link", CWD_TWO),
            obs(264, "renameat", AT_TWO),
            obs(316, "renameat2", AT_TWO),
            obs(82, "rename", CWD_TWO),
            obs(268, "fchmodat", AT0),
            obs(452, "fchmodat2", AT0),
            obs(90, "chmod", CWD0),
            obs(260, "fchownat", AT0),
            obs(92, "chown", CWD0),
            obs(94, "lchown", CWD0),
            obs(280, "utimensat", AT0),
            obs(132, "utime", CWD0),
            obs(235, "utimes", CWD0),
            obs(76, "truncate", CWD0),
            obs(91, "fchmod", FD0),
            obs(93, "fchown", FD0),
            obs(261, "futimesat", AT0),
            obs(188, "setxattr", CWD0),
            obs(189, "lsetxattr", CWD0),
            obs(190, "fsetxattr", FD0),
            obs(197, "removexattr", CWD0),
            obs(198, "lremovexattr", CWD0),
            obs(199, "fremovexattr", FD0),
            obs(49, "bind", BIND),
        ],
        Arch::Aarch64 => vec![
            open_at(56),
            obs(437, "openat2", AT0),
            obs(35, "unlinkat", AT0),
            obs(34, "mkdirat", AT0),
            obs(33, "mknodat", AT0),
            obs(36, "symlinkat", SYMLINKAT),
            obs(37, "linkat", AT_TWO),
            obs(38, "renameat", AT_TWO),
            obs(276, "renameat2", AT_TWO),
            obs(53, "fchmodat", AT0),
            obs(452, "fchmodat2", AT0),
            obs(54, "fchownat", AT0),
            obs(88, "utimensat", AT0),
            obs(45, "truncate", CWD0),
            obs(52, "fchmod", FD0),
            obs(55, "fchown", FD0),
            obs(5, "setxattr", CWD0),
            obs(6, "lsetxattr", CWD0),
            obs(7, "fsetxattr", FD0),
            obs(14, "removexattr", CWD0),
            obs(15, "lremovexattr", CWD0),
            obs(16, "fremovexattr", FD0),
            obs(200, "bind", BIND),
        ],
    };
    table.extend(observed_generic());
    table
}

/// A test on the low 32 bits of one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    /// `args[arg] & mask` is one of `values`.
    OneOf {
        arg: u8,
        mask: u32,
        values: &'static [u32],
    },
    /// `args[arg] & bits` is not zero: one of the bits is set.
    AnyBit { arg: u8, bits: u32 },
}

/// A syscall is refused (the observe filter: notified) when ALL of its
/// conditions hold; with none, always.
#[derive(Clone, Debug)]
pub struct Rule {
    pub nr: u32,
    pub all_of: Vec<Cond>,
}

const AF_UNIX: u32 = 1;
const AF_VSOCK: u32 = 40;
const SOCK_TYPE_MASK: u32 = 0xf;
const SOCK_DGRAM: u32 = 2;
/// `AF_UNIX` turns `SOCK_RAW` into `SOCK_DGRAM` (net/unix/af_unix.c).
const SOCK_RAW: u32 = 3;
const CLONE_NEWNS: u32 = 0x0002_0000;
const CLONE_NEWUSER: u32 = 0x1000_0000;
/// Pushes a byte into a terminal's input as if typed (CVE-2017-5226);
/// `TIOCLINUX` subcode 2 pastes the console selection the same way. The
/// same numbers on x86_64 and aarch64; `cmd` is an `unsigned int`.
const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541c;

/// x32 syscall numbers have this bit set (x86_64 only).
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;
/// `clone3` has the same number on both architectures; it answers ENOSYS so
/// that libc falls back to `clone`, whose flags the filter can read.
pub const CLONE3: u32 = 435;
pub const ENOSYS: u32 = 38;
pub const EPERM: u32 = 1;

/// Syscall numbers that differ between the architectures.
struct Numbers {
    ioctl: u32,
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
            ioctl: 16,
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
            ioctl: 29,
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

fn always(nr: u32) -> Rule {
    Rule {
        nr,
        all_of: Vec::new(),
    }
}

/// `nr` when the low 32 bits of argument `arg` are one of `values`.
fn when_one_of(nr: u32, arg: u8, values: &'static [u32]) -> Rule {
    Rule {
        nr,
        all_of: vec![Cond::OneOf {
            arg,
            mask: u32::MAX,
            values,
        }],
    }
}

/// The rules that match in the given filter: answered with EPERM, or for
/// the observe filter with USER_NOTIF. `clone3` (ENOSYS) and the x32 check
/// have other answers; `build.rs` adds them and documents where.
pub fn rules(arch: Arch, set: Set) -> Vec<Rule> {
    let n = numbers(arch);
    match set {
        Set::Unix => vec![
            when_one_of(n.socket, 0, &[AF_UNIX, AF_VSOCK]),
            // Stricter than upstream: a DGRAM pair can sendto() any named
            // datagram socket in the mount tree (THREATS row 6).
            Rule {
                nr: n.socketpair,
                all_of: vec![
                    Cond::OneOf {
                        arg: 0,
                        mask: u32::MAX,
                        values: &[AF_UNIX],
                    },
                    Cond::OneOf {
                        arg: 1,
                        mask: SOCK_TYPE_MASK,
                        values: &[SOCK_DGRAM, SOCK_RAW],
                    },
                ],
            },
            always(IO_URING_SETUP),
            always(IO_URING_ENTER),
            always(IO_URING_REGISTER),
            // Stricter than upstream: on a terminal shared with the caller
            // (no bubblewrap --new-session), the command could type into the
            // caller's shell. Whatever the fd: the terminal may come by any.
            when_one_of(n.ioctl, 1, &[TIOCSTI, TIOCLINUX]),
        ],
        Set::Namespaces => {
            let ns_flags = vec![Cond::AnyBit {
                arg: 0,
                bits: CLONE_NEWUSER | CLONE_NEWNS,
            }];
            vec![
                Rule {
                    nr: n.unshare,
                    all_of: ns_flags.clone(),
                },
                Rule {
                    nr: n.clone,
                    all_of: ns_flags,
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
        Set::Observe => observed(arch)
            .into_iter()
            .map(|o| Rule {
                nr: o.nr,
                all_of: o
                    .flags
                    .map(|arg| Cond::AnyBit {
                        arg,
                        bits: OPEN_WRITE_FLAGS.iter().fold(0, |all, bit| all | bit),
                    })
                    .into_iter()
                    .collect(),
            })
            .collect(),
    }
}
