//! `cargo bench`: this helper against the C helper shipped in
//! `@anthropic-ai/sandbox-runtime`, `unshare -Urpf --mount-proc`, plain
//! `true` and a null helper (a static program that only `vfork`s, execs
//! and waits: the floor of any helper's own cost), two fixed builds of
//! this project (the own-cost ratio against the C helper first), and
//! this helper's capability-free way in
//! (`--way-in=capability-free`), interleaved: every round runs each
//! candidate once, in a shuffled
//! order, timing the whole process from fork to reap. Reported: medians,
//! and medians of the per-round ratios (never a sequential A-then-B).
//!
//! Settings: the host as root (when run as root), the host as an
//! unprivileged user (uid 65534 when run as root), and inside bubblewrap
//! with srt's options as that user. Also peak RSS (`/usr/bin/time -f %M`)
//! and binary size.
//!
//! Each timed run follows an untimed run of the same candidate (see
//! [`paired`]; `BENCH_PAIRED=0` times every run).
//!
//! Environment: `BENCH_ROUNDS` (default 400), `BENCH_ONLY` (run only the
//! settings whose name contains it, e.g. `bwrap`), `APPLY_SECCOMP_C_HELPER`
//! (a C helper to use instead of fetching it), `APPLY_SECCOMP_SRT_VERSION`,
//! `APPLY_SECCOMP_BASELINE` and `APPLY_SECCOMP_REFERENCE` (commits of
//! this project, default [`BASELINE`] and [`REFERENCE`]: each built once,
//! outside this checkout, in `$TMPDIR/apply-seccomp-baseline/COMMIT`,
//! and run in the same rounds, so each change is seen against two fixed
//! builds and not only the one before; `none` leaves one out);
//! `APPLY_SECCOMP_SHIM_BEFORE` (a commit whose shim the shim row runs in
//! the same turns, default [`SHIM_BEFORE`]; `none` leaves it out).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

// The tests' shared plumbing: srt's bwrap options, `which`, `is_root`.
#[path = "../tests/common/mod.rs"]
mod common;

use common::{BWRAP_OPTIONS, NOBODY, is_root, which};

/// The fixed baseline: the build before the capability-free way, the
/// mount guard, the hardening and the doctor (issue 25).
const BASELINE: &str = "30cd3ee";

/// The second fixed baseline (issue 56): the build before the socket
/// policy and the refusal report, whose run no setting may cost more
/// than.
const REFERENCE: &str = "862cfc2";

/// The shim of the build before issue 42's route protection and keeper
/// changes: the shim row's "before" column.
const SHIM_BEFORE: &str = "862cfc2";

/// The baseline commit built (release, its own target folder, kept for
/// the next run), or None where it is turned off.
fn baseline(dir: &Path) -> Option<(String, PathBuf)> {
    let commit = std::env::var("APPLY_SECCOMP_BASELINE").unwrap_or_else(|_| BASELINE.into());
    built(dir, &commit, "baseline-apply-seccomp")
}

/// The reference commit built, the same way.
fn reference(dir: &Path) -> Option<(String, PathBuf)> {
    let commit = std::env::var("APPLY_SECCOMP_REFERENCE").unwrap_or_else(|_| REFERENCE.into());
    built(dir, &commit, "reference-apply-seccomp")
}

