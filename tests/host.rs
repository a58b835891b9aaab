//! The code that runs on the host beside the sandboxes (the `bwrap` shim,
//! its placeholder keeper, the doctor), attacked as issue 42 found it
//! attackable: from inside real srt 0.0.83 sandboxes through the shim,
//! and as another local user; as root and as uid 65534. Each test
//! performs the attack and checks it did nothing (the exact error the
//! command gets, and what is on the host after).

mod common;

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use common::srt_cli::{left, project, settled, settled_to, srt};
use common::{User, fixture, stderr, stdout, uid_of, which};

/// The tests that use the keepers' folders and locks read-lock this; the
/// two that hold a lock or take a folder's name write-lock it (every
/// other session of the user would run its lines as given meanwhile).
static KEEPER_FOLDER: RwLock<()> = RwLock::new(());

/// bubblewrap and the srt client are there (else the skip is said).
fn ready() -> bool {
    if which("bwrap").is_none() {
        return common::skip("bubblewrap is not installed");
    }
    common::srt_package().is_some()
}

fn chown(path: &Path, user: User) {
    if let Some(u) = uid_of(user) {
        let ok = Command::new("chown")
            .arg("-R")
            .arg(format!("{u}:{u}"))
            .arg(path)
            .status()
            .unwrap()
            .success();
        assert!(ok, "chown {}", path.display());
    }
}

/// How the shim sits in a home folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shim {
    /// `~/.local/bin/bwrap`, a link to the helper (what `--setup` made
    /// before it used a folder of its own, and what users make by hand).
    Link,
    /// `~/.local/bin/bwrap`, a copy of the helper.
    Copy,
}

/// A home folder of `user`'s with `~/.local/bin/bwrap` as `shim` says,
/// and `~/bin` (a folder on PATH before the shim's, with no bwrap).
fn home_with_shim(user: User, shim: Shim) -> PathBuf {
    let home = common::fresh_folder(&format!("host-home-{shim:?}-{user:?}"));
    std::fs::create_dir_all(home.join(".local/bin")).unwrap();
    std::fs::create_dir_all(home.join("bin")).unwrap();
    let bwrap = home.join(".local/bin/bwrap");
    match shim {
        Shim::Link => std::os::unix::fs::symlink(&fixture().helper, &bwrap).unwrap(),
        Shim::Copy => common::install(&fixture().helper, &bwrap, 0o755),
    }
    chown(&home, user);
    home
}

/// srt's settings beside `dir`: `write` writable, this helper as
/// `applyPath`, `bwrap` as `bwrapPath` (none: srt finds bwrap on PATH).
fn settings(dir: &Path, write: &Path, bwrap: Option<&Path>) -> PathBuf {
    settings_with(dir, write, bwrap, &fixture().helper)
}

/// [`settings`] with `apply` as `applyPath`.
fn settings_with(dir: &Path, write: &Path, bwrap: Option<&Path>, apply: &Path) -> PathBuf {
    let file = dir.with_extension("json");
    let bwrap = bwrap.map_or(String::new(), |b| {
        format!(r#", "bwrapPath": "{}""#, b.display())
    });
    std::fs::write(
        &file,
        format!(
            r#"{{"network": {{"allowedDomains": [], "deniedDomains": []}},
  "filesystem": {{"denyRead": [], "allowWrite": ["{w}"], "denyWrite": []}},
  "seccomp": {{"applyPath": "{h}"}}{bwrap}}}"#,
            w = write.display(),
            h = apply.display()
        ),
    )
    .unwrap();
    file
}

/// A shim outside every folder the tests make writable.
fn outside_shim() -> &'static Path {
    static SHIM: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    SHIM.get_or_init(|| {
        let dir = fixture().dir.join("host-shim");
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(&fixture().helper, dir.join("bwrap")).unwrap();
        dir.join("bwrap")
    })
}

