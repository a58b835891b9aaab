//! `--setup --allow-unix-socket PATH`: a host socket commands may reach
//! (`APPLY_SECCOMP_ALLOW_UNIX`, docs/unix-sockets.md). Claude Code gets
//! it in its user settings' `env` (applied to every session, so to the
//! bubblewrap it runs and the helper in it); srt passes on the
//! environment it starts with, so for srt the line to export is said.

use std::path::{Path, PathBuf};

use super::{EMPTY, Out, read_json};
use crate::json;

const VARIABLE: &str = "APPLY_SECCOMP_ALLOW_UNIX";

/// Adds `paths` to the list in Claude Code's settings (and says the
/// export line for srt): the list there, with `paths` added after it.
pub fn allow(
    out: &mut Out,
    home: &Path,
    paths: &[PathBuf],
    clients: (bool, bool),
) -> Result<(), String> {
    for p in paths {
        let is_socket = std::fs::metadata(p)
            .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()));
        if !is_socket {
            out.lines.push(format!(
                "{} is not a socket now: commands reach it only once one is there (an agent's \
                 socket moves when it restarts)",
                p.display()
            ));
        }
    }
    let settings = home.join(".claude/settings.json");
    let mut list = current(&settings);
    for p in paths {
        let p = p.display().to_string();
        if !list.contains(&p) {
            list.push(p);
        }
    }
    let value = list.join(":");
    super::env::set(out, home, (VARIABLE, &value), clients)?;
    out.lines.push(format!(
        "a command that reaches {value} can use it as you: ssh-agent and gpg-agent sign as you, \
         docker.sock is root on this machine"
    ));
    Ok(())
}

/// The list in Claude Code's settings now, if any.
fn current(settings: &Path) -> Vec<String> {
    let Ok((text, true)) = read_json(settings, EMPTY) else {
        return Vec::new();
    };
    let value = json::parse(&text).ok();
    let list = value
        .as_ref()
        .and_then(|v| v.get("env"))
        .and_then(|e| e.get(VARIABLE))
        .and_then(|s| s.as_str())
        .unwrap_or_default();
    list.split(':')
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}
