//! `cargo bench --bench sockets`: what the own-sockets policy (issue 43)
//! costs, in one run, interleaved.
//!
//! 1. A run of `true`: this build (the own-sockets policy), this build
//!    under `APPLY_SECCOMP_UNIX=deny` (upstream's policy), both with the
//!    refusal report off (`APPLY_SECCOMP_REFUSALS=off`, issue 44: today's
//!    programs, and under `deny` no listener), and the build before the
//!    policy (`APPLY_SECCOMP_SOCKETS_BEFORE`, default [`BEFORE`]), in
//!    shuffled turns; medians, and medians of the per-round ratios.
//! 2. A refused call (`socket(AF_UNIX, SOCK_DGRAM)`), 1,000 times: reported
//!    (a round trip to the stub) and with the report off (EPERM in the
//!    kernel).
//! 3. Connects: a static C program makes 1,000 connects to a listener of
//!    its own, Unix (a pathname) and TCP (127.0.0.1), each accepted and
//!    closed, and prints the mean time of one; run bare, under the
//!    helper (own, deny) and under the floor (below), in turns; the
//!    medians and what the helper adds to one connect.
//!
//! The floor is what any seccomp listener costs a connect on this
//! machine: a static C supervisor of a few lines that sends every
//! `connect` to its listener and only answers "continue" (the two
//! context switches of a round trip, nothing decided). What the helper
//! adds beyond it (`own - floor`) is what its own work costs.
//!
//! On the host, as uid 65534 when run as root, and inside bubblewrap with
//! srt's options. `BENCH_ROUNDS` (default 300) rounds for the runs,
//! `BENCH_CONNECT_ROUNDS` (default 31) for the connect loops.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "../tests/common/mod.rs"]
mod common;

use common::{BWRAP_OPTIONS, NOBODY, is_root, which};

/// The build before the own-sockets policy.
const BEFORE: &str = "06b4a88";

struct Cand {
    name: &'static str,
    argv: Vec<String>,
    env: Vec<(&'static str, &'static str)>,
}

fn command(c: &Cand, uid: Option<u32>) -> Command {
    let mut cmd = Command::new(&c.argv[0]);
    cmd.args(&c.argv[1..])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in &c.env {
        cmd.env(k, v);
    }
    if let Some(u) = uid {
        cmd.uid(u).gid(u);
    }
    cmd
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Each candidate once a round, in a shuffled order; `measure` turns one
/// run into a number.
fn rounds(cands: &[Cand], n: usize, mut measure: impl FnMut(&Cand) -> f64) -> Vec<Vec<f64>> {
    let mut t = vec![Vec::new(); cands.len()];
    let mut order: Vec<usize> = (0..cands.len()).collect();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for round in 0..n + 5 {
        for i in (1..order.len()).rev() {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            order.swap(i, (seed >> 33) as usize % (i + 1));
        }
        for &i in &order {
            let v = measure(&cands[i]);
            if round >= 5 {
                t[i].push(v);
            }
        }
    }
    t
}

fn wrap(argv: Vec<String>, in_bwrap: bool, sockets: &Path) -> Vec<String> {
    if !in_bwrap {
        return argv;
    }
    let mut v = vec![which("bwrap").unwrap().to_string_lossy().into_owned()];
    v.extend(BWRAP_OPTIONS.iter().map(|s| s.to_string()));
    // The connect loop's socket folder writable, as srt binds the project
    // folder (the rest is read-only; a tmpfs on /tmp would hide the
    // binaries, which are under it).
    let f = sockets.to_string_lossy().into_owned();
    v.extend(["--bind".to_string(), f.clone(), f]);
    v.push("--".into());
    v.extend(argv);
    v
}

/// The connect loop: `unix FOLDER` or `tcp`, 1,000 connects; prints ns per
/// one.
const LOOP_C: &str = r#"
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int unix_ = argc > 1 && !strcmp(argv[1], "unix"), n = 1000;
  if (argc > 1 && !strcmp(argv[1], "refuse")) {
    /* A call the filters refuse (issue 44), 1,000 times: each EPERM. */
    struct timespec s, e;
    clock_gettime(CLOCK_MONOTONIC, &s);
    for (int i = 0; i < n; i++)
      if (socket(AF_UNIX, SOCK_DGRAM, 0) >= 0) return fputs("not refused\n", stderr), 1;
    clock_gettime(CLOCK_MONOTONIC, &e);
    printf("%ld\n", ((e.tv_sec - s.tv_sec) * 1000000000L + e.tv_nsec - s.tv_nsec) / n);
    return 0;
  }
  struct sockaddr_un un = {.sun_family = AF_UNIX};
  struct sockaddr_in in = {.sin_family = AF_INET};
  struct sockaddr *a; socklen_t len;
  int l = socket(unix_ ? AF_UNIX : AF_INET, SOCK_STREAM, 0);
  if (l < 0) return perror("socket"), 1;
  if (unix_) {
    if (argc < 3) return fputs("unix FOLDER\n", stderr), 1;
    snprintf(un.sun_path, sizeof un.sun_path, "%s/connect-loop-%d.sock", argv[2], getpid());
    unlink(un.sun_path); a = (struct sockaddr *)&un; len = sizeof un;
  } else {
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK); a = (struct sockaddr *)&in; len = sizeof in;
  }
  if (bind(l, a, len) || listen(l, 64) || getsockname(l, a, &len)) return perror("listen"), 1;
  struct timespec s, e;
  clock_gettime(CLOCK_MONOTONIC, &s);
  for (int i = 0; i < n; i++) {
    int c = socket(unix_ ? AF_UNIX : AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect(c, a, len)) return perror("connect"), 1;
    int d = accept(l, 0, 0);
    if (d < 0) return perror("accept"), 1;
    close(d); close(c);
  }
  clock_gettime(CLOCK_MONOTONIC, &e);
  if (unix_) unlink(un.sun_path);
  printf("%ld\n", ((e.tv_sec - s.tv_sec) * 1000000000L + e.tv_nsec - s.tv_nsec) / n);
  return 0;
}
"#;