/// Runs `test` as each user with a fresh git folder (`tag`), srt's
/// settings for it (the folder writable, the shim outside it) and the
/// user's home folder, beside the other tests that use the keepers.
fn each_user(tag: &str, test: impl Fn(User, &Path, &Path, &Path)) {
    if !ready() {
        return;
    }
    let _shared = KEEPER_FOLDER.read().unwrap_or_else(|e| e.into_inner());
    for user in common::users_in_loop() {
        let dir = project(user, tag);
        let file = settings(&dir, &dir, Some(outside_shim()));
        test(user, &dir, &file, &common::srt_cli::home(user));
    }
}

/// `apply-seccomp --doctor ARGS` as `user` in `dir`, with `path` as PATH.
fn doctor(user: User, dir: &Path, path: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(&fixture().helper);
    cmd.arg("--doctor")
        .args(args)
        .env("PATH", path)
        .current_dir(dir)
        .stdin(Stdio::null());
    if let Some(u) = uid_of(user) {
        cmd.uid(u).gid(u);
    }
    cmd.output().unwrap()
}

/// `srt` with `SRT_DEBUG`, `home` as HOME and `path` as PATH.
fn srt_in(user: User, dir: &Path, file: &Path, home: &Path, path: &str, script: &str) -> Output {
    srt(user, dir, file, script)
        .env("HOME", home)
        .env("PATH", path)
        .env("SRT_DEBUG", "1")
        .output()
        .unwrap()
}

fn said(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        stdout(out),
        stderr(out)
    )
}

/// The script a hostile command runs against the shim at `bwrap`: remove
/// it, put a script in its place that leaves `pwned` and runs the real
/// bubblewrap (so nothing would look wrong), move its folders away, and
/// add a `bwrap` to `before` (a folder searched first); each result said.
fn attack(bwrap: &Path, helper: &Path, before: &Path, pwned: &Path) -> String {
    let b = bwrap.display();
    let local = bwrap.parent().unwrap().parent().unwrap().display();
    let evil = format!(
        "printf '#!/bin/sh\\ntouch {}\\nexec /usr/bin/bwrap \"$@\"\\n'",
        pwned.display()
    );
    format!(
        "rm -f {b} 2>&1; echo rm=$?; \
         ({evil} > {b}.new && chmod +x {b}.new && mv -f {b}.new {b}) 2>&1; echo replace=$?; \
         ({evil} > {b}) 2>&1; echo write=$?; \
         mv {local} {local}.moved 2>&1; echo movedir=$?; \
         ({evil} > {bf}/bwrap && chmod +x {bf}/bwrap) 2>&1; echo before=$?; \
         (touch {bin}/pip-installed) 2>&1; echo pip=$?; \
         rm -f {h} 2>&1; echo helper=$?; true",
        h = helper.display(),
        bf = before.display(),
        bin = bwrap.parent().unwrap().display(),
    )
}

