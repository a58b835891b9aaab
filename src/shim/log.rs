//! `APPLY_SECCOMP_LOG`'s record: one comment line (time, pid, what was
//! done, which bubblewrap ran), one per `--args` file inlined, and the
//! line received, shell-quoted, to replay with `sh`. Called by the shim.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::bwrap_args::{self};

use super::*;

/// A word as the shell reads it back: bare when safe, else single-quoted.
fn quote(word: &[u8]) -> Vec<u8> {
    if !word.is_empty()
        && word
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:=@+,%-".contains(b))
    {
        return word.to_vec();
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
        "# {} pid {pid}: apply-seccomp bwrap shim: {note}; ran {}\n",
        utc(now),
        ran.display()
    );
    for f in files {
        out += &format!(
            "# --args {} inlined: its {} words stand in its place, after word {}\n",
            f.fd.to_string_lossy(),
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
