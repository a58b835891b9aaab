//! The record of what setup changed, and `--setup --undo`.
//!
//! The record (`$XDG_STATE_HOME/apply-seccomp/setup.json`, else
//! `~/.local/state/apply-seccomp/setup.json`, mode 0600) holds, for each
//! file setup wrote, its whole text before and after and each value it
//! set; for each link, where it leads. Undo goes backwards through it: a
//! file still as setup left it (the same JSON value: reformatted is not
//! edited) gets its old bytes back (or goes, if setup made it); one edited
//! since keeps the edits and loses only the values setup set that are
//! still what setup set them to; a link goes if
//! it still leads where setup pointed it, and its folder of its own
//! (`.../apply-seccomp`) with it if nothing else is there. Nothing else
//! is touched. The record goes once nothing setup set is left; a value
//! undo could not take back keeps its file's entry.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::edit::{self, Change};
use super::files;
use crate::json::{self, Value};

/// The last name of the link's folder of its own
/// ([`crate::shim::protect::LINK_FOLDER`]).
const LINK_FOLDER_NAME: &str = "apply-seccomp";

/// One file setup wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    /// None: setup made it.
    pub before: Option<String>,
    pub after: String,
    pub changes: Vec<Change>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub files: Vec<FileChange>,
    /// (link, where it leads).
    pub links: Vec<(PathBuf, PathBuf)>,
}

pub fn record_file(home: &Path) -> PathBuf {
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .unwrap_or_else(|| home.join(".local/state"))
        .join("apply-seccomp/setup.json")
}

fn opt(s: &Option<String>) -> String {
    s.as_ref()
        .map_or("null".into(), |s| json::string(s.as_bytes()))
}

fn path_str(p: &Path) -> String {
    json::string(p.as_os_str().as_bytes())
}

impl Record {
    fn to_json(&self) -> String {
        let files: Vec<String> = self
            .files
            .iter()
            .map(|f| {
                let changes: Vec<String> = f
                    .changes
                    .iter()
                    .map(|c| {
                        let path: Vec<String> =
                            c.path.iter().map(|k| json::string(k.as_bytes())).collect();
                        format!(
                            "{{\"path\": [{}], \"before\": {}, \"after\": {}}}",
                            path.join(", "),
                            opt(&c.before),
                            json::string(c.after.as_bytes())
                        )
                    })
                    .collect();
                format!(
                    "    {{\"file\": {}, \"before\": {}, \"after\": {},\n     \"changes\": [{}]}}",
                    path_str(&f.path),
                    opt(&f.before),
                    json::string(f.after.as_bytes()),
                    changes.join(", ")
                )
            })
            .collect();
        let links: Vec<String> = self
            .links
            .iter()
            .map(|(l, t)| format!("    {{\"link\": {}, \"to\": {}}}", path_str(l), path_str(t)))
            .collect();
        format!(
            "{{\"files\": [\n{}\n  ],\n \"links\": [\n{}\n  ]}}\n",
            files.join(",\n"),
            links.join(",\n")
        )
    }

    fn from_json(v: &Value) -> Option<Record> {
        let text = |v: Option<&Value>| match v {
            Some(Value::Null) => Some(None),
            Some(Value::String(s)) => Some(Some(s.clone())),
            _ => None,
        };
        let list = |key: &str| match v.get(key) {
            Some(Value::Array(a)) => Some(a.clone()),
            _ => None,
        };
        let mut record = Record::default();
        for f in list("files")? {
            let mut changes = Vec::new();
            let Some(Value::Array(cs)) = f.get("changes") else {
                return None;
            };
            for c in cs {
                let Some(Value::Array(path)) = c.get("path") else {
                    return None;
                };
                changes.push(Change {
                    path: path
                        .iter()
                        .map(|k| k.as_str().map(str::to_string))
                        .collect::<Option<_>>()?,
                    before: text(c.get("before"))?,
                    after: text(c.get("after"))??,
                });
            }
            record.files.push(FileChange {
                path: PathBuf::from(f.get("file")?.as_str()?),
                before: text(f.get("before"))?,
                after: text(f.get("after"))??,
                changes,
            });
        }
        for l in list("links")? {
            record.links.push((
                PathBuf::from(l.get("link")?.as_str()?),
                PathBuf::from(l.get("to")?.as_str()?),
            ));
        }
        Some(record)
    }
}