/// The shim's route in a folder the command may write, and the helper
/// srt runs (`applyPath`, another copy in `~/.cargo/bin`), both ways clients
/// find it (srt's `bwrapPath`, and `PATH` as Claude Code does, a folder
/// with no bwrap first): the command can neither remove, replace nor
/// write the shim, nor move its folders away, nor add a `bwrap` before
/// it; the next command runs no program of its; the shim's folder stays
/// writable where the shim is a file (a copy), read-only where it is a
/// link (nothing narrower keeps a link).
#[test]
fn a_command_cannot_replace_the_shim_or_add_a_bwrap_before_it() {
    if !ready() {
        return;
    }
    let _shared = KEEPER_FOLDER.read().unwrap_or_else(|e| e.into_inner());
    for user in common::users_in_loop() {
        for shim in [Shim::Link, Shim::Copy] {
            for by_path in [false, true] {
                let home = home_with_shim(user, shim);
                let bwrap = home.join(".local/bin/bwrap");
                let helper = home.join(".cargo/bin/apply-seccomp");
                std::fs::create_dir_all(helper.parent().unwrap()).unwrap();
                common::install(&fixture().helper, &helper, 0o755);
                chown(&home, user);
                let file =
                    settings_with(&home, &home, (!by_path).then_some(bwrap.as_path()), &helper);
                let helper_ino = std::fs::metadata(&helper).unwrap().ino();
                // By bwrapPath, the shim's folder is not on PATH: only the
                // name srt ran it by leads there.
                let path = if by_path {
                    format!(
                        "{}:{}:/usr/local/bin:/usr/bin:/bin",
                        home.join("bin").display(),
                        home.join(".local/bin").display()
                    )
                } else {
                    format!(
                        "{}:/usr/local/bin:/usr/bin:/bin",
                        home.join("bin").display()
                    )
                };
                let pwned = home.join("PWNED");
                let before_link = std::fs::read_link(&bwrap).ok();
                let before_ino = std::fs::symlink_metadata(&bwrap).unwrap().ino();
                let case = format!("{user:?} {shim:?} by PATH {by_path}");
                let script = attack(&bwrap, &helper, &home.join("bin"), &pwned);
                let out = srt_in(user, &home, &file, &home, &path, &script);
                let text = stdout(&out);
                assert!(out.status.success(), "{case}: {}", said(&out));
                assert!(
                    stderr(&out).contains("bwrap shim: route protected"),
                    "{case}: {}",
                    said(&out)
                );
                let (gone, readonly) = ("Device or resource busy", "Read-only file system");
                for (step, why) in [
                    ("rm", if shim == Shim::Copy { gone } else { readonly }),
                    ("replace", if shim == Shim::Copy { gone } else { readonly }),
                    ("write", readonly),
                    ("movedir", gone),
                    ("before", "bwrap: Permission denied"),
                    ("helper", gone),
                ] {
                    assert!(
                        !text.contains(&format!("{step}=0")),
                        "{case}: {step} succeeded: {}",
                        said(&out)
                    );
                    assert!(
                        text.contains(why),
                        "{case}: {step}: no {why:?}: {}",
                        said(&out)
                    );
                }
                // A copy is protected alone: the folder stays writable.
                let pip = if shim == Shim::Copy { "pip=0" } else { "pip=1" };
                assert!(text.contains(pip), "{case}: {}", said(&out));
                // The next command runs through the same shim, no program of
                // the last one's on the way.
                let out = srt_in(user, &home, &file, &home, &path, "echo next");
                assert!(out.status.success(), "{case}: {}", said(&out));
                assert_eq!(stdout(&out), "next\n", "{case}");
                assert!(!pwned.exists(), "{case}: the planted bwrap ran on the host");
                assert_eq!(std::fs::read_link(&bwrap).ok(), before_link, "{case}");
                assert_eq!(std::fs::symlink_metadata(&bwrap).unwrap().ino(), before_ino);
                assert!(!home.join(".local.moved").exists(), "{case}");
                assert_eq!(
                    std::fs::metadata(&helper).unwrap().ino(),
                    helper_ino,
                    "{case}"
                );
                // The placeholder held on ~/bin/bwrap is gone with the runs.
                let bin = settled(&home.join("bin"));
                assert!(bin.is_empty(), "{case}: left in ~/bin: {bin:?}");
            }
        }
    }
}

