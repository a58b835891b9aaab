//! Passive observation of write-intent calls (`SRT_OBSERVE_SOCK`), run by
//! the outer stub, which is under no filter that stops it.
//!
//! Before anything else the stub connects to the client's socket (the unix
//! filter would refuse the socket later) and opens a handle on `/proc` (init
//! mounts a fresh one over it in the shared mount namespace; the handle
//! keeps the caller's, where the pids the kernel reports to the stub live).
//! The worker installs the observe filter (USER_NOTIF for the calls in
//! `rules::observed`) and passes its listener over a socketpair. For each
//! notification the stub reads the path arguments from the caller's memory,
//! checks the notification is still pending (so the pid was not reused),
//! lets the call continue unchanged, then queues one JSON line per path.
//!
//! Everything is fail-open: any failure here leaves the command running,
//! unobserved, under its other filters. Sends never block: lines go to a
//! bounded queue written with non-blocking sends, and a line that does not
//! fit whole is dropped. The paths are read from the command's memory:
//! attacker-controlled hints for diagnostics, never a policy decision.

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use nix::errno::Errno;
use nix::fcntl::{OFlag, open, readlinkat};
use nix::sys::socket::{
    AddressFamily, MsgFlags, SockFlag, SockType, UnixAddr, connect, send, socket,
};
use nix::sys::stat::Mode;

use crate::cli::Observe;
use crate::filter::{self, rules};
use crate::json;
use crate::sys;

/// The queue bound: more than a burst of lines between two polls.
const QUEUE_MAX: usize = 256 * 1024;
/// The longest path read from the command's memory (PATH_MAX).
const PATH_MAX: usize = 4096;
/// `AT_FDCWD` as the low 32 bits of a syscall argument.
const AT_FDCWD: i32 = -100;

/// The `{"observe_init_error":...}` line for stderr and the socket.
pub fn init_error_line(message: &str) -> String {
    format!(
        "{{\"observe_init_error\":{}}}",
        json::string(message.as_bytes())
    )
}

/// The connection to the client and the line queue.
pub struct Observer {
    sock: OwnedFd,
    queue: Vec<u8>,
    encoded_cmd: Option<String>,
    /// `/proc` as the caller sees it, opened before init mounts its own.
    proc_dir: Option<OwnedFd>,
    table: Vec<rules::Observed>,
    /// Lines dropped because the queue was full.
    pub dropped: u64,
    /// Lines queued.
    pub reported: u64,
}

