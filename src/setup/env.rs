//! A variable both clients pass to what they run: Claude Code's user
//! settings' `env` (applied to every session, so to the bubblewrap it
//! runs and the helper in it); srt passes on the environment it starts
//! with, so for srt the line to export is said. `--allow-unix-socket`
//! (sockets.rs) and `--gpu` (gpu.rs) set theirs this way.

use std::path::Path;

use super::{EMPTY, Out, edit_json};
use crate::json;

/// Sets `variable` to `value` for the clients `(srt, claude_code)`.
pub fn set(
    out: &mut Out,
    home: &Path,
    (variable, value): (&str, &str),
    (srt, claude_code): (bool, bool),
) -> Result<(), String> {
    let settings = home.join(".claude/settings.json");
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
            &[(&["env", variable], json::string(value.as_bytes()))],
        )?;
    }
    if srt || no_folder {
        out.lines.push(format!(
            "srt passes on the environment it starts with: add the line export \
             {variable}=\"{value}\" to your shell's start-up file (or set it where srt is run)"
        ));
    }
    Ok(())
}
