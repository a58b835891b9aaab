//! The cgroup v2 tree as the kernel shows it to this process: where it
//! is mounted and this process's cgroup in it (`/proc/self/mountinfo`,
//! `/proc/self/cgroup`), the delegated subtree a run's cgroup can be made
//! in (the shim's), the limits in force here and the events its cgroup
//! counted (the helper's). Read from the kernel's files only.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::cli::caps::{Limits, PERIOD};
use crate::run::capfree::unescape;

/// The cgroup v2 tree of this process: where it is mounted, and this
/// process's cgroup in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    pub mount: PathBuf,
    pub own: PathBuf,
}

impl Tree {
    /// From `/proc/self/mountinfo` and `/proc/self/cgroup` (the kernel's).
    pub fn read() -> Result<Tree, String> {
        let mountinfo = std::fs::read("/proc/self/mountinfo")
            .map_err(|e| format!("/proc/self/mountinfo: {}", crate::error::strerror(&e)))?;
        let cgroup = std::fs::read("/proc/self/cgroup")
            .map_err(|e| format!("/proc/self/cgroup: {}", crate::error::strerror(&e)))?;
        Tree::parse(&mountinfo, &cgroup)
    }

    fn parse(mountinfo: &[u8], cgroup: &[u8]) -> Result<Tree, String> {
        let mount = mountinfo
            .split(|&b| b == b'\n')
            .find_map(|line| {
                let text = String::from_utf8_lossy(line);
                let (left, right) = text.split_once(" - ")?;
                (right.split(' ').next()? == "cgroup2")
                    .then(|| left.split(' ').nth(4).map(|m| unescape(m.as_bytes())))?
            })
            .ok_or("no cgroup v2 tree is mounted")?;
        let own = cgroup
            .split(|&b| b == b'\n')
            .find_map(|l| l.strip_prefix(b"0::"))
            .ok_or("this process is in no cgroup v2 (no 0:: line in /proc/self/cgroup)")?;
        Ok(Tree {
            mount,
            own: PathBuf::from(OsStr::from_bytes(own)),
        })
    }

    /// `cgroup` (a path in the tree, from `/`) as a folder here.
    pub fn folder(&self, cgroup: &Path) -> PathBuf {
        self.mount.join(cgroup.strip_prefix("/").unwrap_or(cgroup))
    }

    /// This process's cgroup and every one above it, the nearest first.
    pub fn ancestors(&self) -> impl Iterator<Item = &Path> {
        self.own.ancestors()
    }
}

