//! The observe filter's table (`SRT_OBSERVE_SOCK`): the write-intent calls
//! of each architecture, and where each finds the paths it writes. Part of
//! rules.rs (included from it, so `build.rs` compiles it too); read at run
//! time by observe.rs, in the stub, to resolve and report each call.

use super::Arch;

/// Where a written path is found in a call's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathArg {
    /// A path string: `path` is the index of the pointer, `dirfd` that of
    /// the directory it is relative to (`None`: the working directory).
    At { dirfd: Option<u8>, path: u8 },
    /// The file the descriptor at index `fd` is open on (fchmod, fchown,
    /// fsetxattr...: changes through a descriptor open for reading only).
    Fd { fd: u8 },
    /// A Unix socket address at index `addr` (`bind`): the socket file it
    /// creates, for a pathname address; nothing for any other.
    UnixAddr { addr: u8, len: u8 },
}

/// One observed syscall.
#[derive(Clone, Copy, Debug)]
pub struct Observed {
    pub nr: u32,
    pub name: &'static str,
    /// Observed only when this argument has a write-intent open flag
    /// (`OPEN_WRITE_FLAGS`); `None`: always.
    pub flags: Option<u8>,
    /// The paths it writes: one report line each.
    pub paths: &'static [PathArg],
}

/// O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND (the same on both
/// architectures).
pub const OPEN_WRITE_FLAGS: [u32; 5] = [0o1, 0o2, 0o100, 0o1000, 0o2000];

const AT0: &[PathArg] = &[PathArg::At {
    dirfd: Some(0),
    path: 1,
}];
const CWD0: &[PathArg] = &[PathArg::At {
    dirfd: None,
    path: 0,
}];
/// linkat/renameat: (olddirfd, oldpath, newdirfd, newpath).
const AT_TWO: &[PathArg] = &[
    PathArg::At {
        dirfd: Some(0),
        path: 1,
    },
    PathArg::At {
        dirfd: Some(2),
        path: 3,
    },
];
const CWD_TWO: &[PathArg] = &[
    PathArg::At {
        dirfd: None,
        path: 0,
    },
    PathArg::At {
        dirfd: None,
        path: 1,
    },
];
/// symlinkat(target, newdirfd, linkpath): only the link is written.
const SYMLINKAT: &[PathArg] = &[PathArg::At {
    dirfd: Some(1),
    path: 2,
}];
/// symlink(target, linkpath).
const SYMLINK: &[PathArg] = &[PathArg::At {
    dirfd: None,
    path: 1,
}];
/// fchmod(fd, ...), fchown(fd, ...), fsetxattr(fd, ...).
const FD0: &[PathArg] = &[PathArg::Fd { fd: 0 }];
/// bind(fd, addr, len).
const BIND: &[PathArg] = &[PathArg::UnixAddr { addr: 1, len: 2 }];

const fn obs(nr: u32, name: &'static str, paths: &'static [PathArg]) -> Observed {
    Observed {
        nr,
        name,
        flags: None,
        paths,
    }
}

/// Calls with the same number on both architectures: setxattrat and
/// removexattrat (Linux 6.13).
fn observed_generic() -> [Observed; 2] {
    [obs(463, "setxattrat", AT0), obs(466, "removexattrat", AT0)]
}

/// The write-intent calls the observe filter reports (the legacy
/// path-only forms exist on x86_64 only).
pub fn observed(arch: Arch) -> Vec<Observed> {
    let open_at = |nr| Observed {
        nr,
        name: "openat",
        flags: Some(2),
        paths: AT0,
    };
    let mut table = match arch {
        Arch::X86_64 => vec![
            open_at(257),
            Observed {
                nr: 2,
                name: "open",
                flags: Some(1),
                paths: CWD0,
            },
            obs(437, "openat2", AT0),
            obs(85, "creat", CWD0),
            obs(263, "unlinkat", AT0),
            obs(87, "unlink", CWD0),
            obs(84, "rmdir", CWD0),
            obs(258, "mkdirat", AT0),
            obs(83, "mkdir", CWD0),
            obs(259, "mknodat", AT0),
            obs(133, "mknod", CWD0),
            obs(266, "symlinkat", SYMLINKAT),
            obs(88, "symlink", SYMLINK),
            obs(265, "linkat", AT_TWO),
            obs(86, "link", CWD_TWO),
            obs(264, "renameat", AT_TWO),
            obs(316, "renameat2", AT_TWO),
            obs(82, "rename", CWD_TWO),
            obs(268, "fchmodat", AT0),
            obs(452, "fchmodat2", AT0),
            obs(90, "chmod", CWD0),
            obs(260, "fchownat", AT0),
            obs(92, "chown", CWD0),
            obs(94, "lchown", CWD0),
            obs(280, "utimensat", AT0),
            obs(132, "utime", CWD0),
            obs(235, "utimes", CWD0),
            obs(76, "truncate", CWD0),
            obs(91, "fchmod", FD0),
            obs(93, "fchown", FD0),
            obs(261, "futimesat", AT0),
            obs(188, "setxattr", CWD0),
            obs(189, "lsetxattr", CWD0),
            obs(190, "fsetxattr", FD0),
            obs(197, "removexattr", CWD0),
            obs(198, "lremovexattr", CWD0),
            obs(199, "fremovexattr", FD0),
            obs(49, "bind", BIND),
        ],
        Arch::Aarch64 => vec![
            open_at(56),
            obs(437, "openat2", AT0),
            obs(35, "unlinkat", AT0),
            obs(34, "mkdirat", AT0),
            obs(33, "mknodat", AT0),
            obs(36, "symlinkat", SYMLINKAT),
            obs(37, "linkat", AT_TWO),
            obs(38, "renameat", AT_TWO),
            obs(276, "renameat2", AT_TWO),
            obs(53, "fchmodat", AT0),
            obs(452, "fchmodat2", AT0),
            obs(54, "fchownat", AT0),
            obs(88, "utimensat", AT0),
            obs(45, "truncate", CWD0),
            obs(52, "fchmod", FD0),
            obs(55, "fchown", FD0),
            obs(5, "setxattr", CWD0),
            obs(6, "lsetxattr", CWD0),
            obs(7, "fsetxattr", FD0),
            obs(14, "removexattr", CWD0),
            obs(15, "lremovexattr", CWD0),
            obs(16, "fremovexattr", FD0),
            obs(200, "bind", BIND),
        ],
    };
    table.extend(observed_generic());
    table
}
