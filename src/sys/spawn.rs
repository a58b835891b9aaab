//! Process creation: `clone` with a call on a borrowed, guarded stack
//! (`spawn_sharing_files` makes init in the stub's memory and file table,
//! init's worker and the capability-free way's worker; `spawn_shared`,
//! with a table of its own, the shim's holder; `spawn_sibling` the
//! capability-free way's holder; `spawn_vfork` the namespace probe), `_exit`, `fork` (the
//! race tester), and the race tester's exiting thread. Called by the stub
//! (init, the capability-free worker, the holder, the probe), by init
//! (the worker), by the shim (its holder) and by the race tester; and
//! the word the kernel clears when the stub exits (`clear_on_exit`).

use std::io;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use nix::errno::Errno;

use super::*;

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
/// namespaces, while this process goes on (the shim's holder): made this
/// way, it needs no copy of this process's page tables and leaves none to
/// tear down, and this process takes no copy-on-write faults after it.
///
/// The two then run at once on one memory, so `child` (and everything it
/// runs) must: touch no memory this process writes after the call (it
/// takes `'static` data: leaked or static, never freed); allocate or free
/// nothing; and make system calls only through this module's raw
/// wrappers, which leave errno and all other libc state alone. The stack
/// is the child's for the rest of this process's life: never unmapped.
pub fn spawn_shared<F: FnOnce() + 'static>(stack: Stack, child: F) -> Result<libc::pid_t, Errno> {
    spawn_keeping_stack(stack, libc::SIGCHLD, child)
}

/// Starts a child that runs on in this process's memory (`CLONE_VM`) and
/// file table (`CLONE_FILES`), with its own signal handlers and mask,
/// credentials and namespaces, while this process goes on (init, and
/// init's worker, which then waits at a [`Gate`] for init's mounts):
/// init, made this way, needs no copy of the stub's page tables or file
/// table and leaves none to tear down, the stub takes no copy-on-write
/// faults after it, and a descriptor the worker makes (the seccomp
/// listener) is the stub's at once, with no message to pass it. The
/// worker's exec gives the command a copy of the table without the
/// close-on-exec descriptors: every descriptor the stub, init and the
/// worker make is close-on-exec.
///
/// The duties of [`spawn_shared`] hold for `child` (init and the worker
/// keep to them: supervise/, worker.rs); besides, it closes nothing it
/// did not open, since the table is this process's too.
pub fn spawn_sharing_files<F: FnOnce() + 'static>(
    stack: Stack,
    child: F,
) -> Result<libc::pid_t, Errno> {
    spawn_keeping_stack(stack, libc::SIGCHLD | libc::CLONE_FILES, child)
}

/// As [`spawn_shared`], with the child made this process's sibling
/// (`CLONE_PARENT`): its parent is this process's parent, which reaps it,
/// so this process has no child to wait for and may exit first. Under the
/// same rules for `child` (raw calls only, no allocation, `'static`
/// data); the stack stays mapped. Refused (EINVAL) to the init of a PID
/// namespace.
pub fn spawn_sibling<F: FnOnce() + 'static>(stack: Stack, child: F) -> Result<libc::pid_t, Errno> {
    // The kernel gives a CLONE_PARENT child this process's exit signal.
    spawn_keeping_stack(stack, libc::CLONE_PARENT, child)
}

/// [`spawn_on`] with the stack left mapped for the rest of this process's
/// life: the child may run on it after this process has gone on.
fn spawn_keeping_stack<F: FnOnce() + 'static>(
    mut stack: Stack,
    flags: libc::c_int,
    child: F,
) -> Result<libc::pid_t, Errno> {
    let pid = spawn_on(&mut stack, flags, child)?;
    std::mem::forget(stack);
    Ok(pid)
}

/// `_exit(2)`: leave without running destructors or flushing stdio, as a
/// forked child must.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` takes no pointers and never returns.
    unsafe { libc::_exit(code) }
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

/// Sets `word` to 1 and has the kernel set it to 0 (and wake a futex
/// waiter on it) when this process exits while another process shares its
/// memory (`set_tid_address`: the task's `clear_child_tid`, written in the
/// exit's release of the memory, before its children are told with their
/// PDEATHSIG): how init, which runs in the stub's memory, sees that the
/// stub died before init's PDEATHSIG took, with no descriptor nor call.
/// It takes the place of musl's own registration (its thread-list lock,
/// which only a thread waiting for another thread's end reads: this
/// process never starts a thread).
pub fn clear_on_exit(word: &'static AtomicU32) {
    word.store(1, Ordering::Release);
    // SAFETY: the kernel keeps the address and writes 4 bytes there at
    // this process's exit; `word` is `'static` (never freed while the
    // process lives), an aligned u32, and written by nothing else.
    unsafe {
        syscall6(
            libc::SYS_set_tid_address,
            [word.as_ptr() as usize, 0, 0, 0, 0, 0],
        );
    }
}
