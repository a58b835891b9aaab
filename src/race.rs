//! `apply-seccomp --race-test`: reproduces the kernel race behind the
//! `unshare(CLONE_NEWUSER)` EINVAL failures and shows that the helper's own
//! entry routine does not fail.
//!
//! In-process mode: each iteration is a fresh forked child that starts a
//! thread which exits at once, joins it (`futex`: sleeps on the clear-tid
//! futex, as a runtime's join does; `spin`: polls the tid word, which
//! returns sooner and widens the window), then enters a user namespace:
//! `naive` calls `unshare(CLONE_NEWUSER)` at once, as the racy helper did;
//! `helper` calls [`userns::enter_user_namespace`], the very routine the
//! helper runs. The child sends back one fixed-size record over a pipe.
//!
//! End-to-end mode (`--exec`): runs `<helper> [args] true` N times and
//! groups the failures by exit status and first stderr line.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicI32;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sched::{CloneFlags, CpuSet, sched_setaffinity, unshare};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::error::Error;
use crate::json;
use crate::sys::{self, ExitingThread, Forked};
use crate::userns::{self, Backoff};

/// Exit code when the tester itself cannot run.
pub const EXIT_CANNOT_RUN: i32 = 125;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    Naive,
    Helper,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Naive => "naive",
            Strategy::Helper => "helper",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    Futex,
    Spin,
}

impl Join {
    pub fn name(self) -> &'static str {
        match self {
            Join::Futex => "futex",
            Join::Spin => "spin",
        }
    }
}

/// What `--race-test` was asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub iterations: u32,
    pub strategies: Vec<Strategy>,
    pub join: Join,
    /// `--cpu LIST` as given, and the CPUs it names.
    pub cpu: Option<(String, Vec<usize>)>,
    pub load: u32,
    pub json: bool,
    /// `--exec '<helper> [args]'`, split on whitespace.
    pub exec: Option<Vec<OsString>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            iterations: 1000,
            strategies: vec![Strategy::Naive, Strategy::Helper],
            join: Join::Futex,
            cpu: None,
            load: 0,
            json: false,
            exec: None,
        }
    }
}

/// Parses a CPU list such as `0`, `0-3` or `0,2,4-5`.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let bad = || format!("bad CPU list {text:?}");
        let (lo, hi): (usize, usize) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse().map_err(|_| bad())?,
                b.trim().parse().map_err(|_| bad())?,
            ),
            None => {
                let n = part.trim().parse().map_err(|_| bad())?;
                (n, n)
            }
        };
        if lo > hi || hi >= CpuSet::count() {
            return Err(bad());
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Parses the words after `--race-test`.
pub fn parse(args: &[OsString]) -> Result<Config, String> {
    let mut cfg = Config::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let arg = arg.to_str().ok_or("options must be UTF-8")?;
        let mut value = |name: &str| {
            it.next()
                .and_then(|v| v.to_str())
                .map(str::to_owned)
                .ok_or(format!("{name} needs a value"))
        };
        match arg {
            "--iterations" => {
                cfg.iterations = value(arg)?
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or("--iterations needs a positive number")?;
            }
            "--strategy" => {
                cfg.strategies = match value(arg)?.as_str() {
                    "naive" => vec![Strategy::Naive],
                    "helper" => vec![Strategy::Helper],
                    "both" => vec![Strategy::Naive, Strategy::Helper],
                    other => {
                        return Err(format!("unknown strategy {other:?} (naive, helper, both)"));
                    }
                }
            }
            "--join" => {
                cfg.join = match value(arg)?.as_str() {
                    "futex" => Join::Futex,
                    "spin" => Join::Spin,
                    other => return Err(format!("unknown join {other:?} (futex, spin)")),
                }
            }
            "--cpu" => {
                let text = value(arg)?;
                let cpus = parse_cpu_list(&text)?;
                cfg.cpu = Some((text, cpus));
            }
            "--load" => {
                cfg.load = value(arg)?.parse().map_err(|_| "--load needs a number")?;
            }
            "--json" => cfg.json = true,
            "--exec" => {
                let words: Vec<OsString> =
                    value(arg)?.split_whitespace().map(OsString::from).collect();
                if words.is_empty() {
                    return Err("--exec needs a helper command".into());
                }
                cfg.exec = Some(words);
            }
            other => return Err(format!("unknown --race-test option {other}")),
        }
    }
    Ok(cfg)
}

