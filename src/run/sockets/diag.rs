//! sock_diag (`NETLINK_SOCK_DIAG`): where a Unix socket of the run is
//! bound now, asked by its inode and cookie (sockets.rs).

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use nix::sys::socket::{MsgFlags, recv, send};

use crate::run::unix_diag::request;
use crate::sys;

use super::At;

/// sock_diag's answer for the Unix socket `ino` with `cookie`: `None` if
/// there is no such socket (any more), `Some(None)` if it is not bound
/// yet, else where it is bound.
pub(super) fn diag_one(diag: BorrowedFd<'_>, ino: u32, cookie: u64) -> Option<Option<At>> {
    const NLM_F_REQUEST: u16 = 1;
    const NLMSG_ERROR: u16 = 2;
    const UDIAG_SHOW_NAME: u32 = 1;
    const UDIAG_SHOW_VFS: u32 = 2;
    const UNIX_DIAG_NAME: u16 = 0;
    const UNIX_DIAG_VFS: u16 = 1;
    let req = request(
        NLM_F_REQUEST,
        u32::MAX,
        ino,
        UDIAG_SHOW_NAME | UDIAG_SHOW_VFS,
        cookie,
    );
    send(diag.as_raw_fd(), &req, MsgFlags::empty()).ok()?;
    let mut buf = [0u8; 1024];
    let n = recv(diag.as_raw_fd(), &mut buf, MsgFlags::empty()).ok()?;
    let msg = &buf[..n];
    let u32_at = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let u16_at = |b: &[u8], at: usize| -> Option<u16> {
        Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
    };
    let total = (u32_at(msg, 0)? as usize).min(msg.len());
    if u16_at(msg, 4)? == NLMSG_ERROR {
        return None;
    }
    // unix_diag_msg: 16 bytes after the header, then attributes.
    let mut at = 16 + 16;
    let mut found = None;
    while at + 4 <= total {
        let len = u16_at(msg, at)? as usize;
        let kind = u16_at(msg, at + 2)?;
        if len < 4 || at + len > total {
            break;
        }
        let data = &msg[at + 4..at + len];
        match kind {
            UNIX_DIAG_NAME if data.first() == Some(&0) => {
                found = Some(At::Abstract(data[1..].to_vec()));
            }
            UNIX_DIAG_VFS if data.len() >= 8 => {
                let (vino, vdev) = (u32_at(data, 0)?, u32_at(data, 4)?);
                // The kernel's own dev_t: major above bit 20.
                found = Some(At::File {
                    dev: (vdev >> 20, vdev & 0xf_ffff),
                    ino: u64::from(vino),
                });
            }
            _ => {}
        }
        at += (len + 3) & !3;
    }
    Some(found)
}

/// The file system a socket file lies on, as sock_diag names it: its
/// superblock's device. `stat` gives the same but on btrfs, whose files
/// show their subvolume's device: there the mount's line in the
/// command's `mountinfo` (under the caller's `/proc`) gives the
/// superblock's (issue 55), so that a socket of the run there is found,
/// and refused with the reason (identity.rs: the report cannot tell
/// btrfs's subvolumes apart).
pub(super) fn file_system(
    file: &OwnedFd,
    dev: u64,
    btrfs: bool,
    proc_dir: BorrowedFd<'_>,
    pid: libc::pid_t,
) -> (u32, u32) {
    let stat_dev = (libc::major(dev), libc::minor(dev));
    if !btrfs {
        return stat_dev;
    }
    // Through the caller's /proc: the stub's own mount namespace shows the
    // run's, where the stub has no entry.
    let read = |rel: String| {
        std::ffi::CString::new(rel)
            .ok()
            .and_then(|name| sys::read_file_at(proc_dir.as_raw_fd(), &name).ok())
            .unwrap_or_default()
    };
    let fdinfo = read(format!(
        "{}/fdinfo/{}",
        std::process::id(),
        file.as_raw_fd()
    ));
    let mnt_id = String::from_utf8_lossy(&fdinfo).lines().find_map(|l| {
        l.strip_prefix("mnt_id:")
            .and_then(|v| v.trim().parse::<u64>().ok())
    });
    let Some(mnt_id) = mnt_id else {
        return stat_dev;
    };
    let info = read(format!("{pid}/mountinfo"));
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| {
            let mut f = l.split(' ');
            (f.next()?.parse::<u64>().ok()? == mnt_id).then_some(())?;
            let (major, minor) = f.nth(1)?.split_once(':')?;
            Some((major.parse().ok()?, minor.parse().ok()?))
        })
        .unwrap_or(stat_dev)
}
