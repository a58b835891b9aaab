//! What leads to the shim and to what it runs, kept out of a sandboxed
//! command's reach.
//!
//! Clients find the shim by a path (srt's `bwrapPath`) or on `PATH`
//! (Claude Code, and srt without `bwrapPath`); the shim finds the real
//! bubblewrap after its own folder on `PATH`; srt's `applyPath` names
//! this binary on the command line. All of it runs on the host, as the
//! user, for the next command: a name on the way that a command can
//! replace, or a `bwrap` it can add to a folder searched first, runs its
//! program outside every sandbox. So for each name on the way (the route)
//! that lies inside a writable bind of the line, mounts go right after
//! that bind (bubblewrap applies them in order, so the mounts the line
//! makes later inside the same folders still go on top):
//!
//! - a file: `--ro-bind F F`. A mount point can be neither written nor
//!   removed nor renamed over (`EROFS`, `EBUSY`);
//! - each folder between the bind and that name: `--bind D D`, as
//!   writable as before but no longer renamable (a folder moved away
//!   would take the name's protection with it);
//! - a symbolic link: its folder read-only (`--ro-bind D D`), the one
//!   mount that keeps a link from being removed: the fallback, said under
//!   `SRT_DEBUG`;
//! - a name searched on `PATH` where nothing is: `--ro-bind /dev/null P`,
//!   a placeholder the keeper makes, holds and removes (not executable:
//!   no search runs it).
//!
//! The keeper's own folder (its lock) is hidden where a line makes it
//! writable: its empty folder is bound over it, so no command can change
//! the lock's mode and open it. (An extra mount costs bubblewrap ~0.3 ms,
//! 2% of a call, so none is added where nothing needs it.)

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::bwrap_args;

mod steps;

pub use steps::Step;
#[cfg(test)]
pub use steps::steps;
use steps::steps_seen;

/// What protects a `bwrap` link (what `--setup` makes) in a folder a
/// sandboxed command may write, for `--setup` and the doctor to say.
pub const LINK_PROTECTION: &str = "the link's folder is bound read-only inside such a \
     sandbox and the folders above it kept in place, so no command there can remove, replace or \
     move it, nor add a bwrap before it (everything else in that folder is read-only there too: \
     keep the link in a folder of its own, as --setup does)";

/// Where `--setup` makes the `bwrap` link, under the home folder: a
/// folder holding nothing else, so the read-only bind that keeps a link
/// there (a mount cannot be put on a link itself) takes nothing from a
/// command; `~/.local/bin`, where `pip install --user` and others write,
/// would become read-only in every sandbox started in the home folder.
pub const LINK_FOLDER: &str = ".local/lib/apply-seccomp";

/// One mount to add, in the order they go in after one bind: writable
/// folders (kept in place) first, then read-only folders, then the rest;
/// shallow before deep.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Add {
    class: u8,
    depth: usize,
    dest: PathBuf,
    option: &'static str,
    source: PathBuf,
}

const KEEP_IN_PLACE: u8 = 0;
const READ_ONLY_FOLDER: u8 = 1;
const NAME: u8 = 2;

fn add(class: u8, option: &'static str, source: &Path, dest: &Path) -> Add {
    Add {
        class,
        depth: dest.components().count(),
        dest: dest.to_path_buf(),
        option,
        source: source.to_path_buf(),
    }
}

/// A writable bind of the line whose source is a host path.
struct Bind {
    /// The index of its option word; `None`: read from an `--args` file.
    at: Option<usize>,
    /// Its position among the line's mounts.
    order: usize,
    source: PathBuf,
    dest: PathBuf,
}

/// Where the host path `host` can be written from inside: the bind and
/// the path inside the sandbox. None: no writable bind of the line shows
/// it, or a later mount covers it.
fn exposure<'a>(host: &Path, binds: &'a [Bind], dests: &[PathBuf]) -> Option<(&'a Bind, PathBuf)> {
    binds.iter().rev().find_map(|b| {
        let rel = host.strip_prefix(&b.source).ok()?;
        let inside = if rel.as_os_str().is_empty() {
            b.dest.clone()
        } else {
            b.dest.join(rel)
        };
        let covered_later = dests[b.order + 1..].iter().any(|d| inside.starts_with(d));
        (!covered_later).then_some((b, inside))
    })
}

