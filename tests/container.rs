//! The doctor and the helper in a container (issue 46), emulated as root:
//! a private mount namespace with Docker's masks over `/proc` (`/dev/null`
//! bound over `/proc/kcore`, `/proc/keys` ..., a tmpfs over `/proc/acpi`,
//! `/proc/sys` and its kind read-only), then the doctor or the helper as
//! root and as uid 65534; root without `CAP_SETFCAP`; a seccomp filter
//! refusing namespaces (as Docker's default profile does) around the
//! doctor.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{NOBODY, User, fixture, is_root, skip, stderr, stdout, users, which};
use serde_json::Value;

/// Docker's masks, then `"$@"`: run by `unshare -m` as root.
const MASKS: &str = r#"set -e
mount --make-rprivate /
for f in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug; do
    [ -e "$f" ] && mount --bind /dev/null "$f"
done
for d in /proc/acpi /proc/scsi; do [ -d "$d" ] && mount -t tmpfs -o ro tmpfs "$d"; done
for d in /proc/bus /proc/fs /proc/irq /proc/sys /proc/sysrq-trigger; do
    [ -e "$d" ] && mount --bind "$d" "$d" && mount -o remount,bind,ro "$d"
done
exec "$@""#;

fn can_run() -> bool {
    if !is_root() {
        return skip("not root: the emulation mounts over /proc in a mount namespace of its own");
    }
    for tool in ["unshare", "setpriv", "bwrap"] {
        if which(tool).is_none() {
            return skip(&format!("{tool} is not installed"));
        }
    }
    true
}

/// `command` as `user` inside the emulated container, with `env` alone
/// (and `HOME`, `PATH`).
fn in_container(user: User, home: &Path, env: &[(&str, &str)], command: &[&str]) -> Output {
    let mut all = vec![("PATH", "/usr/local/bin:/usr/bin:/bin")];
    all.extend(env);
    common::in_mount_ns(MASKS, user, home, &all, command)
}

fn home(user: User, tag: &str) -> std::path::PathBuf {
    let home = common::fresh_folder(&format!("container-{tag}-{user:?}"));
    if user == User::Unprivileged {
        std::os::unix::fs::chown(&home, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    home
}

fn report(out: &Output) -> Value {
    serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(out), stderr(out)))
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"))
}

/// A masked `/proc`: srt's line fails, and the doctor names the masks,
/// runs srt's weaker line, and says how to use it and what it costs; with
/// `enableWeakerNestedSandbox` in srt's settings, its run is that line and
/// the verdict is that commands run.
#[test]
fn a_masked_proc_is_named_and_the_weaker_line_tried() {
    if !can_run() {
        return;
    }
    let helper = fixture().helper.to_str().unwrap();
    for user in users() {
        let home = home(user, "masked");
        let out = in_container(user, &home, &[], &[helper, "--doctor", "--json"]);
        let r = report(&out);
        let run = check(&r, "bubblewrap run");
        assert_eq!(run["status"], "fail", "{user:?}: {r}");
        assert!(
            run["found"].as_str().unwrap().contains("Can't mount proc"),
            "{run}"
        );
        let fix = run["fix"].as_str().unwrap();
        for want in [
            "a masked /proc (mounts over /proc/keys, /proc/timer_list, /proc/acpi",
            "srt's weaker line (--bind /proc /proc) ran here with this helper (the command saw 2 filters",
            "\"enableWeakerNestedSandbox\": true",
            "not their environment or memory",
            "systempaths=unconfined",
        ] {
            assert!(fix.contains(want), "{user:?}: {want}: {fix}");
        }
        assert_eq!(r["can_run"], false, "{r}");
        // The fix followed: srt's settings ask for the weaker line.
        let file = home.join(".srt-settings.json");
        std::fs::write(&file, "{\"enableWeakerNestedSandbox\": true}\n").unwrap();
        let out = in_container(user, &home, &[], &[helper, "--doctor", "--json"]);
        let r = report(&out);
        let run = check(&r, "bubblewrap run");
        assert_eq!(run["status"], "ok", "{user:?}: {r}");
        assert!(
            run["found"]
                .as_str()
                .unwrap()
                .contains("--bind /proc /proc")
                && run["found"]
                    .as_str()
                    .unwrap()
                    .contains("weaker (enableWeakerNestedSandbox)"),
            "{run}"
        );
        assert_eq!(r["can_run"], true, "{r}");
        // And srt itself, with that key and this helper, runs a command
        // in the container.
        if let Some(srt) = common::srt_package() {
            let settings = format!(
                r#"{{"network": {{"allowedDomains": [], "deniedDomains": []}},
  "filesystem": {{"denyRead": [], "allowWrite": [], "denyWrite": []}},
  "seccomp": {{"applyPath": "{helper}"}}, "enableWeakerNestedSandbox": true}}"#
            );
            std::fs::write(&file, settings).unwrap();
            let srt = srt.join("node_modules/.bin/srt");
            let tmp = common::client_tmp().to_str().unwrap().to_string();
            let out = in_container(
                user,
                &home,
                &[("SRT_DEBUG", "1"), ("TMPDIR", &tmp)],
                &[srt.to_str().unwrap(), "-c", "echo ran in $$"],
            );
            let err = stderr(&out);
            assert!(
                stdout(&out).contains("ran in 2\n"),
                "{user:?}: {}{err}",
                stdout(&out)
            );
            assert!(err.contains("apply-seccomp: entry: "), "{err}");
        }
    }
}

