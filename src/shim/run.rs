//! The shim's entry, run as `bwrap` (or `apply-seccomp --bwrap-shim`):
//! never loop, find the real bubblewrap (find.rs), rewrite the line
//! (mod.rs), log it (log.rs), then exec bubblewrap: the `--args` words
//! inlined when they fit, else the line as rewritten. It prints its own
//! messages (its process becomes bubblewrap, or ends with 125/126/127).

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;

use std::path::{Path, PathBuf};

use crate::error::{self, Error};
use crate::{bwrap_args, debug, shim, sys};

/// The `bwrap` shim: rewrite, then exec the real bubblewrap. `argv0`: the
/// name the client ran it by (the C `main`'s; `std::env::args_os` is
/// empty in this build); `debug_on`: `SRT_DEBUG` asks for its lines.
pub fn run(argv0: &OsStr, args: &[OsString], debug_on: bool) -> i32 {
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
    let (real, visited) = match find_real(&ours, debug_on) {
        Ok(found) => found,
        Err(e) => return fail(e),
    };
    let rewrite = shim::rewrite(args, &ours, &mut shim::read_args_fd);
    let mut now_visited = visited;
    now_visited.extend(shim::identity(&real));
    sys::set_env(shim::VISITED, now_visited.join(",").as_ref());
    log_run(args, &rewrite, &real, debug_on);
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
    let head = head(&real, args);
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
    let mut inlined_args = (!fds.is_empty()
        && fds.iter().all(|&fd| sys::set_cloexec(fd, true).is_ok()))
    .then(|| shim::inline_args(&rewrite.args, &rewrite.args_files));
    let mut plain_args = rewrite.args.clone();
    // The keeper's folder: where it is not this user's own (another user
    // took its name), said whatever SRT_DEBUG says, since no placeholder
    // can then be kept.
    let keeper = shim::keep::folder();
    if let Err(e) = &keeper {
        if e.loud {
            eprintln!("apply-seccomp: bwrap shim: {}", e.why);
        }
    }
    // The GPUs, where the client's environment asks (devices.rs): read
    // here only, never from the line (whose --setenv is the sandbox's).
    let gpus = match shim::devices::asked(std::env::var_os(shim::devices::VARIABLE).as_deref()) {
        Ok(asked) if asked.any() => Some(shim::devices::nodes(Path::new("/dev"), asked)),
        Ok(_) => None,
        Err(e) => {
            eprintln!("apply-seccomp: bwrap shim: {e}");
            None
        }
    };
    let command_at = bwrap_args::walk(&plain_args).map_or(plain_args.len(), |w| w.command_at);
    // A line that runs no command (`--version`) gets no cgroup (below).
    let runs_command = command_at < plain_args.len();
    let route = route(argv0, &ours, &real, &plain_args[command_at..]);
    let hidden = keeper.as_ref().ok().map(PathBuf::as_path);
    for (what, words) in [
        ("", inlined_args.as_mut()),
        (" (line as given)", Some(&mut plain_args)),
    ] {
        if let Some(words) = words {
            protect(words, gpus.as_deref(), (&route, hidden), what, debug_on);
        }
    }
    let mut inlined = inlined_args.map(|a| line(&a));
    let mut plain = line(&plain_args);
    // The placeholders the line asks for, made and held for the run by a
    // process of their own (keep/). Read from the line that runs: the
    // inlined one, or the plain one when there are no `--args` (a line
    // too long for exec, its mounts in an `--args` file, still has them
    // made and held, though not its self-binds turned to the empty form).
    keep_placeholders(inlined.as_mut().unwrap_or(&mut plain), keeper, debug_on);
    if let Err(e) = cgroup(runs_command, debug_on) {
        return fail(e);
    }
    if let Some(inlined) = &inlined {
        let err = exec_bwrap(inlined);
        if err.raw_os_error() != Some(libc::E2BIG) {
            return exec_failed(&real, err);
        }
        debug(debug_on, || {
            "bwrap shim: the --args words do not fit on bubblewrap's line (E2BIG): --args \
             kept, and the mount guard will be off"
                .into()
        });
        for &fd in &fds {
            let _ = sys::set_cloexec(fd, false);
        }
    }
    let err = exec_bwrap(&plain);
    exec_failed(&real, err)
}

/// The real bubblewrap, never this shim nor one already run in this chain
/// (find.rs), and that list; the `PATH` entries left out said.
fn find_real(ours: &Path, debug_on: bool) -> Result<(PathBuf, Vec<String>), String> {
    let visited: Vec<String> = std::env::var(shim::VISITED)
        .unwrap_or_default()
        .split(',')
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect();
    let real = shim::find_real_bwrap(
        ours,
        std::env::var_os("APPLY_SECCOMP_BWRAP").as_deref(),
        std::env::var_os("PATH").as_deref(),
        &visited,
    )?;
    let (_, relative) = shim::search_dirs(std::env::var_os("PATH").as_deref());
    if !relative.is_empty() {
        debug(debug_on, || {
            format!(
                "bwrap shim: PATH entries not searched (relative or empty: looked up from the \
                 working folder, where a command may plant a bwrap): {relative:?}"
            )
        });
    }
    Ok((real, visited))
}

