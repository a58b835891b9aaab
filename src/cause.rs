//! Why the usual way in is refused here, in words: decided from what the
//! kernel answered (the helper's own `unshare`, and a user namespace made
//! in a child to check it, see [`crate::run::userns::probe`]) and from the
//! settings that decide it (sysctls, this process's seccomp state), never
//! from the distribution's name. The messages (error.rs) and the
//! `SRT_DEBUG` lines say it; `--doctor` is meant to say the same.

use std::fmt;

use nix::errno::Errno;

/// What a user namespace made in a child (`clone(CLONE_NEWUSER)`) showed,
/// after the helper's `unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID)`
/// was refused with EPERM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// No user namespace at all: `clone(CLONE_NEWUSER)` answered this (or,
    /// for ENOSPC and EUSERS, the helper's own `unshare`: no probe needed).
    NoUserNamespace(Errno),
    /// Made, and a use of CAP_SYS_ADMIN in it (opening its own
    /// `/proc/self/setgroups` for writing) worked.
    CapabilitiesWork,
    /// Made, but that use of a capability was refused with this errno
    /// (EACCES, EPERM): an LSM strips the capabilities of new user
    /// namespaces (AppArmor's `unpriv_bwrap`, `unprivileged_userns`).
    CapabilitiesDenied(Errno),
    /// Made, but the check could not be made (no `/proc`, the child died).
    Inconclusive(Errno),
}

/// Which way into isolation the helper may take (`--way-in=WAY`). It
/// lives here, below the entry (userns.rs) and the messages (error.rs),
/// with the rule both follow: [`WayIn::falls_back`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WayIn {
    /// Namespaces where the kernel grants them; the capability-free way
    /// where a new user namespace grants no usable capability.
    #[default]
    Auto,
    /// Namespaces only: fail (with the cause) rather than fall back.
    Namespaces,
    /// The capability-free way, whatever the kernel would grant (tests,
    /// benchmarks).
    CapabilityFree,
}

impl WayIn {
    pub fn parse(word: &[u8]) -> Option<WayIn> {
        match word {
            b"auto" => Some(WayIn::Auto),
            b"namespaces" => Some(WayIn::Namespaces),
            b"capability-free" => Some(WayIn::CapabilityFree),
            _ => None,
        }
    }

    /// Whether the entry takes the capability-free way after `refusal`:
    /// only when the caller left the choice to the helper and no
    /// capability in a new user namespace can be used here.
    pub fn falls_back(self, refusal: &Refusal) -> bool {
        self == WayIn::Auto && refusal.capabilities_denied()
    }

    /// Whether a refusal's message should say the capability-free way
    /// would have run: `--way-in=namespaces` forbade it where it could.
    pub fn forbade_fallback(self, refusal: &Refusal) -> bool {
        self == WayIn::Namespaces && refusal.capabilities_denied()
    }
}

/// A kernel setting read for a message: its sysctl name and value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub name: &'static str,
    pub value: String,
}

/// The settings that can refuse user namespaces, as read now (absent ones
/// left out), and whether this process already runs under a seccomp filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub sysctls: Vec<Setting>,
    /// `Seccomp: 2` in `/proc/self/status`: a filter from before the helper
    /// started (a container runtime's profile, or an outer sandbox).
    pub seccomp_filtered: bool,
}

const SYSCTLS: [(&str, &str); 3] = [
    (
        "kernel.unprivileged_userns_clone",
        "/proc/sys/kernel/unprivileged_userns_clone",
    ),
    (
        "user.max_user_namespaces",
        "/proc/sys/user/max_user_namespaces",
    ),
    (
        "kernel.apparmor_restrict_unprivileged_userns",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    ),
];

impl Settings {
    /// Reads them (on the failure path only).
    pub fn read() -> Settings {
        let sysctls = SYSCTLS
            .iter()
            .filter_map(|&(name, path)| {
                let value = std::fs::read_to_string(path).ok()?.trim().to_string();
                Some(Setting { name, value })
            })
            .collect();
        let seccomp_filtered = std::fs::read_to_string("/proc/self/status")
            .map(|s| {
                s.lines()
                    .any(|l| l.split_whitespace().eq(["Seccomp:", "2"]))
            })
            .unwrap_or(false);
        Settings {
            sysctls,
            seccomp_filtered,
        }
    }

