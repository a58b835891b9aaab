//! The property test: random `seccomp_data` (numbers of every kind, other
//! architectures, arguments with any upper half) through the generated
//! programs of both architectures must match a plain-Rust model of
//! THREATS.md. Its argument samples are the seccompiler check's too
//! (reference.rs).

use super::*;

/// THREATS.md as plain Rust, for the property test: what both filters, and
/// the unix filter alone, must answer. Written from the table, not from
/// `rules.rs`.
fn model(abi: &Abi, d: &SeccompData) -> (Outcome, Outcome) {
    if d.arch != abi.arch {
        return (Kill, Kill);
    }
    let nr = d.nr;
    if abi.arch == AUDIT_ARCH_X86_64 && nr != -1 && (nr as u32) & 0x4000_0000 != 0 {
        return (Kill, Kill);
    }
    let low = |i: usize| d.args[i] & 0xffff_ffff;
    let unix = if nr == abi.socket && (low(0) == AF_UNIX || low(0) == AF_VSOCK)
        || nr == abi.socketpair
            && low(0) == AF_UNIX
            && matches!(low(1) & 0xf, SOCK_DGRAM | SOCK_RAW)
        || IO_URING.contains(&nr)
        || nr == abi.ioctl && (low(1) == TIOCSTI || low(1) == TIOCLINUX)
    {
        EPERM
    } else {
        Allow
    };
    let ns = if nr == 435 {
        ENOSYS
    } else if (nr == abi.unshare || nr == abi.clone) && low(0) & (CLONE_NEWUSER | CLONE_NEWNS) != 0
        || [abi.setns, abi.mount, abi.umount2, abi.pivot_root].contains(&nr)
        || MOUNT_API.contains(&nr)
    {
        EPERM
    } else {
        Allow
    };
    // No syscall is refused by both, so "most restrictive" is "not Allow".
    let both = if unix != Allow { unix } else { ns };
    (both, unix)
}

/// xorshift64*: a small deterministic generator (no dependency).
pub(in crate::filter) struct Rng(pub(in crate::filter) u64);

impl Rng {
    pub(in crate::filter) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[(self.next() % from.len() as u64) as usize]
    }
}

fn random_data(abi: &Abi, rng: &mut Rng) -> SeccompData {
    let listed = [
        abi.ioctl,
        abi.socket,
        abi.socketpair,
        abi.unshare,
        abi.clone,
        abi.setns,
        abi.mount,
        abi.umount2,
        abi.pivot_root,
        435,
        425,
        426,
        427,
        428,
        433,
        442,
        467,
    ];
    let nr = match rng.next() % 8 {
        0..=3 => rng.pick(&listed),
        4 => (rng.next() % 600) as i32,
        // x32 numbers, and neighbours of the listed ones with the bit set
        5 => (0x4000_0000 | rng.pick(&listed) as u32 | (rng.next() as u32 & 0x3f00_0000)) as i32,
        6 => rng.pick(&[-1, i32::MAX, i32::MIN, 0x4000_0000, 0x3fff_ffff]),
        _ => rng.next() as i32,
    };
    let arch = if rng.next() % 10 == 0 {
        rng.pick(&[
            AUDIT_ARCH_X86_64,
            AUDIT_ARCH_I386,
            AUDIT_ARCH_AARCH64,
            AUDIT_ARCH_ARM,
            0,
            u32::MAX,
        ])
    } else {
        abi.arch
    };
    let args = random_args(rng);
    SeccompData {
        nr,
        arch,
        instruction_pointer: rng.next(),
        args,
    }
}

/// Six arguments as the property test draws them: values the filters
/// test (and their unions), random low halves, and upper halves of every
/// kind (the filters read the low 32 bits only). Also the samples of the
/// seccompiler reference check (reference.rs).
pub(in crate::filter) fn random_args(rng: &mut Rng) -> [u64; 6] {
    let interesting = [
        AF_UNIX,
        AF_VSOCK,
        AF_INET,
        AF_INET6,
        AF_NETLINK,
        SOCK_STREAM,
        SOCK_DGRAM,
        SOCK_RAW,
        SOCK_SEQPACKET,
        SOCK_DGRAM | SOCK_CLOEXEC,
        SOCK_RAW | SOCK_NONBLOCK,
        CLONE_NEWUSER,
        CLONE_NEWNS,
        CLONE_NEWPID,
        CLONE_NEWNET,
        SIGCHLD,
        CLONE_THREAD_FLAGS,
        TIOCSTI,
        TIOCLINUX,
        TTY_NEIGHBOURS[0],
        TTY_NEIGHBOURS[3],
        0,
        0xffff_ffff,
    ];
    let mut args = [0u64; 6];
    for a in &mut args {
        let low = match rng.next() % 3 {
            0 => rng.pick(&interesting),
            1 => rng.pick(&interesting) | rng.pick(&interesting),
            _ => rng.next() & 0xffff_ffff,
        };
        let high = match rng.next() % 3 {
            0 => 0,
            1 => rng.pick(&[HIGH, ALL_HIGH, 0x8000_0000_0000_0000]),
            _ => rng.next() & ALL_HIGH,
        };
        *a = low | high;
    }
    args
}

fn property(abi: &Abi, seed: u64, cases: usize) {
    let mut rng = Rng(seed);
    let mut seen = std::collections::BTreeMap::new();
    for i in 0..cases {
        let d = random_data(abi, &mut rng);
        let want = model(abi, &d);
        let got = (stacked(&[abi.unix, abi.ns], &d), stacked(&[abi.unix], &d));
        assert_eq!(got, want, "{} case {i}: {d:?}", abi.name);
        *seen.entry(format!("{:?}", want.0)).or_insert(0usize) += 1;
    }
    // The generator must reach every outcome, or the test proves little.
    for outcome in ["Allow", "Errno(1)", "Errno(38)", "Kill"] {
        assert!(
            seen.get(outcome).copied().unwrap_or(0) > cases / 100,
            "{}: {seen:?}",
            abi.name
        );
    }
}

#[test]
fn x86_64_programs_agree_with_the_model_on_random_input() {
    property(&X86_64, 0x5eed_0001, 50_000);
}

#[test]
fn aarch64_programs_agree_with_the_model_on_random_input() {
    property(&AARCH64, 0x5eed_0002, 50_000);
}
