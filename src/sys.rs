//! The only module with `unsafe`: thin wrappers over the syscalls that `nix`
//! does not offer as safe functions, and the raw system calls of the
//! processes that run in the outer stub's memory (init and the worker:
//! see "Raw system calls" below and [`spawn_shared`]).
//!
//! No wrapper allocates, formats or panics (the exceptions, used only
//! before the first child, say so).
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::errno::Errno;

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Result of [`fork`].
pub enum Forked {
    Parent(libc::pid_t),
    Child,
}

/// `fork(2)` (the race tester's load processes and probes; the helper's own
/// tree is made with [`spawn_shared`] and [`spawn_vfork`]).
pub fn fork() -> io::Result<Forked> {
    // SAFETY: this process never has more than one thread (no dependency
    // starts one; `threads::wait_single_threaded` checks it before the
    // namespace entry), so the child's copy of every lock and allocator
    // state is consistent. Children only run allocation-free code before
    // exec or `_exit`.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

// ---------------------------------------------------------------------------
// Raw system calls.
//
// init runs in the outer stub's memory while the stub runs on, and the
// worker in the same memory until its exec ([`spawn_shared`],
// [`spawn_vfork`]). libc's errno is a word in that memory which the stub
// reads after its own failed calls, so init and the worker must not write
// it, nor any other libc state: they make system calls only through these
// wrappers, which issue the instruction directly and return the kernel's
// -errno as the value.

/// The system call instruction: `nr` with six arguments; the kernel's
/// return value, -4095..=-1 being an error.
///
/// # Safety
/// The arguments must be valid for `nr` as the kernel reads them: every
/// pointer must point to memory of the size and kind that call expects,
/// alive for the call.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn syscall6(nr: libc::c_long, a: [usize; 6]) -> isize {
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
unsafe fn syscall6(nr: libc::c_long, a: [usize; 6]) -> isize {
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

fn raw_result(ret: isize) -> Result<usize, Errno> {
    if (-4095..0).contains(&ret) {
        Err(Errno::from_raw(-ret as i32))
    } else {
        Ok(ret as usize)
    }
}

/// A system call whose arguments are plain numbers (no pointer the kernel
/// would follow).
fn numeric(nr: libc::c_long, a: [usize; 6]) -> Result<usize, Errno> {
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

/// The kernel's Landlock ABI version (`landlock_create_ruleset(NULL, 0,
/// LANDLOCK_CREATE_RULESET_VERSION)`): EOPNOTSUPP when built in but not
/// enabled at boot, ENOSYS when not built in. For messages only: the
/// ruleset itself is made by the `landlock` crate, which checks what it
/// needs on its own.
pub fn landlock_abi() -> Result<i32, Errno> {
    const VERSION: usize = 1 << 0;
    numeric(libc::SYS_landlock_create_ruleset, [0, 0, VERSION, 0, 0, 0]).map(|v| v as i32)
}

/// Whether the kernel knows the seccomp filter action `action`
/// (`seccomp(SECCOMP_GET_ACTION_AVAIL)`, Linux 4.14): `Ok` if so,
/// EOPNOTSUPP if not, EINVAL without filter support. For `--doctor`.
pub fn seccomp_action_available(action: u32) -> Result<(), Errno> {
    const SECCOMP_GET_ACTION_AVAIL: usize = 2;
    // SAFETY: the kernel reads one u32 from the pointer, which points to
    // `action`, alive on this frame for the whole call.
    raw_result(unsafe {
        syscall6(
            libc::SYS_seccomp,
            [
                SECCOMP_GET_ACTION_AVAIL,
                0,
                &action as *const u32 as usize,
                0,
                0,
                0,
            ],
        )
    })
    .map(drop)
}

/// This process's seccomp mode (`PR_GET_SECCOMP`): 0 none, 1 strict, 2
/// filter; EINVAL on a kernel built without seccomp.
pub fn seccomp_mode() -> Result<usize, Errno> {
    numeric(
        libc::SYS_prctl,
        [libc::PR_GET_SECCOMP as usize, 0, 0, 0, 0, 0],
    )
}

/// `kill(pid, sig)`.
pub fn raw_kill(pid: libc::pid_t, sig: libc::c_int) -> Result<(), Errno> {
    numeric(libc::SYS_kill, [pid as usize, sig as usize, 0, 0, 0, 0]).map(drop)
}

/// Whether the other end of the socket `fd` is closed: `ppoll` with no
/// events asked and a zero timeout reports POLLHUP (or POLLERR) alone.
pub fn peer_closed(fd: RawFd) -> Result<bool, Errno> {
    let mut pfd = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: one pollfd, writable; a timespec, readable; no signal mask.
    raw_result(unsafe {
        syscall6(
            libc::SYS_ppoll,
            [
                (&raw mut pfd) as usize,
                1,
                (&raw const zero) as usize,
                0,
                8,
                0,
            ],
        )
    })?;
    Ok(pfd.revents & (libc::POLLHUP | libc::POLLERR) != 0)
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

/// `openat(AT_FDCWD, path, flags|O_CLOEXEC)`: an existing file (no
/// `O_CREAT`).
pub fn raw_open(path: &CStr, flags: libc::c_int) -> Result<RawFd, Errno> {
    // SAFETY: a NUL-terminated path; no mode is read without O_CREAT.
    raw_result(unsafe {
        syscall6(
            libc::SYS_openat,
            [
                libc::AT_FDCWD as usize,
                path.as_ptr() as usize,
                ((flags & !libc::O_CREAT) | libc::O_CLOEXEC) as usize,
                0,
                0,
                0,
            ],
        )
    })
    .map(|fd| fd as RawFd)
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

/// `rt_sigprocmask(SIG_SETMASK, set, NULL)`.
pub fn set_sigmask(set: &libc::sigset_t) -> Result<(), Errno> {
    // SAFETY: `set` is a whole sigset_t; the kernel reads its first
    // _NSIG/8 = 8 bytes (the size passed), as libc does.
    raw_result(unsafe {
        syscall6(
            libc::SYS_rt_sigprocmask,
            [
                libc::SIG_SETMASK as usize,
                set as *const _ as usize,
                0,
                8,
                0,
                0,
            ],
        )
    })
    .map(drop)
}

/// Waits for one of the signals in `set` (which must be blocked) and
/// returns its number; retries EINTR. (nix's `SigSet::wait` reads
/// sigwait's positive error return as success and unwraps an
/// uninitialised signal, a panic.)
pub fn sigwait(set: &libc::sigset_t) -> Result<libc::c_int, Errno> {
    loop {
        // SAFETY: `set` as in `set_sigmask`; no siginfo, no timeout.
        match raw_result(unsafe {
            syscall6(
                libc::SYS_rt_sigtimedwait,
                [set as *const _ as usize, 0, 0, 8, 0, 0],
            )
        }) {
            Ok(sig) => return Ok(sig as libc::c_int),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// How a child came back from `wait4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    Exited(libc::c_int),
    Signaled(libc::c_int),
    /// Stopped by this signal (asked for with `untraced` only); not reaped.
    Stopped(libc::c_int),
}

/// `wait4(-1, WNOHANG)`, with `WUNTRACED` when `untraced`: a child that
/// has ended (reaped) or, with `untraced`, stopped; continued children are
/// not asked for.
pub fn reap_any(untraced: bool) -> Result<Option<(libc::pid_t, Ended)>, Errno> {
    let mut status: libc::c_int = 0;
    let flags = libc::WNOHANG | if untraced { libc::WUNTRACED } else { 0 };
    // SAFETY: one writable int for the status; no rusage.
    let pid = raw_result(unsafe {
        syscall6(
            libc::SYS_wait4,
            [
                -1isize as usize,
                (&raw mut status) as usize,
                flags as usize,
                0,
                0,
                0,
            ],
        )
    })? as libc::pid_t;
    if pid == 0 {
        return Ok(None);
    }
    let ended = if libc::WIFSTOPPED(status) {
        Ended::Stopped(libc::WSTOPSIG(status))
    } else if libc::WIFSIGNALED(status) {
        Ended::Signaled(libc::WTERMSIG(status))
    } else {
        Ended::Exited(libc::WEXITSTATUS(status))
    };
    Ok(Some((pid, ended)))
}

/// `setpgid(0, 0)`: this process leads a process group of its own.
pub fn raw_new_process_group() -> Result<(), Errno> {
    numeric(libc::SYS_setpgid, [0, 0, 0, 0, 0, 0]).map(drop)
}

/// `getpid()`, in this process's PID namespace.
pub fn raw_getpid() -> libc::pid_t {
    numeric(libc::SYS_getpid, [0; 6]).unwrap_or(0) as libc::pid_t
}

/// `ioctl(fd, TIOCSPGRP, &pgid)`: makes `pgid` (in the caller's PID
/// namespace) the terminal's foreground process group. A caller outside
/// that group is sent SIGTTOU unless it blocks or ignores it.
pub fn raw_set_foreground(fd: RawFd, pgid: libc::pid_t) -> Result<(), Errno> {
    // SAFETY: TIOCSPGRP reads one pid_t from the pointer, which points at
    // `pgid` for the call.
    raw_result(unsafe {
        syscall6(
            libc::SYS_ioctl,
            [
                fd as usize,
                libc::TIOCSPGRP as usize,
                (&raw const pgid) as usize,
                0,
                0,
                0,
            ],
        )
    })
    .map(drop)
}

/// `ioctl(fd, TIOCGPGRP)`: the terminal's foreground process group, as
/// the caller's PID namespace sees it (0: one it cannot see).
pub fn foreground(fd: RawFd) -> Result<libc::pid_t, Errno> {
    let mut pgid: libc::pid_t = 0;
    // SAFETY: TIOCGPGRP writes one pid_t to the pointer, which points at
    // `pgid` for the call.
    raw_result(unsafe {
        syscall6(
            libc::SYS_ioctl,
            [
                fd as usize,
                libc::TIOCGPGRP as usize,
                (&raw mut pgid) as usize,
                0,
                0,
                0,
            ],
        )
    })?;
    Ok(pgid)
}

/// A stack for [`spawn_shared`] and [`spawn_vfork`]: anonymous memory with
/// an inaccessible guard page below it, so an overflow faults instead of
/// writing into the memory the child shares with its parent.
pub struct Stack {
    base: usize,
    len: usize,
}

impl Stack {
    const GUARD: usize = 4096;
    /// What must stay free below the child's entry closure.
    const MIN_FREE: usize = 16 * 1024;

    /// `usable` bytes of stack (rounded up to pages) plus the guard page.
    pub fn new(usable: usize) -> Result<Stack, Errno> {
        let len = usable.div_ceil(Self::GUARD) * Self::GUARD + Self::GUARD;
        let prot = (libc::PROT_READ | libc::PROT_WRITE) as usize;
        let flags = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK) as usize;
        // SAFETY: a fresh private anonymous mapping (no address asked for,
        // no file), which affects no existing memory.
        let base =
            raw_result(unsafe { syscall6(libc::SYS_mmap, [0, len, prot, flags, usize::MAX, 0]) })?;
        let stack = Stack { base, len };
        // SAFETY: the first page of the mapping made above, owned by `stack`.
        raw_result(unsafe {
            syscall6(
                libc::SYS_mprotect,
                [base, Self::GUARD, libc::PROT_NONE as usize, 0, 0, 0],
            )
        })?;
        Ok(stack)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once. A stack still
        // in use is never dropped: `spawn_vfork` returns only after its
        // child has exec'd or exited, and `spawn_shared` keeps its stack.
        let _ =
            raw_result(unsafe { syscall6(libc::SYS_munmap, [self.base, self.len, 0, 0, 0, 0]) });
    }
}

/// `clone(flags, stack_top, ptid, ctid)`; the child calls `f(arg)` on the
/// new stack and exits (`exit`, the task alone) with its return value,
/// never coming back here. Returns what the parent gets: the new id or
/// -errno. (musl's `clone()` refuses CLONE_THREAD and sets errno; a child
/// made by a raw syscall from Rust would return into a Rust frame on a
/// stack it does not own.)
///
/// # Safety
/// `stack_top` must be the 16-byte aligned top of memory the child may use
/// as its stack for its whole life; `f(arg)` must be sound to run in the
/// child on that stack; `ptid` and `ctid` must be null or valid for the
/// kernel to write an i32 for as long as `flags` have it do so.
#[cfg(target_arch = "x86_64")]
unsafe fn clone_call(
    flags: usize,
    stack_top: usize,
    (ptid, ctid): (*mut i32, *mut i32),
    f: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: *mut libc::c_void,
) -> isize {
    let ret: isize;
    // SAFETY: as the caller guarantees; x86_64 clone takes (flags, stack,
    // parent_tid, child_tid, tls). The child branch (rax == 0) runs on the
    // new stack only, from registers it got as copies (r12, r13 are
    // preserved across `syscall`), and ends in `exit`; the parent branch
    // returns the id or -errno with only rcx and r11 clobbered.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov rdi, r13",
            "call r12",
            "mov edi, eax",
            "mov eax, {exit}",
            "syscall",
            "ud2",
            "2:",
            exit = const libc::SYS_exit,
            inlateout("rax") libc::SYS_clone as isize => ret,
            in("rdi") flags,
            in("rsi") stack_top,
            in("rdx") ptid,
            in("r10") ctid,
            in("r8") 0usize,
            in("r12") f,
            in("r13") arg,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// As the x86_64 version; aarch64 clone takes (flags, stack, parent_tid,
/// tls, child_tid).
///
/// # Safety
/// As the x86_64 version.
#[cfg(target_arch = "aarch64")]
unsafe fn clone_call(
    flags: usize,
    stack_top: usize,
    (ptid, ctid): (*mut i32, *mut i32),
    f: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: *mut libc::c_void,
) -> isize {
    let ret: isize;
    // SAFETY: as the x86_64 version; x20 and x21 survive `svc 0`, and the
    // child's `blr` (which sets x30) never returns to compiled code.
    unsafe {
        std::arch::asm!(
            "svc 0",
            "cbnz x0, 2f",
            "mov x0, x21",
            "blr x20",
            "mov x8, {exit}",
            "svc 0",
            "brk 0",
            "2:",
            exit = const libc::SYS_exit,
            in("x8") libc::SYS_clone,
            inlateout("x0") flags as isize => ret,
            in("x1") stack_top,
            in("x2") ptid,
            in("x3") 0usize,
            in("x4") ctid,
            in("x20") f,
            in("x21") arg,
            options(nostack),
        );
    }
    ret
}

/// Starts a child that runs `child` on `stack` in this process's memory
/// (`CLONE_VM`) with `flags` added. `child` is moved to the top of the
/// stack, so it outlives this call; the child runs it, and exits with the
/// set-up failure status should it return.
fn spawn_on<F: FnOnce()>(
    stack: &mut Stack,
    flags: libc::c_int,
    child: F,
) -> Result<libc::pid_t, Errno> {
    extern "C" fn entry<F: FnOnce()>(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `F` that `spawn_on` wrote at the top of this
        // child's stack, read once, here.
        let child = unsafe { std::ptr::read(arg.cast::<F>()) };
        child();
        exit_now(crate::error::EXIT_SETUP)
    }
    let top = (stack.base + stack.len) & !15;
    let align = std::mem::align_of::<F>().max(16);
    let slot = (top - std::mem::size_of::<F>()) & !(align - 1);
    if slot < stack.base + Stack::GUARD + Stack::MIN_FREE {
        return Err(Errno::EINVAL);
    }
    // SAFETY: `slot` lies in the stack's writable part (checked above), is
    // aligned for `F` and sized for it, and nothing else uses that memory.
    unsafe { std::ptr::write(slot as *mut F, child) };
    let flags = (libc::CLONE_VM | flags) as usize;
    let no_tids = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the child's stack pointer starts at `slot` (16-byte aligned,
    // below the closure), in the stack's writable part; `entry::<F>` reads
    // the closure once and never returns; no tid words are written. The
    // caller's duties for running in shared memory are stated on
    // `spawn_shared` and `spawn_vfork`.
    let ret = unsafe { clone_call(flags, slot, no_tids, entry::<F>, slot as *mut libc::c_void) };
    match raw_result(ret) {
        Ok(pid) => Ok(pid as libc::pid_t),
        Err(e) => {
            // No child: the closure is still ours to drop.
            // SAFETY: written above and not read by any child.
            unsafe { std::ptr::drop_in_place(slot as *mut F) };
            Err(e)
        }
    }
}

/// posix_spawn's way of starting a child: `clone(CLONE_VM|CLONE_VFORK)`,
/// with `flags` added (0, or `CLONE_NEWUSER` for a child in a new user
/// namespace). The child runs `child` on `stack` in this process's memory,
/// and this process sleeps until the child execs or exits; no page tables
/// are copied and no page is copied on write afterwards. `child` must not
/// allocate, free or write anything this process reads after it resumes,
/// must make system calls only through this module's raw wrappers (others
/// may share this memory: see [`spawn_shared`]), and should exec or
/// `_exit`.
pub fn spawn_vfork<F: FnOnce()>(
    stack: &mut Stack,
    flags: libc::c_int,
    child: F,
) -> Result<libc::pid_t, Errno> {
    spawn_on(stack, flags | libc::CLONE_VFORK | libc::SIGCHLD, child)
}

/// Starts a child that runs on in this process's memory (`CLONE_VM`), with
/// its own file table, signal handlers and mask, credentials and
/// namespaces, while this process goes on: init, made this way, needs no
/// copy of the stub's page tables and leaves none to tear down, and the
/// stub takes no copy-on-write faults after it.
///
/// The two then run at once on one memory, so `child` (and everything it
/// runs) must: touch no memory this process writes after the call (it
/// takes `'static` data: leaked or static, never freed); allocate or free
/// nothing; and make system calls only through this module's raw
/// wrappers, which leave errno and all other libc state alone. init and
/// the worker keep to that (supervise.rs, worker.rs). The stack is the
/// child's for the rest of this process's life: never unmapped.
pub fn spawn_shared<F: FnOnce() + 'static>(
    mut stack: Stack,
    child: F,
) -> Result<libc::pid_t, Errno> {
    let pid = spawn_on(&mut stack, libc::SIGCHLD, child)?;
    std::mem::forget(stack);
    Ok(pid)
}

/// `_exit(2)`: leave without running destructors or flushing stdio, as a
/// forked child must.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` takes no pointers and never returns.
    unsafe { libc::_exit(code) }
}

/// A command line prepared before `fork`, so `execvp` needs no allocation.
pub struct ExecArgs {
    /// Owns the strings the pointer vectors point into.
    _args: Vec<CString>,
    /// `argv` and a null pointer.
    ptrs: Vec<*const libc::c_char>,
    /// `/bin/sh`, a slot for the file found, `argv[1..]` and a null pointer:
    /// what runs a file the kernel refuses with ENOEXEC (a script without
    /// `#!`), as glibc's execvp does and musl's does not. `Cell` has the
    /// layout of the pointer it holds, so this is also a `char *const *`.
    sh_ptrs: Vec<std::cell::Cell<*const libc::c_char>>,
}

/// The shell that runs a file without `#!` (glibc's `_PATH_BSHELL`).
const BSHELL: &CStr = c"/bin/sh";
/// The search path when `PATH` is unset (glibc's `_CS_PATH`, which the C
/// helper uses; musl's default would also search /usr/local/bin).
const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";
/// Longest file name and longest directory the search builds paths from.
const NAME_MAX: usize = 255;
const PATH_MAX: usize = 4096;

impl ExecArgs {
    /// Builds the argument vectors (allocates: call before forking).
    /// Returns `None` if an argument contains a NUL byte (argv cannot).
    pub fn new<S: AsRef<OsStr>>(argv: &[S]) -> Option<ExecArgs> {
        let args = argv
            .iter()
            .map(|a| CString::new(a.as_ref().as_bytes()).ok())
            .collect::<Option<Vec<_>>>()?;
        if args.is_empty() {
            return None;
        }
        let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let sh_ptrs = [BSHELL.as_ptr(), std::ptr::null()]
            .into_iter()
            .chain(ptrs[1..].iter().copied())
            .map(std::cell::Cell::new)
            .collect();
        Some(ExecArgs {
            _args: args,
            ptrs,
            sh_ptrs,
        })
    }

    fn file(&self) -> &CStr {
        // SAFETY: `ptrs[0]` points into `_args[0]`, a live CString.
        unsafe { CStr::from_ptr(self.ptrs[0]) }
    }
}

/// `execve(path, argv, environ)`; returns the error (it returns only on
/// failure). Raw: the worker runs in shared memory.
fn execve(path: &CStr, argv: *const *const libc::c_char) -> Errno {
    unsafe extern "C" {
        static environ: *const *const libc::c_char;
    }
    // SAFETY: `path` is NUL-terminated; `argv` is one of an `ExecArgs`'
    // null-terminated vectors, whose strings it owns and outlives this call;
    // `environ` is the C library's null-terminated environment, which this
    // process only changes before its first fork.
    let ret = unsafe {
        syscall6(
            libc::SYS_execve,
            [
                path.as_ptr() as usize,
                argv as usize,
                environ as usize,
                0,
                0,
                0,
            ],
        )
    };
    raw_result(ret).err().unwrap_or(Errno::EINVAL)
}

/// `execve` with glibc's fallback: a file refused with ENOEXEC runs as
/// `/bin/sh FILE ARGS...`, unless it is a binary (as a shell decides:
/// [`looks_binary`]), which stays ENOEXEC (126) instead of reaching the
/// shell as a script (whose errors would read as 127).
fn execve_or_sh(args: &ExecArgs, path: &CStr) -> Errno {
    let err = execve(path, args.ptrs.as_ptr());
    if err != Errno::ENOEXEC {
        return err;
    }
    let mut head = [0u8; 80];
    if let Ok(fd) = raw_open(path, libc::O_RDONLY) {
        let read = raw_read(fd, &mut head);
        raw_close(fd);
        if let Ok(n) = read {
            if looks_binary(&head[..n]) {
                return Errno::ENOEXEC;
            }
        }
    }
    args.sh_ptrs[1].set(path.as_ptr());
    execve(BSHELL, args.sh_ptrs.as_ptr().cast())
}

/// The start of a file is a binary's, not a script's: an ELF header, or a
/// NUL byte before the first newline (bash's `check_binary_file`).
pub fn looks_binary(head: &[u8]) -> bool {
    head.starts_with(b"\x7fELF") || head.iter().take_while(|&&b| b != b'\n').any(|&b| b == 0)
}

/// `execvp(3)` with glibc's semantics (what the C helper links): a name
/// with a `/` is run as is; otherwise each `PATH` entry is tried (an empty
/// one is the working directory), going on past ENOENT, ENOTDIR, ESTALE,
/// ENODEV, ETIMEDOUT and EACCES, which is reported if nothing ran. Files
/// without `#!` run with `/bin/sh`. Candidate paths are built on the stack.
/// Returns only on failure.
pub fn execvp(args: &ExecArgs) -> io::Error {
    // SAFETY: getenv returns null or a pointer to a NUL-terminated string
    // in the environment, which this single-threaded process only changes
    // before its first fork; it does not allocate.
    let var = unsafe { libc::getenv(c"PATH".as_ptr()) };
    let path = if var.is_null() {
        DEFAULT_PATH
    } else {
        // SAFETY: non-null, so a valid string as said above.
        unsafe { CStr::from_ptr(var) }.to_bytes()
    };
    let err = search(path, args.file(), |candidate| execve_or_sh(args, candidate));
    io::Error::from_raw_os_error(err as i32)
}

/// The search of [`execvp`], over any `exec` (tests pass a fake one).
/// Returns the error to report.
pub fn search(path: &[u8], file: &CStr, mut exec: impl FnMut(&CStr) -> Errno) -> Errno {
    let name = file.to_bytes();
    if name.is_empty() {
        return Errno::ENOENT;
    }
    if name.contains(&b'/') {
        return exec(file);
    }
    if name.len() > NAME_MAX {
        return Errno::ENAMETOOLONG;
    }
    let mut buf = [0u8; PATH_MAX + NAME_MAX + 2];
    let mut eacces = false;
    let mut last = Errno::ENOENT;
    for dir in path.split(|&b| b == b':') {
        if dir.len() >= PATH_MAX {
            continue;
        }
        let mut len = 0;
        if !dir.is_empty() {
            buf[..dir.len()].copy_from_slice(dir);
            buf[dir.len()] = b'/';
            len = dir.len() + 1;
        }
        buf[len..len + name.len()].copy_from_slice(name);
        buf[len + name.len()] = 0;
        let Ok(candidate) = CStr::from_bytes_until_nul(&buf) else {
            continue;
        };
        last = exec(candidate);
        match last {
            Errno::EACCES => eacces = true,
            Errno::ENOENT | Errno::ENOTDIR | Errno::ESTALE | Errno::ENODEV | Errno::ETIMEDOUT => {}
            other => return other,
        }
    }
    if eacces { Errno::EACCES } else { last }
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, 0, prog)`.
///
/// `prog` must be a validated program (see `filter::Program`): a whole
/// number of 8-byte `sock_filter` instructions, 1..=4096 of them.
pub fn install_filter(prog: &'static [u8]) -> Result<(), Errno> {
    seccomp_filter(prog, 0).map(drop)
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
/// prog)`: installs `prog` and returns its notification listener.
pub fn install_filter_listener(prog: &'static [u8]) -> Result<OwnedFd, Errno> {
    let fd = seccomp_filter(prog, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER)? as RawFd;
    // SAFETY: with this flag the kernel returns a new file descriptor, owned
    // here only.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn seccomp_filter(prog: &'static [u8], flags: libc::c_ulong) -> Result<usize, Errno> {
    let fprog = libc::sock_fprog {
        len: (prog.len() / 8) as libc::c_ushort,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: the kernel reads `len` instructions of 8 bytes from `filter`
    // (copy_from_user, so alignment does not matter); `filter::Program`
    // guarantees the slice holds exactly that many, and it is `'static`.
    let ret = unsafe {
        syscall6(
            libc::SYS_seccomp,
            [
                libc::SECCOMP_SET_MODE_FILTER as usize,
                flags as usize,
                (&raw const fprog) as usize,
                0,
                0,
                0,
            ],
        )
    };
    raw_result(ret)
}

/// The message of [`send_fd`]: a 4-byte status, plus the fd when it is 0.
const FD_MESSAGE_SPACE: usize = 64;

/// Room for one SCM_RIGHTS header and fd, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct Control([u8; FD_MESSAGE_SPACE]);

/// A message header over one buffer; its control part is left empty.
fn msghdr_for(iov: &mut libc::iovec) -> libc::msghdr {
    // SAFETY: a zeroed msghdr is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg
}

/// Sends `status` (0: `fd` attached; otherwise an errno and no fd) as one
/// message on a Unix socket, with `fd` in SCM_RIGHTS. No allocation.
pub fn send_fd(sock: RawFd, status: i32, fd: Option<RawFd>) -> Result<(), Errno> {
    let mut payload = status.to_ne_bytes();
    let mut iov = libc::iovec {
        iov_base: payload.as_mut_ptr().cast(),
        iov_len: payload.len(),
    };
    let mut control = Control([0; FD_MESSAGE_SPACE]);
    let mut msg = msghdr_for(&mut iov);
    if let Some(fd) = fd {
        // SAFETY: CMSG_SPACE/CMSG_LEN are arithmetic; `control` is aligned
        // for cmsghdr and larger than CMSG_SPACE(4), so the first header
        // and its 4 data bytes lie inside it.
        unsafe {
            let space = libc::CMSG_SPACE(4) as usize;
            msg.msg_control = control.0.as_mut_ptr().cast();
            msg.msg_controllen = space as _;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(4) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        }
    }
    // SAFETY: `msg` points at `iov`, `payload` and `control`, all alive for
    // the call. Raw: the worker sends this in shared memory.
    let ret = unsafe {
        syscall6(
            libc::SYS_sendmsg,
            [
                sock as usize,
                (&raw const msg) as usize,
                libc::MSG_NOSIGNAL as usize,
                0,
                0,
                0,
            ],
        )
    };
    raw_result(ret).map(drop)
}

/// Receives a [`send_fd`] message: the status and the fd, if one came.
/// `Ok(None)` when the peer has closed without sending.
pub fn recv_fd(sock: BorrowedFd<'_>) -> io::Result<Option<(i32, Option<OwnedFd>)>> {
    let mut payload = [0u8; 4];
    let mut iov = libc::iovec {
        iov_base: payload.as_mut_ptr().cast(),
        iov_len: payload.len(),
    };
    let mut control = Control([0; FD_MESSAGE_SPACE]);
    let mut msg = msghdr_for(&mut iov);
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = FD_MESSAGE_SPACE as _;
    // SAFETY: `msg` points at buffers alive for the call; CMSG_CLOEXEC
    // makes any received fd close-on-exec.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    let n = check(n as libc::c_long)?;
    let mut fd = None;
    // SAFETY: the kernel filled `control` up to msg_controllen; the CMSG
    // macros walk it within that length. Each SCM_RIGHTS fd is new and
    // owned here only.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let raw = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
                fd = Some(OwnedFd::from_raw_fd(raw));
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    if n == 0 {
        return Ok(None);
    }
    Ok(Some((i32::from_ne_bytes(payload), fd)))
}

/// `SECCOMP_IOCTL_NOTIF_RECV`: the next notification on a listener.
pub fn notif_recv(listener: BorrowedFd<'_>) -> io::Result<libc::seccomp_notif> {
    // SAFETY: the kernel requires a zeroed seccomp_notif and fills it.
    let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: the ioctl writes one seccomp_notif to the pointer.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV as _,
            &mut notif as *mut libc::seccomp_notif,
        )
    };
    check(ret.into()).map(|_| notif)
}

/// `SECCOMP_IOCTL_NOTIF_SEND` with SECCOMP_USER_NOTIF_FLAG_CONTINUE: the
/// call goes on as if no filter had stopped it.
pub fn notif_continue(listener: BorrowedFd<'_>, id: u64) -> io::Result<()> {
    let mut resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: 0,
        flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
    };
    // SAFETY: the ioctl reads one seccomp_notif_resp from the pointer.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND as _,
            &mut resp as *mut libc::seccomp_notif_resp,
        )
    };
    check(ret.into()).map(drop)
}

/// `SECCOMP_IOCTL_NOTIF_ID_VALID`: the notifying thread still waits, so
/// the pid it gave was not reused.
pub fn notif_id_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    let mut id = id;
    // SAFETY: the ioctl reads one u64 from the pointer.
    let ret = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _,
            &mut id as *mut u64,
        )
    };
    ret == 0
}