    /// The sysctl that keeps every user namespace from being made here, by
    /// bubblewrap as by the helper: its name, the value read, and what to
    /// set. `None` when neither reads as refusing.
    pub fn userns_blocker(&self) -> Option<String> {
        let path = |name: &str| {
            SYSCTLS
                .iter()
                .find(|(n, _)| *n == name)
                .map_or("", |(_, p)| *p)
        };
        let (name, set) = if self.value("user.max_user_namespaces") == Some("0") {
            ("user.max_user_namespaces", "above 0 (e.g. 10000)")
        } else if self.value("kernel.unprivileged_userns_clone") == Some("0") {
            ("kernel.unprivileged_userns_clone", "to 1")
        } else {
            return None;
        };
        Some(format!(
            "{name} is 0 (read from {}): set it {set} (sysctl -w {name}=..., and in \
             /etc/sysctl.d/ to keep it); where an outer sandbox set it in its own namespace, \
             run outside that sandbox",
            path(name)
        ))
    }

    fn value(&self, name: &str) -> Option<&str> {
        self.sysctls
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.value.as_str())
    }
}

/// Why `unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID)` was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub probe: Probe,
    pub settings: Settings,
}

impl Refusal {
    /// Whether the capability-free way in is the answer here: a user
    /// namespace can be made, but no capability in it can be used.
    pub fn capabilities_denied(&self) -> bool {
        matches!(self.probe, Probe::CapabilitiesDenied(_))
    }

    /// What was found and the one thing to do about it.
    pub fn hint(&self) -> String {
        let s = &self.settings;
        match self.probe {
            Probe::NoUserNamespace(e @ (Errno::ENOSPC | Errno::EUSERS)) => {
                match s.userns_blocker() {
                    Some(blocker) if s.value("user.max_user_namespaces") == Some("0") => {
                        format!(
                            "no user namespace can be made here ({}): {blocker}",
                            e.desc()
                        )
                    }
                    _ => format!(
                        "no user namespace can be made here ({}): the user namespace count or \
                         nesting limit (32 deep) is reached; the caller already runs inside \
                         nested namespaces",
                        e.desc()
                    ),
                }
            }
            Probe::NoUserNamespace(e) => {
                let mut found = Vec::new();
                if let Some(blocker) = s.userns_blocker() {
                    found.push(blocker);
                }
                if s.seccomp_filtered {
                    found.push(
                        "this process already runs under a seccomp filter (Seccomp: 2 in \
                         /proc/self/status), as in a container whose profile refuses user \
                         namespaces: run the container with a profile that allows \
                         clone(CLONE_NEWUSER) and unshare"
                            .to_string(),
                    );
                }
                if found.is_empty() {
                    found.push(
                        "no sysctl explains it and no seccomp filter is in place: an LSM \
                         policy refuses user namespaces to this program"
                            .to_string(),
                    );
                }
                format!(
                    "no user namespace can be made here (clone(CLONE_NEWUSER): {}): {}",
                    e.desc(),
                    found.join("; ")
                )
            }
            Probe::CapabilitiesDenied(e) => format!(
                "a user namespace can be made here, but no capability in it can be used \
                 (write /proc/self/setgroups in a new one: {}): an LSM strips them, as \
                 AppArmor's unpriv_bwrap profile does to everything bubblewrap runs \
                 (Ubuntu's bwrap-userns-restrict) and kernel.apparmor_restrict_unprivileged_userns=1 \
                 does to unconfined programs",
                e.desc()
            ),
            Probe::CapabilitiesWork => "a user namespace can be made here and its capabilities \
                 work, yet this unshare was refused: a filter on unshare itself refuses it \
                 (a seccomp filter, such as a container's profile, or an LSM rule)"
                .to_string(),
            Probe::Inconclusive(e) => format!(
                "a user namespace can be made here, but whether its capabilities work could \
                 not be checked (open /proc/self/setgroups in a new one: {}); is /proc mounted?",
                e.desc()
            ),
        }
    }
}

/// Why the capability-free way in cannot run: what Landlock lacks here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lack {
    /// Built in, but not in the `lsm=` list the kernel booted with.
    NotEnabled,
    /// Not built into this kernel.
    NotBuilt,
    /// An ABI older than 6: no scoping of signals and abstract sockets.
    NoScoping(i32),
    /// The ruleset could not be made for another reason.
    Other(String),
}

/// Landlock ABI version that scopes signals and abstract Unix sockets.
pub const SCOPED_ABI: i32 = 6;

/// The first Landlock ABI with `LANDLOCK_ACCESS_FS_RESOLVE_UNIX` (Linux
/// 7.1), with which the kernel holds the own-sockets policy
/// (sockets/kernel.rs).
pub const RESOLVE_UNIX_ABI: i32 = 9;

/// Whether a kernel of Landlock ABI `abi` can hold the own-sockets
/// policy. For a run and for the doctor's account of one.
pub fn holds_unix_sockets(abi: i32) -> bool {
    abi >= RESOLVE_UNIX_ABI
}

