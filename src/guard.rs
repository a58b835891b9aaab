//! The mount guard, run by the outer stub for the whole run.
//!
//! bubblewrap protects a denied path by mounting over it: `--ro-bind
//! /dev/null P` for one that does not exist (bwrap creates P on the host
//! as a mount point), `--ro-bind P P` for one that does. When the host
//! unlinks P, or renames a file over it (another sandbox's clean-up, an
//! editor's atomic save, `git config`), the kernel detaches the mount in
//! every mount namespace, the sandbox's included, and the command can then
//! write the denied path. Nothing inside the sandbox can unmount (the
//! filters refuse it), so a mount that vanishes was removed from outside.
//!
//! Before the command starts, [`Guard::start`] reads what bubblewrap was
//! asked to mount (its PID 1's command line, walked by bwrap_args.rs) and
//! checks that each destination is still the root of a mount (`statx`,
//! `STATX_ATTR_MOUNT_ROOT`: one call each). During the run the stub polls
//! the namespace's `mountinfo` (POLLPRI on every change of the mount
//! table; it is never read) and [`Guard::changed`] looks again: an
//! unlinked placeholder is gone, a file renamed over a self-bound one is
//! a plain file, and either way the path is no mount root any more. A new
//! mount stacked on a destination (init's fresh `/proc`) leaves it one.
//! The stub then stops the command.
//!
//! Which mounts are watched: where PID 1 is bubblewrap, the mounts at the
//! destinations of its restricting mounts (read-only binds, tmpfs, /dev,
//! /proc, overlays: not the read-write binds, whose loss takes access away,
//! Which mounts are watched: where PID 1 is bubblewrap, the mounts at the
//! destinations of its restricting mounts (read-only binds, tmpfs, /dev,
//! /proc, overlays: not the read-write binds, whose loss takes access away,
//! nor a mount a later one covers). Elsewhere none: nothing says which
//! mounts protect anything, and a host's ordinary clean-ups (a container's
//! mount point unmounted and removed) detach mounts in every namespace.

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, open, openat, readlinkat};
use nix::sys::stat::Mode;

use crate::bwrap_args::{self, Mount};
use crate::json;
use crate::sys;