/// Reads a NUL-terminated string of at most `buf.len() - 1` bytes from
/// another process's memory at `addr` (`process_vm_readv`, a page at a
/// time so an unmapped page after the string does not fail the read).
/// Returns the bytes before the NUL, or `None` if none could be read.
pub fn read_remote_string(pid: libc::pid_t, addr: u64, buf: &mut [u8]) -> Option<usize> {
    const PAGE: u64 = 4096;
    let mut len = 0;
    while len < buf.len() {
        let at = addr.checked_add(len as u64)?;
        let chunk = ((PAGE - at % PAGE) as usize).min(buf.len() - len);
        let local = libc::iovec {
            iov_base: buf[len..].as_mut_ptr().cast(),
            iov_len: chunk,
        };
        let remote = libc::iovec {
            iov_base: at as usize as *mut libc::c_void,
            iov_len: chunk,
        };
        // SAFETY: `local` describes `chunk` writable bytes inside `buf`; the
        // remote address is only read by the kernel, in the other process.
        let n = unsafe {
            libc::syscall(
                libc::SYS_process_vm_readv,
                pid,
                &local as *const libc::iovec,
                1 as libc::c_ulong,
                &remote as *const libc::iovec,
                1 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if n <= 0 {
            break;
        }
        let n = n as usize;
        if let Some(end) = buf[len..len + n].iter().position(|&b| b == 0) {
            return Some(len + end);
        }
        len += n;
    }
    None
}

/// Whether `path` (followed through symbolic links, no automount) is the
/// root of a mount: `statx` with `STATX_ATTR_MOUNT_ROOT`. `Ok(None)` when
/// the kernel does not say (before Linux 5.8, or musl's emulation without
/// statx).
pub fn is_mount_root(path: &CStr) -> Result<Option<bool>, Errno> {
    // SAFETY: a zeroed statx is a valid buffer for the kernel to fill.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated; `st` is a writable statx, alive for
    // the call.
    let ret = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_NO_AUTOMOUNT,
            libc::STATX_BASIC_STATS,
            &mut st,
        )
    };
    if ret != 0 {
        return Err(Errno::last());
    }
    let bit = libc::STATX_ATTR_MOUNT_ROOT as u64;
    Ok((st.stx_attributes_mask & bit != 0).then_some(st.stx_attributes & bit != 0))
}

