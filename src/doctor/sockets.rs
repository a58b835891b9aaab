//! The Unix sockets check: which policy a run is under
//! (`APPLY_SECCOMP_UNIX`), and each host socket the user named
//! (`APPLY_SECCOMP_ALLOW_UNIX`): whether it is there, a socket, and
//! reachable from a command under this helper inside bubblewrap with srt's
//! options and the current folder writable, as srt binds a project
//! (`--doctor-connect`, child.rs, connects to each, and says why a run's
//! start refuses one).

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::Duration;

use super::Check;
use super::bounded::run_bounded;
use super::srt_options::BWRAP_OPTIONS;

const NAME: &str = "unix sockets";

pub fn check(binary: &Path) -> Check {
    let deny = std::env::var_os("APPLY_SECCOMP_UNIX").is_some_and(|v| v == "deny");
    let named = std::env::var_os("APPLY_SECCOMP_ALLOW_UNIX").unwrap_or_default();
    let named: Vec<String> = named
        .to_string_lossy()
        .split(':')
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect();
    let kernel = crate::sys::landlock_abi().is_ok_and(crate::cause::holds_unix_sockets);
    let policy = if deny {
        "APPLY_SECCOMP_UNIX=deny: every AF_UNIX socket refused (upstream's policy)"
    } else if kernel {
        "the own-sockets policy, held by the kernel (Landlock ABI 9): a command's own AF_UNIX \
         sockets of every type work, a connect or an addressed send reaches only a socket made \
         in its run (EACCES otherwise)"
    } else {
        "the own-sockets policy, decided by the helper's outer process (this kernel has no \
         Landlock ABI 9, Linux 7.1): a command's own AF_UNIX stream sockets work, a datagram \
         socketpair is made as a sequenced-packet one, a datagram socket is refused, a connect \
         reaches only a socket its run bound (EACCES otherwise), none for a process under its \
         own Landlock fence"
    };
    // Where the stub decides, every connect is decided with sock_diag:
    // without its Unix part the policy refuses them all (fail closed),
    // which the user should hear.
    if !deny && !kernel && crate::run::unix_diag::open_unix_diag().is_none() {
        return Check::warn(
            NAME,
            format!("{policy}; but {}", crate::run::unix_diag::DIAG_MISSING),
            "load it as root, now and at each boot: modprobe unix_diag && echo unix_diag > \
             /etc/modules-load.d/apply-seccomp.conf",
        );
    }
    if named.is_empty() {
        return Check::ok(
            NAME,
            format!("{policy}; no host socket named (APPLY_SECCOMP_ALLOW_UNIX)"),
        );
    }
    if deny {
        return Check::warn(
            NAME,
            format!("{policy}; the sockets APPLY_SECCOMP_ALLOW_UNIX names cannot be reached"),
            "unset APPLY_SECCOMP_UNIX to reach them",
        );
    }
    let mut found = Vec::new();
    let mut wrong = Vec::new();
    let reached = reach(binary, &named);
    for path in &named {
        let here = match std::fs::metadata(path) {
            Ok(m) if m.file_type().is_socket() => None,
            Ok(_) => Some("not a socket"),
            Err(_) => Some("missing"),
        };
        let inside = reached
            .as_ref()
            .ok()
            .and_then(|r| r.iter().find(|(p, _)| p == path).map(|(_, r)| r.clone()));
        match (here, inside.as_deref()) {
            (None, Some("ok")) => found.push(format!("{path} (a socket, reached from a sandbox)")),
            (Some(why), _) => wrong.push(format!("{path} ({why})")),
            (None, Some(err)) => wrong.push(format!(
                "{path} (a socket, but a sandboxed connect got {err})"
            )),
            (None, None) => wrong.push(format!(
                "{path} (a socket; a sandboxed connect could not be tried: {})",
                reached.as_ref().err().map_or("no answer", String::as_str)
            )),
        }
    }
    let all = found
        .iter()
        .chain(&wrong)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if wrong.is_empty() {
        Check::ok(NAME, format!("{policy}; named: {all}"))
    } else if wrong.iter().any(|w| w.contains("written from inside")) {
        Check::warn(
            NAME,
            format!("{policy}; named: {all}"),
            "keep a named socket in a folder no sandbox may write (an agent's own folder outside \
             the project and srt's allowWrite): a run could put another socket or a link there",
        )
    } else {
        Check::warn(
            NAME,
            format!("{policy}; named: {all}"),
            "name each socket by the absolute path the client sees (an agent's socket moves when \
             it restarts: SSH_AUTH_SOCK then names the new one)",
        )
    }
}

/// Connects to each of `paths` from a command under this helper inside
/// bubblewrap with srt's options: each path and `ok` or the errno's name.
fn reach(binary: &Path, paths: &[String]) -> Result<Vec<(String, String)>, String> {
    // The first bwrap on PATH, as clients find it (never from a relative
    // PATH entry: shim::search_dirs).
    let found = super::sandbox::find_bwrap(binary).ok_or("no bwrap on PATH")?;
    let mut cmd = super::trust::command(&found.first)?;
    cmd.args(BWRAP_OPTIONS);
    // The folder the doctor runs in, writable as srt binds a project: a
    // socket a run could replace there is refused, and said why.
    if let Some(here) = std::env::current_dir().ok().filter(|d| d != Path::new("/")) {
        cmd.arg("--bind").arg(&here).arg(&here);
    }
    if nix::unistd::geteuid().is_root() {
        cmd.args(["--cap-add", "CAP_SETFCAP"]);
    }
    cmd.arg("--")
        .arg(binary)
        .arg("--")
        .arg(binary)
        .arg("--doctor-connect")
        .args(paths);
    let ran = run_bounded(cmd, Duration::from_secs(20)).map_err(|e| e.to_string())?;
    if !ran.status.is_some_and(|s| s.success()) {
        return Err(ran.stderr_text());
    }
    // `PATH\tRESULT` or `PATH\tRESULT\tWHY` (child.rs): the result and why
    // together.
    Ok(ran
        .stdout
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(p, r)| (p.to_string(), r.replace('\t', ": ")))
        .collect())
}
