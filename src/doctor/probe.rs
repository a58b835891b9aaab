//! What the doctor's probe (`--doctor-probe`, child.rs), run as the
//! command under the helper, saw: its lines read and judged against what
//! a run of this helper gives. The host run, the bubblewrap run
//! (sandbox.rs) and srt's weaker line (container.rs) all end here.

use std::time::Duration;

use super::WayTaken;
use super::machine::status_field;

/// How long a run of the helper with the probe may take.
pub(super) const RUN_LIMIT: Duration = Duration::from_secs(20);

/// The value of `key=` in a child's lines.
pub(super) fn field<'a>(lines: &'a str, key: &str) -> Option<&'a str> {
    lines
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
}

/// The seccomp filters this process already has (a command inherits them).
pub(super) fn inherited_filters() -> u32 {
    status_field("Seccomp_filters")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Checks what `--doctor-probe` saw under the helper: the helper's two
/// filters (over those inherited), no_new_privs, and the Unix socket
/// policy it reports: its own stream sockets made and datagram ones
/// refused (the default), or every AF_UNIX socket refused with EPERM
/// (`APPLY_SECCOMP_UNIX=deny`). Returns the way in it shows (PID 2:
/// namespaces) or what is wrong.
pub(super) fn judge_probe(out: &str, inherited: u32) -> Result<(WayTaken, String), String> {
    let filters: u32 = field(out, "seccomp_filters")
        .and_then(|v| v.parse().ok())
        .ok_or("no answer from the command")?;
    let unix = field(out, "af_unix").unwrap_or("?");
    let dgram = field(out, "af_unix_dgram").unwrap_or("?");
    let deny = field(out, "unix_policy") == Some("deny");
    let nnp = field(out, "no_new_privs").unwrap_or("?");
    let pid = field(out, "pid").unwrap_or("?");
    let own = filters.saturating_sub(inherited);
    let (unix_ok, want, said) = if deny {
        (
            unix == "EPERM" && dgram == "EPERM",
            "EPERM (APPLY_SECCOMP_UNIX=deny)",
            "socket(AF_UNIX) refused (EPERM, APPLY_SECCOMP_UNIX=deny)",
        )
    } else if crate::sys::landlock_abi().is_ok_and(crate::cause::holds_unix_sockets) {
        (
            unix == "allowed" && dgram == "allowed",
            "stream and datagram allowed (the own-sockets policy, held by the kernel)",
            "its own AF_UNIX sockets allowed, datagram ones too (the kernel holds the policy: \
             Landlock ABI 9)",
        )
    } else {
        (
            unix == "allowed" && dgram == "EPERM",
            "stream allowed, datagram EPERM (the own-sockets policy)",
            "its own AF_UNIX stream sockets allowed, datagram ones refused (EPERM)",
        )
    };
    if own < 2 || !unix_ok || nnp != "1" {
        return Err(format!(
            "the command saw {own} filter(s) of the helper (want 2), socket(AF_UNIX): stream \
             {unix}, datagram {dgram} (want {want}), NoNewPrivs: {nnp}"
        ));
    }
    let way = if pid == "2" {
        WayTaken::Namespaces
    } else {
        WayTaken::CapabilityFree
    };
    Ok((
        way,
        format!(
            "the command saw {own} filters of the helper, {said}, NoNewPrivs 1, {}",
            match way {
                WayTaken::Namespaces => "PID 2 of a new PID namespace".to_string(),
                _ => format!("PID {pid}: the capability-free way in"),
            }
        ),
    ))
}