/// A relative `PATH` entry (`node_modules/.bin`, as JavaScript tooling
/// puts first): a `bwrap` planted there from a command is refused, and
/// one planted anyway (by an earlier sandbox without the shim) is never
/// run by the shim nor by the doctor, which reports the entry.
#[test]
fn a_relative_path_entry_never_runs_a_planted_bwrap() {
    each_user("relative", |user, dir, file, home| {
        for path in [
            "node_modules/.bin:/usr/local/bin:/usr/bin:/bin",
            ":/usr/local/bin:/usr/bin:/bin",
        ] {
            let rel = path.split(':').next().unwrap();
            let planted = dir.join(rel).join("bwrap");
            let pwned = dir.join("PWNED");
            // From inside: refused.
            let script = format!(
                "(mkdir -p ./{rel} && printf '#!/bin/sh\\ntouch {p}\\nexec /usr/bin/bwrap \"$@\"\\n' \
                 > ./{rel}/bwrap && chmod +x ./{rel}/bwrap) 2>&1; echo plant=$?",
                p = pwned.display()
            );
            let out = srt_in(user, dir, file, home, path, &script);
            assert!(out.status.success(), "{user:?} {path}: {}", said(&out));
            // The name holds the placeholder: /dev/null, bound read-only.
            assert!(
                stdout(&out).contains("bwrap: Permission denied"),
                "{}",
                said(&out)
            );
            assert!(!stdout(&out).contains("plant=0"), "{}", said(&out));
            // Planted anyway, on the host: never run.
            std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
            std::fs::write(
                &planted,
                format!(
                    "#!/bin/sh\ntouch {}\nexec /usr/bin/bwrap \"$@\"\n",
                    pwned.display()
                ),
            )
            .unwrap();
            std::fs::set_permissions(
                &planted,
                std::os::unix::fs::PermissionsExt::from_mode(0o755),
            )
            .unwrap();
            chown(dir, user);
            let out = srt_in(user, dir, file, home, path, "echo ran");
            assert_eq!(stdout(&out), "ran\n", "{user:?} {path}: {}", said(&out));
            assert!(
                !pwned.exists(),
                "{user:?} {path}: the shim ran the planted bwrap"
            );
            let out = doctor(user, dir, path, &["--json"]);
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let check = report["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == "path")
                .unwrap_or_else(|| panic!("no path check: {}", said(&out)));
            assert_eq!(check["status"], "warning", "{check}");
            assert!(
                check["found"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("{rel:?}")),
                "{check}"
            );
            assert!(
                !pwned.exists(),
                "{user:?} {path}: the doctor ran the planted bwrap"
            );
            std::fs::remove_file(&planted).unwrap();
        }
    });
}

/// The keeper's folder for `user`: `.local/state/apply-seccomp` in the
/// passwd entry's home when that is the user's own folder, else
/// `/tmp/apply-seccomp-UID` (uid 65534's home is `/nonexistent`).
fn keeper_folder(user: User) -> PathBuf {
    let uid =
        uid_of(user).unwrap_or_else(|| std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap());
    let entry = Command::new("getent")
        .args(["passwd", &uid.to_string()])
        .output()
        .unwrap();
    let home = String::from_utf8_lossy(&entry.stdout)
        .trim()
        .split(':')
        .nth(5)
        .map(PathBuf::from);
    match home.filter(|h| std::fs::metadata(h).is_ok_and(|m| m.is_dir() && m.uid() == uid)) {
        Some(h) => h.join(".local/state/apply-seccomp"),
        None => PathBuf::from(format!("/tmp/apply-seccomp-{uid}")),
    }
}

/// A command that holds the per-user lock cannot stall another session.
/// Inside a sandbox: uid 65534 cannot open it (mode 0200, read-only
/// there); root, whose capabilities in its user namespace pass the mode,
/// may hold it, and the other session then runs after the bounded wait,
/// saying so. A line that makes the keeper's folder writable hides it
/// (the command finds nothing there). And a process outside every sandbox
/// that holds it makes the shim wait a bounded time, then run the line as
/// given, saying so, and the doctor finish, both while it still holds it.
#[test]
fn no_one_holding_the_lock_stalls_another_session() {
    if !ready() || which("flock").is_none() && !common::skip("no flock(1)") {
        return;
    }
    let _only = KEEPER_FOLDER.write().unwrap_or_else(|e| e.into_inner());
    for user in common::users_in_loop() {
        let dir = project(user, "lock");
        let file = settings(&dir, &dir, Some(outside_shim()));
        let home = common::srt_cli::home(user);
        let lock = keeper_folder(user).join("lock");
        let path = "/usr/local/bin:/usr/bin:/bin";
        // Made by a first run.
        let out = srt_in(user, &dir, &file, &home, path, "true");
        assert!(out.status.success(), "{}", said(&out));
        assert!(lock.is_file(), "{user:?}: no lock at {}", lock.display());
        let script = format!(
            "exec 9<{} && flock -x 9 && echo LOCKED; sleep 4",
            lock.display()
        );
        let mut hostile = srt(user, &dir, &file, &script).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let out = srt_in(user, &dir, &file, &home, path, "echo other");
        assert_eq!(stdout(&out), "other\n", "{}", said(&out));
        assert!(
            hostile.try_wait().unwrap().is_none(),
            "{user:?}: the other session waited"
        );
        let hostile = hostile.wait_with_output().unwrap();
        if user == User::Root && stdout(&hostile).contains("LOCKED") {
            assert!(
                stderr(&out).contains("was held by another process for 1000 ms"),
                "{}",
                said(&out)
            );
        } else {
            assert!(!stdout(&hostile).contains("LOCKED"), "{}", said(&hostile));
            assert!(
                stderr(&hostile).contains("Permission denied"),
                "{}",
                said(&hostile)
            );
        }
        // A line that makes the keeper's folder writable hides it.
        let keeper = keeper_folder(user);
        let base = PathBuf::from(format!("{}-wide", dir.display()));
        let wide = settings(&base, keeper.parent().unwrap(), Some(outside_shim()));
        let script = format!("ls -A {}; echo listed", keeper.display());
        let out = srt_in(user, &dir, &wide, &home, path, &script);
        assert_eq!(stdout(&out), "listed\n", "{}", said(&out));
        assert!(
            stderr(&out).contains("the keeper's folder hidden"),
            "{}",
            said(&out)
        );
        // Outside every sandbox, the user's own process holds it.
        // Opened for writing (the lock is mode 0200), locked, and held by
        // the one process that is killed after.
        let mut holder = Command::new("sh");
        holder.arg("-c").arg(format!(
            "exec 9>>{} && flock -x 9 && exec sleep 30",
            lock.display()
        ));
        if let Some(u) = uid_of(user) {
            holder.uid(u).gid(u);
        }
        let mut holder = holder.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let out = srt_in(user, &dir, &file, &home, path, "echo bounded");
        assert_eq!(stdout(&out), "bounded\n", "{}", said(&out));
        assert!(
            stderr(&out).contains("was held by another process for 1000 ms"),
            "{}",
            said(&out)
        );
        let report = doctor(user, &dir, path, &[]);
        assert!(stdout(&report).contains("verdict:"), "{}", said(&report));
        assert!(
            holder.try_wait().unwrap().is_none(),
            "{user:?}: the doctor waited"
        );
        holder.kill().unwrap();
        holder.wait().unwrap();
        assert!(settled(&dir).is_empty());
    }
}

/// A placeholder is kept where the line's writable bind shows it, never
/// where a link swapped in leads: with `sub` a link to the home folder,
/// the keeper makes nothing there (the folder is not touched at all); and
/// the race from inside, `sub` and a link to the home folder swapped in a
/// loop while another session runs its commands, leaves nothing in it.
#[test]
fn a_link_swapped_in_never_leads_the_keeper_out_of_the_folder() {
    each_user("swap", |user, dir, file, home| {
        let target = common::fresh_folder(&format!("host-swap-home-{user:?}"));
        chown(&target, user);
        std::os::unix::fs::symlink(&target, dir.join("sub")).unwrap();
        let before = std::fs::metadata(&target).unwrap().mtime_nsec();
        let d = dir.display();
        let line = [
            "--ro-bind",
            "/",
            "/",
            "--bind",
            &d.to_string(),
            &d.to_string(),
            "--ro-bind",
            "/dev/null",
            &format!("{d}/sub/.bash_profile"),
            "--",
            "true",
        ];
        let mut cmd = Command::new(outside_shim());
        cmd.args(line)
            .env("APPLY_SECCOMP_BWRAP", which("bwrap").unwrap())
            .env("SRT_DEBUG", "1")
            .stdin(Stdio::null());
        if let Some(u) = uid_of(user) {
            cmd.uid(u).gid(u);
        }
        let out = cmd.output().unwrap();
        assert!(
            stderr(&out).contains(&format!("{d}/sub/.bash_profile (Not a directory)")),
            "{}",
            said(&out)
        );
        assert!(!target.join(".bash_profile").exists());
        assert_eq!(
            std::fs::metadata(&target).unwrap().mtime_nsec(),
            before,
            "{user:?}: touched"
        );
        std::fs::remove_file(dir.join("sub")).unwrap();
        // The race, from inside a sandbox of the same folder.
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/.bash_profile"), "x\n").unwrap();
        chown(dir, user);
        let swap = format!(
            "ln -s {t} sub.link; end=$(($(date +%s) + 6)); \
             while [ $(date +%s) -lt $end ]; do mv -T sub sub.tmp; mv -T sub.link sub; \
             mv -T sub sub.link; mv -T sub.tmp sub; done; rm -f sub.link; echo swapped",
            t = target.display()
        );
        let hostile = srt(user, dir, file, &swap).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut runs = 0;
        while Instant::now() < deadline {
            let _ = srt_in(user, dir, file, home, "/usr/bin:/bin", "true");
            runs += 1;
            assert!(
                !target.join(".bash_profile").exists(),
                "{user:?}: made outside, run {runs}"
            );
        }
        let hostile = hostile.wait_with_output().unwrap();
        assert!(stdout(&hostile).contains("swapped"), "{}", said(&hostile));
        assert!(!target.join(".bash_profile").exists());
        assert!(left(&target).is_empty(), "{user:?}: {:?}", left(&target));
        assert!(runs > 0);
    });
}

/// A command that can only read a placeholder (another sandbox of the
/// user's, where the folder is read-only) holds it with `flock(LOCK_SH)`
/// and a POSIX read lock across the end of the run that made it: the
/// placeholder still goes when that run ends.
#[test]
fn a_reader_cannot_keep_a_placeholder_alive() {
    if which("python3").is_none() && !common::skip("no python3") {
        return;
    }
    each_user("reader", |user, dir, file, home| {
        let other = project(user, "reader-other");
        let other_file = settings(&other, &other, Some(outside_shim()));
        let held = dir.join(".bashrc");
        let reader = format!(
            "while [ ! -s {h} ]; do sleep 0.02; done; exec 9<{h}; flock -s 9; \
             python3 -c 'import fcntl; fcntl.lockf(9, fcntl.LOCK_SH); print(\"read-locked\", flush=True); \
             import time; time.sleep(6)'",
            h = held.display()
        );
        let reader = srt(user, &other, &other_file, &reader).spawn().unwrap();
        let out = srt_in(
            user,
            dir,
            file,
            home,
            "/usr/bin:/bin",
            "sleep 1.5; echo done",
        );
        assert_eq!(stdout(&out), "done\n", "{}", said(&out));
        // Gone while the reader still holds its locks.
        let now = settled_to(dir, &[]);
        let reader = reader.wait_with_output().unwrap();
        assert!(stdout(&reader).contains("read-locked"), "{}", said(&reader));
        assert!(now.is_empty(), "{user:?}: kept alive by a reader: {now:?}");
    });
}

/// Files at every passing name a command could guess (the old
/// `.NAME.apply-seccomp-UID`, and more) change nothing: every
/// placeholder is still made marked, the clients' 0-byte files never
/// appear, the planted files are left as they are, and commands of
/// concurrent sessions never stop.
#[test]
fn planted_passing_names_do_not_switch_the_keeper_off() {
    each_user("planted", |user, dir, file, home| {
        let uid = uid_of(user).unwrap_or(0);
        let mut planted = Vec::new();
        for name in common::SRT_DENIED_FILES {
            for guess in [
                format!(".{name}.apply-seccomp-{uid}"),
                format!(".{name}.apply-seccomp-0"),
            ] {
                std::fs::write(dir.join(&guess), "planted\n").unwrap();
                planted.push(guess);
            }
        }
        planted.sort();
        planted.dedup();
        chown(dir, user);
        let out = srt_in(
            user,
            dir,
            file,
            home,
            "/usr/bin:/bin",
            "cat .bashrc; echo ok",
        );
        assert_eq!(stdout(&out), "ok\n", "{}", said(&out));
        let note = stderr(&out)
            .lines()
            .find(|l| l.contains("bwrap shim: placeholders kept"))
            .unwrap_or_else(|| panic!("no keeper line: {}", said(&out)))
            .to_string();
        for name in common::SRT_DENIED_FILES {
            let at = format!("{}/{name} (", dir.display());
            assert!(!note.contains(&at), "{user:?}: {name} not kept: {note}");
        }
        let tally = std::sync::Mutex::new(common::Tally::default());
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..common::rounds(6, 2) {
                        let out = srt(user, dir, file, "true").output().unwrap();
                        tally.lock().unwrap().add(&out, 0);
                    }
                });
            }
        });
        let tally = tally.into_inner().unwrap();
        assert_eq!(
            (tally.setup_failures, tally.guard_stops),
            (0, 0),
            "{tally:?}"
        );
        assert!(tally.other_failures.is_empty(), "{tally:?}");
        let refs: Vec<&str> = planted.iter().map(String::as_str).collect();
        assert_eq!(settled_to(dir, &refs), refs, "{user:?}");
        for name in &planted {
            assert_eq!(
                std::fs::read_to_string(dir.join(name)).unwrap(),
                "planted\n"
            );
        }
    });
}

