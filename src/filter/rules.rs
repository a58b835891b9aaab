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
    /// The unix filter of the capability-free way, which has no PID
    /// namespace to hide other processes: the unix rules, and (THREATS row
    /// 24) the calls that act on another process by PID, group or user
    /// with no ptrace-mode check, so Landlock does not cover them:
    /// priorities, resource limits, CPU affinity and scheduling, I/O
    /// priority. Each is refused unless aimed at the caller itself.
    UnixCapabilityFree,
    /// Only with `SRT_OBSERVE_SOCK`: write-intent filesystem calls, answered
    /// with SECCOMP_RET_USER_NOTIF (the stub lets each one continue, then
    /// reports it). Never refuses anything.
    Observe,
    /// The outer stub's own filter: the unix and namespaces rules in one
    /// program (each program installed costs the kernel a fixed ~25 us:
    /// allocated, checked, JIT-compiled, set read-only). The command keeps
    /// the two filters upstream's has.
    Stub,
    /// The unix filter of the own-sockets policy (the default; `Unix` is
    /// `APPLY_SECCOMP_UNIX=deny`), installed with a listener: `AF_UNIX`
    /// stream and seqpacket sockets allowed, every `connect` and `bind`
    /// answered with SECCOMP_RET_USER_NOTIF (the stub notes each socket a
    /// bind names, decides each connect on the socket it leads to and
    /// makes it itself: sockets.rs); datagram and raw `AF_UNIX` sockets,
    /// vsock, io_uring and terminal typing refused as in `Unix`. One
    /// program: the command keeps upstream's two filters.
    UnixOwn,
    /// `UnixCapabilityFree` with `UnixOwn`'s socket rules.
    UnixOwnCapabilityFree,
    /// `UnixOwn` and `Observe` in one program: the kernel allows one
    /// listener in a filter chain.
    UnixOwnObserve,
    /// `UnixOwnCapabilityFree` and `Observe` in one program.
    UnixOwnCapabilityFreeObserve,
    /// The namespaces filter of a run that reports what it refused (a
    /// [`Reported`] program holds its rules): `clone3`'s ENOSYS alone,
    /// which is a fallback signal, not a refusal.
    Clone3,
    /// The unix filter of the own-sockets policy where the kernel holds it
    /// (Landlock ABI 9: `LANDLOCK_ACCESS_FS_RESOLVE_UNIX` and the abstract
    /// scope, sockets/kernel.rs): `AF_UNIX` sockets of every type and
    /// datagram socketpairs allowed, nothing notified (a connect or an
    /// addressed send reaches only a socket of the run's domain, or one a
    /// rule names); vsock, io_uring and terminal typing refused as in
    /// `Unix`.
    UnixKernel,
    /// `UnixCapabilityFree` with `UnixKernel`'s socket rules.
    UnixKernelCapabilityFree,
}

impl Set {
    pub const ALL: [Set; 12] = [
        Set::Unix,
        Set::Namespaces,
        Set::UnixCapabilityFree,
        Set::Observe,
        Set::Stub,
        Set::UnixOwn,
        Set::UnixOwnCapabilityFree,
        Set::UnixOwnObserve,
        Set::UnixOwnCapabilityFreeObserve,
        Set::Clone3,
        Set::UnixKernel,
        Set::UnixKernelCapabilityFree,
    ];

    /// Some calls are answered with SECCOMP_RET_USER_NOTIF: installed
    /// with a listener.
    pub fn notifies(self) -> bool {
        !matches!(
            self,
            Set::Unix
                | Set::Namespaces
                | Set::UnixCapabilityFree
                | Set::Stub
                | Set::Clone3
                | Set::UnixKernel
                | Set::UnixKernelCapabilityFree
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Set::Unix => "unix",
            Set::Namespaces => "namespaces",
            Set::UnixCapabilityFree => "unix-capability-free",
            Set::Observe => "observe",
            Set::Stub => "stub",
            Set::UnixOwn => "unix-own",
            Set::UnixOwnCapabilityFree => "unix-own-capability-free",
            Set::UnixOwnObserve => "unix-own-observe",
            Set::UnixOwnCapabilityFreeObserve => "unix-own-capability-free-observe",
            Set::Clone3 => "clone3",
            Set::UnixKernel => "unix-kernel",
            Set::UnixKernelCapabilityFree => "unix-kernel-capability-free",
        }
    }

    /// `clone3` answers ENOSYS in this program.
    pub fn has_clone3(self) -> bool {
        matches!(self, Set::Namespaces | Set::Stub | Set::Clone3)
    }

    /// x86_64's x32 numbers are killed in this program (the unix ones).
    pub fn kills_x32(self) -> bool {
        !matches!(self, Set::Namespaces | Set::Observe | Set::Clone3)
    }
}

// The unix filters of the own-sockets policy: the stub's and the kernel's.
#[path = "unix_sets.rs"]
mod unix_sets;
// The stub reads them (build.rs, which compiles this file too, does not).
#[allow(unused_imports)]
pub use unix_sets::{CLONE_PARENT, PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE};
use unix_sets::{kernel_sockets, own_sockets};

// The listener's program of a run that reports what it refused.
#[path = "reported.rs"]
mod reported;
pub use reported::Reported;

// The observe filter's table: which calls are reported, and where each
// finds the paths it writes.
#[path = "observed.rs"]
mod observed;
pub use observed::*;

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
    /// At least one of the listed arguments is none of the values given
    /// with it: `(arg, values)` pairs, any one differing.
    Differs {
        pairs: &'static [(u8, &'static [u32])],
    },
}

