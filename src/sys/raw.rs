//! The system call instruction, for x86_64 (`syscall`) and aarch64
//! (`svc 0`), and the plain calls made with it: files, mounts, kill,
//! prctl, Landlock, CPU affinity. Called by init and the worker (which run
//! in the outer stub's memory, so may not touch libc's errno), and by the
//! stub where it wants the same calls.

use std::ffi::CStr;
use std::os::fd::RawFd;

use nix::errno::Errno;

// Raw system calls.
//
// init runs in the outer stub's memory while the stub runs on, and the
// worker in the same memory until its exec ([`spawn_shared`]). libc's
// errno is a word in that memory which the stub reads after its own
// failed calls, so init and the worker must not write it, nor any other
// libc state: they make system calls only through these wrappers, which
// issue the instruction directly and return the kernel's -errno as the
// value.

/// The system call instruction: `nr` with six arguments; the kernel's
/// return value, -4095..=-1 being an error.
///
/// # Safety
/// The arguments must be valid for `nr` as the kernel reads them: every
/// pointer must point to memory of the size and kind that call expects,
/// alive for the call.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(super) unsafe fn syscall6(nr: libc::c_long, a: [usize; 6]) -> isize {
    let ret: isize;
    // SAFETY: the caller vouches for the arguments; `syscall` clobbers
    // rcx and r11 only, declared; memory may be read or written (no
    // `nomem`), as the call's pointers direct.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a[0],
            in("rsi") a[1],
            in("rdx") a[2],
            in("r10") a[3],
            in("r8") a[4],
            in("r9") a[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// As the x86_64 version.
///
/// # Safety
/// As the x86_64 version.
#[cfg(target_arch = "aarch64")]
#[inline]
pub(super) unsafe fn syscall6(nr: libc::c_long, a: [usize; 6]) -> isize {
    let ret: isize;
    // SAFETY: the caller vouches for the arguments; `svc 0` returns in x0
    // and preserves every other register.
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") nr,
            inlateout("x0") a[0] as isize => ret,
            in("x1") a[1],
            in("x2") a[2],
            in("x3") a[3],
            in("x4") a[4],
            in("x5") a[5],
            options(nostack),
        );
    }
    ret
}

pub(super) fn raw_result(ret: isize) -> Result<usize, Errno> {
    if (-4095..0).contains(&ret) {
        Err(Errno::from_raw(-ret as i32))
    } else {
        Ok(ret as usize)
    }
}

/// A system call whose arguments are plain numbers (no pointer the kernel
/// would follow).
pub(super) fn numeric(nr: libc::c_long, a: [usize; 6]) -> Result<usize, Errno> {
    // SAFETY: callers below pass only integers, file descriptors and
    // signal numbers, which the kernel checks itself.
    raw_result(unsafe { syscall6(nr, a) })
}

/// `write(fd, buf)`: the bytes written.
pub fn raw_write(fd: RawFd, buf: &[u8]) -> Result<usize, Errno> {
    // SAFETY: the kernel reads at most `buf.len()` bytes from `buf`.
    raw_result(unsafe {
        syscall6(
            libc::SYS_write,
            [fd as usize, buf.as_ptr() as usize, buf.len(), 0, 0, 0],
        )
    })
}

/// `read(fd, buf)`: the bytes read.
pub fn raw_read(fd: RawFd, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: the kernel writes at most `buf.len()` bytes to `buf`.
    raw_result(unsafe {
        syscall6(
            libc::SYS_read,
            [fd as usize, buf.as_mut_ptr() as usize, buf.len(), 0, 0, 0],
        )
    })
}

/// `close(fd)`; the result is of no use to a process that is done with
/// the descriptor.
pub fn raw_close(fd: RawFd) {
    let _ = numeric(libc::SYS_close, [fd as usize, 0, 0, 0, 0, 0]);
}

/// `openat(AT_FDCWD, path, flags|O_CLOEXEC)`: an existing file (no
/// `O_CREAT`).
pub fn raw_open(path: &CStr, flags: libc::c_int) -> Result<RawFd, Errno> {
    super::open_at(libc::AT_FDCWD, path, flags & !libc::O_CREAT, 0)
}

