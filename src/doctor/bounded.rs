//! The doctor's bounded child runner: a child with no input and its
//! output captured, in a process group of its own, given a deadline; then
//! the group is killed, whatever is left of it. One `poll` loop, no thread.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A step's time limit: `default`, or less with
/// `APPLY_SECCOMP_DOCTOR_LIMIT=SECONDS` (so a test of a step that blocks
/// need not wait the whole default).
pub fn limit(default: Duration) -> Duration {
    std::env::var("APPLY_SECCOMP_DOCTOR_LIMIT")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(default, |s| default.min(Duration::from_secs(s.max(1))))
}

/// What a child run by [`run_bounded`] did.
pub struct Ran {
    /// `None`: still running at the deadline, killed with its group.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// "exit status N", "killed by signal N", or "no answer in N s".
    pub fn describe(&self, default_limit: Duration) -> String {
        match self.status {
            None => format!("no answer in {} s (killed)", limit(default_limit).as_secs()),
            Some(s) => match (s.code(), s.signal()) {
                (Some(code), _) => format!("exit status {code}"),
                (_, Some(sig)) => format!("killed by signal {sig}"),
                _ => format!("{s}"),
            },
        }
    }

    /// The child's stderr, trimmed, or `none` when empty.
    pub fn stderr_text(&self) -> String {
        match self.stderr.trim() {
            "" => "no message".into(),
            t => t.replace('\n', " / "),
        }
    }
}

/// Runs `cmd` with no input, its output captured, in a process group of
/// its own, for at most `limit`; then kills the group (whatever is left of
/// it, whether or not the child has ended). No thread: one `poll` loop.
pub fn run_bounded(mut cmd: Command, default_limit: Duration) -> std::io::Result<Ran> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

    let limit = limit(default_limit);
    let start = Instant::now();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn()?;
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let mut pipes = [
        child.stdout.take().map(Pipe::Out),
        child.stderr.take().map(Pipe::Err),
    ];
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut status = None;
    let mut ended_at = None;
    // Once the child has ended, its output gets this long to drain (a
    // grandchild may hold the pipes open).
    const DRAIN: Duration = Duration::from_millis(200);
    loop {
        let left = limit.saturating_sub(start.elapsed());
        let drained = pipes.iter().all(Option::is_none);
        if status.is_none() {
            status = child.try_wait()?;
            if status.is_some() {
                ended_at = Some(Instant::now());
            }
        }
        let drain_over = ended_at.is_some_and(|t: Instant| t.elapsed() >= DRAIN);
        if left.is_zero() || (status.is_some() && (drained || drain_over)) {
            break;
        }
        if drained {
            std::thread::sleep(left.min(Duration::from_millis(5)));
            continue;
        }
        let ready: Vec<bool> = {
            let mut fds: Vec<PollFd<'_>> = pipes
                .iter()
                .flatten()
                .map(|p| PollFd::new(p.as_fd(), PollFlags::POLLIN))
                .collect();
            let ms = u16::try_from(left.min(Duration::from_millis(50)).as_millis()).unwrap_or(50);
            match poll(&mut fds, PollTimeout::from(ms)) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
            fds.iter().map(|f| f.any().unwrap_or(true)).collect()
        };
        let mut i = 0;
        for slot in pipes.iter_mut() {
            let Some(pipe) = slot else { continue };
            if ready[i] {
                let mut buf = [0u8; 4096];
                let sink = match pipe {
                    Pipe::Out(_) => &mut out,
                    Pipe::Err(_) => &mut err,
                };
                match pipe.read(&mut buf) {
                    Ok(0) | Err(_) => *slot = None,
                    Ok(n) if sink.len() < 1 << 20 => sink.extend_from_slice(&buf[..n]),
                    Ok(_) => {}
                }
            }
            i += 1;
        }
    }
    // Whatever is left of the group goes, the child's children included.
    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    child.wait()?;
    Ok(Ran {
        status,
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
    })
}

enum Pipe {
    Out(std::process::ChildStdout),
    Err(std::process::ChildStderr),
}

impl Pipe {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        match self {
            Pipe::Out(p) => p.as_fd(),
            Pipe::Err(p) => p.as_fd(),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Pipe::Out(p) => p.read(buf),
            Pipe::Err(p) => p.read(buf),
        }
    }
}
