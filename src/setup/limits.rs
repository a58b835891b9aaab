//! `--setup --max-tasks N`, `--memory-max SIZE`, `--cpu-max CPUS`: the
//! run's caps (src/cli/caps.rs; kept by src/run/tasks.rs and src/run/cgroup/), set where both clients pass
//! them to the bubblewrap they run (env.rs); `--undo` takes them back with
//! the rest. Each value is checked as a run would read it.

use std::ffi::OsString;

use crate::cli::caps::{self, CPU, MEMORY, TASKS};

/// The variable an option sets, or `None` where it is not one of these.
pub fn variable(option: &[u8]) -> Option<&'static str> {
    match option {
        b"--max-tasks" => Some(TASKS),
        b"--memory-max" => Some(MEMORY),
        b"--cpu-max" => Some(CPU),
        _ => None,
    }
}

/// `(variable, value)` for `option` and the word after it, checked.
pub fn setting(
    option: &[u8],
    variable: &'static str,
    value: Option<&OsString>,
) -> Result<(&'static str, String), String> {
    let name = String::from_utf8_lossy(option);
    let value = value
        .and_then(|v| v.to_str())
        .ok_or_else(|| format!("{name} takes a value"))?;
    let v = Some(std::ffi::OsStr::new(value));
    match variable {
        TASKS => caps::Tasks::read(v).map(drop).map_err(|e| e.to_string()),
        MEMORY => caps::Limits::read(v, None, None).map(drop),
        _ => caps::Limits::read(None, v, None).map(drop),
    }
    .map_err(|e| {
        format!(
            "{name} {value}: {}",
            e.trim_start_matches("apply-seccomp: ")
        )
    })?;
    Ok((variable, value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_value_is_read_as_a_run_reads_it() {
        let v = |s: &str| OsString::from(s);
        assert_eq!(
            setting(b"--memory-max", MEMORY, Some(&v("4G"))).unwrap(),
            (MEMORY, "4G".to_string())
        );
        assert!(setting(b"--max-tasks", TASKS, Some(&v("0"))).is_ok());
        assert!(setting(b"--cpu-max", CPU, Some(&v("0"))).is_err());
        assert!(setting(b"--memory-max", MEMORY, None).is_err());
        assert_eq!(variable(b"--gpu"), None);
    }
}
