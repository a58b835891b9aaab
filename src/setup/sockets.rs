//! `--setup --allow-unix-socket PATH`: a host socket commands may reach
//! (`APPLY_SECCOMP_ALLOW_UNIX`, docs/unix-sockets.md). Claude Code gets
//! it in its user settings' `env` (applied to every session, so to the
//! bubblewrap it runs and the helper in it); srt passes on the
//! environment it starts with, so for srt the line to export is said.

use std::path::{Path, PathBuf};

use super::{EMPTY, Out, edit_json, read_json};
use crate::json;

const VARIABLE: &str = "APPLY_SECCOMP_ALLOW_UNIX";

/// Adds `paths` to the list in Claude Code's settings (and says the
/// export line for srt): the list there, with `paths` added after it.
pub fn allow(
    out: &mut Out,
    home: &Path,
    paths: &[PathBuf],
    (srt, claude_code): (bool, bool),
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
    let no_folder = !settings.parent().is_some_and(Path::is_dir);
    if claude_code && no_folder {
        out.lines.push(format!(
            "{} is missing (Claude Code has not run as this user): nothing written for Claude \
             Code; start it once and run this again, or export the variable as below",
            home.join(".claude").display()
        ));
    } else if claude_code {
        edit_json(
            out,
            &settings,
            EMPTY,
            &[(&["env", VARIABLE], json::string(value.as_bytes()))],
        )?;
    }
    if srt || no_folder {
        out.lines.push(format!(
            "srt passes on the environment it starts with: add the line export \
             {VARIABLE}=\"{value}\" to your shell's start-up file (or set it where srt is run)"
        ));
    }
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
