//! The environment variables the helper reads, read once.

use std::ffi::OsString;

/// The environment variables the helper reads.
#[derive(Clone, Debug, Default)]
pub struct Env {
    pub allow_nested_userns: Option<OsString>,
    pub debug: Option<OsString>,
    pub helper_features: Option<OsString>,
    pub observe_sock: Option<OsString>,
    pub encoded_cmd: Option<OsString>,
    /// `APPLY_SECCOMP_UNIX` and `APPLY_SECCOMP_ALLOW_UNIX` (cli/unix.rs).
    pub unix: Option<OsString>,
    pub allow_unix: Option<OsString>,
    /// `APPLY_SECCOMP_REFUSALS` (cli/unix.rs).
    pub refusals: Option<OsString>,
    /// `APPLY_SECCOMP_MAX_TASKS` (caps.rs).
    pub max_tasks: Option<OsString>,
    /// `APPLY_SECCOMP_MEMORY_MAX` and `APPLY_SECCOMP_CPU_MAX` (caps.rs).
    pub memory_max: Option<OsString>,
    pub cpu_max: Option<OsString>,
}

impl Env {
    /// `SRT_DEBUG` is set and non-empty.
    pub fn debug_enabled(&self) -> bool {
        self.debug.as_ref().is_some_and(|v| !v.is_empty())
    }

    pub fn from_process() -> Env {
        let [
            allow_nested_userns,
            debug,
            helper_features,
            observe_sock,
            encoded_cmd,
            unix,
            allow_unix,
            refusals,
            max_tasks,
            memory_max,
            cpu_max,
        ] = crate::sys::env_values([
            "SRT_ALLOW_NESTED_USERNS",
            "SRT_DEBUG",
            "SRT_HELPER_FEATURES",
            "SRT_OBSERVE_SOCK",
            "SRT_ENCODED_CMD",
            "APPLY_SECCOMP_UNIX",
            "APPLY_SECCOMP_ALLOW_UNIX",
            "APPLY_SECCOMP_REFUSALS",
            super::caps::TASKS,
            super::caps::MEMORY,
            super::caps::CPU,
        ]);
        Env {
            allow_nested_userns,
            debug,
            helper_features,
            observe_sock,
            encoded_cmd,
            unix,
            allow_unix,
            refusals,
            max_tasks,
            memory_max,
            cpu_max,
        }
    }
}
