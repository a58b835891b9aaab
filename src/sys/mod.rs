//! The only module with `unsafe`: thin wrappers over the syscalls that `nix`
//! does not offer as safe functions, and the raw system calls of the
//! processes that run in the outer stub's memory (init and the worker:
//! see raw.rs and [`spawn_shared`]).
//!
//! No wrapper allocates, formats or panics (the exceptions, used only
//! before the first child, say so).
//!
//! One file per concern, each saying what it is for and which processes
//! call it: `raw` (the system call instruction of each architecture and
//! the plain calls), `spawn` (clone on a borrowed stack, fork, `_exit`),
//! `exec` (exec and the PATH search), `seccomp` (filters, listener,
//! notifications, fd passing, another process's memory), `signals`
//! (masks, waiting, reaping, process groups and the terminal), `sockets`
//! (the own-sockets policy's calls in the stub), `files`
//! (the shim's locks, renames and closing), `inodes` (a socket file's
//! whole identity and birth, XFS's geometry), `limits` (the task cap's
//! process limit, CPUs and kernel release; the stub's descriptor limit). This file:
//! the C `main`, the environment, and small fd helpers.
#![allow(unsafe_code)]

use std::ffi::OsStr;
use std::ffi::OsString;
use std::io;
use std::os::fd::RawFd;

use nix::errno::Errno;

mod arena;
mod exec;
mod files;
mod gate;
mod inodes;
mod limits;
mod locks;
mod raw;
mod seccomp;
mod signals;
mod sockets;
mod spawn;

pub use exec::*;

/// Every allocation of every mode (arena.rs says why).
#[global_allocator]
static ALLOCATOR: arena::Arena<{ arena::SIZE }> = arena::Arena::new();