/// Under srt's weaker line in the container, a note the command cannot
/// act on (the namespace limit's read-only sysctl, the refused /proc) goes
/// to SRT_DEBUG only, never to every command's stderr.
#[test]
fn a_command_in_the_container_gets_no_note_it_cannot_act_on() {
    if !can_run() {
        return;
    }
    let helper = fixture().helper.to_str().unwrap();
    let mut line: Vec<&str> = vec!["bwrap"];
    line.extend(&common::BWRAP_OPTIONS[..common::BWRAP_OPTIONS.len() - 2]);
    line.extend([
        "--bind", "/proc", "/proc", "--", helper, "/bin/sh", "-c", "echo ran",
    ]);
    for user in users() {
        let home = home(user, "notes");
        let mut line = line.clone();
        if user == User::Root {
            // After --cap-drop ALL, as srt gives it to a root caller.
            let at = line.iter().position(|w| *w == "--").unwrap();
            line.splice(at..at, ["--cap-add", "CAP_SETFCAP"]);
        }
        let out = in_container(user, &home, &[], &line);
        assert_eq!(out.status.code(), Some(0), "{user:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "ran\n");
        assert_eq!(stderr(&out), "", "{user:?}");
        let out = in_container(user, &home, &[("SRT_DEBUG", "1")], &line);
        let err = stderr(&out);
        assert!(
            err.contains(
                "apply-seccomp: could not set user.max_user_namespaces (Read-only file system)"
            ),
            "{user:?}: {err}"
        );
    }
}

/// Root without CAP_SETFCAP (a container that dropped it): bubblewrap
/// cannot map uid 0, and the doctor says so with what to do.
#[test]
fn root_without_setfcap_is_named() {
    if !can_run() {
        return;
    }
    let home = home(User::Root, "setfcap");
    let out = Command::new("setpriv")
        .args(["--bounding-set", "-setfcap", "--"])
        .arg(&fixture().helper)
        .args(["--doctor", "--json"])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .output()
        .unwrap();
    let r = report(&out);
    let run = check(&r, "bubblewrap run");
    assert_eq!(run["status"], "fail", "{r}");
    let fix = run["fix"].as_str().unwrap();
    assert!(fix.contains("this root has no CAP_SETFCAP"), "{fix}");
    assert!(fix.contains("--cap-add SETFCAP"), "{fix}");
}

/// A seccomp filter refusing namespaces around the doctor (as Docker's
/// default profile does for unshare and clone with new namespaces), in
/// the masked container: the doctor names the filter as the cause.
#[test]
fn a_profile_refusing_namespaces_is_named_in_the_container() {
    if !can_run() {
        return;
    }
    let helper = fixture().helper.to_str().unwrap();
    for user in users() {
        let home = home(user, "profile");
        // This helper's namespaces filter stands in for the profile.
        let out = in_container(user, &home, &[], &[helper, helper, "--doctor", "--json"]);
        let r = report(&out);
        assert_eq!(check(&r, "this process")["status"], "warning", "{r}");
        let ns = check(&r, "user namespaces");
        assert_eq!(ns["status"], "fail", "{r}");
        let fix = ns["fix"].as_str().unwrap();
        assert!(
            fix.contains("this process already runs under a seccomp filter")
                && fix.contains("container whose profile refuses user namespaces"),
            "{user:?}: {fix}"
        );
    }
}

/// A setuid bubblewrap first on PATH (some distributions' packages, or a
/// hand install): srt's line cannot use it, and the doctor says why and
/// what to install instead (uid 65534, for whom the bit matters).
#[test]
fn a_setuid_bubblewrap_is_named() {
    if !can_run() {
        return;
    }
    let dir = common::fresh_folder("setuid-bwrap");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    common::install(&which("bwrap").unwrap(), &dir.join("bwrap"), 0o4755);
    let home = home(User::Unprivileged, "setuid");
    // Where the doctor runs a bubblewrap (not in a folder a sandboxed
    // command could write: doctor/trust.rs): bound over /usr/local/bin.
    let out = common::in_mount_ns(
        &format!(
            "mount --bind {} /usr/local/bin && exec \"$@\"",
            dir.display()
        ),
        User::Unprivileged,
        &home,
        &[("PATH", "/usr/local/bin:/usr/bin:/bin")],
        &[&fixture().helper.to_string_lossy(), "--doctor", "--json"],
    );
    let r = report(&out);
    assert!(
        check(&r, "bubblewrap")["found"]
            .as_str()
            .unwrap()
            .contains("setuid root"),
        "{r}"
    );
    let run = check(&r, "bubblewrap run");
    assert_eq!(run["status"], "fail", "{r}");
    assert!(
        run["fix"]
            .as_str()
            .unwrap()
            .contains("this bubblewrap is setuid root"),
        "{run}"
    );
}
