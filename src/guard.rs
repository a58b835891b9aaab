//! The mount guard, run by the outer stub for the whole run.
//!
//! bubblewrap protects a denied path by mounting over it: `--ro-bind
//! /dev/null P` for one that does not exist (bwrap creates P on the host
//! as a mount point), `--ro-bind P P` for one that does. When the host
//! unlinks P, or renames a file over it (another sandbox's clean-up, an
//! editor's atomic save, `git config`), the kernel detaches the mount in
//! every mount namespace, the sandbox's included, and the command can then
//! write the denied path. Nothing inside the sandbox can unmount (the
//! filters refuse it), so a mount that vanishes was removed from outside.
//!
//! Before the command starts, [`Guard::start`] reads what bubblewrap was
//! asked to mount (its PID 1's command line, walked by bwrap_args.rs) and
//! the mounts of the command's mount namespace, and reports any required
//! destination that is not a mount point. During the run the stub polls
//! the namespace's `mountinfo` (POLLPRI on every change) and
//! [`Guard::changed`] reports a watched mount that is gone; the stub then
//! stops the command.
//!
//! Which mounts are watched: where PID 1 is bubblewrap, the mounts at the
//! destinations of its restricting mounts (read-only binds, tmpfs, /dev,
//! /proc, overlays: not the read-write binds, whose loss takes access away,
//! Which mounts are watched: where PID 1 is bubblewrap, the mounts at the
//! destinations of its restricting mounts (read-only binds, tmpfs, /dev,
//! /proc, overlays: not the read-write binds, whose loss takes access away,
//! nor a mount a later one covers). Elsewhere none: nothing says which
//! mounts protect anything, and a host's ordinary clean-ups (a container's
//! mount point unmounted and removed) detach mounts in every namespace.

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{OFlag, open, openat, readlinkat};
use nix::sys::stat::Mode;

use crate::bwrap_args::{self, Mount};
use crate::json;

/// One line of `mountinfo`: the mount's id and where it is mounted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: u64,
    pub point: Vec<u8>,
}

/// Parses `/proc/<pid>/mountinfo`: the first field is the mount id, the
/// fifth the mount point, with space, tab, newline and backslash escaped
/// as `\ooo`.
pub fn parse_mountinfo(text: &[u8]) -> Vec<Entry> {
    text.split(|&b| b == b'\n')
        .filter_map(|line| {
            let mut fields = line.split(|&b| b == b' ');
            let id = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
            let point = unescape(fields.nth(3)?);
            Some(Entry { id, point })
        })
        .collect()
}

fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| field[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}

