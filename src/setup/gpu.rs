//! `--setup --gpu`: GPUs in the sandbox (the shim's
//! `APPLY_SECCOMP_DEVICES=gpu`, src/shim/devices.rs), set where both
//! clients pass it to the bubblewrap they run: Claude Code's user
//! settings' `env`; for srt, which passes on the environment it starts
//! with, the line to export is said.

use std::path::Path;

use super::{EMPTY, Out, edit_json};
use crate::json;
use crate::shim::devices::VARIABLE;

pub fn enable(out: &mut Out, home: &Path, (srt, claude_code): (bool, bool)) -> Result<(), String> {
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
            &[(&["env", VARIABLE], json::string(b"gpu"))],
        )?;
    }
    if srt || no_folder {
        out.lines.push(format!(
            "srt passes on the environment it starts with: add the line export {VARIABLE}=gpu \
             to your shell's start-up file (or set it where srt is run)"
        ));
    }
    out.lines.push(
        "a command with a GPU reaches its driver's whole ioctl interface, and the GPU's memory \
         other programs left there: your choice, for the sandboxes of this user"
            .to_string(),
    );
    Ok(())
}
