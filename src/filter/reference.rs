//! seccompiler, the independent check of `build.rs`'s assembler.
//!
//! The same rule table (`rules.rs`) is compiled a second time, by
//! seccompiler (rust-vmm's filter compiler, the one Firecracker ships),
//! and both programs are run through the interpreter (`interp.rs`) for
//! every syscall number 0-511 of both architectures and every program
//! (`Set::ALL` but `Clone3`, which has no rule, and `Reported::all`),
//! with the property
//! test's argument samples (4000 for a number the table lists, 16 for
//! any other): they must give the same answer (EPERM,
//! USER_NOTIF or allow) every time. The table itself is checked against
//! THREATS.md by tests.rs; this checks that our compiler says what the
//! table says, as a well-kept general compiler reads it.
//!
//! What seccompiler cannot express is left to tests.rs, as before: the
//! kill of another architecture (it kills those too, but with its own
//! prologue; only the native architecture is compared here), the kill of
//! x32 numbers (above 511), `clone3`'s ENOSYS (435 is skipped), and
//! USER_NOTIF itself: seccompiler has no such action, so its observe
//! program answers a match with SECCOMP_RET_LOG, read here as "notified".
//!
//! seccompiler expresses "one of these values" and "any of these bits" as
//! alternatives: one rule per value, per bit, per combination of the
//! conditions of one of our rules (its rules for one number are ORed, the
//! conditions of one rule ANDed), each a masked 32-bit (`Dword`) equality;
//! "an argument none of its values" is one rule per argument, `!=` each
//! value.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::interp::{Decoded, SeccompData, run_chain};
use super::rules::{self, Arch, Cond, Reported, Rule, Set};
use super::tests::property::{Rng, random_args};
use super::tests::{Outcome, outcome};

const SECCOMP_RET_LOG: u32 = 0x7ffc_0000;
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const AUDIT_ARCH_AARCH64: u32 = 0xc000_00b7;
/// Compared numbers: every number either architecture's table has (both
/// end below 470), and the unassigned ones up to the x32 range.
const NUMBERS: std::ops::Range<i32> = 0..512;
/// Argument samples for a number the table lists, and for any other.
const SAMPLES_LISTED: usize = 4000;
const SAMPLES: usize = 16;

/// One condition of ours as seccompiler's alternatives (any one holds),
/// each a conjunction of seccompiler conditions.
fn alternatives(cond: &Cond) -> Vec<Vec<SeccompCondition>> {
    let dword = |arg: u8, op: SeccompCmpOp, value: u32| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, u64::from(value))
            .expect("a valid condition")
    };
    let masked = |arg: u8, mask: u32, value: u32| {
        vec![dword(arg, SeccompCmpOp::MaskedEq(u64::from(mask)), value)]
    };
    match *cond {
        Cond::OneOf { arg, mask, values } => values.iter().map(|&v| masked(arg, mask, v)).collect(),
        Cond::AnyBit { arg, bits } => (0..32)
            .map(|b| 1u32 << b)
            .filter(|bit| bits & bit != 0)
            .map(|bit| masked(arg, bit, bit))
            .collect(),
        // One argument none of its values: `!=` each of them.
        Cond::Differs { pairs } => pairs
            .iter()
            .map(|&(arg, values)| {
                values
                    .iter()
                    .map(|&v| dword(arg, SeccompCmpOp::Ne, v))
                    .collect()
            })
            .collect(),
    }
}

/// One rule of ours as seccompiler rules: every combination of one
/// alternative per condition. `None`: unconditional.
fn expand(rule: &Rule) -> Option<Vec<SeccompRule>> {
    if rule.all_of.is_empty() {
        return None;
    }
    let mut combos: Vec<Vec<SeccompCondition>> = vec![Vec::new()];
    for cond in &rule.all_of {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                alternatives(cond).into_iter().map(move |alt| {
                    let mut next = c.clone();
                    next.extend(alt);
                    next
                })
            })
            .collect();
    }
    Some(
        combos
            .into_iter()
            .map(|c| SeccompRule::new(c).expect("a valid rule"))
            .collect(),
    )
}