/// How one iteration ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Ok,
    Einval,
    Other(i32),
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    outcome: Outcome,
    retries: u32,
    /// Reads of /proc/self/task that still showed the joined thread.
    polls: u32,
    elapsed: Duration,
}

impl Sample {
    const SIZE: usize = 20;

    fn encode(self) -> [u8; Sample::SIZE] {
        let (tag, errno) = match self.outcome {
            Outcome::Ok => (0u8, 0),
            Outcome::Einval => (1, libc::EINVAL),
            Outcome::Other(e) => (2, e),
        };
        let mut b = [0u8; Sample::SIZE];
        b[0] = tag;
        b[4..8].copy_from_slice(&errno.to_le_bytes());
        b[8..12].copy_from_slice(&self.retries.to_le_bytes());
        let us = u32::try_from(self.elapsed.as_micros()).unwrap_or(u32::MAX);
        b[12..16].copy_from_slice(&us.to_le_bytes());
        b[16..20].copy_from_slice(&self.polls.to_le_bytes());
        b
    }

    fn decode(b: &[u8; Sample::SIZE]) -> Sample {
        let word = |i: usize| [b[i], b[i + 1], b[i + 2], b[i + 3]];
        let errno = i32::from_le_bytes(word(4));
        Sample {
            outcome: match b[0] {
                0 => Outcome::Ok,
                1 => Outcome::Einval,
                _ => Outcome::Other(errno),
            },
            retries: u32::from_le_bytes(word(8)),
            elapsed: Duration::from_micros(u64::from(u32::from_le_bytes(word(12)))),
            polls: u32::from_le_bytes(word(16)),
        }
    }
}

/// The figures for one strategy.
#[derive(Clone, Debug)]
pub struct Summary {
    pub strategy: Strategy,
    pub iterations: u32,
    pub ok: u32,
    pub einval: u32,
    pub other: u32,
    pub retries_total: u64,
    pub retries_max: u32,
    /// Iterations in which the thread-count wait saw the joined thread.
    pub waited: u32,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

fn summarize(strategy: Strategy, samples: &[Sample]) -> Summary {
    let mut us: Vec<u64> = samples
        .iter()
        .map(|s| s.elapsed.as_micros() as u64)
        .collect();
    us.sort_unstable();
    let pct = |p: usize| {
        us.get((us.len().saturating_sub(1)) * p / 100)
            .copied()
            .unwrap_or(0)
    };
    let count = |o: fn(&Outcome) -> bool| samples.iter().filter(|s| o(&s.outcome)).count() as u32;
    Summary {
        strategy,
        iterations: samples.len() as u32,
        ok: count(|o| *o == Outcome::Ok),
        einval: count(|o| *o == Outcome::Einval),
        other: count(|o| matches!(o, Outcome::Other(_))),
        retries_total: samples.iter().map(|s| u64::from(s.retries)).sum(),
        retries_max: samples.iter().map(|s| s.retries).max().unwrap_or(0),
        waited: samples.iter().filter(|s| s.polls > 0).count() as u32,
        p50_us: pct(50),
        p99_us: pct(99),
        max_us: us.last().copied().unwrap_or(0),
    }
}

/// One group of end-to-end results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Exit code, or 128+signal.
    pub status: i32,
    pub first_line: String,
    pub count: u32,
}

/// The result of a `--race-test` run.
#[derive(Clone, Debug)]
pub enum Report {
    InProcess {
        config: Config,
        summaries: Vec<Summary>,
    },
    EndToEnd {
        config: Config,
        iterations: u32,
        failures: u32,
        groups: Vec<Group>,
    },
}

/// CPU-bound processes that run alongside and are stopped on drop.
struct Load(Vec<Pid>);

impl Load {
    fn start(n: u32, cpus: Option<&CpuSet>) -> Result<Load, Error> {
        let mut load = Load(Vec::new());
        for _ in 0..n {
            match sys::fork().map_err(|e| Error::Usage(format!("fork(load): {e}")))? {
                Forked::Child => {
                    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
                    if let Some(set) = cpus {
                        let _ = sched_setaffinity(Pid::from_raw(0), set);
                    }
                    loop {
                        std::hint::spin_loop();
                    }
                }
                Forked::Parent(pid) => load.0.push(Pid::from_raw(pid)),
            }
        }
        Ok(load)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for &pid in &self.0 {
            let _ = kill(pid, Signal::SIGKILL);
        }
        for &pid in &self.0 {
            let _ = waitpid(pid, None);
        }
    }
}

