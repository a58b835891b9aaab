//! Passing names: where a folder placeholder (or a file one, where the
//! file system makes no unnamed file) is made and marked before it is
//! renamed into place. Unguessable, so nothing a command writes first can
//! be in the way; what a shim killed midway left at one is removed by the
//! holder of the next run with that place (mark.rs, `clear_stale`). Names
//! only: nothing here opens a file.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;

use nix::errno::Errno;

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

/// Whether `entry` is a passing name of `name`: `.NAME.apply-seccomp-`
/// and more (this build's random ones, an older one's UID).
pub fn is_passing_of(entry: &[u8], name: &[u8]) -> bool {
    const TAIL: &[u8] = b".apply-seccomp-";
    entry.len() > 1 + name.len() + TAIL.len()
        && entry[0] == b'.'
        && &entry[1..=name.len()] == name
        && entry[1 + name.len()..].starts_with(TAIL)
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