/// The rest of the regular file open on `fd` (a number named by the
/// caller, not owned here), from its current offset to its end, read with
/// `pread` so the offset does not move: what whoever reads it next (here,
/// bubblewrap's `--args FD`) will read. A pipe, socket or anything else
/// but a regular file (memfd and O_TMPFILE files are regular) is refused
/// with what it is: reading it would take its content from its reader.
pub fn read_rest_of_file(fd: RawFd) -> Result<Vec<u8>, String> {
    // SAFETY: a zeroed stat is a valid buffer for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat reads no memory of ours and writes one stat; a bad fd
    // is EBADF.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(format!("fd {fd}: {}", Errno::last().desc()));
    }
    let kind = st.st_mode & libc::S_IFMT;
    if kind != libc::S_IFREG {
        let what = match kind {
            libc::S_IFIFO => "a pipe",
            libc::S_IFSOCK => "a socket",
            libc::S_IFCHR => "a character device",
            libc::S_IFDIR => "a folder",
            _ => "not a regular file",
        };
        return Err(format!(
            "fd {fd} is {what}: reading it would take its content from bubblewrap"
        ));
    }
    // SAFETY: lseek with SEEK_CUR and offset 0 only reports the offset.
    let start = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
    if start < 0 {
        return Err(format!("fd {fd}: {}", Errno::last().desc()));
    }
    let mut out = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        let at = start + out.len() as libc::off_t;
        // SAFETY: pread writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), at) };
        match n {
            0 => return Ok(out),
            n if n > 0 => out.extend_from_slice(&buf[..n as usize]),
            _ if Errno::last() == Errno::EINTR => {}
            _ => return Err(format!("fd {fd}: {}", Errno::last().desc())),
        }
    }
}

