//! Whether PID 1 of this PID namespace is bubblewrap, and its command
//! line: what the mount guard watches comes from it (guard/mod.rs), and
//! whether init outlives the stub (run/mod.rs). Asked by the stub, before the
//! namespaces.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;

use nix::errno::Errno;

use crate::sys;

/// PID 1's command line, word by word.
fn words(mut text: &[u8]) -> Vec<OsString> {
    if text.last() == Some(&0) {
        text = &text[..text.len() - 1];
    }
    text.split(|&b| b == 0)
        .map(|w| OsString::from_vec(w.to_vec()))
        .collect()
}

pub(super) fn cmdline(proc_dir: BorrowedFd<'_>) -> Result<Vec<OsString>, Errno> {
    Ok(words(&sys::read_file_at(
        proc_dir.as_raw_fd(),
        c"1/cmdline",
    )?))
}

/// Whether PID 1 of this PID namespace is bubblewrap: its name (the
/// kernel's `comm`, the file name it was executed by) is `bwrap`. Asked
/// once, before the namespaces (whether init outlives the stub depends on
/// it too: run/mod.rs). PID 1 is whoever made the namespace; a command in a
/// sandbox cannot be it nor rename it.
pub struct Pid1 {
    bubblewrap: bool,
    /// Under bubblewrap, its mount namespace's `mountinfo`, opened here,
    /// before the helper's own namespace: the guard polls it for changes
    /// of bubblewrap's mount table (guard/mod.rs says why that one).
    mountinfo: Option<Result<OwnedFd, Errno>>,
}

impl Pid1 {
    /// One small read, no allocation (every run on the host asks). Not
    /// `/proc/1/exe`, which the host's init closes to most callers, nor
    /// `/proc/1/cmdline` (the mount guard reads it, under bubblewrap
    /// only): `/proc/1/comm` took 14 us here against 12 us for the link
    /// (EACCES) and 25 us for the command line that followed it; reading
    /// `/proc/self/ns/pid` to tell the machine's first PID namespace, 23-26
    /// us (1000 fresh processes each, on a loaded machine).
    pub fn look() -> Pid1 {
        let mut comm = [0u8; 32];
        let bubblewrap = sys::read_head(c"/proc/1/comm", &mut comm)
            .is_ok_and(|n| comm[..n].strip_suffix(b"\n") == Some(b"bwrap"));
        let mountinfo = bubblewrap.then(|| {
            sys::open_path(
                c"/proc/thread-self/mountinfo",
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        });
        Pid1 {
            bubblewrap,
            mountinfo,
        }
    }

    /// The `mountinfo` of bubblewrap's mount namespace (see the field).
    pub(super) fn into_mountinfo(self) -> Option<Result<OwnedFd, Errno>> {
        self.mountinfo
    }

    pub fn is_bubblewrap(&self) -> bool {
        self.bubblewrap
    }
}
