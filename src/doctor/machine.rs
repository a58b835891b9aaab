//! The machine: kernel and architecture, seccomp and its user
//! notifications, whether this process already runs under a filter,
//! whether it runs in a container, WSL or a sandbox (and how that is
//! known), and Landlock (what the capability-free way in needs).

use nix::errno::Errno;

use super::Check;
use crate::cause::SCOPED_ABI;
use crate::sys;

/// `SECCOMP_RET_USER_NOTIF` (linux/seccomp.h).
const RET_USER_NOTIF: u32 = 0x7fc0_0000;
/// `SECCOMP_RET_ERRNO`.
const RET_ERRNO: u32 = 0x0005_0000;

pub fn checks() -> Vec<Check> {
    vec![
        kernel(),
        seccomp(),
        this_process(),
        environment(),
        landlock(),
        gpus(),
    ]
}

/// The GPUs the shim would pass (`APPLY_SECCOMP_DEVICES`, issue 47), and
/// whether the setting is on.
fn gpus() -> Check {
    use crate::shim::devices;
    const NAME: &str = "gpus";
    let value = std::env::var_os(devices::VARIABLE);
    let asked = match devices::asked(value.as_deref()) {
        Ok(a) => a,
        Err(e) => {
            return Check::warn(
                NAME,
                e,
                format!("set {}=gpu (or gpu,card), or unset it", devices::VARIABLE),
            );
        }
    };
    let gpu = devices::Asked {
        gpu: true,
        card: false,
    };
    let dev = std::path::Path::new("/dev");
    let names = |nodes: Vec<std::path::PathBuf>| {
        let mut said = match nodes.len() {
            0 => "none on this host".to_string(),
            _ => nodes
                .iter()
                .map(|n| n.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        };
        for l in devices::linked(dev) {
            said += &format!(" ({l})");
        }
        said
    };
    if asked.any() {
        Check::ok(
            NAME,
            format!(
                "on ({}={}): the shim passes {}",
                devices::VARIABLE,
                value.unwrap_or_default().to_string_lossy(),
                names(devices::nodes(dev, asked))
            ),
        )
    } else {
        Check::ok(
            NAME,
            format!(
                "off: sandboxed commands see no GPU; with {}=gpu the shim would pass {} \
                 (apply-seccomp --setup --gpu)",
                devices::VARIABLE,
                names(devices::nodes(dev, gpu))
            ),
        )
    }
}

fn kernel() -> Check {
    match nix::sys::utsname::uname() {
        Ok(u) => Check::ok(
            "kernel",
            format!(
                "Linux {} on {}",
                u.release().to_string_lossy(),
                u.machine().to_string_lossy()
            ),
        ),
        Err(e) => Check::warn("kernel", format!("uname: {}", e.desc()), "none needed"),
    }
}

fn seccomp() -> Check {
    if let Err(e) = sys::seccomp_mode() {
        return Check::fail(
            "seccomp",
            format!(
                "prctl(PR_GET_SECCOMP): {}: this kernel has no seccomp",
                e.desc()
            ),
            "boot a kernel built with CONFIG_SECCOMP and CONFIG_SECCOMP_FILTER",
        );
    }
    if let Err(e) = sys::seccomp_action_available(RET_ERRNO) {
        return Check::fail(
            "seccomp",
            format!(
                "seccomp(SECCOMP_GET_ACTION_AVAIL, RET_ERRNO): {}: no seccomp filters",
                e.desc()
            ),
            "boot a kernel built with CONFIG_SECCOMP_FILTER (Linux 4.14 or later)",
        );
    }
    match sys::seccomp_action_available(RET_USER_NOTIF) {
        Ok(()) => Check::ok(
            "seccomp",
            "filters work, and the kernel can hand a call to the helper's outer process to \
             decide (SECCOMP_RET_USER_NOTIF): srt's write observation (SRT_OBSERVE_SOCK) works",
        ),
        Err(e) => Check::warn(
            "seccomp",
            format!(
                "filters available; SECCOMP_RET_USER_NOTIF not ({}): write observation \
                 (SRT_OBSERVE_SOCK) is off, commands run unobserved",
                e.desc()
            ),
            "for write observation, a kernel of Linux 5.0 or later",
        ),
    }
}

/// A field of /proc/self/status, such as `Seccomp_filters`.
pub fn status_field(key: &str) -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

fn this_process() -> Check {
    match sys::seccomp_mode() {
        Ok(0) => Check::ok("this process", "no seccomp filter (PR_GET_SECCOMP: 0)"),
        Ok(mode) => Check::warn(
            "this process",
            format!(
                "already runs under seccomp (PR_GET_SECCOMP: {mode}; Seccomp_filters: {} in \
                 /proc/self/status), from whatever started it: a container's profile or an \
                 outer sandbox; it stays in force for every command",
                status_field("Seccomp_filters").unwrap_or_else(|| "?".into()),
            ),
            "none if the checks below pass; otherwise see what the user-namespaces check says \
             of this filter",
        ),
        Err(e) => Check::warn(
            "this process",
            format!("PR_GET_SECCOMP: {}", e.desc()),
            "none needed",
        ),
    }
}

/// Where this runs: each sign found, with how it is known.
fn environment() -> Check {
    let mut signs = Vec::new();
    let exists = |p: &str| std::path::Path::new(p).exists();
    if exists("/.dockerenv") {
        signs.push("a Docker container (/.dockerenv exists)".to_string());
    }
    if exists("/run/.containerenv") {
        signs.push("a Podman container (/run/.containerenv exists)".to_string());
    }
    if let Some(c) = std::env::var_os("container").filter(|c| !c.is_empty()) {
        signs.push(format!(
            "a container (container={} in the environment)",
            c.to_string_lossy()
        ));
    }
    if let Ok(cgroup) = std::fs::read_to_string("/proc/1/cgroup") {
        if let Some(word) = ["docker", "kubepods", "containerd", "lxc", "libpod"]
            .into_iter()
            .find(|w| cgroup.contains(w))
        {
            signs.push(format!("a container ({word} in /proc/1/cgroup)"));
        }
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    if release.to_ascii_lowercase().contains("microsoft") {
        signs.push(format!(
            "WSL{} (the kernel release {} names Microsoft)",
            if release.to_ascii_lowercase().contains("wsl2") {
                "2"
            } else {
                ""
            },
            release.trim()
        ));
    } else if std::env::var_os("WSL_DISTRO_NAME").is_some() {
        signs.push("WSL (WSL_DISTRO_NAME in the environment)".into());
    }
    // PID 1 of this PID namespace: bubblewrap or this helper's init.
    match std::fs::read_to_string("/proc/1/comm")
        .as_deref()
        .map(str::trim)
    {
        Ok("bwrap") => signs.push("a bubblewrap sandbox (PID 1 is bwrap)".into()),
        Ok("apply-seccomp") => {
            signs.push("a sandbox of this helper (PID 1 is apply-seccomp)".into())
        }
        _ => {}
    }
    if signs.is_empty() {
        Check::ok(
            "environment",
            "no container, WSL or sandbox seen (/.dockerenv, /run/.containerenv, container=, \
             /proc/1/cgroup, the kernel release, PID 1)",
        )
    } else {
        Check::ok("environment", format!("inside {}", signs.join("; ")))
    }
}

fn landlock() -> Check {
    match sys::landlock_abi() {
        Ok(abi) if abi >= SCOPED_ABI => Check::ok(
            "landlock",
            format!(
                "ABI {abi}: where a new user namespace gives no usable capability (Ubuntu's \
                 AppArmor bwrap profile), the helper can still take its second way in: the \
                 same filters and a Landlock domain that keeps a command's signals and \
                 abstract Unix sockets inside its run"
            ),
        ),
        Ok(abi) => Check::ok(
            "landlock",
            format!(
                "ABI {abi}, without scoping (ABI {SCOPED_ABI}, Linux 6.12): the capability-free \
                 way in cannot run here; it matters only where user namespaces grant no \
                 capability"
            ),
        ),
        Err(Errno::EOPNOTSUPP) => Check::ok(
            "landlock",
            "built in but not enabled (not in lsm=): the capability-free way in cannot run \
             here; it matters only where user namespaces grant no capability",
        ),
        Err(e) => Check::ok(
            "landlock",
            format!(
                "not in this kernel ({}): the capability-free way in cannot run here; it \
                 matters only where user namespaces grant no capability",
                e.desc()
            ),
        ),
    }
}