/// Writes `bytes` to the existing file `path` (openat, write, close).
pub fn write_file(path: &CStr, bytes: &[u8]) -> Result<(), Errno> {
    let fd = raw_open(path, libc::O_WRONLY)?;
    let written = raw_write(fd, bytes);
    raw_close(fd);
    match written? {
        n if n == bytes.len() => Ok(()),
        _ => Err(Errno::EIO),
    }
}

/// `mount(source, target, fstype, flags, NULL)`.
pub fn raw_mount(
    source: &CStr,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
) -> Result<(), Errno> {
    let fstype = fstype.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: NUL-terminated strings (or null for the type), no data.
    raw_result(unsafe {
        syscall6(
            libc::SYS_mount,
            [
                source.as_ptr() as usize,
                target.as_ptr() as usize,
                fstype as usize,
                flags as usize,
                0,
                0,
            ],
        )
    })
    .map(drop)
}

/// `statfs(path)`: whether the mount holding `path` is read-only.
pub fn raw_is_read_only(path: &CStr) -> Result<bool, Errno> {
    // SAFETY: a zeroed statfs is a valid buffer for the kernel to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path; the kernel writes one statfs into `st`.
    raw_result(unsafe {
        syscall6(
            libc::SYS_statfs,
            [path.as_ptr() as usize, (&raw mut st) as usize, 0, 0, 0, 0],
        )
    })?;
    Ok(st.f_flags as libc::c_ulong & libc::ST_RDONLY != 0)
}

/// Whether `path` (followed through symbolic links, no automount) is the
/// root of a mount: `statx` with `STATX_ATTR_MOUNT_ROOT`. `Ok(None)` when
/// the kernel does not say (before Linux 5.8). A raw call (no `errno`):
/// init makes it too, in the stub's memory.
pub fn is_mount_root(path: &CStr) -> Result<Option<bool>, Errno> {
    // SAFETY: a zeroed statx is a valid buffer for the kernel to fill.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated; `st` is a writable statx, alive for
    // the call.
    raw_result(unsafe {
        syscall6(
            libc::SYS_statx,
            [
                libc::AT_FDCWD as usize,
                path.as_ptr() as usize,
                libc::AT_NO_AUTOMOUNT as usize,
                libc::STATX_BASIC_STATS as usize,
                (&raw mut st) as usize,
                0,
            ],
        )
    })?;
    let bit = libc::STATX_ATTR_MOUNT_ROOT as u64;
    Ok((st.stx_attributes_mask & bit != 0).then_some(st.stx_attributes & bit != 0))
}

/// `kill(pid, sig)`.
pub fn raw_kill(pid: libc::pid_t, sig: libc::c_int) -> Result<(), Errno> {
    numeric(libc::SYS_kill, [pid as usize, sig as usize, 0, 0, 0, 0]).map(drop)
}

/// `getpid()`, in this process's PID namespace.
pub fn raw_getpid() -> libc::pid_t {
    numeric(libc::SYS_getpid, [0; 6]).unwrap_or(0) as libc::pid_t
}

/// `getppid()`.
pub fn raw_getppid() -> libc::pid_t {
    numeric(libc::SYS_getppid, [0; 6]).unwrap_or(0) as libc::pid_t
}

/// `prctl(PR_SET_PDEATHSIG, sig)`.
pub fn set_pdeathsig(sig: libc::c_int) -> Result<(), Errno> {
    numeric(
        libc::SYS_prctl,
        [libc::PR_SET_PDEATHSIG as usize, sig as usize, 0, 0, 0, 0],
    )
    .map(drop)
}

/// `prctl(PR_SET_NO_NEW_PRIVS, 1)`.
pub fn set_no_new_privs() -> Result<(), Errno> {
    numeric(
        libc::SYS_prctl,
        [libc::PR_SET_NO_NEW_PRIVS as usize, 1, 0, 0, 0, 0],
    )
    .map(drop)
}

/// `landlock_restrict_self(ruleset, 0)`: this task joins the Landlock
/// domain of `ruleset` (which needs no_new_privs set first, or
/// CAP_SYS_ADMIN).
pub fn landlock_restrict_self(ruleset: RawFd) -> Result<(), Errno> {
    numeric(
        libc::SYS_landlock_restrict_self,
        [ruleset as usize, 0, 0, 0, 0, 0],
    )
    .map(drop)
}

