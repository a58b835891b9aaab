//! The names on the way from a path to the file it leads to: each link
//! met, and the file or where nothing is (protect.rs keeps them out of a
//! command's reach). Each name is looked at once for all of a line's
//! route: its paths share folders.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::walk::push_components;

/// A name on the way from a path to the file it leads to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A symbolic link, where it is (its folder's links resolved).
    Link(PathBuf),
    /// The file the path leads to.
    File(PathBuf),
    /// Nothing is there: a name a search may find later.
    Absent(PathBuf),
}

/// What one name on the host is, as `steps_seen` looks (each looked at once
/// for all of a line's route: the folders its paths share).
#[derive(Clone, Debug)]
pub(super) enum Seen {
    Folder,
    File,
    Link(PathBuf),
    Absent,
    Unknown,
}

fn look(path: &Path, seen: &mut Vec<(PathBuf, Seen)>) -> Seen {
    if let Some((_, s)) = seen.iter().find(|(p, _)| p == path) {
        return s.clone();
    }
    let s = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Seen::Absent,
        Err(_) => Seen::Unknown,
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::read_link(path).map_or(Seen::Unknown, Seen::Link)
        }
        Ok(m) if m.is_dir() => Seen::Folder,
        Ok(_) => Seen::File,
    };
    seen.push((path.to_path_buf(), s.clone()));
    s
}

/// The names on the way from the absolute `path` to the file it leads
/// to: each link met, then the file or where nothing is. Empty where the
/// way cannot be told (a folder, a loop of links, a name unreadable).
#[cfg(test)]
pub fn steps(path: &Path) -> Vec<Step> {
    steps_seen(path, &mut Vec::new())
}

pub(super) fn steps_seen(path: &Path, seen: &mut Vec<(PathBuf, Seen)>) -> Vec<Step> {
    let mut out = Vec::new();
    if !path.is_absolute() {
        return out;
    }
    let mut todo: Vec<OsString> = Vec::new();
    push_components(&mut todo, path);
    let mut here = PathBuf::from("/");
    let mut links = 0;
    while let Some(name) = todo.pop() {
        if name == ".." {
            here.pop();
            continue;
        }
        let next = here.join(&name);
        match look(&next, seen) {
            Seen::Absent => {
                let mut absent = next;
                while let Some(rest) = todo.pop() {
                    absent.push(rest);
                }
                out.push(Step::Absent(absent));
                return out;
            }
            Seen::Unknown => return Vec::new(),
            Seen::Link(target) => {
                links += 1;
                if links > 40 {
                    return Vec::new();
                }
                out.push(Step::Link(next));
                if target.is_absolute() {
                    here = PathBuf::from("/");
                }
                push_components(&mut todo, &target);
            }
            Seen::Folder => here = next,
            Seen::File if todo.is_empty() => {
                out.push(Step::File(next));
                return out;
            }
            Seen::File => return Vec::new(),
        }
    }
    Vec::new()
}
