//! The doctor's children, each a fresh exec of this binary (so nothing
//! runs between a fork and an exec): `--doctor-entry` tries the helper's
//! own entry and exits, namespaces and all; `--doctor-probe` is the command
//! the helper runs, and says what it sees. Both answer in `key=value`
//! lines, read by sandbox.rs.

use nix::errno::Errno;

use super::machine::status_field;
use crate::cause::{NARROWEST_FIX, WayIn};
use crate::error::{Error, Step, strerror};
use crate::run::capfree;
use crate::run::userns::{self, Backoff, Path as EntryPath};

/// `--doctor-entry`, in the child: the helper's own entry
/// ([`userns::enter`], as a run makes it), then `key=value` lines for the
/// doctor: `way=` (namespaces, capability-free, none), `found=`, `fix=`.
/// The process exits right after, namespaces and all.
pub fn entry_report() -> String {
    let one_line = |s: String| s.replace('\n', " ");
    let (way, found, fix) = match userns::enter(&Backoff::default(), WayIn::Auto) {
        Ok(entry) => match entry.path {
            EntryPath::Direct { retries } => (
                "namespaces",
                format!(
                    "the helper's entry works: new PID and mount namespaces directly (this \
                     user holds CAP_SYS_ADMIN); {retries} EINVAL retries"
                ),
                String::new(),
            ),
            EntryPath::UserNamespace(u) => (
                "namespaces",
                format!(
                    "the helper's entry works: a new user namespace, then PID and mount \
                     namespaces; {} EINVAL retries",
                    u.retries
                ),
                String::new(),
            ),
            EntryPath::CapabilityFree { refusal, .. } => {
                let why = refusal.map(|r| r.hint()).unwrap_or_default();
                match capfree::ruleset(false) {
                    Ok(_) => (
                        "capability-free",
                        format!(
                            "{why}; so the helper takes the capability-free way in here: the \
                             same seccomp filters and a Landlock domain (ABI {}), no namespaces",
                            capfree::abi().unwrap_or(0)
                        ),
                        "none needed for this helper, which runs here; the namespaces it \
                         cannot make here are what docs/ways-in.md's table \"The THREATS rows \
                         on either way\" compares"
                            .to_string(),
                    ),
                    Err(lack) => (
                        "none",
                        format!("{why}; and the capability-free way in cannot run: {lack}"),
                        NARROWEST_FIX.to_string(),
                    ),
                }
            }
        },
        Err(e) => {
            let (found, fix) = explain(&e);
            ("none", found, fix)
        }
    };
    format!(
        "way={way}\nfound={}\nfix={}\n",
        one_line(found),
        one_line(fix)
    )
}

/// What a failed entry found, and the one thing to do.
fn explain(e: &Error) -> (String, String) {
    match e {
        Error::Refused {
            step,
            source,
            refusal,
            ..
        } => (
            format!("{}: {}", step.describe(), strerror(source)),
            refusal.hint(),
        ),
        Error::NoCapabilityFreeWay { refusal, lack } => (
            format!(
                "{}; and the capability-free way in cannot run: {lack}",
                refusal.as_ref().map(|r| r.hint()).unwrap_or_default()
            ),
            NARROWEST_FIX.to_string(),
        ),
        Error::Transient { .. } | Error::StillThreaded { .. } => (
            format!("{e}")
                .trim_start_matches("apply-seccomp: ")
                .to_string(),
            "transient: the kernel still counted another thread of this process (the EINVAL \
             race); run the doctor again, and report it if it repeats"
                .to_string(),
        ),
        Error::Setup { step, source } => (
            format!("{}: {}", step.describe(), strerror(source)),
            match e.hint() {
                Some(h) => h.to_string(),
                None if *step == Step::UnsharePidMount => {
                    "the kernel refused new PID and mount namespaces with this error; is it \
                     built with CONFIG_PID_NS and CONFIG_USER_NS?"
                        .to_string()
                }
                None => "report it with this line".to_string(),
            },
        ),
        other => (
            format!("{other}")
                .trim_start_matches("apply-seccomp: ")
                .to_string(),
            "report it with this line".to_string(),
        ),
    }
}

/// `--doctor-probe`, as the command under the helper: what it sees, as
/// `key=value` lines.
pub fn probe_report() -> String {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socket};
    let errno_word = |r: Result<(), Errno>| match r {
        Ok(()) => "allowed".to_string(),
        Err(e) => format!("{e:?}"),
    };
    let made = |kind| {
        errno_word(socket(AddressFamily::Unix, kind, SockFlag::SOCK_CLOEXEC, None).map(drop))
    };
    // The policy the helper read: the command sees the same variable.
    let policy = match std::env::var_os("APPLY_SECCOMP_UNIX").as_deref() {
        Some(v) if v == "deny" => "deny",
        _ => "own",
    };
    format!(
        "pid={}\nseccomp_filters={}\nno_new_privs={}\naf_unix={}\naf_unix_dgram={}\n\
         unix_policy={policy}\n",
        std::process::id(),
        status_field("Seccomp_filters").unwrap_or_default(),
        status_field("NoNewPrivs").unwrap_or_default(),
        made(SockType::Stream),
        made(SockType::Datagram),
    )
}

/// `--doctor-connect PATH...`, as the command under the helper: a
/// connect to each path, one line each: the path, a tab, `ok` or the
/// errno's name; for a refused one, a tab and why a run's start does not
/// name it (named_sockets.rs: walked from here, with the command's view
/// and rights), if it says.
pub fn connect_report(paths: &[std::ffi::OsString]) -> String {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, UnixAddr, connect, socket};
    let mut out = String::new();
    for p in paths {
        let result = socket(
            AddressFamily::Unix,
            SockType::Stream,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .and_then(|s| {
            let addr = UnixAddr::new(p.as_os_str())?;
            connect(std::os::fd::AsRawFd::as_raw_fd(&s), &addr)
        });
        let why = match result {
            Ok(()) => String::new(),
            Err(_) => crate::run::named_sockets::find(std::path::Path::new(p))
                .err()
                .map_or(String::new(), |why| format!("\t{why}")),
        };
        out.push_str(&format!(
            "{}\t{}{why}\n",
            p.to_string_lossy(),
            result.map_or_else(|e| format!("{e:?}"), |()| "ok".into())
        ));
    }
    out
}