pub use files::*;
pub use gate::*;
pub use inodes::*;
pub use limits::*;
pub use locks::*;
pub use raw::*;
pub use seccomp::*;
pub use signals::*;
pub use sockets::*;
pub use spawn::*;

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// The environment array the process started with (C `main`'s third
/// argument): its strings lie where the kernel shows them as
/// `/proc/PID/environ`, whatever `environ` points to later.
static START_ENV: std::sync::atomic::AtomicPtr<*mut libc::c_char> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// The C entry point (see main.rs: no Rust runtime start-up).
#[cfg(not(test))]
#[unsafe(no_mangle)]
pub extern "C" fn main(
    argc: libc::c_int,
    argv: *const *const libc::c_char,
    envp: *mut *mut libc::c_char,
) -> libc::c_int {
    use std::os::unix::ffi::OsStrExt;
    START_ENV.store(envp, std::sync::atomic::Ordering::Relaxed);
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

/// Where the caller closed stderr (fd 2), `/dev/null` takes it (and any
/// lower number also closed), close-on-exec: the command still finds it
/// closed, and no descriptor the helper makes later gets number 2, into
/// which its lines would go. One `fcntl` where it is open.
pub fn hold_stderr() {
    // SAFETY: F_GETFD takes no argument and touches no memory of ours.
    while unsafe { libc::fcntl(2, libc::F_GETFD) } < 0 {
        match raw_open(c"/dev/null", libc::O_RDWR) {
            Ok(fd) if fd < 2 => {}
            Ok(fd) => {
                if fd > 2 {
                    raw_close(fd);
                }
                return;
            }
            Err(_) => return,
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

unsafe extern "C" {
    /// The C library's environment: a NULL-terminated array of
    /// `NAME=value` strings (the start-up one until something grows it).
    static mut environ: *mut *mut libc::c_char;
}

/// A `NAME=value` string of an environment array: NUL-terminated, and
/// alive until exit (made only from `environ`'s entries or the start-up
/// array's, which no code here frees).
#[derive(Clone, Copy)]
struct Entry(*const libc::c_char);

impl Entry {
    /// The value if this is `name`'s entry, read only as far as the first
    /// byte that differs (an entry's length is never measured unless it
    /// matches, so long values cost nothing).
    fn value(self, name: &str) -> Option<*const libc::c_char> {
        for (i, &b) in name.as_bytes().iter().enumerate() {
            // SAFETY: bytes up to and including the NUL are readable (the
            // type's invariant), and the loop stops at the first
            // difference, which the NUL is (a name holds none).
            if unsafe { *self.0.add(i) } as u8 != b {
                return None;
            }
        }
        // SAFETY: the name's bytes matched, so none was the NUL: the byte
        // after them is still within the string.
        let next = unsafe { *self.0.add(name.len()) };
        // SAFETY: the byte after the '=' is the value or its NUL.
        (next == b'=' as libc::c_char).then(|| unsafe { self.0.add(name.len() + 1) })
    }

    fn is_any_of(self, names: &[&str]) -> bool {
        names.iter().any(|n| self.value(n).is_some())
    }
}

/// Calls `each` with every entry of the environment, in order.
fn each_env_entry(mut each: impl FnMut(Entry)) {
    // SAFETY: `environ` is libc's NULL-terminated array of NUL-terminated
    // strings; this single-threaded process (see `fork`) changes it only
    // through this module and std's set_var, never while this runs.
    unsafe {
        let env = environ;
        let mut i = 0;
        while !env.is_null() && !(*env.add(i)).is_null() {
            each(Entry(*env.add(i)));
            i += 1;
        }
    }
}

/// The values of `names`, in one pass over the environment (the first
/// entry of each name, as `getenv` finds it). `std::env::var_os` would
/// scan it once per name, under a lock, with a copy of the name.
pub fn env_values<const N: usize>(names: [&str; N]) -> [Option<OsString>; N] {
    use std::os::unix::ffi::OsStringExt;
    let mut out: [Option<OsString>; N] = std::array::from_fn(|_| None);
    each_env_entry(|entry| {
        for (name, slot) in names.iter().zip(out.iter_mut()) {
            if slot.is_none()
                && let Some(v) = entry.value(name)
            {
                // SAFETY: `v` points into the entry's string, at or before
                // its NUL.
                let bytes = unsafe { std::ffi::CStr::from_ptr(v) }.to_bytes();
                *slot = Some(OsString::from_vec(bytes.to_vec()));
            }
        }
    });
    out
}

/// Removes the variables `names` from the environment, every entry of
/// each, in one pass over `environ` (libc's unsetenv would scan it once
/// per name), and wipes their strings where the process started with
/// them. Removing a variable only drops its pointer from `environ`: the
/// string stays in the memory the kernel shows as `/proc/PID/environ`,
/// which init shares with the stub (and a root command on the direct path
/// can read). Before the first child only.
pub fn scrub_env(names: &[&str]) {
    let start = START_ENV.load(std::sync::atomic::Ordering::Relaxed);
    let mut wipe: Vec<*mut libc::c_char> = Vec::new();
    let mut i = 0;
    while !start.is_null() {
        // SAFETY: `start` is the NULL-terminated array the C runtime passed
        // to main; nothing has written to it but the compaction below,
        // which moves entries within it and never past its NULL, and this
        // loop stops at the NULL.
        let entry = unsafe { *start.add(i) };
        if entry.is_null() {
            break;
        }
        // Each entry of the start-up array is a NUL-terminated string on
        // the initial stack, alive until exit.
        if Entry(entry).is_any_of(names) {
            wipe.push(entry);
        }
        i += 1;
    }
    // SAFETY: `environ` is libc's NULL-terminated array (see
    // `each_env_entry`), writable (the start-up array on the stack, or
    // libc's own copy); entries move only towards its start and the NULL
    // is written at or before the old one. No string is freed: libc frees
    // only those its setenv made, and none was made before this runs.
    unsafe {
        let env = environ;
        if !env.is_null() {
            let (mut read, mut kept) = (0, 0);
            while !(*env.add(read)).is_null() {
                let entry = *env.add(read);
                if !Entry(entry).is_any_of(names) {
                    *env.add(kept) = entry;
                    kept += 1;
                }
                read += 1;
            }
            *env.add(kept) = std::ptr::null_mut();
        }
    }
    for string in wipe {
        // SAFETY: a NUL-terminated string of the start-up array (above).
        let len = unsafe { libc::strlen(string) };
        for k in 0..len {
            // SAFETY: `string` has `len` bytes before its NUL, on the
            // writable initial stack; no pointer to it is left in
            // `environ` (just compacted out), and libc frees only strings
            // it allocated itself, never these.
            unsafe { std::ptr::write_volatile(string.add(k), 0) };
        }
    }
}

/// 64 bits no one can guess: SipHash of nothing under fresh random keys
/// (std's `RandomState`, seeded from the kernel's `getrandom`). For the
/// names host-side code makes in folders a sandboxed command may write
/// (the keeper's passing names, setup's temporary copies), so that
/// nothing a command put there beforehand can be in the way.
pub fn unguessable() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// `PR_GET_DUMPABLE`: 0, 1 or 2 (`suid_dumpable`). nix reads it as a bool,
/// which loses the difference between 1 and 2.
pub fn get_dumpable() -> io::Result<i32> {
    // SAFETY: PR_GET_DUMPABLE takes no pointer arguments.
    let ret = unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) };
    check(ret.into()).map(|v| v as i32)
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
