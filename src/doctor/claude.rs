//! Claude Code's side: the `bwrap` it runs, named in its managed settings
//! (`sandbox.bwrapPath`, the only place it takes one from) or found first
//! on `PATH`: is it this binary, the shim, and what does the shim run? And
//! the shim's placeholders left in the current folder.

use std::path::{Path, PathBuf};

use super::Check;
use super::clients::home;
use super::named::binary_at;
use crate::json;
use crate::settings;
use crate::shim;

/// Claude Code's managed settings file (`APPLY_SECCOMP_CLAUDE_MANAGED_SETTINGS`
/// names another).
pub fn managed_settings_file() -> PathBuf {
    std::env::var_os("APPLY_SECCOMP_CLAUDE_MANAGED_SETTINGS")
        .filter(|v| !v.is_empty())
        .map_or_else(
            || PathBuf::from("/etc/claude-code/managed-settings.json"),
            PathBuf::from,
        )
}

/// The Claude Code check: `sandbox.bwrapPath` in the managed settings if
/// set there, else the `bwrap` on PATH.
pub fn claude_code(binary: &Path) -> Check {
    const NAME: &str = "claude code";
    let file = managed_settings_file();
    let Ok(text) = settings::read(&file) else {
        return shim(binary);
    };
    let Ok(parsed) = json::parse(&String::from_utf8_lossy(&text)) else {
        return Check::fail(
            NAME,
            format!("{}: not JSON: Claude Code refuses it", file.display()),
            "correct the JSON",
        );
    };
    let Some(value) = parsed.get("sandbox").and_then(|s| s.get("bwrapPath")) else {
        return shim(binary);
    };
    match binary_at(
        binary,
        &file,
        "sandbox.bwrapPath",
        value,
        &[],
        (Some("bwrap"), false),
        "Claude Code finds no bubblewrap there",
    ) {
        Ok(found) => Check::ok(
            NAME,
            format!(
                "{found}: Claude Code runs the shim, which runs the real bubblewrap {}",
                shim::find_real_bwrap(binary, None, std::env::var_os("PATH").as_deref(), &[])
                    .map_or_else(
                        |e| format!("(none found: {e})"),
                        |p| p.display().to_string()
                    )
            ),
        ),
        Err(wrong) => wrong.check(
            NAME,
            format!(
                "point sandbox.bwrapPath in {} at a link named bwrap to {}",
                file.display(),
                binary.display()
            ),
        ),
    }
}

/// The shim's placeholders in the current folder that no run holds: left
/// by a run killed before it could remove them; the next run there
/// removes them.
pub fn leftovers() -> Check {
    const NAME: &str = "placeholders";
    let Ok(here) = std::env::current_dir() else {
        return Check::ok(NAME, "no current folder to look in");
    };
    let left = shim::keep::leftovers(&here);
    if left.is_empty() {
        return Check::ok(
            NAME,
            format!(
                "nothing left behind in {} by the shim (the empty files and folders it puts \
                 on denied paths while a command runs)",
                here.display()
            ),
        );
    }
    let names: Vec<String> = left.iter().map(|p| p.display().to_string()).collect();
    Check::warn(
        NAME,
        format!(
            "{} placeholder(s) of the shim's in {} that no run holds: {}",
            left.len(),
            here.display(),
            names.join(", ")
        ),
        "run any sandboxed command here through the shim, which removes them; or remove \
         them by hand (a file holds only the shim's one comment line, a folder only its \
         .apply-seccomp-placeholder file)",
    )
}

/// The `PATH` check: an entry that is relative or empty is looked up from
/// each command's working folder, where a sandboxed command may put a
/// `bwrap` of its own. The shim and the doctor skip such entries; the
/// clients' own search does not, so the shim protects what they name in
/// the working folder (docs/shim.md) and the fix is to remove them.
pub fn path_entries() -> Check {
    const NAME: &str = "path";
    let (dirs, skipped) = shim::search_dirs(std::env::var_os("PATH").as_deref());
    if skipped.is_empty() {
        return Check::ok(
            NAME,
            format!("every PATH entry is absolute ({} folders)", dirs.len()),
        );
    }
    let named: Vec<String> = skipped.iter().map(|e| format!("{e:?}")).collect();
    Check::warn(
        NAME,
        format!(
            "PATH has {} relative or empty entr{} ({}): srt and Claude Code look bwrap up there \
             from the working folder, where a sandboxed command can put one; the shim and this \
             doctor never run a bwrap found through them",
            skipped.len(),
            if skipped.len() == 1 { "y" } else { "ies" },
            named.join(", ")
        ),
        "remove them from the PATH srt and Claude Code start with (or make them absolute)",
    )
}

/// Whether `p` starts with `#!`: a wrapper script, not bubblewrap. Read
/// as every file a sandboxed command could have put is (settings.rs): a
/// FIFO swapped in for it must not hang the doctor.
fn is_script(p: &Path) -> bool {
    crate::settings::read_head(p, 2).is_ok_and(|head| head == b"#!")
}