/// The floor: `floor PROGRAM ARGS...` runs the program with every
/// `connect` sent to a seccomp listener that only answers "continue"
/// (with `SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP`, as the helper sets it).
const FLOOR_C: &str = r#"
#define _GNU_SOURCE
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int sv[2], l, st;
  char c = 0, buf[CMSG_SPACE(sizeof(int))];
  struct iovec io = {&c, 1};
  struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof buf};
  if (argc < 2 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) return 2;
  pid_t p = fork();
  if (p == 0) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog pr = {4, f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) _exit(2);
    l = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &pr);
    if (l < 0) _exit(2);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET; cm->cmsg_type = SCM_RIGHTS; cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &l, sizeof l);
    if (sendmsg(sv[1], &m, 0) != 1) _exit(2);
    close(l); close(sv[0]); close(sv[1]);
    execv(argv[1], argv + 1);
    _exit(127);
  }
  close(sv[1]);
  if (recvmsg(sv[0], &m, 0) != 1 || !CMSG_FIRSTHDR(&m)) return 2;
  memcpy(&l, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof l);
  ioctl(l, SECCOMP_IOW(4, __u64), &(__u64){1});
  for (;;) {
    struct pollfd pf = {l, POLLIN, 0};
    if (poll(&pf, 1, -1) < 0 || !(pf.revents & POLLIN)) break;
    struct seccomp_notif n;
    memset(&n, 0, sizeof n);
    if (ioctl(l, SECCOMP_IOCTL_NOTIF_RECV, &n)) continue;
    struct seccomp_notif_resp r = {n.id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE};
    ioctl(l, SECCOMP_IOCTL_NOTIF_SEND, &r);
  }
  if (waitpid(p, &st, 0) != p) return 2;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
"#;

