//! The mount guard, run by the outer stub for the whole run.
//!
//! bubblewrap protects a denied path by mounting over it: `--ro-bind
//! /dev/null P` for one that does not exist (bwrap creates P on the host
//! as a mount point), `--ro-bind P P` for one that does. When the host
//! unlinks P, or renames a file over it (another sandbox's clean-up, an
//! editor's atomic save, `git config`), the kernel detaches the mount in
//! every mount namespace, the sandbox's included, and the command can then
//! write the denied path. When P, or a folder above it, is renamed away
//! (an editor saving by renaming the original to a backup; a command's
//! `mv .vscode .vscode.old`), the mount goes with its dentry to the new
//! name, and the path is left unprotected. Nothing inside the sandbox can
//! unmount (the filters refuse it).
//!
//! Before the command starts, [`Guard::start`] reads what bubblewrap was
//! asked to mount (its PID 1's command line, walked by bwrap_args.rs) and
//! watches the folders on the way to each destination for names moved or
//! removed (renames.rs: inotify) and checks that each destination is
//! still the root of a mount (`statx`, `STATX_ATTR_MOUNT_ROOT`: one call
//! each), while init makes its mounts and the worker its filters; the
//! worker execs only once this check held (the stub's key of the gate:
//! supervise/mod.rs). During the run the stub polls `mountinfo` (POLLPRI
//! on every change of the mount table; it is never read) and the
//! watches. That `mountinfo` is bubblewrap's mount namespace's, opened
//! before the helper makes its own (pid1.rs): a host's unlink or rename
//! over a placeholder detaches its mounts in every namespace, so it fires
//! there as in the helper's, while init's own mounts, made in the
//! helper's namespace, wake no check. [`Guard::changed`] and
//! [`Guard::renamed`] look again: an unlinked placeholder is gone, a file
//! renamed over a self-bound one is a plain file, a path renamed away is
//! something else or nothing, and either way the path is no mount root
//! any more. A new mount stacked on a
//! destination (init's fresh `/proc`) leaves it one. The stub then stops
//! the command.
//!
//! Which mounts are watched: where PID 1 is bubblewrap, the mounts at the
//! destinations of its restricting mounts (read-only binds, tmpfs, /dev,
//! /proc, overlays: not the read-write binds, whose loss takes access away,
//! nor a mount a later one covers). Elsewhere none: nothing says which
//! mounts protect anything, and a host's ordinary clean-ups (a container's
//! mount point unmounted and removed) detach mounts in every namespace.