/// seccompiler's programs for our table, as instruction bytes: the
/// refused calls' and the notified calls' (seccompiler has one answer per
/// program; the numbers of the two never overlap). `None`: no such rule.
fn reference(arch: Arch, all: &[Rule]) -> [Option<Vec<u8>>; 2] {
    [false, true].map(|notify| {
        let rules: Vec<&Rule> = all.iter().filter(|r| r.notify == notify).collect();
        (!rules.is_empty()).then(|| compile(arch, &rules, notify))
    })
}

fn compile(arch: Arch, rules: &[&Rule], notify: bool) -> Vec<u8> {
    let mut chains: BTreeMap<i64, Option<Vec<SeccompRule>>> = BTreeMap::new();
    for rule in rules {
        let chain = chains.entry(i64::from(rule.nr)).or_insert(Some(Vec::new()));
        match (chain.as_mut(), expand(rule)) {
            // An unconditional rule matches whatever else is listed.
            (_, None) => *chain = None,
            (Some(list), Some(more)) => list.extend(more),
            (None, Some(_)) => {}
        }
    }
    // seccompiler's empty chain is its "always".
    let chains = chains
        .into_iter()
        .map(|(nr, chain)| (nr, chain.unwrap_or_default()))
        .collect();
    let on_match = if notify {
        SeccompAction::Log
    } else {
        SeccompAction::Errno(rules::EPERM)
    };
    let target = match arch {
        Arch::X86_64 => TargetArch::x86_64,
        Arch::Aarch64 => TargetArch::aarch64,
    };
    let filter = SeccompFilter::new(chains, SeccompAction::Allow, on_match, target)
        .expect("seccompiler accepts the table");
    let program: BpfProgram = filter.try_into().expect("seccompiler compiles it");
    program
        .iter()
        .flat_map(|i| {
            let mut b = Vec::with_capacity(8);
            b.extend_from_slice(&i.code.to_le_bytes());
            b.push(i.jt);
            b.push(i.jf);
            b.extend_from_slice(&i.k.to_le_bytes());
            b
        })
        .collect()
}

/// The answer of a program, LOG read as a notification.
fn answer(program: &Decoded, data: &SeccompData) -> Outcome {
    let ret = program.run(data).expect("the program runs");
    if ret & 0xffff_0000 == SECCOMP_RET_LOG {
        Outcome::Notify
    } else {
        outcome(ret)
    }
}

/// Compares our program with seccompiler's for one architecture and set;
/// returns how often each answer came.
fn compare(arch: Arch, name: &str, all: &[Rule], ours: &[u8]) -> BTreeMap<String, usize> {
    let ours = Decoded::new(ours);
    let [refused, notified] = reference(arch, all);
    let (refused, notified) = (
        refused.as_deref().map(Decoded::new),
        notified.as_deref().map(Decoded::new),
    );
    let audit = match arch {
        Arch::X86_64 => AUDIT_ARCH_X86_64,
        Arch::Aarch64 => AUDIT_ARCH_AARCH64,
    };
    let listed: Vec<u32> = all.iter().map(|r| r.nr).collect();
    let mut rng = Rng(0x5eed_0003 ^ u64::from(audit));
    let mut seen = BTreeMap::new();
    for nr in NUMBERS.filter(|&nr| nr as u32 != rules::CLONE3) {
        let samples = if listed.contains(&(nr as u32)) {
            SAMPLES_LISTED
        } else {
            SAMPLES
        };
        let args = std::iter::once([0; 6]).chain((0..samples).map(|_| random_args(&mut rng)));
        for args in args {
            let data = SeccompData {
                nr,
                arch: audit,
                instruction_pointer: 0,
                args,
            };
            let got = answer(&ours, &data);
            // The refusal where one is made, else the notification.
            let want = match (
                refused.as_ref().map(|p| answer(p, &data)),
                notified.as_ref().map(|p| answer(p, &data)),
            ) {
                (Some(r), _) if r != Outcome::Allow => r,
                (_, Some(n)) => n,
                (r, None) => r.expect("one of the two"),
            };
            assert_eq!(
                got,
                want,
                "{} {name} filter, nr {nr}, args {args:#x?}: ours {got:?}, seccompiler {want:?}",
                arch.name(),
            );
            *seen.entry(format!("{got:?}")).or_insert(0) += 1;
        }
    }
    seen
}

