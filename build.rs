//! Compiles the seccomp filters for x86_64 and aarch64 into `OUT_DIR`.
//!
//! The rules are data in `src/filter/rules.rs`; this file turns them into
//! classic BPF with a small assembler of its own: five programs per
//! architecture (unix, namespaces, the capability-free way's unix,
//! observe, and the stub's own: unix and namespaces in one). Each program:
//!
//! 1. loads the architecture and kills any other (an x86_64 process can
//!    enter the i386 ABI with `int 0x80`), then loads the syscall number;
//! 2. finds the number's rule in a decision tree: `jge` splits, down to
//!    chains of `jeq` tests (three or more consecutive numbers refused
//!    outright make one range test), the tree chosen to run the fewest
//!    instructions summed over the numbers 0-511 (`plan_tree`); no rule
//!    allows the call. In the namespaces filter (and the stub's) `clone3`
//!    answers ENOSYS (libc then falls back to `clone`, whose flags the
//!    filter can read). In x86_64's unix filters (and the stub's), past
//!    every rule, any number with bit 0x40000000 set, other than -1, kills
//!    the process (x32 ABI; -1 is "no syscall", used by tracers, and the
//!    kernel answers ENOSYS);
//! 3. a rule with conditions jumps to its block, shared by rules with the
//!    same conditions: each condition loads the low 32 bits of one
//!    argument (masked when it needs to) and tests it against its values,
//!    or for any of its bits;
//! 4. the answers: EPERM, SECCOMP_RET_USER_NOTIF (the observe filter's
//!    rules, and the own-sockets programs' `connect` and `bind`), allow,
//!    kill, and ENOSYS.
//!
//! Why not a general filter compiler (seccompiler was the first one): the
//! kernel's cost of installing a filter is a fixed ~25 us here (it is
//! allocated, checked, translated, JIT-compiled and set read-only), plus
//! about 1.5 us for each instruction the program runs for a number: the
//! kernel runs it for every syscall number of the architecture to fill its
//! per-number action cache. The helper installs three per run, two of them
//! between its start and the command's. seccompiler's programs were 53 and
//! 95 instructions long; a chain of tests in number order ran 9 and 14
//! instructions for a number, on average over 0-469; the trees run 7.2 and
//! 7.8 (the observe filter's 9.1 against 26.8), and the installs took
//! 1.6 us, 6.5 us and 17 us less (1000 each; docs/performance.md).
//!
//! seccompiler keeps the role a well-kept general compiler serves best next
//! to a hand-written one: the reference. `src/filter/reference.rs` (a unit
//! test; seccompiler is a dev-dependency, never in the binary) compiles the
//! same table with it and requires the same answer from both programs for
//! every syscall number 0-511 of both architectures and the property
//! test's argument samples. A wrong mask, range end, `JSET` or value here
//! fails it (docs/testing.md, "The tests, file by file").
//!
//! The build fails rather than ship a program that is empty, too long,
//! jumps backwards or farther than classic BPF can, or lists a number
//! twice.

use std::path::PathBuf;

#[path = "src/filter/rules.rs"]
#[allow(dead_code)]
mod rules;

use rules::{
    Arch, Cond, Reported, Rule, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS,
    SECCOMP_RET_USER_NOTIF, Set,
};

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_ALU_AND_K: u16 = 0x54;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_JMP_JGT_K: u16 = 0x25;
const BPF_JMP_JGE_K: u16 = 0x35;
const BPF_JMP_JSET_K: u16 = 0x45;
const BPF_RET_K: u16 = 0x06;
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const AUDIT_ARCH_AARCH64: u32 = 0xc000_00b7;
/// `struct seccomp_data`: nr, arch, instruction_pointer, args[6].
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;
const ARGS_OFFSET: u32 = 16;
const BPF_MAXINSNS: usize = 4096;
/// A run this long or longer of numbers refused outright is one range
/// test (two instructions) rather than one comparison each.
const MIN_RANGE: usize = 3;

/// `struct sock_filter`.
struct Insn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// Where a jump goes: the next instruction, or a label.
#[derive(Clone, Copy)]
enum To {
    Next,
    Label(usize),
}