/// `commit` of this project built (release, its own target folder under
/// `$TMPDIR/apply-seccomp-baseline`, kept for the next run) and copied
/// into `dir` as `name`; None for `none`.
fn built(dir: &Path, commit: &str, name: &str) -> Option<(String, PathBuf)> {
    let commit = commit.to_string();
    if commit == "none" || commit.is_empty() {
        return None;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Outside this checkout: cargo reads the .cargo/config.toml of every
    // folder above the one it builds in, and this checkout's (its linker)
    // must not change the fixed build.
    let place = std::env::temp_dir()
        .join("apply-seccomp-baseline")
        .join(&commit);
    let src = place.join("src");
    if !src.join("Cargo.toml").is_file() {
        std::fs::create_dir_all(&src).unwrap();
        let ok = Command::new("sh")
            .arg("-c")
            .arg("git -C \"$1\" archive --format=tar \"$2\" | tar x -C \"$3\"")
            .args(["sh"])
            .arg(root)
            .arg(&commit)
            .arg(&src)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "APPLY_SECCOMP_BASELINE={commit}: not a commit of this checkout"
        );
    }
    let ok = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()))
        .args(["build", "--release", "--quiet", "--target-dir"])
        .arg(place.join("target"))
        .current_dir(&src)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "APPLY_SECCOMP_BASELINE={commit}: the build failed");
    let built = std::fs::read_dir(place.join("target"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("release/apply-seccomp"))
        .find(|p| p.is_file())
        .expect("the baseline binary");
    let copy = dir.join(name);
    std::fs::copy(built, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    Some((commit, copy))
}

/// A world-readable folder with both helpers in it.
fn prepare() -> (PathBuf, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("apply-seccomp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ours = dir.join("apply-seccomp");
    common::shipped_build(&ours);
    let c = dir.join("c-apply-seccomp");
    match std::env::var_os("APPLY_SECCOMP_C_HELPER") {
        Some(path) => {
            std::fs::copy(path, &c).expect("copy APPLY_SECCOMP_C_HELPER");
        }
        None => {
            let version =
                std::env::var("APPLY_SECCOMP_SRT_VERSION").unwrap_or_else(|_| "0.0.83".into());
            let ok = Command::new("npm")
                .args(["pack", "--silent", "--pack-destination"])
                .arg(&dir)
                .arg(format!("@anthropic-ai/sandbox-runtime@{version}"))
                .stdout(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            assert!(
                ok,
                "npm pack failed: set APPLY_SECCOMP_C_HELPER to a C helper"
            );
            let arch = if cfg!(target_arch = "x86_64") {
                "x64"
            } else {
                "arm64"
            };
            let tgz = std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|e| e == "tgz"))
                .expect("the packed client");
            let member = format!("package/vendor/seccomp/{arch}/apply-seccomp");
            let ok = Command::new("tar")
                .arg("xzf")
                .arg(&tgz)
                .arg("-C")
                .arg(&dir)
                .arg(&member)
                .status()
                .unwrap()
                .success();
            assert!(ok, "no {member} in the package");
            std::fs::rename(dir.join(&member), &c).unwrap();
        }
    }
    for p in [&ours, &c] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (dir, ours, c)
}

#[derive(Clone)]
struct Candidate {
    name: &'static str,
    argv: Vec<String>,
}

fn candidates(
    ours: &Path,
    c: &Path,
    base: Option<&Path>,
    reference: Option<&Path>,
    null: Option<&Path>,
    in_bwrap: bool,
) -> Vec<Candidate> {
    let unshare = which("unshare").map(|p| p.to_string_lossy().into_owned());
    let mut list = vec![
        Candidate {
            name: "true",
            argv: vec!["/bin/true".into()],
        },
        Candidate {
            name: "ours",
            argv: vec![ours.to_string_lossy().into_owned(), "/bin/true".into()],
        },
        Candidate {
            name: "ours-cf",
            argv: vec![
                ours.to_string_lossy().into_owned(),
                "--way-in=capability-free".into(),
                "/bin/true".into(),
            ],
        },
        Candidate {
            name: "c",
            argv: vec![c.to_string_lossy().into_owned(), "/bin/true".into()],
        },
    ];
    // The fixed builds and the null helper, each where there is one.
    for (name, path) in [("base", base), ("ref", reference), ("null", null)] {
        if let Some(p) = path {
            list.push(Candidate {
                name,
                argv: vec![p.to_string_lossy().into_owned(), "/bin/true".into()],
            });
        }
    }
    if let Some(u) = unshare {
        list.push(Candidate {
            name: "unshare",
            argv: vec![u, "-Urpf".into(), "--mount-proc".into(), "/bin/true".into()],
        });
    }
    if in_bwrap {
        let bwrap = which("bwrap").unwrap().to_string_lossy().into_owned();
        for cand in &mut list {
            let mut argv = vec![bwrap.clone()];
            argv.extend(BWRAP_OPTIONS.iter().map(|s| s.to_string()));
            argv.push("--".into());
            argv.append(&mut cand.argv);
            cand.argv = argv;
        }
    }
    list
}

fn time_once(argv: &[String], uid: Option<u32>) -> Duration {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(u) = uid {
        cmd.uid(u).gid(u);
    }
    let start = Instant::now();
    let status = cmd.spawn().expect("spawn").wait().expect("wait");
    let took = start.elapsed();
    assert!(status.success(), "{argv:?} failed: {status}");
    took
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median of `ratios` and a 95% interval for it (see [`interval`]).
/// What one run can tell: an interval that holds 1.00 says "the same as
/// far as this run shows".
fn median_with_interval(ratios: &[f64]) -> (f64, f64, f64) {
    let (lo, hi) = interval(ratios.len(), |rounds| {
        median(rounds.iter().map(|&i| ratios[i]).collect())
    });
    (median(ratios.to_vec()), lo, hi)
}

/// A 95% interval for `statistic` of `n` rounds: the 2.5th and 97.5th
/// percentiles of its values over 2000 resamples of the rounds (with
/// replacement; a fixed seed, so a rerun of the same numbers gives the
/// same interval). `statistic` gets the resample's round numbers.
fn interval(n: usize, statistic: impl Fn(&[usize]) -> f64) -> (f64, f64) {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut values: Vec<f64> = (0..2000)
        .map(|_| {
            let rounds: Vec<usize> = (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed % n as u64) as usize
                })
                .collect();
            statistic(&rounds)
        })
        .collect();
    values.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.025), at(0.975))
}