/// One of a cgroup's files, trimmed; `None` where it cannot be read.
pub fn read(folder: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(folder.join(file))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Where the run's cgroup can be made: the nearest cgroup above this
/// process's (or the root, where this process is in it) that this user
/// owns and may write, whose controllers include what `asked` needs and
/// whose children get them (or can: a cgroup with no process of its own
/// takes `+memory` in `cgroup.subtree_control`). Moving this process
/// there takes write access to that cgroup's `cgroup.procs` (the common
/// ancestor of both). Err: why none is.
pub fn delegated(tree: &Tree, asked: &Limits) -> Result<(PathBuf, Vec<&'static str>), String> {
    let uid = nix::unistd::geteuid().as_raw();
    let needed = asked.controllers();
    let mut why = Vec::new();
    for cgroup in tree.ancestors() {
        let is_root = cgroup == Path::new("/");
        if cgroup == tree.own && !is_root {
            continue;
        }
        let folder = tree.folder(cgroup);
        let owner = std::fs::metadata(&folder).map(|m| m.uid()).ok();
        let writable = |f: &Path| nix::unistd::access(f, nix::unistd::AccessFlags::W_OK).is_ok();
        if owner != Some(uid) && uid != 0
            || !writable(&folder)
            || !writable(&folder.join("cgroup.procs"))
        {
            why.push(format!(
                "{} is not yours to write (the first cgroup above yours that is not)",
                folder.display()
            ));
            break;
        }
        let have = read(&folder, "cgroup.controllers").unwrap_or_default();
        let missing: Vec<&str> = needed
            .iter()
            .copied()
            .filter(|c| !have.split_whitespace().any(|h| h == *c))
            .collect();
        if !missing.is_empty() {
            // cgroup v1 may hold them (this project's machines do).
            let v1 = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
            let held: Vec<&str> = missing
                .iter()
                .copied()
                .filter(|c| v1.lines().any(|l| l.split(':').nth(1) == Some(*c)))
                .collect();
            why.push(format!(
                "{} has no {} controller{}",
                folder.display(),
                missing.join(" or "),
                if held.is_empty() {
                    String::new()
                } else {
                    format!(" (cgroup v1 holds {} on this machine)", held.join(" and "))
                }
            ));
            continue;
        }
        let on = read(&folder, "cgroup.subtree_control").unwrap_or_default();
        let off: Vec<&'static str> = needed
            .iter()
            .copied()
            .filter(|c| !on.split_whitespace().any(|h| h == *c))
            .collect();
        let busy = read(&folder, "cgroup.procs").is_some_and(|p| !p.is_empty());
        if !off.is_empty() && busy && !is_root {
            why.push(format!(
                "{} holds processes of its own, so its children cannot get {}",
                folder.display(),
                off.join(" or ")
            ));
            continue;
        }
        return Ok((folder, off));
    }
    if why.is_empty() {
        why.push(format!("nothing above {} to write", tree.own.display()));
    }
    Err(why.join("; "))
}

/// The limits in force for this process: the lowest of its cgroup's and
/// every one above (`max`: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InForce {
    pub memory: Option<u64>,
    /// CPU microseconds per [`PERIOD`].
    pub cpu: Option<u64>,
    pub pids: Option<u64>,
}

impl InForce {
    pub fn read(tree: &Tree) -> InForce {
        InForce::read_held(tree, false)
    }

    /// [`InForce::read`]; with `nested` (`SRT_ALLOW_NESTED_USERNS=1`: a
    /// command may make user, mount and cgroup namespaces of its own, and
    /// through a cgroup2 mount of its own write any cgroup file its user
    /// may write, the run's own cgroup's limits included; issue 68), only
    /// the limits in files this user cannot write count: those hold
    /// against any namespace the command makes.
    pub fn read_held(tree: &Tree, nested: bool) -> InForce {
        let mut f = InForce::default();
        let low = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for cgroup in tree.ancestors() {
            let folder = tree.folder(cgroup);
            let held = |file: &str| !nested || !writable_by_user(&folder.join(file));
            let number = |file| {
                read(&folder, file)
                    .filter(|_| held(file))
                    .and_then(|v| v.parse::<u64>().ok())
            };
            f.memory = low(f.memory, number("memory.max"));
            f.pids = low(f.pids, number("pids.max"));
            let cpu = read(&folder, "cpu.max")
                .filter(|_| held("cpu.max"))
                .and_then(|v| {
                    let (quota, period) = v.split_once(' ')?;
                    let (q, p): (u64, u64) = (quota.parse().ok()?, period.parse().ok()?);
                    (p > 0).then(|| q * PERIOD / p)
                });
            f.cpu = low(f.cpu, cpu);
        }
        f
    }

    /// Whether every limit of `asked` is in force, at its value or lower:
    /// what is not, in words.
    pub fn holds(&self, asked: &Limits) -> Result<(), String> {
        let short = |a: Option<u64>, f: Option<u64>| a.is_some_and(|a| f.is_none_or(|f| f > a));
        let mut missing = Vec::new();
        let found = |v: Option<u64>, unit: &str| v.map_or("none".into(), |v| format!("{v}{unit}"));
        if short(asked.memory, self.memory) {
            missing.push(format!(
                "memory.max in force: {}",
                found(self.memory, " bytes")
            ));
        }
        if short(asked.cpu, self.cpu) {
            missing.push(format!(
                "cpu.max in force: {}",
                found(self.cpu, " us per 100 ms")
            ));
        }
        if short(asked.pids, self.pids) {
            missing.push(format!("pids.max in force: {}", found(self.pids, "")));
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing.join(", "))
        }
    }
}

