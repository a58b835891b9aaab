//! `--setup --undo`: what the record (record.rs) says setup changed,
//! taken back.
//!
//! Undo writes no byte the record supplies (issue 68: a record a sandbox
//! forged put a line of its own in `~/.bashrc`): in each JSON settings
//! file it names, it removes each key setup sets (`seccomp.applyPath`,
//! `bwrapPath`, `sandbox.bwrapPath`, an `env` entry `APPLY_SECCOMP_...`)
//! that still holds the value setup set, and says what it was before
//! setup, if anything, for the user to set again; a file setup made that
//! holds nothing more than setup started it with goes. Every other byte
//! is kept (edit.rs), and nothing else is touched. A link goes if it still
//! leads where setup pointed it, and its folder of its own
//! (`.../apply-seccomp`) with it if nothing else is there. The record goes
//! once nothing setup set is left; a value undo could not take back keeps
//! its file's entry.

use std::path::Path;

use super::edit;
use super::files;
use super::record::{FileChange, Record, append, load, printable};
use crate::json::{self, Value};

/// The last name of the link's folder of its own
/// ([`crate::shim::protect::LINK_FOLDER`]).
const LINK_FOLDER_NAME: &str = "apply-seccomp";

/// Whether `path` is a key setup sets (`after`: the value it set), the
/// only kind undo removes: `seccomp.applyPath`, `bwrapPath`,
/// `sandbox.bwrapPath`, an `env` entry `APPLY_SECCOMP_...`; or an object
/// setup made to hold such keys (`seccomp`, `sandbox`, `env`: the path a
/// set writes where the object was missing, edit.rs), holding them only.
fn set_by_setup(path: &[String], after: &str) -> bool {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    let only = |ok: &dyn Fn(&str) -> bool| {
        json::parse(after).is_ok_and(|v| match v {
            Value::Object(keys) => keys.keys().all(|k| ok(k)),
            _ => false,
        })
    };
    let ours = |name: &str| name.starts_with("APPLY_SECCOMP_");
    match p.as_slice() {
        ["seccomp", "applyPath"] | ["bwrapPath"] | ["sandbox", "bwrapPath"] => true,
        ["env", name] => ours(name),
        ["seccomp"] => only(&|k| k == "applyPath"),
        ["sandbox"] => only(&|k| k == "bwrapPath"),
        ["env"] => only(&ours),
        _ => false,
    }
}

/// The same JSON value: the same bytes, or texts that parse alike (a file
/// reformatted with the same values, `json.dump` with another indent).
fn same(a: &str, b: &str) -> bool {
    a == b || matches!((json::parse(a), json::parse(b)), (Ok(x), Ok(y)) if x == y)
}

/// Reverts one file, as the module says: its line, and whether a value
/// setup set is still there (the record then keeps the file).
fn undo_file(f: &FileChange, dry_run: bool) -> Result<(String, bool), String> {
    undo_file_text(f, dry_run).map(|(line, text)| {
        let left = text.is_some_and(|text| {
            f.changes.iter().any(|c| {
                let path: Vec<&str> = c.path.iter().map(String::as_str).collect();
                edit::get(&text, &path).is_some_and(|v| same(&v, &c.after))
            })
        });
        (line, left)
    })
}

/// [`undo_file`]'s work: its line, and the file's text after (None: gone
/// or given back whole). Read again and undone anew when another writer
/// changed the file meanwhile (files.rs).
fn undo_file_text(f: &FileChange, dry_run: bool) -> Result<(String, Option<String>), String> {
    for _ in 0..files::ATTEMPTS {
        if let Some(done) = undo_file_once(f, dry_run)? {
            return Ok(done);
        }
    }
    Err(files::changed_meanwhile(&f.path))
}

