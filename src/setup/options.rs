//! `--setup`'s options: the words after `--setup` (or `--undo` alone) to
//! what it should do. Each cap's value is checked as a run reads it
//! (limits.rs).

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::limits;

/// `--setup [--srt] [--claude-code] [--managed] [--bin-dir DIR] [--srt-settings
/// FILE] [--allow-unix-socket PATH]... [--gpu] [--max-tasks N] [--memory-max
/// SIZE] [--cpu-max CPUS] [--dry-run]`, or `--setup --undo [--dry-run]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    pub srt: bool,
    pub claude_code: bool,
    pub managed: bool,
    pub bin_dir: Option<PathBuf>,
    pub srt_settings: Option<PathBuf>,
    pub dry_run: bool,
    pub undo: bool,
    /// Host sockets commands may reach (sockets.rs).
    pub allow_unix: Vec<PathBuf>,
    /// GPUs in the sandbox (gpu.rs).
    pub gpu: bool,
    /// The run's caps (limits.rs): variable and value.
    pub limits: Vec<(&'static str, String)>,
}

/// Parses the words after `--setup`.
pub fn parse(args: &[OsString]) -> Result<Config, String> {
    let mut cfg = Config::default();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let mut value = |what: &str| {
            words
                .next()
                .map(PathBuf::from)
                .ok_or_else(|| format!("{what} takes a path"))
        };
        match word.as_bytes() {
            b"--srt" => cfg.srt = true,
            b"--claude-code" => cfg.claude_code = true,
            b"--managed" => cfg.managed = true,
            b"--dry-run" => cfg.dry_run = true,
            b"--undo" => cfg.undo = true,
            b"--gpu" => cfg.gpu = true,
            w if limits::variable(w).is_some() => {
                let var = limits::variable(w).unwrap_or_default();
                cfg.limits.push(limits::setting(w, var, words.next())?);
            }
            b"--bin-dir" => cfg.bin_dir = Some(value("--bin-dir")?),
            b"--srt-settings" => cfg.srt_settings = Some(value("--srt-settings")?),
            b"--allow-unix-socket" => {
                let path = value("--allow-unix-socket")?;
                if !path.is_absolute() {
                    return Err(format!(
                        "--allow-unix-socket {}: name the socket by its absolute path",
                        path.display()
                    ));
                }
                cfg.allow_unix.push(path);
            }
            other => {
                return Err(format!(
                    "--setup takes --srt, --claude-code, --managed, --bin-dir DIR, \
                     --srt-settings FILE, --allow-unix-socket PATH, --gpu, --max-tasks N, \
                     --memory-max SIZE, --cpu-max CPUS, --dry-run and --undo, not {}",
                    String::from_utf8_lossy(other)
                ));
            }
        }
    }
    if cfg.undo
        && cfg
            != (Config {
                undo: true,
                dry_run: cfg.dry_run,
                ..Config::default()
            })
    {
        return Err(
            "--setup --undo takes only --dry-run: it reverts all that setup recorded".into(),
        );
    }
    if !cfg.srt && !cfg.claude_code {
        cfg.srt = true;
        cfg.claude_code = true;
    }
    if cfg.managed {
        cfg.claude_code = true;
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::caps::{MEMORY, TASKS};
    use crate::os_words as words;

    /// Every option of `--setup`.
    #[test]
    fn options() {
        let both = parse(&[]).unwrap();
        assert!(both.srt && both.claude_code && !both.managed && !both.undo);
        let srt = parse(&words(&["--srt", "--srt-settings", "f.json"])).unwrap();
        assert!(srt.srt && !srt.claude_code);
        assert_eq!(srt.srt_settings, Some(PathBuf::from("f.json")));
        assert!(parse(&words(&["--managed"])).unwrap().claude_code);
        assert!(parse(&words(&["--undo", "--dry-run"])).unwrap().undo);
        assert!(parse(&words(&["--undo", "--srt"])).is_err());
        assert!(parse(&words(&["--undo", "--max-tasks", "9"])).is_err());
        assert!(parse(&words(&["--bin-dir"])).is_err());
        assert!(parse(&words(&["setup"])).is_err());
        let caps = parse(&words(&["--max-tasks", "512", "--memory-max", "8G"])).unwrap();
        assert_eq!(caps.limits, [(TASKS, "512".into()), (MEMORY, "8G".into())]);
        assert!(parse(&words(&["--max-tasks", "x"])).is_err());
    }
}
