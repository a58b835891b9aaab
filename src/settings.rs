//! The clients' settings files (srt's `~/.srt-settings.json`), and every
//! other file the host-side code reads where a sandboxed command could
//! have put something (install detection's `package.json` and cargo's
//! lists, a helper's binary, Node's version header), read the way a tool
//! that must not hang reads a file someone else names: only a regular
//! file, opened without blocking, at most a bound ([`MAX_BYTES`] for a
//! settings file). A FIFO would block the reader until a writer came;
//! `/dev/zero` would be read until memory ran out; a device may act on
//! being opened. Used by the doctor, `--setup` and install detection.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest settings file read: srt's are a few KiB.
pub const MAX_BYTES: u64 = 1 << 20;

/// Why a settings file was not read.
#[derive(Debug)]
pub enum Unread {
    /// Nothing at the path.
    Missing,
    /// Not a regular file: what it is ("a FIFO", "a character device", ...).
    NotRegular(&'static str),
    /// Larger than the bound: its size, and the bound.
    TooLarge(u64, u64),
    /// Any other error (permissions, a folder in the path that is a file).
    Io(io::Error),
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unread::Missing => write!(f, "no such file"),
            Unread::NotRegular(what) => write!(f, "{what}, not a regular file: not read"),
            Unread::TooLarge(size, max) => write!(
                f,
                "{size} bytes, larger than such a file can be ({max} bytes): not read"
            ),
            Unread::Io(e) => write!(f, "{}", crate::error::strerror(e)),
        }
    }
}

/// What a file of this type is, in words; `None` for a regular file.
fn not_regular(kind: std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a folder")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

fn unread(e: io::Error) -> Unread {
    match e.kind() {
        io::ErrorKind::NotFound => Unread::Missing,
        _ => Unread::Io(e),
    }
}

/// The text of the regular file at `path` (links followed), at most
/// [`MAX_BYTES`]: a settings file.
pub fn read(path: &Path) -> Result<Vec<u8>, Unread> {
    read_at_most(path, MAX_BYTES)
}

/// The text of the regular file at `path` (links followed), at most
/// `max` bytes: checked before it is opened (so no device is opened),
/// opened with `O_NONBLOCK` and checked again (so a FIFO put there
/// meanwhile cannot block), read to one byte past the bound.
pub fn read_at_most(path: &Path, max: u64) -> Result<Vec<u8>, Unread> {
    let (file, meta) = open_regular(path)?;
    if meta.len() > max {
        return Err(Unread::TooLarge(meta.len(), max));
    }
    let mut text = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut text)
        .map_err(Unread::Io)?;
    if text.len() as u64 > max {
        return Err(Unread::TooLarge(text.len() as u64, max));
    }
    Ok(text)
}

/// The first `n` bytes of the regular file at `path` (fewer if it is
/// shorter), opened as [`read_at_most`] opens it.
pub fn read_head(path: &Path, n: usize) -> Result<Vec<u8>, Unread> {
    let (file, _) = open_regular(path)?;
    let mut head = Vec::with_capacity(n);
    file.take(n as u64)
        .read_to_end(&mut head)
        .map_err(Unread::Io)?;
    Ok(head)
}

/// The regular file at `path` (links followed), open for reading:
/// checked before it is opened (so no device is opened), opened with
/// `O_NONBLOCK` and checked again (so a FIFO put there meanwhile cannot
/// block).
fn open_regular(path: &Path) -> Result<(File, std::fs::Metadata), Unread> {
    let meta = std::fs::metadata(path).map_err(unread)?;
    if let Some(what) = not_regular(meta.file_type()) {
        return Err(Unread::NotRegular(what));
    }
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(unread)?;
    let meta = file.metadata().map_err(Unread::Io)?;
    if let Some(what) = not_regular(meta.file_type()) {
        return Err(Unread::NotRegular(what));
    }
    Ok((file, meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_within_the_bound_is_read() {
        let dir = std::env::temp_dir().join(format!("settings-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.json");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(read(&file).unwrap(), b"{}");
        assert!(matches!(read(&dir.join("none")), Err(Unread::Missing)));
        assert!(matches!(read(&dir), Err(Unread::NotRegular("a folder"))));
        assert!(matches!(
            read(Path::new("/dev/zero")),
            Err(Unread::NotRegular("a character device"))
        ));
        let big = dir.join("big.json");
        std::fs::write(&big, vec![b' '; MAX_BYTES as usize + 1]).unwrap();
        assert!(matches!(read(&big), Err(Unread::TooLarge(n, MAX_BYTES)) if n == MAX_BYTES + 1));
        let fifo = dir.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(matches!(read(&fifo), Err(Unread::NotRegular("a FIFO"))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
