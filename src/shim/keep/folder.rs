//! The keeper's own folder: where its per-user lock and its empty folder
//! are, found from the passwd entry (never the environment, so every
//! session of a user takes the same lock), private to the user, and
//! refused when another user made its name first.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;

/// How long the keeper waits for the per-user lock before the line runs
/// as given (no command can make a session wait longer), and how long a
/// holder waits before it leaves its placeholders to the next run.
pub const LOCK_WAIT_MS: u32 = 1000;
pub(super) const RELEASE_WAIT_MS: u32 = 5000;

fn uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Why the keeper cannot keep a line's placeholders.
#[derive(Debug)]
pub struct NotKept {
    pub why: String,
    /// Said on stderr whatever `SRT_DEBUG` says: the keeper's folder is
    /// not this user's own (another user took its name first).
    pub loud: bool,
}

impl NotKept {
    pub(super) fn quiet(why: String) -> NotKept {
        NotKept { why, loud: false }
    }
}

/// `path` made a folder of this user's that no one else can enter, or
/// found so (the user's own, made private if it was not: `--setup` keeps
/// its record in it). Err: it is not the user's, or not a folder.
fn private_folder(path: &Path, uid: u32) -> Result<(), String> {
    let said = |e: std::io::Error| format!("{}: {}", path.display(), crate::error::strerror(&e));
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match std::fs::DirBuilder::new().mode(0o700).create(path) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(said(e)),
                _ => std::fs::symlink_metadata(path).map_err(said)?,
            }
        }
        other => other.map_err(said)?,
    };
    if !meta.is_dir() || meta.uid() != uid {
        return Err(format!(
            "{} is not a private folder of this user's (uid {}, mode {:o}): someone else made \
             it",
            path.display(),
            meta.uid(),
            meta.mode() & 0o7777
        ));
    }
    if meta.mode() & 0o077 != 0 {
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(meta.mode() & 0o700);
        std::fs::set_permissions(path, private).map_err(said)?;
    }
    Ok(())
}

/// The keeper's folder (its lock, its empty folder), the same for every
/// session of the user whatever its environment: `.local/state/apply-seccomp`
/// in the home folder of the user's passwd entry, or, where that is not a
/// folder of the user's (uid 65534's `/nonexistent`) or a link lies on the
/// way, `/tmp/apply-seccomp-UID`.
/// Either is made private (0700) and used only if it is the user's own: a
/// name another user took first is refused, never shared. A line that
/// makes it writable has it hidden (protect.rs).
pub fn folder() -> Result<PathBuf, NotKept> {
    let uid = uid();
    let dir = own_home()
        .and_then(|h| in_home(&h))
        .unwrap_or_else(|| PathBuf::from(format!("/tmp/apply-seccomp-{uid}")));
    private_folder(&dir, uid).map_err(|why| NotKept {
        why: format!("placeholders not kept: {why}"),
        loud: true,
    })?;
    Ok(dir)
}

/// The home folder of this user's passwd entry, where it is a folder of
/// the user's own (uid 65534's `/nonexistent` is not): where the
/// keeper's folder is, unless a link or a folder the user cannot enter
/// lies on the way (then `/tmp`; setup's record never follows it there).
pub fn own_home() -> Option<PathBuf> {
    let uid = uid();
    passwd_home(uid).filter(|h| {
        h.is_absolute() && std::fs::metadata(h).is_ok_and(|m| m.is_dir() && m.uid() == uid)
    })
}

/// `HOME/.local/state/apply-seccomp`, each folder on the way made (0700)
/// where missing. None where one is not a folder: a link there, which a
/// command that could write the home folder may have put, would decide
/// where the lock is made; the keeper then uses `/tmp` instead.
fn in_home(home: &Path) -> Option<PathBuf> {
    let mut dir = home.to_path_buf();
    for name in [".local", "state"] {
        dir.push(name);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new().mode(0o700).create(&dir).ok()?;
            }
            _ => return None,
        }
    }
    Some(dir.join("apply-seccomp"))
}

