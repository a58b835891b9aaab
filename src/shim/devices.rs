//! GPUs in the sandbox, when the user asks (issue 47). bubblewrap's
//! `--dev /dev` makes a fresh `/dev` without them; with
//! `APPLY_SECCOMP_DEVICES=gpu` in the shim's own environment (the
//! client's, which no sandboxed command can set: `--setup --gpu` writes
//! it where both clients pass it on) the shim adds, right after the
//! line's `--dev /dev`, a `--dev-bind` of each GPU device node this host
//! has: NVIDIA's (`nvidia[0-9]*`, `nvidiactl`, `nvidia-uvm`,
//! `nvidia-uvm-tools`, `nvidia-modeset`, `nvidia-caps/*`), the DRM render
//! nodes (`dri/renderD*`; `dri/card*` too with `gpu,card`), AMD's `kfd`,
//! WSL2's `dxg`; nothing else of `/dev`. Where the line hides
//! `/proc/driver`, NVIDIA's `/proc/driver/nvidia` is bound back read-only.
//! The helper's filters, the mount guard and the placeholders are as
//! without it.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use crate::bwrap_args;

/// The setting, read from the shim's environment only.
pub const VARIABLE: &str = "APPLY_SECCOMP_DEVICES";

/// What the setting asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Asked {
    /// The GPUs' compute nodes.
    pub gpu: bool,
    /// DRM's `card*` nodes too (display: mode setting, not only compute).
    pub card: bool,
}

impl Asked {
    pub fn any(self) -> bool {
        self.gpu || self.card
    }
}

/// Reads the setting (`gpu`, `gpu,card`; unset or empty: nothing). Err: a
/// word it does not know.
pub fn asked(value: Option<&OsStr>) -> Result<Asked, String> {
    let mut asked = Asked::default();
    let Some(value) = value else {
        return Ok(asked);
    };
    for word in value
        .as_bytes()
        .split(|&b| b == b',')
        .filter(|w| !w.is_empty())
    {
        match word {
            b"gpu" => asked.gpu = true,
            b"card" => asked.card = true,
            other => {
                return Err(format!(
                    "{VARIABLE}={}: unknown word {} (gpu, card): no device passed",
                    value.to_string_lossy(),
                    String::from_utf8_lossy(other)
                ));
            }
        }
    }
    // `card` alone asks for DRM's nodes, which are GPUs too.
    if asked.card {
        asked.gpu = true;
    }
    Ok(asked)
}

/// Whether a name under `dev` (relative, e.g. `dri/renderD128`) is a node
/// `asked` passes.
fn wanted(rel: &[u8], asked: Asked) -> bool {
    let digits_after = |prefix: &[u8]| {
        rel.strip_prefix(prefix)
            .is_some_and(|rest| !rest.is_empty() && rest.iter().all(u8::is_ascii_digit))
    };
    asked.gpu
        && (digits_after(b"nvidia")
            || [
                &b"nvidiactl"[..],
                b"nvidia-uvm",
                b"nvidia-uvm-tools",
                b"nvidia-modeset",
                b"kfd",
                b"dxg",
            ]
            .contains(&rel)
            || rel
                .strip_prefix(b"nvidia-caps/")
                .is_some_and(|n| !n.is_empty() && !n.contains(&b'/'))
            || digits_after(b"dri/renderD"))
        || asked.card && digits_after(b"dri/card")
}

/// The folders under `dev` GPU nodes are looked for in.
const FOLDERS: [&str; 3] = ["", "dri", "nvidia-caps"];

/// The GPU device nodes under `dev` (the host's `/dev`) that `asked`
/// passes: character devices only, in a stable order. Never through a
/// link: neither a node that is one nor a folder (`dri`, `nvidia-caps`)
/// that is one, which could lead out of `/dev` (issue 54; [`linked`]
/// says which).
pub fn nodes(dev: &Path, asked: Asked) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if !asked.any() {
        return found;
    }
    for sub in FOLDERS {
        let folder = dev.join(sub);
        if !std::fs::symlink_metadata(&folder).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        for e in entries.flatten() {
            let rel = Path::new(sub).join(e.file_name());
            let is_char = e.file_type().is_ok_and(|t| t.is_char_device());
            if is_char && wanted(rel.as_os_str().as_bytes(), asked) {
                found.push(dev.join(rel));
            }
        }
    }
    found.sort();
    found
}

/// The GPU folders under `dev` that are links, and where each leads: not
/// followed, nothing in them passed.
pub fn linked(dev: &Path) -> Vec<String> {
    FOLDERS
        .iter()
        .filter(|sub| !sub.is_empty())
        .map(|sub| dev.join(sub))
        .filter_map(|p| {
            let to = std::fs::read_link(&p).ok()?;
            Some(format!(
                "{} is a link to {}: not followed, nothing in it passed",
                p.display(),
                to.display()
            ))
        })
        .collect()
}