/// PID 1's command line, word by word.
fn cmdline(proc_dir: BorrowedFd<'_>) -> std::io::Result<Vec<OsString>> {
    use std::io::Read;
    let mut text = Vec::new();
    let fd = openat(
        proc_dir,
        "1/cmdline",
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    std::fs::File::from(fd).read_to_end(&mut text)?;
    if text.last() == Some(&0) {
        text.pop();
    }
    Ok(text
        .split(|&b| b == 0)
        .map(|w| OsString::from_vec(w.to_vec()))
        .collect())
}

/// Whether PID 1 of this PID namespace is bubblewrap: its executable (or,
/// where that link is closed to this process, its `argv[0]`) is named
/// `bwrap`.
fn pid1_is_bwrap(proc_dir: BorrowedFd<'_>) -> bool {
    let named_bwrap = |p: &std::ffi::OsStr| Path::new(p).file_name().is_some_and(|n| n == "bwrap");
    match readlinkat(proc_dir, "1/exe") {
        Ok(exe) => named_bwrap(&exe),
        Err(_) => cmdline(proc_dir)
            .ok()
            .and_then(|w| w.into_iter().next())
            .is_some_and(|argv0| named_bwrap(&argv0)),
    }
}

/// A destination as the kernel names the mount point: absolute, no empty
/// or `.` components, no trailing slash.
fn normalize(dest: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(dest.len() + 1);
    for part in dest.split(|&b| b == b'/') {
        if part.is_empty() || part == b"." {
            continue;
        }
        out.push(b'/');
        out.extend_from_slice(part);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

/// Whether a mount at `later` covers one at `earlier`: the same place,
/// or a folder above it.
fn covers(later: &[u8], earlier: &[u8]) -> bool {
    later == earlier
        || later == b"/"
        || (earlier.starts_with(later) && earlier.get(later.len()) == Some(&b'/'))
}

/// A watched destination.
#[derive(Clone, Debug)]
struct Watched {
    point: Vec<u8>,
    /// The bubblewrap option that made it, e.g. `--ro-bind /dev/null`.
    made_by: String,
}

/// Whether the mount at `point` still holds: the path is a mount root.
/// `None`: it cannot be told (the stub may not search the path's folders).
fn holds(point: &[u8]) -> Option<bool> {
    let path = std::ffi::CString::new(point).ok()?;
    match sys::is_mount_root(&path) {
        Ok(root) => root,
        Err(Errno::ENOENT | Errno::ENOTDIR) => Some(false),
        Err(_) => None,
    }
}

/// A protection that no longer holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lost {
    pub path: Vec<u8>,
    /// The bubblewrap option that made the mount, when known.
    pub made_by: Option<String>,
    /// Found before the command started (it never ran).
    pub before_start: bool,
    /// Something is at the path now, as the sandbox sees it: the host's
    /// file, or what was written while it was unprotected.
    pub exists_now: bool,
}

impl Lost {
    fn at(path: &[u8], made_by: Option<String>, before_start: bool) -> Lost {
        let mut lost = Lost {
            path: path.to_vec(),
            made_by,
            before_start,
            exists_now: false,
        };
        lost.look_again();
        lost
    }

    /// Looks at the path again: the stub calls this once the command's
    /// tree is gone, when nothing can change it any more from inside. The
    /// name is looked for in a listing of its folder: the detach that woke
    /// the stub comes before the unlink or rename has finished, and
    /// listing the folder waits for it (both hold the folder's lock),
    /// where a lookup might still find the old entry.
    pub fn look_again(&mut self) {
        let path = PathBuf::from(OsString::from_vec(self.path.clone()));
        self.exists_now = match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) => match std::fs::read_dir(dir) {
                Ok(entries) => entries.flatten().any(|e| e.file_name() == name),
                Err(_) => std::fs::symlink_metadata(&path).is_ok(),
            },
            _ => std::fs::symlink_metadata(&path).is_ok(),
        };
    }

    /// The helper's message (main.rs prints it).
    pub fn message(&self) -> String {
        let path = String::from_utf8_lossy(&self.path);
        let what = match &self.made_by {
            Some(option) => format!("{path} (bubblewrap's {option} {path})"),
            None => path.to_string(),
        };
        let mut text = format!(
            "apply-seccomp: mount guard: {what} is no longer mounted in the sandbox: it was \
             removed from outside (another sandbox's clean-up, or a file replaced or deleted \
             on the host), so the protection it gave no longer held; {}. Running the command \
             again is safe.",
            if self.before_start {
                "the command did not run"
            } else {
                "the command was stopped"
            }
        );
        if self.exists_now && !self.before_start {
            text.push_str(&format!(
                "\napply-seccomp: mount guard: {path} exists now: it may have been written \
                 while unprotected; look at it."
            ));
        }
        text
    }

    /// The line for the observation socket.
    pub fn json(&self, encoded_cmd: Option<&str>) -> String {
        let mut line = format!(
            "{{\"mount_guard\":\"lost\",\"path\":{},\"before_start\":{},\"exists_now\":{}",
            json::string(&self.path),
            self.before_start,
            self.exists_now
        );
        if let Some(cmd) = encoded_cmd {
            line.push_str(",\"encodedCommand\":");
            line.push_str(cmd);
        }
        line.push_str("}\n");
        line
    }
}

/// What the guard watches, and how it knew.
pub struct Guard {
    proc_dir: OwnedFd,
    /// Polled for changes of the mount table (POLLPRI), never read.
    mountinfo: OwnedFd,
    watched: Vec<Watched>,
    /// For `SRT_DEBUG`.
    pub summary: String,
}