/// Sets or clears `FD_CLOEXEC` on `fd` (one the caller does not own: the
/// shim's `--args` fds, inherited from the client).
pub fn set_cloexec(fd: RawFd, on: bool) -> io::Result<()> {
    // SAFETY: F_GETFD takes no argument and touches no memory of ours.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFD) }.into())? as libc::c_int;
    let flags = if on {
        flags | libc::FD_CLOEXEC
    } else {
        flags & !libc::FD_CLOEXEC
    };
    // SAFETY: F_SETFD takes an int by value and touches no memory of ours.
    check(unsafe { libc::fcntl(fd, libc::F_SETFD, flags) }.into()).map(|_| ())
}

/// Sets a variable in the environment.
pub fn set_env(name: &str, value: &OsStr) {
    // SAFETY: the process is single-threaded (see `fork`), so nothing reads
    // the environment concurrently; the shim sets it just before its exec.
    unsafe { std::env::set_var(name, value) };
}

/// `PR_GET_DUMPABLE`: 0, 1 or 2 (`suid_dumpable`). nix reads it as a bool,
/// which loses the difference between 1 and 2.
pub fn get_dumpable() -> io::Result<i32> {
    // SAFETY: PR_GET_DUMPABLE takes no pointer arguments.
    let ret = unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) };
    check(ret.into()).map(|v| v as i32)
}

