//! The race tester (`--race-test`), run as a user would run it.

mod common;

use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};

use common::{NOBODY, fixture, is_root, status_field, stderr, stdout};

fn tester(args: &[&str], as_nobody: bool) -> Output {
    let mut cmd = Command::new(&fixture().helper);
    cmd.arg("--race-test")
        .args(args)
        .stdin(Stdio::null())
        .current_dir("/");
    if as_nobody && is_root() {
        use std::os::unix::process::CommandExt;
        cmd.uid(NOBODY).gid(NOBODY);
    }
    cmd.output().expect("run the tester")
}

/// Minimal reader for the tester's flat JSON objects: numbers and strings.
fn fields(line: &str) -> BTreeMap<String, String> {
    let body = line.trim().trim_start_matches('{').trim_end_matches('}');
    let mut map = BTreeMap::new();
    for pair in body.split(",\"") {
        if let Some((k, v)) = pair.split_once("\":") {
            map.insert(
                k.trim_matches('"').to_string(),
                v.trim_matches('"').to_string(),
            );
        }
    }
    map
}

fn number(map: &BTreeMap<String, String>, key: &str) -> u64 {
    map.get(key)
        .unwrap_or_else(|| panic!("no {key} in {map:?}"))
        .parse()
        .unwrap_or_else(|_| panic!("{key} is not a number in {map:?}"))
}

const REQUIRED: [&str; 13] = [
    "strategy",
    "join",
    "cpu",
    "load",
    "iterations",
    "ok",
    "einval",
    "other",
    "retries_total",
    "retries_max",
    "p50_us",
    "p99_us",
    "max_us",
];

#[test]
fn the_naive_entry_races_and_the_helper_entry_does_not() {
    let mut users = vec![false];
    if is_root() {
        users.push(true);
    }
    // 3000 rounds in the full suite, 500 in the developer's loop.
    let rounds = common::rounds(3000, 500);
    let n = rounds.to_string();
    for as_nobody in users {
        let out = tester(&["--join", "spin", "--iterations", &n, "--json"], as_nobody);
        let text = stdout(&out);
        let lines: Vec<BTreeMap<String, String>> = text.lines().map(fields).collect();
        assert_eq!(lines.len(), 2, "{text}\n{}", stderr(&out));
        for l in &lines {
            for key in REQUIRED {
                assert!(l.contains_key(key), "{key} missing: {l:?}");
            }
            assert_eq!(l["join"], "spin");
            assert_eq!(number(l, "iterations"), rounds.into());
            assert_eq!(
                number(l, "ok") + number(l, "einval") + number(l, "other"),
                rounds.into()
            );
        }
        let (naive, helper) = (&lines[0], &lines[1]);
        assert_eq!(
            (naive["strategy"].as_str(), helper["strategy"].as_str()),
            ("naive", "helper")
        );
        assert_eq!(
            number(helper, "ok"),
            rounds.into(),
            "the helper entry failed: {helper:?}"
        );
        assert_eq!(out.status.code(), Some(0), "{text}");
        if number(naive, "einval") == 0 {
            common::skip(&format!(
                "the race did not reproduce here (naive: 0 EINVAL in {rounds})"
            ));
            continue;
        }
        assert_eq!(number(naive, "other"), 0, "{naive:?}");
    }
}

#[test]
fn the_table_is_readable() {
    let out = tester(
        &["--iterations", "20", "--strategy", "helper", "--cpu", "0"],
        false,
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        text.starts_with("race test: join=futex cpu=0 load=0 iterations=20\n"),
        "{text}"
    );
    assert!(
        text.contains("strategy") && text.contains("EINVAL%"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("helper ") && l.contains(" 20 ")),
        "{text}"
    );
}

#[test]
fn load_processes_are_stopped_after_the_run() {
    // A copy of its own, so no other test's processes are counted.
    let copy = fixture().helper_copy("apply-seccomp-load", 0o755);
    let out = Command::new(&copy)
        .args(["--race-test", "--iterations", "30", "--load", "2", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let line = stdout(&out);
    assert_eq!(number(&fields(line.lines().next().unwrap()), "load"), 2);
    let copy = copy.to_string_lossy().into_owned();
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).starts_with(&copy))
                .unwrap_or(false)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "load processes left running: {left:?}");
}

