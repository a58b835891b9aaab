//! `--setup`: points the clients at this binary where it is, and
//! `--setup --undo` reverts exactly that.
//!
//! - srt: `seccomp.applyPath` (this binary) and `bwrapPath` (a link named
//!   `bwrap` to it, for the placeholder keeper) in its settings file;
//! - Claude Code: that link in `--bin-dir` (default
//!   `~/.local/lib/apply-seccomp`, a folder of its own; from the Debian
//!   package, its root-owned `/usr/lib/apply-seccomp/bwrap`), with
//!   whether that folder comes before every other `bwrap` on `PATH`; as
//!   root with `--managed`, `sandbox.bwrapPath` in its managed settings.
//!
//! A settings file is edited in place (edit.rs: every other byte kept),
//! written atomically with its owner and mode (files.rs); each change is
//! written to a record (undo.rs) that `--undo` reads. The binary must be
//! executable and outside every folder srt's settings let a command write.

mod advice;
mod edit;
mod env;
mod files;
mod gpu;
mod limits;
mod options;
mod record;
mod sockets;
mod undo;

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::doctor;
use crate::json;
use crate::shim;

pub use options::{Config, parse};

fn home() -> Result<PathBuf, String> {
    doctor::home().ok_or_else(|| "no home folder ($HOME unset, no passwd entry)".to_string())
}

/// What one run of setup does, one line each.
struct Out {
    dry_run: bool,
    lines: Vec<String>,
    record: record::Record,
}

impl Out {
    fn say(&mut self, done: &str, would: &str) {
        self.lines
            .push(if self.dry_run { would } else { done }.to_string());
    }
}

/// srt 0.0.83's built-in configuration (`getDefaultConfig` in its
/// cli.js), what it runs with when it has no settings file: a file made
/// by setup starts from it, so srt runs as before, now with this helper.
/// (A file with neither `network` nor `filesystem` is refused by srt.)
pub(super) const SRT_DEFAULTS: &str = "{\n  \"network\": {\"allowedDomains\": [], \"deniedDomains\": []},\n  \
\"filesystem\": {\"denyRead\": [], \"allowRead\": [], \"allowWrite\": [], \"denyWrite\": []}\n}\n";

/// What a settings file setup makes starts as: srt's, [`SRT_DEFAULTS`];
/// Claude Code's managed settings, an empty object.
pub(super) const EMPTY: &str = "{}\n";

