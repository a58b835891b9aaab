//! Setup's writes: whole files replaced atomically (a temporary file in the
//! same folder, then `rename`), keeping the file's owner and mode, never
//! through a symbolic link someone else made; and the `bwrap` link.

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

/// Replaces (or makes) the file `path` with `bytes`, atomically, keeping
/// its owner, group and mode (a new file: the user's, mode 0644).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let path = target(path)?;
    let say = |e: std::io::Error| format!("{}: {}", path.display(), strerror(&e));
    let dir = path
        .parent()
        .ok_or_else(|| format!("{}: no folder", path.display()))?;
    let old = std::fs::metadata(&path).ok();
    let mode = old.as_ref().map_or(0o644, |m| m.mode() & 0o7777);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(
        ".{name}.apply-seccomp-setup.{}",
        std::process::id()
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
        file.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if let Err(e) = done {
        let _ = std::fs::remove_file(&tmp);
        return Err(say(e));
    }
    Ok(())
}

/// Removes the file `path` (one setup made).
pub fn remove(path: &Path) -> Result<(), String> {
    std::fs::remove_file(path).map_err(|e| format!("{}: {}", path.display(), strerror(&e)))
}

/// What is at `link` now, as a link.
pub fn link_target(link: &Path) -> Option<PathBuf> {
    std::fs::read_link(link).ok()
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
