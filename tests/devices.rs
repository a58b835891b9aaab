//! GPUs in the sandbox on request (issue 47), without a GPU: as root, a
//! private mount namespace whose `/dev` is a tmpfs with the usual nodes
//! bound in and stand-in device nodes made with the majors of NVIDIA
//! (195), DRM (226) and dynamic ones for `nvidia-uvm`, `nvidia-caps`,
//! `kfd` and `dxg`, beside a block device that must never pass. Through
//! the real srt CLI (its `bwrapPath` the shim) and a Claude Code line
//! (the srt library's, `bwrap` on `PATH` the shim), as root and as uid
//! 65534: with `APPLY_SECCOMP_DEVICES=gpu` exactly the GPU nodes appear,
//! of the same type and numbers; `gpu,card` adds DRM's card; off, none,
//! even when the command sets the variable itself or the line's
//! `--setenv` does.
//!
//! With a real NVIDIA GPU, by hand: `APPLY_SECCOMP_DEVICES=gpu srt -c
//! nvidia-smi` with srt's `bwrapPath` the shim (`apply-seccomp --setup
//! --gpu`), then a CUDA program the same way.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{User, fixture, is_root, skip, stderr, stdout, users, which};

/// The emulated `/dev`, then `"$@"`: run by `unshare -m` as root.
const DEV: &str = r#"set -e
mount --make-rprivate /
orig=$(mktemp -d)
mount --rbind /dev "$orig"
mount -t tmpfs -o mode=755 tmpfs /dev
for n in null zero full random urandom tty; do touch "/dev/$n"; mount --bind "$orig/$n" "/dev/$n"; done
mkdir /dev/pts /dev/shm
mount --bind "$orig/pts" /dev/pts
ln -s pts/ptmx /dev/ptmx
ln -s /proc/self/fd /dev/fd
mkdir /dev/dri /dev/nvidia-caps
mknod -m 666 /dev/nvidia0 c 195 0
mknod -m 666 /dev/nvidiactl c 195 255
mknod -m 666 /dev/nvidia-uvm c 508 0
mknod -m 666 /dev/nvidia-caps/nvidia-cap1 c 509 1
mknod -m 666 /dev/dri/card0 c 226 0
mknod -m 666 /dev/dri/renderD128 c 226 128
mknod -m 666 /dev/kfd c 510 0
mknod -m 666 /dev/dxg c 511 0
mknod -m 660 /dev/sda b 8 0
exec "$@""#;

/// What the command lists: every device node of those names it sees.
const LIST: &str = "for f in /dev/nvidia* /dev/nvidia-caps/* /dev/dri/* /dev/kfd /dev/dxg /dev/sda; do \
                    if [ -c \"$f\" ] || [ -b \"$f\" ]; then stat -c 'node %n %F %t:%T' \"$f\"; fi; done; true";

/// The GPU stand-ins (`gpu`), as `stat` shows them.
const GPU: [&str; 7] = [
    "node /dev/nvidia0 character special file c3:0",
    "node /dev/nvidiactl character special file c3:ff",
    "node /dev/nvidia-uvm character special file 1fc:0",
    "node /dev/nvidia-caps/nvidia-cap1 character special file 1fd:1",
    "node /dev/dri/renderD128 character special file e2:80",
    "node /dev/kfd character special file 1fe:0",
    "node /dev/dxg character special file 1ff:0",
];
const CARD: &str = "node /dev/dri/card0 character special file e2:0";

fn can_run() -> bool {
    if !is_root() {
        return skip(
            "not root: the stand-in device nodes are made with mknod in a mount namespace",
        );
    }
    for tool in ["unshare", "setpriv", "bwrap", "node"] {
        if which(tool).is_none() {
            return skip(&format!("{tool} is not installed"));
        }
    }
    common::srt_package().is_some()
}

/// The shim: a link named `bwrap` to the helper, alone in its folder.
fn shim_dir() -> PathBuf {
    let dir = fixture().dir.join("devices-shim");
    if std::fs::create_dir(&dir).is_ok() {
        std::os::unix::fs::symlink(&fixture().helper, dir.join("bwrap")).unwrap();
    }
    dir
}

/// `command` as `user` in the emulated `/dev`, in `dir`, with `env`.
fn in_dev(user: User, dir: &Path, env: &[(&str, &str)], command: &[&str]) -> Output {
    in_dev_made_by(DEV, user, dir, env, command)
}

