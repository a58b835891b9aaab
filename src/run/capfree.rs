//! The capability-free way in: for where a new user namespace grants no
//! usable capability (AppArmor's `unpriv_bwrap`, which Ubuntu stacks on
//! everything bubblewrap runs), so no namespace can be built. The command
//! gets the same no_new_privs and seccomp filters as on the namespace way,
//! and a Landlock domain that scopes signals and abstract Unix sockets and,
//! as every Landlock domain does, bars ptrace-mode access (ptrace,
//! `/proc/<pid>/mem`, `environ`, `fd`, ...) to every process outside it.
//! None of that needs a capability. docs/ways-in.md holds the table
//! of how each THREATS row is held on either way.
//!
//! With no PID namespace, the processes outside are in the command's
//! sight, and some of their procfs files take writes with no ptrace-mode
//! check (`oom_score_adj`, `autogroup`, `coredump_filter`, ...), as
//! cgroup files move and throttle processes. So the domain also handles
//! writing files, and grants it everywhere but on the procfs and cgroup
//! mounts: Landlock cannot take a right away below a grant, so the grants
//! are the entries of each folder on the way down to such a mount, and not
//! that mount (see [`grants`]).
//!
//! The ruleset is made here, in the outer stub before the worker starts
//! (it allocates); the worker joins it with one raw
//! `landlock_restrict_self` (sys/raw.rs) before its filters and exec.

