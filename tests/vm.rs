//! The AppArmor suite: the built helper in a QEMU guest (`vm/run`) on
//! Debian 13's kernel 6.12 with AppArmor and Landlock, bubblewrap 0.12.0
//! and AppArmor's stock profile `bwrap-userns-restrict` (Ubuntu's, shipped
//! by Debian's apparmor-profiles), loaded with `apparmor_parser -r`. Through
//! srt's bubblewrap line, as root and as uid 65534: without the profile the
//! helper takes the namespace way; with it, everything bwrap runs is
//! stacked under `unpriv_bwrap` (no usable capability), and the helper
//! takes the capability-free way. Either way the command runs, under the
//! filters of the THREATS table (common/threats.rs, the host tests' own),
//! and can signal, ptrace or open no process outside. A second boot
//! without Landlock in `lsm=` shows the helper failing closed, with the
//! cause and the narrowest fix; a third, on Debian 12's kernel 6.1
//! (Landlock ABI 2), shows the capability-free way refused by name where
//! Landlock cannot scope.
//!
//! The guest runs a shell script made here; each case's status, stdout
//! and stderr come back framed (`@@case NAME STATUS`, `o `/`e ` lines,
//! `@@end`) and are checked here, so a failure inside the VM fails this
//! test with the case's output. About 2 s to boot under TCG, 20-40 s in
//! all; the packages are fetched once into the cache (vm/run).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::threats;
use common::{BWRAP_OPTIONS, fixture, in_full_suite, probe_results, status_field};

/// One case's outcome inside the guest.
#[derive(Debug, Default)]
struct Ran {
    status: i32,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn all(&self) -> String {
        format!(
            "status {}\n--- stdout\n{}--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// `'...'` for sh.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

fn join(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Guest {
    Root,
    Nobody,
}

const GUESTS: [Guest; 2] = [Guest::Root, Guest::Nobody];

/// The guest script being built: one `run` line per case.
struct Script {
    text: String,
}

const HELPER: &str = "/opt/apply-seccomp";
const PROBE: &str = "/opt/probe";
const COUNTER: &str = "/opt/counter";

/// The task cap's cases (issue 57, src/run/tasks.rs): `/opt/counter` forks
/// until refused under an asked cap, directly and under srt's line, as
/// root and uid 65534; the machine's `pid_max` read before and after.
fn add_task_cap_cases(s: &mut Script) {
    s.line("run pidmax-before cat /proc/sys/kernel/pid_max");
    for who in GUESTS {
        let cap = if who == Guest::Root { "400" } else { "20" };
        let env = [("APPLY_SECCOMP_MAX_TASKS", cap)];
        let argv = [HELPER, COUNTER];
        let direct: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
        s.case(&format!("{who:?}-cap-direct"), who, &env, &direct);
        s.case(&format!("{who:?}-cap-bwrap"), who, &env, &bwrap(who, &argv));
    }
    s.line("run pidmax-after cat /proc/sys/kernel/pid_max");
}

/// What [`add_task_cap_cases`] must show: on a kernel that keeps
/// `pid_max` per PID namespace (6.14+) every cap exact (the counter is
/// one of the tasks); before, uid 65534's exact (RLIMIT_NPROC) and
/// root's refused, since the kernel holds root to neither; the
/// machine's `pid_max` untouched either way.
fn check_task_cap(cases: &BTreeMap<String, Ran>, kernel: &str, per_namespace: bool) {
    let before = get(cases, "pidmax-before");
    assert_eq!(
        get(cases, "pidmax-after").stdout,
        before.stdout,
        "{kernel}: the machine's pid_max changed"
    );
    for who in GUESTS {
        for place in ["direct", "bwrap"] {
            let ran = get(cases, &format!("{who:?}-cap-{place}"));
            let ctx = format!("{kernel} {who:?}-cap-{place}: {}", ran.all());
            if who == Guest::Root && !per_namespace {
                assert_eq!(ran.status, 125, "{ctx}");
                assert_eq!(ran.stdout, "", "{ctx}");
                assert!(
                    ran.stderr
                        .contains("before Linux 6.14 it keeps no pid_max per PID namespace"),
                    "{ctx}"
                );
                continue;
            }
            let forks = if who == Guest::Root { 399 } else { 19 };
            assert_eq!(
                (ran.status, ran.stdout.as_str()),
                (
                    0,
                    format!("forked {forks} errno {}\n", libc::EAGAIN).as_str()
                ),
                "{ctx}"
            );
        }
    }
}

/// The counter, static, for the x86_64 guests.
fn counter_x86_64() -> Option<PathBuf> {
    let dir = fixture().dir.join("vm-counter");
    std::fs::create_dir_all(&dir).unwrap();
    let built = common::static_c(&dir, "counter", include_str!("probe/counter.c"));
    if built.is_none() {
        common::skip("gcc with static glibc (libc6-dev) is needed for the counter");
    }
    built
}
const PROFILE: &str = "/usr/share/apparmor/extra-profiles/bwrap-userns-restrict";

impl Script {
    fn new() -> Script {
        Script {
            text: String::from(
                "run() {\n  name=$1; shift\n  \"$@\" >/tmp/o 2>/tmp/e </dev/null; rc=$?\n  \
                 echo \"@@case $name $rc\"; sed 's/^/o /' /tmp/o; sed 's/^/e /' /tmp/e; echo @@end\n}\n",
            ),
        }
    }

    /// A raw guest shell line.
    fn line(&mut self, text: &str) {
        self.text.push_str(text);
        self.text.push('\n');
    }

    /// The helper with `helper_args` running `echo RAN` under srt's
    /// bubblewrap line, as `who`.
    fn echo_ran(&mut self, name: &str, who: Guest, env: &[(&str, &str)], helper_args: &[&str]) {
        let mut argv = vec![HELPER];
        argv.extend(helper_args);
        argv.extend(["/bin/sh", "-c", "echo RAN"]);
        self.case(name, who, env, &bwrap(who, &argv));
    }

    /// `argv` as `who`, with a clean environment plus `env`.
    fn case(&mut self, name: &str, who: Guest, env: &[(&str, &str)], argv: &[String]) {
        let command = as_guest(who, env, argv);
        self.line(&format!("run {name} sh -c {}", quote(&command)));
    }
}

/// The shell command that runs `argv` as `who`, with a clean environment
/// plus `env`.
fn as_guest(who: Guest, env: &[(&str, &str)], argv: &[String]) -> String {
    let mut words = vec![
        "env".to_string(),
        "-i".into(),
        "PATH=/usr/sbin:/usr/bin:/sbin:/bin".into(),
    ];
    words.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
    words.extend(argv.iter().cloned());
    let command = join(&words);
    match who {
        Guest::Root => command,
        Guest::Nobody => format!(
            "su -s /bin/sh nobody -c {}",
            quote(&format!("cd / && {command}"))
        ),
    }
}

/// srt's bubblewrap line around `argv` (with `--cap-add CAP_SETFCAP` for
/// root, as srt adds it).
fn bwrap(who: Guest, argv: &[&str]) -> Vec<String> {
    let mut v = vec!["bwrap".to_string()];
    v.extend(BWRAP_OPTIONS.iter().map(|s| s.to_string()));
    if who == Guest::Root {
        v.extend(["--cap-add".into(), "CAP_SETFCAP".into()]);
    }
    v.push("--".into());
    v.extend(argv.iter().map(|s| s.to_string()));
    v
}

/// Boots the x86_64 guest (Debian `release`) with `lsm`, with this build
/// of the helper and the probe, runs `script`, returns the cases by name;
/// `None` when this machine cannot run the suite (a skip).
fn boot(release: &str, lsm: &str, script: &Script, label: &str) -> Option<BTreeMap<String, Ran>> {
    if !cfg!(target_arch = "x86_64") {
        common::skip("the AppArmor VM is an x86_64 guest running this x86_64 build");
        return None;
    }
    let probe = fixture().probe()?;
    let files = [
        (fixture().helper.clone(), HELPER),
        (probe.to_path_buf(), PROBE),
        (counter_x86_64()?, COUNTER),
    ];
    boot_guest("x86_64", release, lsm, &files, script, label)
}

/// Boots a guest of `arch` with `files` (host path, guest path) added.
fn boot_guest(
    arch: &str,
    release: &str,
    lsm: &str,
    files: &[(PathBuf, &str)],
    script: &Script,
    label: &str,
) -> Option<BTreeMap<String, Ran>> {
    let qemu = format!("qemu-system-{arch}");
    for tool in [qemu.as_str(), "apt-get", "dpkg-deb", "cpio"] {
        if common::which(tool).is_none() {
            common::skip(&format!("{tool} is not installed: the {arch} VM needs it"));
            return None;
        }
    }
    let dir = fixture().dir.join(format!("vm-{label}"));
    std::fs::create_dir_all(&dir).unwrap();
    let script_path = dir.join("cases.sh");
    std::fs::write(&script_path, &script.text).unwrap();
    let console = dir.join("console.log");
    let run = Path::new(env!("CARGO_MANIFEST_DIR")).join("vm/run");
    let mut cmd = Command::new(run);
    cmd.args(["--arch", arch, "--release", release, "--lsm", lsm])
        .args(["--timeout", "900", "--console"])
        .arg(&console);
    for (host, guest) in files {
        cmd.arg("--add").arg(format!("{}:{guest}", host.display()));
    }
    let out = cmd
        .arg("--add")
        .arg(format!("{}:/opt/cases.sh", script_path.display()))
        .args(["--", "sh /opt/cases.sh"])
        .output()
        .expect("run vm/run");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.code() == Some(125) && text.is_empty() && err.contains("apt-get") {
        common::skip(&format!("the VM's packages could not be fetched: {err}"));
        return None;
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{label}: the guest script failed: {err}\n{text}\nconsole: {}",
        std::fs::read_to_string(&console).unwrap_or_default()
    );
    Some(parse(&text))
}

fn parse(text: &str) -> BTreeMap<String, Ran> {
    let mut cases = BTreeMap::new();
    let mut current: Option<(String, Ran)> = None;
    for line in text.lines() {
        if let Some(head) = line.strip_prefix("@@case ") {
            let (name, status) = head.rsplit_once(' ').unwrap();
            current = Some((
                name.to_string(),
                Ran {
                    status: status.parse().unwrap(),
                    ..Ran::default()
                },
            ));
        } else if line == "@@end" {
            let (name, ran) = current.take().expect("@@end without @@case");
            cases.insert(name, ran);
        } else if let Some((_, ran)) = current.as_mut() {
            if let Some(l) = line.strip_prefix("o ") {
                ran.stdout.push_str(l);
                ran.stdout.push('\n');
            } else if let Some(l) = line.strip_prefix("e ") {
                ran.stderr.push_str(l);
                ran.stderr.push('\n');
            } else if line == "o" {
                ran.stdout.push('\n');
            } else if line == "e" {
                ran.stderr.push('\n');
            }
        }
    }
    cases
}

fn get<'a>(cases: &'a BTreeMap<String, Ran>, name: &str) -> &'a Ran {
    cases
        .get(name)
        .unwrap_or_else(|| panic!("no case {name} came back: {:?}", cases.keys()))
}

/// The guest function for the mount guard's case: the sandbox (srt's
/// options, a folder read-write, a placeholder `P`) runs a command that
/// waits, then writes `P`; guest root deletes `P` once the command has
/// started, as another sandbox's clean-up would.
const GUARD_CASE: &str = r#"guard_case() {
  d=/tmp/guard-$1; rm -rf $d; mkdir -p $d; chmod 777 $d
  cmd="cd / && bwrap --new-session --die-with-parent --unshare-net --ro-bind / / --dev /dev --unshare-pid --unshare-user --cap-drop ALL --proc /proc $3 --bind $d $d --ro-bind /dev/null $d/P -- /opt/apply-seccomp /bin/sh -c 'echo ready; sleep 5; echo x > $d/P; echo wrote'"
  su -s /bin/sh $2 -c "$cmd" > $d/o 2> $d/e & pid=$!
  while [ ! -s $d/o ]; do sleep 0.1; done
  rm -f $d/P
  wait $pid; rc=$?
  [ -e $d/P ] && echo "P on the host: $(cat $d/P)" >> $d/o
  echo "@@case $1 $rc"; sed 's/^/o /' $d/o; sed 's/^/e /' $d/e; echo @@end
}"#;

fn add_guard_case(s: &mut Script, phase: &str) {
    s.line(&format!(
        "guard_case {phase}-Root-guard root '--cap-add CAP_SETFCAP'; \
         guard_case {phase}-Nobody-guard nobody ''"
    ));
}

/// The cases run without the profile and with it, for each guest user.
fn add_helper_cases(s: &mut Script, phase: &str) {
    let filters = {
        let mut v = vec![PROBE];
        v.extend(threats::filter_checks(threats::HOST, false));
        v
    };
    for who in GUESTS {
        let tag = format!("{phase}-{who:?}");
        let in_helper = |argv: &[&str]| {
            let mut v = vec![HELPER];
            v.extend(argv);
            bwrap(who, &v)
        };
        // bwrap alone: its payload's AppArmor label.
        s.case(
            &format!("{tag}-label"),
            who,
            &[],
            &bwrap(who, &["cat", "/proc/self/attr/current"]),
        );
        s.case(
            &format!("{tag}-filters"),
            who,
            &[("SRT_ALLOW_NESTED_USERNS", "0"), ("SRT_DEBUG", "1")],
            &in_helper(&filters),
        );
        s.case(
            &format!("{tag}-nested"),
            who,
            &[("SRT_ALLOW_NESTED_USERNS", "1")],
            &in_helper(&filters),
        );
        s.case(
            &format!("{tag}-outside"),
            who,
            &[],
            &in_helper(&[
                PROBE,
                "ptrace-init",
                "mem-init",
                "foreign",
                "kill-foreign",
                "ptrace-foreign",
            ]),
        );
        // An abstract address bound outside bwrap, reached through an
        // inherited unbound socket (fd 3), which no filter can refuse.
        let mut abstract_case = vec![
            PROBE.to_string(),
            "with-abstract".into(),
            format!("vm-{tag}"),
        ];
        abstract_case.extend(in_helper(&[
            PROBE,
            &format!("abstract-connect:vm-{tag}"),
            "own-unix",
            "own-tcp",
        ]));
        s.case(&format!("{tag}-abstract"), who, &[], &abstract_case);
        s.case(
            &format!("{tag}-abstract-deny"),
            who,
            &[("APPLY_SECCOMP_UNIX", "deny")],
            &abstract_case,
        );
        s.case(
            &format!("{tag}-status"),
            who,
            &[],
            &in_helper(&[
                "/bin/sh",
                "-c",
                "cat /proc/self/attr/current; echo; grep -E \
                 '^(NoNewPrivs|Seccomp|Seccomp_filters|CapEff):' /proc/self/status; \
                 echo pid=$$ ppid=$PPID",
            ]),
        );
        s.case(
            &format!("{tag}-exit"),
            who,
            &[],
            &in_helper(&["/bin/sh", "-c", "kill -TERM $$"]),
        );
        s.echo_ran(
            &format!("{tag}-namespaces-only"),
            who,
            &[],
            &["--way-in=namespaces"],
        );
    }
}

/// The doctor as each guest, on the guest's host and under srt's
/// bubblewrap line (cases `doctor-host-WHO`, `doctor-bwrap-WHO`).
fn add_doctor_cases(s: &mut Script) {
    for who in GUESTS {
        s.case(
            &format!("doctor-host-{who:?}"),
            who,
            &[],
            &[HELPER.into(), "--doctor".into(), "--json".into()],
        );
        s.case(
            &format!("doctor-bwrap-{who:?}"),
            who,
            &[],
            &bwrap(who, &[HELPER, "--doctor", "--json"]),
        );
    }
}

/// A doctor case's JSON report, and one check of it: (status, found, fix).
fn doctor_check(ran: &Ran, name: &str) -> (serde_json::Value, String, String, String) {
    let report: serde_json::Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("doctor output is not JSON ({e}): {}", ran.all()));
    let check = report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no check {name}: {}", ran.all()))
        .clone();
    let text = |k: &str| check[k].as_str().unwrap_or("").to_string();
    (report, text("status"), text("found"), text("fix"))
}

