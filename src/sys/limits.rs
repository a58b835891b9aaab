//! The run's task cap's calls (tasks.rs), the stub's: its process limit
//! read and set, the CPUs it may run on, the kernel's release. Before the
//! first child, so libc's errno is the stub's own. And the stub's
//! descriptor limit, raised while the command runs (run/sockets/take.rs).

use std::io;

use nix::errno::Errno;

use super::raw::{raw_result, syscall6};

/// `prlimit64` of this process's `resource`: set to `new` (`None`: left
/// as it is), in the same call that reads what it was. Allocates
/// nothing.
pub(super) fn prlimit(
    resource: usize,
    new: Option<&libc::rlimit64>,
) -> Result<libc::rlimit64, Errno> {
    // SAFETY: plain bits; the kernel fills both words.
    let mut old: libc::rlimit64 = unsafe { std::mem::zeroed() };
    let new = new.map_or(0, |n| std::ptr::from_ref(n) as usize);
    // SAFETY: `new`, unless null, is a whole rlimit64 the kernel reads,
    // and `old` one it writes, both borrowed for the call.
    raw_result(unsafe {
        syscall6(
            libc::SYS_prlimit64,
            [0, resource, new, (&raw mut old) as usize, 0, 0],
        )
    })?;
    Ok(old)
}

/// `RLIMIT_NPROC`'s soft value; `None`: unlimited.
pub fn process_limit() -> io::Result<Option<u64>> {
    let old = prlimit(libc::RLIMIT_NPROC as usize, None)?;
    Ok((old.rlim_cur != libc::RLIM64_INFINITY).then_some(old.rlim_cur))
}

/// `RLIMIT_NPROC` set to `limit`, soft and hard (a process without
/// CAP_SYS_RESOURCE in the initial user namespace cannot raise it
/// again), in the same call that reads the soft value it had (`None`:
/// unlimited).
pub fn set_process_limit(limit: u64) -> io::Result<Option<u64>> {
    let new = libc::rlimit64 {
        rlim_cur: limit,
        rlim_max: limit,
    };
    let old = prlimit(libc::RLIMIT_NPROC as usize, Some(&new))?;
    Ok((old.rlim_cur != libc::RLIM64_INFINITY).then_some(old.rlim_cur))
}

/// The CPUs this thread may run on, `None` where the kernel does not say.
pub fn affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain bits; zeroed is the empty set.
    let mut had: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most `size_of::<cpu_set_t>()` bytes to
    // `had`, a whole set.
    raw_result(unsafe {
        syscall6(
            libc::SYS_sched_getaffinity,
            [
                0,
                std::mem::size_of::<libc::cpu_set_t>(),
                (&raw mut had) as usize,
                0,
                0,
                0,
            ],
        )
    })
    .ok()?;
    Some(had)
}

/// How many CPUs `set` holds.
pub fn cpu_count(set: &libc::cpu_set_t) -> u32 {
    // SAFETY: reads the set only.
    u32::try_from(unsafe { libc::CPU_COUNT(set) }).unwrap_or(1)
}

/// The kernel's release (`uname -r`), up to its first NUL.
pub fn kernel_release() -> Result<Vec<u8>, Errno> {
    // SAFETY: plain bytes; the kernel fills every field.
    let mut name: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `name` is a whole utsname the kernel writes, borrowed for
    // the call.
    raw_result(unsafe { syscall6(libc::SYS_uname, [(&raw mut name) as usize, 0, 0, 0, 0, 0]) })?;
    Ok(name
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect())
}

/// Sleeps `millis` milliseconds (ppoll on nothing), however signals
/// interrupt it. Raw: the shim's cgroup remover calls it.
pub fn nap(millis: u32) {
    // SAFETY: plain numbers; zeroed is 0 s.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    ts.tv_sec = (millis / 1000).into();
    ts.tv_nsec = (millis % 1000 * 1_000_000).into();
    // SAFETY: no descriptors; `ts` is a whole timespec the kernel reads
    // (and may write the time left to), borrowed for the call; no mask.
    let _ =
        raw_result(unsafe { syscall6(libc::SYS_ppoll, [0, 0, (&raw const ts) as usize, 0, 8, 0]) });
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard one, at most
/// `most`: the stub's, once a run's connects need more descriptors than
/// the usual 1,024 (run/sockets/take.rs). Its children made before keep
/// their own. Whether it grew.
pub fn raise_descriptor_limit(most: u64) -> bool {
    let Ok(old) = prlimit(libc::RLIMIT_NOFILE as usize, None) else {
        return false;
    };
    let want = old.rlim_max.min(most).max(old.rlim_cur);
    if want == old.rlim_cur {
        return false;
    }
    let new = libc::rlimit64 {
        rlim_cur: want,
        rlim_max: old.rlim_max,
    };
    prlimit(libc::RLIMIT_NOFILE as usize, Some(&new)).is_ok()
}
