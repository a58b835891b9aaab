//! Compiles the two seccomp filters for x86_64 and aarch64 into `OUT_DIR`.
//!
//! The rules are data in `src/filter/rules.rs`; seccompiler turns them into
//! classic BPF. seccompiler has one match action per filter and no x32
//! check, so two short sequences are spliced in right after its
//! "load syscall number" instruction (where no jump crosses, since classic
//! BPF only jumps forward and the architecture check lands exactly there):
//!
//! * unix filter on x86_64: any number with bit 0x40000000 set, other than
//!   -1, kills the process (x32 ABI);
//! * namespaces filter: `clone3` answers ENOSYS (libc then falls back to
//!   `clone`, whose flags the filter can read).
//!
//! The observe filter answers SECCOMP_RET_USER_NOTIF, an action seccompiler
//! does not have: it is compiled with TRACE(0) and each `ret TRACE` is
//! rewritten; the build checks that exactly the match returns were.
//!
//! The build fails rather than ship a filter that is empty, too long, or
//! whose layout is not the one this splice expects.

use std::collections::BTreeMap;
use std::path::PathBuf;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

#[path = "src/filter/rules.rs"]
#[allow(dead_code)]
mod rules;

use rules::{Arch, Set};

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_JMP_JSET_K: u16 = 0x45;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_TRACE: u32 = 0x7ff0_0000;
const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
const SECCOMP_DATA_NR_OFFSET: u32 = 0;
const SECCOMP_DATA_ARCH_OFFSET: u32 = 4;
const BPF_MAXINSNS: usize = 4096;

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

fn target(arch: Arch) -> TargetArch {
    match arch {
        Arch::X86_64 => TargetArch::x86_64,
        Arch::Aarch64 => TargetArch::aarch64,
    }
}

fn compile(arch: Arch, set: Set) -> Result<BpfProgram, String> {
    let mut map: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for rule in rules::rules(arch, set) {
        let mut alternatives = Vec::new();
        for all_of in &rule.any_of {
            let conds = all_of
                .iter()
                .map(|c| {
                    let op = if c.mask == u32::MAX {
                        SeccompCmpOp::Eq
                    } else {
                        SeccompCmpOp::MaskedEq(u64::from(c.mask))
                    };
                    SeccompCondition::new(c.arg, SeccompCmpArgLen::Dword, op, u64::from(c.value))
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            alternatives.push(SeccompRule::new(conds).map_err(|e| e.to_string())?);
        }
        if map.insert(i64::from(rule.nr), alternatives).is_some() {
            return Err(format!("syscall {} listed twice", rule.nr));
        }
    }
    if map.contains_key(&i64::from(rules::CLONE3)) {
        return Err("clone3 must not be an EPERM rule: it answers ENOSYS".into());
    }
    let matched = match set {
        Set::Observe => SeccompAction::Trace(0),
        Set::Unix | Set::Namespaces => SeccompAction::Errno(rules::EPERM),
    };
    let filter = SeccompFilter::new(map, SeccompAction::Allow, matched, target(arch))
        .map_err(|e| e.to_string())?;
    let mut prog: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;

    // The layout the splice relies on: arch check (3), then `ld nr`.
    let expected_head = [
        (BPF_LD_W_ABS, SECCOMP_DATA_ARCH_OFFSET),
        (BPF_JMP_JEQ_K, prog.get(1).map_or(0, |i| i.k)),
        (BPF_RET_K, SECCOMP_RET_KILL_PROCESS),
        (BPF_LD_W_ABS, SECCOMP_DATA_NR_OFFSET),
    ];
    if prog.len() < 5
        || prog[1].jt != 1
        || prog[1].jf != 0
        || expected_head
            .iter()
            .zip(&prog)
            .any(|(&(code, k), insn)| insn.code != code || insn.k != k)
    {
        return Err("seccompiler's program does not start with arch check + load nr".into());
    }

    let splice: Vec<sock_filter> = match (arch, set) {
        (Arch::X86_64, Set::Unix) => vec![
            // A = nr. Not x32: skip to the rules.
            jump(BPF_JMP_JSET_K, rules::X32_SYSCALL_BIT, 0, 2),
            // -1 is "no syscall" (used by tracers); the kernel answers ENOSYS.
            jump(BPF_JMP_JEQ_K, u32::MAX, 1, 0),
            stmt(BPF_RET_K, SECCOMP_RET_KILL_PROCESS),
        ],
        (_, Set::Namespaces) => vec![
            jump(BPF_JMP_JEQ_K, rules::CLONE3, 0, 1),
            stmt(BPF_RET_K, SECCOMP_RET_ERRNO | rules::ENOSYS),
        ],
        (Arch::Aarch64, Set::Unix) | (_, Set::Observe) => Vec::new(),
    };
    prog.splice(4..4, splice);

    let traces = prog
        .iter()
        .filter(|i| i.code == BPF_RET_K && i.k == SECCOMP_RET_TRACE)
        .count();
    if set == Set::Observe {
        if traces == 0 {
            return Err("observe filter has no match return".into());
        }
        for insn in prog.iter_mut() {
            if insn.code == BPF_RET_K && insn.k == SECCOMP_RET_TRACE {
                insn.k = SECCOMP_RET_USER_NOTIF;
            }
        }
    } else if traces != 0 {
        return Err("a TRACE return in a refusing filter".into());
    }

    if prog.is_empty() || prog.len() > BPF_MAXINSNS {
        return Err(format!("program length {} out of range", prog.len()));
    }
    Ok(prog)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/filter/rules.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for arch in Arch::ALL {
        for set in Set::ALL {
            let prog = compile(arch, set).unwrap_or_else(|e| {
                panic!(
                    "cannot build the {} filter for {}: {e}",
                    set.name(),
                    arch.name()
                )
            });
            // struct sock_filter, little-endian (both targets are).
            let mut bytes = Vec::with_capacity(prog.len() * 8);
            for insn in &prog {
                bytes.extend_from_slice(&insn.code.to_le_bytes());
                bytes.push(insn.jt);
                bytes.push(insn.jf);
                bytes.extend_from_slice(&insn.k.to_le_bytes());
            }
            let path = out.join(format!("{}-{}.bpf", arch.name(), set.name()));
            std::fs::write(&path, &bytes)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        }
    }
}
