//! sock_diag's Unix part (`unix_diag`): whether this kernel has it, and
//! the request the own-sockets policy sends it (sockets/diag.rs asks
//! about one socket; the doctor asks whether it answers at all). No
//! dependency on the rest of the helper.

use std::os::fd::{AsRawFd, OwnedFd};

use nix::sys::socket::{
    AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType, recv, send, socket,
};

/// What a run without sock_diag for Unix sockets cannot do (the
/// `SRT_DEBUG` line, the doctor).
pub const DIAG_MISSING: &str = "sock_diag cannot see Unix sockets here (Linux's unix_diag module \
     is not loaded), so every connect to a Unix socket is refused, the run's own included";

/// A sock_diag socket that sees Unix sockets. Where the kernel builds
/// that part as a module (`unix_diag`, Debian's kernels) and cannot load
/// it (a machine without the module's file, module loading off), every
/// question gets `ENOENT`, the answer for a closed socket too: so it is
/// asked first for a dump of the sockets in no state (the stub may make
/// no Unix socket of its own to ask about: its filter), which answers
/// with an empty dump, or with that error. `None` then, so that no socket
/// is taken for closed and no connect for allowed.
pub fn open_unix_diag() -> Option<OwnedFd> {
    try_unix_diag().ok()
}

/// [`open_unix_diag`], telling the kernel's answer (`Err(None)`: it has
/// no Unix part) from a failure of the moment (`Err(Some(errno))`: no
/// descriptor left, say), which a later try may not meet.
pub fn try_unix_diag() -> Result<OwnedFd, Option<nix::errno::Errno>> {
    const NLM_F_REQUEST: u16 = 1;
    const NLM_F_DUMP: u16 = 0x300;
    let diag = socket(
        AddressFamily::Netlink,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkSockDiag,
    )
    .map_err(Some)?;
    // States 0: no socket is listed.
    send(
        diag.as_raw_fd(),
        &request(NLM_F_REQUEST | NLM_F_DUMP, 0, 0, 0, 0),
        MsgFlags::empty(),
    )
    .map_err(Some)?;
    let mut buf = [0u8; 256];
    let n = recv(diag.as_raw_fd(), &mut buf, MsgFlags::empty()).map_err(Some)?;
    // NLMSG_DONE (3): the dump, empty; NLMSG_ERROR (2): no Unix part.
    let kind = buf
        .get(4..6)
        .and_then(|b| b.try_into().ok())
        .map(u16::from_ne_bytes);
    match kind {
        Some(3) if n >= 16 => Ok(diag),
        _ => Err(None),
    }
}

/// A SOCK_DIAG_BY_FAMILY request for AF_UNIX: nlmsghdr (16 bytes) and
/// unix_diag_req (24).
pub fn request(flags: u16, states: u32, ino: u32, show: u32, cookie: u64) -> Vec<u8> {
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
