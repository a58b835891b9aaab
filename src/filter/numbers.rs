//! The syscall numbers the rules name that differ between x86_64 and
//! aarch64 (rules.rs, through `#[path]`, so build.rs reads them too).

use super::Arch;

/// Syscall numbers that differ between the architectures.
pub struct Numbers {
    pub ioctl: u32,
    pub socket: u32,
    pub socketpair: u32,
    pub connect: u32,
    pub bind: u32,
    pub unshare: u32,
    pub clone: u32,
    pub setns: u32,
    pub mount: u32,
    pub umount2: u32,
    pub pivot_root: u32,
    pub setpriority: u32,
    pub ioprio_set: u32,
    pub prlimit64: u32,
    pub sched_setaffinity: u32,
    pub sched_setscheduler: u32,
    pub sched_setparam: u32,
    pub sched_setattr: u32,
    pub prctl: u32,
}

pub fn numbers(arch: Arch) -> Numbers {
    match arch {
        Arch::X86_64 => Numbers {
            ioctl: 16,
            socket: 41,
            socketpair: 53,
            connect: 42,
            bind: 49,
            unshare: 272,
            clone: 56,
            setns: 308,
            mount: 165,
            umount2: 166,
            pivot_root: 155,
            setpriority: 141,
            ioprio_set: 251,
            prlimit64: 302,
            sched_setaffinity: 203,
            sched_setscheduler: 144,
            sched_setparam: 142,
            sched_setattr: 314,
            prctl: 157,
        },
        Arch::Aarch64 => Numbers {
            ioctl: 29,
            socket: 198,
            socketpair: 199,
            connect: 203,
            bind: 200,
            unshare: 97,
            clone: 220,
            setns: 268,
            mount: 40,
            umount2: 39,
            pivot_root: 41,
            setpriority: 140,
            ioprio_set: 30,
            prlimit64: 261,
            sched_setaffinity: 122,
            sched_setscheduler: 119,
            sched_setparam: 118,
            sched_setattr: 274,
            prctl: 167,
        },
    }
}
