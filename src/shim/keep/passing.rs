//! Passing names: where a folder placeholder (or a file one, where the
//! file system makes no unnamed file) is made and marked before it is
//! renamed into place. Unguessable, so nothing a command writes first can
//! be in the way; what a shim killed midway left at one is removed by the
//! holder of the next run with that place.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use nix::errno::Errno;

use super::mark::{DIR_MARK, kind_of, marked_file, open_folder};
use crate::sys;

/// The prefix of every passing name of `name`: `.NAME.apply-seccomp-`.
fn passing_prefix(name: &OsStr) -> Vec<u8> {
    let mut prefix = b".".to_vec();
    prefix.extend_from_slice(name.as_bytes());
    prefix.extend_from_slice(b".apply-seccomp-");
    prefix
}

/// A passing name for `name` no one can guess: its prefix and 64 random
/// bits (`sys::unguessable`), so nothing a command writes beforehand can
/// be in the way.
pub(super) fn passing_name(name: &OsStr) -> Result<CString, Errno> {
    let random = sys::unguessable();
    let mut passing = passing_prefix(name);
    passing.extend_from_slice(format!("{random:016x}").as_bytes());
    CString::new(passing).map_err(|_| Errno::EINVAL)
}

/// Removes what is at the passing name `passing`, if it is what a shim
/// killed midway leaves: a file empty or holding only its mark, a folder
/// holding only its mark. Allocates nothing.
pub(super) fn clear_passing(dir: RawFd, passing: &CStr) {
    let Ok(st) = sys::stat_at(dir, passing) else {
        return;
    };
    let empty = kind_of(&st) == libc::S_IFREG && st.st_size == 0;
    if empty || marked_file(dir, passing, &st).map(sys::raw_close).is_ok() {
        let _ = sys::unlink_at(dir, passing, 0);
    } else if kind_of(&st) == libc::S_IFDIR {
        if let Ok(stale) = open_folder(dir, passing) {
            let _ = sys::unlink_at(stale.as_raw_fd(), DIR_MARK, 0);
        }
        let _ = sys::unlink_at(dir, passing, libc::AT_REMOVEDIR);
    }
}

/// Whether `entry` is a passing name of `name`: `.NAME.apply-seccomp-`
/// and more (this build's random ones, an older one's UID).
pub fn is_passing_of(entry: &[u8], name: &[u8]) -> bool {
    const TAIL: &[u8] = b".apply-seccomp-";
    entry.len() > 1 + name.len() + TAIL.len()
        && entry[0] == b'.'
        && &entry[1..=name.len()] == name
        && entry[1 + name.len()..].starts_with(TAIL)
}

/// Removes each name in `dir` that `stale` says is a passing name of a
/// place there, where it holds only a mark (or nothing): what a shim
/// killed midway left. One look at the folder for all its places. With
/// the per-user lock held no shim of the user's is making one. Allocates
/// nothing (the holder calls it, after the run).
pub fn clear_stale(dir: RawFd, stale: impl Fn(&[u8]) -> bool) {
    let mut buf = [0u8; 2048];
    let _ = sys::each_name(dir, &mut buf, |n| {
        if stale(n.to_bytes()) {
            clear_passing(dir, n);
        }
        true
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passing_names_are_told_by_their_shape() {
        let random = passing_name(OsStr::new(".bashrc")).unwrap();
        assert!(is_passing_of(random.to_bytes(), b".bashrc"));
        assert!(is_passing_of(b"..bashrc.apply-seccomp-65534", b".bashrc"));
        for other in [
            &b".bashrc"[..],
            b"..bashrc.apply-seccomp-",
            b"..bashrc2.apply-seccomp-1",
            b"..zshrc.apply-seccomp-1",
        ] {
            assert!(
                !is_passing_of(other, b".bashrc"),
                "{}",
                String::from_utf8_lossy(other)
            );
        }
        assert_ne!(random, passing_name(OsStr::new(".bashrc")).unwrap());
    }
}