/// The home folder of `uid`'s entry in `/etc/passwd` (what the C library
/// this binary is linked with reads for `getpwuid`, in three system calls
/// instead of its eight).
fn passwd_home(uid: u32) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let text = std::fs::read("/etc/passwd").ok()?;
    let uid = uid.to_string();
    text.split(|&b| b == b'\n').find_map(|line| {
        let mut fields = line.split(|&b| b == b':');
        let home = fields.nth(5);
        let ours = line.split(|&b| b == b':').nth(2) == Some(uid.as_bytes());
        ours.then(|| home.map(|h| PathBuf::from(std::ffi::OsStr::from_bytes(h))))
            .flatten()
    })
}

/// Opens the per-user lock file in the keeper's folder: a regular file of
/// this user's, not a link, mode 0200 and opened for writing only. A
/// command of a sandbox where it is read-only can then open it neither
/// for reading (`EACCES`) nor for writing (`EROFS`), so cannot lock it;
/// one that can (root, whose capabilities in its own user namespace pass
/// the mode) makes the others wait [`LOCK_WAIT_MS`] at most.
pub(super) fn lock_file(folder: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::PermissionsExt;
    let path = folder.join("lock");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o200)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(&path)
        .map_err(|e| format!("{}: {}", path.display(), crate::error::strerror(&e)))?;
    let meta = file.metadata().map_err(|e| crate::error::strerror(&e))?;
    if !meta.is_file() || meta.uid() != uid() {
        return Err(format!(
            "{} is not a private file of this user's",
            path.display()
        ));
    }
    if meta.mode() & 0o777 != 0o200 {
        file.set_permissions(std::fs::Permissions::from_mode(0o200))
            .map_err(|e| format!("{}: {}", path.display(), crate::error::strerror(&e)))?;
    }
    Ok(file)
}

/// The shim's empty folder, bound on a folder placeholder a line names as
/// a self-bind (so the command never sees the mark in it), and over the
/// keeper's folder where a line makes it writable: made if need be, used
/// only if private and empty.
pub fn empty_dir(folder: &Path) -> Result<PathBuf, Errno> {
    let path = folder.join("empty");
    if private_folder(&path, uid()).is_err() {
        return Err(Errno::EEXIST);
    }
    let cpath =
        std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| Errno::EINVAL)?;
    let fd = crate::sys::open_path(
        &cpath,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
    )?;
    let mut names = 0;
    let mut buf = [0u8; 256];
    crate::sys::each_entry(std::os::fd::AsRawFd::as_raw_fd(&fd), &mut buf, |_, _| {
        names += 1;
        names <= 2
    })?;
    if names > 2 {
        return Err(Errno::EEXIST);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder under the temporary folder.
    fn home(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("apply-seccomp-folder-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_folder_is_made_in_the_home_folder() {
        let h = home("plain");
        assert_eq!(in_home(&h), Some(h.join(".local/state/apply-seccomp")));
        let mode = std::fs::metadata(h.join(".local/state")).unwrap().mode();
        assert_eq!(mode & 0o777, 0o700);
        // Found again as it is.
        assert_eq!(in_home(&h), Some(h.join(".local/state/apply-seccomp")));
        std::fs::remove_dir_all(&h).unwrap();
    }

    /// The attack: `.local/state` (or `.local`) replaced by a link to a
    /// folder of the command's choosing. Nothing is made there.
    #[test]
    fn a_link_on_the_way_is_not_followed() {
        for planted in [".local", ".local/state"] {
            let h = home("link");
            let elsewhere = h.join("elsewhere");
            std::fs::create_dir_all(&elsewhere).unwrap();
            let at = h.join(planted);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&elsewhere, &at).unwrap();
            assert_eq!(in_home(&h), None, "{planted}");
            assert_eq!(
                std::fs::read_dir(&elsewhere).unwrap().count(),
                0,
                "{planted}"
            );
            std::fs::remove_dir_all(&h).unwrap();
        }
    }
}
