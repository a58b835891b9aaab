//! What the guard found: a protection that no longer holds, or renames
//! that cannot be watched; the message run/mod.rs prints and the line for the
//! observation socket.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use crate::json;

/// A protection that no longer holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lost {
    pub path: Vec<u8>,
    /// The bubblewrap option that made the mount, when known.
    pub made_by: Option<String>,
    /// Found before the command started (it never ran).
    pub before_start: bool,
    /// Something is at the path now, as the sandbox sees it: the host's
    /// file, or what was written while it was unprotected.
    pub exists_now: bool,
    /// Not a mount found gone: renames could not be watched (why), so the
    /// command did not run.
    pub unwatchable: Option<String>,
}

impl Lost {
    pub(super) fn at(path: &[u8], made_by: Option<String>, before_start: bool) -> Lost {
        let mut lost = Lost {
            path: path.to_vec(),
            made_by,
            before_start,
            exists_now: false,
            unwatchable: None,
        };
        lost.look_again();
        lost
    }

    /// Looks at the path again: the stub calls this once the command's
    /// tree is gone, when nothing can change it any more from inside. The
    /// name is looked for in a listing of its folder: the detach that woke
    /// the stub comes before the unlink or rename has finished, and
    /// listing the folder waits for it (both hold the folder's lock),
    /// where a lookup might still find the old entry.
    pub fn look_again(&mut self) {
        let path = PathBuf::from(OsString::from_vec(self.path.clone()));
        self.exists_now = match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) => match std::fs::read_dir(dir) {
                Ok(entries) => entries.flatten().any(|e| e.file_name() == name),
                Err(_) => std::fs::symlink_metadata(&path).is_ok(),
            },
            _ => std::fs::symlink_metadata(&path).is_ok(),
        };
    }

    /// Renames cannot be watched (`why`): the command must not run.
    pub(super) fn unwatchable(why: String) -> Lost {
        Lost {
            path: Vec::new(),
            made_by: None,
            before_start: true,
            exists_now: false,
            unwatchable: Some(why),
        }
    }

    /// The helper's message (run/mod.rs prints it).
    pub fn message(&self) -> String {
        if let Some(why) = &self.unwatchable {
            return format!(
                "apply-seccomp: mount guard: the folders of bubblewrap's protecting mounts \
                 cannot be watched for renames ({why}), so a protection moved away would go \
                 unseen; the command did not run. Running it again may work once other \
                 programs' watches are gone; the limits are fs.inotify.max_user_instances and \
                 fs.inotify.max_user_watches (in a user namespace, user.max_inotify_instances \
                 and user.max_inotify_watches)."
            );
        }
        let path = String::from_utf8_lossy(&self.path);
        let what = match &self.made_by {
            Some(option) => format!("{path} (bubblewrap's {option} {path})"),
            None => path.to_string(),
        };
        let mut text = format!(
            "apply-seccomp: mount guard: {what} is no longer mounted in the sandbox: it was \
             removed from outside or moved away (another sandbox's clean-up; a file replaced, \
             deleted or renamed on the host; a folder above it renamed), so the protection it \
             gave no longer held; {}. Running the command again is safe.",
            if self.before_start {
                "the command did not run"
            } else {
                "the command was stopped"
            }
        );
        if self.exists_now && !self.before_start {
            text.push_str(&format!(
                "\napply-seccomp: mount guard: {path} exists now: it may have been written \
                 while unprotected; look at it."
            ));
        }
        text
    }

    /// The line for the observation socket.
    pub fn json(&self, encoded_cmd: Option<&str>) -> String {
        let mut line = match &self.unwatchable {
            Some(why) => format!(
                "{{\"mount_guard\":\"unwatchable\",\"reason\":{}",
                json::string(why.as_bytes())
            ),
            None => format!(
                "{{\"mount_guard\":\"lost\",\"path\":{},\"before_start\":{},\"exists_now\":{}",
                json::string(&self.path),
                self.before_start,
                self.exists_now
            ),
        };
        if let Some(cmd) = encoded_cmd {
            line.push_str(",\"encodedCommand\":");
            line.push_str(cmd);
        }
        line.push_str("}\n");
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_says_where_when_and_what_to_do() {
        let lost = Lost {
            path: b"/w/.bashrc".to_vec(),
            made_by: Some("--ro-bind /dev/null".into()),
            before_start: false,
            exists_now: true,
            unwatchable: None,
        };
        let text = lost.message();
        assert!(text.starts_with(
            "apply-seccomp: mount guard: /w/.bashrc (bubblewrap's --ro-bind /dev/null \
             /w/.bashrc) is no longer mounted in the sandbox: it was removed from outside or \
             moved away"
        ));
        assert!(text.contains("the command was stopped"), "{text}");
        assert!(text.contains("Running the command again is safe"), "{text}");
        assert!(
            text.contains("/w/.bashrc exists now: it may have been written"),
            "{text}"
        );
        let before = Lost {
            before_start: true,
            ..lost
        };
        let text = before.message();
        assert!(text.contains("the command did not run"), "{text}");
        assert!(!text.contains("exists now"), "{text}");
        assert_eq!(
            before.json(Some("\"eA==\"")),
            "{\"mount_guard\":\"lost\",\"path\":\"/w/.bashrc\",\"before_start\":true,\
             \"exists_now\":true,\"encodedCommand\":\"eA==\"}\n"
        );
    }
}
