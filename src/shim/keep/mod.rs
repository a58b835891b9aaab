//! The placeholder keeper: the shim makes and holds the placeholders a
//! bubblewrap line asks for, so that no client's clean-up, nor another
//! shim's, removes one while a run that mounts it is alive.
//!
//! For each absent deny path inside a writable folder, srt (and Claude Code,
//! which embeds it) has bubblewrap make a placeholder on the host
//! (`--ro-bind /dev/null P`, or its empty `claude-empty-*` folder on P),
//! records P in a set of its own process, and once its own count of
//! running sandboxes is zero, unlinks every 0-byte file and empty folder
//! in that set, however many other client processes are using them. The
//! shim is the one program every client process runs for every command.
//!
//! The places: `--ro-bind /dev/null P` and `--ro-bind <empty folder> P`
//! where P is absent or one of the shim's placeholders, a self-bind
//! `--ro-bind P P` whose P is one of them or has vanished, and a folder
//! above a place that is missing or one of them (places.rs). Before
//! bubblewrap starts, each P exists, of its kind, marked (mark.rs: so it
//! never matches the clients' deletion test, and is told from a user's
//! file) and held: a shared `flock` on P itself for the whole run, which
//! the kernel drops however its holder dies. A self-bind of a placeholder
//! becomes the placeholder form (`/dev/null`, or an empty folder of the
//! shim's, on P), so the command sees what it always saw: an empty file,
//! an empty read-only folder. The shim then execs bubblewrap as before,
//! and the holder it started just before (hold.rs) waits for that pid to
//! end; then a placeholder no other run holds is removed, unless someone
//! wrote into it on the host. Making, taking and removing happen under
//! one per-user lock (`apply-seccomp-UID.lock` in `$XDG_RUNTIME_DIR`,
//! else in `/tmp`). What is not a placeholder the shim made is never
//! touched.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use nix::errno::Errno;

use crate::sys;

mod hold;
mod mark;
mod places;

use mark::Held;
pub use mark::Kind;
use places::{Place, places, split};

/// Where the per-user lock (and the empty folder) live.
fn runtime_dir() -> PathBuf {
    std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| Path::new(d).is_absolute())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

fn uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Opens the per-user lock file, a regular file of this user's, not a link.
fn lock_file() -> Result<std::fs::File, String> {
    let path = runtime_dir().join(format!("apply-seccomp-{}.lock", uid()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| format!("{}: {}", path.display(), crate::error::strerror(&e)))?;
    let meta = file.metadata().map_err(|e| crate::error::strerror(&e))?;
    if !meta.is_file() || meta.uid() != uid() || meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{} is not a private file of this user's",
            path.display()
        ));
    }
    Ok(file)
}

/// The shim's empty folder, bound on a folder placeholder a line names
/// as a self-bind (so the command never sees the mark in it): made if
/// need be, used only if private and empty.
fn empty_dir() -> Result<PathBuf, Errno> {
    let path = runtime_dir().join(format!("apply-seccomp-{}.empty", uid()));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&path);
    let meta = std::fs::symlink_metadata(&path).map_err(|_| Errno::EIO)?;
    let empty = std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_none());
    if !meta.is_dir() || meta.uid() != uid() || meta.mode() & 0o077 != 0 || !empty {
        return Err(Errno::EEXIST);
    }
    Ok(path)
}

/// A placeholder of this run.
struct Kept {
    /// The folder it is in.
    dir: Rc<OwnedFd>,
    /// Its name there.
    name: CString,
    /// How many folders down its path goes.
    depth: usize,
    held: Held,
}

/// The placeholders of one run, held until its holder lets them go.
pub struct Keeper {
    lock: std::fs::File,
    kept: Vec<Kept>,
    /// For `SRT_DEBUG`.
    pub note: String,
}

/// Holds the per-user lock until dropped.
struct Locked<'a>(&'a std::fs::File);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let _ = sys::flock(self.0.as_raw_fd(), libc::LOCK_UN);
    }
}

fn locked(file: &std::fs::File) -> Result<Locked<'_>, Errno> {
    sys::flock(file.as_raw_fd(), libc::LOCK_EX)?;
    Ok(Locked(file))
}

impl Keeper {
    /// Makes and holds the placeholders `args` asks for, rewriting each
    /// self-bind of one into the placeholder form. Err (with why) when
    /// the line asks for none, or the lock cannot be used (the line then
    /// runs as given, as without the shim).
    pub fn keep(args: &mut [OsString], writable: &[PathBuf]) -> Result<Keeper, String> {
        let places = places(args);
        if places.is_empty() {
            return Err("no placeholder on the line".into());
        }
        let runtime = runtime_dir();
        if let Some(w) = writable.iter().find(|w| runtime.starts_with(w)) {
            return Err(format!(
                "placeholders not kept: {} is inside {}, which this bubblewrap line makes \
                 writable",
                runtime.display(),
                w.display()
            ));
        }
        let lock = lock_file().map_err(|e| format!("placeholders not kept: {e}"))?;
        let mut keeper = Keeper {
            lock,
            kept: Vec::new(),
            note: String::new(),
        };
        let (mut made, mut taken, mut left) = (0, 0, Vec::new());
        let began = std::time::Instant::now();
        {
            let _locked = locked(&keeper.lock)
                .map_err(|e| format!("placeholders not kept: lock: {}", e.desc()))?;
            let mut folders: Vec<(Vec<u8>, Rc<OwnedFd>)> = Vec::new();
            for place in &places {
                match take(&mut folders, place, args) {
                    Ok((kept, fresh)) => {
                        if fresh {
                            made += 1;
                        } else {
                            taken += 1;
                        }
                        keeper.kept.push(kept);
                    }
                    Err(e) => left.push(format!(
                        "{} ({})",
                        String::from_utf8_lossy(&place.dest),
                        e.desc()
                    )),
                }
            }
        }
        keeper.note = format!(
            "placeholders kept ({} us): {made} made, {taken} already there; left as the line \
             asks (not the shim's): {}",
            began.elapsed().as_micros(),
            if left.is_empty() {
                "none".to_string()
            } else {
                left.join(", ")
            }
        );
        Ok(keeper)
    }

