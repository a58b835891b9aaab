//! The shim's entry, run as `bwrap` (or `apply-seccomp --bwrap-shim`):
//! never loop, find the real bubblewrap (find.rs), rewrite the line
//! (mod.rs), log it (log.rs), then exec bubblewrap: the `--args` words
//! inlined when they fit, else the line as rewritten. It prints its own
//! messages (its process becomes bubblewrap, or ends with 125/126/127).

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;

use crate::error::{self, Error};
use crate::{debug, shim, sys};

/// The `bwrap` shim: rewrite, then exec the real bubblewrap; `debug_on`:
/// `SRT_DEBUG` asks for its lines.
pub fn run(args: &[OsString], debug_on: bool) -> i32 {
    let fail = |what: String| {
        eprintln!("apply-seccomp: bwrap shim: {what}");
        error::EXIT_SETUP
    };
    // The kernel's link names the file itself, every link on the way
    // resolved.
    let ours = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => return fail(format!("cannot find this binary: {}", error::strerror(&e))),
    };
    // Never loop: the passes so far (counted in the arguments) and the
    // bubblewraps already run (listed in the environment).
    let hops = shim::hops(args);
    if hops >= shim::MAX_HOPS {
        return fail(format!(
            "a loop: this shim has run {hops} times in one chain of execs (a wrapper on PATH \
             runs the first bwrap it finds, and clears the environment?); stopped. Set \
             APPLY_SECCOMP_BWRAP to the real bubblewrap"
        ));
    }
    let visited: Vec<String> = std::env::var(shim::VISITED)
        .unwrap_or_default()
        .split(',')
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect();
    let real = match shim::find_real_bwrap(
        &ours,
        std::env::var_os("APPLY_SECCOMP_BWRAP").as_deref(),
        std::env::var_os("PATH").as_deref(),
        &visited,
    ) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let rewrite = shim::rewrite(args, &ours, &mut shim::read_args_fd);
    let mut now_visited = visited;
    now_visited.extend(shim::identity(&real));
    sys::set_env(shim::VISITED, now_visited.join(",").as_ref());
    if let Some(log) = std::env::var_os(shim::LOG).filter(|l| !l.is_empty()) {
        let record = shim::log_record(
            std::time::SystemTime::now(),
            std::process::id(),
            args,
            &rewrite.args_files,
            &rewrite.note,
            &real,
        );
        if let Err(e) = shim::append(&log, &record, rewrite.writable.as_deref()) {
            debug(debug_on, || {
                format!(
                    "bwrap shim: APPLY_SECCOMP_LOG={}: {}; not logged",
                    log.to_string_lossy(),
                    error::strerror(&e)
                )
            });
        }
    }
    debug(debug_on, || {
        format!(
            "bwrap shim: real bubblewrap {}; {}{}",
            real.display(),
            rewrite.note,
            if hops > 0 {
                format!(" (pass {} through the shim in this chain)", hops + 1)
            } else {
                String::new()
            }
        )
    });
    // First, one more `--unsetenv`: the sandbox never sees the list, and
    // the next pass counts this one. Nor does it see the log's name, which
    // would tell a sandboxed command where the next record goes.
    let mut head: Vec<OsString> = vec![
        real.clone().into_os_string(),
        "--unsetenv".into(),
        shim::VISITED.into(),
    ];
    if !shim::unsets(args, shim::LOG) {
        head.extend(["--unsetenv".into(), shim::LOG.into()]);
    }
    let line = |args: &[OsString]| -> Vec<OsString> {
        head.iter().cloned().chain(args.iter().cloned()).collect()
    };
    let fds: Vec<i32> = rewrite
        .args_files
        .iter()
        .filter_map(|f| f.fd.to_str()?.parse().ok())
        .collect();
    // The `--args` words go on bubblewrap's line, where the mount guard
    // reads what protects the sandbox; the fds, which bubblewrap would have
    // read and closed, close on exec. Too long for exec: as given.
    let mut inlined = (!fds.is_empty() && fds.iter().all(|&fd| sys::set_cloexec(fd, true).is_ok()))
        .then(|| line(&shim::inline_args(&rewrite.args, &rewrite.args_files)));
    let mut plain = line(&rewrite.args);
    let reopen = || {
        debug(debug_on, || {
            "bwrap shim: the --args words do not fit on bubblewrap's line (E2BIG): --args \
             kept, and the mount guard will be off"
                .into()
        });
        for &fd in &fds {
            let _ = sys::set_cloexec(fd, false);
        }
    };
    // The placeholders the line asks for, made and held for the run by a
    // process of their own (keep/). Read from the line that runs: the
    // inlined one, or the plain one when there are no `--args` (a line
    // too long for exec, its mounts in an `--args` file, still has them
    // made and held, though not its self-binds turned to the empty form).
    // Writable folders as the line names them: the clients name real paths.
    let writable: Vec<std::path::PathBuf> = rewrite
        .writable
        .iter()
        .flatten()
        .map(|s| std::path::PathBuf::from(std::ffi::OsStr::from_bytes(s)))
        .collect();
    let first = inlined.as_mut().unwrap_or(&mut plain);
    match shim::keep::Keeper::keep(&mut first[1..], &writable) {
        Ok(keeper) => {
            debug(debug_on, || format!("bwrap shim: {}", keeper.note));
            if let Err(why) = keeper.detach() {
                debug(debug_on, || {
                    format!("bwrap shim: placeholders not released after the run: {why}")
                });
            }
        }
        Err(why) => debug(debug_on, || format!("bwrap shim: {why}")),
    }
    if let Some(inlined) = &inlined {
        let err = exec_bwrap(inlined);
        if err.raw_os_error() != Some(libc::E2BIG) {
            return exec_failed(&real, err);
        }
        reopen();
    }
    let err = exec_bwrap(&plain);
    exec_failed(&real, err)
}

/// Execs bubblewrap with `argv`; returns only on failure.
fn exec_bwrap(argv: &[OsString]) -> io::Error {
    match sys::ExecArgs::new(argv) {
        Some(exec) => sys::execvp(&exec),
        None => io::Error::new(
            io::ErrorKind::InvalidInput,
            "an argument contains a NUL byte",
        ),
    }
}

fn exec_failed(real: &std::path::Path, source: io::Error) -> i32 {
    let e = Error::Exec {
        program: real.display().to_string(),
        source,
    };
    eprintln!("{e}");
    e.exit_code()
}
