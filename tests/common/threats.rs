//! The THREATS table as the probe (`tests/probe/probe.c`) checks it: what
//! each check must show inside the helper, on either way in. Shared by the
//! host tests (e2e.rs) and the VM tests (vm.rs), so both hold the command
//! to one table.

use std::collections::BTreeMap;

/// The way in a test asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// What the helper decides (namespaces wherever this machine allows
    /// them: the host and bubblewrap here).
    Auto,
    /// `--way-in=capability-free`: filters and a Landlock domain, no
    /// namespaces.
    CapabilityFree,
}

pub const WAYS: [Way; 2] = [Way::Auto, Way::CapabilityFree];

impl Way {
    /// The helper's arguments for `args` on this way.
    pub fn args<S: AsRef<str>>(self, args: &[S]) -> Vec<String> {
        let mut v = Vec::new();
        if self == Way::CapabilityFree {
            v.push("--way-in=capability-free".to_string());
        }
        v.extend(args.iter().map(|a| a.as_ref().to_string()));
        v
    }
}

/// Probe checks and what each must show inside the helper, both filters
/// installed. The nesting-allowed column is the kernel's own answer to the
/// deliberately invalid arguments (see probe.c), proving the namespaces
/// filter is gone while the unix filter stays.
pub const EXPECTED: &[(&str, &str, &str)] = &[
    // THREATS rows 1-3
    ("unix-stream", "errno:EPERM", "errno:EPERM"),
    ("unix-dgram", "errno:EPERM", "errno:EPERM"),
    ("unix-seqpacket", "errno:EPERM", "errno:EPERM"),
    ("unix-flags", "errno:EPERM", "errno:EPERM"),
    ("unix-high", "errno:EPERM", "errno:EPERM"),
    ("unix-allhigh", "errno:EPERM", "errno:EPERM"),
    ("vsock", "errno:EPERM", "errno:EPERM"),
    // row 4
    ("inet", "ok", "ok"),
    ("inet6", "ok", "ok"),
    ("netlink", "ok", "ok"),
    // rows 5-6
    ("pair-stream", "ok", "ok"),
    ("pair-seqpacket", "ok", "ok"),
    ("pair-dgram", "errno:EPERM", "errno:EPERM"),
    ("pair-dgram-flags", "errno:EPERM", "errno:EPERM"),
    ("pair-raw", "errno:EPERM", "errno:EPERM"),
    // row 19 (and a terminal ioctl that works: the kernel's EBADF)
    ("tiocsti", "errno:EPERM", "errno:EPERM"),
    ("tiocsti-high", "errno:EPERM", "errno:EPERM"),
    ("tioclinux", "errno:EPERM", "errno:EPERM"),
    ("tcgets", "errno:EBADF", "errno:EBADF"),
    // row 9
    ("io-uring-setup", "errno:EPERM", "errno:EPERM"),
    ("io-uring-enter", "errno:EPERM", "errno:EPERM"),
    ("io-uring-register", "errno:EPERM", "errno:EPERM"),
    // rows 10-13
    ("unshare-user", "errno:EPERM", "errno:EINVAL"),
    ("unshare-ns", "errno:EPERM", "errno:EINVAL"),
    ("unshare-high", "errno:EPERM", "errno:EINVAL"),
    ("unshare-net", "errno:EINVAL", "errno:EINVAL"),
    ("clone-user", "errno:EPERM", "errno:EINVAL"),
    ("clone-user-high", "errno:EPERM", "errno:EINVAL"),
    ("clone-ns", "errno:EPERM", "errno:EINVAL"),
    ("clone3", "errno:ENOSYS", "errno:EINVAL"),
    ("setns", "errno:EPERM", "errno:EBADF"),
    ("mount", "errno:EPERM", "errno:EFAULT"),
    ("umount2", "errno:EPERM", "errno:EINVAL"),
    // Without CAP_SYS_ADMIN the kernel itself answers EPERM (may_mount()
    // comes first): see `nested_without_caps`.
    ("pivot-root", "errno:EPERM", "errno:EFAULT"),
    ("open-tree", "errno:EPERM", "errno:EINVAL"),
    ("move-mount", "errno:EPERM", "errno:EINVAL"),
    ("fsopen", "errno:EPERM", "errno:EINVAL"),
    ("fsconfig", "errno:EPERM", "errno:EINVAL"),
    ("fsmount", "errno:EPERM", "errno:EINVAL"),
    ("fspick", "errno:EPERM", "errno:EINVAL"),
    ("mount-setattr", "errno:EPERM", "errno:EINVAL"),
    // row 15
    ("fork", "ok", "ok"),
    ("thread", "ok", "ok"),
];

/// The Unix socket policy a run is under (`APPLY_SECCOMP_UNIX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unix {
    /// The default: the command's own stream and seqpacket sockets.
    Own,
    /// `APPLY_SECCOMP_UNIX=deny`: upstream's policy, the table as written.
    Deny,
}