/// Classic BPF with forward labels, resolved by [`Asm::finish`].
#[derive(Default)]
struct Asm {
    code: Vec<(u16, u32, To, To)>,
    labels: Vec<Option<usize>>,
}

impl Asm {
    fn label(&mut self) -> usize {
        self.labels.push(None);
        self.labels.len() - 1
    }

    fn place(&mut self, label: usize) {
        assert!(self.labels[label].is_none(), "label placed twice");
        self.labels[label] = Some(self.code.len());
    }

    fn stmt(&mut self, code: u16, k: u32) {
        self.code.push((code, k, To::Next, To::Next));
    }

    fn jump(&mut self, code: u16, k: u32, jt: To, jf: To) {
        self.code.push((code, k, jt, jf));
    }

    fn ret(&mut self, action: u32) {
        self.stmt(BPF_RET_K, action);
    }

    /// `A = low 32 bits of args[arg]` (both targets are little-endian).
    fn load_arg(&mut self, arg: u8) {
        self.stmt(BPF_LD_W_ABS, ARGS_OFFSET + 8 * u32::from(arg));
    }

    fn finish(self) -> Result<Vec<Insn>, String> {
        let offset = |at: usize, to: To| -> Result<u8, String> {
            let target = match to {
                To::Next => return Ok(0),
                To::Label(l) => self.labels[l].ok_or("a label never placed")?,
            };
            target
                .checked_sub(at + 1)
                .and_then(|off| u8::try_from(off).ok())
                .ok_or_else(|| format!("jump from {at} to {target} out of reach"))
        };
        let mut out = Vec::with_capacity(self.code.len());
        for (at, &(code, k, jt, jf)) in self.code.iter().enumerate() {
            out.push(Insn {
                code,
                jt: offset(at, jt)?,
                jf: offset(at, jf)?,
                k,
            });
        }
        if out.is_empty() || out.len() > BPF_MAXINSNS {
            return Err(format!("program length {} out of range", out.len()));
        }
        Ok(out)
    }
}

fn audit_arch(arch: Arch) -> u32 {
    match arch {
        Arch::X86_64 => AUDIT_ARCH_X86_64,
        Arch::Aarch64 => AUDIT_ARCH_AARCH64,
    }
}

/// One test of the number dispatch.
#[derive(Clone, Copy)]
enum Test {
    /// `nr == n`: to the rule's block, or to an answer.
    Is(u32, To),
    /// `lo <= nr <= hi`, all refused outright.
    Range(u32, u32),
}

impl Test {
    fn lo(&self) -> u32 {
        match *self {
            Test::Is(n, _) | Test::Range(n, _) => n,
        }
    }
}