/// A syscall is refused (`notify`: answered with SECCOMP_RET_USER_NOTIF)
/// when ALL of its conditions hold; with none, always.
#[derive(Clone, Debug)]
pub struct Rule {
    pub nr: u32,
    pub all_of: Vec<Cond>,
    pub notify: bool,
}

pub const AF_UNIX: u32 = 1;
pub const AF_VSOCK: u32 = 40;
const SOCK_TYPE_MASK: u32 = 0xf;
const SOCK_DGRAM: u32 = 2;
/// `AF_UNIX` turns `SOCK_RAW` into `SOCK_DGRAM` (net/unix/af_unix.c).
const SOCK_RAW: u32 = 3;
pub const CLONE_NEWNS: u32 = 0x0002_0000;
pub const CLONE_NEWUSER: u32 = 0x1000_0000;
/// Pushes a byte into a terminal's input as if typed (CVE-2017-5226);
/// `TIOCLINUX` subcode 2 pastes the console selection the same way. The
/// same numbers on x86_64 and aarch64; `cmd` is an `unsigned int`.
pub const TIOCSTI: u32 = 0x5412;
pub const TIOCLINUX: u32 = 0x541c;

/// The answers a program returns (`linux/seccomp.h`); the action is the
/// upper half, an errno the lower.
pub const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
pub const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
pub const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
pub const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
pub const SECCOMP_RET_ACTION_FULL: u32 = 0xffff_0000;

/// x32 syscall numbers have this bit set (x86_64 only).
pub const X32_SYSCALL_BIT: u32 = 0x4000_0000;
/// `clone3` has the same number on both architectures; it answers ENOSYS so
/// that libc falls back to `clone`, whose flags the filter can read.
pub const CLONE3: u32 = 435;
pub const ENOSYS: u32 = 38;
pub const EPERM: u32 = 1;

/// `setpriority` and `ioprio_set` aimed at the caller itself (`who` 0);
/// the group and user forms reach other processes.
const PRIO_PROCESS: u32 = 0;
const IOPRIO_WHO_PROCESS: u32 = 1;

// The numbers that differ between the architectures.
#[path = "numbers.rs"]
mod numbers;
pub use numbers::numbers;

/// `connect` and `bind` of `arch`, for the stub (sockets.rs).
pub fn connect_bind(arch: Arch) -> (u32, u32) {
    let n = numbers(arch);
    (n.connect, n.bind)
}

// Numbers from the generic table, the same on x86_64 and aarch64.
pub const IO_URING_SETUP: u32 = 425;
pub const LANDLOCK_RESTRICT_SELF: u32 = 446;
pub const IO_URING_ENTER: u32 = 426;
pub const IO_URING_REGISTER: u32 = 427;
pub const OPEN_TREE: u32 = 428;
pub const MOVE_MOUNT: u32 = 429;
pub const FSOPEN: u32 = 430;
pub const FSCONFIG: u32 = 431;
pub const FSMOUNT: u32 = 432;
pub const FSPICK: u32 = 433;
pub const MOUNT_SETATTR: u32 = 442;
pub const OPEN_TREE_ATTR: u32 = 467;

fn always(nr: u32) -> Rule {
    Rule {
        nr,
        all_of: Vec::new(),
        notify: false,
    }
}

/// `nr` always answered with SECCOMP_RET_USER_NOTIF.
fn notified(nr: u32) -> Rule {
    Rule {
        notify: true,
        ..always(nr)
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
        notify: false,
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
                notify: false,
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
                    notify: false,
                },
                Rule {
                    nr: n.clone,
                    all_of: ns_flags,
                    notify: false,
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
        Set::UnixCapabilityFree => {
            let mut all = rules(arch, Set::Unix);
            let not_self = |nr, pairs| Rule {
                nr,
                all_of: vec![Cond::Differs { pairs }],
                notify: false,
            };
            all.extend([
                // The caller itself, by `who` 0. Not its group, even its
                // own by `who` 0: with no PID namespace the command can
                // join a group of the caller's session first (setpgid),
                // and renice the caller's through it.
                not_self(n.setpriority, &[(0, &[PRIO_PROCESS]), (1, &[0])]),
                not_self(n.ioprio_set, &[(0, &[IOPRIO_WHO_PROCESS]), (1, &[0])]),
                not_self(n.prlimit64, &[(0, &[0])]),
                not_self(n.sched_setaffinity, &[(0, &[0])]),
                not_self(n.sched_setscheduler, &[(0, &[0])]),
                not_self(n.sched_setparam, &[(0, &[0])]),
                not_self(n.sched_setattr, &[(0, &[0])]),
            ]);
            all
        }
        Set::Stub => {
            let mut all = rules(arch, Set::Unix);
            all.extend(rules(arch, Set::Namespaces));
            all
        }
        Set::UnixOwn | Set::UnixOwnCapabilityFree => own_sockets(arch, set),
        Set::UnixKernel | Set::UnixKernelCapabilityFree => kernel_sockets(arch, set),
        Set::UnixOwnObserve | Set::UnixOwnCapabilityFreeObserve => {
            let base = if set == Set::UnixOwnObserve {
                Set::UnixOwn
            } else {
                Set::UnixOwnCapabilityFree
            };
            let mut all = rules(arch, base);
            for r in rules(arch, Set::Observe) {
                if !all.iter().any(|o| o.nr == r.nr) {
                    all.push(r);
                }
            }
            all
        }
        Set::Clone3 => Vec::new(),
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
                notify: true,
            })
            .collect(),
    }
}