/// Rows 1 and 6 under the own-sockets policy: the `AF_UNIX` stream and
/// seqpacket sockets the table refuses under upstream's policy are made
/// (the socket's family checked: `ok`), and so are datagram socketpairs
/// (as sequenced-packet pairs where the stub holds the policy: issue 55);
/// a datagram socket stays refused there.
pub const MADE_UNDER_OWN: [&str; 8] = [
    "unix-stream",
    "unix-seqpacket",
    "unix-flags",
    "unix-high",
    "unix-allhigh",
    "pair-dgram",
    "pair-dgram-flags",
    "pair-raw",
];

/// The kernel's answer, with nesting allowed, to a command that holds no
/// usable CAP_SYS_ADMIN, where it differs from the privileged one.
fn nested_without_caps(check: &str) -> Option<&'static str> {
    match check {
        "pivot-root" | "move-mount" | "fsopen" | "fsmount" | "fspick" => Some("errno:EPERM"),
        _ => None,
    }
}

/// The architecture the probe runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    /// Its rows 7-8: a 32-bit ARM program (the VM suite puts one at
    /// `/opt/a32`) is another architecture, killed at its first system call.
    Aarch64,
}

#[cfg(target_arch = "x86_64")]
pub const HOST: Arch = Arch::X86_64;
#[cfg(target_arch = "aarch64")]
pub const HOST: Arch = Arch::Aarch64;

/// Rows 7-8: the checks killed by SIGSYS (31), never ENOSYS; the probe's
/// argument and the name of its answer.
pub fn killed(arch: Arch) -> &'static [(&'static str, &'static str)] {
    match arch {
        Arch::X86_64 => &[
            ("x32-getpid", "x32-getpid"),
            ("x32-socket", "x32-socket"),
            ("i386-socket", "i386-socket"),
            ("i386-socketcall", "i386-socketcall"),
            ("i386-getpid", "i386-getpid"),
        ],
        Arch::Aarch64 => &[("exec-child:/opt/a32", "exec-child")],
    }
}

/// The probe's arguments for the filter rows (1-15, 17).
pub fn filter_checks(arch: Arch, stacked: bool) -> Vec<&'static str> {
    let mut args = Vec::new();
    if stacked {
        // Row 14: the command's own allow-all filter changes nothing.
        args.push("stack-allow");
    }
    args.extend(EXPECTED.iter().map(|e| e.0));
    args.extend(killed(arch).iter().map(|k| k.0));
    args
}

/// What in the probe's answers to [`filter_checks`] differs from the
/// table. `nested`: `SRT_ALLOW_NESTED_USERNS=1`; `privileged`: the command
/// holds a usable CAP_SYS_ADMIN (root in the helper's own user namespace,
/// or host root).
pub fn filter_mismatches(
    arch: Arch,
    got: &BTreeMap<String, String>,
    nested: bool,
    privileged: bool,
    stacked: bool,
    unix: Unix,
) -> Vec<String> {
    let mut wrong = Vec::new();
    if stacked && got.get("stack-allow").map(String::as_str) != Some("ok") {
        wrong.push(format!("stack-allow: got {:?}", got.get("stack-allow")));
    }
    for &(check, both, nested_ok) in EXPECTED {
        let want = match (nested, privileged) {
            (false, _) => both,
            (true, false) => nested_without_caps(check).unwrap_or(nested_ok),
            (true, true) => nested_ok,
        };
        let want = if unix == Unix::Own && MADE_UNDER_OWN.contains(&check) {
            "ok"
        } else {
            want
        };
        if got.get(check).map(String::as_str) != Some(want) {
            wrong.push(format!("{check}: got {:?}, want {want}", got.get(check)));
        }
    }
    for &(_, check) in killed(arch) {
        if got.get(check).map(String::as_str) != Some("signal:31") {
            wrong.push(format!("{check}: got {:?}, want signal:31", got.get(check)));
        }
    }
    wrong
}

/// Row 16 on the capability-free way (no PID namespace): the probe's
/// `foreign`, `kill-foreign` and `ptrace-foreign` answers for every process
/// it can see. None may be opened (EACCES), signalled or ptraced (EPERM);
/// ESRCH is a process that has no memory (a kernel thread), and ESRCH or
/// ENOENT one that has exited since it was listed (other tests run beside
/// this one). Returns what is
/// wrong; `min_seen` guards against a probe that saw nothing.
pub fn outside_mismatches(got: &BTreeMap<String, String>, min_seen: usize) -> Vec<String> {
    let mut wrong = Vec::new();
    for (check, allowed) in [
        ("foreign", &["EACCES", "ESRCH", "ENOENT"][..]),
        ("kill-foreign", &["EPERM", "ESRCH"][..]),
        ("ptrace-foreign", &["EPERM", "ESRCH"][..]),
    ] {
        let Some(list) = got.get(check) else {
            wrong.push(format!("{check}: no answer"));
            continue;
        };
        let entries: Vec<&str> = list.split(',').collect();
        if entries.len() < min_seen {
            wrong.push(format!("{check}: saw only {list}"));
        }
        for e in entries {
            let ok = e
                .split_once(':')
                .is_some_and(|(_, res)| allowed.contains(&res));
            if !ok {
                wrong.push(format!("{check}: {e} (want one of {allowed:?})"));
            }
        }
    }
    wrong
}
