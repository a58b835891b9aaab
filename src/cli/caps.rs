//! The run's caps as asked: `APPLY_SECCOMP_MAX_TASKS`,
//! `APPLY_SECCOMP_MEMORY_MAX` and `APPLY_SECCOMP_CPU_MAX`, their values
//! read and checked. Every door reads them: a run keeps them
//! (run/tasks.rs, run/cgroup/), the shim makes the cgroup that holds
//! them (shim/limits.rs), `--setup` records them and the doctor checks
//! them.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::error::Error;

/// The task cap: unset for the default, `0` for none, or a number.
pub const TASKS: &str = "APPLY_SECCOMP_MAX_TASKS";
pub const MEMORY: &str = "APPLY_SECCOMP_MEMORY_MAX";
pub const CPU: &str = "APPLY_SECCOMP_CPU_MAX";

/// `cpu.max`'s period: 100 ms, the kernel's default.
pub const PERIOD: u64 = 100_000;

/// The tasks a cgroup holds besides the command's: bubblewrap's two, the
/// helper's stub and init, and room for the client's own wrappers.
pub const RUN_TASKS: u64 = 16;

/// What the caller asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// `memory.max`, bytes.
    pub memory: Option<u64>,
    /// `cpu.max`'s quota per [`PERIOD`], microseconds.
    pub cpu: Option<u64>,
    /// `pids.max`: an asked task cap (`APPLY_SECCOMP_MAX_TASKS`) and the
    /// run's own [`RUN_TASKS`].
    pub pids: Option<u64>,
}

impl Limits {
    /// From the variables' values; `None` where neither memory nor CPU
    /// is asked (a task cap alone is the namespace's, run/tasks.rs).
    /// `tasks`: the task cap asked for (`APPLY_SECCOMP_MAX_TASKS=N`).
    pub fn read(
        memory: Option<&OsStr>,
        cpu: Option<&OsStr>,
        tasks: Option<u32>,
    ) -> Result<Option<Limits>, String> {
        fn value(v: Option<&OsStr>) -> Option<&[u8]> {
            v.filter(|v| !v.is_empty()).map(OsStr::as_bytes)
        }
        let memory = value(memory)
            .map(|v| {
                size(v).ok_or_else(|| {
                    format!(
                        "{MEMORY}={}: it takes a size in bytes, with K, M, G or T (256M)",
                        String::from_utf8_lossy(v)
                    )
                })
            })
            .transpose()?;
        let cpu = value(cpu)
            .map(|v| {
                cpus(v).ok_or_else(|| {
                    format!(
                        "{CPU}={}: it takes a number of CPUs above 0 (0.5, 2)",
                        String::from_utf8_lossy(v)
                    )
                })
            })
            .transpose()?;
        if memory.is_none() && cpu.is_none() {
            return Ok(None);
        }
        let pids = tasks.map(|n| u64::from(n) + RUN_TASKS);
        Ok(Some(Limits { memory, cpu, pids }))
    }

    /// The controllers the cgroup needs.
    pub fn controllers(&self) -> Vec<&'static str> {
        let mut c = Vec::new();
        if self.memory.is_some() {
            c.push("memory");
        }
        if self.cpu.is_some() {
            c.push("cpu");
        }
        if self.pids.is_some() {
            c.push("pids");
        }
        c
    }

    /// `APPLY_SECCOMP_MEMORY_MAX=268435456, ...`, for messages.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = self.memory {
            parts.push(match m.trailing_zeros() {
                30.. => format!("{MEMORY}={}G", m >> 30),
                20.. => format!("{MEMORY}={}M", m >> 20),
                _ => format!("{MEMORY}={m} bytes"),
            });
        }
        if let Some(c) = self.cpu {
            parts.push(format!(
                "{CPU}={}.{:02} CPUs",
                c / PERIOD,
                c % PERIOD / 1000
            ));
        }
        parts.join(", ")
    }
}

