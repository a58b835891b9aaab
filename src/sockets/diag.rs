//! sock_diag (`NETLINK_SOCK_DIAG`): where a Unix socket of the run is
//! bound now, asked by its inode and cookie (sockets.rs).

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use nix::sys::socket::{
    AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType, recv, send, socket,
};

use super::At;

/// A sock_diag socket that sees Unix sockets. Where the kernel builds
/// that part as a module (`unix_diag`, Debian's kernels) and cannot load
/// it (a machine without the module's file, module loading off), every
/// question gets `ENOENT`, the answer for a closed socket too: so it is
/// asked first for a dump of the sockets in no state (the stub may make
/// no Unix socket of its own to ask about: its filter), which answers
/// with an empty dump, or with that error. `None` then, so that no socket
/// is taken for closed and no connect for allowed.
pub fn open_unix_diag() -> Option<OwnedFd> {
    const NLM_F_REQUEST: u16 = 1;
    const NLM_F_DUMP: u16 = 0x300;
    let diag = socket(
        AddressFamily::Netlink,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkSockDiag,
    )
    .ok()?;
    // States 0: no socket is listed.
    send(
        diag.as_raw_fd(),
        &request(NLM_F_REQUEST | NLM_F_DUMP, 0, 0, 0, 0),
        MsgFlags::empty(),
    )
    .ok()?;
    let mut buf = [0u8; 256];
    let n = recv(diag.as_raw_fd(), &mut buf, MsgFlags::empty()).ok()?;
    // NLMSG_DONE (3): the dump, empty; NLMSG_ERROR (2): no Unix part.
    let kind = u16::from_ne_bytes(buf.get(4..6)?.try_into().ok()?);
    (n >= 16 && kind == 3).then_some(diag)
}

/// A SOCK_DIAG_BY_FAMILY request for AF_UNIX: nlmsghdr (16 bytes) and
/// unix_diag_req (24).
fn request(flags: u16, states: u32, ino: u32, show: u32, cookie: u64) -> Vec<u8> {
    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    let mut req = Vec::with_capacity(40);
    req.extend_from_slice(&40u32.to_ne_bytes());
    req.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req.extend_from_slice(&flags.to_ne_bytes());
    req.extend_from_slice(&1u32.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    req.push(libc::AF_UNIX as u8);
    req.push(0);
    req.extend_from_slice(&0u16.to_ne_bytes());
    req.extend_from_slice(&states.to_ne_bytes());
    req.extend_from_slice(&ino.to_ne_bytes());
    req.extend_from_slice(&show.to_ne_bytes());
    req.extend_from_slice(&(cookie as u32).to_ne_bytes());
    req.extend_from_slice(&((cookie >> 32) as u32).to_ne_bytes());
    req
}

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
