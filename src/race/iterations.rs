//! The in-process mode: one iteration in a fresh forked child (a thread
//! started and joined, then the strategy's `unshare`), its fixed-size
//! record sent back over a pipe, and the summary of many. Called by
//! `race::run`; the child runs no allocation between its fork and exit.

use std::io::Read;
use std::sync::atomic::AtomicI32;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sched::{CloneFlags, CpuSet, sched_setaffinity, unshare};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::error::Error;
use crate::run::userns::{self, Backoff};
use crate::sys::{self, ExitingThread, Forked};

use super::*;

/// How one iteration ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Ok,
    Einval,
    Other(i32),
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Sample {
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

pub(super) fn summarize(strategy: Strategy, samples: &[Sample]) -> Summary {
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

/// One iteration in a fresh forked child.
pub(super) fn iteration(
    strategy: Strategy,
    join: Join,
    cpus: Option<&CpuSet>,
) -> Result<Sample, Error> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