/// Removes a variable from the environment.
pub fn remove_env(name: &str) {
    // SAFETY: the process is single-threaded (see `fork`), so nothing reads
    // the environment concurrently; called before the first fork only.
    unsafe { std::env::remove_var(name) };
}

/// Resets `signal`'s disposition to the default (so that, for SIGCHLD, an
/// inherited SIG_IGN cannot make the kernel reap our children for us).
pub fn set_default_disposition(signal: libc::c_int) -> io::Result<()> {
    // SAFETY: SIG_DFL is not a handler function, so no Rust code can run
    // in signal context as a result.
    let prev = unsafe { libc::signal(signal, libc::SIG_DFL) };
    if prev == libc::SIG_ERR {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A thread that exits at once, started with a raw `clone` the way a
/// runtime starts one (`CLONE_CHILD_CLEARTID`: the kernel zeroes `tid` and
/// wakes its futex when the thread exits). Only the race tester uses it,
/// in a forked child; the helper itself never starts a thread.
///
/// The stack and the tid word stay borrowed until the thread is joined;
/// dropping an unjoined handle joins it.
pub struct ExitingThread<'a> {
    tid: &'a AtomicI32,
    _stack: &'a mut [u8],
    joined: bool,
}

impl<'a> ExitingThread<'a> {
    pub fn start(stack: &'a mut [u8], tid: &'a AtomicI32) -> Result<ExitingThread<'a>, Errno> {
        const FLAGS: libc::c_int = libc::CLONE_VM
            | libc::CLONE_FS
            | libc::CLONE_FILES
            | libc::CLONE_SIGHAND
            | libc::CLONE_THREAD
            | libc::CLONE_SYSVSEM
            | libc::CLONE_PARENT_SETTID
            | libc::CLONE_CHILD_CLEARTID;
        if stack.len() < 16 * 1024 {
            return Err(Errno::EINVAL);
        }
        tid.store(-1, Ordering::SeqCst);
        // Stacks grow down on x86_64 and aarch64: pass the 16-byte aligned top.
        let top = (stack.as_mut_ptr() as usize + stack.len()) & !15;
        /// The whole life of the thread: return at once, then `exit(0)`.
        extern "C" fn nothing(_: *mut libc::c_void) -> libc::c_int {
            0
        }
        // SAFETY: the new thread calls `nothing` on `stack` (it touches
        // only its own frame there) and exits; `stack` and `tid` are
        // borrowed by the returned handle, which is joined (explicitly or
        // on drop) before the borrows end, so both outlive the thread. The
        // kernel writes the tid to `tid` (PARENT_SETTID) and zeroes it at
        // exit (CHILD_CLEARTID); `tid` is an AtomicI32, valid for both.
        let ret = unsafe {
            clone_call(
                FLAGS as usize,
                top,
                (tid.as_ptr(), tid.as_ptr()),
                nothing,
                std::ptr::null_mut(),
            )
        };
        raw_result(ret)?;
        Ok(ExitingThread {
            tid,
            _stack: stack,
            joined: false,
        })
    }

    /// Joins as a runtime does: sleep on the clear-tid futex until the
    /// kernel zeroes the word.
    pub fn join_futex(mut self) {
        loop {
            let v = self.tid.load(Ordering::SeqCst);
            if v == 0 {
                break;
            }
            // SAFETY: FUTEX_WAIT reads the aligned i32 behind `tid`, which is
            // valid for the call; the timeout pointer is null (no timeout).
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.tid.as_ptr(),
                    libc::FUTEX_WAIT,
                    v,
                    std::ptr::null::<libc::timespec>(),
                )
            };
        }
        self.joined = true;
    }

    /// Joins by polling the tid word, which returns sooner after the
    /// kernel clears it and so widens the race window.
    pub fn join_spin(mut self) {
        self.spin();
        self.joined = true;
    }

    fn spin(&self) {
        while self.tid.load(Ordering::SeqCst) != 0 {
            std::hint::spin_loop();
        }
    }
}