/// Each folder between `bind`'s folder and `inside` (a path under it)
/// that exists on the host, kept in place: bound on itself, as writable
/// as before, but a mount point no command can rename.
fn kept_in_place<'a>(bind: &'a Bind, inside: &'a Path) -> impl Iterator<Item = Add> + 'a {
    inside
        .ancestors()
        .skip(1)
        .take_while(|f| *f != bind.dest && f.starts_with(&bind.dest))
        .filter_map(|f| {
            let src = bind.source.join(f.strip_prefix(&bind.dest).ok()?);
            src.is_dir().then(|| add(KEEP_IN_PLACE, "--bind", &src, f))
        })
}

/// What [`protect`] added, for `SRT_DEBUG`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Protected {
    /// Names bound read-only.
    pub files: Vec<String>,
    /// Links whose folder had to be bound read-only.
    pub folders: Vec<String>,
    /// Names where nothing is, held by a placeholder.
    pub absent: Vec<String>,
    /// Folders kept in place (made mount points, still writable).
    pub kept: usize,
    /// Names that could not be protected, and why.
    pub not: Vec<String>,
    /// The keeper's folder was hidden.
    pub hidden: bool,
}

impl Protected {
    pub fn note(&self) -> String {
        let list = |v: &[String]| v.join(", ");
        let mut parts = Vec::new();
        if !self.files.is_empty() {
            parts.push(format!("read-only: {}", list(&self.files)));
        }
        if !self.folders.is_empty() {
            parts.push(format!(
                "a link, its folder bound read-only (nothing narrower keeps a link): {}",
                list(&self.folders)
            ));
        }
        if !self.absent.is_empty() {
            parts.push(format!(
                "nothing there, a placeholder held: {}",
                list(&self.absent)
            ));
        }
        if self.kept > 0 {
            parts.push(format!("{} folder(s) on the way kept in place", self.kept));
        }
        if !self.not.is_empty() {
            parts.push(format!("NOT protected: {}", list(&self.not)));
        }
        if parts.is_empty() {
            parts.push("nothing on the way is writable in the sandbox".into());
        }
        format!(
            "route protected: {}{}",
            parts.join("; "),
            if self.hidden {
                "; the keeper's folder hidden"
            } else {
                ""
            }
        )
    }
}

/// Adds to `line` (bubblewrap's words after `argv[0]`) the mounts that
/// keep every name of `route` out of the command's reach, and hides the
/// keeper's `folder` (binding its empty folder over it) where the line
/// makes it writable. Err: the line could not be walked (nothing added).
pub fn protect(
    line: &mut Vec<OsString>,
    route: &[PathBuf],
    keeper: Option<&Path>,
) -> Result<Protected, String> {
    let walk = bwrap_args::walk(line).map_err(|e| format!("route not protected: {e}"))?;
    let dests: Vec<PathBuf> = walk.mounts.iter().map(|m| lexical(&m.dest)).collect();
    let binds = writable_binds(&walk, &dests);
    let mut done = Protected::default();
    // Insertion index -> mounts to add there.
    let mut adds = route_kept(route, (&binds, &dests), &mut done);
    if let Some(folder) = keeper {
        adds.extend(keeper_hidden(folder, (&binds, &dests), &mut done));
    }
    // A folder bound read-only is not also bound writable after it.
    let read_only: Vec<(usize, PathBuf)> = adds
        .iter()
        .filter(|(_, a)| a.class == READ_ONLY_FOLDER)
        .map(|(at, a)| (*at, a.dest.clone()))
        .collect();
    adds.retain(|(at, a)| a.class != KEEP_IN_PLACE || !read_only.contains(&(*at, a.dest.clone())));
    adds.sort();
    adds.dedup();
    done.kept = adds
        .iter()
        .filter(|(_, a)| a.class == KEEP_IN_PLACE)
        .count();
    insert(line, &adds);
    Ok(done)
}

/// The line's binds that make a host path writable, with their sources
/// as the host resolves them and their places (`dests`: every mount's
/// destination, lexically).
fn writable_binds(walk: &bwrap_args::Walk, dests: &[PathBuf]) -> Vec<Bind> {
    walk.mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| m.binds_host_path_writable())
        .map(|(order, m)| {
            let source = lexical(&m.source);
            Bind {
                at: m.at,
                order,
                source: std::fs::canonicalize(&source).unwrap_or(source),
                dest: dests[order].clone(),
            }
        })
        .collect()
}