fn cpu_set(cfg: &Config) -> Result<Option<CpuSet>, Error> {
    let Some((_, cpus)) = &cfg.cpu else {
        return Ok(None);
    };
    // Only CPUs this process may run on: pinning to any other fails in
    // every child, which would read as failures of the helper.
    let allowed = nix::sched::sched_getaffinity(Pid::from_raw(0))
        .map_err(|e| cannot("sched_getaffinity", e))?;
    let allowed_list: Vec<String> = (0..CpuSet::count())
        .filter(|&c| allowed.is_set(c).unwrap_or(false))
        .map(|c| c.to_string())
        .collect();
    let mut set = CpuSet::new();
    for &c in cpus {
        if !allowed.is_set(c).unwrap_or(false) {
            return Err(Error::Usage(format!(
                "--cpu {c}: not a CPU this process may run on (it may run on {})",
                allowed_list.join(",")
            )));
        }
        set.set(c)
            .map_err(|e| Error::Usage(format!("--cpu {c}: {e}")))?;
    }
    Ok(Some(set))
}

/// Runs the tester.
pub fn run(cfg: &Config) -> Result<Report, Error> {
    let cpus = cpu_set(cfg)?;
    let _load = Load::start(cfg.load, cpus.as_ref())?;
    match &cfg.exec {
        Some(helper) => end_to_end(cfg, helper, cpus.as_ref()),
        None => {
            let mut summaries = Vec::new();
            for &strategy in &cfg.strategies {
                let mut samples = Vec::with_capacity(cfg.iterations as usize);
                for _ in 0..cfg.iterations {
                    samples.push(iteration(strategy, cfg.join, cpus.as_ref())?);
                }
                summaries.push(summarize(strategy, &samples));
            }
            Ok(Report::InProcess {
                config: cfg.clone(),
                summaries,
            })
        }
    }
}

fn cannot(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Usage(format!("race test: {what}: {e}"))
}

/// One iteration in a fresh forked child.
fn iteration(strategy: Strategy, join: Join, cpus: Option<&CpuSet>) -> Result<Sample, Error> {
    let mut stack = vec![0u8; 64 * 1024];
    let tid = AtomicI32::new(0);
    let (rd, wr) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| cannot("pipe", e))?;
    match sys::fork().map_err(|e| cannot("fork", e))? {
        Forked::Child => {
            drop(rd);
            let sample = in_child(strategy, join, cpus, &mut stack, &tid);
            let _ = nix::unistd::write(&wr, &sample.encode());
            sys::exit_now(0)
        }
        Forked::Parent(pid) => {
            drop(wr);
            let mut buf = [0u8; Sample::SIZE];
            let read = std::fs::File::from(rd).read_exact(&mut buf);
            let status = waitpid(Pid::from_raw(pid), None).map_err(|e| cannot("waitpid", e))?;
            match (read, status) {
                (Ok(()), WaitStatus::Exited(_, 0)) => Ok(Sample::decode(&buf)),
                (_, status) => Err(cannot("iteration child", format!("ended as {status:?}"))),
            }
        }
    }
}

fn in_child(
    strategy: Strategy,
    join: Join,
    cpus: Option<&CpuSet>,
    stack: &mut [u8],
    tid: &AtomicI32,
) -> Sample {
    let failed = |e: Errno| Sample {
        outcome: Outcome::Other(e as i32),
        retries: 0,
        polls: 0,
        elapsed: Duration::ZERO,
    };
    if let Some(set) = cpus {
        if let Err(e) = sched_setaffinity(Pid::from_raw(0), set) {
            return failed(e);
        }
    }
    // Warm the clock (the first read in a fresh process can fault in the
    // vDSO data page), so the read after the join costs only nanoseconds.
    let _ = Instant::now();
    match ExitingThread::start(stack, tid) {
        Ok(thread) => match join {
            Join::Futex => thread.join_futex(),
            Join::Spin => thread.join_spin(),
        },
        Err(e) => return failed(e),
    }
    let start = Instant::now();
    let (outcome, retries, polls) = match strategy {
        Strategy::Naive => match unshare(CloneFlags::CLONE_NEWUSER) {
            Ok(()) => (Outcome::Ok, 0, 0),
            Err(Errno::EINVAL) => (Outcome::Einval, 0, 0),
            Err(e) => (Outcome::Other(e as i32), 0, 0),
        },
        Strategy::Helper => match userns::enter_user_namespace(&Backoff::default()) {
            Ok(entry) => (Outcome::Ok, entry.retries, entry.wait.polls),
            Err(Error::Transient { tries, .. }) => (Outcome::Einval, tries.saturating_sub(1), 0),
            Err(Error::Setup { source, .. }) => match source.raw_os_error() {
                Some(libc::EINVAL) => (Outcome::Einval, 0, 0),
                Some(e) => (Outcome::Other(e), 0, 0),
                None => (Outcome::Other(0), 0, 0),
            },
            Err(_) => (Outcome::Other(0), 0, 0),
        },
    };
    Sample {
        outcome,
        retries,
        polls,
        elapsed: start.elapsed(),
    }
}