/// Adds a `--dev-bind N N` of each of `nodes` right after the line's
/// `--dev /dev` (and `/proc/driver/nvidia` read-only after a mount that
/// hides `/proc/driver`); what it did, for `SRT_DEBUG`. Err: the line has
/// no `--dev /dev` on it (its `/dev` is the host's, or comes from an
/// `--args` file): nothing added.
pub fn pass(words: &mut Vec<OsString>, nodes: &[PathBuf]) -> Result<String, String> {
    let walked = bwrap_args::walk(words).map_err(|e| format!("{e}: no device passed"))?;
    let Some(at) = walked
        .mounts
        .iter()
        .filter(|m| m.option == "--dev" && m.dest == b"/dev")
        .find_map(|m| m.at)
    else {
        return Err(
            "no --dev /dev on the line (its /dev is as the line gives it): no device \
                    passed"
                .into(),
        );
    };
    let mut added: Vec<OsString> = Vec::new();
    for node in nodes {
        added.extend([
            "--dev-bind".into(),
            node.clone().into(),
            node.clone().into(),
        ]);
    }
    words.splice(at + 2..at + 2, added);
    let mut said = if nodes.is_empty() {
        "no GPU device node on this host".to_string()
    } else {
        let names: Vec<String> = nodes.iter().map(|n| n.display().to_string()).collect();
        format!("passed {}", names.join(", "))
    };
    if nodes.iter().any(|n| {
        n.file_name()
            .is_some_and(|f| f.as_bytes().starts_with(b"nvidia"))
    }) {
        said += &nvidia_proc(words);
    }
    Ok(said)
}

