//! `APPLY_SECCOMP_LOG`'s record: one comment line (time, pid, what was
//! done, which bubblewrap ran), one per `--args` file inlined, and the
//! line received, shell-quoted on one line whatever its bytes, to replay
//! with bash. And where it may be written: the shim runs outside any
//! sandbox, so the log is opened only where a sandboxed command can have
//! planted nothing (see [`append`]). Called by the shim.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::bwrap_args::{self};

use super::*;

/// The variable naming the log.
pub const LOG: &str = "APPLY_SECCOMP_LOG";

/// A word as bash reads it back, on one line: bare when safe; else
/// single-quoted; and where it holds a control byte (a newline above
/// all, which would end the record's line), `$'...'` with every byte
/// outside printable ASCII as a three-digit octal escape.
fn quote(word: &[u8]) -> Vec<u8> {
    if !word.is_empty()
        && word
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:=@+,%-".contains(b))
    {
        return word.to_vec();
    }
    if word.iter().any(|&b| b < 0x20 || b == 0x7f) {
        let mut out = b"$'".to_vec();
        for &b in word {
            match b {
                b'\\' | b'\'' => out.extend([b'\\', b]),
                0x20..=0x7e => out.push(b),
                _ => out.extend(format!("\\{b:03o}").bytes()),
            }
        }
        out.push(b'\'');
        return out;
    }
    let mut out = vec![b'\''];
    for &b in word {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    out
}

/// `text` for a comment line: control characters escaped, so nothing in
/// it (an option named on the line, a path) can start another line.
fn one_line(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// `YYYY-MM-DDTHH:MM:SSZ` for `t` (UTC).
fn utc(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Gregorian, proleptic).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// One record of `APPLY_SECCOMP_LOG`: comment lines saying when, what the
/// shim did and which bubblewrap it ran, then the command line it
/// received as one shell line, `--args` files inlined in place of their
/// `--args FD`, so it can be replayed. One write appends it.
pub fn log_record(
    now: std::time::SystemTime,
    pid: u32,
    args: &[OsString],
    files: &[bwrap_args::ArgsFile],
    note: &str,
    ran: &Path,
) -> Vec<u8> {
    let mut out = format!(
        "# {} pid {pid}: apply-seccomp bwrap shim: {}; ran {}\n",
        utc(now),
        one_line(note),
        one_line(&ran.display().to_string())
    );
    for f in files {
        out += &format!(
            "# --args {} inlined: its {} words stand in its place, after word {}\n",
            one_line(&f.fd.to_string_lossy()),
            f.words.len(),
            f.at
        );
    }
    let mut out = out.into_bytes();
    out.extend_from_slice(b"bwrap");
    for w in inline_args(args, files) {
        out.push(b' ');
        out.extend(quote(w.as_bytes()));
    }
    out.push(b'\n');
    out
}

/// Why the log is not written, for the one `SRT_DEBUG` line.
fn refuse(why: impl Into<String>) -> io::Error {
    io::Error::other(why.into())
}

/// A host path the line makes writable, as a path: a read-write bind's
/// source, or for `--bind-fd` the folder its descriptor is open on.
fn writable_path(source: &[u8]) -> PathBuf {
    let path = PathBuf::from(OsStr::from_bytes(source));
    if source.starts_with(b"/") {
        return std::fs::canonicalize(&path).unwrap_or(path);
    }
    std::fs::read_link(Path::new("/proc/self/fd").join(&path)).unwrap_or(path)
}

/// Appends `record` to the log at `path` in one `O_APPEND` write, where
/// no sandboxed command can have planted anything: `path` absolute, its
/// folder inside none of the folders this line makes `writable` (`None`:
/// the line could not be walked, so that cannot be told), opened without
/// following a link at its name, without blocking (a FIFO has no reader),
/// and only if it is a regular file of this user's, writable by no one
/// else and with no other name (a hard link to another of the user's
/// files). Otherwise nothing is written, and the error says why.
pub fn append(path: &OsStr, record: &[u8], writable: Option<&[Vec<u8>]>) -> io::Result<()> {
    let path = Path::new(path);
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(refuse("not a file path"));
    };
    if !path.is_absolute() {
        return Err(refuse(
            "not an absolute path (it would be found from the client's working folder, \
             which its sandboxes may write)",
        ));
    }
    let dir = std::fs::canonicalize(dir)?;
    let Some(writable) = writable else {
        return Err(refuse(
            "this bubblewrap line could not be read, so which folders it makes writable \
             cannot be told",
        ));
    };
    if let Some(inside) = writable
        .iter()
        .map(|s| writable_path(s))
        .find(|w| dir.starts_with(w))
    {
        return Err(refuse(format!(
            "inside {}, which this bubblewrap line makes writable in the sandbox: a \
             sandboxed command could replace the log or forge its records; keep it in a \
             folder no sandbox can write (e.g. ~/.local/state/apply-seccomp)",
            inside.display()
        )));
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(dir.join(name))
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse("a symbolic link, not followed"),
            Some(libc::ENXIO) => refuse("a FIFO or socket with no reader, not a regular file"),
            _ => e,
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refuse("not a regular file"));
    }
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(refuse(format!(
            "owned by uid {}, not by this user",
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(refuse(format!(
            "writable by others (mode {:04o})",
            meta.mode() & 0o7777
        )));
    }
    if meta.nlink() != 1 {
        return Err(refuse(format!(
            "{} names for one file (a hard link to another file?)",
            meta.nlink()
        )));
    }
    match file.write(record)? {
        n if n == record.len() => Ok(()),
        _ => Err(io::Error::from_raw_os_error(libc::ENOSPC)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::os_words as args;

    #[test]
    fn a_log_record_replays_the_call() {
        let a = args(&["--args", "9", "--", "sh", "-c", "echo 'hi there'"]);
        let files = [bwrap_args::ArgsFile {
            at: 0,
            fd: "9".into(),
            words: args(&["--ro-bind", "/a b", "/c"]),
        }];
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_103_000);
        let r = log_record(t, 42, &a, &files, "did it", Path::new("/usr/bin/bwrap"));
        let want = concat!(
            "# 2026-12-01T05:30:00Z pid 42: apply-seccomp bwrap shim: did it; ran /usr/bin/bwrap\n",
            "# --args 9 inlined: its 3 words stand in its place, after word 0\n",
            r#"bwrap --ro-bind '/a b' /c -- sh -c 'echo '\''hi there'\'''"#,
            "\n"
        );
        assert_eq!(String::from_utf8(r).unwrap(), want);
    }

    /// Every record is one line whatever the command's bytes, and bash
    /// reads each word back exactly: a newline (which would start a line
    /// a replay runs unsandboxed), quotes, backslashes, control bytes.
    #[test]
    fn a_log_record_is_one_line_that_bash_reads_back_exactly() {
        let words: Vec<OsString> = [
            &b"true\ntouch /tmp/pwned #"[..],
            b"it's \\ \"x\" $(id) `id`",
            b"\x01\x1b[2J\x7f\xff\xfe\r",
            b"",
            b"plain",
        ]
        .iter()
        .map(|w| OsString::from_vec(w.to_vec()))
        .collect();
        let t = std::time::UNIX_EPOCH;
        let note = "an option --x\ny named on the line";
        let r = log_record(t, 1, &words, &[], note, Path::new("/usr/bin/bwrap"));
        let text = String::from_utf8_lossy(&r).into_owned();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.lines().next().unwrap().contains(r"--x\ny"), "{text}");
        let line = text.lines().nth(1).unwrap();
        // bash prints each word back, NUL-terminated.
        let script = format!("set -- {}; printf '%s\\0' \"$@\"", &line["bwrap ".len()..]);
        let out = std::process::Command::new("bash")
            .args(["-c", &script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let back: Vec<&[u8]> = out.stdout.split(|&b| b == 0).collect();
        let want: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        assert_eq!(&back[..want.len()], &want[..], "{line}");
    }
}
