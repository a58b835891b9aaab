//! `--setup --gpu`: GPUs in the sandbox (the shim's
//! `APPLY_SECCOMP_DEVICES=gpu`, src/shim/devices.rs), set where both
//! clients pass it to the bubblewrap they run: Claude Code's user
//! settings' `env`; for srt, which passes on the environment it starts
//! with, the line to export is said.

use std::path::Path;

use super::Out;
use crate::shim::devices::VARIABLE;

pub fn enable(out: &mut Out, home: &Path, clients: (bool, bool)) -> Result<(), String> {
    super::env::set(out, home, (VARIABLE, "gpu"), clients)?;
    out.lines.push(
        "a command with a GPU reaches its driver's whole ioctl interface, and the GPU's memory \
         other programs left there: your choice, for the sandboxes of this user"
            .to_string(),
    );
    Ok(())
}