fn main() {
    let dir = std::env::temp_dir().join(format!(
        "apply-seccomp-bench-sockets-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Where the Unix connect loop binds, writable by the uid it runs as.
    let sockets = dir.join("sockets");
    std::fs::create_dir_all(&sockets).unwrap();
    std::fs::set_permissions(&sockets, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let ours = dir.join("apply-seccomp");
    common::shipped_build(&ours);
    let before_commit =
        std::env::var("APPLY_SECCOMP_SOCKETS_BEFORE").unwrap_or_else(|_| BEFORE.into());
    let before = build_before(&dir, &before_commit);
    let lp = common::static_c(&dir, "connect-loop", LOOP_C);
    let floor = common::static_c(&dir, "floor", FLOOR_C);
    if lp.is_none() || floor.is_none() {
        eprintln!("no gcc with static glibc: the connect loops are left out");
    }
    let n: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let cn: usize = std::env::var("BENCH_CONNECT_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(31);
    let uid = is_root().then_some(NOBODY);
    let mut places = vec![("host", false)];
    if which("bwrap").is_some() {
        places.push(("bwrap (srt options)", true));
    }
    let s = |p: &Path| p.to_string_lossy().into_owned();
    println!(
        "uid {}; {n} rounds of `true`, {cn} of each connect loop, in turns; the build before: {before_commit}\n",
        uid.unwrap_or(0)
    );
    println!(
        "| setting | `true` | own | deny | before | own / before | own / deny | own / own, \
         refusals off | deny / deny, refusals off |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut loops = Vec::new();
    let mut refusals = Vec::new();
    for (place, in_bwrap) in &places {
        let mut cands = vec![
            Cand {
                name: "true",
                argv: wrap(vec!["/bin/true".into()], *in_bwrap, &sockets),
                env: vec![],
            },
            Cand {
                name: "own",
                argv: wrap(vec![s(&ours), "/bin/true".into()], *in_bwrap, &sockets),
                env: vec![],
            },
            Cand {
                name: "deny",
                argv: wrap(vec![s(&ours), "/bin/true".into()], *in_bwrap, &sockets),
                env: vec![("APPLY_SECCOMP_UNIX", "deny")],
            },
        ];
        // The refusal report off (issue 44): today's programs, and under
        // `deny` no listener at all.
        cands.push(Cand {
            name: "own, refusals off",
            argv: wrap(vec![s(&ours), "/bin/true".into()], *in_bwrap, &sockets),
            env: vec![("APPLY_SECCOMP_REFUSALS", "off")],
        });
        cands.push(Cand {
            name: "deny, refusals off",
            argv: wrap(vec![s(&ours), "/bin/true".into()], *in_bwrap, &sockets),
            env: vec![
                ("APPLY_SECCOMP_UNIX", "deny"),
                ("APPLY_SECCOMP_REFUSALS", "off"),
            ],
        });
        if let Some(b) = &before {
            cands.push(Cand {
                name: "before",
                argv: wrap(vec![s(b), "/bin/true".into()], *in_bwrap, &sockets),
                env: vec![],
            });
        }
        let t = rounds(&cands, n, |c| {
            let start = Instant::now();
            let st = command(c, uid).stdout(Stdio::null()).status().unwrap();
            assert!(st.success(), "{}: {st}", c.name);
            start.elapsed().as_secs_f64() * 1e3
        });
        let ratio =
            |a: usize, b: usize| median(t[a].iter().zip(&t[b]).map(|(x, y)| x / y).collect());
        let before_cells = if before.is_some() {
            format!("{:.2} ms | {:.3}", median(t[5].clone()), ratio(1, 5))
        } else {
            "- | -".into()
        };
        println!(
            "| {place} | {:.2} ms | {:.2} ms | {:.2} ms | {before_cells} | {:.3} | {:.3} | {:.3} |",
            median(t[0].clone()),
            median(t[1].clone()),
            median(t[2].clone()),
            ratio(1, 2),
            ratio(1, 3),
            ratio(2, 4)
        );
        if let Some(lp) = &lp {
            let argv = wrap(vec![s(&ours), s(lp), "refuse".into()], *in_bwrap, &sockets);
            let cands = [
                Cand {
                    name: "reported",
                    argv: argv.clone(),
                    env: vec![],
                },
                Cand {
                    name: "refusals off",
                    argv,
                    env: vec![("APPLY_SECCOMP_REFUSALS", "off")],
                },
            ];
            let t = rounds(&cands, cn, |c| {
                let out = command(c, uid).output().unwrap();
                assert!(out.status.success(), "{} refuse: {:?}", c.name, out.status);
                String::from_utf8_lossy(&out.stdout)
                    .trim()
                    .parse::<f64>()
                    .unwrap()
                    / 1e3
            });
            refusals.push((
                place.to_string(),
                t.into_iter().map(median).collect::<Vec<_>>(),
            ));
        }
        if let (Some(lp), Some(floor)) = (&lp, &floor) {
            for kind in ["unix", "tcp"] {
                let mut cands = vec![
                    Cand {
                        name: "bare",
                        argv: wrap(vec![s(lp), kind.into(), s(&sockets)], *in_bwrap, &sockets),
                        env: vec![],
                    },
                    Cand {
                        name: "floor",
                        argv: wrap(
                            vec![s(floor), s(lp), kind.into(), s(&sockets)],
                            *in_bwrap,
                            &sockets,
                        ),
                        env: vec![],
                    },
                    Cand {
                        name: "own",
                        argv: wrap(
                            vec![s(&ours), s(lp), kind.into(), s(&sockets)],
                            *in_bwrap,
                            &sockets,
                        ),
                        env: vec![],
                    },
                ];
                if kind == "tcp" {
                    cands.push(Cand {
                        name: "deny",
                        argv: wrap(
                            vec![s(&ours), s(lp), kind.into(), s(&sockets)],
                            *in_bwrap,
                            &sockets,
                        ),
                        env: vec![("APPLY_SECCOMP_UNIX", "deny")],
                    });
                }
                let t = rounds(&cands, cn, |c| {
                    let out = command(c, uid).output().unwrap();
                    assert!(out.status.success(), "{} {kind}: {:?}", c.name, out.status);
                    String::from_utf8_lossy(&out.stdout)
                        .trim()
                        .parse::<f64>()
                        .unwrap()
                        / 1e3
                });
                loops.push((
                    place.to_string(),
                    kind,
                    t.into_iter().map(median).collect::<Vec<_>>(),
                ));
            }
        }
    }
    if !refusals.is_empty() {
        println!(
            "\n| a refused call (us each, medians) | reported | refusals off | reported - off |"
        );
        println!("|---|---|---|---|");
        for (place, m) in refusals {
            println!(
                "| {place} | {:.2} | {:.2} | {:.2} |",
                m[0],
                m[1],
                m[0] - m[1]
            );
        }
    }
    if !loops.is_empty() {
        println!(
            "\n| connects (us each, medians) | bare | floor | own | own - bare | own - floor | \
             floor - bare | deny - bare |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for (place, kind, m) in loops {
            let deny = m.get(3).map_or("-".into(), |d| format!("{:.1}", d - m[0]));
            println!(
                "| {place}, {kind} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {deny} |",
                m[0],
                m[1],
                m[2],
                m[2] - m[0],
                m[2] - m[1],
                m[1] - m[0]
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The build before, from `git archive` outside this checkout, kept in
/// `$TMPDIR/apply-seccomp-baseline/COMMIT` (as compare.rs does).
fn build_before(dir: &Path, commit: &str) -> Option<PathBuf> {
    if commit == "none" {
        return None;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let place = std::env::temp_dir()
        .join("apply-seccomp-baseline")
        .join(commit);
    let src = place.join("src");
    if !src.join("Cargo.toml").is_file() {
        std::fs::create_dir_all(&src).unwrap();
        let ok = Command::new("sh")
            .arg("-c")
            .arg("git -C \"$1\" archive --format=tar \"$2\" | tar x -C \"$3\"")
            .args(["sh"])
            .arg(root)
            .arg(commit)
            .arg(&src)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "{commit}: not a commit of this checkout");
    }
    let ok = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()))
        .args(["build", "--release", "--quiet", "--target-dir"])
        .arg(place.join("target"))
        .current_dir(&src)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{commit}: the build failed");
    let built = std::fs::read_dir(place.join("target"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("release/apply-seccomp"))
        .find(|p| p.is_file())?;
    let copy = dir.join("before-apply-seccomp");
    std::fs::copy(built, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    Some(copy)
}