#[test]
fn apparmor_unpriv_bwrap_runs_the_command_capability_free() {
    if !in_full_suite("boots QEMU guests") {
        return;
    }
    let mut s = Script::new();
    // The probe's SIGSYS kills are audited too; rate-limited, they can
    // crowd out the AppArmor denials counted at the end.
    s.line("echo 0 > /proc/sys/kernel/printk_ratelimit");
    s.line(GUARD_CASE);
    add_helper_cases(&mut s, "off");
    add_guard_case(&mut s, "off");
    s.line(&format!("run load-profile apparmor_parser -r {PROFILE}"));
    add_helper_cases(&mut s, "on");
    add_guard_case(&mut s, "on");
    add_doctor_cases(&mut s);
    s.line(
        "run denials sh -c \"dmesg | grep 'apparmor=\\\"DENIED\\\" operation=\\\"capable\\\"' \
         | grep -c 'profile=\\\"unpriv_bwrap\\\"'\"",
    );
    let Some(cases) = boot(
        "trixie",
        "landlock,lockdown,yama,apparmor,bpf",
        &s,
        "landlock",
    ) else {
        return;
    };
    assert_eq!(
        get(&cases, "load-profile").status,
        0,
        "{}",
        get(&cases, "load-profile").all()
    );

    for (phase, profile) in [("off", false), ("on", true)] {
        for who in GUESTS {
            let tag = format!("{phase}-{who:?}");
            let ctx = |case: &str| {
                format!(
                    "{tag}-{case}: {}",
                    get(&cases, &format!("{tag}-{case}")).all()
                )
            };
            let case = |name: &str| get(&cases, &format!("{tag}-{name}"));

            // bubblewrap alone runs either way; with the profile its
            // payload is stacked under unpriv_bwrap.
            let label = case("label");
            assert_eq!(label.status, 0, "{}", ctx("label"));
            let want_label = if profile {
                "bwrap//&unpriv_bwrap (enforce)"
            } else {
                "unconfined"
            };
            assert_eq!(label.stdout.trim(), want_label, "{}", ctx("label"));

            // The filters: the THREATS table, as on the host.
            let filters = case("filters");
            assert_eq!(filters.status, 0, "{}", ctx("filters"));
            let got = probe_results(&filters.stdout);
            let privileged = !profile && who == Guest::Root;
            let wrong = threats::filter_mismatches(
                threats::HOST,
                &got,
                false,
                privileged,
                false,
                threats::Unix::Own,
            );
            assert!(wrong.is_empty(), "{}\n{}", ctx("filters"), wrong.join("\n"));
            let way = if profile {
                "entry: capability-free path (unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID) \
                 refused; a user namespace can be made here, but no capability in it can be used"
            } else {
                "entry: user namespace path"
            };
            assert!(filters.stderr.contains(way), "{}", ctx("filters"));
            // The mount guard reads bubblewrap's destinations on both ways,
            // with or without capabilities.
            assert!(
                filters
                    .stderr
                    .contains("destinations of bubblewrap's restricting mounts watched"),
                "{}",
                ctx("filters")
            );
            let nested = case("nested");
            assert_eq!(nested.status, 0, "{}", ctx("nested"));
            let got = probe_results(&nested.stdout);
            let wrong = threats::filter_mismatches(
                threats::HOST,
                &got,
                true,
                privileged,
                false,
                threats::Unix::Own,
            );
            assert!(wrong.is_empty(), "{}\n{}", ctx("nested"), wrong.join("\n"));

            // Row 16: no process outside can be opened, signalled or
            // ptraced.
            let outside = case("outside");
            assert_eq!(outside.status, 0, "{}", ctx("outside"));
            let got = probe_results(&outside.stdout);
            assert_eq!(got["ptrace-init"], "errno:EPERM", "{}", ctx("outside"));
            assert_eq!(got["mem-init"], "errno:EACCES", "{}", ctx("outside"));
            if profile {
                // No PID namespace of its own: bwrap's PID 1, the shell
                // and the stub are in sight, and out of reach.
                let wrong = threats::outside_mismatches(&got, 2);
                assert!(wrong.is_empty(), "{}\n{}", ctx("outside"), wrong.join("\n"));
            } else if who == Guest::Nobody {
                // A fresh /proc: only the inner init.
                assert_eq!(got["foreign"], "1:EACCES", "{}", ctx("outside"));
            } else {
                // Root under bwrap's --proc: no fresh /proc (docs/ways-in.md), but
                // nothing in sight can be opened.
                assert!(
                    got["foreign"].split(',').all(|e| e.ends_with(":EACCES")),
                    "{}",
                    ctx("outside")
                );
            }
            // The inherited socket lives in the network namespace it was
            // made in, where the address exists. Under the own-sockets
            // policy the stub refuses the connect on both ways (no socket
            // of the run holds that name); under upstream's only the
            // Landlock scope refuses it (the namespace way leaves
            // inherited descriptors alone, as THREATS.md says).
            for (name, want) in [
                ("abstract", "errno:EACCES"),
                ("abstract-deny", if profile { "errno:EPERM" } else { "ok" }),
            ] {
                let got = probe_results(&case(name).stdout);
                assert_eq!(
                    got.get("abstract-connect").map(String::as_str),
                    Some(want),
                    "{}",
                    ctx(name)
                );
            }
            // A listener of the command's own, reached through the stub
            // (an abstract name; TCP), and under upstream's policy no
            // AF_UNIX socket at all.
            for (name, unix) in [("abstract", "ok"), ("abstract-deny", "errno:EPERM")] {
                let got = probe_results(&case(name).stdout);
                for (check, want) in [("own-unix", unix), ("own-tcp", "ok")] {
                    assert_eq!(
                        got.get(check).map(String::as_str),
                        Some(want),
                        "{check}: {}",
                        ctx(name)
                    );
                }
            }

            // What the command sees of itself.
            let status = case("status");
            assert_eq!(status.status, 0, "{}", ctx("status"));
            let text = &status.stdout;
            assert_eq!(
                status_field(text, "NoNewPrivs"),
                Some("1"),
                "{}",
                ctx("status")
            );
            assert_eq!(
                status_field(text, "Seccomp"),
                Some("2"),
                "{}",
                ctx("status")
            );
            assert_eq!(
                status_field(text, "Seccomp_filters"),
                Some("2"),
                "{}",
                ctx("status")
            );
            if profile {
                assert!(
                    text.starts_with("bwrap//&unpriv_bwrap (enforce)"),
                    "{}",
                    ctx("status")
                );
                assert!(!text.contains("pid=2 ppid=1"), "{}", ctx("status"));
            } else {
                assert!(text.contains("pid=2 ppid=1"), "{}", ctx("status"));
            }
            // Exit statuses as on the other way: 128+N for a signal.
            assert_eq!(case("exit").status, 143, "{}", ctx("exit"));

            // The mount guard stops the command when the placeholder goes,
            // before its write.
            let guard = case("guard");
            assert_eq!(guard.status, 125, "{}", ctx("guard"));
            assert!(!guard.stdout.contains("wrote"), "{}", ctx("guard"));
            assert!(!guard.stdout.contains("P on the host"), "{}", ctx("guard"));
            assert!(
                guard.stderr.contains("is no longer mounted in the sandbox")
                    && guard.stderr.contains("the command was stopped"),
                "{}",
                ctx("guard")
            );

            // Asked for namespaces only: with the profile that is refused,
            // with the cause, and the way that works named.
            let ns = case("namespaces-only");
            if profile {
                assert_eq!(ns.status, 125, "{}", ctx("namespaces-only"));
                assert!(!ns.stdout.contains("RAN"), "{}", ctx("namespaces-only"));
                for want in [
                    "apply-seccomp: unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID): \
                     Operation not permitted",
                    "no capability in it can be used (write /proc/self/setgroups in a new \
                     one: Permission denied)",
                    "unpriv_bwrap",
                    "leave out --way-in=namespaces",
                ] {
                    assert!(ns.stderr.contains(want), "{}", ctx("namespaces-only"));
                }
                for wrong in [
                    "unprivileged_userns_clone",
                    "max_user_namespaces",
                    "seccomp filter",
                ] {
                    assert!(!ns.stderr.contains(wrong), "{}", ctx("namespaces-only"));
                }
            } else {
                assert_eq!(ns.status, 0, "{}", ctx("namespaces-only"));
                assert_eq!(ns.stdout, "RAN\n", "{}", ctx("namespaces-only"));
            }
        }
    }
    // The doctor says which way in the helper takes under the profile:
    // its run under srt's bubblewrap line took the capability-free way
    // (so the verdict is the capability-free way), and inside bubblewrap
    // the entry itself names the denial and the way taken.
    for who in GUESTS {
        let host = get(&cases, &format!("doctor-host-{who:?}"));
        let (report, status, found, _) = doctor_check(host, "bubblewrap run");
        assert_eq!(host.status, 0, "{who:?}: {}", host.all());
        assert_eq!(report["way_in"], "capability-free", "{}", host.all());
        assert_eq!(status, "ok", "{}", host.all());
        assert!(
            found.contains("the capability-free way in"),
            "{}",
            host.all()
        );
        let inside = get(&cases, &format!("doctor-bwrap-{who:?}"));
        let (_, status, found, _) = doctor_check(inside, "user namespaces");
        assert_eq!(status, "warning", "{who:?}: {}", inside.all());
        for want in [
            "no capability in it can be used",
            "unpriv_bwrap",
            "so the helper takes the capability-free way in here",
        ] {
            assert!(found.contains(want), "{want}: {}", inside.all());
        }
    }
    // The decision came from the kernel's answer: AppArmor logged its
    // capability denials under unpriv_bwrap.
    let denials = get(&cases, "denials");
    let n: u32 = denials.stdout.trim().parse().unwrap_or(0);
    assert!(
        n > 0,
        "no unpriv_bwrap capability denial logged: {}",
        denials.all()
    );
}