impl Guard {
    /// Where PID 1 is bubblewrap, opens `/proc` and this process's
    /// `mountinfo` (its mount namespace is the command's); elsewhere says
    /// why there is nothing to guard. Before init starts: init mounts a
    /// new `/proc` over the shared one.
    pub fn open() -> Result<Guard, String> {
        let proc_dir = open(
            "/proc",
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("/proc: {}", e.desc()))?;
        if !pid1_is_bwrap(proc_dir.as_fd()) {
            return Err(
                "PID 1 is not bubblewrap: nothing says which mounts protect anything".into(),
            );
        }
        if !matches!(sys::is_mount_root(c"/"), Ok(Some(true))) {
            return Err("the kernel does not tell mount roots (statx, Linux 5.8)".into());
        }
        let fd = openat(
            proc_dir.as_fd(),
            "thread-self/mountinfo",
            OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("/proc/thread-self/mountinfo: {}", e.desc()))?;
        Ok(Guard {
            proc_dir,
            mountinfo: fd,
            watched: Vec::new(),
            summary: String::new(),
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.mountinfo.as_fd()
    }

    /// bubblewrap's arguments: PID 1's command line (its monitor, under
    /// `--unshare-pid`, keeps bubblewrap's own).
    fn bwrap_args(&self) -> Result<Vec<OsString>, String> {
        let words = cmdline(self.proc_dir.as_fd())
            .map_err(|e| format!("/proc/1/cmdline: {}", crate::error::strerror(&e)))?;
        Ok(words.into_iter().skip(1).collect())
    }

    /// Before the command starts: reads what bubblewrap was asked to mount,
    /// picks what to watch, and reports a required destination that is
    /// not mounted.
    pub fn start(&mut self) -> Result<(), Lost> {
        match self.bwrap_args().and_then(|args| {
            bwrap_args::walk(&args).map_err(|e| format!("bubblewrap's command line: {e}"))
        }) {
            Ok(walk) => self.watch_destinations(&walk.mounts),
            Err(why) => {
                self.summary =
                    format!("mount guard: off ({why}: nothing says which mounts protect anything)");
                Ok(())
            }
        }
    }

    fn watch_destinations(&mut self, mounts: &[Mount]) -> Result<(), Lost> {
        let (mut required, mut optional, mut adding, mut unchecked) = (0, 0, 0, 0);
        let mut covered = Vec::new();
        let dests: Vec<Vec<u8>> = mounts.iter().map(|m| normalize(&m.dest)).collect();
        for (i, m) in mounts.iter().enumerate() {
            let dest = &dests[i];
            // A read-write bind grants; losing it takes access away.
            if !m.restricts {
                adding += 1;
                continue;
            }
            // A later mount at this destination or above it covers this
            // one (srt binds its proxy socket before `--ro-bind / /`): it
            // protects nothing any more.
            if dests[i + 1..].iter().any(|later| covers(later, dest)) {
                covered.push(String::from_utf8_lossy(dest).into_owned());
                continue;
            }
            let made_by = if m.source.is_empty() {
                m.option.clone()
            } else {
                format!("{} {}", m.option, String::from_utf8_lossy(&m.source))
            };
            if m.optional {
                optional += 1;
            } else {
                required += 1;
            }
            match holds(dest) {
                Some(true) => {}
                Some(false) if m.optional => continue,
                Some(false) => return Err(Lost::at(dest, Some(made_by), true)),
                None => {
                    unchecked += 1;
                    continue;
                }
            }
            if !self.watched.iter().any(|w| &w.point == dest) {
                self.watched.push(Watched {
                    point: dest.clone(),
                    made_by,
                });
            }
        }
        self.summary = format!(
            "mount guard: {} destinations of bubblewrap's restricting mounts watched; all \
             {required} required ones mounted before the command ({optional} -try forms not \
             required, {adding} read-write binds not watched, {unchecked} not searchable, {} \
             covered by a later mount{}{})",
            self.watched.len(),
            covered.len(),
            if covered.is_empty() {
                ""
            } else {
                ", so protecting nothing in this sandbox: "
            },
            covered.join(", ")
        );
        Ok(())
    }

    /// After a change of the mount table: the first watched destination
    /// that is no mount root any more, if any.
    pub fn changed(&self) -> Option<Lost> {
        self.watched
            .iter()
            .find(|w| holds(&w.point) == Some(false))
            .map(|w| Lost::at(&w.point, Some(w.made_by.clone()), false))
    }

    /// Whether anything is watched (else the stub need not poll).
    pub fn watching(&self) -> bool {
        !self.watched.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_are_named_as_the_kernel_names_mount_points() {
        assert_eq!(normalize(b"/w//x/./y/"), b"/w/x/y");
        assert_eq!(normalize(b"w"), b"/w");
        assert_eq!(normalize(b"/"), b"/");
        assert_eq!(normalize(b""), b"/");
    }

    #[test]
    fn a_later_mount_at_or_above_covers_an_earlier_one() {
        assert!(covers(b"/", b"/tmp/x.sock"));
        assert!(covers(b"/w", b"/w/.git"));
        assert!(covers(b"/w", b"/w"));
        assert!(!covers(b"/w", b"/wx"));
        assert!(!covers(b"/w/.git", b"/w"));
    }

    #[test]
    fn the_message_says_where_when_and_what_to_do() {
        let lost = Lost {
            path: b"/w/.bashrc".to_vec(),
            made_by: Some("--ro-bind /dev/null".into()),
            before_start: false,
            exists_now: true,
        };
        let text = lost.message();
        assert!(text.starts_with(
            "apply-seccomp: mount guard: /w/.bashrc (bubblewrap's --ro-bind /dev/null \
             /w/.bashrc) is no longer mounted in the sandbox: it was removed from outside"
        ));
        assert!(text.contains("the command was stopped"), "{text}");
        assert!(text.contains("Running the command again is safe"), "{text}");
        assert!(
            text.contains("/w/.bashrc exists now: it may have been written"),
            "{text}"
        );
        let before = Lost {
            before_start: true,
            ..lost
        };
        let text = before.message();
        assert!(text.contains("the command did not run"), "{text}");
        assert!(!text.contains("exists now"), "{text}");
        assert_eq!(
            before.json(Some("\"eA==\"")),
            "{\"mount_guard\":\"lost\",\"path\":\"/w/.bashrc\",\"before_start\":true,\
             \"exists_now\":true,\"encodedCommand\":\"eA==\"}\n"
        );
    }
}