/// [`in_dev`] in a `/dev` that `script` makes.
fn in_dev_made_by(
    script: &str,
    user: User,
    dir: &Path,
    env: &[(&str, &str)],
    command: &[&str],
) -> Output {
    let tmp = common::client_tmp().to_str().unwrap();
    let mut all = vec![("TMPDIR", tmp), ("SRT_DEBUG", "1")];
    all.extend(env);
    common::in_mount_ns(script, user, dir, &all, command)
}

fn seen(out: &Output) -> BTreeSet<String> {
    stdout(out)
        .lines()
        .filter(|l| l.starts_with("node "))
        .map(str::to_string)
        .collect()
}

fn set(lines: &[&str]) -> BTreeSet<String> {
    lines.iter().map(|l| l.to_string()).collect()
}

/// The real srt CLI, its `bwrapPath` the shim, running [`LIST`] (after
/// `before`, a part of the command's own).
fn srt(user: User, env: &[(&str, &str)], before: &str) -> Output {
    srt_in(DEV, user, env, before)
}

/// [`srt`] in a `/dev` that `script` makes.
fn srt_in(script: &str, user: User, env: &[(&str, &str)], before: &str) -> Output {
    let dir = common::srt_cli::project(user, "devices");
    let settings = dir.join("srt.json");
    std::fs::write(
        &settings,
        format!(
            r#"{{"network": {{"allowedDomains": [], "deniedDomains": []}},
  "filesystem": {{"denyRead": [], "allowWrite": [], "denyWrite": []}},
  "seccomp": {{"applyPath": "{}"}}, "bwrapPath": "{}"}}"#,
            fixture().helper.display(),
            shim_dir().join("bwrap").display()
        ),
    )
    .unwrap();
    let srt = common::srt_package().unwrap().join("node_modules/.bin/srt");
    let command = format!("{before}{LIST}");
    let mut all = vec![("PATH", "/usr/local/bin:/usr/bin:/bin")];
    all.extend(env);
    in_dev_made_by(
        script,
        user,
        &dir,
        &all,
        &[
            srt.to_str().unwrap(),
            "-s",
            settings.to_str().unwrap(),
            "-c",
            &command,
        ],
    )
}

/// A Claude Code line: the srt library's `wrapWithSandbox`, run with
/// `/bin/sh -c` and `bwrap` on `PATH` the shim.
fn claude_code(user: User, env: &[(&str, &str)]) -> Output {
    let dir = common::srt_cli::project(user, "devices-cc");
    let package = common::srt_package().unwrap();
    let js = dir.join("multicall.mjs");
    std::fs::write(&js, common::multicall_script(package)).unwrap();
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"network": {{"allowedDomains": [], "deniedDomains": []}},
  "filesystem": {{"denyRead": [], "allowWrite": ["{}"], "denyWrite": []}},
  "seccomp": {{"applyPath": "/proc/self/fd/3", "argv0": "apply-seccomp"}}}}"#,
            dir.display()
        ),
    )
    .unwrap();
    let standin = fixture().script("devices-standin", "#!/bin/sh\nexec \"$@\"\n");
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", shim_dir().display());
    let mut all = vec![("PATH", path.as_str())];
    all.extend(env);
    let config_arg = format!("@{}", config.display());
    in_dev(
        user,
        &dir,
        &all,
        &[
            which("node").unwrap().to_str().unwrap(),
            js.to_str().unwrap(),
            &config_arg,
            LIST,
            standin.to_str().unwrap(),
            dir.join("wrapped.txt").to_str().unwrap(),
        ],
    )
}

