//! What names a file whatever its path, for the stub's own-sockets
//! policy (run/sockets/identity.rs), the stub's only: `statx` of an
//! `O_PATH` descriptor (the whole inode number, the birth time), XFS's
//! geometry (which bounds its inode numbers), and the coarse clock a new
//! file's birth is stamped with.

use std::os::fd::RawFd;

use nix::errno::Errno;

use super::raw::{raw_result, syscall6};

/// `statx(fd, "", AT_EMPTY_PATH, mask)`: what an `O_PATH` descriptor
/// names, with the fields the kernel can give of `mask` (its
/// `stx_mask` says which it gave: a birth time only where the file
/// system keeps one). The stub's own-sockets policy reads a socket
/// file's whole inode number and birth (run/sockets/identity.rs).
pub fn statx_fd(fd: RawFd, mask: u32) -> Result<libc::statx, Errno> {
    // SAFETY: a zeroed statx is a valid buffer for the kernel to fill.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: the name is the empty NUL-terminated string; the kernel
    // writes one statx into `st`, alive for the call.
    raw_result(unsafe {
        syscall6(
            libc::SYS_statx,
            [
                fd as usize,
                c"".as_ptr() as usize,
                (libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW) as usize,
                mask as usize,
                (&raw mut st) as usize,
                0,
            ],
        )
    })?;
    Ok(st)
}

/// The few words of XFS's geometry (`XFS_IOC_FSGEOMETRY_V1`, which any
/// user may ask of an open file on the file system) that bound its inode
/// numbers: the block size, the blocks in an allocation group, the
/// groups, the inode size.
#[derive(Clone, Copy, Debug)]
pub struct XfsGeometry {
    pub block_size: u32,
    pub ag_blocks: u32,
    pub ag_count: u32,
    pub inode_size: u32,
}

/// [`XfsGeometry`] of the XFS file system `fd` (not `O_PATH`) lies on;
/// `ENOTTY` on any other file system.
pub fn xfs_geometry(fd: RawFd) -> Result<XfsGeometry, Errno> {
    // struct xfs_fsop_geom_v1 on 64-bit Linux: eight u32 (block size, rt
    // extent size, AG blocks, AG count, log blocks, sector size, inode
    // size, imaxpct), four u64, a 16-byte uuid, seven u32, padded to 112.
    const SIZE: usize = 112;
    const XFS_IOC_FSGEOMETRY_V1: usize = (2 << 30) | (SIZE << 16) | ((b'X' as usize) << 8) | 100;
    let mut geom = [0u32; SIZE / 4];
    // SAFETY: the ioctl writes one struct of SIZE bytes to `geom`, an
    // array of that size on this frame.
    raw_result(unsafe {
        syscall6(
            libc::SYS_ioctl,
            [
                fd as usize,
                XFS_IOC_FSGEOMETRY_V1,
                geom.as_mut_ptr() as usize,
                0,
                0,
                0,
            ],
        )
    })?;
    Ok(XfsGeometry {
        block_size: geom[0],
        ag_blocks: geom[2],
        ag_count: geom[3],
        inode_size: geom[6],
    })
}

/// The coarse real-time clock (`CLOCK_REALTIME_COARSE`), the one a file
/// system stamps a new file's birth with: a file made after this call
/// was born at or after what it returns (unless the clock is set back).
pub fn coarse_realtime() -> (i64, u32) {
    // SAFETY: plain numbers; zeroed is the epoch.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes one timespec to `ts`, alive for the call.
    let _ = raw_result(unsafe {
        syscall6(
            libc::SYS_clock_gettime,
            [
                libc::CLOCK_REALTIME_COARSE as usize,
                (&raw mut ts) as usize,
                0,
                0,
                0,
                0,
            ],
        )
    });
    (ts.tv_sec, ts.tv_nsec as u32)
}