/// The run's record where `APPLY_SECCOMP_LOG` names a log (log.rs).
fn log_run(args: &[OsString], rewrite: &shim::Rewrite, real: &Path, debug_on: bool) {
    let Some(log) = std::env::var_os(shim::LOG).filter(|l| !l.is_empty()) else {
        return;
    };
    let record = shim::log_record(
        std::time::SystemTime::now(),
        std::process::id(),
        args,
        &rewrite.args_files,
        &rewrite.note,
        real,
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

/// bubblewrap and the words before the client's: one more `--unsetenv`,
/// so the sandbox never sees the list and the next pass counts this one;
/// nor the log's name, which would tell a sandboxed command where the
/// next record goes.
fn head(real: &Path, args: &[OsString]) -> Vec<OsString> {
    let mut head: Vec<OsString> = vec![
        real.to_path_buf().into_os_string(),
        "--unsetenv".into(),
        shim::VISITED.into(),
    ];
    if !shim::unsets(args, shim::LOG) {
        head.extend(["--unsetenv".into(), shim::LOG.into()]);
    }
    head
}

/// One line made ready (`what`: which, for `SRT_DEBUG`): the GPUs'
/// device nodes passed where asked (devices.rs); what leads to this shim
/// and to what it runs (`route`) kept out of the command's reach
/// (protect/), and the keeper's folder (`hidden`) hidden where the line
/// makes it writable.
fn protect(
    words: &mut Vec<OsString>,
    gpus: Option<&[PathBuf]>,
    (route, hidden): (&[PathBuf], Option<&Path>),
    what: &str,
    debug_on: bool,
) {
    if let Some(nodes) = gpus {
        let mut note = shim::devices::pass(words, nodes).unwrap_or_else(|e| e);
        for l in shim::devices::linked(Path::new("/dev")) {
            note += &format!("; {l}");
        }
        debug(debug_on, || {
            format!(
                "bwrap shim: devices ({}): {note}{what}",
                shim::devices::VARIABLE
            )
        });
    }
    let note = shim::protect::protect(words, route, hidden).map_or_else(|e| e, |p| p.note());
    debug(debug_on, || format!("bwrap shim: {note}{what}"));
}

/// The placeholders `line` asks for, made and handed to their holder
/// (keep/); a run without them said for `SRT_DEBUG`.
fn keep_placeholders(
    line: &mut [OsString],
    keeper: Result<PathBuf, shim::keep::NotKept>,
    debug_on: bool,
) {
    match keeper.and_then(|folder: PathBuf| shim::keep::Keeper::keep(&mut line[1..], &folder)) {
        Ok(keeper) => {
            debug(debug_on, || format!("bwrap shim: {}", keeper.note));
            if let Err(why) = keeper.detach() {
                debug(debug_on, || {
                    format!("bwrap shim: placeholders not released after the run: {why}")
                });
            }
        }
        Err(e) => debug(debug_on, || format!("bwrap shim: {}", e.why)),
    }
}

/// The run's cgroup where memory or CPU caps are asked (limits.rs),
/// after the holder started (which must not be in it: the cgroup's end
/// kills what it holds): made and entered, or the run refused (the
/// message), never run unlimited. A line that runs no command gets none.
fn cgroup(runs_command: bool, debug_on: bool) -> Result<(), String> {
    let Some(asked) = shim::limits::asked_in_env()?.filter(|_| runs_command) else {
        return Ok(());
    };
    match shim::limits::apply(&asked) {
        Ok(note) => {
            debug(debug_on, || format!("bwrap shim: {note}"));
            Ok(())
        }
        Err(why) => Err(format!(
            "{}: asked, but no cgroup can hold it here ({why}); {}",
            asked.describe(),
            crate::run::cgroup::HOW
        )),
    }
}

/// The names that lead to what runs for a client's next command: the path
/// the client ran this shim by, `bwrap` in every `PATH` folder searched
/// before the real bubblewrap (by the clients, from their working folder
/// for a relative entry, and by the shim after its own folder), this
/// binary, the real bubblewrap, and the command's words that name this
/// binary (srt's `applyPath`).
fn route(argv0: &OsStr, ours: &Path, real: &Path, command: &[OsString]) -> Vec<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut route = Vec::new();
    if argv0.as_bytes().contains(&b'/') {
        route.push(cwd.join(argv0));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = cwd.join(dir).join("bwrap");
        // The real one is found as `DIR/bwrap` on PATH, or elsewhere
        // (APPLY_SECCOMP_BWRAP, /usr/bin/bwrap): then every folder counts.
        let is_real = candidate == real;
        if !route.contains(&candidate) {
            route.push(candidate);
        }
        if is_real {
            break;
        }
    }
    for p in [ours, real] {
        if !route.iter().any(|r| r == p) {
            route.push(p.to_path_buf());
        }
    }
    route.extend(words_naming(command, ours, 64));
    route
}

/// The absolute words of the command that name a helper srt runs in the
/// sandbox (its `applyPath`): the file `ours` is, or an executable file
/// named `apply-seccomp...` (another build); at most `limit` words looked
/// at.
pub(crate) fn words_naming(command: &[OsString], ours: &Path, limit: usize) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let id = std::fs::metadata(ours).ok().map(|m| (m.dev(), m.ino()));
    let mut found = Vec::new();
    let words = command.iter().flat_map(|w| {
        w.as_bytes()
            .split(|b| b.is_ascii_whitespace() || b"'\";&|()<>`".contains(b))
            .filter(|t| t.starts_with(b"/") && t.len() < 4096)
            .map(|t| PathBuf::from(std::ffi::OsStr::from_bytes(t)))
            .collect::<Vec<_>>()
    });
    for word in words.take(limit) {
        let helper = std::fs::metadata(&word).is_ok_and(|m| {
            Some((m.dev(), m.ino())) == id
                || m.is_file()
                    && m.mode() & 0o111 != 0
                    && word
                        .file_name()
                        .is_some_and(|n| n.as_bytes().starts_with(b"apply-seccomp"))
        });
        if helper && !found.contains(&word) {
            found.push(word);
        }
    }
    found
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