/// The Claude Code check: the `bwrap` on PATH.
fn shim(binary: &Path) -> Check {
    const NAME: &str = "claude code";
    let path = std::env::var_os("PATH").unwrap_or_default();
    let (dirs, _) = shim::search_dirs(Some(&path));
    let bwraps: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join("bwrap"))
        .filter(|c| shim::executable(c))
        .collect();
    let ours = bwraps.iter().position(|b| shim::is_ours(b, binary));
    let put_it_there = || put_it_there(binary, &dirs, bwraps.first());
    let Some(at) = ours else {
        return Check::warn(
            NAME,
            match bwraps.first() {
                Some(first) => format!(
                    "the first bwrap on PATH is {}, not this binary: Claude Code runs its own \
                     embedded helper (it leaves SOCK_DGRAM socketpairs open and fails every \
                     command under Ubuntu's AppArmor bwrap profile; no mount guard, no kept \
                     placeholders)",
                    first.display()
                ),
                None => "no bwrap on PATH at all".into(),
            },
            put_it_there(),
        );
    };
    let before = &bwraps[..at];
    if let Some(real) = before.iter().find(|b| !is_script(b)) {
        return Check::warn(
            NAME,
            format!(
                "this binary is on PATH as {}, but {} comes first and is not a wrapper script: \
                 Claude Code runs that one and its embedded helper",
                bwraps[at].display(),
                real.display()
            ),
            put_it_there(),
        );
    }
    // After the shim: wrappers (scripts) until a real bubblewrap, by the
    // shim's own rule.
    let configured = std::env::var_os("APPLY_SECCOMP_BWRAP");
    let mut visited = Vec::new();
    let mut after = Vec::new();
    let real = loop {
        match shim::find_real_bwrap(binary, configured.as_deref(), Some(&path), &visited) {
            Ok(c) if is_script(&c) && after.len() < shim::MAX_HOPS => {
                visited.extend(shim::identity(&c));
                after.push(c.display().to_string());
            }
            Ok(c) => break Ok(c),
            Err(e) => break Err(e),
        }
    };
    let through = |list: &[String]| match list.len() {
        0 => "no wrapper".to_string(),
        n => format!("{n} wrapper(s): {}", list.join(", ")),
    };
    let wrappers_before: Vec<String> = before.iter().map(|b| b.display().to_string()).collect();
    match real {
        Ok(real) => Check::ok(
            NAME,
            format!(
                "the bwrap Claude Code finds on PATH leads to this binary, {} (the shim), \
                 through {}; the shim runs the real bubblewrap {} through {}",
                bwraps[at].display(),
                through(&wrappers_before),
                real.display(),
                through(&after)
            ),
        ),
        Err(e) => Check::fail(
            NAME,
            format!(
                "this binary is the shim on PATH ({}), but it cannot run a real bubblewrap: {e}",
                bwraps[at].display()
            ),
            "install bubblewrap, or set APPLY_SECCOMP_BWRAP to it",
        ),
    }
}

/// How to make this binary the `bwrap` Claude Code finds: the folder to
/// put on `PATH` (before `first`'s, the first `bwrap` there now, of the
/// `dirs` searched), the Debian package's shim, or the link to make.
fn put_it_there(binary: &Path, dirs: &[PathBuf], first: Option<&PathBuf>) -> String {
    let first_dir = first.and_then(|b| b.parent());
    // Where on PATH the shim's folder must come.
    let place = first_dir.map_or_else(
        || "first".to_string(),
        |d| format!("before {}", d.display()),
    );
    // The Debian package's shim is there already, root's.
    if let Some(system) = crate::install::system_shim(binary) {
        let dir = system.parent().unwrap_or(&system).display().to_string();
        return format!(
            "put {dir} {place} on the PATH Claude Code starts with, or as root \
             apply-seccomp --setup --managed (sandbox.bwrapPath {})",
            system.display()
        );
    }
    let folder = format!("~/{}", shim::protect::LINK_FOLDER);
    let ours_dir = home().map(|h| h.join(shim::protect::LINK_FOLDER));
    let listed_before = ours_dir.as_ref().is_some_and(|od| {
        dirs.iter()
            .take_while(|d| Some(d.as_path()) != first_dir)
            .any(|d| d == od)
    });
    let link = format!(
        "mkdir -p {folder} && ln -sf {} {folder}/bwrap",
        binary.display()
    );
    // The link there already (--setup made it): the PATH alone is left.
    let linked = ours_dir
        .as_ref()
        .is_some_and(|od| shim::is_ours(&od.join("bwrap"), binary));
    if listed_before {
        link
    } else if linked {
        format!(
            "put {folder} (its bwrap is this binary already) {place} on the PATH Claude \
             Code starts with: export PATH=\"$HOME/{}:$PATH\" in your shell's start-up \
             file",
            shim::protect::LINK_FOLDER
        )
    } else {
        format!("{link}, and put {folder} {place} on the PATH Claude Code starts with")
    }
}