/// One try of [`undo_file_text`]: `None` when the file changed between
/// its read and its write.
fn undo_file_once(
    f: &FileChange,
    dry_run: bool,
) -> Result<Option<(String, Option<String>)>, String> {
    let would = if dry_run { "would " } else { "" };
    let shown = printable(&f.path);
    let current = match crate::settings::read(&f.path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(crate::settings::Unread::Missing) => {
            return Ok(Some((format!("left {shown}: it is gone"), None)));
        }
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    if json::parse(&current).is_err() {
        return Ok(Some((
            format!("left {shown}: not JSON, so no settings file setup wrote"),
            Some(current),
        )));
    }
    let mut text = current.clone();
    let mut said = Vec::new();
    for c in f.changes.iter().rev() {
        let path: Vec<&str> = c.path.iter().map(String::as_str).collect();
        let key = printable(Path::new(&c.path.join(".")));
        if !set_by_setup(&c.path, &c.after) {
            said.push(format!("{key} left (no setting setup makes)"));
            continue;
        }
        // An object setup made is setup's while it holds what setup put
        // in it, or nothing (a later undo took its keys out).
        let container = path.len() == 1 && path[0] != "bwrapPath";
        if !edit::get(&text, &path)
            .is_some_and(|v| same(&v, &c.after) || container && same(&v, "{}"))
        {
            said.push(format!("{key} left (changed since setup)"));
            continue;
        }
        if let Some(t) = edit::remove(&text, &path) {
            text = t;
            said.push(match &c.before {
                Some(b) => format!(
                    "{key} removed (it was {} before setup: set it again if you want it)",
                    printable(Path::new(b))
                ),
                None => format!("{key} removed"),
            });
        }
    }
    // A file setup made, holding no more than setup started it with.
    let bare = f.before.is_none()
        && [super::SRT_DEFAULTS, super::EMPTY]
            .iter()
            .any(|t| same(&text, t));
    if bare {
        if !dry_run && !files::remove_if(&f.path, current.as_bytes())? {
            return Ok(None);
        }
        return Ok(Some((
            format!("{would}remove {shown} (setup made it)"),
            None,
        )));
    }
    if text != current
        && !dry_run
        && !files::write_atomic_if(
            &f.path,
            files::Expect::Text(current.as_bytes()),
            text.as_bytes(),
        )?
    {
        return Ok(None);
    }
    let line = format!("{would}edit {shown}: {}", said.join(", "));
    Ok(Some((line, Some(if dry_run { current } else { text }))))
}

/// `--setup --undo`: the lines of what it did.
pub fn undo(file: &Path, dry_run: bool) -> Result<Vec<String>, String> {
    let record = load(file)?;
    if record.files.is_empty() && record.links.is_empty() {
        return Ok(vec![format!(
            "nothing to undo: no record of setup at {}",
            file.display()
        )]);
    }
    let mut lines = Vec::new();
    // What undo could not take back, kept in the record for the next one.
    let mut kept = Record::default();
    for f in record.files.iter().rev() {
        let (line, left) = undo_file(f, dry_run)?;
        lines.push(line);
        if left && !dry_run {
            kept.files.insert(0, f.clone());
        }
    }
    let would = if dry_run { "would " } else { "" };
    for (link, to) in record.links.iter().rev() {
        // Each found in its folder without following a link on the way
        // (files.rs): a user's folder made a link leads nowhere.
        if files::link_target_in_place(link).as_deref() == Some(to.as_path()) {
            if !dry_run {
                files::remove_in_place(link, false)?;
            }
            lines.push(format!(
                "{would}remove {} -> {}",
                printable(link),
                printable(to)
            ));
            // The link's own folder goes with it, if nothing else is there.
            if let Some(dir) = link.parent().filter(|d| d.ends_with(LINK_FOLDER_NAME)) {
                if !dry_run && files::remove_in_place(dir, true).is_ok() {
                    lines.push(format!("remove {}", printable(dir)));
                }
            }
        } else {
            lines.push(format!(
                "left {}: it no longer leads to {} (or a link lies on its way)",
                printable(link),
                printable(to)
            ));
        }
    }
    if !dry_run {
        files::remove(file)?;
        if !kept.files.is_empty() {
            lines.push(format!(
                "kept the record of {} file(s) with a value setup set still there: {}",
                kept.files.len(),
                file.display()
            ));
            append(file, kept)?;
        }
    }
    Ok(lines)
}
