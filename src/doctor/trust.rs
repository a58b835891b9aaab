//! What the doctor may run (issue 54). It runs on the host, beside
//! sandboxes whose commands run as the same user and may write whatever
//! folder a client lets them: srt's `allowWrite: ["."]` is the folder
//! srt is started in, which can be any project; Claude Code's is each
//! session's project. Which folders those are cannot be known from here,
//! so the doctor never asks: it runs a program only where no process of
//! a user could have put or changed it.
//!
//! - This binary: run as `/proc/self/exe`, the file now running (under
//!   the name it was found by, so the shim answers as `bwrap`), never by
//!   a path that could be made to lead elsewhere meanwhile.
//! - Else a program no name on whose way (each folder from `/`, the
//!   file) this user can change: on a read-only mount, or neither the
//!   user's own, nor writable by them, their group or others. Inside a
//!   user namespace root's files show as the overflow uid, often the
//!   user's own number; a read-only mount settles those. A root user's
//!   sandboxes write root's files, so for root the program must also lie
//!   in the system's folders (`/usr`, `/bin`, `/sbin`, `/nix/store`).
//!
//! Everything else is named with why and not run. Node and other helpers
//! are never run at all: what the doctor says of them it reads
//! (node.rs, clients.rs).

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{sys, walk};

/// Folders the system's programs come from.
const SYSTEM: [&str; 4] = ["/usr/", "/bin/", "/sbin/", "/nix/store/"];

/// Whether the file at `path` (links followed) is this binary.
pub fn is_this_binary(path: &Path) -> bool {
    let id = |m: std::fs::Metadata| (m.dev(), m.ino());
    match (
        std::fs::metadata(path).map(id),
        std::fs::metadata("/proc/self/exe").map(id),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// This binary as a command, under the name `as_named`.
pub fn this_binary(as_named: &Path) -> Command {
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0(as_named);
    cmd
}

/// A command that runs the program at `path`, or why the doctor will not
/// run it.
pub fn command(path: &Path) -> Result<Command, String> {
    if is_this_binary(path) {
        return Ok(this_binary(path));
    }
    let root = nix::unistd::geteuid().is_root();
    let file = unchangeable_way(path, root).map_err(|why| {
        format!(
            "{}: not run: {why}, so a sandboxed command could have put or changed it",
            path.display()
        )
    })?;
    let text = file.to_string_lossy();
    if root && !SYSTEM.iter().any(|s| text.starts_with(s)) {
        return Err(format!(
            "{}: not run: it is {}, outside the system's folders ({}), where a sandbox of root's \
             may write",
            path.display(),
            file.display(),
            SYSTEM.join(", ")
        ));
    }
    let mut cmd = Command::new(&file);
    cmd.arg0(path);
    Ok(cmd)
}

/// Why this user (`root`: root, whose own files are not counted: see the
/// module's text) could change the name at `p` (open on `fd`), if it
/// could. A link is judged by its folder (a link cannot be changed, only
/// replaced).
fn changeable(fd: &OwnedFd, st: &libc::stat, p: &Path, root: bool) -> Option<String> {
    if st.st_mode & libc::S_IFMT == libc::S_IFLNK || walk::on_read_only_mount(fd) {
        return None;
    }
    if st.st_mode & 0o022 != 0 {
        return Some(format!(
            "{} is writable by its group or others",
            p.display()
        ));
    }
    if root {
        return None;
    }
    // The owner may make it writable. Inside a user namespace a file of
    // an unmapped owner (root's) shows as the overflow uid, which may be
    // this user's number too: there only `access` below can tell.
    if st.st_uid == nix::unistd::geteuid().as_raw() && st.st_uid != overflow_uid() {
        return Some(format!("{} is this user's", p.display()));
    }
    walk::writable_by_me(fd).then(|| format!("{} is writable by this user", p.display()))
}

/// The file `path` leads to, where no name on the way (`/`, each folder,
/// each link met, the file) is [`changeable`]; else the first that is,
/// in words.
pub fn unchangeable_way(path: &Path, root: bool) -> Result<PathBuf, String> {
    let top = walk::root()?;
    let st = sys::stat_fd(top.as_raw_fd()).map_err(|e| e.desc().to_string())?;
    if let Some(why) = changeable(&top, &st, Path::new("/"), root) {
        return Err(why);
    }
    let end = walk::walk(path, &mut |n| match changeable(n.fd, n.st, n.path, root) {
        Some(why) => Err(why),
        None => Ok(()),
    })?;
    if end.st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(format!("{} is not a program", end.path.display()));
    }
    Ok(end.path)
}

/// The uid an unmapped owner shows as (`/proc/sys/kernel/overflowuid`).
fn overflow_uid() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/overflowuid")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(65534)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_programs_run_and_a_users_do_not() {
        let root = nix::unistd::geteuid().is_root();
        // The system's shell: root's all the way (merged /usr or not).
        assert!(unchangeable_way(Path::new("/bin/sh"), root).is_ok());
        assert!(command(Path::new("/bin/sh")).is_ok());
        // This binary runs as itself, wherever it lies.
        let me = std::env::current_exe().unwrap();
        let cmd = command(&me).unwrap();
        assert_eq!(cmd.get_program(), "/proc/self/exe");
        // A folder anyone may write.
        let dir = std::env::temp_dir().join(format!("trust-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prog = dir.join("node");
        std::fs::write(&prog, "#!/bin/sh\n").unwrap();
        let why = command(&prog).unwrap_err();
        assert!(why.contains("not run"), "{why}");
        assert!(
            unchangeable_way(&prog, root)
                .unwrap_err()
                .contains("is writable by its group or others"),
            "{prog:?}"
        );
        // A link to a system program, in it, is no way to one.
        let link = dir.join("sh");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/bin/sh", &link).unwrap();
        assert!(command(&link).is_err());
        assert!(unchangeable_way(Path::new("relative/node"), root).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