/// Whether this process's user could write `file` in a cgroup2 mount of
/// its own, whatever the mount here says: its owner (who may `chmod` it),
/// or any write bit for group or others; root, or a file that cannot be
/// read, always.
fn writable_by_user(file: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let euid = nix::unistd::geteuid();
    match std::fs::metadata(file) {
        Ok(m) => euid.is_root() || m.uid() == euid.as_raw() || m.mode() & 0o022 != 0,
        Err(_) => true,
    }
}

/// What stops a command in its cgroup: the OOM killer's kills and the
/// refused forks, counted by the kernel (`memory.events`, `pids.events`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events {
    pub oom_kills: u64,
    pub forks_refused: u64,
}

impl Events {
    pub fn read(tree: &Tree) -> Events {
        let folder = tree.folder(&tree.own);
        let field = |file, key: &str| {
            read(&folder, file)
                .and_then(|t| {
                    t.lines()
                        .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                })
                .unwrap_or(0)
        };
        Events {
            oom_kills: field("memory.events", "oom_kill "),
            forks_refused: field("pids.events", "max "),
        }
    }

    /// The lines for what happened since `before`.
    pub fn lines(&self, before: &Events, asked: &Limits) -> Vec<String> {
        let mut out = Vec::new();
        let kills = self.oom_kills.saturating_sub(before.oom_kills);
        if kills > 0 {
            out.push(format!(
                "apply-seccomp: the run's memory cap ({}) stopped the command: the kernel's OOM \
                 killer ended {kills} of its processes",
                asked.describe()
            ));
        }
        let refused = self.forks_refused.saturating_sub(before.forks_refused);
        if refused > 0 {
            out.push(format!(
                "apply-seccomp: the run's cgroup task cap (pids.max {}) refused {refused} forks \
                 (EAGAIN)",
                asked.pids.map_or("in force".into(), |p| p.to_string())
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::caps::Limits;

    #[test]
    fn the_tree_is_read_from_the_kernels_files() {
        let mountinfo = b"24 1 0:22 / / rw - ext4 /dev/sda rw\n\
            30 25 0:26 / /sys/fs/cgroup/uni\\040fied rw,relatime - cgroup2 cgroup2 rw\n";
        let cgroup =
            b"4:memory:/x\n0::/user.slice/user-1000.slice/user@1000.service/app.slice/a.scope\n";
        let tree = Tree::parse(mountinfo, cgroup).unwrap();
        assert_eq!(tree.mount, Path::new("/sys/fs/cgroup/uni fied"));
        assert_eq!(
            tree.folder(Path::new("/user.slice")),
            Path::new("/sys/fs/cgroup/uni fied/user.slice")
        );
        assert_eq!(tree.ancestors().count(), 6);
        assert!(Tree::parse(b"24 1 0:22 / / rw - ext4 /dev/sda rw\n", cgroup).is_err());
        assert!(Tree::parse(mountinfo, b"4:memory:/x\n").is_err());
    }

    #[test]
    fn a_limit_in_force_above_holds_a_request() {
        let asked = Limits {
            memory: Some(256 << 20),
            cpu: None,
            pids: None,
        };
        let held = InForce {
            memory: Some(128 << 20),
            ..InForce::default()
        };
        assert!(held.holds(&asked).is_ok());
        assert!(
            InForce::default()
                .holds(&asked)
                .unwrap_err()
                .contains("memory.max in force: none")
        );
        let loose = InForce {
            memory: Some(1 << 30),
            ..InForce::default()
        };
        assert!(loose.holds(&asked).is_err());
    }
}
