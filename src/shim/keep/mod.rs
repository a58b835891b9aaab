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
//! file) and held: a write lock (open file description lock) on one byte
//! of P, or of its folder's mark, for the whole run, which the kernel
//! drops however its holder dies, and which no command that can only read
//! P can take. A self-bind of a placeholder
//! becomes the placeholder form (`/dev/null`, or an empty folder of the
//! shim's, on P), so the command sees what it always saw: an empty file,
//! an empty read-only folder. The shim then execs bubblewrap as before,
//! and the holder it started just before (hold.rs) waits for that pid to
//! end; then a placeholder no other run holds is removed, unless someone
//! wrote into it on the host. Making, taking and removing happen under
//! one per-user lock in the keeper's folder ([`folder()`]: from the passwd
//! entry, never the environment; the lock unreadable, the folder hidden
//! where a line makes it writable), waited for a bounded time. What is
//! not a placeholder the shim made is never touched.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use nix::errno::Errno;

use crate::sys;

mod folder;
mod hold;
mod mark;
mod passing;
mod places;

pub use folder::{LOCK_WAIT_MS, NotKept, empty_dir, folder, own_home};
use folder::{RELEASE_WAIT_MS, lock_file};
use mark::Held;
pub use mark::Kind;
use places::{Place, places, split};

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

/// The per-user lock, waited for `ms` milliseconds at most.
fn locked(file: &std::fs::File, ms: u32) -> Result<Locked<'_>, Errno> {
    sys::flock_within(file.as_raw_fd(), libc::LOCK_EX, ms)?;
    Ok(Locked(file))
}

impl Keeper {
    /// Makes and holds the placeholders `args` asks for, rewriting each
    /// self-bind of one into the placeholder form. Err (with why) when
    /// the line asks for none, or the lock cannot be used (the line then
    /// runs as given, as without the shim).
    pub fn keep(args: &mut [OsString], folder: &Path) -> Result<Keeper, NotKept> {
        let mut places = places(args);
        // The keeper's own folder, hidden behind its empty one, is no place.
        places.retain(|p| Path::new(OsStr::from_bytes(&p.dest)) != folder);
        if places.is_empty() {
            return Err(NotKept::quiet("no placeholder on the line".into()));
        }
        let lock =
            lock_file(folder).map_err(|e| NotKept::quiet(format!("placeholders not kept: {e}")))?;
        let mut keeper = Keeper {
            lock,
            kept: Vec::new(),
            note: String::new(),
        };
        let (mut made, mut taken, mut left) = (0, 0, Vec::new());
        let began = std::time::Instant::now();
        {
            let _locked = locked(&keeper.lock, LOCK_WAIT_MS).map_err(|e| {
                NotKept::quiet(match e {
                    Errno::ETIMEDOUT => format!(
                        "placeholders not kept: the per-user lock in {} was held by another \
                         process for {LOCK_WAIT_MS} ms; the line runs as given",
                        folder.display()
                    ),
                    e => format!("placeholders not kept: lock: {}", e.desc()),
                })
            })?;
            let mut folders: Vec<(Vec<u8>, Rc<OwnedFd>)> = Vec::new();
            let binds = writable_binds(args);
            // A hold's byte: this run's own (its shim's, bubblewrap's, pid).
            let pid = u64::from(std::process::id());
            for place in &places {
                match take(&mut folders, &binds, place, args, folder, pid) {
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
                name: k.name.clone(),
                kind: k.held.kind,
                fd: k.held.fd.as_raw_fd(),
                hold: k.held.hold_fd(),
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

/// A writable bind of the line: where in the sandbox, from where on the
/// host.
struct Bind {
    dest: Vec<u8>,
    source: Vec<u8>,
}

/// The writable binds of a line whose source is a host path.
fn writable_binds(args: &[OsString]) -> Vec<Bind> {
    let Ok(walk) = crate::bwrap_args::walk(args) else {
        return Vec::new();
    };
    walk.mounts
        .into_iter()
        .filter(crate::bwrap_args::Mount::binds_host_path_writable)
        .map(|m| Bind {
            dest: m.dest,
            source: m.source,
        })
        .collect()
}

/// The folder at `path` (inside the sandbox) opened on the host, through
/// the last writable bind of the line that shows it, and below that
/// bind's folder without following a link (`folders` remembers those
/// opened). A command can swap a name on the way for a link at any
/// moment; the keeper then finds no folder (`ENOTDIR`, `ELOOP`) and
/// makes nothing, instead of making a file where the link leads. Where
/// no writable bind shows it, nothing is made either (`EPERM`): a command
/// could not have written there.
fn open_beneath(
    folders: &mut Vec<(Vec<u8>, Rc<OwnedFd>)>,
    binds: &[Bind],
    path: &[u8],
) -> Result<Rc<OwnedFd>, Errno> {
    if let Some((_, fd)) = folders.iter().find(|(p, _)| p == path) {
        return Ok(fd.clone());
    }
    let under = |dest: &[u8]| {
        path.starts_with(dest)
            && (path.len() == dest.len() || dest == b"/" || path[dest.len()] == b'/')
    };
    let bind = binds
        .iter()
        .rev()
        .find(|b| under(&b.dest))
        .ok_or(Errno::EPERM)?;
    let source = CString::new(bind.source.clone()).map_err(|_| Errno::EINVAL)?;
    let mut fd = sys::open_path(&source, libc::O_RDONLY | libc::O_DIRECTORY)?;
    for name in path[bind.dest.len()..]
        .split(|&b| b == b'/')
        .filter(|n| !n.is_empty())
    {
        if name == b"." || name == b".." {
            return Err(Errno::EINVAL);
        }
        let name = CString::new(name).map_err(|_| Errno::EINVAL)?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        fd = sys::owned(sys::open_at(fd.as_raw_fd(), &name, flags, 0)?);
    }
    let fd = Rc::new(fd);
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
    binds: &[Bind],
    place: &Place,
    args: &mut [OsString],
    keeper_folder: &Path,
    pid: u64,
) -> Result<(Kept, bool), Errno> {
    let (parent, name) = split(&place.dest).ok_or(Errno::EINVAL)?;
    let dir = open_beneath(folders, binds, parent)?;
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
    mark::hold(&held, pid)?;
    // One taken is still the placeholder at its name now that it is held:
    // nothing removed or replaced it between the look and the hold (one
    // made now was linked there under the lock).
    if !fresh {
        let now = sys::stat_at(dir.as_raw_fd(), &cname)?;
        if (now.st_dev, now.st_ino) != held.id {
            return Err(Errno::ESTALE);
        }
    }
    // A self-bind of a placeholder would show its mark (a folder's: unless
    // other places go in it), and one of a path gone would fail: bind the
    // empty form.
    if let (true, Some(at)) = (place.self_bind, place.source_at) {
        match held.kind {
            Kind::File => args[at] = OsString::from("/dev/null"),
            Kind::Dir if !place.above => args[at] = empty_dir(keeper_folder)?.into_os_string(),
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
    let Ok(keeper) = self::folder() else {
        return Vec::new();
    };
    let Ok(lock) = lock_file(&keeper) else {
        return Vec::new();
    };
    let Ok(_locked) = locked(&lock, LOCK_WAIT_MS) else {
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
                if !mark::held_by_another(held.hold_fd()) {
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