#[test]
fn without_landlock_the_helper_fails_closed_naming_the_cause() {
    if !in_full_suite("boots QEMU guests") {
        return;
    }
    let mut s = Script::new();
    for who in GUESTS {
        s.echo_ran(&format!("off-{who:?}"), who, &[], &[]);
    }
    s.line(&format!("run load-profile apparmor_parser -r {PROFILE}"));
    for who in GUESTS {
        s.echo_ran(&format!("on-{who:?}"), who, &[], &[]);
        s.echo_ran(
            &format!("forced-{who:?}"),
            who,
            &[],
            &["--way-in=capability-free"],
        );
    }
    add_doctor_cases(&mut s);
    let Some(cases) = boot("trixie", "lockdown,yama,apparmor,bpf", &s, "no-landlock") else {
        return;
    };
    assert_eq!(get(&cases, "load-profile").status, 0);
    for who in GUESTS {
        let off = get(&cases, &format!("off-{who:?}"));
        assert_eq!(
            (off.status, off.stdout.as_str()),
            (0, "RAN\n"),
            "{}",
            off.all()
        );
        let on = get(&cases, &format!("on-{who:?}"));
        assert_eq!(on.status, 125, "{who:?}: {}", on.all());
        assert!(!on.stdout.contains("RAN"), "{who:?}: {}", on.all());
        for want in [
            "apply-seccomp: no namespace can be made here, and the capability-free way in \
             cannot run: Landlock is built into this kernel but not enabled: add landlock to \
             the lsm= boot parameter",
            "no capability in it can be used",
            "unpriv_bwrap",
            "Narrowest fix: boot a kernel with Landlock ABI 6",
        ] {
            assert!(
                on.stderr.contains(want),
                "{who:?} lacks {want:?}: {}",
                on.all()
            );
        }
        // The doctor: no sandbox can start (exit 1); its bubblewrap run
        // shows the helper's refusal, and inside bubblewrap the entry
        // check names what Landlock lacks and the narrowest fix.
        let host = get(&cases, &format!("doctor-host-{who:?}"));
        let (report, status, found, _) = doctor_check(host, "bubblewrap run");
        assert_eq!(host.status, 1, "{who:?}: {}", host.all());
        assert_eq!(report["can_run"], false, "{}", host.all());
        assert_eq!(status, "fail", "{}", host.all());
        assert!(
            found.contains("Landlock is built into this kernel but not enabled"),
            "{}",
            host.all()
        );
        let inside = get(&cases, &format!("doctor-bwrap-{who:?}"));
        let (_, status, found, fix) = doctor_check(inside, "user namespaces");
        assert_eq!(status, "fail", "{who:?}: {}", inside.all());
        assert!(
            found.contains("the capability-free way in cannot run"),
            "{}",
            inside.all()
        );
        assert!(
            fix.starts_with("Narrowest fix: boot a kernel with Landlock ABI 6"),
            "{}",
            inside.all()
        );
        let forced = get(&cases, &format!("forced-{who:?}"));
        assert_eq!(forced.status, 125, "{who:?}: {}", forced.all());
        assert!(!forced.stdout.contains("RAN"), "{}", forced.all());
        assert!(
            forced.stderr.starts_with(
                "apply-seccomp: --way-in=capability-free: Landlock is built into this kernel \
                 but not enabled"
            ),
            "{}",
            forced.all()
        );
    }
}

