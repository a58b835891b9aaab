//! The capability-free way's unix filter (THREATS row 24): the unix
//! filter's whole table still holds with it, and the calls that reach
//! other processes by PID, group or user are refused unless aimed at the
//! caller itself; the namespace way's unix filter lets them through (its
//! PID namespace hides the other processes). Numbers from the kernel's
//! tables, written here independently of rules.rs.

use super::*;

#[test]
fn the_unix_table_holds_with_the_capability_free_way_s_filter() {
    for (abi, program) in [
        (&X86_64, UNIX_CAPFREE_X86_64),
        (&AARCH64, UNIX_CAPFREE_AARCH64),
    ] {
        check(&Abi {
            unix: program,
            ..*abi
        });
    }
}

/// (name, x86_64 number, aarch64 number, arguments aimed at the caller,
/// arguments aimed elsewhere).
type Call = (
    &'static str,
    i32,
    i32,
    &'static [[u64; 3]],
    &'static [[u64; 3]],
);

const PRIO_PROCESS: u64 = 0;
const PRIO_PGRP: u64 = 1;
const PRIO_USER: u64 = 2;
const IOPRIO_WHO_PROCESS: u64 = 1;
const IOPRIO_WHO_PGRP: u64 = 2;
const IOPRIO_WHO_USER: u64 = 3;
/// A PID (or uid) of another process.
const OTHER: u64 = 4242;

const CALLS: [Call; 7] = [
    (
        "setpriority",
        141,
        140,
        // The kernel reads `which` and `who` as int: upper halves ignored.
        // Not its own group (who 0): the command may have joined the
        // caller's first (issue 23).
        &[[PRIO_PROCESS, 0, 10], [PRIO_PROCESS | HIGH, ALL_HIGH, 10]],
        &[
            [PRIO_PGRP, 0, 10],
            [PRIO_PROCESS, OTHER, 10],
            [PRIO_PGRP, OTHER, 10],
            [PRIO_USER, 0, 10],
            [PRIO_USER, OTHER, 10],
            [PRIO_PROCESS, 0xffff_ffff, 10],
        ],
    ),
    (
        "ioprio_set",
        251,
        30,
        &[[IOPRIO_WHO_PROCESS, 0, 0], [IOPRIO_WHO_PROCESS, HIGH, 0]],
        &[
            [IOPRIO_WHO_PGRP, 0, 0],
            [IOPRIO_WHO_PROCESS, OTHER, 0],
            [IOPRIO_WHO_PGRP, OTHER, 0],
            [IOPRIO_WHO_USER, 0, 0],
            [IOPRIO_WHO_USER, OTHER, 0],
        ],
    ),
    (
        "prlimit64",
        302,
        261,
        &[[0, 7, 0], [HIGH, 7, 0]],
        &[[OTHER, 7, 0], [0xffff_ffff, 7, 0]],
    ),
    (
        "sched_setaffinity",
        203,
        122,
        &[[0, 128, 0]],
        &[[OTHER, 128, 0]],
    ),
    (
        "sched_setscheduler",
        144,
        119,
        &[[0, 0, 0]],
        &[[OTHER, 0, 0]],
    ),
    ("sched_setparam", 142, 118, &[[0, 0, 0]], &[[OTHER, 0, 0]]),
    ("sched_setattr", 314, 274, &[[0, 0, 0]], &[[OTHER, 0, 0]]),
];

#[test]
fn calls_on_other_processes_are_refused_on_the_capability_free_way_only() {
    for (abi, capfree, x86) in [
        (&X86_64, UNIX_CAPFREE_X86_64, true),
        (&AARCH64, UNIX_CAPFREE_AARCH64, false),
    ] {
        for (name, nr_x86, nr_arm, itself, others) in CALLS {
            let nr = if x86 { nr_x86 } else { nr_arm };
            let data = |a: &[u64; 3]| SeccompData {
                nr,
                arch: abi.arch,
                instruction_pointer: 0,
                args: [a[0], a[1], a[2], 0, 0, 0],
            };
            for a in itself {
                let d = data(a);
                assert_eq!(
                    stacked(&[capfree, abi.ns], &d),
                    Allow,
                    "{} {name} {a:x?}",
                    abi.name
                );
            }
            for a in others {
                let d = data(a);
                assert_eq!(
                    stacked(&[capfree, abi.ns], &d),
                    EPERM,
                    "{} {name} {a:x?}",
                    abi.name
                );
                assert_eq!(stacked(&[capfree], &d), EPERM, "{} {name} {a:x?}", abi.name);
                // The namespace way: its PID namespace hides the others.
                assert_eq!(
                    stacked(&[abi.unix, abi.ns], &d),
                    Allow,
                    "{} {name} {a:x?}",
                    abi.name
                );
            }
        }
    }
}
