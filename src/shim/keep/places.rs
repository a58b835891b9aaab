//! The places on a bubblewrap line that are placeholders: what the keeper
//! (mod.rs) makes and holds.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use super::Kind;
use super::mark::DIR_MARK;
use crate::bwrap_args;

/// One place on the line.
#[derive(Clone, Debug)]
pub struct Place {
    /// The index of the source word on the line; `None` for a folder
    /// made above a place (no word of its own).
    pub source_at: Option<usize>,
    pub dest: Vec<u8>,
    /// The kind the line asks for; for a self-bind, a folder where another
    /// place lies below it, else a file (made so only if it vanished).
    pub kind: Kind,
    /// `--ro-bind P P`.
    pub self_bind: bool,
    /// Another place lies below it.
    pub above: bool,
}

/// The parent folder of `path` and the name in it.
pub fn split(path: &[u8]) -> Option<(&[u8], &[u8])> {
    let cut = path.iter().rposition(|&b| b == b'/')?;
    let name = &path[cut + 1..];
    if name.is_empty() || name == b"." || name == b".." {
        return None;
    }
    Some((if cut == 0 { &b"/"[..] } else { &path[..cut] }, name))
}

/// The places on a line: the `--ro-bind` options whose source is
/// `/dev/null`, an empty folder, or their destination; the missing
/// folders above them. Shallow first, so a folder is made before what
/// goes in it.
pub fn places(args: &[OsString]) -> Vec<Place> {
    let Ok(walk) = bwrap_args::walk(args) else {
        return Vec::new();
    };
    // A source folder is looked into once (clients bind one empty folder
    // on every folder place).
    let mut empty_sources: Vec<(Vec<u8>, bool)> = Vec::new();
    let mut is_empty_folder = |source: &[u8]| -> bool {
        if let Some((_, empty)) = empty_sources.iter().find(|(s, _)| s == source) {
            return *empty;
        }
        let empty =
            std::fs::read_dir(OsStr::from_bytes(source)).is_ok_and(|mut d| d.next().is_none());
        empty_sources.push((source.to_vec(), empty));
        empty
    };
    let mut places: Vec<Place> = walk
        .mounts
        .iter()
        .filter(|m| m.option == "--ro-bind" && m.dest.starts_with(b"/"))
        .filter(|m| split(&m.dest).is_some())
        .filter_map(|m| {
            let kind = if m.source == b"/dev/null" || m.source == m.dest {
                Kind::File
            } else if is_empty_folder(&m.source) {
                Kind::Dir
            } else {
                return None;
            };
            Some(Place {
                source_at: Some(m.at? + 1),
                dest: m.dest.clone(),
                kind,
                self_bind: m.source == m.dest,
                above: false,
            })
        })
        .collect();
    // A missing folder above a place is a folder placeholder too, else
    // bubblewrap makes it and no one removes it (srt may name
    // `.claude/commands` on a line built while `.claude` was there); so
    // is one there that is a placeholder of the shim's (made so by an
    // earlier run), else it would outlive its last run.
    // Each folder is looked at once: `stops` are those found to be there
    // and not the shim's.
    let mut missing: Vec<Vec<u8>> = Vec::new();
    let mut stops: Vec<Vec<u8>> = Vec::new();
    for p in &places {
        let mut at = split(&p.dest).map(|(f, _)| f.to_vec());
        while let Some(folder) = at {
            if missing.contains(&folder)
                || stops.contains(&folder)
                || places.iter().any(|q| q.dest == folder)
            {
                break;
            }
            if std::fs::symlink_metadata(OsStr::from_bytes(&folder)).is_ok()
                && !marked_folder(&folder)
            {
                stops.push(folder);
                break;
            }
            at = split(&folder).map(|(f, _)| f.to_vec());
            missing.push(folder);
        }
    }
    places.extend(missing.into_iter().map(|dest| Place {
        source_at: None,
        dest,
        kind: Kind::Dir,
        self_bind: false,
        above: false,
    }));
    // A place with another below it is a folder (a self-bind's kind is
    // known by that alone).
    for i in 0..places.len() {
        let below = [&places[i].dest[..], b"/"].concat();
        if places.iter().any(|q| q.dest.starts_with(&below)) {
            places[i].above = true;
            places[i].kind = Kind::Dir;
        }
    }
    places.sort_by_key(|p| p.dest.iter().filter(|&&b| b == b'/').count());
    places
}

/// `folder` is a folder (not a link) holding the shim's mark: one of its
/// placeholders, as far as a look tells (taking it checks again).
fn marked_folder(folder: &[u8]) -> bool {
    let mark = [folder, b"/", DIR_MARK.to_bytes()].concat();
    std::fs::symlink_metadata(OsStr::from_bytes(folder)).is_ok_and(|m| m.is_dir())
        && std::fs::symlink_metadata(OsStr::from_bytes(&mark)).is_ok_and(|m| m.is_file())
}
