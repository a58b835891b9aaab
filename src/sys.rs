//! The only module with `unsafe`: thin wrappers over the syscalls that `nix`
//! does not offer as safe functions, each returning `io::Result`.
//!
//! Everything here is safe to call after `fork` in this process: no wrapper
//! allocates, formats or panics (the exceptions, used only before the first
//! fork, say so).
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

/// A stack for [`spawn_vfork`]: anonymous memory with an inaccessible
/// guard page below it, so an overflow faults instead of writing into the
/// memory the child shares with its parent.
pub struct Stack {
    base: *mut libc::c_void,
    len: usize,
}

impl Stack {
    const GUARD: usize = 4096;

    /// `usable` bytes of stack (rounded up to pages) plus the guard page.
    pub fn new(usable: usize) -> io::Result<Stack> {
        let len = usable.div_ceil(Self::GUARD) * Self::GUARD + Self::GUARD;
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // affected. The result is checked before use.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack { base, len };
        // SAFETY: the first page of the mapping made above, owned by `stack`.
        if unsafe { libc::mprotect(base, Self::GUARD, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The 16-byte aligned top (stacks grow down on x86_64 and aarch64).
    fn top(&mut self) -> *mut libc::c_void {
        ((self.base as usize + self.len) & !15) as *mut libc::c_void
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; no child runs
        // on it any more (`spawn_vfork` returns only after the child has
        // exec'd or exited).
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// posix_spawn's way of starting a child: `clone(CLONE_VM|CLONE_VFORK)`.
/// The child runs `child` on `stack` in this process's memory, and this
/// process sleeps until the child execs or exits; no page tables are
/// copied and no page is copied on write afterwards. `child` must not
/// allocate, free or write anything this process reads after it resumes
/// (beyond errno), and should exec or `_exit`; if it returns, the child
/// exits with the set-up failure status.
pub fn spawn_vfork<F: FnOnce()>(stack: &mut Stack, child: F) -> io::Result<libc::pid_t> {
    extern "C" fn trampoline<F: FnOnce()>(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `Option<F>` below, alive in the suspended
        // parent's frame for the whole life of this child, and taken once.
        let child = unsafe { &mut *arg.cast::<Option<F>>() };
        if let Some(f) = child.take() {
            f();
        }
        // `child` was to exec or `_exit`: it must not return into the
        // parent's frames, so a return ends the child here.
        exit_now(crate::error::EXIT_SETUP)
    }
    let mut slot = Some(child);
    let top = stack.top();
    // SAFETY: CLONE_VFORK suspends this process until the child execs or
    // exits, so the two never run at once on the shared memory; the child
    // runs on `stack`, which outlives the call, and never returns into this
    // frame (the trampoline ends in `_exit`).
    // Signal handlers, which could run in the child on shared memory: the
    // helper installs none. musl's `clone` with CLONE_VM calls the raw
    // clone without touching its own state.
    let pid = unsafe {
        libc::clone(
            trampoline::<F>,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw mut slot).cast::<libc::c_void>(),
        )
    };
    if pid == -1 {
        return Err(io::Error::last_os_error());
    }
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
/// failure).
fn execve(path: &CStr, argv: *const *const libc::c_char) -> Errno {
    unsafe extern "C" {
        static environ: *const *const libc::c_char;
    }
    // SAFETY: `path` is NUL-terminated; `argv` is one of an `ExecArgs`'
    // null-terminated vectors, whose strings it owns and outlives this call;
    // `environ` is the C library's null-terminated environment, which this
    // single-threaded process only changes before its first fork.
    unsafe { libc::execve(path.as_ptr(), argv, environ) };
    Errno::last()
}

/// `execve` with glibc's fallback: a file refused with ENOEXEC runs as
/// `/bin/sh FILE ARGS...`.
fn execve_or_sh(args: &ExecArgs, path: &CStr) -> Errno {
    let err = execve(path, args.ptrs.as_ptr());
    if err != Errno::ENOEXEC {
        return err;
    }
    args.sh_ptrs[1].set(path.as_ptr());
    execve(BSHELL, args.sh_ptrs.as_ptr().cast())
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

/// `seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
/// prog)`: installs `prog` and returns its notification listener.
pub fn install_filter_listener(prog: &'static [u8]) -> io::Result<OwnedFd> {
    let fprog = libc::sock_fprog {
        len: (prog.len() / 8) as libc::c_ushort,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: as in `install_filter`; on success the kernel returns a new
    // file descriptor that nothing else owns.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &fprog as *const libc::sock_fprog,
        )
    };
    let fd = check(ret)? as RawFd;
    // SAFETY: `fd` was just returned by the kernel and is owned here only.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
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
pub fn send_fd(sock: BorrowedFd<'_>, status: i32, fd: Option<BorrowedFd<'_>>) -> io::Result<()> {
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
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd.as_raw_fd());
        }
    }
    // SAFETY: `msg` points at `iov`, `payload` and `control`, all alive for
    // the call.
    let ret = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    check(ret as libc::c_long).map(drop)
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

/// The `clone` syscall for a thread that calls `exit(0)` at once, in the
/// same instructions, touching no memory. (musl's `clone()` refuses
/// CLONE_THREAD, and a thread made by a raw syscall from Rust would return
/// into a Rust frame on a stack it does not own.) Returns what the parent
/// gets: the new tid or `-errno`.
///
/// # Safety
/// `ptid` and `ctid` must be valid for the kernel to write an i32 until the
/// thread has exited; `stack` must be the top of memory that stays valid as
/// long (the kernel switches to it; nothing is pushed on it).
#[cfg(target_arch = "x86_64")]
unsafe fn clone_exiting(
    flags: libc::c_ulong,
    stack: *mut libc::c_void,
    ptid: *mut i32,
    ctid: *mut i32,
) -> libc::c_long {
    let ret: libc::c_long;
    // SAFETY: as the caller guarantees; x86_64 clone takes (flags, stack,
    // parent_tid, child_tid, tls). The child branch exits before it reads
    // or writes any register or memory the compiler knows of.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov eax, {exit}",
            "xor edi, edi",
            "syscall",
            "ud2",
            "2:",
            exit = const libc::SYS_exit,
            inlateout("rax") libc::SYS_clone => ret,
            in("rdi") flags,
            in("rsi") stack,
            in("rdx") ptid,
            in("r10") ctid,
            in("r8") 0usize,
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
unsafe fn clone_exiting(
    flags: libc::c_ulong,
    stack: *mut libc::c_void,
    ptid: *mut i32,
    ctid: *mut i32,
) -> libc::c_long {
    let ret: libc::c_long;
    // SAFETY: as the caller guarantees; the child branch exits before it
    // reads or writes any register or memory the compiler knows of.
    unsafe {
        std::arch::asm!(
            "svc 0",
            "cbnz x0, 2f",
            "mov x8, {exit}",
            "mov x0, xzr",
            "svc 0",
            "brk 0",
            "2:",
            exit = const libc::SYS_exit,
            in("x8") libc::SYS_clone,
            inlateout("x0") flags as libc::c_long => ret,
            in("x1") stack,
            in("x2") ptid,
            in("x3") 0usize,
            in("x4") ctid,
            options(nostack),
        );
    }
    ret
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
        // SAFETY: the new thread exits at once (`clone_exiting`) without
        // touching memory; `stack` and `tid` are borrowed by the returned
        // handle, which is joined (explicitly or on drop) before the borrows
        // end, so both outlive the thread. The kernel writes the tid to
        // `tid` (PARENT_SETTID) and zeroes it at exit (CHILD_CLEARTID);
        // `tid` is an AtomicI32, valid for both.
        let ret = unsafe {
            clone_exiting(
                FLAGS as libc::c_ulong,
                top as *mut libc::c_void,
                tid.as_ptr(),
                tid.as_ptr(),
            )
        };
        if ret < 0 {
            return Err(io::Error::from_raw_os_error(-ret as i32));
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