#[test]
fn srt_passes_exactly_the_gpu_nodes_when_asked() {
    if !can_run() {
        return;
    }
    for user in users() {
        let out = srt(user, &[("APPLY_SECCOMP_DEVICES", "gpu")], "");
        let ctx = format!("{user:?}: {}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        assert_eq!(seen(&out), set(&GPU), "{ctx}");
        assert!(
            stderr(&out).contains("apply-seccomp: bwrap shim: devices (APPLY_SECCOMP_DEVICES): passed /dev/dri/renderD128, /dev/dxg"),
            "{ctx}"
        );
        // The helper ran the command, its filters as ever.
        assert!(stderr(&out).contains("apply-seccomp: filters: "), "{ctx}");
        let out = srt(user, &[("APPLY_SECCOMP_DEVICES", "gpu,card")], "");
        let mut with_card = GPU.to_vec();
        with_card.push(CARD);
        assert_eq!(seen(&out), set(&with_card), "{user:?}: {}", stderr(&out));
    }
}

/// A GPU folder that is a link (issue 54): `/dev/dri` leading out of
/// `/dev` to a folder holding DRM stand-ins is not followed; the rest
/// passes, and `SRT_DEBUG` says which link was left.
#[test]
fn a_gpu_folder_that_is_a_link_is_not_followed() {
    if !can_run() {
        return;
    }
    let linked = DEV.replace(
        "mkdir /dev/dri /dev/nvidia-caps",
        "mkdir -p /dev/nvidia-caps \"$PWD/outside-dev/dri\"\nln -s \"$PWD/outside-dev/dri\" /dev/dri",
    );
    for user in users() {
        let out = srt_in(&linked, user, &[("APPLY_SECCOMP_DEVICES", "gpu,card")], "");
        let ctx = format!("{user:?}: {}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        let want: Vec<&str> = GPU
            .iter()
            .copied()
            .filter(|l| !l.contains("/dri/"))
            .collect();
        assert_eq!(seen(&out), set(&want), "{ctx}");
        assert!(
            stderr(&out).contains("/dev/dri is a link to ")
                && stderr(&out).contains("not followed"),
            "{ctx}"
        );
    }
}

#[test]
fn off_no_node_passes_and_the_command_cannot_turn_it_on() {
    if !can_run() {
        return;
    }
    for user in users() {
        let out = srt(user, &[], "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(seen(&out), BTreeSet::new(), "{user:?}: {}", stderr(&out));
        // The command's own variable, and a nested bwrap it would run,
        // reach no shim of the client's.
        let out = srt(
            user,
            &[],
            "export APPLY_SECCOMP_DEVICES=gpu; bwrap --dev /dev true 2>/dev/null; ",
        );
        assert_eq!(seen(&out), BTreeSet::new(), "{user:?}: {}", stderr(&out));
        // An unknown word: said on stderr whatever SRT_DEBUG says, nothing passed.
        let out = srt(user, &[("APPLY_SECCOMP_DEVICES", "all")], "");
        assert_eq!(seen(&out), BTreeSet::new());
        assert!(
            stderr(&out).contains(
                "APPLY_SECCOMP_DEVICES=all: unknown word all (gpu, card): no device passed"
            ),
            "{}",
            stderr(&out)
        );
    }
    // The line's --setenv is the sandbox's environment, not the shim's.
    let out = in_dev(
        User::Unprivileged,
        &fixture().dir,
        &[],
        &[
            shim_dir().join("bwrap").to_str().unwrap(),
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--setenv",
            "APPLY_SECCOMP_DEVICES",
            "gpu",
            "--unshare-user",
            "--",
            "sh",
            "-c",
            LIST,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(seen(&out), BTreeSet::new(), "{}", stderr(&out));
}

#[test]
fn claude_code_lines_get_the_gpu_nodes_when_asked() {
    if !can_run() {
        return;
    }
    for user in users() {
        let out = claude_code(user, &[("APPLY_SECCOMP_DEVICES", "gpu")]);
        let ctx = format!("{user:?}: {}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        assert_eq!(seen(&out), set(&GPU), "{ctx}");
        // This helper ran in the embedded one's place.
        assert!(stderr(&out).contains("apply-seccomp: entry: "), "{ctx}");
        let out = claude_code(user, &[]);
        assert_eq!(seen(&out), BTreeSet::new(), "{user:?}: {}", stderr(&out));
    }
}

/// The doctor says whether the setting is on and which GPUs it passes.
#[test]
fn the_doctor_lists_the_gpus_it_would_pass() {
    if !can_run() {
        return;
    }
    let helper = fixture().helper.to_str().unwrap();
    for (env, want) in [
        (
            &[][..],
            "off: sandboxed commands see no GPU; with APPLY_SECCOMP_DEVICES=gpu the shim would pass /dev/dri/renderD128, /dev/dxg, /dev/kfd, /dev/nvidia-caps/nvidia-cap1, /dev/nvidia-uvm, /dev/nvidia0, /dev/nvidiactl",
        ),
        (
            &[("APPLY_SECCOMP_DEVICES", "gpu,card")][..],
            "on (APPLY_SECCOMP_DEVICES=gpu,card): the shim passes /dev/dri/card0, /dev/dri/renderD128",
        ),
    ] {
        let mut all = vec![("PATH", "/usr/bin:/bin")];
        all.extend(env);
        let out = in_dev(
            User::Root,
            &fixture().dir,
            &all,
            &[helper, "--doctor", "--json"],
        );
        let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let gpus = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "gpus")
            .unwrap();
        assert!(gpus["found"].as_str().unwrap().starts_with(want), "{gpus}");
    }
}
