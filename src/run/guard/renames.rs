//! The folders on the way to each watched destination, watched for names
//! moved or removed (inotify), in the stub.
//!
//! A rename moves a mount together with its dentry and changes no mount
//! table: when the host renames a self-bound `.bashrc` to `.bashrc.bak`
//! (an editor's save), the sandbox's read-only mount goes with it, and a
//! new `.bashrc` is unprotected; when a command renames a folder above a
//! destination that nothing pins (`mv .vscode .vscode.old`), it can make
//! the folder again and write the denied file. The mount table never
//! changes, so the guard's poll of `mountinfo` never wakes. inotify does:
//! a watch on a folder reports every name moved or removed in it, by any
//! process in any mount namespace (it watches the inode).
//!
//! Each destination's folders are watched from `/` down, along the path as
//! bubblewrap was given it and along the path its folder resolves to (so
//! a renamed link target is seen too), each with the name that leads on;
//! an event on a name checks again only the destinations that pass
//! through it. A folder that goes, or a queue that overflowed, checks
//! every destination through it, or every one.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, OFlag, openat, readlinkat};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use nix::sys::stat::Mode;

/// What a watched folder reports: a name moved away or in, or removed;
/// the folder itself removed or moved.
fn events() -> AddWatchFlags {
    AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR
}

/// Which destinations to check again.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Affected {
    /// These (indices into the guard's list).
    Some(Vec<usize>),
    /// Every one: events were lost.
    All,
}

/// The watches, and for each watched folder the names in it on the way
/// to a destination. Plain sorted lists, no hash maps: a run's code and
/// start-up stay small (std's hash maps seed themselves from the kernel).
pub(super) struct Renames {
    inotify: Inotify,
    /// `(watch, name, destination)`, sorted once every watch is made.
    names: Vec<(WatchDescriptor, Vec<u8>, usize)>,
    /// The watch of each folder path asked for, so each is asked once;
    /// `None`: it could not be watched (no read permission on it).
    asked: Vec<(Vec<u8>, Option<WatchDescriptor>)>,
    /// Each destination folder's resolved path, asked once.
    resolved: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Folders that could not be watched, for `SRT_DEBUG`.
    pub(super) unwatched: usize,
    /// Another process holds the instance too (init where it outlives the
    /// stub, plan.rs; the capability-free way's holder, supervise/holder.rs)
    /// and releases it after the stub's exit: nothing to wait for here.
    held_elsewhere: bool,
}

/// Closing an inotify instance that still has watches waits for the
/// kernel's fsnotify grace period (`synchronize_srcu`): 10-15 ms here, on
/// every guarded run's exit, which bubblewrap's exit then waits for. Where
/// init or the capability-free way's holder holds the instance too, the
/// stub's close is not the last and costs nothing. Otherwise (no holder
/// could be started): with the watches removed first and the stub off the
/// CPU for a moment (a sleep of a nanosecond: one
/// timer-slack wait, 60-180 us), the close takes 50-150 us: measured slow
/// in 95 of 100 closes without, 1 of 100 with (a busy wait of 1 ms does
/// not help, nor removing the watches earlier and then blocking in `poll`
/// until init's exit: 20 ms a run again; the sleep does).
impl Drop for Renames {
    fn drop(&mut self) {
        if self.held_elsewhere {
            return;
        }
        let mut removed = false;
        for (_, wd) in &self.asked {
            if let Some(wd) = wd {
                removed |= self.inotify.rm_watch(*wd).is_ok();
            }
        }
        if removed {
            std::thread::sleep(std::time::Duration::from_nanos(1));
        }
    }
}

/// An inotify instance for the watches: close-on-exec (init's copy never
/// reaches the command), non-blocking (the stub drains it after a poll).
pub(super) fn instance() -> Result<Inotify, Errno> {
    Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK)
}

/// `(folder, name)` for each component of the absolute, normalised
/// `path`: `/a/b` gives `("/", "a")`, `("/a", "b")`.
fn steps(path: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < path.len() {
            let start = at + 1;
            let end = path[start..]
                .iter()
                .position(|&b| b == b'/')
                .map_or(path.len(), |i| start + i);
            let folder = if at == 0 { &b"/"[..] } else { &path[..at] };
            at = end;
            if end > start {
                return Some((folder, &path[start..end]));
            }
        }
        None
    })
}

impl Renames {
    /// The watches, on `held` (an instance made before init or the holder
    /// started, which holds a copy) or on a new instance.
    pub(super) fn new(held: Option<Inotify>) -> Result<Renames, Errno> {
        let held_elsewhere = held.is_some();
        let inotify = match held {
            Some(inotify) => inotify,
            None => instance()?,
        };
        Ok(Renames {
            inotify,
            names: Vec::new(),
            asked: Vec::new(),
            resolved: Vec::new(),
            unwatched: 0,
            held_elsewhere,
        })
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.inotify.as_fd()
    }