/// Debian 12's kernel 6.1 has Landlock, but ABI 2, without scoping: the
/// capability-free way refuses to run there rather than run a weaker
/// domain, and says so; the namespace way is unaffected.
#[test]
fn an_older_landlock_without_scoping_is_refused_by_name() {
    if !in_full_suite("boots QEMU guests") {
        return;
    }
    let mut s = Script::new();
    for who in GUESTS {
        s.echo_ran(
            &format!("forced-{who:?}"),
            who,
            &[],
            &["--way-in=capability-free"],
        );
        s.echo_ran(&format!("auto-{who:?}"), who, &[("SRT_DEBUG", "1")], &[]);
    }
    add_task_cap_cases(&mut s);
    s.line("run kernel uname -r");
    let Some(cases) = boot(
        "bookworm",
        "landlock,lockdown,yama,apparmor,bpf",
        &s,
        "bookworm",
    ) else {
        return;
    };
    let kernel = get(&cases, "kernel").stdout.clone();
    check_task_cap(&cases, &kernel, false);
    for who in GUESTS {
        let forced = get(&cases, &format!("forced-{who:?}"));
        assert_eq!(forced.status, 125, "{kernel} {who:?}: {}", forced.all());
        assert!(!forced.stdout.contains("RAN"), "{}", forced.all());
        assert!(
            forced.stderr.starts_with(
                "apply-seccomp: --way-in=capability-free: this kernel's Landlock ABI is 2, \
                 without the scoping of signals and abstract sockets (ABI 6, Linux 6.12)"
            ),
            "{kernel} {who:?}: {}",
            forced.all()
        );
        let auto = get(&cases, &format!("auto-{who:?}"));
        assert_eq!(
            (auto.status, auto.stdout.as_str()),
            (0, "RAN\n"),
            "{}",
            auto.all()
        );
        assert!(
            auto.stderr.contains("entry: user namespace path"),
            "{}",
            auto.all()
        );
    }
}

/// The aarch64 build of the helper, the probe and a 32-bit ARM program:
/// the helper from the arm64 Debian package `./package` builds
/// (tests/common/package.rs; linked by rust-lld), the C programs cross-built
/// by Debian's cross compilers; or why not (a skip).
fn aarch64_files() -> Result<Vec<(PathBuf, &'static str)>, String> {
    static FILES: std::sync::OnceLock<Result<Vec<(PathBuf, &'static str)>, String>> =
        std::sync::OnceLock::new();
    FILES
        .get_or_init(|| {
            for tool in ["aarch64-linux-gnu-gcc", "arm-linux-gnueabihf-gcc"] {
                if common::which(tool).is_none() {
                    return Err(format!(
                        "{tool} is not installed (Debian's cross compilers)"
                    ));
                }
            }
            // The arm64 Debian package's binary: what users install.
            let dist = common::package::dist()?;
            let dir = fixture().dir.join("aarch64");
            std::fs::create_dir_all(&dir).unwrap();
            let helper = dir.join("apply-seccomp");
            common::package::extract_deb(
                &common::package::deb(dist, "arm64"),
                "./usr/bin/apply-seccomp",
                &helper,
                0o755,
            );
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probe/probe.c");
            let probe = dir.join("probe");
            let a32_src = dir.join("a32.c");
            std::fs::write(
                &a32_src,
                "#include <unistd.h>\nint main(void) { return getpid() > 0 ? 0 : 1; }\n",
            )
            .unwrap();
            let a32 = dir.join("a32");
            let counter_src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probe/counter.c");
            let counter = dir.join("counter");
            for (cc, args, output, input) in [
                (
                    "aarch64-linux-gnu-gcc",
                    &["-static", "-O1", "-pthread"][..],
                    &probe,
                    &src,
                ),
                (
                    "aarch64-linux-gnu-gcc",
                    &["-static", "-O1"][..],
                    &counter,
                    &counter_src,
                ),
                (
                    "arm-linux-gnueabihf-gcc",
                    &["-static", "-O1"][..],
                    &a32,
                    &a32_src,
                ),
            ] {
                let out = Command::new(cc)
                    .args(args)
                    .arg("-o")
                    .arg(output)
                    .arg(input)
                    .output()
                    .map_err(|e| format!("{cc}: {e}"))?;
                if !out.status.success() {
                    return Err(format!("{cc}: {}", String::from_utf8_lossy(&out.stderr)));
                }
            }
            Ok(vec![
                (helper, HELPER),
                (probe, PROBE),
                (a32, "/opt/a32"),
                (counter, COUNTER),
            ])
        })
        .clone()
}

/// Guest functions for the lifecycle cases (Debian's busybox has no
/// pgrep): the oldest process named apply-seccomp is the outer stub.
/// `sigkill_case`: the command has a background process, the stub gets
/// SIGKILL, and nothing of the command may be left. `term_case`: the stub
/// gets SIGTERM, which must reach the command's trap (exit 71).
const SIGKILL_CASE: &str = r#"stub_pid() {
  for p in $(pidof apply-seccomp); do echo $p; done | sort -n | head -n 1
}
sigkill_case() {
  name=$1; who=$2; shift 2
  o=/tmp/sigkill-$name; rm -f $o
  timeout 60 su -s /bin/sh $who -c "cd / && $* /bin/sh -c 'sleep 9999 & echo ready; sleep 9998'" > $o 2>&1 &
  n=0; while [ ! -s $o ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done
  stub=$(stub_pid)
  [ -n "$stub" ] && kill -9 $stub
  sleep 1
  left=$(ps -o args | grep -c '^sleep 999[89]')
  echo "@@case $name 0"; echo "o stub=${stub:-none} left=$left"; echo @@end
}
term_case() {
  name=$1; who=$2; shift 2
  o=/tmp/term-$name; rm -f $o
  timeout 60 su -s /bin/sh $who -c "cd / && $* /bin/sh -c 'trap \"exit 71\" TERM; echo ready; while :; do sleep 0.1; done'" > $o 2>&1 &
  pid=$!
  n=0; while [ ! -s $o ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n+1)); done
  stub=$(stub_pid)
  [ -n "$stub" ] && kill -TERM $stub
  wait $pid; rc=$?
  echo "@@case $name $rc"; sed 's/^/o /' $o; echo "o stub=${stub:-none}"; echo @@end
}"#;