impl Observer {
    /// Connects to the client's socket and sends the `encodedCommand`
    /// header. The error is the text of the `observe_init_error` line.
    pub fn connect(cfg: &Observe) -> Result<Observer, String> {
        let path = cfg.socket.as_os_str();
        let failed = |e: Errno| format!("connect {}: {}", path.to_string_lossy(), e.desc());
        let sock = socket(
            AddressFamily::Unix,
            SockType::Stream,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(failed)?;
        let addr = UnixAddr::new(path).map_err(failed)?;
        connect(sock.as_raw_fd(), &addr).map_err(failed)?;
        // Non-blocking from here: no send may ever hold up the stub.
        nix::fcntl::fcntl(&sock, nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
            .map_err(failed)?;
        let proc_dir = open(
            "/proc",
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .ok();
        let encoded_cmd = cfg.encoded_cmd.as_ref().map(|c| json::string(c.as_bytes()));
        let mut observer = Observer {
            sock,
            queue: Vec::new(),
            encoded_cmd,
            proc_dir,
            table: rules::observed(filter::ARCH),
            dropped: 0,
            reported: 0,
        };
        if let Some(cmd) = observer.encoded_cmd.clone() {
            observer.push(format!("{{\"encodedCommand\":{cmd}}}\n"));
        }
        observer.flush();
        Ok(observer)
    }

    /// Queues a line if it fits whole, then tries to send.
    fn push(&mut self, line: String) {
        if self.queue.len() + line.len() > QUEUE_MAX {
            self.dropped += 1;
            return;
        }
        self.queue.extend_from_slice(line.as_bytes());
        self.flush();
    }

    /// Sends what the socket takes now; keeps the rest queued.
    pub fn flush(&mut self) {
        while !self.queue.is_empty() {
            match send(
                self.sock.as_raw_fd(),
                &self.queue,
                MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
            ) {
                Ok(0) => return,
                Ok(n) => {
                    self.queue.drain(..n);
                }
                Err(Errno::EINTR) => continue,
                Err(Errno::EAGAIN) => return,
                Err(_) => {
                    // The client is gone: nothing more can be told.
                    self.dropped += 1;
                    self.queue.clear();
                    return;
                }
            }
        }
    }

    /// Lines are waiting for the socket to take them.
    pub fn pending(&self) -> bool {
        !self.queue.is_empty()
    }

    pub fn socket(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }

    /// Reports a protecting mount found gone (guard/; also printed by
    /// main).
    pub fn mount_guard(&mut self, lost: &crate::run::guard::Lost) {
        let line = lost.json(self.encoded_cmd.as_deref());
        self.push(line);
        self.flush();
    }

    /// Reports an error found after the start (also printed by main).
    /// A refused call (report.rs): `fields`, a JSON object's members
    /// without its braces. No `path` member: srt's monitor turns a line
    /// with one into a write violation, and ignores the rest.
    pub fn refusal(&mut self, fields: &str) {
        self.report(format!("{{{fields}"));
    }

    /// One event's line, `line` its object without the closing brace:
    /// the command's attribution added, queued and counted.
    fn report(&mut self, mut line: String) {
        if let Some(cmd) = &self.encoded_cmd {
            line.push_str(",\"encodedCommand\":");
            line.push_str(cmd);
        }
        line.push_str("}\n");
        self.reported += 1;
        self.push(line);
    }

    pub fn init_error(&mut self, message: &str) {
        self.push(init_error_line(message) + "\n");
    }

    /// One notification received on the listener, its paths read while
    /// the call waits; [`Observer::finish`] lets it go on. Errors are the
    /// target's (gone, or not readable): nothing to report. `read_only`:
    /// the writes aimed at a read-only place (the sandbox's read-only
    /// mounts refuse them with EROFS: the kernel, not a filter), for the
    /// refusal report (report.rs): the call's name and the path.
    pub fn look(&self, notif: &libc::seccomp_notif) -> Looked {
        let entry = self
            .table
            .iter()
            .find(|o| o.nr as i32 == notif.data.nr)
            .copied();
        let pid = notif.pid as libc::pid_t;
        let mut paths: Vec<Vec<u8>> = Vec::new();
        if let Some(entry) = entry {
            for arg in entry.paths {
                paths.extend(self.resolve(pid, &notif.data.args, arg));
            }
        }
        // The same mounts as the command's: the stub shares its mount
        // namespace and its root.
        let read_only = entry
            .map(|e| {
                paths
                    .iter()
                    .filter(|p| on_read_only_mount(p))
                    .map(|p| (e.name, p.clone()))
                    .collect()
            })
            .unwrap_or_default();
        Looked {
            entry,
            paths,
            read_only,
        }
    }

    /// Lets the call [`Observer::look`] read go on, and queues its lines.
    pub fn finish(
        &mut self,
        listener: BorrowedFd<'_>,
        notif: &libc::seccomp_notif,
        looked: Looked,
    ) {
        // The pid is the thread's only while it still waits on us.
        let valid = sys::notif_id_valid(listener, notif.id);
        let _ = sys::notif_continue(listener, notif.id);
        let (Some(entry), true) = (looked.entry, valid) else {
            return;
        };
        for path in looked.paths {
            self.report(format!(
                "{{\"nr\":{},\"syscall\":\"{}\",\"pid\":{},\"path\":{}",
                entry.nr,
                entry.name,
                notif.pid,
                json::string(&path)
            ));
        }
    }

    /// The absolute path an argument writes, as far as it can be made:
    /// relative paths are joined to the caller's working directory or to
    /// the directory `dirfd` names (an empty path is that directory); a
    /// descriptor gives the path it is open on. `None`: nothing written on
    /// a path (`bind` of an address that is no Unix pathname).
    fn resolve(&self, pid: libc::pid_t, args: &[u64; 6], arg: &rules::PathArg) -> Option<Vec<u8>> {
        let (path, dirfd) = match *arg {
            rules::PathArg::At { dirfd, path } => {
                let mut buf = vec![0u8; PATH_MAX];
                let text = match sys::read_remote_string(pid, args[path as usize], &mut buf) {
                    Some(n) => buf[..n].to_vec(),
                    None if args[path as usize] == 0 => Vec::new(),
                    None => return Some(Vec::new()),
                };
                (
                    text,
                    dirfd.map_or(AT_FDCWD, |i| args[i as usize] as u32 as i32),
                )
            }
            rules::PathArg::Fd { fd } => (Vec::new(), args[fd as usize] as u32 as i32),
            rules::PathArg::UnixAddr { addr, len } => (
                unix_path(pid, args[addr as usize], args[len as usize])?,
                AT_FDCWD,
            ),
        };
        if path.starts_with(b"/") {
            return Some(path);
        }
        let link = if dirfd == AT_FDCWD {
            format!("{pid}/cwd")
        } else {
            format!("{pid}/fd/{dirfd}")
        };
        let Some(base) = self
            .proc_dir
            .as_ref()
            .and_then(|d| readlinkat(d.as_fd(), link.as_str()).ok())
        else {
            return Some(path);
        };
        Some(join(&base, &path))
    }
}

/// The path of a `sockaddr_un` at `addr` (`len` bytes) in `pid`'s memory,
/// if it is a pathname address: the file `bind` creates, read as the
/// kernel reads it (`unix_mkname_bsd`): exactly `len` bytes, refused
/// above `sizeof(struct sockaddr_un)`, the path ending at `len` or at its
/// first NUL, whichever comes first. Unnamed and abstract addresses, and
/// other families, create none.
fn unix_path(pid: libc::pid_t, addr: u64, len: u64) -> Option<Vec<u8>> {
    let family = std::mem::size_of::<libc::sa_family_t>();
    let len = usize::try_from(len).ok()?;
    if len <= family || len > std::mem::size_of::<libc::sockaddr_un>() {
        return None;
    }
    let mut buf = [0u8; std::mem::size_of::<libc::sockaddr_un>()];
    sys::read_remote_exact(pid, addr, &mut buf[..len])?;
    if libc::sa_family_t::from_ne_bytes([buf[0], buf[1]]) != libc::AF_UNIX as libc::sa_family_t {
        return None;
    }
    let path = &buf[family..len];
    let path = &path[..path.iter().position(|&b| b == 0).unwrap_or(path.len())];
    // Empty: an abstract address (it starts with a NUL byte).
    (!path.is_empty()).then(|| path.to_vec())
}

/// `base/path`, or `base` alone for an empty path.
fn join(base: &OsString, path: &[u8]) -> Vec<u8> {
    let mut out = base.as_bytes().to_vec();
    if !path.is_empty() {
        if !out.ends_with(b"/") {
            out.push(b'/');
        }
        out.extend_from_slice(path);
    }
    out
}

/// What [`Observer::look`] read of one call.
pub struct Looked {
    entry: Option<rules::Observed>,
    paths: Vec<Vec<u8>>,
    pub read_only: Vec<(&'static str, Vec<u8>)>,
}

/// Whether `path` (absolute, in the command's view) lies on a read-only
/// mount: its nearest existing folder's, for a file still to be made.
fn on_read_only_mount(path: &[u8]) -> bool {
    let mut p = std::path::Path::new(std::ffi::OsStr::from_bytes(path));
    loop {
        match nix::sys::statvfs::statvfs(p) {
            Ok(st) => return st.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY),
            Err(nix::errno::Errno::ENOENT | nix::errno::Errno::ENOTDIR) => match p.parent() {
                Some(parent) => p = parent,
                None => return false,
            },
            Err(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_init_error_line() {
        assert_eq!(
            init_error_line("connect /s: No such file or directory"),
            r#"{"observe_init_error":"connect /s: No such file or directory"}"#
        );
    }

    #[test]
    fn relative_paths_join_their_directory() {
        assert_eq!(join(&"/w".into(), b"a/b"), b"/w/a/b");
        assert_eq!(join(&"/".into(), b"a"), b"/a");
        assert_eq!(join(&"/w".into(), b""), b"/w");
    }
}