    /// Hands the holds to a holder (hold.rs) that lets them go once this
    /// process, about to exec bubblewrap and keep its pid, has ended.
    pub fn detach(self) -> Result<(), String> {
        let me = sys::pidfd_open(std::process::id() as libc::pid_t)
            .map_err(|e| format!("pidfd_open: {}", e.desc()))?;
        let mut items = Vec::with_capacity(self.kept.len());
        for k in &self.kept {
            items.push(hold::Item {
                dir: k.dir.as_raw_fd(),
                passing: mark::passing_name(OsStr::from_bytes(k.name.as_bytes()))
                    .map_err(|e| e.desc().to_string())?,
                name: k.name.clone(),
                kind: k.held.kind,
                fd: k.held.fd.as_raw_fd(),
                id: k.held.id,
                depth: k.depth,
            });
        }
        let plan = hold::Plan::new(self.lock.as_raw_fd(), me.as_raw_fd(), items);
        hold::start(plan).map_err(|e| format!("holder: {}", e.desc()))?;
        // The holder has its own copies; these close at the exec.
        std::mem::forget(me);
        std::mem::forget(self);
        Ok(())
    }
}

/// The open folder at `path` (`folders` remembers those opened).
fn folder(folders: &mut Vec<(Vec<u8>, Rc<OwnedFd>)>, path: &[u8]) -> Result<Rc<OwnedFd>, Errno> {
    if let Some((_, fd)) = folders.iter().find(|(p, _)| p == path) {
        return Ok(fd.clone());
    }
    let fd = Rc::new(open_folder(path)?);
    folders.push((path.to_vec(), fd.clone()));
    Ok(fd)
}

fn open_folder(path: &[u8]) -> Result<OwnedFd, Errno> {
    let path = CString::new(path).map_err(|_| Errno::EINVAL)?;
    sys::open_path(&path, libc::O_RDONLY | libc::O_DIRECTORY)
}

/// Makes or takes one place: the hold, and whether it was made now. Err:
/// not the shim's (left alone), or it could not be made.
fn take(
    folders: &mut Vec<(Vec<u8>, Rc<OwnedFd>)>,
    place: &Place,
    args: &mut [OsString],
) -> Result<(Kept, bool), Errno> {
    let (parent, name) = split(&place.dest).ok_or(Errno::EINVAL)?;
    let dir = folder(folders, parent)?;
    let cname = CString::new(name).map_err(|_| Errno::EINVAL)?;
    let (held, fresh) = match sys::stat_at(dir.as_raw_fd(), &cname) {
        Ok(st) => {
            let held = mark::adopt_found(dir.as_raw_fd(), &cname, &st)?;
            if !place.self_bind && held.kind != place.kind {
                return Err(Errno::EEXIST);
            }
            (held, false)
        }
        Err(_) => (
            mark::make(dir.as_raw_fd(), OsStr::from_bytes(name), place.kind)?,
            true,
        ),
    };
    sys::flock(held.fd.as_raw_fd(), libc::LOCK_SH)?;
    // A self-bind of a placeholder would show its mark (a folder's: unless
    // other places go in it), and one of a path gone would fail: bind the
    // empty form.
    if let (true, Some(at)) = (place.self_bind, place.source_at) {
        match held.kind {
            Kind::File => args[at] = OsString::from("/dev/null"),
            Kind::Dir if !place.above => args[at] = empty_dir()?.into_os_string(),
            Kind::Dir => {}
        }
    }
    Ok((
        Kept {
            dir,
            name: cname,
            depth: place.dest.iter().filter(|&&b| b == b'/').count(),
            held,
        },
        fresh,
    ))
}

/// The shim's placeholders under `folder` (to three levels down, as far
/// as srt looks for deny paths) that no run holds: for the doctor.
pub fn leftovers(folder: &Path) -> Vec<PathBuf> {
    let Ok(lock) = lock_file() else {
        return Vec::new();
    };
    let Ok(_locked) = locked(&lock) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut todo = vec![(folder.to_path_buf(), 0)];
    while let Some((dir, depth)) = todo.pop() {
        let Ok(fd) = open_folder(dir.as_os_str().as_bytes()) else {
            continue;
        };
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if let Ok(held) = mark::adopt(fd.as_raw_fd(), &name) {
                if sys::flock(held.fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB).is_ok() {
                    found.push(dir.join(&name));
                }
                continue;
            }
            if depth < 3 && e.file_type().is_ok_and(|t| t.is_dir()) && name != ".git" {
                todo.push((dir.join(&name), depth + 1));
            }
        }
    }
    found.sort();
    found
}
