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
/// found so. Err: something else is there.
fn private_folder(path: &Path) -> Result<(), String> {
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(format!(
                "{}: {}",
                path.display(),
                crate::error::strerror(&e)
            ));
        }
    }
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| format!("{}: {}", path.display(), crate::error::strerror(&e)))?;
    // The user's own folder (`--setup` keeps its record in it) is made
    // private; one of anyone else's is never used.
    if meta.is_dir() && meta.uid() == uid() && meta.mode() & 0o077 != 0 {
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(meta.mode() & 0o700);
        std::fs::set_permissions(path, private)
            .map_err(|e| format!("{}: {}", path.display(), crate::error::strerror(&e)))?;
        return private_folder_as_is(path);
    }
    private_folder_as_is(path)
}

/// Ok if `path` is, as it is, a private folder of this user's.
fn private_folder_as_is(path: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| format!("{}: {}", path.display(), crate::error::strerror(&e)))?;
    if !meta.is_dir() || meta.uid() != uid() || meta.mode() & 0o077 != 0 {
        return Err(format!(
            "{} is not a private folder of this user's (uid {}, mode {:o}): someone else made \
             it",
            path.display(),
            meta.uid(),
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// The keeper's folder (its lock, its empty folder), the same for every
/// session of the user whatever its environment: `.local/state/apply-seccomp`
/// in the home folder of the user's passwd entry, or, where that is not a
/// folder of the user's (uid 65534's `/nonexistent`), `/tmp/apply-seccomp-UID`.
/// Either is made private (0700) and used only if it is the user's own
/// and private: a name another user took first is refused, never shared.
/// Every line through the shim hides it from the command (protect.rs).
pub fn folder() -> Result<PathBuf, NotKept> {
    let home = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map(|u| u.dir)
        .filter(|h| {
            h.is_absolute() && std::fs::metadata(h).is_ok_and(|m| m.is_dir() && m.uid() == uid())
        });
    let dir = match home {
        Some(home) => {
            let state = home.join(".local/state");
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&state);
            state.join("apply-seccomp")
        }
        None => PathBuf::from(format!("/tmp/apply-seccomp-{}", uid())),
    };
    private_folder(&dir).map_err(|why| NotKept {
        why: format!("placeholders not kept: {why}"),
        loud: true,
    })?;
    Ok(dir)
}

/// Opens the per-user lock file in the keeper's folder: a regular file
/// of this user's, not a link, writable by no one else.
pub(super) fn lock_file(folder: &Path) -> Result<std::fs::File, String> {
    let path = folder.join("lock");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
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
/// as a self-bind (so the command never sees the mark in it), and over
/// the keeper's folder in every sandbox: made if need be, used only if
/// private and empty.
pub fn empty_dir(folder: &Path) -> Result<PathBuf, Errno> {
    let path = folder.join("empty");
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&path);
    let meta = std::fs::symlink_metadata(&path).map_err(|_| Errno::EIO)?;
    let empty = std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_none());
    if !meta.is_dir() || meta.uid() != uid() || meta.mode() & 0o077 != 0 || !empty {
        return Err(Errno::EEXIST);
    }
    Ok(path)
}