fn end_to_end(cfg: &Config, helper: &[OsString], cpus: Option<&CpuSet>) -> Result<Report, Error> {
    if let Some(set) = cpus {
        // Inherited by every helper run.
        sched_setaffinity(Pid::from_raw(0), set).map_err(|e| cannot("sched_setaffinity", e))?;
    }
    let mut groups: Vec<Group> = Vec::new();
    let mut failures = 0;
    for _ in 0..cfg.iterations {
        let out = Command::new(&helper[0])
            .args(&helper[1..])
            .arg("true")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| cannot(&format!("run {}", helper[0].to_string_lossy()), e))?;
        use std::os::unix::process::ExitStatusExt;
        let status = out
            .status
            .code()
            .or_else(|| out.status.signal().map(|s| 128 + s))
            .unwrap_or(-1);
        if status == 0 {
            continue;
        }
        failures += 1;
        let first_line = String::from_utf8_lossy(&out.stderr)
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        match groups
            .iter_mut()
            .find(|g| g.status == status && g.first_line == first_line)
        {
            Some(g) => g.count += 1,
            None => groups.push(Group {
                status,
                first_line,
                count: 1,
            }),
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.count));
    Ok(Report::EndToEnd {
        config: cfg.clone(),
        iterations: cfg.iterations,
        failures,
        groups,
    })
}

impl Report {
    /// 0: the helper strategy (or the helper run) had no failure; 1: it had.
    pub fn exit_code(&self) -> i32 {
        match self {
            Report::InProcess { summaries, .. } => {
                let failed = summaries
                    .iter()
                    .any(|s| s.strategy == Strategy::Helper && s.ok != s.iterations);
                i32::from(failed)
            }
            Report::EndToEnd { failures, .. } => i32::from(*failures > 0),
        }
    }

    /// The output: a readable table, or JSON lines.
    pub fn render(&self) -> String {
        match self {
            Report::InProcess { config, summaries } => render_in_process(config, summaries),
            Report::EndToEnd {
                config,
                iterations,
                failures,
                groups,
            } => render_end_to_end(config, *iterations, *failures, groups),
        }
    }
}

fn cpu_text(cfg: &Config) -> &str {
    cfg.cpu.as_ref().map_or("all", |(t, _)| t.as_str())
}

fn render_in_process(cfg: &Config, summaries: &[Summary]) -> String {
    let mut out = String::new();
    if cfg.json {
        for s in summaries {
            let _ = writeln!(
                out,
                "{{\"strategy\":{},\"join\":{},\"cpu\":{},\"load\":{},\"iterations\":{},\
                 \"ok\":{},\"einval\":{},\"other\":{},\"retries_total\":{},\"retries_max\":{},\
                 \"waited\":{},\"p50_us\":{},\"p99_us\":{},\"max_us\":{}}}",
                json::string(s.strategy.name().as_bytes()),
                json::string(cfg.join.name().as_bytes()),
                json::string(cpu_text(cfg).as_bytes()),
                cfg.load,
                s.iterations,
                s.ok,
                s.einval,
                s.other,
                s.retries_total,
                s.retries_max,
                s.waited,
                s.p50_us,
                s.p99_us,
                s.max_us
            );
        }
        return out;
    }
    let _ = writeln!(
        out,
        "race test: join={} cpu={} load={} iterations={}",
        cfg.join.name(),
        cpu_text(cfg),
        cfg.load,
        cfg.iterations
    );
    let _ = writeln!(
        out,
        "{:<8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>8} {:>8} {:>8}",
        "strategy",
        "ok",
        "EINVAL",
        "other",
        "EINVAL%",
        "retries",
        "waited",
        "p50 us",
        "p99 us",
        "max us"
    );
    for s in summaries {
        let _ = writeln!(
            out,
            "{:<8} {:>8} {:>8} {:>8} {:>7.1}% {:>4}/{:<4} {:>7} {:>8} {:>8} {:>8}",
            s.strategy.name(),
            s.ok,
            s.einval,
            s.other,
            100.0 * f64::from(s.einval) / f64::from(s.iterations.max(1)),
            s.retries_total,
            s.retries_max,
            s.waited,
            s.p50_us,
            s.p99_us,
            s.max_us
        );
    }
    out
}

