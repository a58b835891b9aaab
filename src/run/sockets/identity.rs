//! Whether a socket file a connect names is one the run bound, where the
//! stub decides (sockets.rs; issue 67, items 1 and 2).
//!
//! The kernel links a bound socket to its file, and says where to one
//! question only: sock_diag's `UNIX_DIAG_VFS`, the superblock's device
//! and the low 32 bits of the inode number. No other word of it reaches
//! a process without `CAP_NET_ADMIN` over the socket's network namespace
//! (`SIOCUNIXFILE`), and a record the stub made itself from the path a
//! bind named would be the command's to forge: the kernel reads the path
//! again when the bind goes on, and another thread or a rename can send
//! it elsewhere. So the report is the record, and it names one file only
//! where the file system numbers its files once per superblock and below
//! 2^32:
//!
//! - ext2/3/4 (32-bit inode numbers by design) and tmpfs (below 2^32
//!   until 2^32 files have been made on one mount) always;
//! - XFS where its geometry keeps every inode number below 2^32 (up to
//!   about 2 TiB; the numbers encode where the inode lies);
//! - overlayfs (a container's `/`) whose upper file system is too small
//!   for any of its numbers to reach 2^32 (about 510 GiB, bounded as for
//!   XFS: the overlay shows the upper file system's numbers);
//! - never btrfs: every subvolume and snapshot numbers its files from 256
//!   on its own, under the one superblock device the report gives.
//!
//! Anywhere else a target that matches a socket of the run is refused,
//! with why (the refusal line): the stub cannot tell that socket from
//! another file's with the same report. Where the kernel holds the policy
//! (Landlock ABI 9, Linux 7.1) it decides on the socket itself, on every
//! file system.
//!
//! One more word closes what a wrapped tmpfs counter would leave: the
//! file must have been born (`statx`'s birth time, where the file system
//! keeps one) no earlier than the bind the run asked for.

use std::os::fd::{AsRawFd, OwnedFd};

use nix::sys::statfs::{Statfs, fstatfs};

use crate::sys;

const EXT_SUPER_MAGIC: i64 = 0xef53;
const TMPFS_MAGIC: i64 = 0x0102_1994;
const XFS_SUPER_MAGIC: i64 = 0x5846_5342;
const BTRFS_SUPER_MAGIC: i64 = 0x9123_683e;
const OVERLAYFS_SUPER_MAGIC: i64 = 0x794c_7630;

/// What the kernel's report can name: inode numbers below this.
const REPORTED: u64 = 1 << 32;

/// The words of a socket file the decision reads (`statx`).
pub(super) struct File {
    /// `st_dev`, as `stat` gives it.
    pub(super) dev: u64,
    pub(super) ino: u64,
    /// Its birth, where the file system keeps one.
    pub(super) born: Option<(i64, u32)>,
    pub(super) socket: bool,
}

impl File {
    pub(super) fn of(file: &OwnedFd) -> Result<File, nix::errno::Errno> {
        let st = sys::statx_fd(
            file.as_raw_fd(),
            libc::STATX_TYPE | libc::STATX_INO | libc::STATX_BTIME,
        )?;
        let born = (st.stx_mask & libc::STATX_BTIME != 0)
            .then_some((st.stx_btime.tv_sec, st.stx_btime.tv_nsec));
        Ok(File {
            dev: libc::makedev(st.stx_dev_major, st.stx_dev_minor),
            ino: st.stx_ino,
            born,
            socket: u32::from(st.stx_mode) & libc::S_IFMT == libc::S_IFSOCK,
        })
    }

    /// The low 32 bits of its inode number: what sock_diag reports.
    pub(super) fn reported_ino(&self) -> u64 {
        self.ino & (REPORTED - 1)
    }

    /// Whether it was born before `since` (a bind the run asked for): then
    /// no socket of that bind is bound at it.
    pub(super) fn born_before(&self, since: (i64, u32)) -> bool {
        self.born.is_some_and(|born| born < since)
    }
}

/// The file system `fd` lies on (`fstatfs`), read once a connect.
pub(super) fn file_system_of(fd: &OwnedFd) -> Option<Statfs> {
    fstatfs(fd).ok()
}

/// Whether it is btrfs, whose files show their subvolume's device
/// (diag.rs).
pub(super) fn is_btrfs(fs: Option<&Statfs>) -> bool {
    fs.is_some_and(|f| f.filesystem_type().0 as i64 == BTRFS_SUPER_MAGIC)
}