impl Drop for ExitingThread<'_> {
    fn drop(&mut self) {
        if !self.joined {
            self.spin();
        }
    }
}

/// The C entry point (see main.rs: no Rust runtime start-up).
#[cfg(not(test))]
#[unsafe(no_mangle)]
pub extern "C" fn main(argc: libc::c_int, argv: *const *const libc::c_char) -> libc::c_int {
    use std::os::unix::ffi::OsStrExt;
    let count = usize::try_from(argc).unwrap_or(0);
    let mut args = Vec::with_capacity(count);
    for i in 0..count {
        // SAFETY: the C runtime passes `argc` valid pointers in `argv`, each
        // to a NUL-terminated string that lives, unchanged by us, until exit.
        let arg = unsafe { std::ffi::CStr::from_ptr(*argv.add(i)) };
        args.push(std::ffi::OsStr::from_bytes(arg.to_bytes()).to_os_string());
    }
    crate::entry(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binaries_are_told_from_scripts_as_a_shell_does() {
        assert!(looks_binary(b"\x7fELF\x02\x01"));
        assert!(looks_binary(b"MZ\x90\0\x03"));
        assert!(!looks_binary(b"echo hi\n\0after the first line"));
        assert!(!looks_binary(b"#!/bin/sh\nexit 3\n"));
        assert!(!looks_binary(b""));
    }

    /// Runs the search with a fake exec answering from `answers` in turn;
    /// returns the candidates tried and the error reported.
    fn run(path: &str, file: &CStr, answers: &[Errno]) -> (Vec<String>, Errno) {
        let mut tried = Vec::new();
        let mut next = answers.iter();
        let err = search(path.as_bytes(), file, |c| {
            tried.push(c.to_string_lossy().into_owned());
            *next.next().unwrap_or(&Errno::ENOENT)
        });
        (tried, err)
    }

    #[test]
    fn a_name_with_a_slash_is_run_as_is() {
        assert_eq!(
            run("/bin", c"./x", &[Errno::EACCES]),
            (vec!["./x".to_string()], Errno::EACCES)
        );
    }

    #[test]
    fn every_entry_is_tried_and_an_empty_one_is_the_working_directory() {
        let (tried, err) = run("/a::/b", c"x", &[]);
        assert_eq!(tried, ["/a/x", "x", "/b/x"]);
        assert_eq!(err, Errno::ENOENT);
    }

    #[test]
    fn eacces_is_remembered_and_other_errors_stop_the_search() {
        let (tried, err) = run("/a:/b:/c", c"x", &[Errno::EACCES, Errno::ENOTDIR]);
        assert_eq!((tried.len(), err), (3, Errno::EACCES));
        let (tried, err) = run("/a:/b:/c", c"x", &[Errno::ENOENT, Errno::E2BIG]);
        assert_eq!(tried, ["/a/x", "/b/x"]);
        assert_eq!(err, Errno::E2BIG);
    }

    #[test]
    fn names_and_entries_too_long_are_refused_or_skipped() {
        assert_eq!(run("/a", c"", &[]), (vec![], Errno::ENOENT));
        let long = CString::new("n".repeat(NAME_MAX + 1)).unwrap();
        assert_eq!(run("/a", &long, &[]), (vec![], Errno::ENAMETOOLONG));
        let dir = format!("/{}", "d".repeat(PATH_MAX));
        let (tried, _) = run(&format!("{dir}:/b"), c"x", &[]);
        assert_eq!(tried, ["/b/x"]);
    }
}