#[test]
fn a_helper_that_keeps_failing_makes_the_tester_fail() {
    // strace makes every unshare answer EINVAL: the helper strategy must
    // then report its failures and the tester exit 1.
    let Some(strace) = common::which("strace") else {
        common::skip("strace is not installed");
        return;
    };
    let out = Command::new(strace)
        .args([
            "-f",
            "-qq",
            "-o",
            "/dev/null",
            "-e",
            "inject=unshare:error=EINVAL",
        ])
        .arg(&fixture().helper)
        .args([
            "--race-test",
            "--strategy",
            "helper",
            "--iterations",
            "3",
            "--json",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    let helper = fields(text.lines().next().unwrap());
    assert_eq!(number(&helper, "einval"), 3, "{helper:?}");
    assert!(number(&helper, "retries_total") >= 3, "{helper:?}");
}

#[test]
fn end_to_end_mode_finds_no_failure_in_our_helper() {
    let helper = fixture().helper.to_string_lossy().into_owned();
    for as_nobody in [false, true] {
        let out = tester(
            &["--exec", &helper, "--iterations", "40", "--json"],
            as_nobody,
        );
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
        let last = fields(text.lines().last().unwrap());
        assert_eq!(number(&last, "iterations"), 40);
        assert_eq!(number(&last, "failures"), 0, "{text}");
    }
}

#[test]
fn end_to_end_mode_counts_and_groups_failures() {
    // A stand-in helper that fails on every third run, with the message of
    // the racy helper, and runs its command otherwise.
    let dir = &fixture().dir;
    let counter = dir.join("flaky-count");
    std::fs::write(&counter, "0").unwrap();
    let flaky = fixture().script(
        "flaky-helper",
        &format!(
            "#!/bin/sh\nn=$(cat {c}); n=$((n+1)); echo $n > {c}\n\
             if [ $((n % 3)) -eq 0 ]; then\n  \
               echo 'apply-seccomp: unshare(CLONE_NEWUSER): Invalid argument' >&2\n  \
               echo 'second line' >&2\n  exit 1\nfi\nexec \"$@\"\n",
            c = counter.display()
        ),
    );

    let out = tester(
        &[
            "--exec",
            &flaky.to_string_lossy(),
            "--iterations",
            "30",
            "--json",
        ],
        false,
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    let last = text.lines().last().unwrap();
    let summary = fields(last);
    assert_eq!(number(&summary, "iterations"), 30);
    assert_eq!(number(&summary, "failures"), 10, "{last}");
    assert!(
        last.contains(
            "\"groups\":[{\"status\":1,\"first_line\":\"apply-seccomp: unshare(CLONE_NEWUSER): \
             Invalid argument\",\"count\":10}]"
        ),
        "{last}"
    );
    assert_eq!(std::fs::read_to_string(&counter).unwrap().trim(), "30");

    // The readable form says the same.
    std::fs::write(&counter, "0").unwrap();
    let out = tester(
        &["--exec", &flaky.to_string_lossy(), "--iterations", "6"],
        false,
    );
    let text = stdout(&out);
    assert!(text.contains("2 of 6 runs failed"), "{text}");
    assert!(
        text.contains("2 x exit   1: apply-seccomp: unshare(CLONE_NEWUSER): Invalid argument"),
        "{text}"
    );
}

#[test]
fn a_tester_that_cannot_run_exits_125() {
    // A CPU past the last one this process may use: pinning to it would
    // fail in every child, which must not read as helper failures.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let last = status_field(&status, "Cpus_allowed_list")
        .and_then(|list| list.rsplit([',', '-']).next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap();
    let past = (last + 1).to_string();
    for args in [
        &["--exec", "/nonexistent/helper", "--iterations", "2"][..],
        &["--strategy", "sideways"][..],
        &["--cpu", "99999"][..],
        &["--cpu", &past, "--iterations", "2"][..],
    ] {
        let out = tester(args, false);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).starts_with("apply-seccomp: "),
            "{}",
            stderr(&out)
        );
        assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
    }
    let out = tester(&["--cpu", &past, "--iterations", "2"], false);
    assert!(
        stderr(&out).contains(&format!("--cpu {past}: not a CPU this process may run on")),
        "{}",
        stderr(&out)
    );
}