/// Another local user who takes the keeper's folder name in `/tmp` first
/// (uid 65534, whose home is `/nonexistent`) switches nothing off in
/// silence: the command runs, and stderr says the placeholders cannot be
/// kept and why, without `SRT_DEBUG`.
#[test]
fn another_user_taking_the_keepers_folder_is_said() {
    if !ready() || !common::is_root() && !common::skip("needs root to be another user") {
        return;
    }
    let _only = KEEPER_FOLDER.write().unwrap_or_else(|e| e.into_inner());
    let user = User::Unprivileged;
    let folder = keeper_folder(user);
    assert!(folder.starts_with("/tmp"), "{}", folder.display());
    let aside = folder.with_extension("aside");
    let had = std::fs::rename(&folder, &aside).is_ok();
    std::fs::create_dir(&folder).unwrap();
    let dir = project(user, "taken");
    let file = settings(&dir, &dir, Some(outside_shim()));
    let out = srt(user, &dir, &file, "echo ran").output().unwrap();
    std::fs::remove_dir(&folder).unwrap();
    if had {
        std::fs::rename(&aside, &folder).unwrap();
    }
    assert_eq!(stdout(&out), "ran\n", "{}", said(&out));
    let want = format!(
        "apply-seccomp: bwrap shim: placeholders not kept: {} is not a private folder of this user's",
        folder.display()
    );
    assert!(stderr(&out).contains(&want), "{}", said(&out));
}

