//! Load: 1000 sandboxed runs, 50 at a time, as an unprivileged user, under
//! bubblewrap with srt's options; every exit status and output must be
//! right and no run may fail its setup. Again with everything pinned to
//! one CPU, the setting where the original race hurt most.

mod common;

use std::collections::VecDeque;
use std::process::{Child, Stdio};

use common::{Place, User, fixture, stderr};
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

const PARALLEL: usize = 50;

/// 1000 runs in the full suite, 300 in the developer's loop.
fn runs() -> usize {
    common::rounds(1000, 300) as usize
}

fn place() -> Place {
    if common::which("bwrap").is_some() {
        Place::Bwrap
    } else {
        common::skip("bubblewrap is not installed: the load runs go on the host");
        Place::Host
    }
}

fn spawn(place: Place, i: usize) -> Child {
    // Each run prints its own number and exits with a status made of it,
    // so a crossed or lost result shows.
    let script =
        "echo \"run $1 $(grep -c '^Seccomp_filters:.2' /proc/self/status)\"; exit $(($1 % 7))";
    let n = i.to_string();
    common::command(
        place,
        User::Unprivileged,
        &[("SRT_ALLOW_NESTED_USERNS", "0")],
        &fixture().helper,
        &["/bin/sh", "-c", script, "sh", &n],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn")
}

/// Runs all of them, `PARALLEL` at a time; returns the problems found.
fn run_all(place: Place) -> Vec<String> {
    let mut problems = Vec::new();
    let mut running: VecDeque<(usize, Child)> = VecDeque::new();
    let mut next = 0;
    let runs = runs();
    while next < runs || !running.is_empty() {
        while next < runs && running.len() < PARALLEL {
            running.push_back((next, spawn(place, next)));
            next += 1;
        }
        let (i, child) = running.pop_front().unwrap();
        let out = child.wait_with_output().expect("wait");
        let want_out = format!("run {i} 1\n");
        let want_code = (i % 7) as i32;
        let got_out = String::from_utf8_lossy(&out.stdout);
        if out.status.code() != Some(want_code) || got_out != want_out || !out.stderr.is_empty() {
            problems.push(format!(
                "run {i}: exit {:?} (want {want_code}), out {got_out:?}, err {:?}",
                out.status.code(),
                stderr(&out)
            ));
        }
    }
    problems
}

#[test]
fn a_thousand_parallel_runs_all_succeed() {
    let problems = run_all(place());
    assert!(
        problems.is_empty(),
        "{} of {} runs wrong:\n{}",
        problems.len(),
        runs(),
        problems.join("\n")
    );
}

#[test]
fn a_thousand_runs_pinned_to_one_cpu_all_succeed() {
    // This test thread's affinity is inherited by everything it spawns.
    let here = Pid::from_raw(0);
    let before = sched_getaffinity(here).unwrap();
    let mut one = CpuSet::new();
    let cpu = (0..CpuSet::count())
        .find(|&c| before.is_set(c).unwrap_or(false))
        .unwrap();
    one.set(cpu).unwrap();
    sched_setaffinity(here, &one).unwrap();
    let problems = run_all(place());
    sched_setaffinity(here, &before).unwrap();
    assert!(
        problems.is_empty(),
        "{} of {} runs wrong:\n{}",
        problems.len(),
        runs(),
        problems.join("\n")
    );
}
