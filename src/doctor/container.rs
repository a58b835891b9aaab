//! A container's marks on a sandbox's start (issue 46), and what they make
//! of bubblewrap's failure: parts of `/proc` masked (Docker and its
//! relatives bind `/dev/null` over `/proc/kcore`, `/proc/keys` ..., mount
//! a tmpfs over `/proc/acpi`, make `/proc/sys` read-only), with which the
//! kernel refuses a new `/proc` (bubblewrap's `--proc /proc`: srt's line);
//! root without `CAP_SETFCAP`, which refuses bubblewrap's id map; and a
//! setuid bubblewrap, which srt's line cannot use. srt's
//! weaker line (`enableWeakerNestedSandbox`: `--bind /proc /proc`) is
//! tried where a masked `/proc` is the cause.

use std::path::Path;

/// The options srt gives bubblewrap, or with `weaker` its weaker line's
/// (`enableWeakerNestedSandbox`: `--bind /proc /proc` for `--proc /proc`).
pub fn srt_options(weaker: bool) -> Vec<&'static str> {
    let all = super::srt_options::BWRAP_OPTIONS;
    let mut options = all.to_vec();
    if weaker {
        options.truncate(all.len() - 2);
        options.extend(["--bind", "/proc", "/proc"]);
    }
    options
}

/// `bwrap` with srt's options (`weaker`: its weaker line's; a root
/// caller's `--cap-add CAP_SETFCAP`), this helper, and this binary's
/// probe as the command. Err: the doctor does not run that `bwrap`
/// (trust.rs).
pub fn probe_line(
    bwrap: &Path,
    binary: &Path,
    root: bool,
    weaker: bool,
) -> Result<std::process::Command, String> {
    let mut cmd = super::trust::command(bwrap)?;
    cmd.args(srt_options(weaker));
    if root {
        cmd.args(["--cap-add", "CAP_SETFCAP"]);
    }
    cmd.arg("--")
        .arg(binary)
        .arg("--")
        .arg(binary)
        .arg("--doctor-probe");
    cmd.env_remove("SRT_ALLOW_NESTED_USERNS");
    Ok(cmd)
}

/// srt's weaker line (`enableWeakerNestedSandbox`: `--bind /proc /proc`
/// for `--proc /proc`) with this helper and its probe: what the probe saw,
/// or how it failed.
pub fn weaker_run(bwrap: &Path, binary: &Path, root: bool) -> Result<String, String> {
    let cmd = probe_line(bwrap, binary, root, true)?;
    match super::run_bounded(cmd, super::probe::RUN_LIMIT) {
        Ok(ran) if ran.status.is_some_and(|s| s.success()) => {
            super::probe::judge_probe(&ran.stdout, super::probe::inherited_filters())
                .map(|(_, saw)| saw)
        }
        Ok(ran) => Err(format!(
            "{}: {}",
            ran.describe(super::probe::RUN_LIMIT),
            ran.stderr_text()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// The mount points below `/proc` (not `/proc` itself): a container's
/// masks. binfmt_misc, mounted on an empty folder of `/proc`, hides
/// nothing and is left out.
pub fn proc_masks() -> Vec<String> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let point = fields.nth(4)?;
            let fstype = line.split(" - ").nth(1)?.split(' ').next()?;
            (point.starts_with("/proc/") && fstype != "binfmt_misc").then(|| point.to_string())
        })
        .collect()
}

/// Root whose bounding set lacks `CAP_SETFCAP` (bit 31), which a user
/// namespace mapping uid 0 needs.
pub fn root_without_setfcap() -> bool {
    nix::unistd::geteuid().is_root()
        && super::machine::status_field("CapBnd")
            .and_then(|hex| u64::from_str_radix(&hex, 16).ok())
            .is_some_and(|caps| caps & (1 << 31) == 0)
}

/// What a container's marks, or a `setuid` bubblewrap, make of
/// bubblewrap's failure with `stderr`: the cause and its fix, or None. `weaker` runs srt's weaker line and
/// says what it saw (Ok) or how it failed.
pub fn explain(
    stderr: &str,
    setuid: bool,
    weaker: impl FnOnce() -> Result<String, String>,
) -> Option<String> {
    if setuid {
        return Some(
            "this bubblewrap is setuid root, and srt's line (--unshare-user, --cap-drop ALL, \
             its own uid map) needs one that is not (srt: 0.8.0 or later, not setuid): install \
             your distribution's bubblewrap without the setuid bit (Debian's and Ubuntu's are \
             not setuid), or remove the bit (chmod u-s)"
                .into(),
        );
    }
    if stderr.contains("setting up uid map") && root_without_setfcap() {
        return Some(
            "this root has no CAP_SETFCAP (CapBnd in /proc/self/status: a container dropped \
             it), which a user namespace mapping uid 0 needs, so bubblewrap cannot start here \
             for root: run the client as a user other than root, or give the container the \
             capability (docker run --cap-add SETFCAP)"
                .into(),
        );
    }
    let masks = proc_masks();
    if !stderr.contains("Can't mount proc") || masks.is_empty() {
        return None;
    }
    let masked = format!(
        "a masked /proc (mounts over {}, as Docker and its relatives make): the kernel refuses \
         a new /proc while parts of this one are hidden, so bubblewrap's --proc /proc (srt's \
         line) fails for every helper",
        masks.join(", ")
    );
    let unmask = "start the container with /proc unmasked (docker run --security-opt \
                  systempaths=unconfined; podman run --security-opt unmask=ALL)";
    Some(match weaker() {
        Ok(saw) => format!(
            "{masked}. srt's weaker line (--bind /proc /proc) ran here with this helper \
             ({saw}): set \"enableWeakerNestedSandbox\": true in srt's settings (Claude Code: \
             the same key in its \"sandbox\" settings); it costs that commands see the \
             container's processes in /proc (their command lines, not their environment or \
             memory, and nothing there writable). Or {unmask}"
        ),
        Err(why) => {
            format!("{masked}; srt's weaker line (--bind /proc /proc) failed too ({why}): {unmask}")
        }
    })
}
