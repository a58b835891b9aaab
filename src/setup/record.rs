//! The record of what setup changed (undo.rs reads it): where it lies,
//! and its JSON form.
//!
//! It lies (mode 0600) in the shim's keeper's folder
//! (shim/keep/folder.rs): `.local/state/apply-seccomp` in the home folder
//! of the user's passwd entry (never `$HOME` nor `$XDG_STATE_HOME`, no
//! link on the way; else `/tmp/apply-seccomp-UID`), which the shim hides
//! in any sandbox whose line could write it: `setup.json` there for a
//! setup of that home, one named after any other home setup was given
//! (`HOME=...`). It holds, for each file setup wrote, its text before and
//! after and each value it set; for each link, where it leads.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::edit::Change;
use super::files;
use crate::json::{self, Value};

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

/// Where the record of a setup for the home folder `home` lies: in the
/// keeper's folder (made where missing), `setup.json` for the home of the
/// user's passwd entry (where the package's prerm looks), a name of its
/// own for any other (a scratch `HOME`), so that one's undo never takes
/// back the other's.
///
/// The keeper's folder falls back to `/tmp/apply-seccomp-UID` where the
/// passwd home holds none; a record follows it only where that home is
/// not the user's own (uid 65534's `/nonexistent`): where it is, the
/// fallback means a link or a folder this user cannot enter on the way,
/// which a sandboxed command that could write the home may have made
/// (`chmod 0 ~/.local`) to move the record where it could write one.
pub fn record_file(home: &Path) -> Result<PathBuf, String> {
    let keeper = crate::shim::keep::folder().map_err(|e| e.why)?;
    let own_home = crate::shim::keep::own_home();
    if let Some(h) = own_home.as_deref().filter(|h| !keeper.starts_with(h)) {
        return Err(format!(
            "the keeper's folder should be {}/.local/state/apply-seccomp, but a link, or a folder \
             you cannot enter, lies on the way there (a sandboxed command that can write your \
             home may have made it): setup keeps its record nowhere else; make {}/.local and \
             {}/.local/state plain folders of yours and run it again",
            h.display(),
            h.display(),
            h.display()
        ));
    }
    if own_home.as_deref() == Some(home) {
        return Ok(keeper.join("setup.json"));
    }
    // FNV-1a of the path: a name, not a secret (no sandbox can write the
    // keeper's folder).
    let hash = home
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    Ok(keeper.join(format!("setup-{hash:016x}.json")))
}

/// Where earlier builds kept the record (`$XDG_STATE_HOME`, `$HOME`),
/// if one is there and is not `record`: it is not read (a sandbox could
/// have written it), and the line says so.
pub fn elsewhere(record: &Path) -> Option<String> {
    let mut places: Vec<PathBuf> = Vec::new();
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").map(PathBuf::from) {
        places.push(state.join("apply-seccomp/setup.json"));
    }
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        places.push(home.join(".local/state/apply-seccomp/setup.json"));
    }
    places
        .into_iter()
        .filter(|p| p.is_absolute() && p != record)
        .find(|p| std::fs::symlink_metadata(p).is_ok())
        .map(|p| {
            format!(
                "not read: {} (a record outside the keeper's folder, where a sandboxed command \
                 may have written it; take back by hand what it names, then remove it)",
                printable(&p)
            )
        })
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
pub(super) fn load(file: &Path) -> Result<Record, String> {
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
    // Its folder, the keeper's, was made by record_file.
    let fresh = !file.exists();
    files::write_atomic(file, record.to_json().as_bytes())?;
    if fresh {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(())
}

/// A path or value for setup's and undo's lines: no byte that steers a terminal
/// (the record's text may be anyone's; prerm shows it to root).
pub(super) fn printable(p: &Path) -> String {
    p.display()
        .to_string()
        .chars()
        .take(300)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}