/// `256M`, `2G`, `1048576`: bytes.
fn size(v: &[u8]) -> Option<u64> {
    let (digits, unit) = match v.last()? {
        b'K' | b'k' => (&v[..v.len() - 1], 1u64 << 10),
        b'M' | b'm' => (&v[..v.len() - 1], 1 << 20),
        b'G' | b'g' => (&v[..v.len() - 1], 1 << 30),
        b'T' | b't' => (&v[..v.len() - 1], 1 << 40),
        _ => (v, 1),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    n.checked_mul(unit).filter(|&b| b > 0)
}

/// `0.5`, `2`, `1.25`: microseconds of CPU per [`PERIOD`].
fn cpus(v: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(v).ok()?;
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && frac.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 3 {
        return None;
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let frac: u64 = format!("{frac:0<3}").parse().ok()?;
    let quota = whole
        .checked_mul(PERIOD)?
        .checked_add(frac * PERIOD / 1000)?;
    // The kernel's floor is 1 ms a period.
    (quota >= 1000).then_some(quota)
}

/// What the caller asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tasks {
    Default,
    /// `0`: no cap.
    Off,
    At(u32),
}

impl Tasks {
    /// The number asked for, if one was.
    pub fn asked_number(self) -> Option<u32> {
        match self {
            Tasks::At(n) => Some(n),
            _ => None,
        }
    }

    pub fn read(value: Option<&OsStr>) -> Result<Tasks, Error> {
        let bytes = value.map(OsStr::as_bytes);
        Ok(match bytes {
            None | Some(b"") => Tasks::Default,
            Some(b"0") => Tasks::Off,
            Some(v) => match std::str::from_utf8(v).ok().and_then(|s| s.parse().ok()) {
                Some(n) => Tasks::At(n),
                None => {
                    return Err(Error::Usage(format!(
                        "{TASKS}={}: it takes a number of tasks (processes and threads), \
                         or 0 for no cap",
                        String::from_utf8_lossy(v)
                    )));
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_reads_a_number_zero_or_nothing() {
        assert_eq!(Tasks::read(None).unwrap(), Tasks::Default);
        assert_eq!(Tasks::read(Some(OsStr::new(""))).unwrap(), Tasks::Default);
        assert_eq!(Tasks::read(Some(OsStr::new("0"))).unwrap(), Tasks::Off);
        assert_eq!(Tasks::read(Some(OsStr::new("50"))).unwrap(), Tasks::At(50));
        for bad in ["-1", "lots", "1e3", " 5"] {
            let e = Tasks::read(Some(OsStr::new(bad))).unwrap_err().to_string();
            assert!(e.contains(TASKS) && e.contains(bad), "{e}");
        }
    }

    #[test]
    fn sizes_and_cpus_read_as_the_kernel_takes_them() {
        assert_eq!(size(b"256M"), Some(256 << 20));
        assert_eq!(size(b"2G"), Some(2 << 30));
        assert_eq!(size(b"4096"), Some(4096));
        for bad in [&b""[..], b"M", b"0", b"1.5G", b"-1", b"12Q"] {
            assert_eq!(size(bad), None, "{bad:?}");
        }
        assert_eq!(cpus(b"0.5"), Some(50_000));
        assert_eq!(cpus(b"2"), Some(200_000));
        assert_eq!(cpus(b"1.25"), Some(125_000));
        assert_eq!(cpus(b".5"), Some(50_000));
        for bad in [&b""[..], b".", b"0", b"0.0001", b"1.2345", b"x", b"-1"] {
            assert_eq!(cpus(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_request_needs_memory_or_cpu_and_takes_an_asked_task_cap_along() {
        let os = |s: &'static str| Some(OsStr::new(s));
        assert_eq!(Limits::read(None, None, Some(50)).unwrap(), None);
        assert_eq!(Limits::read(os(""), None, None).unwrap(), None);
        let a = Limits::read(os("256M"), None, Some(50)).unwrap().unwrap();
        assert_eq!(a.memory, Some(256 << 20));
        assert_eq!(a.pids, Some(50 + RUN_TASKS));
        assert_eq!(a.controllers(), ["memory", "pids"]);
        let e = Limits::read(os("lots"), None, None).unwrap_err();
        assert!(e.contains(MEMORY), "{e}");
        let e = Limits::read(None, os("0"), None).unwrap_err();
        assert!(e.contains(CPU), "{e}");
    }
}
