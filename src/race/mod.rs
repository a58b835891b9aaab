//! `apply-seccomp --race-test`: reproduces the kernel race behind the
//! `unshare(CLONE_NEWUSER)` EINVAL failures and shows that the helper's own
//! entry routine does not fail.
//!
//! In-process mode: each iteration is a fresh forked child that starts a
//! thread which exits at once, joins it (`futex`: sleeps on the clear-tid
//! futex, as a runtime's join does; `spin`: polls the tid word, which
//! returns sooner and widens the window), then enters a user namespace:
//! `naive` calls `unshare(CLONE_NEWUSER)` at once, as the racy helper did;
//! `helper` calls [`crate::run::userns::enter_user_namespace`], the very routine the
//! helper runs. The child sends back one fixed-size record over a pipe.
//!
//! End-to-end mode (`--exec`): runs `<helper> [args] true` N times and
//! groups the failures by exit status and first stderr line.
//!
//! Files: this one (options, the load processes, the run), iterations.rs
//! (the in-process iterations and their summary), exec.rs (the end-to-end
//! mode), report.rs (the report, as text or JSON lines).

use std::ffi::OsString;

use nix::sched::{CpuSet, sched_setaffinity};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use crate::error::Error;
use crate::sys::{self, Forked};

mod exec;
mod iterations;
mod report;

pub use exec::Group;
use exec::end_to_end;
pub use iterations::Summary;
use iterations::{iteration, summarize};

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
}
