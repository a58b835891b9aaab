//! The shim's part of the cgroup caps (src/run/cgroup/mod.rs): on request, the
//! run's cgroup made under the user's delegated subtree, its limits set,
//! this process moved in (bubblewrap, the helper and the command after
//! it), and a remover started that kills what is left in it and removes
//! it once bubblewrap has ended. Made with a name no one can guess (a
//! sandboxed command cannot write the cgroup tree: srt binds it
//! read-only).
//!
//! The remover starts in this process's memory (`sys::spawn_shared`,
//! as the placeholders' holder: keep/hold.rs) before the move, so it
//! stays outside the run's cgroup: it reads only its leaked plan, makes
//! raw calls only, starts a session of its own, keeps only its own
//! descriptors, waits on a pidfd of this process (bubblewrap by then),
//! writes `cgroup.kill` and removes the folder, retried while the kernel
//! still counts a dying process in it (EBUSY), for at most 10 s.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, IntoRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::cli::caps::{self, Limits, PERIOD};
use crate::error::strerror;
use crate::run::cgroup;
use crate::sys;

/// What the remover needs: made before it starts, then only read.
struct Plan {
    ended: RawFd,
    parent: RawFd,
    name: CString,
    kill: Option<RawFd>,
    fds: Vec<RawFd>,
}

/// Makes the run's cgroup for `asked`, moves this process in and leaves
/// its removal to a remover: a note for `SRT_DEBUG`, or why it could
/// not be (nothing is then left of it, and the run must not start).
pub fn apply(asked: &Limits) -> Result<String, String> {
    let tree = cgroup::Tree::read()?;
    let (parent, enable) = cgroup::delegated(&tree, asked)?;
    for c in &enable {
        std::fs::write(parent.join("cgroup.subtree_control"), format!("+{c}")).map_err(|e| {
            format!(
                "{}: +{c}: {}",
                parent.join("cgroup.subtree_control").display(),
                strerror(&e)
            )
        })?;
    }
    let name = format!("apply-seccomp-{:016x}", sys::unguessable());
    let folder = parent.join(&name);
    let dir = File::options()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(&parent)
        .map_err(|e| format!("{}: {}", parent.display(), strerror(&e)))?;
    let c_name = CString::new(name.as_bytes()).map_err(|e| e.to_string())?;
    sys::mkdir_at(dir.as_raw_fd(), &c_name, 0o755)
        .map_err(|e| format!("mkdir {}: {}", folder.display(), e.desc()))?;
    let made = set_limits(&folder, asked).and_then(|()| start_remover(dir, &c_name, &folder));
    let made = made.and_then(|()| {
        std::fs::write(folder.join("cgroup.procs"), "0").map_err(|e| {
            format!(
                "{}: {}",
                folder.join("cgroup.procs").display(),
                strerror(&e)
            )
        })
    });
    match made {
        Ok(()) => Ok(format!(
            "cgroup {} made for the run ({}), removed after it",
            folder.display(),
            asked.describe()
        )),
        Err(why) => {
            // Empty (this process was not moved in): it goes at once. The
            // remover, if it started, finds it gone.
            let _ = std::fs::remove_dir(&folder);
            Err(why)
        }
    }
}

fn set_limits(folder: &Path, asked: &Limits) -> Result<(), String> {
    let write = |file: &str, value: String| {
        std::fs::write(folder.join(file), &value).map_err(|e| {
            format!(
                "{} = {value}: {}",
                folder.join(file).display(),
                strerror(&e)
            )
        })
    };
    if let Some(m) = asked.memory {
        write("memory.max", m.to_string())?;
        // No swap to spill into, where the kernel counts it: the cap is
        // the memory the run can hold.
        if folder.join("memory.swap.max").exists() {
            write("memory.swap.max", "0".into())?;
        }
    }
    if let Some(c) = asked.cpu {
        write("cpu.max", format!("{c} {PERIOD}"))?;
    }
    if let Some(p) = asked.pids {
        write("pids.max", p.to_string())?;
    }
    Ok(())
}

fn start_remover(dir: File, name: &CString, folder: &Path) -> Result<(), String> {
    let ended = sys::pidfd_open(std::process::id() as libc::pid_t)
        .map_err(|e| format!("pidfd_open: {}", e.desc()))?;
    let kill = File::options()
        .write(true)
        .open(folder.join("cgroup.kill"))
        .ok()
        .map(IntoRawFd::into_raw_fd);
    let (ended, parent) = (ended.into_raw_fd(), dir.into_raw_fd());
    let mut fds = vec![ended, parent];
    fds.extend(kill);
    fds.sort_unstable();
    let plan: &'static Plan = Box::leak(Box::new(Plan {
        ended,
        parent,
        name: name.clone(),
        kill,
        fds,
    }));
    let stack = sys::Stack::new(64 * 1024).map_err(|e| format!("remover: {}", e.desc()))?;
    sys::spawn_shared(stack, move || {
        let _ = sys::setsid();
        sys::close_all_but(&plan.fds);
        if sys::wait_readable(plan.ended).is_ok() {
            if let Some(k) = plan.kill {
                let _ = sys::pwrite(k, b"1", 0);
            }
            for _ in 0..500 {
                match sys::unlink_at(plan.parent, &plan.name, libc::AT_REMOVEDIR) {
                    Err(nix::errno::Errno::EBUSY) => sys::nap(20),
                    _ => break,
                }
            }
        }
        sys::exit_now(0)
    })
    .map_err(|e| format!("remover: {}", e.desc()))?;
    // The remover's copies stay open; these close at the exec.
    for fd in [plan.ended, plan.parent].into_iter().chain(plan.kill) {
        let _ = sys::set_cloexec(fd, true);
    }
    Ok(())
}

/// The cgroup caps the client's environment asks for: none, a request,
/// or why a value is wrong.
pub fn asked_in_env() -> Result<Option<Limits>, String> {
    let tasks =
        caps::Tasks::read(std::env::var_os(caps::TASKS).as_deref()).map_err(|e| e.to_string())?;
    Limits::read(
        std::env::var_os(caps::MEMORY).as_deref(),
        std::env::var_os(caps::CPU).as_deref(),
        tasks.asked_number(),
    )
}
