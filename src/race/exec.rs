//! The end-to-end mode (`--exec 'HELPER [ARGS]'`): runs the helper on
//! `true` N times and groups the failures by exit status and first stderr
//! line. Called by `race::run`.

use std::ffi::OsString;
use std::process::{Command, Stdio};

use nix::sched::{CpuSet, sched_setaffinity};
use nix::unistd::Pid;

use crate::error::Error;

use super::*;

/// One group of end-to-end results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Exit code, or 128+signal.
    pub status: i32,
    pub first_line: String,
    pub count: u32,
}

pub(super) fn end_to_end(
    cfg: &Config,
    helper: &[OsString],
    cpus: Option<&CpuSet>,
) -> Result<Report, Error> {
    if let Some(set) = cpus {
        // Inherited by every helper run.
        sched_setaffinity(Pid::from_raw(0), set).map_err(|e| cannot("sched_setaffinity", e))?;
    }
    let mut groups: Vec<Group> = Vec::new();
    let mut failures = 0;
    for _ in 0..cfg.iterations {
        let out = Command::new(&helper[0])
            .args(&helper[1..])
            .arg("true")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| cannot(&format!("run {}", helper[0].to_string_lossy()), e))?;
        use std::os::unix::process::ExitStatusExt;
        let status = out
            .status
            .code()
            .or_else(|| out.status.signal().map(|s| 128 + s))
            .unwrap_or(-1);
        if status == 0 {
            continue;
        }
        failures += 1;
        let first_line = String::from_utf8_lossy(&out.stderr)
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        match groups
            .iter_mut()
            .find(|g| g.status == status && g.first_line == first_line)
        {
            Some(g) => g.count += 1,
            None => groups.push(Group {
                status,
                first_line,
                count: 1,
            }),
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.count));
    Ok(Report::EndToEnd {
        config: cfg.clone(),
        iterations: cfg.iterations,
        failures,
        groups,
    })
}