fn render_end_to_end(cfg: &Config, iterations: u32, failures: u32, groups: &[Group]) -> String {
    let helper: Vec<String> = cfg
        .exec
        .iter()
        .flatten()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let helper = helper.join(" ");
    let mut out = String::new();
    if cfg.json {
        let groups: Vec<String> = groups
            .iter()
            .map(|g| {
                format!(
                    "{{\"status\":{},\"first_line\":{},\"count\":{}}}",
                    g.status,
                    json::string(g.first_line.as_bytes()),
                    g.count
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "{{\"helper\":{},\"cpu\":{},\"load\":{},\"iterations\":{iterations},\
             \"failures\":{failures},\"groups\":[{}]}}",
            json::string(helper.as_bytes()),
            json::string(cpu_text(cfg).as_bytes()),
            cfg.load,
            groups.join(",")
        );
        return out;
    }
    let _ = writeln!(
        out,
        "race test (end to end): {helper} true, cpu={} load={}\n{failures} of {iterations} runs failed",
        cpu_text(cfg),
        cfg.load
    );
    for g in groups {
        let _ = writeln!(
            out,
            "{:>6} x exit {:>3}: {}",
            g.count, g.status, g.first_line
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn defaults_are_sensible() {
        let cfg = parse(&[]).unwrap();
        assert_eq!(cfg.iterations, 1000);
        assert_eq!(cfg.strategies, [Strategy::Naive, Strategy::Helper]);
        assert_eq!(cfg.join, Join::Futex);
        assert_eq!(cfg.load, 0);
        assert!(cfg.cpu.is_none() && cfg.exec.is_none() && !cfg.json);
    }

    #[test]
    fn options_parse() {
        let cfg = parse(&words(
            "--iterations 50 --strategy naive --join spin --cpu 0,2-3 --load 2 --json",
        ))
        .unwrap();
        assert_eq!(cfg.iterations, 50);
        assert_eq!(cfg.strategies, [Strategy::Naive]);
        assert_eq!(cfg.join, Join::Spin);
        assert_eq!(cfg.cpu, Some(("0,2-3".into(), vec![0, 2, 3])));
        assert_eq!(cfg.load, 2);
        assert!(cfg.json);
        let cfg = parse(&[OsString::from("--exec"), OsString::from("/x/helper --flag")]).unwrap();
        assert_eq!(cfg.exec, Some(words("/x/helper --flag")));
    }

    #[test]
    fn bad_options_are_refused() {
        for bad in [
            "--iterations 0",
            "--iterations x",
            "--strategy fast",
            "--join sleep",
            "--cpu 3-1",
            "--cpu a",
            "--load -1",
            "--bogus",
            "--iterations",
        ] {
            assert!(parse(&words(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn samples_round_trip() {
        for outcome in [Outcome::Ok, Outcome::Einval, Outcome::Other(libc::EPERM)] {
            let s = Sample {
                outcome,
                retries: 3,
                polls: 2,
                elapsed: Duration::from_micros(1234),
            };
            let d = Sample::decode(&s.encode());
            assert_eq!(
                (d.outcome, d.retries, d.polls, d.elapsed),
                (outcome, 3, 2, s.elapsed)
            );
        }
    }

    #[test]
    fn summaries_count_and_rank() {
        let mk = |outcome, us| Sample {
            outcome,
            retries: u32::from(outcome == Outcome::Einval),
            polls: u32::from(us % 4 == 0),
            elapsed: Duration::from_micros(us),
        };
        let samples: Vec<Sample> = (1..=100)
            .map(|i| {
                mk(
                    if i % 10 == 0 {
                        Outcome::Einval
                    } else {
                        Outcome::Ok
                    },
                    i,
                )
            })
            .collect();
        let s = summarize(Strategy::Naive, &samples);
        assert_eq!((s.ok, s.einval, s.other), (90, 10, 0));
        assert_eq!((s.retries_total, s.retries_max, s.waited), (10, 1, 25));
        assert_eq!((s.p50_us, s.p99_us, s.max_us), (50, 99, 100));
    }
}