use std::ffi::{CStr, CString, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Instant;

use nix::errno::Errno;
use nix::sys::inotify::Inotify;

use crate::bwrap_args::{self, Mount};
use crate::sys;

mod lost;
mod pid1;
mod renames;
mod summary;

pub use lost::Lost;
pub use pid1::Pid1;
use pid1::cmdline;
use renames::{Affected, Renames};
use summary::Found;

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

/// A destination of a restricting mount.
#[derive(Clone, Debug)]
struct Watched {
    point: Vec<u8>,
    /// The bubblewrap option that made it, e.g. `--ro-bind /dev/null`.
    made_by: String,
    /// A `-try` form: not required to be mounted.
    optional: bool,
    /// Mounted before the command, so watched (not a missing `-try` form,
    /// nor one the stub cannot search).
    active: bool,
}

/// Whether the mount at `point` still holds: the path is a mount root.
/// `None`: it cannot be told (the stub may not search the path's folders).
fn holds(point: &[u8]) -> Option<bool> {
    holds_at(&CString::new(point).ok()?)
}

/// [`holds`], on a path made already: raw calls only, no allocation.
fn holds_at(path: &CStr) -> Option<bool> {
    match sys::is_mount_root(path) {
        Ok(root) => root,
        Err(Errno::ENOENT | Errno::ENOTDIR) => Some(false),
        Err(_) => None,
    }
}

/// What the guard watches, and how it knew.
pub struct Guard {
    proc_dir: OwnedFd,
    /// Polled for changes of the mount table (POLLPRI), never read.
    mountinfo: OwnedFd,
    watched: Vec<Watched>,
    /// The folders on the way to the destinations, watched for renames.
    renames: Option<Renames>,
    /// The inotify instance for them, made before init (or the holder)
    /// starts where that process holds it past the stub's exit (its copy
    /// of the stub's descriptors).
    to_hold: Option<Inotify>,
    /// Who holds that instance past the stub's exit, for `SRT_DEBUG`.
    held_by: Option<&'static str>,
    found: Found,
}

impl Guard {
    /// Where PID 1 is bubblewrap, opens `/proc` and this process's
    /// `mountinfo` (its mount namespace is the command's), and where
    /// another process will hold it past the stub's exit (`held_by`: init,
    /// or the capability-free way's holder) the rename watches' inotify
    /// instance; elsewhere says why there is nothing to guard. Before init
    /// starts: init mounts a new `/proc` over the shared one, and takes a
    /// copy of the instance.
    pub fn open(pid1: Pid1, held_by: Option<&'static str>) -> Result<Guard, String> {
        if !pid1.is_bubblewrap() {
            return Err(
                "PID 1 is not bubblewrap: nothing says which mounts protect anything".into(),
            );
        }
        let proc_dir = sys::open_path(c"/proc", libc::O_PATH | libc::O_DIRECTORY)
            .map_err(|e| format!("/proc: {}", e.desc()))?;
        if !matches!(sys::is_mount_root(c"/"), Ok(Some(true))) {
            return Err("the kernel does not tell mount roots (statx, Linux 5.8)".into());
        }
        let fd = match pid1.into_mountinfo() {
            Some(Ok(fd)) => fd,
            Some(Err(e)) => return Err(format!("/proc/thread-self/mountinfo: {}", e.desc())),
            None => return Err("bubblewrap's mountinfo was not opened".into()),
        };
        // Refused here, the start refuses the run with the same words.
        let to_hold = held_by.and(renames::instance().ok());
        let held_by = held_by.filter(|_| to_hold.is_some());
        Ok(Guard {
            proc_dir,
            mountinfo: fd,
            watched: Vec::new(),
            renames: None,
            to_hold,
            held_by,
            found: Found::default(),
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.mountinfo.as_fd()
    }

    /// The rename watches' instance made for another process to hold
    /// (init, or on the capability-free way the holder), before that
    /// process starts.
    pub fn instance_to_hold(&self) -> Option<BorrowedFd<'_>> {
        self.to_hold.as_ref().map(AsFd::as_fd)
    }

    /// The holder could not be started: the watches go on an instance of
    /// the stub's own, released by the stub as the run ends.
    pub fn keep_instance(&mut self) {
        self.to_hold = None;
        self.held_by = None;
    }

    /// The rename watches, polled for POLLIN.
    pub fn renames_fd(&self) -> Option<BorrowedFd<'_>> {
        self.renames.as_ref().map(Renames::fd)
    }

    /// bubblewrap's arguments: PID 1's command line (its monitor, under
    /// `--unshare-pid`, keeps bubblewrap's own).
    fn bwrap_args(&mut self) -> Result<Vec<OsString>, String> {
        let words =
            cmdline(self.proc_dir.as_fd()).map_err(|e| format!("/proc/1/cmdline: {}", e.desc()))?;
        Ok(words.into_iter().skip(1).collect())
    }

    /// Before the command starts: reads what bubblewrap was asked to mount,
    /// picks what to watch and watches the folders on the way.
    /// [`Guard::check`] then looks at the destinations.
    pub fn start(&mut self) -> Result<(), Lost> {
        self.found.began = Some(Instant::now());
        match self.bwrap_args().and_then(|args| {
            bwrap_args::walk(&args).map_err(|e| format!("bubblewrap's command line: {e}"))
        }) {
            Ok(walk) => self.watch_destinations(&walk.mounts),
            Err(why) => {
                self.found.off = Some(why);
                Ok(())
            }
        }
    }

    fn watch_destinations(&mut self, mounts: &[Mount]) -> Result<(), Lost> {
        let f = &mut self.found;
        let dests: Vec<Vec<u8>> = mounts.iter().map(|m| normalize(&m.dest)).collect();
        for (i, m) in mounts.iter().enumerate() {
            let dest = &dests[i];
            // A read-write bind grants; losing it takes access away.
            if !m.restricts {
                f.adding += 1;
                continue;
            }
            // A later mount at this destination or above it covers this
            // one (srt binds its proxy socket before `--ro-bind / /`): it
            // protects nothing any more.
            if dests[i + 1..].iter().any(|later| covers(later, dest)) {
                f.covered.push(dest.clone());
                continue;
            }
            if m.optional {
                f.optional += 1;
            } else {
                f.required += 1;
            }
            if self.watched.iter().any(|w| &w.point == dest) {
                continue;
            }
            self.watched.push(Watched {
                point: dest.clone(),
                made_by: if m.source.is_empty() {
                    m.option.clone()
                } else {
                    format!("{} {}", m.option, String::from_utf8_lossy(&m.source))
                },
                optional: m.optional,
                active: false,
            });
        }
        // The watches before the check: a rename between the check and the
        // watch would go unseen.
        let watching_since = Instant::now();
        let mut renames = Renames::new(self.to_hold.take())
            .map_err(|e| Lost::unwatchable(format!("inotify_init1: {}", e.desc())))?;
        for (i, w) in self.watched.iter().enumerate() {
            renames
                .watch(&w.point, i, self.proc_dir.as_fd())
                .map_err(|e| Lost::unwatchable(format!("inotify_add_watch: {}", e.desc())))?;
        }
        renames.ready();
        f.watching_took = watching_since.elapsed();
        self.renames = Some(renames);
        Ok(())
    }

    /// After [`Guard::start`]: reports a required destination that is not
    /// mounted; the mounted ones are watched from then on.
    pub fn check(&mut self) -> Result<(), Lost> {
        for w in self.watched.iter_mut() {
            let Ok(path) = CString::new(w.point.clone()) else {
                self.found.unchecked += 1;
                continue;
            };
            match holds_at(&path) {
                Some(true) => w.active = true,
                Some(false) if w.optional => {}
                Some(false) => return Err(Lost::at(&w.point, Some(w.made_by.clone()), true)),
                None => self.found.unchecked += 1,
            }
        }
        self.found.took = self.found.began.map(|t| t.elapsed()).unwrap_or_default();
        Ok(())
    }

    /// The first of `these` watched destinations that is no mount root
    /// any more, if any.
    fn first_lost<'a>(&self, these: impl Iterator<Item = &'a Watched>) -> Option<Lost> {
        these
            .filter(|w| w.active)
            .find(|w| holds(&w.point) == Some(false))
            .map(|w| Lost::at(&w.point, Some(w.made_by.clone()), false))
    }

    /// After a change of the mount table: the first watched destination
    /// that is no mount root any more, if any.
    pub fn changed(&self) -> Option<Lost> {
        self.first_lost(self.watched.iter())
    }

    /// After names moved or removed in a watched folder: the first of the
    /// destinations through them that is no mount root any more, if any.
    pub fn renamed(&self) -> Option<Lost> {
        match self.renames.as_ref()?.affected() {
            Affected::All => self.changed(),
            Affected::Some(these) => {
                self.first_lost(these.iter().filter_map(|&i| self.watched.get(i)))
            }
        }
    }

    /// Whether anything is watched (else the stub need not poll).
    pub fn watching(&self) -> bool {
        self.watched.iter().any(|w| w.active)
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
}
