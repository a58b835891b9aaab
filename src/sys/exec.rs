//! exec and the PATH search, with glibc's rules (a file without `#!` runs
//! with `/bin/sh`; an unset PATH means `/bin:/usr/bin`). Called by the
//! worker, between its filters and the command (no allocation: the
//! arguments are prepared by the stub in `ExecArgs`), and by the shim.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::unix::ffi::OsStrExt;

use nix::errno::Errno;

use super::*;

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
