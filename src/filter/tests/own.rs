//! The own-sockets policy's programs (issue 43): `unix-own` (and its
//! capability-free form) lets `AF_UNIX` stream and seqpacket sockets be
//! made, with any flags, and refuses every other `AF_UNIX` type and vsock,
//! as the unix filter does the rest of its table, and sends every
//! `connect` and `bind` to the stub (its `-observe` forms also the observe
//! filter's calls). Numbers from the
//! kernel's tables, written here independently of rules.rs.

use super::*;

const SOCK_NONBLOCK: u64 = 0x800;
const SOCK_CLOEXEC: u64 = 0x8_0000;

fn data(arch: u32, nr: i32, args: [u64; 6]) -> SeccompData {
    SeccompData {
        nr,
        arch,
        instruction_pointer: 0,
        args,
    }
}

fn own(name: &str) -> Vec<u8> {
    let file = format!("{}/{name}.bpf", env!("OUT_DIR"));
    std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn own_sockets_stream_and_seqpacket_only() {
    for abi in [&X86_64, &AARCH64] {
        for variant in ["unix-own", "unix-own-capability-free"] {
            let prog = own(&format!("{}-{variant}", abi.name));
            let answer = |family: u64, kind: u64| {
                run(
                    &prog,
                    &data(abi.arch, abi.socket, [family, kind, 0, 0, 0, 0]),
                )
                .map(outcome)
                .unwrap()
            };
            for flags in [0, SOCK_NONBLOCK, SOCK_CLOEXEC, SOCK_NONBLOCK | SOCK_CLOEXEC] {
                for kind in [SOCK_STREAM, SOCK_SEQPACKET] {
                    assert_eq!(
                        answer(AF_UNIX, kind | flags),
                        Allow,
                        "{} {variant}",
                        abi.name
                    );
                    // Upper bits never count (the kernel reads an int).
                    assert_eq!(answer(AF_UNIX | 1 << 32, kind | flags | 1 << 40), Allow);
                    assert_eq!(answer(AF_VSOCK, kind | flags), EPERM);
                }
                for kind in [SOCK_DGRAM, SOCK_RAW, 4, 6, 10] {
                    assert_eq!(
                        answer(AF_UNIX, kind | flags),
                        EPERM,
                        "{} type {kind}",
                        abi.name
                    );
                }
                // A flag the kernel does not know: EINVAL there, EPERM here.
                assert_eq!(answer(AF_UNIX, SOCK_STREAM | 0x100), EPERM);
                for family in [AF_INET, AF_INET6, AF_NETLINK, AF_PACKET] {
                    assert_eq!(answer(family, SOCK_DGRAM | flags), Allow);
                }
            }
            // Datagram pairs go to the stub (made as sequenced-packet
            // ones: sockets/pair.rs), stream pairs made.
            let pair = |kind| {
                run(
                    &prog,
                    &data(abi.arch, abi.socketpair, [AF_UNIX, kind, 0, 0, 0, 0]),
                )
                .map(outcome)
                .unwrap()
            };
            assert_eq!(pair(SOCK_DGRAM), Notify);
            assert_eq!(pair(SOCK_RAW | SOCK_CLOEXEC), Notify);
            assert_eq!(pair(SOCK_STREAM), Allow);
            // A fence the command puts on itself goes to the stub.
            assert_eq!(
                run(&prog, &data(abi.arch, 446, [0; 6]))
                    .map(outcome)
                    .unwrap(),
                Notify
            );
            // The rest of the unix table: io_uring_setup.
            assert_eq!(
                run(&prog, &data(abi.arch, 425, [0; 6]))
                    .map(outcome)
                    .unwrap(),
                EPERM
            );
        }
    }
}

#[test]
fn the_unix_table_holds_with_the_own_programs_but_for_stream_sockets() {
    // check() asserts socket(AF_UNIX, SOCK_STREAM) refused: the deny
    // program keeps the whole table, the own one differs only there
    // (above).
    for abi in [&X86_64, &AARCH64] {
        let deny = own(&format!("{}-unix", abi.name));
        assert_eq!(deny, abi.unix, "{}", abi.name);
    }
}

#[test]
fn connect_and_bind_go_to_the_stub() {
    // (abi, connect, bind, listen, accept4)
    for (abi, connect, bind, others) in [
        (&X86_64, 42, 49, [50, 288, 44, 0]),
        (&AARCH64, 203, 200, [201, 242, 206, 63]),
    ] {
        for set in [
            "unix-own",
            "unix-own-capability-free",
            "unix-own-observe",
            "unix-own-capability-free-observe",
        ] {
            let prog = own(&format!("{}-{set}", abi.name));
            let answer = |nr| {
                run(&prog, &data(abi.arch, nr, [3, 0, 110, 0, 0, 0]))
                    .map(outcome)
                    .unwrap()
            };
            assert_eq!(answer(connect), Notify, "{} {set}", abi.name);
            assert_eq!(answer(bind), Notify, "{} {set}", abi.name);
            if !set.ends_with("observe") {
                for nr in others {
                    assert_eq!(answer(nr), Allow, "{} {set} {nr}", abi.name);
                }
            }
            // Another architecture is killed, as in every program.
            assert_eq!(
                run(&prog, &data(abi.foreign[0], connect, [0; 6]))
                    .map(outcome)
                    .unwrap(),
                Kill
            );
        }
    }
}

/// Where the kernel holds the policy (issue 55, `unix-kernel`): every
/// `AF_UNIX` socket type and pair is made (Landlock decides where each
/// reaches), nothing goes to the stub, and the rest of the unix table
/// holds: vsock, io_uring, terminal typing.
#[test]
fn the_kernels_programs_let_every_unix_socket_be_made_and_notify_nothing() {
    for (abi, connect, bind, sendto) in [(&X86_64, 42, 49, 44), (&AARCH64, 203, 200, 206)] {
        for variant in ["unix-kernel", "unix-kernel-capability-free"] {
            let prog = own(&format!("{}-{variant}", abi.name));
            let answer = |nr: i32, args: [u64; 6]| {
                run(&prog, &data(abi.arch, nr, args)).map(outcome).unwrap()
            };
            for flags in [0, SOCK_NONBLOCK, SOCK_CLOEXEC] {
                for kind in [SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET, SOCK_RAW] {
                    let what = format!("{} {variant} type {kind}", abi.name);
                    assert_eq!(
                        answer(abi.socket, [AF_UNIX, kind | flags, 0, 0, 0, 0]),
                        Allow,
                        "{what}"
                    );
                    assert_eq!(
                        answer(abi.socketpair, [AF_UNIX, kind | flags, 0, 0, 0, 0]),
                        Allow,
                        "{what}"
                    );
                    assert_eq!(
                        answer(abi.socket, [AF_VSOCK, kind | flags, 0, 0, 0, 0]),
                        EPERM,
                        "{what}"
                    );
                }
            }
            for nr in [connect, bind, sendto] {
                assert_eq!(
                    answer(nr, [3, 0, 110, 0, 0, 0]),
                    Allow,
                    "{} {variant} {nr}",
                    abi.name
                );
            }
            assert_eq!(answer(425, [0; 6]), EPERM, "{} io_uring_setup", abi.name);
            assert_eq!(
                answer(abi.ioctl, [0, 0x5412, 0, 0, 0, 0]),
                EPERM,
                "{} TIOCSTI",
                abi.name
            );
            assert_eq!(
                answer(abi.socket, [AF_UNIX, SOCK_STREAM, 0, 0, 0, 0]),
                Allow
            );
        }
    }
}

/// The capability-free way's own-sockets programs send
/// `prctl(PR_SET_DUMPABLE)` to the stub (which answers it done, unmade,
/// for 0: sockets.rs); the namespace way's do not. Both send
/// `PR_SET_CHILD_SUBREAPER` (sockets/fence.rs), the kernel's neither; no
/// other `prctl`.
#[test]
fn a_process_asking_not_to_be_dumpable_goes_to_the_capability_free_stub() {
    for (abi, prctl) in [(&X86_64, 157), (&AARCH64, 167)] {
        for (set, notified) in [
            ("unix-own-capability-free", true),
            ("unix-own-capability-free-observe", true),
            ("unix-own", false),
            ("unix-kernel-capability-free", false),
        ] {
            let prog = own(&format!("{}-{set}", abi.name));
            let answer = |args: [u64; 6]| {
                run(&prog, &data(abi.arch, prctl, args))
                    .map(outcome)
                    .unwrap()
            };
            let want = if notified { Notify } else { Allow };
            assert_eq!(answer([4, 0, 0, 0, 0, 0]), want, "{} {set}", abi.name);
            let own = set.starts_with("unix-own");
            assert_eq!(
                answer([36, 1, 0, 0, 0, 0]),
                if own { Notify } else { Allow },
                "{} {set} PR_SET_CHILD_SUBREAPER",
                abi.name
            );
            // Upper bits never count.
            assert_eq!(
                answer([4 | 1 << 32, 1 << 33, 0, 0, 0, 0]),
                want,
                "{} {set}",
                abi.name
            );
            assert_eq!(
                answer([4, 1, 0, 0, 0, 0]),
                want,
                "{} {set} dumpable 1",
                abi.name
            );
            assert_eq!(
                answer([15, 0, 0, 0, 0, 0]),
                Allow,
                "{} {set} PR_SET_NAME",
                abi.name
            );
        }
    }
}