/// The record at `file`; an empty one where there is none.
fn load(file: &Path) -> Result<Record, String> {
    let bytes = match crate::settings::read(file) {
        Ok(b) => b,
        Err(crate::settings::Unread::Missing) => return Ok(Record::default()),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    json::parse(&String::from_utf8_lossy(&bytes))
        .ok()
        .and_then(|v| Record::from_json(&v))
        .ok_or_else(|| format!("{}: not a record of setup's: left as it is", file.display()))
}

/// Adds `more` to the record at `file`.
pub fn append(file: &Path, more: Record) -> Result<(), String> {
    if more.files.is_empty() && more.links.is_empty() {
        return Ok(());
    }
    let mut record = load(file)?;
    record.files.extend(more.files);
    record.links.extend(more.links);
    let dir = file.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let fresh = !file.exists();
    files::write_atomic(file, record.to_json().as_bytes())?;
    if fresh {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(())
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
    let current = match crate::settings::read(&f.path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(crate::settings::Unread::Missing) => {
            return Ok(Some((
                format!("left {}: it is gone", f.path.display()),
                None,
            )));
        }
        Err(e) => return Err(format!("{}: {e}", f.path.display())),
    };
    if same(&current, &f.after) {
        let (line, text) = match &f.before {
            Some(before) => {
                let expect = files::Expect::Text(current.as_bytes());
                if !dry_run && !files::write_atomic_if(&f.path, expect, before.as_bytes())? {
                    return Ok(None);
                }
                (
                    format!("{would}restore {} as it was", f.path.display()),
                    None,
                )
            }
            None => {
                if !dry_run && !files::remove_if(&f.path, current.as_bytes())? {
                    return Ok(None);
                }
                (
                    format!("{would}remove {} (setup made it)", f.path.display()),
                    None,
                )
            }
        };
        // In a dry run the file is as it is now.
        return Ok(Some((line, text.or(dry_run.then_some(current)))));
    }
    let mut text = current.clone();
    let mut said = Vec::new();
    for c in f.changes.iter().rev() {
        let path: Vec<&str> = c.path.iter().map(String::as_str).collect();
        let key = c.path.join(".");
        if !edit::get(&text, &path).is_some_and(|v| same(&v, &c.after)) {
            said.push(format!("{key} left (changed since setup)"));
            continue;
        }
        let reverted = match &c.before {
            Some(b) => edit::set(&text, &path, b)?.map(|(t, _)| t),
            None => edit::remove(&text, &path),
        };
        if let Some(t) = reverted {
            text = t;
            said.push(format!("{key} reverted"));
        }
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
    let line = format!(
        "{would}edit {} (changed since setup: the rest kept): {}",
        f.path.display(),
        said.join(", ")
    );
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
        if files::link_target(link).as_deref() == Some(to.as_path()) {
            if !dry_run {
                files::remove(link)?;
            }
            lines.push(format!(
                "{would}remove {} -> {}",
                link.display(),
                to.display()
            ));
            // The link's own folder goes with it, if nothing else is there.
            if let Some(dir) = link.parent().filter(|d| d.ends_with(LINK_FOLDER_NAME)) {
                if !dry_run && std::fs::remove_dir(dir).is_ok() {
                    lines.push(format!("removed {}", dir.display()));
                }
            }
        } else {
            lines.push(format!(
                "left {}: it no longer leads to {}",
                link.display(),
                to.display()
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