/// Whether each timed run follows an untimed run of the same candidate
/// (the default; `BENCH_PAIRED=0` turns it off). A run may leave work to
/// finish after its exit (under bubblewrap this helper's init, which
/// outlives the stub: src/run/plan.rs); unpaired, that work would land on
/// whichever candidate runs next. Paired, each timed run pays for what
/// its own predecessor left, as back-to-back commands would.
fn paired() -> bool {
    std::env::var("BENCH_PAIRED").map_or(true, |v| v != "0")
}

/// Per-candidate times (ms) over interleaved, shuffled rounds.
fn measure(cands: &[Candidate], uid: Option<u32>, rounds: usize) -> Vec<Vec<f64>> {
    let mut times = vec![Vec::with_capacity(rounds); cands.len()];
    let mut order: Vec<usize> = (0..cands.len()).collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..rounds + 20 {
        for i in (1..order.len()).rev() {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            order.swap(i, (seed >> 33) as usize % (i + 1));
        }
        for &i in &order {
            if paired() {
                time_once(&cands[i].argv, uid);
            }
            let t = time_once(&cands[i].argv, uid);
            if round >= 20 {
                // the first 20 rounds warm caches and are dropped
                times[i].push(t.as_secs_f64() * 1e3);
            }
        }
    }
    times
}

fn index(cands: &[Candidate], name: &str) -> Option<usize> {
    cands.iter().position(|c| c.name == name)
}