/// The mounts that keep each name on the route (steps.rs: every name on
/// the way, each link met) out of reach where a writable bind shows it:
/// a file bound read-only over itself, a link's folder bound read-only,
/// a missing name held by `/dev/null`; what cannot be kept said in
/// `done`.
fn route_kept(
    route: &[PathBuf],
    (binds, dests): (&[Bind], &[PathBuf]),
    done: &mut Protected,
) -> Vec<(usize, Add)> {
    let mut adds = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut looked = Vec::new();
    let mut route = route.to_vec();
    route.dedup();
    let all: Vec<Step> = route
        .iter()
        .flat_map(|p| steps_seen(p, &mut looked))
        .collect();
    for step in all {
        let host = match &step {
            Step::Link(p) | Step::File(p) | Step::Absent(p) => p.clone(),
        };
        if seen.contains(&host) {
            continue;
        }
        seen.push(host.clone());
        let Some((bind, inside)) = exposure(&host, binds, dests) else {
            continue;
        };
        let shown = host.display().to_string();
        let Some(at) = bind.at.map(|a| a + 3) else {
            done.not
                .push(format!("{shown} (its bind comes from an --args file)"));
            continue;
        };
        if inside == bind.dest {
            // The name is the bind itself (a file bound writable).
            if let Step::File(_) = step {
                adds.push((at, add(NAME, "--ro-bind", &host, &inside)));
                done.files.push(shown);
            }
            continue;
        }
        adds.extend(kept_in_place(bind, &inside).map(|a| (at, a)));
        match step {
            Step::File(_) => {
                adds.push((at, add(NAME, "--ro-bind", &host, &inside)));
                done.files.push(shown);
            }
            Step::Link(_) => {
                let (Some(src), Some(dst)) = (host.parent(), inside.parent()) else {
                    continue;
                };
                adds.push((at, add(READ_ONLY_FOLDER, "--ro-bind", src, dst)));
                done.folders.push(shown);
            }
            Step::Absent(_) => {
                adds.push((at, add(NAME, "--ro-bind", Path::new("/dev/null"), &inside)));
                done.absent.push(shown);
            }
        }
    }
    adds
}

/// The keeper's folder, where the line makes it writable: hidden under
/// an empty folder (elsewhere the lock's mode keeps a command out,
/// keep/folder.rs).
fn keeper_hidden(
    folder: &Path,
    (binds, dests): (&[Bind], &[PathBuf]),
    done: &mut Protected,
) -> Vec<(usize, Add)> {
    let mut adds = Vec::new();
    match exposure(folder, binds, dests) {
        Some((bind, _)) if bind.at.is_none() => done.not.push(format!(
            "{} (its bind comes from an --args file)",
            folder.display()
        )),
        Some((bind, inside)) => {
            let at = bind.at.map_or(0, |a| a + 3);
            adds.extend(kept_in_place(bind, &inside).map(|a| (at, a)));
            match super::keep::empty_dir(folder) {
                Ok(empty) => {
                    adds.push((at, add(NAME, "--ro-bind", &empty, &inside)));
                    done.hidden = true;
                }
                Err(e) => done
                    .not
                    .push(format!("{} ({})", folder.display(), e.desc())),
            }
        }
        None => {}
    }
    adds
}

/// The mounts put on the line, each after the bind it follows; from the
/// last insertion point back, so earlier indices hold.
fn insert(line: &mut Vec<OsString>, adds: &[(usize, Add)]) {
    let mut points: Vec<usize> = adds.iter().map(|(at, _)| *at).collect();
    points.dedup();
    for at in points.into_iter().rev() {
        let words = adds.iter().filter(|(a, _)| *a == at).flat_map(|(_, a)| {
            [
                OsString::from(a.option),
                a.source.clone().into_os_string(),
                a.dest.clone().into_os_string(),
            ]
        });
        let tail = line.split_off(at);
        line.extend(words);
        line.extend(tail);
    }
}

/// `.` and `..` folded in text, and no trailing `/` (also the doctor's,
/// for a path that does not exist).
pub fn lexical(p: impl AsRef<[u8]>) -> PathBuf {
    let p = Path::new(std::ffi::OsStr::from_bytes(p.as_ref()));
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests;
