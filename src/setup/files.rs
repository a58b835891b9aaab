//! Setup's writes: whole files replaced atomically (a temporary file in the
//! same folder, then `rename`), keeping the file's owner and mode, never
//! through a symbolic link someone else made; and the `bwrap` link.
//!
//! A settings file has other writers (Claude Code writes its own when a
//! user accepts or denies a rule), and an edit is a read, a change and a
//! write: one made in between would be lost. So an edit says what it read
//! ([`Expect`]), and the file is read again right before the rename; if it
//! changed, nothing is written and the caller starts over from the new
//! text (issue 54: a deny rule added during `--setup --gpu` was gone).

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::strerror;

fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Where a write to `path` lands: `path` itself, or the file a link of
/// the user's own (or root's) leads to. Err: a link someone else made.
pub fn target(path: &Path) -> Result<PathBuf, String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            if m.uid() != euid() && m.uid() != 0 {
                return Err(format!(
                    "{} is a symbolic link made by uid {}, not by this user: not followed",
                    path.display(),
                    m.uid()
                ));
            }
            std::fs::canonicalize(path).map_err(|e| format!("{}: {}", path.display(), strerror(&e)))
        }
        _ => Ok(path.to_path_buf()),
    }
}

/// What a write expects at its path right before it lands.
#[derive(Clone, Copy, Debug)]
pub enum Expect<'a> {
    /// Whatever is there (setup's own record).
    Anything,
    /// No file.
    Nothing,
    /// These bytes, as read before the edit.
    Text(&'a [u8]),
}

impl Expect<'_> {
    /// Whether the file at `path` is as expected now.
    fn holds(self, path: &Path) -> Result<bool, String> {
        let now = crate::settings::read(path);
        Ok(match (self, now) {
            (Expect::Anything, _) => true,
            (Expect::Nothing, Err(crate::settings::Unread::Missing)) => true,
            (Expect::Text(was), Ok(now)) => now == was,
            (_, Err(crate::settings::Unread::Missing) | Ok(_)) => false,
            (_, Err(e)) => return Err(format!("{}: {e}", path.display())),
        })
    }
}

/// How many times an edit starts over when another writer changed the
/// file meanwhile, before it gives up.
pub const ATTEMPTS: usize = 5;

/// Said when an edit gave up: another writer kept changing the file.
pub fn changed_meanwhile(path: &Path) -> String {
    format!(
        "{} changed while setup edited it, {ATTEMPTS} times in a row (another program writes \
         it): left as that program wrote it; run setup again",
        path.display()
    )
}

/// Replaces (or makes) the file `path` with `bytes`, atomically, keeping
/// its owner, group and mode (a new file: the user's, mode 0644).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    write_atomic_if(path, Expect::Anything, bytes).map(drop)
}

/// [`write_atomic`], if the file is still as `expect` says right before
/// the rename: `Ok(false)` (nothing written) if it is not.
pub fn write_atomic_if(path: &Path, expect: Expect<'_>, bytes: &[u8]) -> Result<bool, String> {
    let path = target(path)?;
    let say = |e: std::io::Error| format!("{}: {}", path.display(), strerror(&e));
    let dir = path
        .parent()
        .ok_or_else(|| format!("{}: no folder", path.display()))?;
    let old = std::fs::metadata(&path).ok();
    let mode = old.as_ref().map_or(0o644, |m| m.mode() & 0o7777);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    // Unguessable: in a folder a sandboxed command may write, a name
    // planted in advance would only make the write fail (it is made with
    // O_EXCL and O_NOFOLLOW), but setup should not fail on its word.
    let tmp = dir.join(format!(
        ".{name}.apply-seccomp-setup.{:016x}",
        crate::sys::unguessable()
    ));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .map_err(say)?;
    let done = (|| {
        file.write_all(bytes)?;
        if let Some(m) = &old {
            // The owner's first (root only), then the mode (the umask
            // may have cut it), as before.
            if m.uid() != euid() || m.gid() != nix::unistd::getegid().as_raw() {
                std::os::unix::fs::fchown(&file, Some(m.uid()), Some(m.gid()))?;
            }
        }
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.sync_all()
    })();
    if let Err(e) = done {
        let _ = std::fs::remove_file(&tmp);
        return Err(say(e));
    }
    // Last, as close to the rename as it can be: still what was read?
    match expect.holds(&path) {
        Ok(true) => {}
        other => {
            let _ = std::fs::remove_file(&tmp);
            return other.map(|_| false);
        }
    }
    if let Err(e) = std::fs::rename(&tmp, &path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(say(e));
    }
    Ok(true)
}