/// One `/usr/bin/time` reading: the largest RSS of the process tree (KB)
/// and its minor page faults.
fn peak_rss_once(time: &Path, argv: &[String]) -> Option<(f64, f64)> {
    let out = Command::new(time)
        .args(["-f", "%M %R"])
        .args(argv)
        .stdout(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    let mut w = text.trim().lines().last()?.split_whitespace();
    Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
}

/// Drops `binary`'s pages from the page cache, so that exec's readahead
/// brings them in as for an installed binary, whatever wrote the file
/// (a linker's or a copy's writes leave other page-cache folios, and a
/// fault maps what its folio holds).
fn evict(binary: &Path) {
    if let Ok(f) = std::fs::File::open(binary) {
        use nix::fcntl::{PosixFadviseAdvice, posix_fadvise};
        // Written back first: dirty pages (a copy made a moment ago) are
        // not dropped.
        let _ = f.sync_all();
        let _ = posix_fadvise(&f, 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED);
    }
}

/// Medians of `RSS_RUNS` readings of each command line, taken in turns
/// (so all see the same machine state), each binary first evicted from
/// the page cache: (peak RSS in KB, minor faults).
fn peak_rss_kb(lines: &[Vec<String>]) -> Option<Vec<(f64, f64)>> {
    let time = which("time")?;
    for line in lines {
        evict(Path::new(&line[0]));
    }
    let mut readings = vec![Vec::new(); lines.len()];
    for _ in 0..RSS_RUNS {
        for (line, r) in lines.iter().zip(&mut readings) {
            r.push(peak_rss_once(&time, line)?);
        }
    }
    Some(
        readings
            .into_iter()
            .map(|r| {
                let (kb, faults): (Vec<f64>, Vec<f64>) = r.into_iter().unzip();
                (median(kb), median(faults))
            })
            .collect(),
    )
}

const RSS_RUNS: usize = 41;

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing
    // we use. Run only under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let (dir, ours, c) = prepare();
    let base = baseline(&dir);
    let refer = reference(&dir);
    let null = null_helper(&dir);
    let root = is_root();
    let unpriv = if root { Some(NOBODY) } else { None };
    let mut settings: Vec<(&str, Option<u32>, bool)> = Vec::new();
    if root {
        settings.push(("host, root", None, false));
    }
    settings.push(("host, unprivileged", unpriv, false));
    if which("bwrap").is_some() {
        settings.push(("bwrap (srt options), unprivileged", unpriv, true));
    } else {
        eprintln!("bwrap not installed: the bubblewrap setting is left out");
    }

    if let Ok(only) = std::env::var("BENCH_ONLY") {
        settings.retain(|(name, _, _)| name.contains(only.as_str()));
    }
    println!(
        "rounds: {rounds} per setting, interleaved and shuffled{}; times are medians in ms",
        if paired() {
            ", each timed run after an untimed one of the same candidate"
        } else {
            ""
        }
    );
    let named =
        |b: &Option<(String, PathBuf)>| b.as_ref().map_or("none".into(), |(c, _)| c.clone());
    println!(
        "baselines: {} and {} (ours/baseline: median of ratios; own cost: a run minus the same \
         round's `true`, or under bubblewrap its `bwrap true`)\n",
        named(&base),
        named(&refer)
    );
    println!(
        "| setting | own cost ours / C (95% interval) | ours / {r} (95% interval) | own cost ours / {r} | ours / {b} (95% interval) | own cost ours / {b} | a null helper's own cost (vfork, exec, wait) / C's | `true` | unshare -Urpf | C helper | ours | ours/C | ours, capability-free | its own cost / ours |",
        r = named(&refer),
        b = named(&base)
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, uid, in_bwrap) in settings {
        let cands = candidates(
            &ours,
            &c,
            base.as_ref().map(|(_, p)| p.as_path()),
            refer.as_ref().map(|(_, p)| p.as_path()),
            null.as_deref(),
            in_bwrap,
        );
        // Every binary in the same page-cache state, as an installed one
        // read from disk: its pages dropped, so that exec's readahead
        // brings them in. Left as the copy above wrote them, the state
        // depends on how each file was last written, and it moves the
        // ratios: the baseline ran 2.5% faster from a fresh copy than
        // from another copy of the same bytes (2000 rounds in turns),
        // while this helper, its run's code together (link/), did not
        // move; evicted first, all four were within 0.5%.
        for path in [&ours, &c]
            .into_iter()
            .chain(base.as_ref().map(|(_, p)| p))
            .chain(refer.as_ref().map(|(_, p)| p))
            .chain(null.as_ref())
        {
            evict(path);
        }
        let t = measure(&cands, uid, rounds);
        let (it, io, ic) = (
            index(&cands, "true").unwrap(),
            index(&cands, "ours").unwrap(),
            index(&cands, "c").unwrap(),
        );
        let ratio = median(t[io].iter().zip(&t[ic]).map(|(o, c)| o / c).collect());
        // The helper's own cost: each run minus the same round's `true`.
        let over = |i: usize| median(t[i].iter().zip(&t[it]).map(|(o, b)| o - b).collect());
        let (over_o, over_c) = (over(io), over(ic));
        // The own-cost ratio's interval: the same ratio of medians over
        // resampled rounds (issue 56's goal is a bound on it).
        let (own_lo, own_hi) = interval(t[it].len(), |r| {
            let over = |i: usize| median(r.iter().map(|&k| t[i][k] - t[it][k]).collect());
            over(io) / over(ic)
        });
        let un =
            index(&cands, "unshare").map_or("-".into(), |i| format!("{:.2}", median(t[i].clone())));
        // The capability-free way in (no namespaces, no init) against the
        // namespace way, both this helper's, in the same rounds.
        let icf = index(&cands, "ours-cf").unwrap();
        let against = |which: &str| {
            index(&cands, which).map_or("- | -".into(), |ib| {
                let ratios: Vec<f64> = t[io].iter().zip(&t[ib]).map(|(o, b)| o / b).collect();
                let (r, lo, hi) = median_with_interval(&ratios);
                let over_b = over(ib);
                format!(
                    "{r:.3} ({lo:.3}-{hi:.3}) | {over_o:.2} / {over_b:.2} = {:.3}",
                    over_o / over_b
                )
            })
        };
        // The floor of any helper: a process that only forks the command
        // and waits (issue 56: what an own-cost goal can reach here).
        let floor = index(&cands, "null").map_or("-".into(), |i| {
            format!("{:.2} / {over_c:.2} = {:.3}", over(i), over(i) / over_c)
        });
        println!(
            "| {name} | {over_o:.2} / {over_c:.2} = {:.3} ({own_lo:.3}-{own_hi:.3}) | {} | {} | {floor} | {:.2} | {un} | {:.2} | {:.2} | {ratio:.3} | {:.2} | {:.3} |",
            over_o / over_c,
            against("ref"),
            against("base"),
            median(t[it].clone()),
            median(t[ic].clone()),
            median(t[io].clone()),
            median(t[icf].clone()),
            over(icf) / over_o
        );
    }
    let only = std::env::var("BENCH_ONLY").ok();
    if which("bwrap").is_some() && only.as_deref().is_none_or(|o| "shim".contains(o)) {
        let before =
            std::env::var("APPLY_SECCOMP_SHIM_BEFORE").unwrap_or_else(|_| SHIM_BEFORE.into());
        let before = built(&dir, &before, "before-apply-seccomp");
        shim_against_bwrap(&dir, &ours, before.as_ref(), unpriv, rounds);
    }
    let size = |p: &Path| std::fs::metadata(p).map_or("-".into(), |m| format!("{} bytes", m.len()));
    let mut helpers = vec![ours.clone(), c.clone()];
    helpers.extend(base.iter().map(|(_, p)| p.clone()));
    helpers.extend(refer.iter().map(|(_, p)| p.clone()));
    let rss = |command: &str| {
        let lines: Vec<Vec<String>> = helpers
            .iter()
            .map(|p| vec![p.to_string_lossy().into_owned(), command.to_string()])
            .collect();
        let cells = |f: &dyn Fn(&(f64, f64)) -> String, m: &Option<Vec<(f64, f64)>>| {
            m.as_ref().map_or(" - | - | - | - ".into(), |v| {
                v.iter().map(f).collect::<Vec<_>>().join("|")
            })
        };
        let m = peak_rss_kb(&lines);
        (
            cells(&|(kb, _)| format!(" {kb:.0} KB "), &m),
            cells(&|(_, faults)| format!(" {faults:.0} "), &m),
        )
    };
    println!(
        "\n| | ours | C helper | {} | {} |",
        named(&base),
        named(&refer)
    );
    println!("|---|---|---|---|---|");
    // /usr/bin/time reports the largest RSS of the process tree, which
    // with `true` is `true`'s own; a command that is not found leaves
    // only the helper's processes.
    println!(
        "| peak RSS, running `true` (median of {RSS_RUNS}, in turns, host; `true`'s own RSS) |{}|",
        rss("/bin/true").0
    );
    let (kb, faults) = rss("/nonexistent");
    println!("| peak RSS, helper processes only (command not found) |{kb}|");
    println!("| minor page faults, helper processes only (command not found) |{faults}|");
    println!(
        "| binary size | {} | {} | {} | {} |",
        size(&ours),
        size(&c),
        base.as_ref().map_or("-".into(), |(_, p)| size(p)),
        refer.as_ref().map_or("-".into(), |(_, p)| size(p))
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// What a Claude Code line adds to srt's denied files: srt's two folders
/// and, where srt's `.claude` (an empty folder) gives way, the five paths
/// below it that Claude Code protects; folders marked `/`.
const PLACEHOLDER_FOLDERS: [&str; 7] = [
    ".vscode",
    ".idea",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/commands/",
    ".claude/agents/",
    ".claude/skills/",
];

/// A Claude Code line's placeholders in a fresh git folder: srt 0.0.83's
/// own eleven (`--ro-bind /dev/null` each of its denied files and
/// folders) and Claude Code's five below `.claude`; with `.claude` itself,
/// made above them, 17 places.
fn placeholders() -> Vec<&'static str> {
    common::SRT_DENIED_FILES
        .iter()
        .chain(&PLACEHOLDER_FOLDERS)
        .copied()
        .collect()
}

/// The placeholder keeper's cost: `bwrap ... true` with srt's options and
/// placeholders, through the shim (which makes, holds and removes them)
/// against bubblewrap direct (whose placeholders are removed after each
/// run, untimed, as the client would), interleaved, as `uid`.
fn shim_against_bwrap(
    dir: &Path,
    ours: &Path,
    before: Option<&(String, PathBuf)>,
    uid: Option<u32>,
    rounds: usize,
) {
    let work = dir.join("project");
    let empty = dir.join("empty");
    let shim = dir.join("shim");
    let shim_before = dir.join("shim-before");
    for d in [&work, &empty, &shim, &shim_before] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::create_dir_all(work.join(".git")).unwrap();
    std::os::unix::fs::symlink(ours, shim.join("bwrap")).unwrap();
    if let Some((_, b)) = before {
        std::os::unix::fs::symlink(b, shim_before.join("bwrap")).unwrap();
    }
    if let Some(u) = uid {
        for d in [&work, &work.join(".git"), &empty] {
            std::os::unix::fs::chown(d, Some(u), Some(u)).unwrap();
        }
    }
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o700)).unwrap();
    let w = work.to_string_lossy().into_owned();
    let mut line: Vec<String> = BWRAP_OPTIONS.iter().map(|s| s.to_string()).collect();
    line.extend(["--bind".into(), w.clone(), w.clone()]);
    for p in placeholders() {
        let source = if p.ends_with('/') {
            empty.to_string_lossy().into_owned()
        } else {
            "/dev/null".into()
        };
        let p = p.trim_end_matches('/');
        line.extend(["--ro-bind".into(), source, format!("{w}/{p}")]);
    }
    line.extend(["--".into(), "/bin/true".into()]);
    let bwrap = which("bwrap").unwrap().to_string_lossy().into_owned();
    let direct: Vec<String> = [vec![bwrap], line.clone()].concat();
    let through: Vec<String> = [
        vec![shim.join("bwrap").to_string_lossy().into_owned()],
        line.clone(),
    ]
    .concat();
    let through_before: Option<Vec<String>> = before.map(|_| {
        [
            vec![shim_before.join("bwrap").to_string_lossy().into_owned()],
            line,
        ]
        .concat()
    });
    // What bubblewrap made, deepest first, as the client removes it.
    let clean = || {
        for p in placeholders().iter().rev().chain(&[".claude"]) {
            let path = work.join(p.trim_end_matches('/'));
            let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir(&path));
        }
    };
    // The shim's holder removes its placeholders once bubblewrap has ended,
    // after the timed run: wait for that (untimed), so that the next
    // direct run never meets one mid-removal, as a client without the
    // shim in the same folder could.
    let settle = || {
        let start = Instant::now();
        // `.claude` too, the folder placeholder above some: the shim of
        // another build (the "before" column) neither shares this one's
        // lock nor sees its holds, so a run may not start while a holder
        // is still removing it.
        while placeholders()
            .iter()
            .chain(&[".claude"])
            .any(|p| work.join(p.trim_end_matches('/')).exists())
        {
            assert!(
                start.elapsed().as_secs() < 5,
                "the shim left its placeholders"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
    };
    // The floor of any shim: a static C program that only execv()s the
    // real bubblewrap, with the same line (its placeholders removed after
    // it, as after the direct run).
    let null_shim = null_exec_shim(dir, &direct[0]);
    let null_line: Option<Vec<String>> = null_shim
        .as_ref()
        .map(|n| [vec![n.to_string_lossy().into_owned()], direct[1..].to_vec()].concat());
    let (mut a, mut b, mut c, mut d) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds + 20 {
        for k in 0..4 {
            let keep = round >= 20;
            match (k + round) % 4 {
                3 => {
                    if let Some(line) = &through_before {
                        let t = time_once(line, uid);
                        settle();
                        if keep {
                            d.push(t.as_secs_f64() * 1e3);
                        }
                    }
                }
                0 => {
                    let t = time_once(&direct, uid);
                    clean();
                    if keep {
                        a.push(t.as_secs_f64() * 1e3);
                    }
                }
                1 => {
                    let t = time_once(&through, uid);
                    settle();
                    if keep {
                        b.push(t.as_secs_f64() * 1e3);
                    }
                }
                _ => {
                    if let Some(line) = &null_line {
                        let t = time_once(line, uid);
                        clean();
                        if keep {
                            c.push(t.as_secs_f64() * 1e3);
                        }
                    }
                }
            }
        }
    }
    let ratio = |x: &[f64], y: &[f64]| median(x.iter().zip(y).map(|(s, d)| s / d).collect());
    println!(
        "\n| {} placeholders, bwrap (srt options) `true` | bubblewrap direct | a null shim (execv only) | through the shim | null / direct | shim / direct | shim / null | the shim before | shim / before (medians of ratios) |",
        placeholders().len() + 1
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let (null_ms, null_ratio, over_null) = if c.is_empty() {
        ("-".to_string(), "-".to_string(), "-".to_string())
    } else {
        (
            format!("{:.2} ms", median(c.clone())),
            format!("{:.3}", ratio(&c, &a)),
            format!("{:.3}", ratio(&b, &c)),
        )
    };
    let (before_ms, over_before) = match before {
        Some((commit, _)) if !d.is_empty() => (
            format!("{:.2} ms ({commit})", median(d.clone())),
            format!("{:.3}", ratio(&b, &d)),
        ),
        _ => ("-".to_string(), "-".to_string()),
    };
    println!(
        "| {rounds} rounds, in turns | {:.2} ms | {null_ms} | {:.2} ms | {null_ratio} | {:.3} | {over_null} | {before_ms} | {over_before} |",
        median(a.clone()),
        median(b.clone()),
        ratio(&b, &a),
    );
}

/// A null helper: a static program that starts the command (`vfork`,
/// `execv`) and waits for it, nothing else; `None` without gcc.
fn null_helper(dir: &Path) -> Option<PathBuf> {
    common::static_c(
        dir,
        "null-helper",
        "#include <sys/wait.h>\n#include <unistd.h>\nint main(int argc, char **argv) { (void)argc; \
         pid_t c = vfork(); if (c == 0) { execv(argv[1], argv + 1); _exit(127); } int st = 0; \
         if (c < 0 || waitpid(c, &st, 0) < 0) return 125; return WIFEXITED(st) ? \
         WEXITSTATUS(st) : 128; }\n",
    )
}

/// A static C program that only execv()s `bwrap` with its own arguments:
/// what any shim costs before it does anything. None without a C compiler
/// and static glibc (Debian's gcc and libc6-dev).
fn null_exec_shim(dir: &Path, bwrap: &str) -> Option<PathBuf> {
    common::static_c(
        dir,
        "null-shim",
        &format!(
            "#include <unistd.h>\nint main(int argc, char **argv) {{ (void)argc; \
             execv(\"{bwrap}\", argv); return 127; }}\n"
        ),
    )
}
