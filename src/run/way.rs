//! What the way in adds to the filters, in the stub before the processes
//! start: on the capability-free way the Landlock domain the worker joins
//! (with the socket policy's rules where the kernel holds it); on the
//! namespaces way `CAP_SYS_PTRACE` out of the bounding set and, where the
//! kernel holds the socket policy, its domain. And the `SRT_DEBUG` line
//! that says what holds the command.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use crate::cli::RunConfig;
use crate::error::{Error, Step};
use crate::filter::Filters;
use crate::run::plan::Way;
use crate::run::userns::Path;
use crate::run::{capfree, sockets};

/// The way's confinement made: the plan's `Way`, the Landlock ruleset it
/// names (held until the run ends; close-on-exec) and the socket
/// policy's note where the kernel holds it.
pub struct Confined {
    pub way: Way,
    pub ruleset: Option<OwnedFd>,
    pub unix_note: Option<String>,
}

/// Makes the confinement `path` needs, or the run ends (never a run with
/// less than asked).
pub fn confine(path: &Path, cfg: &RunConfig, kernel_sockets: bool) -> Result<Confined, Error> {
    let landlock = |e: String| Error::setup(Step::Landlock, io::Error::other(e));
    if let Path::CapabilityFree { refusal, .. } = path {
        // Held until the run ends; the worker joins it (close-on-exec).
        let domain =
            capfree::ruleset(kernel_sockets).map_err(|lack| Error::NoCapabilityFreeWay {
                refusal: refusal.clone(),
                lack,
            })?;
        crate::debug(cfg.debug, || capfree::describe(&domain));
        // The socket policy's rules, where the kernel holds it: in this
        // one domain (or the run ends).
        let unix_note = kernel_sockets
            .then(|| {
                sockets::kernel::add_named(domain.ruleset.as_raw_fd(), &cfg.allow_unix)
                    .map(|n| sockets::kernel::note(&n))
            })
            .transpose()
            .map_err(landlock)?;
        // No bounding-set drop here: it needs CAP_SETPCAP, which this way
        // has none of, and Landlock's ptrace rule holds without it.
        return Ok(Confined {
            way: Way::CapabilityFree {
                ruleset: domain.ruleset.as_raw_fd(),
            },
            ruleset: Some(domain.ruleset),
            unix_note,
        });
    }
    // Stricter than upstream: a command running as root (host root on the
    // direct path, or uid 0 in the namespace) could otherwise ptrace the
    // unfiltered inner init, whose non-dumpability only CAP_SYS_PTRACE
    // overrides. Out of the bounding set, no exec can grant it.
    caps::drop(
        None,
        caps::CapSet::Bounding,
        caps::Capability::CAP_SYS_PTRACE,
    )
    .map_err(|e| Error::setup(Step::DropPtrace, io::Error::other(e.to_string())))?;
    let made_userns = matches!(path, Path::UserNamespace(_));
    // The socket policy's domain, where the kernel holds it: made or the
    // run ends.
    let domain = kernel_sockets
        .then(|| sockets::kernel::domain(&cfg.allow_unix))
        .transpose()
        .map_err(landlock)?;
    Ok(Confined {
        way: Way::Namespaces {
            limit_userns: made_userns && !cfg.allow_nested_userns,
            sockets: domain.as_ref().map(|d| d.ruleset.as_raw_fd()),
        },
        unix_note: domain.as_ref().map(|d| d.note.clone()),
        ruleset: domain.map(|d| d.ruleset),
    })
}

/// `SRT_DEBUG`'s line: the filters and the user namespace limit.
pub fn describe(filters: &Filters, way: &Way) -> String {
    format!(
        "filters: unix{}; user namespace limit: {}",
        if filters.namespaces.is_some() {
            " + namespaces"
        } else {
            " only (nesting allowed)"
        },
        match way {
            Way::Namespaces {
                limit_userns: true, ..
            } => "yes",
            Way::Namespaces {
                limit_userns: false,
                ..
            } => "no",
            Way::CapabilityFree { .. } => "no (capability-free: the filter alone)",
        }
    )
}