/// The aarch64 suite, on the kernel the race was reported on: Debian 12's
/// 6.1 `cloud-arm64`, one vCPU, bubblewrap 0.8.0 (vm/run --arch
/// aarch64 --release bookworm). The aarch64 build runs the THREATS table
/// (rows 7-8 as a 32-bit ARM program, killed), the contract (PID 2 under
/// PID 1, filters, NoNewPrivs, the namespace limit, exit statuses), write
/// observation and the lifecycle (SIGKILL of the helper leaves nothing),
/// as root and as uid 65534, directly and under srt's bubblewrap line; and
/// the race tester, whose helper strategy may never fail.
#[test]
fn aarch64_on_the_kernel_the_race_was_reported_on() {
    if !in_full_suite("boots QEMU guests") {
        return;
    }
    let files = match aarch64_files() {
        Ok(f) => f,
        Err(why) => {
            common::skip(&why);
            return;
        }
    };
    use threats::Arch;
    let mut s = Script::new();
    s.line(SIGKILL_CASE);
    // A tmpfs every user may write, for the own pathname socket.
    s.line(
        "mkdir -p /tmp/own-path && mount -t tmpfs own /tmp/own-path && chmod 1777 /tmp/own-path",
    );
    let filters = {
        let mut v = vec![PROBE];
        v.extend(threats::filter_checks(Arch::Aarch64, false));
        v
    };
    let places = ["direct", "bwrap"];
    for place in places {
        for who in GUESTS {
            let tag = format!("{place}-{who:?}");
            let wrap = |argv: &[&str]| -> Vec<String> {
                if place == "bwrap" {
                    bwrap(who, argv)
                } else {
                    argv.iter().map(|a| a.to_string()).collect()
                }
            };
            let in_helper = |argv: &[&str]| {
                let mut v = vec![HELPER];
                v.extend(argv);
                wrap(&v)
            };
            s.case(
                &format!("{tag}-filters"),
                who,
                &[("SRT_ALLOW_NESTED_USERNS", "0"), ("SRT_DEBUG", "1")],
                &in_helper(&filters),
            );
            s.case(
                &format!("{tag}-nested"),
                who,
                &[("SRT_ALLOW_NESTED_USERNS", "1")],
                &in_helper(&filters),
            );
            // The own-sockets policy's stub on aarch64 (its raw pidfd,
            // notification and connect calls): a listener of the command's
            // own reached (abstract, TCP); an abstract name bound outside
            // the run refused; under upstream's policy no AF_UNIX socket.
            let mut connect_case = vec![
                PROBE.to_string(),
                "with-abstract".into(),
                format!("vm-{tag}"),
            ];
            // Directly, an own pathname socket on a tmpfs too (srt's
            // options bind `/` read-only), proven the run's by statx and
            // fstatfs on aarch64 (issue 67).
            let mut probes = vec![PROBE, "own-unix", "own-tcp", "dgram-pair"];
            let abstract_connect = format!("abstract-connect:vm-{tag}");
            probes.insert(1, &abstract_connect);
            if place == "direct" {
                probes.push("own-path:/tmp/own-path");
            }
            connect_case.extend(in_helper(&probes));
            s.case(&format!("{tag}-connect"), who, &[], &connect_case);
            s.case(
                &format!("{tag}-connect-deny"),
                who,
                &[("APPLY_SECCOMP_UNIX", "deny")],
                &connect_case,
            );
            // The refusal report on aarch64 (issue 44): the reported
            // program's notifications answered with today's errnos, one
            // line after a failed command.
            s.case(
                &format!("{tag}-refused"),
                who,
                &[],
                &in_helper(&[
                    "/bin/sh",
                    "-c",
                    &format!("{PROBE} unix-dgram unshare-user mount io-uring-setup; exit 3"),
                ]),
            );
            s.case(
                &format!("{tag}-status"),
                who,
                &[("SRT_ALLOW_NESTED_USERNS", "0")],
                &in_helper(&[
                    "/bin/sh",
                    "-c",
                    "echo pid=$$ ppid=$PPID; grep -E '^(NoNewPrivs|Seccomp|Seccomp_filters):' \
                     /proc/self/status; echo uid_map=$(cat /proc/self/uid_map); \
                     echo limit=$(cat /proc/sys/user/max_user_namespaces)",
                ]),
            );
            s.case(
                &format!("{tag}-exit42"),
                who,
                &[],
                &in_helper(&["/bin/sh", "-c", "exit 42"]),
            );
            s.case(
                &format!("{tag}-term"),
                who,
                &[],
                &in_helper(&["/bin/sh", "-c", "kill -TERM $$"]),
            );
            let sock = format!("/tmp/observe-{tag}.sock");
            let target = format!("/tmp/observed-{tag}.txt");
            let write = format!("echo x > {target}");
            let mut observed = vec![PROBE.to_string(), "observe-collect".into(), sock];
            observed.extend(in_helper(&["/bin/sh", "-c", &write]));
            s.case(&format!("{tag}-observe"), who, &[], &observed);
            let prefix = if place == "bwrap" {
                let mut b = bwrap(who, &[]);
                b.pop();
                b.push("--".into());
                format!("{} {HELPER}", b.join(" "))
            } else {
                HELPER.to_string()
            };
            // The doctor's raw seccomp and prctl calls (sys/seccomp.rs) on aarch64.
            s.case(
                &format!("{tag}-doctor"),
                who,
                &[],
                &wrap(&[HELPER, "--doctor", "--json"]),
            );
            let user = if who == Guest::Root { "root" } else { "nobody" };
            s.line(&format!("sigkill_case {tag}-sigkill {user} {prefix}"));
            s.line(&format!("term_case {tag}-forwarded {user} {prefix}"));
        }
    }
    // The race tester directly (both joins) and under bubblewrap (the
    // futex join, a runtime's).
    let races = [("direct", "futex"), ("direct", "spin"), ("bwrap", "futex")];
    for who in GUESTS {
        for (place, join) in races {
            let argv = [
                HELPER,
                "--race-test",
                "--iterations",
                "300",
                "--join",
                join,
                "--json",
            ];
            let argv = if place == "bwrap" {
                bwrap(who, &argv)
            } else {
                argv.iter().map(|a| a.to_string()).collect()
            };
            s.case(&format!("race-{place}-{who:?}-{join}"), who, &[], &argv);
        }
    }
    // The placeholder keeper's raw calls (sys/files.rs: renameat2,
    // getdents64, pidfd_open, ppoll,
    // close_range; sys/locks.rs: flock and its bounded wait, open file
    // description locks) and its holder, started in the shim's memory, on
    // aarch64: a line with a file and a nested folder's placeholder
    // through the shim; all four places made (two files, two folders),
    // the command finds them there, cannot write them, and nothing is
    // left once the holder is done.
    for who in GUESTS {
        let script = format!(
            "d=$(mktemp -d /tmp/keep-XXXXXX) && cd $d && SRT_DEBUG=1 {HELPER} --bwrap-shim \
             --die-with-parent --unshare-pid --ro-bind / / --dev /dev --bind $d $d \
             --ro-bind /dev/null $d/.bashrc --ro-bind /dev/null $d/.claude/commands/x -- \
             /bin/sh -c 'test -e .bashrc && echo file; test -d .claude/commands && echo dir; \
             (echo x > .bashrc) 2>/dev/null || echo refused'; echo rc=$?; \
             for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do \
             [ -z \"$(ls -A $d)\" ] && break; sleep 0.1; done; echo \"left=$(ls -A $d)\""
        );
        s.case(
            &format!("keep-{who:?}"),
            who,
            &[],
            &["/bin/sh".to_string(), "-c".into(), script],
        );
    }
    // The mount guard on aarch64 (its raw statx, init's ppoll of the
    // stub's mountinfo): a placeholder removed while the command runs.
    s.line(GUARD_CASE);
    add_guard_case(&mut s, "aarch64");
    // Without sock_diag's Unix part (the module unloaded) the policy
    // cannot tell a run's sockets from others: every Unix connect is
    // refused, and SRT_DEBUG and the doctor say why.
    s.line("rmmod unix_diag");
    s.case(
        "nodiag",
        Guest::Nobody,
        &[("SRT_DEBUG", "1")],
        &[
            HELPER.to_string(),
            PROBE.into(),
            "own-unix".into(),
            "own-tcp".into(),
        ],
    );
    s.case(
        "nodiag-doctor",
        Guest::Nobody,
        &[],
        &[HELPER.to_string(), "--doctor".into(), "--json".into()],
    );
    s.line("insmod /vm-modules/unix_diag.ko");
    add_task_cap_cases(&mut s);
    s.line("run kernel uname -rm");
    let Some(cases) = boot_guest(
        "aarch64",
        "bookworm",
        "landlock,lockdown,yama,apparmor,bpf",
        &files,
        &s,
        "aarch64",
    ) else {
        return;
    };
    let kernel = get(&cases, "kernel").stdout.trim().to_string();
    assert!(kernel.ends_with("aarch64"), "{kernel}");
    check_task_cap(&cases, &kernel, false);
    for who in GUESTS {
        let guard = get(&cases, &format!("aarch64-{who:?}-guard"));
        let ctx = format!("{kernel} aarch64-{who:?}-guard: {}", guard.all());
        assert_eq!(guard.status, 125, "{ctx}");
        assert!(!guard.stdout.contains("wrote"), "{ctx}");
        assert!(!guard.stdout.contains("P on the host"), "{ctx}");
        assert!(
            guard.stderr.contains("is no longer mounted in the sandbox"),
            "{ctx}"
        );
    }
    let nodiag = get(&cases, "nodiag");
    let got = probe_results(&nodiag.stdout);
    assert_eq!(nodiag.status, 0, "nodiag: {}", nodiag.all());
    assert_eq!(
        got.get("own-unix").map(String::as_str),
        Some("errno:EACCES"),
        "nodiag: {}",
        nodiag.all()
    );
    assert_eq!(
        got.get("own-tcp").map(String::as_str),
        Some("ok"),
        "nodiag: {}",
        nodiag.all()
    );
    assert!(
        nodiag.stderr.contains("unix_diag module is not loaded"),
        "nodiag: {}",
        nodiag.all()
    );
    let (_, status, found, fix) = doctor_check(get(&cases, "nodiag-doctor"), "unix sockets");
    assert_eq!(status, "warning", "nodiag-doctor: {found}");
    assert!(
        found.contains("unix_diag module is not loaded"),
        "nodiag-doctor: {found}"
    );
    assert!(fix.contains("modprobe unix_diag"), "nodiag-doctor: {fix}");
    for place in places {
        for who in GUESTS {
            let tag = format!("{place}-{who:?}");
            let case = |name: &str| get(&cases, &format!("{tag}-{name}"));
            let ctx = |name: &str| format!("{kernel} {tag}-{name}: {}", case(name).all());

            let privileged = who == Guest::Root;
            for (name, nested) in [("filters", false), ("nested", true)] {
                assert_eq!(case(name).status, 0, "{}", ctx(name));
                let got = probe_results(&case(name).stdout);
                let wrong = threats::filter_mismatches(
                    Arch::Aarch64,
                    &got,
                    nested,
                    privileged,
                    false,
                    threats::Unix::Own,
                );
                assert!(wrong.is_empty(), "{}\n{}", ctx(name), wrong.join("\n"));
            }

            for (name, want) in [
                // A datagram pair made by the stub (ADDFD and the
                // numbers written: issue 55).
                // An own pathname socket on tmpfs (directly only).
                ("connect", ["errno:EACCES", "ok", "ok", "ok", "ok"]),
                // Upstream's policy on the namespace way leaves the
                // inherited socket alone (Linux 6.1: no Landlock scope).
                (
                    "connect-deny",
                    ["ok", "errno:EPERM", "ok", "errno:EPERM", "errno:EPERM"],
                ),
            ] {
                assert_eq!(case(name).status, 0, "{}", ctx(name));
                let got = probe_results(&case(name).stdout);
                let checks = [
                    "abstract-connect",
                    "own-unix",
                    "own-tcp",
                    "dgram-pair",
                    "own-path",
                ];
                let checks = &checks[..if place == "direct" { 5 } else { 4 }];
                for (check, want) in checks.iter().zip(want) {
                    assert_eq!(
                        got.get(*check).map(String::as_str),
                        Some(want),
                        "{check}: {}",
                        ctx(name)
                    );
                }
            }

            let refused = case("refused");
            assert_eq!(refused.status, 3, "{}", ctx("refused"));
            let got = probe_results(&refused.stdout);
            for check in ["unix-dgram", "unshare-user", "mount", "io-uring-setup"] {
                assert_eq!(
                    got.get(check).map(String::as_str),
                    Some("errno:EPERM"),
                    "{check}: {}",
                    ctx("refused")
                );
            }
            assert!(
                refused.stderr.lines().any(|l| l.starts_with(
                    "apply-seccomp: the sandbox refused 4 calls: socket(AF_UNIX, SOCK_DGRAM) by \
                     \"probe\" (pid "
                ) && l
                    .contains("unshare(CLONE_NEWUSER) by \"probe\"")
                    && l.contains("mount by \"probe\"")
                    && l.contains("io_uring_setup by \"probe\"")),
                "{}",
                ctx("refused")
            );

            // The doctor: seccomp's actions asked with the raw aarch64
            // calls; the entry and a run of the helper work.
            let doctor = case("doctor");
            for (name, want) in [
                ("kernel", "aarch64"),
                (
                    "seccomp",
                    "filters work, and the kernel can hand a call to the helper's outer process",
                ),
                ("this process", "no seccomp filter (PR_GET_SECCOMP: 0)"),
                ("user namespaces", "the helper's entry works"),
                (
                    "helper run",
                    "2 filters of the helper, its own AF_UNIX stream sockets allowed, datagram ones \
                     refused (EPERM)",
                ),
            ] {
                let (_, status, found, _) = doctor_check(doctor, name);
                assert_eq!(status, "ok", "{name}: {}", ctx("doctor"));
                assert!(found.contains(want), "{name}: {want}: {}", ctx("doctor"));
            }
            if place == "direct" {
                assert_eq!(doctor.status, 0, "{}", ctx("doctor"));
                let (_, status, _, _) = doctor_check(doctor, "bubblewrap run");
                assert_eq!(status, "ok", "{}", ctx("doctor"));
            }

            let text = &case("status").stdout;
            assert_eq!(case("status").status, 0, "{}", ctx("status"));
            assert!(text.contains("pid=2 ppid=1"), "{}", ctx("status"));
            assert_eq!(
                status_field(text, "NoNewPrivs"),
                Some("1"),
                "{}",
                ctx("status")
            );
            assert_eq!(
                status_field(text, "Seccomp"),
                Some("2"),
                "{}",
                ctx("status")
            );
            assert_eq!(
                status_field(text, "Seccomp_filters"),
                Some("2"),
                "{}",
                ctx("status")
            );
            let direct_root = place == "direct" && who == Guest::Root;
            let want_limit = if direct_root { None } else { Some("limit=0") };
            if let Some(want) = want_limit {
                assert!(text.lines().any(|l| l == want), "{}", ctx("status"));
            }
            let uid = if who == Guest::Root { "0" } else { "65534" };
            let map = text
                .lines()
                .find_map(|l| l.strip_prefix("uid_map="))
                .map(|m| m.split_whitespace().collect::<Vec<_>>());
            let want_map = if direct_root {
                vec!["0", "0", "4294967295"]
            } else {
                vec![uid, uid, "1"]
            };
            assert_eq!(map, Some(want_map), "{}", ctx("status"));

            assert_eq!(case("exit42").status, 42, "{}", ctx("exit42"));
            assert_eq!(case("term").status, 143, "{}", ctx("term"));

            // Under bubblewrap `/` is read-only: the write fails, and its
            // attempt is reported all the same.
            let obs = case("observe");
            let want = if place == "bwrap" { 1 } else { 0 };
            assert_eq!(obs.status, want, "{}", ctx("observe"));
            let target = format!("\"path\":\"/tmp/observed-{tag}.txt\"");
            assert!(
                obs.stdout
                    .lines()
                    .any(|l| l.starts_with("obs: {\"nr\":56,\"syscall\":\"openat\"")
                        && l.contains(&target)),
                "{}",
                ctx("observe")
            );

            // The stub was found and killed, and nothing of the command
            // is left.
            let killed = case("sigkill").stdout.trim().to_string();
            assert!(
                killed.starts_with("stub=") && !killed.starts_with("stub=none"),
                "{}",
                ctx("sigkill")
            );
            assert!(killed.ends_with(" left=0"), "{}", ctx("sigkill"));
            // SIGTERM to the helper's stub reaches the command, whose trap
            // exits 71.
            assert!(
                !case("forwarded").stdout.contains("stub=none"),
                "{}",
                ctx("forwarded")
            );
            assert_eq!(case("forwarded").status, 71, "{}", ctx("forwarded"));
        }
    }
    for who in GUESTS {
        let keep = get(&cases, &format!("keep-{who:?}"));
        let what = format!("{kernel} keep {who:?}: {}", keep.all());
        assert_eq!(keep.status, 0, "{what}");
        for want in ["file", "dir", "refused", "rc=0", "left="] {
            assert!(keep.stdout.lines().any(|l| l == want), "{want}: {what}");
        }
        assert!(keep.stderr.contains("placeholders kept ("), "{what}");
        assert!(keep.stderr.contains(": 4 made, 0 already there"), "{what}");
    }
    for who in GUESTS {
        for (place, join) in races {
            let race = get(&cases, &format!("race-{place}-{who:?}-{join}"));
            let what = format!("{kernel} race {place} {who:?} {join}");
            assert_eq!(race.status, 0, "{what}: {}", race.all());
            for line in race.stdout.lines().filter(|l| l.starts_with('{')) {
                eprintln!("aarch64 race tester, {place}, {who:?}, {join} join: {line}");
            }
            // The seed's race, reproduced where it was reported: a naive
            // entry after a futex join fails with EINVAL (300 of 300 here).
            if join == "futex" {
                let naive = race
                    .stdout
                    .lines()
                    .find(|l| l.contains("\"strategy\":\"naive\""))
                    .unwrap_or("");
                let einval: u32 = naive
                    .split("\"einval\":")
                    .nth(1)
                    .and_then(|r| r.split(',').next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                assert!(einval > 0, "{what}: the naive entry never raced: {naive}");
            }
        }
    }
}

/// The own-sockets policy held by the kernel (issue 55): on Debian
/// unstable's kernel (Linux 7.1 or later: Landlock ABI 9,
/// `LANDLOCK_ACCESS_FS_RESOLVE_UNIX`), as root and as uid 65534, directly
/// and under srt's bubblewrap line, both ways in. Host servers run
/// outside (a stream and a datagram socket in a root-owned folder, a
/// link and a hard link to the stream one in a world-writable one). The
/// command's own stream sockets (abstract and pathname, from a child it
/// forked, whose credentials the server sees), its datagram server and a
/// datagram socketpair work; the host's stream socket, its datagram
/// socket by address, and both links are refused with `EACCES`; a named
/// host socket is reached and no other; a command that restricts itself
/// with Landlock keeps its fence (`EPERM` for an abstract connect out of
/// its domain, `EACCES` for TCP); `APPLY_SECCOMP_UNIX=deny` refuses every
/// `AF_UNIX` socket; a stdio socketpair made outside bubblewrap's
/// network namespace takes no name (item 4). No connect goes to the stub:
/// its `SRT_DEBUG` line says the kernel holds the policy.
#[test]
fn the_kernel_holds_the_socket_policy_where_landlock_can() {
    if !in_full_suite("boots QEMU guests") {
        return;
    }
    if !cfg!(target_arch = "x86_64") {
        common::skip("the x86_64 guest runs this x86_64 build");
        return;
    }
    let Some(probe) = fixture().probe() else {
        return;
    };
    let Some(counter) = counter_x86_64() else {
        return;
    };
    let files = [
        (fixture().helper.clone(), HELPER),
        (probe.to_path_buf(), PROBE),
        (counter, COUNTER),
    ];
    kernel_policy("x86_64", &files);
}

/// The same on an aarch64 guest of Debian unstable (its `cloud-arm64`
/// kernel, 7.2.13 when written), with the arm64 package's helper: the
/// worker's raw `landlock_restrict_self`, the domain's rules and the
/// inherited sockets' names on the other architecture.
#[test]
fn the_kernel_holds_the_socket_policy_on_aarch64_too() {
    if !in_full_suite("boots QEMU guests") {
        return;
    }
    match aarch64_files() {
        Ok(files) => kernel_policy("aarch64", &files),
        Err(why) => {
            common::skip(&why);
        }
    }
}

fn kernel_policy(arch: &str, files: &[(PathBuf, &str)]) {
    let mut s = Script::new();
    s.line(
        "mkdir -p /tmp/host /tmp/w; chmod 755 /tmp/host; chmod 1777 /tmp/w\n\
         for n in host other; do /opt/probe serve-stream /tmp/host/$n.sock >/dev/null & done\n\
         /opt/probe serve-dgram /tmp/host/hostd.sock >/dev/null &\n\
         while [ ! -S /tmp/host/other.sock ] || [ ! -S /tmp/host/hostd.sock ]; do sleep 0.1; done\n\
         ln -s /tmp/host/host.sock /tmp/w/link; ln /tmp/host/host.sock /tmp/w/hard",
    );
    let checks: Vec<String> = [
        "own-unix",
        "own-tcp",
        "own-path:/tmp/w",
        "own-dgram:/tmp/w",
        "dgram-pair",
        "dgram-to:/tmp/host/hostd.sock",
        "connect-path:/tmp/host/host.sock",
        "connect-path:/tmp/w/link",
        "connect-path:/tmp/w/hard",
        "fence",
    ]
    .map(String::from)
    .to_vec();
    let ways: [(&str, &[&str]); 2] = [("ns", &[]), ("capfree", &["--way-in=capability-free"])];
    for who in GUESTS {
        for (way, way_args) in ways {
            let mut direct = vec![HELPER.to_string()];
            direct.extend(way_args.iter().map(|a| a.to_string()));
            direct.push(PROBE.into());
            direct.extend(checks.iter().cloned());
            let mut line = vec![HELPER];
            line.extend(way_args.iter());
            line.push(PROBE);
            let checks_str: Vec<&str> = checks.iter().map(String::as_str).collect();
            line.extend(&checks_str);
            // srt's options, the writable folder, then the helper.
            let mut bwrapped = bwrap(who, &line);
            let at = bwrapped.iter().position(|w| w == "--").unwrap();
            bwrapped.splice(at..at, ["--bind", "/tmp/w", "/tmp/w"].map(String::from));
            let env = [("SRT_DEBUG", "1")];
            s.case(&format!("{who:?}-{way}-direct"), who, &env, &direct);
            s.case(&format!("{who:?}-{way}-bwrap"), who, &env, &bwrapped);
            // A named host socket, under srt's line (its / read-only).
            let named = [
                ("APPLY_SECCOMP_ALLOW_UNIX", "/tmp/host/host.sock"),
                ("SRT_DEBUG", "1"),
            ];
            let mut argv = vec![HELPER];
            argv.extend(way_args.iter());
            argv.extend([
                PROBE,
                "connect-path:/tmp/host/host.sock",
                "connect-path:/tmp/host/other.sock",
            ]);
            s.case(
                &format!("{who:?}-{way}-named"),
                who,
                &named,
                &bwrap(who, &argv),
            );
            // A stdio socketpair made outside bubblewrap's network
            // namespace (a Node spawner's): no name can be bound on it.
            let mut argv = vec![HELPER];
            argv.extend(way_args.iter());
            argv.extend([PROBE, "bind-fd:1:squat"]);
            let mut paired = vec![PROBE.to_string(), "pair-stdio".into(), "squat".into()];
            paired.extend(bwrap(who, &argv));
            s.case(&format!("{who:?}-{way}-squat"), who, &[], &paired);
            let mut argv = vec![HELPER];
            argv.extend(way_args.iter());
            argv.extend([PROBE, "own-path:/tmp/w", "dgram-pair", "own-unix"]);
            s.case(
                &format!("{who:?}-{way}-deny"),
                who,
                &[("APPLY_SECCOMP_UNIX", "deny")],
                &argv.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
            );
        }
    }
    // The doctor says who holds the policy, and its runs see datagram
    // sockets made.
    s.case(
        "doctor",
        Guest::Nobody,
        &[],
        &[HELPER.to_string(), "--doctor".into(), "--json".into()],
    );
    add_task_cap_cases(&mut s);
    s.line("run kernel uname -r");
    let lsm = "landlock,lockdown,yama,apparmor,bpf";
    let label = format!("sid-{arch}");
    let Some(cases) = boot_guest(arch, "sid", lsm, files, &s, &label) else {
        return;
    };
    let kernel = get(&cases, "kernel").stdout.trim().to_string();
    check_task_cap(&cases, &kernel, true);
    let (_, status, found, _) = doctor_check(get(&cases, "doctor"), "unix sockets");
    assert_eq!(status, "ok", "{kernel} doctor: {found}");
    assert!(
        found.contains("held by the kernel (Landlock ABI 9)"),
        "{kernel} doctor: {found}"
    );
    for run in ["helper run", "bubblewrap run"] {
        let (_, status, found, _) = doctor_check(get(&cases, "doctor"), run);
        assert_eq!(status, "ok", "{kernel} doctor {run}: {found}");
        assert!(
            found.contains("datagram ones too"),
            "{kernel} doctor {run}: {found}"
        );
    }
    let want = [
        ("own-unix", "ok"),
        ("own-tcp", "ok"),
        ("own-path", "ok"),
        ("own-path-peer", "ok"),
        ("own-dgram", "ok"),
        ("dgram-pair", "ok"),
        ("dgram-to", "errno:EACCES"),
        ("fence-abstract", "errno:EPERM"),
        ("fence-tcp", "errno:EACCES"),
    ];
    for who in GUESTS {
        for (way, _) in ways {
            for place in ["direct", "bwrap"] {
                let name = format!("{who:?}-{way}-{place}");
                let ran = get(&cases, &name);
                let ctx = format!("{kernel} {name}: {}", ran.all());
                assert_eq!(ran.status, 0, "{ctx}");
                let got = probe_results(&ran.stdout);
                for (check, result) in want {
                    assert_eq!(
                        got.get(check).map(String::as_str),
                        Some(result),
                        "{check}: {ctx}"
                    );
                }
                let refused: Vec<&str> = ran
                    .stdout
                    .lines()
                    .filter(|l| l.starts_with("connect-path="))
                    .collect();
                assert_eq!(refused, ["connect-path=errno:EACCES"; 3], "{ctx}");
                assert!(
                    ran.stderr
                        .contains("unix sockets: own, held by the kernel (Landlock ABI"),
                    "{ctx}"
                );
            }
            let name = format!("{who:?}-{way}-named");
            let ran = get(&cases, &name);
            let ctx = format!("{kernel} {name}: {}", ran.all());
            let lines: Vec<&str> = ran
                .stdout
                .lines()
                .filter(|l| l.starts_with("connect-path="))
                .collect();
            assert_eq!(
                lines,
                ["connect-path=ok", "connect-path=errno:EACCES"],
                "{ctx}"
            );
            assert!(
                ran.stderr
                    .contains("or one named: /tmp/host/host.sock (a socket)"),
                "{ctx}"
            );
            let name = format!("{who:?}-{way}-squat");
            let ran = get(&cases, &name);
            let got = probe_results(&ran.stdout);
            let ctx = format!("{kernel} {name}: {}", ran.all());
            assert_eq!(
                got.get("bind-fd").map(String::as_str),
                Some("errno:EINVAL"),
                "{ctx}"
            );
            assert_eq!(
                got.get("squat").map(String::as_str),
                Some("absent"),
                "{ctx}"
            );
            let name = format!("{who:?}-{way}-deny");
            let ran = get(&cases, &name);
            let got = probe_results(&ran.stdout);
            for check in ["own-path", "dgram-pair", "own-unix"] {
                assert_eq!(
                    got.get(check).map(String::as_str),
                    Some("errno:EPERM"),
                    "{check}: {kernel} {name}: {}",
                    ran.all()
                );
            }
        }
    }
}

/// Allocates 64 MiB at a time up to `argv[1]` MiB, touching every page,
/// saying how far it got.
const ALLOC: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int want = atoi(argv[1]), got = 0;
    while (got < want) {
        char *p = malloc(64 << 20);
        if (!p) { printf("malloc refused at %d MiB\n", got); return 1; }
        memset(p, 1, 64 << 20);
        got += 64;
        fprintf(stderr, "touched %d MiB\n", got);
    }
    printf("touched %d MiB\n", got);
    return 0;
}
"#;