/// Removes the file `path` (setup's record, a link setup made).
pub fn remove(path: &Path) -> Result<(), String> {
    std::fs::remove_file(path).map_err(|e| format!("{}: {}", path.display(), strerror(&e)))
}

/// Removes the file `path` (one setup made) if it is still `text`:
/// `Ok(false)` (left) if it is not. The name is removed from its folder
/// as found without following a link on the way ([`folder_of`]).
pub fn remove_if(path: &Path, text: &[u8]) -> Result<bool, String> {
    if !Expect::Text(text).holds(path)? {
        return Ok(false);
    }
    let (dir, name) = folder_of(path)?;
    nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir)
        .map(|()| true)
        .map_err(|e| format!("{}: {}", path.display(), e.desc()))
}

/// What is at `link` now, as a link.
pub fn link_target(link: &Path) -> Option<PathBuf> {
    std::fs::read_link(link).ok()
}

/// The folder `path` names its last part in, opened from `/` one name at
/// a time without following a link (`O_NOFOLLOW`), and that last part:
/// what undo removes in (issue 68: root undoing a setup of a user's home
/// followed a folder the user had made a link, and removed root's own
/// link and folder elsewhere). A link anywhere on the way is an error.
pub fn folder_of(path: &Path) -> Result<(std::os::fd::OwnedFd, &std::ffi::OsStr), String> {
    use nix::fcntl::{OFlag, openat};
    use std::path::Component;
    let said = |e: nix::errno::Errno| {
        format!(
            "{}: {} (a link on the way is not followed)",
            path.display(),
            e.desc()
        )
    };
    let name = path
        .file_name()
        .ok_or_else(|| format!("{}: no name to remove", path.display()))?;
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mode = nix::sys::stat::Mode::empty();
    let mut dir = openat(nix::fcntl::AT_FDCWD, "/", flags, mode).map_err(said)?;
    for part in path.parent().unwrap_or(Path::new("/")).components() {
        match part {
            Component::Normal(n) => dir = openat(&dir, n, flags, mode).map_err(said)?,
            Component::RootDir => {}
            _ => return Err(format!("{}: not a plain absolute path", path.display())),
        }
    }
    Ok((dir, name))
}

/// [`link_target`], the link found in its folder without following a
/// link on the way.
pub fn link_target_in_place(link: &Path) -> Option<PathBuf> {
    let (dir, name) = folder_of(link).ok()?;
    nix::fcntl::readlinkat(&dir, name).ok().map(PathBuf::from)
}

/// Removes the name `path` (a link, or an empty folder with `folder`)
/// from its folder found without following a link on the way.
pub fn remove_in_place(path: &Path, folder: bool) -> Result<(), String> {
    let (dir, name) = folder_of(path)?;
    let flag = if folder {
        nix::unistd::UnlinkatFlags::RemoveDir
    } else {
        nix::unistd::UnlinkatFlags::NoRemoveDir
    };
    nix::unistd::unlinkat(&dir, name, flag).map_err(|e| format!("{}: {}", path.display(), e.desc()))
}

/// Makes the link `link` -> `to` (its folder too). Err: something else is
/// at `link`.
pub fn make_link(link: &Path, to: &Path) -> Result<(), String> {
    if let Some(dir) = link.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {}", dir.display(), strerror(&e)))?;
    }
    std::os::unix::fs::symlink(to, link).map_err(|e| {
        format!(
            "{}: {} (something else is there: move it away first)",
            link.display(),
            strerror(&e)
        )
    })
}