/// The narrowest fix where capabilities are denied and Landlock cannot
/// stand in. Checked in the AppArmor VM (tests/vm.rs, docs/ways-in.md): on Debian
/// 13's 6.12 with AppArmor 4.1.0, `priority=100 allow capability,` in
/// `local/unpriv_bwrap` is accepted by the parser and still denied, so no
/// local override lifts the profile's `audit deny capability` for one
/// program; the wider switches loosen every sandbox on the machine.
pub const NARROWEST_FIX: &str = "Narrowest fix: boot a kernel with Landlock ABI 6, Linux 6.12 \
     or later with landlock in lsm= (Ubuntu 25.04 and later ship one; on 24.04, the HWE \
     kernel), which loosens nothing. No local AppArmor override lifts unpriv_bwrap's `audit \
     deny capability` for this helper alone (a priority= allow in local/unpriv_bwrap is still \
     denied), and editing the profile or turning the restriction off loosens every bubblewrap \
     sandbox on the machine.";

impl fmt::Display for Lack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lack::NotEnabled => write!(
                f,
                "Landlock is built into this kernel but not enabled: add landlock to the \
                 lsm= boot parameter"
            ),
            Lack::NotBuilt => write!(f, "this kernel has no Landlock (CONFIG_SECURITY_LANDLOCK)"),
            Lack::NoScoping(abi) => write!(
                f,
                "this kernel's Landlock ABI is {abi}, without the scoping of signals and \
                 abstract sockets (ABI {SCOPED_ABI}, Linux 6.12)"
            ),
            Lack::Other(text) => write!(f, "the Landlock ruleset could not be made: {text}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(probe: Probe, sysctls: &[(&'static str, &str)], seccomp: bool) -> String {
        Refusal {
            probe,
            settings: Settings {
                sysctls: sysctls
                    .iter()
                    .map(|&(name, value)| Setting {
                        name,
                        value: value.into(),
                    })
                    .collect(),
                seccomp_filtered: seccomp,
            },
        }
        .hint()
    }

    #[test]
    fn each_answer_names_its_own_cause_only() {
        let text = refusal(
            Probe::NoUserNamespace(Errno::EPERM),
            &[("kernel.unprivileged_userns_clone", "0")],
            false,
        );
        assert!(
            text.contains("kernel.unprivileged_userns_clone is 0"),
            "{text}"
        );
        assert!(!text.contains("apparmor"), "{text}");
        assert!(!text.contains("seccomp"), "{text}");

        let text = refusal(Probe::NoUserNamespace(Errno::EPERM), &[], true);
        assert!(text.contains("seccomp filter"), "{text}");
        assert!(!text.contains("unprivileged_userns_clone"), "{text}");

        let text = refusal(
            Probe::NoUserNamespace(Errno::ENOSPC),
            &[("user.max_user_namespaces", "0")],
            false,
        );
        assert!(text.contains("user.max_user_namespaces is 0"), "{text}");

        let text = refusal(Probe::CapabilitiesDenied(Errno::EACCES), &[], false);
        assert!(text.contains("no capability in it can be used"), "{text}");
        assert!(text.contains("unpriv_bwrap"), "{text}");
        assert!(!text.contains("max_user_namespaces"), "{text}");

        let text = refusal(Probe::CapabilitiesWork, &[], false);
        assert!(text.contains("a filter on unshare itself"), "{text}");
    }

    #[test]
    fn the_blocking_sysctl_is_named_with_its_value_and_what_to_set() {
        let settings = |pairs: &[(&'static str, &str)]| Settings {
            sysctls: pairs
                .iter()
                .map(|&(name, value)| Setting {
                    name,
                    value: value.into(),
                })
                .collect(),
            seccomp_filtered: false,
        };
        let text = settings(&[("user.max_user_namespaces", "0")])
            .userns_blocker()
            .unwrap();
        assert!(
            text.starts_with(
                "user.max_user_namespaces is 0 (read from /proc/sys/user/max_user_namespaces)"
            ),
            "{text}"
        );
        assert!(text.contains("set it above 0"), "{text}");
        let text = settings(&[("kernel.unprivileged_userns_clone", "0")])
            .userns_blocker()
            .unwrap();
        assert!(text.contains("set it to 1"), "{text}");
        assert_eq!(
            settings(&[("user.max_user_namespaces", "63000")]).userns_blocker(),
            None
        );
    }

    #[test]
    fn only_a_capability_denial_allows_the_capability_free_way() {
        for (probe, yes) in [
            (Probe::CapabilitiesDenied(Errno::EACCES), true),
            (Probe::CapabilitiesWork, false),
            (Probe::NoUserNamespace(Errno::EPERM), false),
            (Probe::Inconclusive(Errno::ENOENT), false),
        ] {
            let r = Refusal {
                probe,
                settings: Settings::default(),
            };
            assert_eq!(r.capabilities_denied(), yes, "{probe:?}");
        }
    }
}