/// PID 1's command line, word by word.
fn cmdline(proc_dir: BorrowedFd<'_>) -> std::io::Result<Vec<OsString>> {
    use std::io::Read;
    let mut text = Vec::new();
    let fd = openat(
        proc_dir,
        "1/cmdline",
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    std::fs::File::from(fd).read_to_end(&mut text)?;
    if text.last() == Some(&0) {
        text.pop();
    }
    Ok(text
        .split(|&b| b == 0)
        .map(|w| OsString::from_vec(w.to_vec()))
        .collect())
}

/// Whether PID 1 of this PID namespace is bubblewrap: its executable (or,
/// where that link is closed to this process, its `argv[0]`) is named
/// `bwrap`.
fn pid1_is_bwrap(proc_dir: BorrowedFd<'_>) -> bool {
    let named_bwrap = |p: &std::ffi::OsStr| Path::new(p).file_name().is_some_and(|n| n == "bwrap");
    match readlinkat(proc_dir, "1/exe") {
        Ok(exe) => named_bwrap(&exe),
        Err(_) => cmdline(proc_dir)
            .ok()
            .and_then(|w| w.into_iter().next())
            .is_some_and(|argv0| named_bwrap(&argv0)),
    }
}

/// A destination as the kernel names the mount point: absolute, no empty
/// or `.` components, no trailing slash.
fn normalize(dest: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(dest.len() + 1);
    for part in dest.split(|&b| b == b'/') {
        if part.is_empty() || part == b"." {
            continue;
        }
        out.push(b'/');
        out.extend_from_slice(part);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

/// Whether a mount at `later` covers one at `earlier`: the same place,
/// or a folder above it.
fn covers(later: &[u8], earlier: &[u8]) -> bool {
    later == earlier
        || later == b"/"
        || (earlier.starts_with(later) && earlier.get(later.len()) == Some(&b'/'))
}

/// A watched mount.
#[derive(Clone, Debug)]
struct Watched {
    id: u64,
    point: Vec<u8>,
    /// The bubblewrap option that made it, e.g. `--ro-bind /dev/null`.
    made_by: Option<String>,
}

/// A protection that no longer holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lost {
    pub path: Vec<u8>,
    /// The bubblewrap option that made the mount, when known.
    pub made_by: Option<String>,
    /// Found before the command started (it never ran).
    pub before_start: bool,
    /// Something is at the path now, as the sandbox sees it: the host's
    /// file, or what was written while it was unprotected.
    pub exists_now: bool,
}

impl Lost {
    fn at(path: &[u8], made_by: Option<String>, before_start: bool) -> Lost {
        let mut lost = Lost {
            path: path.to_vec(),
            made_by,
            before_start,
            exists_now: false,
        };
        lost.look_again();
        lost
    }

    /// Looks at the path again: the stub calls this once the command's
    /// tree is gone, when nothing can change it any more from inside. The
    /// name is looked for in a listing of its folder: the detach that woke
    /// the stub comes before the unlink or rename has finished, and
    /// listing the folder waits for it (both hold the folder's lock),
    /// where a lookup might still find the old entry.
    pub fn look_again(&mut self) {
        let path = PathBuf::from(OsString::from_vec(self.path.clone()));
        self.exists_now = match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) => match std::fs::read_dir(dir) {
                Ok(entries) => entries.flatten().any(|e| e.file_name() == name),
                Err(_) => std::fs::symlink_metadata(&path).is_ok(),
            },
            _ => std::fs::symlink_metadata(&path).is_ok(),
        };
    }

    /// The helper's message (main.rs prints it).
    pub fn message(&self) -> String {
        let path = String::from_utf8_lossy(&self.path);
        let what = match &self.made_by {
            Some(option) => format!("{path} (bubblewrap's {option} {path})"),
            None => path.to_string(),
        };
        let mut text = format!(
            "apply-seccomp: mount guard: {what} is no longer mounted in the sandbox: it was \
             removed from outside (another sandbox's clean-up, or a file replaced or deleted \
             on the host), so the protection it gave no longer held; {}. Running the command \
             again is safe.",
            if self.before_start {
                "the command did not run"
            } else {
                "the command was stopped"
            }
        );
        if self.exists_now && !self.before_start {
            text.push_str(&format!(
                "\napply-seccomp: mount guard: {path} exists now: it may have been written \
                 while unprotected; look at it."
            ));
        }
        text
    }

    /// The line for the observation socket.
    pub fn json(&self, encoded_cmd: Option<&str>) -> String {
        let mut line = format!(
            "{{\"mount_guard\":\"lost\",\"path\":{},\"before_start\":{},\"exists_now\":{}",
            json::string(&self.path),
            self.before_start,
            self.exists_now
        );
        if let Some(cmd) = encoded_cmd {
            line.push_str(",\"encodedCommand\":");
            line.push_str(cmd);
        }
        line.push_str("}\n");
        line
    }
}

/// What the guard watches, and how it knew.
pub struct Guard {
    proc_dir: OwnedFd,
    mountinfo: std::fs::File,
    watched: Vec<Watched>,
    /// For `SRT_DEBUG`.
    pub summary: String,
}