fn dispatch(
    rules: &[Rule],
    (matched, notified): (usize, usize),
    blocks: &[(Vec<Cond>, bool, usize)],
) -> Vec<Test> {
    let block_of = |rule: &Rule| {
        blocks
            .iter()
            .find(|(c, n, _)| *c == rule.all_of && *n == rule.notify)
            .map(|&(_, _, l)| l)
            .expect("every condition list has a block")
    };
    let mut tests = Vec::new();
    let mut i = 0;
    while i < rules.len() {
        if !rules[i].all_of.is_empty() {
            tests.push(Test::Is(rules[i].nr, To::Label(block_of(&rules[i]))));
            i += 1;
            continue;
        }
        // A notified call of a program that also refuses: its own answer.
        if rules[i].notify && notified != matched {
            tests.push(Test::Is(rules[i].nr, To::Label(notified)));
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < rules.len()
            && rules[end].all_of.is_empty()
            && rules[end].notify == rules[i].notify
            && rules[end].nr == rules[end - 1].nr + 1
        {
            end += 1;
        }
        if end - i >= MIN_RANGE {
            tests.push(Test::Range(rules[i].nr, rules[end - 1].nr));
        } else {
            for rule in &rules[i..end] {
                tests.push(Test::Is(rule.nr, To::Label(matched)));
            }
        }
        i = end;
    }
    tests
}

/// The syscall numbers the kernel runs a new filter for, to fill its
/// per-number action cache (`seccomp_cache_prepare`: every number of the
/// native table, about 470 on both architectures; 512 is near enough):
/// the numbers whose path length the dispatch keeps short.
const CACHED: u64 = 512;
/// Tests in one chain at most, below the splits.
const CHAIN: usize = 8;

/// The numbers `[from, to)` of `tests` span: from the first's (or 0) to
/// the next test's, the first after them (or past the cached ones).
fn span(tests: &[Test], i: usize, j: usize) -> u64 {
    let from = if i == 0 { 0 } else { u64::from(tests[i].lo()) };
    let to = tests.get(j).map_or(CACHED, |t| u64::from(t.lo()));
    to.min(CACHED).saturating_sub(from.min(CACHED))
}

/// Instructions a chain of `tests[i..j]` runs, summed over the cached
/// numbers it spans: each number runs the tests up to the one that takes
/// it (a range test is two when the number is past its start), or all of
/// them, the x32 check where `top` says so, and the `ret`.
fn chain_cost(tests: &[Test], i: usize, j: usize, top: bool) -> u64 {
    let from = if i == 0 { 0 } else { u64::from(tests[i].lo()) };
    let to = tests
        .get(j)
        .map_or(CACHED, |t| u64::from(t.lo()))
        .min(CACHED);
    (from..to)
        .map(|nr| {
            let mut steps = 0;
            for t in &tests[i..j] {
                match *t {
                    Test::Is(n, _) => {
                        steps += 1;
                        if u64::from(n) == nr {
                            return steps;
                        }
                    }
                    Test::Range(lo, hi) => {
                        steps += 1;
                        if nr >= u64::from(lo) {
                            steps += 1;
                            if nr <= u64::from(hi) {
                                return steps;
                            }
                        }
                    }
                }
            }
            steps + u64::from(top) + 1
        })
        .sum()
}

/// The dispatch as a decision tree: the cheapest, summed over the cached
/// numbers, of a chain of tests (at most [`CHAIN`]) or a split (`jge` to
/// the second half) with the cheapest tree of each half. `plan[i][j]` is
/// where `tests[i..j]` splits (`None`: a chain).
fn plan_tree(tests: &[Test]) -> Vec<Vec<Option<usize>>> {
    let n = tests.len();
    let mut cost = vec![vec![0u64; n + 1]; n + 1];
    let mut plan = vec![vec![None; n + 1]; n + 1];
    for len in 1..=n {
        for i in 0..=n - len {
            let j = i + len;
            let top = j == n;
            let mut best = if len <= CHAIN {
                chain_cost(tests, i, j, top)
            } else {
                u64::MAX
            };
            let split = (i + 1..j)
                .map(|m| (span(tests, i, j) + cost[i][m] + cost[m][j], m))
                .min();
            if let Some((split, m)) = split.filter(|&(c, _)| c < best) {
                best = split;
                plan[i][j] = Some(m);
            }
            cost[i][j] = best;
        }
    }
    plan
}

/// Emits the tree for `tests[i..j]`: number `nr` goes to its test's target
/// or, taken by none, to `allow`; in the last chain (`j` the end) an x32
/// number goes to `x32` first. Each chain's last test falls to the one
/// `ret allow` at the program's end rather than to a `ret` of its own:
/// fewer instructions for the kernel to check and compile.
fn emit_tree(
    a: &mut Asm,
    tests: &[Test],
    plan: &[Vec<Option<usize>>],
    (i, j): (usize, usize),
    (matched, x32, allow): (usize, Option<usize>, usize),
) {
    if let Some(m) = plan[i][j] {
        let second = a.label();
        a.jump(BPF_JMP_JGE_K, tests[m].lo(), To::Label(second), To::Next);
        emit_tree(a, tests, plan, (i, m), (matched, x32, allow));
        a.place(second);
        emit_tree(a, tests, plan, (m, j), (matched, x32, allow));
        return;
    }
    let x32 = x32.filter(|_| j == tests.len());
    for (k, test) in tests[i..j].iter().enumerate() {
        // Where nothing follows in this chain, a miss is allowed.
        let last = i + k + 1 == j && x32.is_none();
        let miss = if last { To::Label(allow) } else { To::Next };
        match *test {
            Test::Is(nr, to) => a.jump(BPF_JMP_JEQ_K, nr, to, miss),
            Test::Range(lo, hi) => {
                let after = if last { allow } else { a.label() };
                a.jump(BPF_JMP_JGE_K, lo, To::Next, To::Label(after));
                a.jump(BPF_JMP_JGT_K, hi, To::Label(after), To::Label(matched));
                if !last {
                    a.place(after);
                }
            }
        }
    }
    if let Some(x32) = x32 {
        a.jump(
            BPF_JMP_JSET_K,
            rules::X32_SYSCALL_BIT,
            To::Label(x32),
            To::Label(allow),
        );
    } else if i == j {
        a.ret(SECCOMP_RET_ALLOW);
    }
}

/// A rule's conditions, all of which must hold for `matched`; the first
/// that does not goes to `allow`.
fn conditions(a: &mut Asm, conds: &[Cond], matched: usize, allow: usize) {
    for (i, cond) in conds.iter().enumerate() {
        let last = i + 1 == conds.len();
        let holds = if last { matched } else { a.label() };
        match *cond {
            Cond::OneOf { arg, mask, values } => {
                a.load_arg(arg);
                if mask != u32::MAX {
                    a.stmt(BPF_ALU_AND_K, mask);
                }
                for (j, &v) in values.iter().enumerate() {
                    let fails = if j + 1 == values.len() {
                        To::Label(allow)
                    } else {
                        To::Next
                    };
                    a.jump(BPF_JMP_JEQ_K, v, To::Label(holds), fails);
                }
            }
            Cond::AnyBit { arg, bits } => {
                a.load_arg(arg);
                a.jump(BPF_JMP_JSET_K, bits, To::Label(holds), To::Label(allow));
            }
            Cond::Differs { pairs } => {
                // Each argument: one of its values goes on to the next
                // argument (after the last: the condition fails); none of
                // them, and the condition holds.
                for (j, &(arg, values)) in pairs.iter().enumerate() {
                    let last_pair = j + 1 == pairs.len();
                    let next = if last_pair { allow } else { a.label() };
                    a.load_arg(arg);
                    for (k, &v) in values.iter().enumerate() {
                        let miss = if k + 1 == values.len() {
                            To::Label(holds)
                        } else {
                            To::Next
                        };
                        a.jump(BPF_JMP_JEQ_K, v, To::Label(next), miss);
                    }
                    if !last_pair {
                        a.place(next);
                    }
                }
            }
        }
        if !last {
            a.place(holds);
        }
    }
}

/// What a program holds besides its rules.
#[derive(Clone, Copy)]
struct Extra {
    /// `clone3` answers ENOSYS.
    clone3: bool,
    /// x86_64's x32 numbers are killed.
    x32: bool,
}

fn compile(arch: Arch, mut rules: Vec<Rule>, extra: Extra) -> Result<Vec<Insn>, String> {
    rules.sort_by_key(|r| r.nr);
    if let Some(w) = rules.windows(2).find(|w| w[0].nr == w[1].nr) {
        return Err(format!("syscall {} listed twice", w[0].nr));
    }
    if rules.iter().any(|r| r.nr == rules::CLONE3) {
        return Err("clone3 must not be a rule: it answers ENOSYS".into());
    }
    if rules.iter().any(|r| {
        r.all_of.iter().any(|c| match c {
            Cond::OneOf { values, .. } => values.is_empty(),
            Cond::Differs { pairs } => pairs.is_empty(),
            Cond::AnyBit { .. } => false,
        })
    }) {
        return Err("a condition with no values".into());
    }
    let mut a = Asm::default();
    let (matched, allow, kill, enosys) = (a.label(), a.label(), a.label(), a.label());
    // Where every rule notifies (the observe filter, the reported
    // programs), `matched` is the notification; where some do (the
    // own-sockets programs), they have a label of their own.
    let all_notify = !rules.is_empty() && rules.iter().all(|r| r.notify);
    let some_notify = rules.iter().any(|r| r.notify);
    let notified = if all_notify || !some_notify {
        matched
    } else {
        a.label()
    };

    a.stmt(BPF_LD_W_ABS, ARCH_OFFSET);
    a.jump(BPF_JMP_JEQ_K, audit_arch(arch), To::Next, To::Label(kill));
    a.stmt(BPF_LD_W_ABS, NR_OFFSET);

    // One block per distinct condition list, in order of first use.
    let mut blocks: Vec<(Vec<Cond>, bool, usize)> = Vec::new();
    for rule in rules.iter().filter(|r| !r.all_of.is_empty()) {
        if !blocks
            .iter()
            .any(|(c, n, _)| *c == rule.all_of && *n == rule.notify)
        {
            let l = a.label();
            blocks.push((rule.all_of.clone(), rule.notify, l));
        }
    }
    let mut tests = dispatch(&rules, (matched, notified), &blocks);
    // clone3, where refused, answers ENOSYS: one more test of the tree.
    if extra.clone3 {
        tests.push(Test::Is(rules::CLONE3, To::Label(enosys)));
        tests.sort_by_key(Test::lo);
    }
    // x32 numbers (x86_64's unix filters and the stub's) are all above
    // the tests: checked where the tree leaves the numbers past them.
    let x32 = (arch == Arch::X86_64 && extra.x32).then(|| a.label());
    let plan = plan_tree(&tests);
    emit_tree(
        &mut a,
        &tests,
        &plan,
        (0, tests.len()),
        (matched, x32, allow),
    );
    if let Some(x32) = x32 {
        a.place(x32);
        a.jump(BPF_JMP_JEQ_K, u32::MAX, To::Label(allow), To::Label(kill));
    }
    for (conds, notify, label) in &blocks {
        a.place(*label);
        let target = if *notify { notified } else { matched };
        conditions(&mut a, conds, target, allow);
    }

    if !rules.is_empty() {
        a.place(matched);
        a.ret(if all_notify {
            SECCOMP_RET_USER_NOTIF
        } else {
            SECCOMP_RET_ERRNO | rules::EPERM
        });
    }
    if notified != matched {
        a.place(notified);
        a.ret(SECCOMP_RET_USER_NOTIF);
    }
    a.place(allow);
    a.ret(SECCOMP_RET_ALLOW);
    a.place(kill);
    a.ret(SECCOMP_RET_KILL_PROCESS);
    if extra.clone3 {
        a.place(enosys);
        a.ret(SECCOMP_RET_ERRNO | rules::ENOSYS);
    }
    a.finish()
}

/// Writes one program: `struct sock_filter`, little-endian (both targets
/// are).
fn write(out: &std::path::Path, arch: Arch, name: &str, prog: Result<Vec<Insn>, String>) {
    let prog =
        prog.unwrap_or_else(|e| panic!("cannot build the {name} filter for {}: {e}", arch.name()));
    let mut bytes = Vec::with_capacity(prog.len() * 8);
    for insn in &prog {
        bytes.extend_from_slice(&insn.code.to_le_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_le_bytes());
    }
    let path = out.join(format!("{}-{name}.bpf", arch.name()));
    std::fs::write(&path, &bytes)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // rules.rs and the files it includes (`#[path]`).
    for file in [
        "rules.rs",
        "numbers.rs",
        "observed.rs",
        "reported.rs",
        "unix_sets.rs",
    ] {
        println!("cargo:rerun-if-changed=src/filter/{file}");
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // The target's programs, by name, for src/filter/mod.rs to embed.
    let target = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let mut table = String::from("[\n");
    for arch in Arch::ALL {
        let mut names = Vec::new();
        for set in Set::ALL {
            let extra = Extra {
                clone3: set.has_clone3(),
                x32: set.kills_x32(),
            };
            write(
                &out,
                arch,
                set.name(),
                compile(arch, rules::rules(arch, set), extra),
            );
            names.push(set.name().to_string());
        }
        for r in Reported::all() {
            let extra = Extra {
                clone3: false,
                x32: true,
            };
            write(&out, arch, &r.name(), compile(arch, r.rules(arch), extra));
            names.push(r.name());
        }
        if arch.name() == target {
            for name in names {
                table.push_str(&format!(
                    "    (\"{name}\", embed!(\"{}-{name}.bpf\")),\n",
                    arch.name()
                ));
            }
        }
    }
    table.push_str("]\n");
    std::fs::write(out.join("programs.rs"), table).expect("cannot write programs.rs");
    order_the_run_code();
    name_the_commit();
}

/// The commit this build is of, for `--version` and the doctor
/// (`BUILD_COMMIT`): `git rev-parse` of the checkout, rerun when
/// `HEAD` or the branch it names moves; `unknown` outside a git checkout.
/// `./package --allow-dirty` sets `APPLY_SECCOMP_MODIFIED=1`: the build
/// then says its files are not the commit's.
fn name_the_commit() {
    println!("cargo:rerun-if-env-changed=APPLY_SECCOMP_MODIFIED");
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let git = dir.join(".git");
    if git.is_dir() {
        // Only files that exist: cargo reruns every build for a missing one.
        let mut watch = vec![git.join("HEAD"), git.join("packed-refs")];
        if let Ok(head) = std::fs::read_to_string(git.join("HEAD")) {
            if let Some(branch) = head.trim().strip_prefix("ref: ") {
                watch.push(git.join(branch));
            }
        }
        for file in watch.iter().filter(|f| f.is_file()) {
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
    let commit = std::process::Command::new("git")
        .arg("-C")
        .arg(&dir)
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success() && git.exists())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap_or_else(|| "unknown".into());
    let modified = std::env::var("APPLY_SECCOMP_MODIFIED").as_deref() == Ok("1");
    println!(
        "cargo:rustc-env=BUILD_COMMIT={commit}{}",
        if modified { ", modified" } else { "" }
    );
}

/// Where the linker is lld (`.cargo/config.toml` names rust-lld for the
/// x86_64 musl build), the functions a run executes go first and
/// together, in the order a run first executes them (`link/run-order.txt`,
/// written and checked by `tests/order.rs`): a run's processes then fault
/// in a few 64 KB windows of the text instead of most of it. Another
/// linker builds the same binary without the order.
fn order_the_run_code() {
    println!("cargo:rerun-if-changed=link/run-order.txt");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let linker = std::env::var("RUSTC_LINKER").unwrap_or_default();
    if !(linker.ends_with("rust-lld") || linker.ends_with("ld.lld")) {
        return;
    }
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rustc-link-arg-bins=--symbol-ordering-file={dir}/link/run-order.txt");
    // A name the file lists that this build does not have (another
    // toolchain's std) is no error: tests/order.rs says when the file is
    // behind the code.
    println!("cargo:rustc-link-arg-bins=--no-warn-symbol-ordering");
    // The static-pie's relative relocations packed (RELR, which musl's
    // start-up applies): 28 KB of `.rela.dyn` become 344 bytes of
    // `.relr.dyn`, and the start-up reads a bitmap instead of 1,176
    // entries.
    println!("cargo:rustc-link-arg-bins=-zpack-relative-relocs");
    // The release profile's panic = "abort" (Cargo.toml; a build script
    // sees the profile, not its panic strategy) unwinds nothing: the
    // unwind tables go (link/no-unwind-tables.ld). A panic still prints
    // its message and aborts; RUST_BACKTRACE's backtrace is empty. The
    // dev profile unwinds and keeps them.
    if std::env::var("PROFILE").as_deref() == Ok("release") {
        // The linker's map of the build as shipped (stripped): where each
        // function went, by the name the ordering file must use. A build
        // with its symbols kept is another build to cargo (`-C metadata`),
        // whose functions' names differ in their hashes: tests/order.rs
        // traces the shipped one, through this map.
        let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
        println!("cargo:rustc-link-arg-bins=-Map={out}/apply-seccomp.map");
        // The names as the ordering file gives them, mangled.
        println!("cargo:rustc-link-arg-bins=--no-demangle");
        println!("cargo:rustc-link-arg-bins=--no-eh-frame-hdr");
        println!("cargo:rerun-if-changed=link/no-unwind-tables.ld");
        println!("cargo:rustc-link-arg-bins={dir}/link/no-unwind-tables.ld");
    }
}