/// Why sock_diag's report of a socket of the run, which matched `file`
/// (on file system `fs`), may be another file's too: `None` when it
/// names `file` alone. `parent` opens (not `O_PATH`) the folder the path
/// names, for XFS's geometry.
pub(super) fn ambiguous(
    fs: Option<&Statfs>,
    file: &File,
    parent: impl FnOnce() -> Option<OwnedFd>,
) -> Option<String> {
    let Some(fs) = fs else {
        return Some("its file system could not be read".into());
    };
    let magic = fs.filesystem_type().0 as i64;
    let small = || file.ino < REPORTED;
    let held = match magic {
        EXT_SUPER_MAGIC | TMPFS_MAGIC => small(),
        XFS_SUPER_MAGIC => small() && (by_size(fs) || xfs_numbers_fit(file, parent)),
        OVERLAYFS_SUPER_MAGIC => small() && by_size(fs),
        _ => false,
    };
    if held {
        return None;
    }
    let (on, what) = match magic {
        BTRFS_SUPER_MAGIC => (
            "btrfs".to_string(),
            "its subvolumes and snapshots repeat inode numbers under one device",
        ),
        XFS_SUPER_MAGIC => (
            "XFS larger than about 2 TiB".into(),
            "its inode numbers may need more than the report's 32 bits",
        ),
        OVERLAYFS_SUPER_MAGIC => (
            "an overlay on a file system larger than about 510 GiB".into(),
            "its inode numbers may need more than the report's 32 bits",
        ),
        EXT_SUPER_MAGIC | TMPFS_MAGIC => (
            "a file system whose numbers grew past 2^32".into(),
            "its inode number needs more than the report's 32 bits",
        ),
        other => (
            format!("a file system of type {other:#x}"),
            "it is not known to number its files once and below 2^32",
        ),
    };
    Some(format!(
        "on {on}, the kernel's socket report (a device and 32 bits of inode number) cannot tell \
         this run's socket from another's: {what}; bind it on tmpfs or ext4, or use an abstract \
         name (Linux 7.1's Landlock decides it in the kernel)"
    ))
}

/// The file system's size bounds every inode number it can hand out
/// below 2^32, as XFS numbers them (the allocation group, the block in
/// it, the inode in the block: at most twice the blocks, rounded up to
/// a power of two per group, times the inodes in a block, 256 bytes the
/// smallest): the data blocks and a log of at most 2 GiB, over 128 bytes,
/// below 2^32.
fn by_size(fs: &Statfs) -> bool {
    let bytes = (fs.blocks() as u128) * (fs.block_size() as u128) + (1u128 << 31);
    bytes / 128 <= u128::from(REPORTED)
}

/// XFS's own geometry keeps every inode number below 2^32: the groups,
/// shifted by the bits of a block number in a group and of an inode in a
/// block. Asked of the folder the path names, on the same file system.
fn xfs_numbers_fit(file: &File, parent: impl FnOnce() -> Option<OwnedFd>) -> bool {
    let Some(dir) = parent() else {
        return false;
    };
    if sys::stat_fd(dir.as_raw_fd()).map(|st| st.st_dev) != Ok(file.dev) {
        return false;
    }
    let Ok(g) = sys::xfs_geometry(dir.as_raw_fd()) else {
        return false;
    };
    if g.block_size == 0 || g.inode_size == 0 || g.ag_blocks == 0 {
        return false;
    }
    let per_block = u64::from((g.block_size / g.inode_size).max(1));
    let block_bits = u64::from(g.ag_blocks).next_power_of_two().trailing_zeros();
    let inode_bits = per_block.next_power_of_two().trailing_zeros();
    let top = u128::from(g.ag_count) << (block_bits + inode_bits);
    top <= u128::from(REPORTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_low_bits_are_what_the_report_gives() {
        let f = File {
            dev: 0,
            ino: (7 << 32) | 42,
            born: Some((10, 5)),
            socket: true,
        };
        assert_eq!(f.reported_ino(), 42);
        assert!(f.born_before((10, 6)));
        assert!(!f.born_before((10, 5)));
        let unknown = File { born: None, ..f };
        assert!(!unknown.born_before((i64::MAX, 0)));
    }
}