impl Guard {
    /// Where PID 1 is bubblewrap, opens `/proc` and this process's
    /// `mountinfo` (its mount namespace is the command's); elsewhere says
    /// why there is nothing to guard. Before init starts: init mounts a
    /// new `/proc` over the shared one.
    pub fn open() -> Result<Guard, String> {
        let proc_dir = open(
            "/proc",
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("/proc: {}", e.desc()))?;
        if !pid1_is_bwrap(proc_dir.as_fd()) {
            return Err(
                "PID 1 is not bubblewrap: nothing says which mounts protect anything".into(),
            );
        }
        let fd = openat(
            proc_dir.as_fd(),
            "thread-self/mountinfo",
            OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("/proc/thread-self/mountinfo: {}", e.desc()))?;
        Ok(Guard {
            proc_dir,
            mountinfo: std::fs::File::from(fd),
            watched: Vec::new(),
            summary: String::new(),
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.mountinfo.as_fd()
    }

    fn read(&self) -> std::io::Result<Vec<Entry>> {
        use std::os::unix::fs::FileExt;
        let mut text = Vec::with_capacity(16 * 1024);
        let mut buf = [0u8; 16 * 1024];
        loop {
            match self.mountinfo.read_at(&mut buf, text.len() as u64) {
                Ok(0) => break,
                Ok(n) => text.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(parse_mountinfo(&text))
    }

    /// bubblewrap's arguments: PID 1's command line (its monitor, under
    /// `--unshare-pid`, keeps bubblewrap's own).
    fn bwrap_args(&self) -> Result<Vec<OsString>, String> {
        let words = cmdline(self.proc_dir.as_fd())
            .map_err(|e| format!("/proc/1/cmdline: {}", crate::error::strerror(&e)))?;
        Ok(words.into_iter().skip(1).collect())
    }

    /// Before the command starts: reads what bubblewrap was asked to mount
    /// and the namespace's mounts, picks what to watch, and reports a
    /// required destination that is not mounted. An unreadable mount table
    /// is an error: nothing could be checked.
    pub fn start(&mut self) -> std::io::Result<Result<(), Lost>> {
        let entries = self.read()?;
        Ok(self.pick(&entries))
    }

    fn pick(&mut self, entries: &[Entry]) -> Result<(), Lost> {
        let mounts = self.bwrap_args().and_then(|args| {
            bwrap_args::walk(&args).map_err(|e| format!("bubblewrap's command line: {e}"))
        });
        match mounts {
            Ok(walk) => self.watch_destinations(entries, &walk.mounts),
            Err(why) => {
                self.summary =
                    format!("mount guard: off ({why}: nothing says which mounts protect anything)");
                Ok(())
            }
        }
    }

    fn watch_destinations(&mut self, entries: &[Entry], mounts: &[Mount]) -> Result<(), Lost> {
        let (mut required, mut optional, mut adding) = (0, 0, 0);
        let mut covered = Vec::new();
        let dests: Vec<Vec<u8>> = mounts.iter().map(|m| normalize(&m.dest)).collect();
        for (i, m) in mounts.iter().enumerate() {
            let dest = dests[i].clone();
            // A read-write bind grants; losing it takes access away.
            if !m.restricts {
                adding += 1;
                continue;
            }
            // A later mount at this destination or above it covers this
            // one (srt binds its proxy socket before `--ro-bind / /`): it
            // protects nothing any more, and the kernel may not even list
            // it (no longer under the root).
            if dests[i + 1..].iter().any(|later| covers(later, &dest)) {
                covered.push(String::from_utf8_lossy(&dest).into_owned());
                continue;
            }
            let mut at: Vec<&Entry> = entries.iter().filter(|e| e.point == dest).collect();
            if at.is_empty() {
                // A destination through a symbolic link is mounted where
                // the link leads.
                if let Ok(real) =
                    std::fs::canonicalize(Path::new(&OsString::from_vec(dest.clone())))
                {
                    let real = real.into_os_string().into_vec();
                    at = entries.iter().filter(|e| e.point == real).collect();
                }
            }
            let made_by = if m.source.is_empty() {
                m.option.clone()
            } else {
                format!("{} {}", m.option, String::from_utf8_lossy(&m.source))
            };
            if m.optional {
                optional += 1;
            } else {
                required += 1;
                if at.is_empty() {
                    return Err(Lost::at(&dest, Some(made_by), true));
                }
            }
            for e in at {
                if !self.watched.iter().any(|w| w.id == e.id) {
                    self.watched.push(Watched {
                        id: e.id,
                        point: e.point.clone(),
                        made_by: Some(made_by.clone()),
                    });
                }
            }
        }
        self.summary = format!(
            "mount guard: {} mounts watched at the destinations of bubblewrap's restricting \
             mounts; all {required} required ones mounted before the command ({optional} -try \
             forms not required, {adding} read-write binds not watched, {} covered by a later \
             mount{}{})",
            self.watched.len(),
            covered.len(),
            if covered.is_empty() {
                ""
            } else {
                ", so protecting nothing in this sandbox: "
            },
            covered.join(", ")
        );
        Ok(())
    }

    /// After a change: the first watched mount that is gone, if any. An
    /// unreadable table is no evidence of a loss.
    pub fn changed(&self) -> Option<Lost> {
        let now = self.read().ok().filter(|e| !e.is_empty())?;
        self.watched
            .iter()
            .find(|w| !now.iter().any(|e| e.id == w.id))
            .map(|w| Lost::at(&w.point, w.made_by.clone(), false))
    }

    /// Whether anything is watched (else the stub need not poll).
    pub fn watching(&self) -> bool {
        !self.watched.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = b"\
22 1 0:20 / / ro,nosuid - tmpfs tmpfs rw\n\
23 22 0:5 /null /w/.bashrc ro,nosuid shared:1 - devtmpfs udev rw\n\
24 22 8:1 /home/a\\040b /w/a\\040b\\134c rw master:2 - ext4 /dev/sda1 rw\n\
";

    #[test]
    fn mountinfo_ids_and_points_with_escapes() {
        let e = parse_mountinfo(SAMPLE);
        assert_eq!(
            e,
            [
                Entry {
                    id: 22,
                    point: b"/".to_vec()
                },
                Entry {
                    id: 23,
                    point: b"/w/.bashrc".to_vec()
                },
                Entry {
                    id: 24,
                    point: b"/w/a b\\c".to_vec()
                },
            ]
        );
        assert!(parse_mountinfo(b"garbage\n\n").is_empty());
    }

    #[test]
    fn destinations_are_named_as_the_kernel_names_mount_points() {
        assert_eq!(normalize(b"/w//x/./y/"), b"/w/x/y");
        assert_eq!(normalize(b"w"), b"/w");
        assert_eq!(normalize(b"/"), b"/");
        assert_eq!(normalize(b""), b"/");
    }

    #[test]
    fn a_later_mount_at_or_above_covers_an_earlier_one() {
        assert!(covers(b"/", b"/tmp/x.sock"));
        assert!(covers(b"/w", b"/w/.git"));
        assert!(covers(b"/w", b"/w"));
        assert!(!covers(b"/w", b"/wx"));
        assert!(!covers(b"/w/.git", b"/w"));
    }

    #[test]
    fn the_message_says_where_when_and_what_to_do() {
        let lost = Lost {
            path: b"/w/.bashrc".to_vec(),
            made_by: Some("--ro-bind /dev/null".into()),
            before_start: false,
            exists_now: true,
        };
        let text = lost.message();
        assert!(text.starts_with(
            "apply-seccomp: mount guard: /w/.bashrc (bubblewrap's --ro-bind /dev/null \
             /w/.bashrc) is no longer mounted in the sandbox: it was removed from outside"
        ));
        assert!(text.contains("the command was stopped"), "{text}");
        assert!(text.contains("Running the command again is safe"), "{text}");
        assert!(
            text.contains("/w/.bashrc exists now: it may have been written"),
            "{text}"
        );
        let before = Lost {
            before_start: true,
            ..lost
        };
        let text = before.message();
        assert!(text.contains("the command did not run"), "{text}");
        assert!(!text.contains("exists now"), "{text}");
        assert_eq!(
            before.json(Some("\"eA==\"")),
            "{\"mount_guard\":\"lost\",\"path\":\"/w/.bashrc\",\"before_start\":true,\
             \"exists_now\":true,\"encodedCommand\":\"eA==\"}\n"
        );
    }
}