/// What NVIDIA's user-space driver reads: bound back read-only where the
/// line hides `/proc/driver`, right after the last mount that does (its
/// option and every value: an `--overlay` has three), so that any mount
/// the line makes later still goes on top. Never where the line mounts
/// at `/proc/driver/nvidia` or below it: that is the line's own decision
/// about it (issue 54: a `--tmpfs /proc/driver/nvidia` or a `--ro-bind
/// /dev/null /proc/driver/nvidia/params` was covered by the bind-back).
/// Inserts into `words`; what it did, for `SRT_DEBUG` (`""`: nothing
/// hides it).
fn nvidia_proc(words: &mut Vec<OsString>) -> String {
    const DRIVER: &[u8] = b"/proc/driver";
    const NVIDIA: &[u8] = b"/proc/driver/nvidia";
    let Ok(walked) = bwrap_args::walk(words) else {
        return String::new();
    };
    let plain = |d: &[u8]| -> Vec<u8> {
        let mut d = d.to_vec();
        while d.len() > 1 && d.ends_with(b"/") {
            d.pop();
        }
        d
    };
    if let Some(m) = walked.mounts.iter().find(|m| {
        let d = plain(&m.dest);
        d == NVIDIA || d.starts_with(b"/proc/driver/nvidia/")
    }) {
        return format!(
            "; /proc/driver/nvidia left as the line makes it (it mounts {} {})",
            m.option,
            String::from_utf8_lossy(&m.dest)
        );
    }
    let Some(hiding) = walked
        .mounts
        .iter()
        .rev()
        .find(|m| plain(&m.dest) == DRIVER)
    else {
        return String::new();
    };
    let Some(after) = hiding.end() else {
        return "; /proc/driver/nvidia not bound back (an --args file hides /proc/driver)".into();
    };
    words.splice(
        after..after,
        [
            "--ro-bind-try",
            "/proc/driver/nvidia",
            "/proc/driver/nvidia",
        ]
        .map(OsString::from),
    );
    "; /proc/driver/nvidia read-only (the line hides /proc/driver)".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn a_gpu_folder_that_is_a_link_is_not_followed() {
        let dir = std::env::temp_dir().join(format!("devices-test-{}", std::process::id()));
        let elsewhere = dir.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::create_dir_all(dir.join("dev")).unwrap();
        let dri = dir.join("dev/dri");
        let _ = std::fs::remove_file(&dri);
        std::os::unix::fs::symlink(&elsewhere, &dri).unwrap();
        let said = linked(&dir.join("dev"));
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("is a link to") && said[0].contains("not followed"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_setting_is_read_strictly() {
        assert_eq!(asked(None), Ok(Asked::default()));
        assert_eq!(asked(Some("".as_ref())), Ok(Asked::default()));
        let gpu = asked(Some("gpu".as_ref())).unwrap();
        assert!(gpu.gpu && !gpu.card);
        let both = asked(Some("gpu,card".as_ref())).unwrap();
        assert!(both.gpu && both.card);
        assert!(asked(Some("all".as_ref())).is_err());
        assert!(asked(Some("gpu,/dev/sda".as_ref())).is_err());
    }

    #[test]
    fn only_gpu_names_are_wanted() {
        let gpu = Asked {
            gpu: true,
            card: false,
        };
        let card = Asked {
            gpu: true,
            card: true,
        };
        for yes in [
            "nvidia0",
            "nvidia12",
            "nvidiactl",
            "nvidia-uvm",
            "nvidia-uvm-tools",
            "nvidia-modeset",
            "nvidia-caps/nvidia-cap1",
            "dri/renderD128",
            "kfd",
            "dxg",
        ] {
            assert!(wanted(yes.as_bytes(), gpu), "{yes}");
        }
        for no in [
            "nvidia",
            "nvidiax",
            "sda",
            "dri/card0",
            "dri/by-path",
            "mem",
            "kfd2",
            "nvidia-caps/",
        ] {
            assert!(!wanted(no.as_bytes(), gpu), "{no}");
        }
        assert!(wanted(b"dri/card0", card));
        assert!(!wanted(b"nvidia0", Asked::default()));
    }

    #[test]
    fn nodes_go_right_after_the_lines_dev() {
        let mut line = words("--ro-bind / / --dev /dev --unshare-pid --proc /proc -- sh");
        let nodes = [
            PathBuf::from("/dev/nvidia0"),
            PathBuf::from("/dev/dri/renderD128"),
        ];
        let said = pass(&mut line, &nodes).unwrap();
        assert_eq!(
            line,
            words(
                "--ro-bind / / --dev /dev --dev-bind /dev/nvidia0 /dev/nvidia0 --dev-bind \
                 /dev/dri/renderD128 /dev/dri/renderD128 --unshare-pid --proc /proc -- sh"
            )
        );
        assert!(said.contains("/dev/nvidia0, /dev/dri/renderD128"), "{said}");
        // No --dev /dev: nothing added.
        let mut host = words("--dev-bind / / -- sh");
        assert!(pass(&mut host, &nodes).is_err());
        assert_eq!(host, words("--dev-bind / / -- sh"));
    }

    #[test]
    fn a_hidden_proc_driver_is_bound_back_for_nvidia() {
        let mut line = words("--dev /dev --proc /proc --tmpfs /proc/driver -- sh");
        let said = pass(&mut line, &[PathBuf::from("/dev/nvidiactl")]).unwrap();
        assert_eq!(
            line,
            words(
                "--dev /dev --dev-bind /dev/nvidiactl /dev/nvidiactl --proc /proc --tmpfs \
                 /proc/driver --ro-bind-try /proc/driver/nvidia /proc/driver/nvidia -- sh"
            )
        );
        assert!(said.contains("/proc/driver/nvidia read-only"), "{said}");
        // After the hiding mount whatever it is (an overlay has four
        // words), before the line's later mounts.
        let mut overlay =
            words("--dev /dev --overlay /u /w /proc/driver --ro-bind /a /proc/driver/x -- sh");
        pass(&mut overlay, &[PathBuf::from("/dev/nvidiactl")]).unwrap();
        assert_eq!(
            overlay,
            words(
                "--dev /dev --dev-bind /dev/nvidiactl /dev/nvidiactl --overlay /u /w /proc/driver \
                 --ro-bind-try /proc/driver/nvidia /proc/driver/nvidia --ro-bind /a \
                 /proc/driver/x -- sh"
            )
        );
        // The line's own mounts at /proc/driver/nvidia or below: left as
        // the line makes them, before the hiding mount or after it.
        for line in [
            "--dev /dev --tmpfs /proc/driver --ro-bind /dev/null /proc/driver/nvidia/params -- sh",
            "--dev /dev --tmpfs /proc/driver/nvidia/ --tmpfs /proc/driver -- sh",
            "--dev /dev --tmpfs /proc/driver --tmpfs /proc/driver/nvidia -- sh",
        ] {
            let mut denied = words(line);
            let said = pass(&mut denied, &[PathBuf::from("/dev/nvidiactl")]).unwrap();
            assert!(
                !denied.iter().any(|w| w == "--ro-bind-try"),
                "{line}: {denied:?}"
            );
            assert!(said.contains("left as the line makes it"), "{said}");
        }
        // Not hidden: nothing more.
        let mut plain = words("--dev /dev --proc /proc -- sh");
        pass(&mut plain, &[PathBuf::from("/dev/nvidiactl")]).unwrap();
        assert!(!plain.iter().any(|w| w == "/proc/driver/nvidia"));
    }
}