/// Sessions of one user whose environments differ (`XDG_RUNTIME_DIR` set
/// to two folders, and unset) take the same lock: three at once in one
/// folder, no failure, nothing left, and no lock in either folder.
#[test]
fn sessions_with_different_environments_take_one_lock() {
    each_user("xdg", |user, dir, file, _| {
        let runtimes: Vec<PathBuf> = (0..2)
            .map(|k| {
                let r = common::fresh_folder(&format!("host-xdg-{k}-{user:?}"));
                chown(&r, user);
                r
            })
            .collect();
        let tally = std::sync::Mutex::new(common::Tally::default());
        std::thread::scope(|s| {
            for k in 0..3 {
                let (tally, runtimes, dir, file) = (&tally, &runtimes, &dir, &file);
                s.spawn(move || {
                    for _ in 0..common::rounds(8, 3) {
                        let mut cmd = srt(user, dir, file, "true");
                        if let Some(r) = runtimes.get(k) {
                            cmd.env("XDG_RUNTIME_DIR", r);
                        }
                        let out = cmd.output().unwrap();
                        tally.lock().unwrap().add(&out, 0);
                    }
                });
            }
        });
        let tally = tally.into_inner().unwrap();
        assert_eq!(
            (tally.runs, tally.setup_failures, tally.guard_stops),
            (3 * common::rounds(8, 3), 0, 0),
            "{tally:?}"
        );
        assert!(tally.other_failures.is_empty(), "{tally:?}");
        assert!(settled(dir).is_empty(), "{user:?}: {:?}", left(dir));
        for r in &runtimes {
            assert!(left(r).is_empty(), "{}: {:?}", r.display(), left(r));
        }
    });
}