/// A case as uid 65534 whose shell root first puts in `cgroup`, as
/// systemd puts a user's processes in the subtree it delegates (moving a
/// process takes write access to the common ancestor's `cgroup.procs`).
fn in_cgroup(s: &mut Script, name: &str, cgroup: &str, env: &[(&str, &str)], argv: &[String]) {
    let user = as_guest(Guest::Nobody, env, argv);
    let command = format!("echo $$ > {cgroup}/cgroup.procs && exec {user}");
    s.line(&format!("run {name} sh -c {}", quote(&command)));
}

/// Memory and CPU caps through cgroup v2 (issue 57) on Debian 13's kernel,
/// whose cgroup2 has its controllers (this project's machines mount
/// cgroup v1's instead). The guest mounts it and makes a subtree the way
/// systemd delegates `user@UID.service`: a folder chowned to uid 65534
/// with its `cgroup.procs` and `cgroup.subtree_control`, the user's shell
/// in a child of it. Through the `bwrap` shim with srt's options: a
/// program touching 2 GiB under a 256M cap is stopped by the OOM killer
/// and the line says so, a program of the same user outside touches 384
/// MiB untouched, the run's cgroup is gone after it; as root (the root
/// cgroup is root's); a CPU cap in force inside; without a subtree of
/// one's own, and the helper run without the shim, refused.
#[test]
fn a_memory_cap_stops_the_command_and_nothing_else() {
    if !in_full_suite("boots QEMU guests") {
        return;
    }
    if !cfg!(target_arch = "x86_64") {
        common::skip("the x86_64 guest runs this x86_64 build");
        return;
    }
    let dir = fixture().dir.join("vm-cgroup-programs");
    std::fs::create_dir_all(&dir).unwrap();
    let Some(alloc) = common::static_c(&dir, "alloc", ALLOC) else {
        common::skip("gcc with static glibc (libc6-dev) is needed for the allocating program");
        return;
    };
    let Some(probe) = fixture().probe() else {
        return;
    };
    let mut s = Script::new();
    s.line(
        "mount -t cgroup2 none /sys/fs/cgroup\n\
         echo '+memory +pids +cpu' > /sys/fs/cgroup/cgroup.subtree_control\n\
         d=/sys/fs/cgroup/user-65534; mkdir -p $d/session $d/elsewhere\n\
         echo '+memory +pids +cpu' > $d/cgroup.subtree_control\n\
         chown nobody $d $d/cgroup.procs $d/cgroup.subtree_control $d/session \
         $d/session/cgroup.procs $d/elsewhere $d/elsewhere/cgroup.procs\n\
         mkdir -p /opt/shim; ln -s /opt/apply-seccomp /opt/shim/bwrap",
    );
    let shim = |argv: &[&str]| -> Vec<String> {
        let mut v = bwrap(Guest::Nobody, argv);
        v[0] = "/opt/shim/bwrap".into();
        v
    };
    let session = "/sys/fs/cgroup/user-65534/session";
    let memory = [("APPLY_SECCOMP_MEMORY_MAX", "256M")];
    let run_alloc = [HELPER, "/opt/alloc", "2048"];
    in_cgroup(&mut s, "capped-Nobody", session, &memory, &shim(&run_alloc));
    s.line("sleep 1; run left ls /sys/fs/cgroup/user-65534");
    in_cgroup(
        &mut s,
        "outside-Nobody",
        "/sys/fs/cgroup/user-65534/elsewhere",
        &[],
        &["/opt/alloc".into(), "384".into()],
    );
    let mut root_line = bwrap(Guest::Root, &run_alloc);
    root_line[0] = "/opt/shim/bwrap".into();
    s.case("capped-Root", Guest::Root, &memory, &root_line);
    let cpu_line = shim(&[
        HELPER,
        "/bin/sh",
        "-c",
        "g=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup); echo $g; cat $g/cpu.max $g/pids.max; \
         for f in $g/cpu.max $g/pids.max; do echo max > $f 2>/dev/null && echo raised $f; done; \
         echo $$ > $g/../session/cgroup.procs 2>/dev/null && echo left the cgroup; \
         g2=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup); [ $g2 = $g ] && echo still in it",
    ]);
    let cpu_env = [
        ("APPLY_SECCOMP_CPU_MAX", "0.5"),
        ("APPLY_SECCOMP_MAX_TASKS", "40"),
    ];
    in_cgroup(&mut s, "cpu-Nobody", session, &cpu_env, &cpu_line);
    // uid 65534 in the root cgroup (root's): no subtree of its own.
    s.case(
        "undelegated-Nobody",
        Guest::Nobody,
        &memory,
        &shim(&[HELPER, "/bin/echo", "RAN"]),
    );
    let plain = bwrap(Guest::Nobody, &[HELPER, "/bin/echo", "RAN"]);
    in_cgroup(&mut s, "no-shim-Nobody", session, &memory, &plain);
    // Issue 68, item 3: nested user namespaces allowed, the run's cgroup
    // (the user's own) holds nothing a command cannot lift (it made user,
    // mount and cgroup namespaces, mounted cgroup2 and wrote the run's
    // memory.max to max): refused before the command runs.
    let nested = [
        ("APPLY_SECCOMP_MEMORY_MAX", "256M"),
        ("SRT_ALLOW_NESTED_USERNS", "1"),
    ];
    in_cgroup(&mut s, "nested-Nobody", session, &nested, &shim(&run_alloc));
    s.case("nested-Root", Guest::Root, &nested, &root_line);
    let files = [
        (fixture().helper.clone(), HELPER),
        (probe.to_path_buf(), PROBE),
        (alloc, "/opt/alloc"),
    ];
    let Some(cases) = boot_guest(
        "x86_64",
        "trixie",
        "landlock,lockdown,yama,bpf",
        &files,
        &s,
        "cgroup",
    ) else {
        return;
    };
    for who in ["Nobody", "Root"] {
        let capped = get(&cases, &format!("capped-{who}"));
        assert_eq!(capped.status, 137, "{who}: {}", capped.all());
        assert!(!capped.stdout.contains("touched 2048"), "{}", capped.all());
        assert!(
            capped.stderr.contains(
                "apply-seccomp: the run's memory cap (APPLY_SECCOMP_MEMORY_MAX=256M) stopped \
                 the command: the kernel's OOM killer ended 1 of its processes"
            ),
            "{who}: {}",
            capped.all()
        );
        assert!(
            !capped.stderr.contains("touched 320 MiB"),
            "{}",
            capped.all()
        );
    }
    let left = get(&cases, "left");
    assert_eq!(
        left.stdout
            .split_whitespace()
            .filter(|n| n.starts_with("apply-seccomp-"))
            .count(),
        0,
        "the run's cgroup was left: {}",
        left.all()
    );
    let outside = get(&cases, "outside-Nobody");
    assert_eq!(
        (outside.status, outside.stdout.as_str()),
        (0, "touched 384 MiB\n"),
        "{}",
        outside.all()
    );
    let cpu = get(&cases, "cpu-Nobody");
    assert_eq!(cpu.status, 0, "{}", cpu.all());
    assert!(cpu.stdout.contains("/apply-seccomp-"), "{}", cpu.all());
    assert!(cpu.stdout.contains("50000 100000\n56\n"), "{}", cpu.all());
    // The command cannot raise its run's limits nor move out of its
    // cgroup: the tree is read-only in the sandbox (srt binds / so).
    assert!(!cpu.stdout.contains("raised"), "{}", cpu.all());
    assert!(!cpu.stdout.contains("left the cgroup"), "{}", cpu.all());
    assert!(cpu.stdout.contains("still in it"), "{}", cpu.all());
    let undelegated = get(&cases, "undelegated-Nobody");
    assert_eq!(undelegated.status, 125, "{}", undelegated.all());
    assert_eq!(undelegated.stdout, "", "{}", undelegated.all());
    assert!(
        undelegated.stderr.contains(
            "apply-seccomp: bwrap shim: APPLY_SECCOMP_MEMORY_MAX=256M: asked, but no cgroup can \
             hold it here (/sys/fs/cgroup/ is not yours to write"
        ),
        "{}",
        undelegated.all()
    );
    for who in ["Nobody", "Root"] {
        let nested = get(&cases, &format!("nested-{who}"));
        assert_eq!(nested.status, 125, "{who}: {}", nested.all());
        assert!(
            !nested.stdout.contains("touched"),
            "{who}: {}",
            nested.all()
        );
        assert!(
            nested.stderr.contains(
                "APPLY_SECCOMP_MEMORY_MAX=256M: asked, but no cgroup of this run holds it \
                 (memory.max in force: none): with SRT_ALLOW_NESTED_USERNS=1 a command may make"
            ),
            "{who}: {}",
            nested.all()
        );
    }
    let direct = get(&cases, "no-shim-Nobody");
    assert_eq!(direct.status, 125, "{}", direct.all());
    assert_eq!(direct.stdout, "", "{}", direct.all());
    assert!(
        direct.stderr.contains(
            "APPLY_SECCOMP_MEMORY_MAX=256M: asked, but no cgroup of this run holds it \
             (memory.max in force: none)"
        ),
        "{}",
        direct.all()
    );
}