#[test]
fn our_x86_64_programs_answer_as_seccompilers_for_every_number_and_sample() {
    answer_as_seccompiler(Arch::X86_64);
}

/// The same for aarch64: a test of its own, so the two run side by side.
#[test]
fn our_aarch64_programs_answer_as_seccompilers_for_every_number_and_sample() {
    answer_as_seccompiler(Arch::Aarch64);
}

fn answer_as_seccompiler(arch: Arch) {
    // Clone3 has no rule: its one answer is tests.rs's and the
    // reported chains' (below).
    let programs = Set::ALL
        .into_iter()
        .filter(|&s| s != Set::Clone3)
        .map(|s| (s.name().to_string(), rules::rules(arch, s)))
        .chain(
            Reported::all()
                .into_iter()
                .map(|r| (r.name(), r.rules(arch))),
        );
    for (name, all) in programs {
        let ours = built(arch, &name);
        let seen = compare(arch, &name, &all, &ours);
        // Not vacuous: every answer came, each many times.
        let mut answers = vec!["Allow"];
        if all.iter().any(|r| r.notify) {
            answers.push("Notify");
        }
        if all.iter().any(|r| !r.notify) {
            answers.push("Errno(1)");
        }
        for answer in answers {
            assert!(
                seen.get(answer).copied().unwrap_or(0) >= SAMPLES,
                "{} {name}: {seen:?}",
                arch.name(),
            );
        }
    }
}

/// A program build.rs wrote.
fn built(arch: Arch, name: &str) -> Vec<u8> {
    let file = format!("{}/{}-{name}.bpf", env!("OUT_DIR"), arch.name());
    std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn a_reported_chain_answers_as_todays_with_each_refusal_notified() {
    const NOTIFY: u32 = rules::SECCOMP_RET_USER_NOTIF;
    const EPERM: u32 = rules::SECCOMP_RET_ERRNO | rules::EPERM;
    for arch in Arch::ALL {
        let audit = match arch {
            Arch::X86_64 => AUDIT_ARCH_X86_64,
            Arch::Aarch64 => AUDIT_ARCH_AARCH64,
        };
        for r in Reported::all() {
            let today: Vec<Decoded> = r
                .today()
                .into_iter()
                .map(|s| Decoded::new(&built(arch, s.name())))
                .collect();
            let mut reported = vec![Decoded::new(&built(arch, &r.name()))];
            if !r.nested {
                reported.push(Decoded::new(&built(arch, Set::Clone3.name())));
            }
            let mut rng = Rng(0x5eed_0044 ^ u64::from(audit));
            let (mut notified, mut kept) = (0, 0);
            let x32 = [0x4000_0000, 0x4000_0029, 0x4000_01ff];
            for nr in NUMBERS.chain(x32) {
                let args = std::iter::once([0; 6]).chain((0..64).map(|_| random_args(&mut rng)));
                for args in args {
                    for arch_word in [audit, 0x4000_0003] {
                        let data = SeccompData {
                            nr,
                            arch: arch_word,
                            instruction_pointer: 0,
                            args,
                        };
                        let want = match run_chain(&today, &data).expect("the chain runs") {
                            EPERM => NOTIFY,
                            other => other,
                        };
                        let got = run_chain(&reported, &data).expect("the chain runs");
                        assert_eq!(
                            got,
                            want,
                            "{} {}: nr {nr:#x}, arch {arch_word:#x}, args {args:#x?}",
                            arch.name(),
                            r.name()
                        );
                        if got == NOTIFY {
                            notified += 1;
                        } else {
                            kept += 1;
                        }
                    }
                }
            }
            assert!(
                notified > 100 && kept > 100,
                "{}: {notified} {kept}",
                r.name()
            );
        }
    }
}