    /// The path `folder` resolves to, through the caller's `/proc`
    /// (`proc_dir`): opened, then its descriptor's link read. `None`
    /// where it cannot be opened.
    fn resolve(&mut self, folder: &[u8], proc_dir: BorrowedFd<'_>) -> Option<Vec<u8>> {
        if let Some((_, known)) = self.resolved.iter().find(|(f, _)| f == folder) {
            return known.clone();
        }
        // openat, not open: musl follows an O_CLOEXEC open with an fcntl.
        let real = openat(
            AT_FDCWD,
            OsStr::from_bytes(folder),
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .ok()
        .and_then(|fd| {
            use std::os::fd::AsRawFd;
            readlinkat(
                proc_dir,
                format!("thread-self/fd/{}", fd.as_raw_fd()).as_str(),
            )
            .ok()
        })
        .map(OsString::into_vec);
        self.resolved.push((folder.to_vec(), real.clone()));
        real
    }

    /// Watches the folders on the way to destination `index` at `point`
    /// (absolute, normalised), as given and as its folder resolves.
    /// ENOSPC (the watch limit) and other failures but a folder this user
    /// cannot read end the guard's start: renames could not be seen.
    pub(super) fn watch(
        &mut self,
        point: &[u8],
        index: usize,
        proc_dir: BorrowedFd<'_>,
    ) -> Result<(), Errno> {
        let mut paths = vec![point.to_vec()];
        let parent = &point[..point.iter().rposition(|&b| b == b'/').unwrap_or(0)];
        if !parent.is_empty() {
            if let Some(mut real) = self.resolve(parent, proc_dir) {
                if real != parent {
                    real.extend_from_slice(&point[parent.len()..]);
                    paths.push(real);
                }
            }
        }
        for path in &paths {
            for (folder, name) in steps(path) {
                let wd = match self.asked.iter().find(|(f, _)| f == folder) {
                    Some((_, wd)) => *wd,
                    None => {
                        let wd = match self.inotify.add_watch(OsStr::from_bytes(folder), events()) {
                            Ok(wd) => Some(wd),
                            // Not this user's to read: nor, as a rule, to
                            // rename in, for the user or a sandbox of theirs.
                            Err(Errno::EACCES) => {
                                self.unwatched += 1;
                                None
                            }
                            Err(e) => return Err(e),
                        };
                        self.asked.push((folder.to_vec(), wd));
                        wd
                    }
                };
                if let Some(wd) = wd {
                    self.names.push((wd, name.to_vec(), index));
                }
            }
        }
        Ok(())
    }

    /// Every watch made: the names sorted for lookups.
    pub(super) fn ready(&mut self) {
        self.names.sort_unstable();
        self.names.dedup();
    }

    /// The entries of watch `wd`, and of `name` in it when given.
    fn through(
        &self,
        wd: WatchDescriptor,
        name: Option<&[u8]>,
    ) -> &[(WatchDescriptor, Vec<u8>, usize)] {
        let from = self
            .names
            .partition_point(|(w, n, _)| (*w, n.as_slice()) < (wd, name.unwrap_or(b"")));
        let to = from
            + self.names[from..]
                .iter()
                .take_while(|(w, n, _)| *w == wd && name.is_none_or(|want| n == want))
                .count();
        &self.names[from..to]
    }

    /// The destinations the events queued now may have moved, read until
    /// none is left.
    pub(super) fn affected(&self) -> Affected {
        let mut out = Vec::new();
        loop {
            let events = match self.inotify.read_events() {
                Ok(events) => events,
                Err(Errno::EAGAIN) => break,
                Err(Errno::EINTR) => continue,
                Err(_) => return Affected::All,
            };
            for e in events {
                if e.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                    return Affected::All;
                }
                let gone = AddWatchFlags::IN_DELETE_SELF
                    | AddWatchFlags::IN_MOVE_SELF
                    | AddWatchFlags::IN_IGNORED
                    | AddWatchFlags::IN_UNMOUNT;
                let hit = if e.mask.intersects(gone) {
                    self.through(e.wd, None)
                } else if let Some(name) = &e.name {
                    self.through(e.wd, Some(name.as_bytes()))
                } else {
                    &[]
                };
                out.extend(hit.iter().map(|(_, _, i)| *i));
            }
        }
        out.sort_unstable();
        out.dedup();
        Affected::Some(out)
    }

    /// How many folders are watched.
    pub(super) fn folders(&self) -> usize {
        self.asked.iter().filter(|(_, wd)| wd.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_folder_on_the_way_with_the_name_that_leads_on() {
        let got: Vec<(String, String)> = steps(b"/w/.vscode/tasks.json")
            .map(|(f, n)| {
                (
                    String::from_utf8(f.to_vec()).unwrap(),
                    String::from_utf8(n.to_vec()).unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("/".to_string(), "w".to_string()),
                ("/w".to_string(), ".vscode".to_string()),
                ("/w/.vscode".to_string(), "tasks.json".to_string()),
            ]
        );
        assert_eq!(steps(b"/").count(), 0);
    }

    #[test]
    fn a_name_moved_or_removed_names_the_destinations_through_it() {
        let dir = std::env::temp_dir().join(format!("renames-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a"), "").unwrap();
        std::fs::write(dir.join("b"), "").unwrap();
        std::fs::write(dir.join("other"), "").unwrap();
        let proc_dir = openat(
            AT_FDCWD,
            "/proc",
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let mut r = Renames::new(None).unwrap();
        let d = dir.as_os_str().as_bytes();
        r.watch(&[d, b"/sub/a"].concat(), 0, proc_dir.as_fd())
            .unwrap();
        r.watch(&[d, b"/b"].concat(), 1, proc_dir.as_fd()).unwrap();
        r.ready();
        assert_eq!(r.affected(), Affected::Some(vec![]));
        // A name on no destination's way: nothing to check.
        std::fs::rename(dir.join("other"), dir.join("other2")).unwrap();
        assert_eq!(r.affected(), Affected::Some(vec![]));
        std::fs::rename(dir.join("b"), dir.join("b.bak")).unwrap();
        assert_eq!(r.affected(), Affected::Some(vec![1]));
        std::fs::rename(dir.join("sub"), dir.join("sub.old")).unwrap();
        assert_eq!(r.affected(), Affected::Some(vec![0]));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