/// `landlock_add_rule(ruleset, LANDLOCK_RULE_PATH_BENEATH, {access,
/// parent}, 0)`: `access` granted beneath the file or folder open on
/// `parent` (an `O_PATH` descriptor will do). The `landlock` crate's
/// `add_rule` makes an `fstat` of `parent` first, to drop the rights that
/// hold only for folders; the capability-free way grants only
/// `WRITE_FILE`, which holds for both (capfree.rs).
pub fn landlock_add_path_rule(ruleset: RawFd, parent: RawFd, access: u64) -> Result<(), Errno> {
    /// `struct landlock_path_beneath_attr` (packed in the kernel's header).
    #[repr(C, packed)]
    struct PathBeneath {
        allowed_access: u64,
        parent_fd: i32,
    }
    const LANDLOCK_RULE_PATH_BENEATH: usize = 1;
    let attr = PathBeneath {
        allowed_access: access,
        parent_fd: parent,
    };
    // SAFETY: the kernel reads one 12-byte landlock_path_beneath_attr
    // from `attr`, alive for the call; the rest are numbers.
    raw_result(unsafe {
        syscall6(
            libc::SYS_landlock_add_rule,
            [
                ruleset as usize,
                LANDLOCK_RULE_PATH_BENEATH,
                &raw const attr as usize,
                0,
                0,
                0,
            ],
        )
    })
    .map(drop)
}

/// The kernel's Landlock ABI version (`landlock_create_ruleset(NULL, 0,
/// LANDLOCK_CREATE_RULESET_VERSION)`): EOPNOTSUPP when built in but not
/// enabled at boot, ENOSYS when not built in. For messages only: the
/// ruleset itself is made by the `landlock` crate, which checks what it
/// needs on its own.
///
/// Asked of the kernel once a process: the answer is kept (a run asks
/// it where it picks who holds the socket policy, again where it starts
/// that policy or the capability-free way).
pub fn landlock_abi() -> Result<i32, Errno> {
    use std::sync::atomic::{AtomicI32, Ordering};
    const VERSION: usize = 1 << 0;
    /// `i32::MIN`: not asked yet; below 0: the errno, negated.
    static KEPT: AtomicI32 = AtomicI32::new(i32::MIN);
    match KEPT.load(Ordering::Relaxed) {
        i32::MIN => {}
        e if e < 0 => return Err(Errno::from_raw(-e)),
        v => return Ok(v),
    }
    let got =
        numeric(libc::SYS_landlock_create_ruleset, [0, 0, VERSION, 0, 0, 0]).map(|v| v as i32);
    KEPT.store(got.unwrap_or_else(|e| -(e as i32)), Ordering::Relaxed);
    got
}

/// `sched_setaffinity(0, mask)`: the CPUs this thread may run on.
pub fn raw_set_affinity(mask: &libc::cpu_set_t) -> Result<(), Errno> {
    // SAFETY: the kernel reads `size_of::<cpu_set_t>()` bytes from `mask`,
    // a whole set borrowed for the call.
    raw_result(unsafe {
        syscall6(
            libc::SYS_sched_setaffinity,
            [
                0,
                std::mem::size_of::<libc::cpu_set_t>(),
                mask as *const libc::cpu_set_t as usize,
                0,
                0,
                0,
            ],
        )
    })
    .map(drop)
}

/// Keeps this thread on the CPU it runs on, for a child about to be made
/// to start there ([`raw_set_affinity`] gives the CPUs back): the CPUs it
/// `had` ([`super::affinity`]), or `None` where it had one already, they
/// were not known or a call failed (nothing changed then). The stub's, before init starts: it asks libc's
/// `sched_getcpu`, which may set errno. The CPUs as `sched_getaffinity`
/// reads them: where a cpuset narrows what the caller asked for, the
/// command gets the narrower set as its own, and keeps it should the
/// cpuset widen later.
pub fn pin_to_this_cpu(had: Option<libc::cpu_set_t>) -> Option<libc::cpu_set_t> {
    let had = had?;
    if super::cpu_count(&had) < 2 {
        return None;
    }
    // SAFETY: no arguments; the vDSO's getcpu on x86_64, a system call
    // elsewhere.
    let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).ok()?;
    // SAFETY: as above.
    let mut here: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
        return None;
    }
    // SAFETY: `cpu` is within the set's bits, checked above.
    unsafe { libc::CPU_SET(cpu, &mut here) };
    raw_set_affinity(&here).ok()?;
    Some(had)
}
