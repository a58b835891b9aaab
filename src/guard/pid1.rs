//! Whether PID 1 of this PID namespace is bubblewrap, and its command
//! line: what the mount guard watches comes from it (guard/mod.rs), and
//! whether init outlives the stub (main.rs). Asked by the stub, before the
//! namespaces.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, BorrowedFd};
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

/// Whether PID 1 of this PID namespace is bubblewrap: its executable (or,
/// where that link is closed to this process, its `argv[0]`) is named
/// `bwrap`; with its command line when one read held all of it. Asked
/// once, before the namespaces (whether init outlives the stub depends on
/// it too: main.rs).
pub struct Pid1 {
    pub(super) bubblewrap: bool,
    pub(super) words: Option<Vec<OsString>>,
}

impl Pid1 {
    /// No allocation and no `/proc` descriptor on the way to "no" (every
    /// run on the host asks). Not the first PID namespace's name in
    /// `/proc/self/ns/pid` where the link is closed: reading it cost 23 us
    /// here (the run's first lookups in its own `/proc` directory), the
    /// command line of PID 1 (whose entries stay cached) 17 us, and the
    /// link itself 11 us (1000 fresh processes each).
    pub fn look() -> Pid1 {
        let named_bwrap = |p: &[u8]| p.rsplit(|&b| b == b'/').next() == Some(b"bwrap");
        let no = Pid1 {
            bubblewrap: false,
            words: None,
        };
        // One page: this frame sits in `entry`'s, and a larger one made every
        // run fault in four more stack pages (stack probes touch each). A
        // link that fills it (truncated) is not trusted; the command line
        // read here serves only where the link is closed, and one longer
        // than this is read whole later (`cmdline`).
        let mut buf = [0u8; 4096];
        if let Ok(n) = sys::readlink_at(libc::AT_FDCWD, c"/proc/1/exe", &mut buf)
            && n < buf.len()
        {
            return Pid1 {
                bubblewrap: named_bwrap(&buf[..n]),
                words: None,
            };
        }
        let Ok(n) = sys::read_head(c"/proc/1/cmdline", &mut buf) else {
            return no;
        };
        let argv0 = buf[..n].split(|&b| b == 0).next().unwrap_or_default();
        if !named_bwrap(argv0) {
            return no;
        }
        Pid1 {
            bubblewrap: true,
            words: (n < buf.len()).then(|| words(&buf[..n])),
        }
    }

    pub fn is_bubblewrap(&self) -> bool {
        self.bubblewrap
    }
}
