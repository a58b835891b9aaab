//! The Unix socket settings of a run: the policy (`APPLY_SECCOMP_UNIX`)
//! and the host sockets named (`APPLY_SECCOMP_ALLOW_UNIX`); and whether
//! refused calls are reported (`APPLY_SECCOMP_REFUSALS`). Read from the
//! environment (pure).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::error::Error;

/// Which Unix sockets a command may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnixPolicy {
    /// Its own: stream and seqpacket sockets, connects only to a socket a
    /// process of the run bound (sockets.rs). The default.
    Own,
    /// None: every `AF_UNIX` socket refused, as upstream's helper does
    /// (`APPLY_SECCOMP_UNIX=deny`).
    Deny,
}

impl UnixPolicy {
    /// `APPLY_SECCOMP_UNIX`'s value: unset, empty or `own`, or `deny`.
    pub fn read(value: Option<&OsStr>) -> Result<UnixPolicy, Error> {
        Ok(match value.map(|v| v.as_bytes()) {
            None | Some(b"" | b"own") => UnixPolicy::Own,
            Some(b"deny") => UnixPolicy::Deny,
            Some(other) => {
                return Err(Error::Usage(format!(
                    "APPLY_SECCOMP_UNIX={}: it takes own (the default) or deny",
                    String::from_utf8_lossy(other)
                )));
            }
        })
    }
}

/// `APPLY_SECCOMP_ALLOW_UNIX`: absolute paths between `:` (empty entries
/// skipped); a relative one is an error: from which folder would it be
/// read?
pub fn allowed_sockets(list: &OsStr) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for entry in list
        .as_bytes()
        .split(|&b| b == b':')
        .filter(|e| !e.is_empty())
    {
        if !entry.starts_with(b"/") {
            return Err(Error::Usage(format!(
                "APPLY_SECCOMP_ALLOW_UNIX: {} is not an absolute path",
                String::from_utf8_lossy(entry)
            )));
        }
        out.push(PathBuf::from(OsStr::from_bytes(entry)));
    }
    Ok(out)
}

/// `APPLY_SECCOMP_REFUSALS`: unset, empty or `on` (the default: refused
/// calls counted and said, report.rs), or `off` (today's programs, no
/// listener where nothing else needs one).
pub fn refusals_reported(value: Option<&OsStr>) -> Result<bool, Error> {
    match value.map(|v| v.as_bytes()) {
        None | Some(b"" | b"on") => Ok(true),
        Some(b"off") => Ok(false),
        Some(other) => Err(Error::Usage(format!(
            "APPLY_SECCOMP_REFUSALS={}: it takes on (the default) or off",
            String::from_utf8_lossy(other)
        ))),
    }
}