use std::ffi::{CString, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use landlock::{AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope};
use nix::errno::Errno;

use crate::cause::{Lack, SCOPED_ABI};
use crate::sys;

/// File systems no file of which the command may write: a process's
/// knobs without a ptrace-mode check (procfs), and the cgroup trees that
/// move and throttle processes.
const CARVED_TYPES: [&str; 3] = ["proc", "cgroup", "cgroup2"];

/// The Landlock domain of a run, ready for the worker to join.
pub struct Domain {
    /// The ruleset (close-on-exec), held by the stub for the run.
    pub ruleset: OwnedFd,
    /// The mount points where nothing may be written.
    pub carved: Vec<PathBuf>,
    /// How many files and folders were granted writes beneath.
    pub granted: usize,
}

/// A mount point as `mountinfo` writes it: octal escapes for space, tab,
/// newline and backslash.
pub(crate) fn unescape(field: &[u8]) -> PathBuf {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (field[i], octal) {
            (b'\\', Some(d)) => {
                let value = d.iter().fold(0u16, |v, b| v * 8 + u16::from(b - b'0'));
                out.push(value as u8);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    PathBuf::from(OsString::from_vec(out))
}

/// The mount points of `CARVED_TYPES` in a `mountinfo` text.
fn carved_mounts(mountinfo: &[u8]) -> Vec<PathBuf> {
    mountinfo
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            let dash = fields.iter().position(|f| *f == b"-")?;
            let fstype = std::str::from_utf8(fields.get(dash + 1)?).ok()?;
            let point = fields.get(4)?;
            CARVED_TYPES.contains(&fstype).then(|| unescape(point))
        })
        .collect()
}

/// Where writes are granted so that none is beneath a `carved` mount:
/// each entry of the folder `path`, open on `dir`, that is no carved
/// mount, no symbolic link (its target is granted, or not, as itself), and
/// holds no carved mount; one that holds one is walked the same way. A
/// name made later in a walked folder (`/` itself, say) has no grant:
/// nothing can be written there. Each entry granted is opened here,
/// `O_PATH` relative to the folder listed and not followed (a link
/// swapped in since the listing grants nothing; what is gone meanwhile is
/// left out), and handed to `grant` with its path; what `grant` fails
/// with ends the walk. A folder that cannot be listed grants nothing.
fn grants(
    dir: BorrowedFd<'_>,
    path: &Path,
    carved: &[PathBuf],
    grant: &mut dyn FnMut(&Path, OwnedFd) -> Result<(), Errno>,
) -> Result<(), Errno> {
    let mut entries: Vec<(CString, u8)> = Vec::new();
    let mut buf = vec![0u8; 4096];
    let listed = sys::each_entry(dir.as_raw_fd(), &mut buf, |name, kind| {
        if ![&b"."[..], b".."].contains(&name.to_bytes()) {
            entries.push((name.to_owned(), kind));
        }
        true
    });
    if listed.is_err() {
        return Ok(());
    }
    for (name, kind) in entries {
        // The folder's word on the type, or where it has none the file's.
        let kind = match kind {
            libc::DT_UNKNOWN => match sys::stat_at(dir.as_raw_fd(), &name) {
                Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFDIR => libc::DT_DIR,
                Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFLNK => libc::DT_LNK,
                Ok(_) => libc::DT_REG,
                Err(_) => continue,
            },
            kind => kind,
        };
        let entry = path.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
        if kind == libc::DT_LNK || carved.contains(&entry) {
            continue;
        }
        let holds_carved = carved.iter().any(|c| c.starts_with(&entry));
        if holds_carved && kind != libc::DT_DIR {
            continue;
        }
        let flags = if holds_carved {
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW
        } else {
            libc::O_PATH | libc::O_NOFOLLOW
        };
        let Ok(fd) = sys::open_at(dir.as_raw_fd(), &name, flags, 0).map(sys::owned) else {
            continue;
        };
        if holds_carved {
            grants(fd.as_fd(), &entry, carved, grant)?;
        } else {
            grant(&entry, fd)?;
        }
    }
    Ok(())
}

/// The capability-free way's Landlock ruleset: signals and abstract Unix
/// sockets scoped, files written anywhere but on procfs and cgroup mounts;
/// with `kernel_sockets`, Unix socket resolution handled too (the socket
/// policy's right: sockets/kernel.rs adds its rules); or what the kernel
/// lacks for it. Made by the `landlock` crate with its
/// best-effort fallback turned off: a kernel without scoping is an error
/// here, never a weaker domain. Its rules are added with one raw
/// `landlock_add_rule` each (sys/raw.rs): the crate's `add_rule` makes an
/// `fstat` per rule, to trim rights that hold for folders only, and the
/// one right granted here holds for any file.
pub fn ruleset(kernel_sockets: bool) -> Result<Domain, Lack> {
    let mountinfo = sys::read_file_at(libc::AT_FDCWD, c"/proc/self/mountinfo")
        .map_err(|e| Lack::Other(format!("/proc/self/mountinfo: {}", e.desc())))?;
    let mut carved = carved_mounts(&mountinfo);
    carved.sort();
    carved.dedup();
    // One beneath another is carved already (`/proc/...` under `/proc`).
    let nested = |c: &PathBuf, all: &[PathBuf]| all.iter().any(|o| o != c && c.starts_with(o));
    let all = carved.clone();
    carved.retain(|c| !nested(c, &all));
    let handled = match kernel_sockets {
        true => AccessFs::WriteFile | AccessFs::ResolveUnix,
        false => AccessFs::WriteFile.into(),
    };
    let made = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .and_then(|r| r.scope(Scope::Signal | Scope::AbstractUnixSocket))
        .and_then(|r| r.create());
    let ruleset = match made.map(Option::<OwnedFd>::from) {
        Ok(Some(ruleset)) => ruleset,
        Ok(None) => return Err(lack("landlock_create_ruleset: no ruleset".to_string())),
        Err(e) => return Err(lack(format!("landlock_create_ruleset: {e}"))),
    };
    let root = sys::open_path(c"/", libc::O_RDONLY | libc::O_DIRECTORY)
        .map_err(|e| lack(format!("/: {}", e.desc())))?;
    // Each rule's descriptor is closed once all are added, in one
    // close_range per run of consecutive numbers instead of a close each.
    let mut added = Vec::new();
    let walked = grants(root.as_fd(), Path::new("/"), &carved, &mut |_, fd| {
        sys::landlock_add_path_rule(ruleset.as_raw_fd(), fd.as_raw_fd(), WRITE_FILE)?;
        added.push(fd);
        Ok(())
    });
    let granted = added.len();
    sys::close_many(added);
    walked.map_err(|e| lack(format!("landlock_add_rule: {}", e.desc())))?;
    Ok(Domain {
        ruleset,
        carved,
        granted,
    })
}

/// The one right the ruleset handles and grants.
const WRITE_FILE: u64 = AccessFs::WriteFile as u64;

/// What the kernel lacks, where the ruleset could not be made: the crate
/// says what failed, not which ABI the kernel has, so ask it.
fn lack(made: String) -> Lack {
    match abi() {
        Err(Errno::EOPNOTSUPP) => Lack::NotEnabled,
        Err(_) => Lack::NotBuilt,
        Ok(v) if v < SCOPED_ABI => Lack::NoScoping(v),
        Ok(_) => Lack::Other(made),
    }
}

/// The `SRT_DEBUG` line: what the domain holds, and what stays within
/// the command's reach on this way (docs/ways-in.md).
pub fn describe(domain: &Domain) -> String {
    let carved: Vec<String> = domain
        .carved
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    format!(
        "capability-free: Landlock ABI {}: signals and abstract Unix sockets scoped, \
         ptrace-mode access to processes outside barred, no file written on the procfs and \
         cgroup mounts ({}; writes granted beneath {} other places); the unix filter refuses \
         priorities, limits and scheduling of any process but the command's own. Still \
         possible on this way, with no PID namespace: seeing the processes outside and \
         reading their world-readable /proc files, and joining a process group of the \
         caller's session, through which no call reaches anyone",
        abi().unwrap_or(0),
        if carved.is_empty() {
            "none mounted".to_string()
        } else {
            carved.join(", ")
        },
        domain.granted
    )
}

/// The kernel's Landlock ABI, for `SRT_DEBUG` and messages.
pub fn abi() -> Result<i32, Errno> {
    sys::landlock_abi()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn procfs_and_cgroup_mounts_are_carved_out_of_the_grants() {
        let info = b"22 1 0:21 / / rw - ext4 /dev/vda rw\n\
                     23 22 0:5 / /proc rw,nosuid - proc proc rw\n\
                     24 22 0:6 / /sys rw - sysfs sysfs rw\n\
                     25 24 0:7 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n\
                     26 22 0:8 / /run/a\\040b/proc rw - proc proc rw\n\
                     27 22 0:9 / /tmp rw - tmpfs tmpfs rw\n";
        assert_eq!(
            carved_mounts(info),
            [
                PathBuf::from("/proc"),
                PathBuf::from("/sys/fs/cgroup"),
                PathBuf::from("/run/a b/proc"),
            ]
        );
    }

    #[test]
    fn the_grants_go_round_the_carved_mounts() {
        let root = std::env::temp_dir().join(format!("capfree-grants-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for dir in ["proc/1", "sys/fs/cgroup/x", "sys/kernel", "home/u", "tmp"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("file"), "").unwrap();
        std::os::unix::fs::symlink("proc", root.join("link")).unwrap();
        let carved = [root.join("proc"), root.join("sys/fs/cgroup")];
        let mut out = Vec::new();
        let dir = sys::open_path(
            &CString::new(root.as_os_str().as_bytes()).unwrap(),
            libc::O_RDONLY | libc::O_DIRECTORY,
        )
        .unwrap();
        grants(dir.as_fd(), &root, &carved, &mut |path, fd| {
            // An O_PATH descriptor of the entry itself.
            let flags = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_GETFL).unwrap();
            assert_ne!(flags & libc::O_PATH, 0, "{}", path.display());
            out.push(path.to_path_buf());
            Ok(())
        })
        .unwrap();
        out.sort();
        let rel: Vec<String> = out
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        assert_eq!(rel, ["file", "home", "sys/kernel", "tmp"]);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
