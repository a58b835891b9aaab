//! The only module with `unsafe`: thin wrappers over the syscalls that `nix`
//! does not offer as safe functions, each returning `io::Result`.
//!
//! Everything here is safe to call after `fork` in this process: no wrapper
//! allocates, formats or panics (the exceptions, used only before the first
//! fork, say so).
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicI32, Ordering};

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

/// `fork(2)`.
pub fn fork() -> io::Result<Forked> {
    // SAFETY: this process never has more than one thread (no dependency
    // starts one; `threads::wait_single_threaded` checks it before the
    // namespace entry), so the child's copy of every lock and allocator
    // state is consistent. Children only run the allocation-free code paths
    // documented in `supervise.rs` and `worker.rs` before exec or `_exit`.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// `_exit(2)`: leave without running destructors or flushing stdio, as a
/// forked child must.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` takes no pointers and never returns.
    unsafe { libc::_exit(code) }
}

/// A command line prepared before `fork`, so `execvp` needs no allocation.
pub struct ExecArgs {
    /// Owns the strings `ptrs` points into.
    _args: Vec<CString>,
    ptrs: Vec<*const libc::c_char>,
}

impl ExecArgs {
    /// Builds the argument vector (allocates: call before forking).
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
        Some(ExecArgs { _args: args, ptrs })
    }
}

/// `execvp(3)`: searches `PATH` like a shell. Returns only on failure.
pub fn execvp(args: &ExecArgs) -> io::Error {
    // SAFETY: `ptrs` holds pointers into the `CString`s owned by `args`,
    // which outlive this call, and ends with a null pointer, as execvp
    // requires. glibc's execvp builds candidate paths on the stack.
    unsafe { libc::execvp(args.ptrs[0], args.ptrs.as_ptr()) };
    io::Error::last_os_error()
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, 0, prog)`.
///
/// `prog` must be a validated program (see `filter::Program`): a whole
/// number of 8-byte `sock_filter` instructions, 1..=4096 of them.
pub fn install_filter(prog: &'static [u8]) -> io::Result<()> {
    let fprog = libc::sock_fprog {
        len: (prog.len() / 8) as libc::c_ushort,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: the kernel reads `len` instructions of 8 bytes from `filter`
    // (copy_from_user, so alignment does not matter); `filter::Program`
    // guarantees the slice holds exactly that many, and it is `'static`.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0 as libc::c_uint,
            &fprog as *const libc::sock_fprog,
        )
    };
    check(ret).map(drop)
}

/// `PR_GET_DUMPABLE`: 0, 1 or 2 (`suid_dumpable`). nix reads it as a bool,
/// which loses the difference between 1 and 2.
pub fn get_dumpable() -> io::Result<i32> {
    // SAFETY: PR_GET_DUMPABLE takes no pointer arguments.
    let ret = unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) };
    check(ret.into()).map(|v| v as i32)
}

/// Counts the threads of this process: the entries of `/proc/self/task`,
/// read with `getdents64` into a stack buffer. `Ok(None)` when `/proc` is
/// not there to ask.
pub fn count_threads() -> io::Result<Option<usize>> {
    const PATH: &CStr = c"/proc/self/task";
    // SAFETY: PATH is a NUL-terminated literal; the returned fd is owned
    // below and closed on every path.
    let fd = unsafe {
        libc::open(
            PATH.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let err = io::Error::last_os_error();
        return match err.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::EACCES) => Ok(None),
            _ => Err(err),
        };
    }
    // SAFETY: `fd` was just opened by us and is not owned elsewhere.
    let dir = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut buf = [0u64; 256]; // 2 KiB, 8-byte aligned for linux_dirent64
    let mut threads = 0usize;
    loop {
        // SAFETY: the kernel writes at most `size_of_val(&buf)` bytes into
        // `buf`, which is valid and exclusively borrowed for the call.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir.as_raw_fd(),
                buf.as_mut_ptr(),
                std::mem::size_of_val(&buf),
            )
        };
        let n = check(n)? as usize;
        if n == 0 {
            return Ok(Some(threads));
        }
        // SAFETY: the first `n <= size_of_val(&buf)` bytes were written by
        // the kernel; viewing initialised u64 storage as bytes is sound.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n) };
        // struct linux_dirent64 { u64 ino; i64 off; u16 reclen; u8 type; char name[]; }
        let mut off = 0;
        while off + 19 < n {
            let reclen = u16::from_ne_bytes([bytes[off + 16], bytes[off + 17]]) as usize;
            if reclen == 0 {
                break;
            }
            if bytes[off + 19] != b'.' {
                threads += 1;
            }
            off += reclen;
        }
    }
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

extern "C" fn exit_at_once(_: *mut libc::c_void) -> libc::c_int {
    0
}

impl<'a> ExitingThread<'a> {
    pub fn start(stack: &'a mut [u8], tid: &'a AtomicI32) -> io::Result<ExitingThread<'a>> {
        const FLAGS: libc::c_int = libc::CLONE_VM
            | libc::CLONE_FS
            | libc::CLONE_FILES
            | libc::CLONE_SIGHAND
            | libc::CLONE_THREAD
            | libc::CLONE_SYSVSEM
            | libc::CLONE_PARENT_SETTID
            | libc::CLONE_CHILD_CLEARTID;
        if stack.len() < 16 * 1024 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        tid.store(-1, Ordering::SeqCst);
        // Stacks grow down on x86_64 and aarch64: pass the 16-byte aligned top.
        let top = (stack.as_mut_ptr() as usize + stack.len()) & !15;
        // SAFETY: the new thread runs `exit_at_once`, which touches no memory
        // but its own frame on `stack`; `stack` and `tid` are borrowed by the
        // returned handle, which is joined (explicitly or on drop) before
        // the borrows end, so both outlive the thread's use of them. The
        // kernel writes the tid to `tid` (PARENT_SETTID) and zeroes it at
        // exit (CHILD_CLEARTID); `tid` is an AtomicI32, valid for both.
        let ret = unsafe {
            libc::clone(
                exit_at_once,
                top as *mut libc::c_void,
                FLAGS,
                std::ptr::null_mut(),
                tid.as_ptr(),
                std::ptr::null_mut::<libc::c_void>(),
                tid.as_ptr(),
            )
        };
        if ret < 0 {
            return Err(io::Error::last_os_error());
        }
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

/// Waits for one of the signals in `set` (which must be blocked) and
/// returns its number. nix's `SigSet::wait` reads sigwait's positive error
/// return as success and unwraps an uninitialised signal, a panic; this
/// uses sigwaitinfo, which reports errors in errno, and retries EINTR.
pub fn sigwait(set: &libc::sigset_t) -> io::Result<libc::c_int> {
    loop {
        // SAFETY: `set` is a valid, initialised sigset_t for the call; a
        // null siginfo pointer is allowed and means "not wanted".
        let sig = unsafe { libc::sigwaitinfo(set, std::ptr::null_mut()) };
        if sig >= 0 {
            return Ok(sig);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

/// The C entry point (see main.rs: no Rust runtime start-up).
#[cfg(not(test))]
#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    crate::entry()
}