/// A JSON file's text and whether it was there (if not, `missing`); Err:
/// unreadable, or not JSON (the parse error and its line).
fn read_json(path: &Path, missing: &str) -> Result<(String, bool), String> {
    let bytes = match crate::settings::read(path) {
        Ok(b) => b,
        Err(crate::settings::Unread::Missing) => return Ok((missing.to_string(), false)),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let text = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8", path.display()))?;
    if let Err(e) = json::parse(&text) {
        return Err(format!(
            "{}: not valid JSON ({e}): left as it is",
            path.display()
        ));
    }
    Ok((text, true))
}

/// Sets each `(path, value)` in the JSON file `file`, in one write; read
/// again and edited anew when another writer changed it meanwhile
/// (files.rs).
fn edit_json(
    out: &mut Out,
    file: &Path,
    missing: &str,
    sets: &[(&[&str], String)],
) -> Result<(), String> {
    let file = files::target(file)?;
    for _ in 0..files::ATTEMPTS {
        let (before, existed) = read_json(&file, missing)?;
        let mut text = before.clone();
        let mut changes = Vec::new();
        let mut said = Vec::new();
        for (path, value) in sets {
            let key = path.join(".");
            match edit::set(&text, path, value).map_err(|e| format!("{}: {e}", file.display()))? {
                None => said.push((
                    false,
                    format!("unchanged {}: {key} is {value}", file.display()),
                )),
                Some((new, change)) => {
                    said.push((true, format!("{}: {key} = {value}", file.display())));
                    text = new;
                    changes.push(change);
                }
            }
        }
        let expect = match existed {
            true => files::Expect::Text(before.as_bytes()),
            false => files::Expect::Nothing,
        };
        if !changes.is_empty()
            && !out.dry_run
            && !files::write_atomic_if(&file, expect, text.as_bytes())?
        {
            // Another writer's change: start over from it.
            continue;
        }
        for (changed, line) in said {
            match changed {
                true => out.say(&format!("changed {line}"), &format!("would change {line}")),
                false => out.lines.push(line),
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        // A new srt settings file has srt's own policy: said, with the one
        // change that widens it (setup never widens a policy by itself).
        if !existed && missing == SRT_DEFAULTS {
            out.lines.push(format!(
                "{} has srt's own defaults: commands may write nowhere but srt's temporary \
                 folders (filesystem.allowWrite []) and reach no network host (allowedDomains []); \
                 to let them write the folder srt starts in, make it \"allowWrite\": [\".\"]",
                file.display()
            ));
        }
        out.record.files.push(record::FileChange {
            path: file,
            before: existed.then_some(before),
            after: text,
            changes,
        });
        return Ok(());
    }
    Err(files::changed_meanwhile(&file))
}

/// Makes the `bwrap` link in `dir`, unless it is there already.
fn link(out: &mut Out, dir: &Path, binary: &Path) -> Result<PathBuf, String> {
    let link = dir.join("bwrap");
    match files::link_target(&link) {
        Some(t) if t == binary => {
            out.lines.push(format!(
                "unchanged {} -> {}",
                link.display(),
                binary.display()
            ));
        }
        _ => {
            if !out.dry_run {
                files::make_link(&link, binary)?;
            }
            out.say(
                &format!("made {} -> {}", link.display(), binary.display()),
                &format!("would make {} -> {}", link.display(), binary.display()),
            );
            out.record.links.push((link.clone(), binary.to_path_buf()));
        }
    }
    Ok(link)
}

/// This binary, where it is: Err if it is not executable by this user.
fn this_binary() -> Result<PathBuf, String> {
    let binary = std::fs::canonicalize("/proc/self/exe")
        .map_err(|e| format!("/proc/self/exe: {}", crate::error::strerror(&e)))?;
    if nix::unistd::access(&binary, nix::unistd::AccessFlags::X_OK).is_err() {
        return Err(format!(
            "{} is not executable by this user",
            binary.display()
        ));
    }
    Ok(binary)
}

/// Runs setup (or undo) and then the doctor; the exit status.
pub fn run(cfg: &Config) -> i32 {
    match run_setup(cfg) {
        Ok(lines) => {
            for l in &lines {
                println!("{l}");
            }
            // Issue 58: the doctor would read the machine a dry run left as it was.
            if cfg.dry_run {
                println!(
                    "\n(a dry run: nothing changed; apply-seccomp --doctor shows the machine as it is)"
                );
                return 0;
            }
            let report = doctor::run(&doctor::Config {
                json: false,
                srt_settings: cfg.srt_settings.clone().map(OsString::from),
            });
            println!("\n{}", report.text());
            report.exit_code()
        }
        Err(e) => {
            eprintln!("apply-seccomp: setup: {e}");
            1
        }
    }
}

fn run_setup(cfg: &Config) -> Result<Vec<String>, String> {
    let home = home()?;
    let record_file = record::record_file(&home)?;
    if cfg.undo {
        let mut lines: Vec<String> = record::elsewhere(&record_file).into_iter().collect();
        lines.extend(undo::undo(&record_file, cfg.dry_run)?);
        return Ok(lines);
    }
    if cfg.managed && !nix::unistd::geteuid().is_root() {
        return Err("--managed writes Claude Code's managed settings: run it as root".into());
    }
    // Absolute, as the record keeps it for an undo from anywhere.
    let cwd = std::env::current_dir().map_err(|e| format!("the current folder: {e}"))?;
    let srt_file = cwd.join(
        cfg.srt_settings
            .clone()
            .unwrap_or_else(|| home.join(".srt-settings.json")),
    );
    // Every file read and checked before anything changes (srt's also
    // for where commands may write, whichever client is set up).
    let srt_now = files::target(&srt_file).and_then(|f| read_json(&f, SRT_DEFAULTS));
    if cfg.srt {
        srt_now.clone()?;
    }
    if cfg.managed {
        read_json(&files::target(&doctor::managed_settings_file())?, EMPTY)?;
    }
    let binary = this_binary()?;
    // The Debian package's root-owned shim, when it leads here and no
    // folder was asked for: no link of the user's then.
    let system = crate::install::system_shim(&binary).filter(|_| cfg.bin_dir.is_none());
    // Absolute: the settings name the link from wherever srt runs.
    let bin_dir = match system.as_deref().and_then(Path::parent) {
        Some(dir) => dir.to_path_buf(),
        None => cwd.join(
            cfg.bin_dir
                .clone()
                .unwrap_or_else(|| home.join(shim::protect::LINK_FOLDER)),
        ),
    };
    let writable = advice::writable(srt_now.as_ref().ok().map(|(text, _)| text.as_str()));
    advice::out_of_reach("this binary", &binary, &writable).map_err(|e| {
        format!("{e}; install it elsewhere first (cargo install --path . puts it in ~/.cargo/bin)")
    })?;
    // A link folder a command may write is no reason to refuse: the shim
    // protects its own route in every line it runs (shim/protect/mod.rs).
    let protected = advice::out_of_reach("the folder for the bwrap link", &bin_dir, &writable)
        .err()
        .map(|e| {
            format!(
                "{e}, but the shim protects the link there in every sandbox it runs: {}",
                shim::protect::LINK_PROTECTION
            )
        });
    let mut out = Out {
        dry_run: cfg.dry_run,
        lines: protected.into_iter().collect(),
        record: record::Record::default(),
    };
    let link = match system {
        Some(shim) => {
            out.lines.push(format!(
                "unchanged {} -> {} (the package's shim, root's: no sandbox can replace it)",
                shim.display(),
                binary.display()
            ));
            Ok(shim)
        }
        None => link(&mut out, &bin_dir, &binary),
    };
    let steps = link.and_then(|link| steps(cfg, &mut out, &srt_file, &bin_dir, &binary, &link));
    out.lines
        .extend(advice::earlier_link(&home, &bin_dir, &binary));
    // What was done is recorded even when a later step failed.
    let recorded = !out.record.files.is_empty() || !out.record.links.is_empty();
    if !cfg.dry_run {
        record::append(&record_file, std::mem::take(&mut out.record))?;
    }
    if recorded {
        out.say(
            &format!(
                "recorded these changes for --undo in {}",
                record_file.display()
            ),
            &format!(
                "would record these changes for --undo in {}",
                record_file.display()
            ),
        );
    }
    steps.map(|()| out.lines)
}

fn steps(
    cfg: &Config,
    out: &mut Out,
    srt_file: &Path,
    bin_dir: &Path,
    binary: &Path,
    link: &Path,
) -> Result<(), String> {
    let quote = |p: &Path| json::string(p.as_os_str().as_bytes());
    if cfg.srt {
        edit_json(
            out,
            srt_file,
            SRT_DEFAULTS,
            &[
                (&["seccomp", "applyPath"], quote(binary)),
                (&["bwrapPath"], quote(link)),
            ],
        )?;
    }
    if cfg.claude_code {
        if let Some(advice) = advice::path_order(bin_dir) {
            out.lines.push(advice);
        }
    }
    if cfg.managed {
        edit_json(
            out,
            &doctor::managed_settings_file(),
            EMPTY,
            &[(&["sandbox", "bwrapPath"], quote(link))],
        )?;
    }
    if !cfg.allow_unix.is_empty() {
        sockets::allow(out, &home()?, &cfg.allow_unix, (cfg.srt, cfg.claude_code))?;
    }
    if cfg.gpu {
        gpu::enable(out, &home()?, (cfg.srt, cfg.claude_code))?;
    }
    for setting in &cfg.limits {
        env::set(
            out,
            &home()?,
            (setting.0, &setting.1),
            (cfg.srt, cfg.claude_code),
        )?;
    }
    Ok(())
}
