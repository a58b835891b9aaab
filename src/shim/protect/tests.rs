//! The route's steps and the mounts added, on folders made for each test.

use super::*;

use crate::os_words as words;

/// A fresh folder under the temporary folder, links in its path resolved.
fn folder(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "apply-seccomp-protect-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("x/bin")).unwrap();
    std::fs::create_dir_all(dir.join("y")).unwrap();
    std::fs::canonicalize(&dir).unwrap()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// srt's shape: `/` read-only, `dir` writable, `middle` (the mounts the
/// shim adds), a deny path in it, the command.
fn with(dir: &Path, middle: &[&str]) -> Vec<OsString> {
    let d = s(dir);
    let bashrc = format!("{d}/.bashrc");
    let head = ["--ro-bind", "/", "/", "--bind", &d, &d];
    let tail = ["--ro-bind", "/dev/null", &bashrc, "--", "sh", "-c", "x"];
    words(&[&head[..], middle, &tail[..]].concat())
}

fn line(dir: &Path) -> Vec<OsString> {
    with(dir, &[])
}

#[test]
fn the_steps_follow_each_link_to_the_file() {
    let dir = folder("steps");
    std::fs::write(dir.join("y/real"), "").unwrap();
    std::os::unix::fs::symlink("../../y/real", dir.join("x/bin/bwrap")).unwrap();
    std::os::unix::fs::symlink(dir.join("x"), dir.join("alias")).unwrap();
    assert_eq!(
        steps(&dir.join("alias/bin/bwrap")),
        vec![
            Step::Link(dir.join("alias")),
            Step::Link(dir.join("x/bin/bwrap")),
            Step::File(dir.join("y/real"))
        ]
    );
    assert_eq!(
        steps(&dir.join("none/bwrap")),
        vec![Step::Absent(dir.join("none/bwrap"))]
    );
    std::os::unix::fs::symlink("loop", dir.join("loop")).unwrap();
    assert_eq!(steps(&dir.join("loop")), vec![]);
    assert_eq!(steps(Path::new("relative/bwrap")), vec![]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_in_a_writable_bind_is_bound_read_only_and_its_folders_kept_in_place() {
    let dir = folder("file");
    let shim = dir.join("x/bin/bwrap");
    std::fs::write(&shim, "").unwrap();
    let mut l = line(&dir);
    let done = protect(&mut l, std::slice::from_ref(&shim), None).unwrap();
    let d = s(&dir);
    let want = with(
        &dir,
        &[
            "--bind",
            &format!("{d}/x"),
            &format!("{d}/x"),
            "--bind",
            &format!("{d}/x/bin"),
            &format!("{d}/x/bin"),
            "--ro-bind",
            &s(&shim),
            &s(&shim),
        ],
    );
    assert_eq!(l, want);
    assert_eq!((done.files, done.kept), (vec![s(&shim)], 2));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_link_gets_its_folder_read_only_and_its_target_too() {
    let dir = folder("link");
    std::fs::write(dir.join("y/real"), "").unwrap();
    std::os::unix::fs::symlink(dir.join("y/real"), dir.join("x/bin/bwrap")).unwrap();
    let mut l = line(&dir);
    let done = protect(&mut l, &[dir.join("x/bin/bwrap")], None).unwrap();
    let d = s(&dir);
    let want = with(
        &dir,
        &[
            "--bind",
            &format!("{d}/x"),
            &format!("{d}/x"),
            "--bind",
            &format!("{d}/y"),
            &format!("{d}/y"),
            "--ro-bind",
            &format!("{d}/x/bin"),
            &format!("{d}/x/bin"),
            "--ro-bind",
            &format!("{d}/y/real"),
            &format!("{d}/y/real"),
        ],
    );
    assert_eq!(l, want);
    assert_eq!(done.folders, vec![format!("{d}/x/bin/bwrap")]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_absent_name_gets_a_placeholder_and_the_keepers_folder_is_hidden() {
    let dir = folder("absent");
    let keeper = dir.join("y");
    std::fs::set_permissions(&keeper, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let mut l = line(&dir);
    let done = protect(
        &mut l,
        &[dir.join("x/bin/bwrap"), dir.join("none/bwrap")],
        Some(&keeper),
    )
    .unwrap();
    let d = s(&dir);
    let want = with(
        &dir,
        &[
            "--bind",
            &format!("{d}/x"),
            &format!("{d}/x"),
            "--bind",
            &format!("{d}/x/bin"),
            &format!("{d}/x/bin"),
            "--ro-bind",
            &format!("{d}/y/empty"),
            &format!("{d}/y"),
            "--ro-bind",
            "/dev/null",
            &format!("{d}/none/bwrap"),
            "--ro-bind",
            "/dev/null",
            &format!("{d}/x/bin/bwrap"),
        ],
    );
    assert_eq!(l, want);
    assert!(done.hidden);
    assert_eq!(done.absent.len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nothing_is_added_where_no_writable_bind_shows_the_route() {
    let dir = folder("covered");
    let shim = dir.join("x/bin/bwrap");
    std::fs::write(&shim, "").unwrap();
    // The folder bound read-only after the writable bind: covered.
    let d = s(&dir);
    let mut l = words(&[
        "--bind",
        &d,
        &d,
        "--ro-bind",
        &format!("{d}/x"),
        &format!("{d}/x"),
        "--",
        "true",
    ]);
    let before = l.clone();
    let done = protect(&mut l, std::slice::from_ref(&shim), None).unwrap();
    assert_eq!(l, before);
    assert!(
        done.note().contains("nothing on the way is writable"),
        "{}",
        done.note()
    );
    // Not under any writable bind: the keeper's folder is not hidden
    // (the lock's mode keeps a command out; a mount costs 2% of a call).
    let keeper = dir.join("y");
    let mut l = words(&["--ro-bind", "/", "/", "--", "true"]);
    let before = l.clone();
    let done = protect(&mut l, &[shim], Some(&keeper)).unwrap();
    assert_eq!((l, done.hidden), (before, false));
    // An unwalkable line is left alone.
    let mut l = words(&["--frobnicate", "--", "true"]);
    assert!(protect(&mut l, &[], None).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_command_words_naming_a_helper_are_found() {
    let dir = folder("words");
    let ours = dir.join("y/helper");
    std::fs::write(&ours, "").unwrap();
    std::os::unix::fs::symlink(&ours, dir.join("x/bin/apply")).unwrap();
    let cmd = words(&[
        "bash",
        "-c",
        &format!(
            "socat x & {}/x/bin/apply '/bin/bash' -c 'true; {}'",
            s(&dir),
            s(&ours)
        ),
    ]);
    assert_eq!(
        crate::shim::run::words_naming(&cmd, &ours, 64),
        vec![dir.join("x/bin/apply"), ours.clone()]
    );
    assert_eq!(
        crate::shim::run::words_naming(&cmd, &ours, 1),
        vec![dir.join("x/bin/apply")]
    );
    // Another build of the helper, by its name: executable ones only.
    let other = dir.join("y/apply-seccomp");
    std::fs::write(&other, "").unwrap();
    let cmd = words(&["sh", "-c", &format!("{} /bin/sh -c x", s(&other))]);
    assert_eq!(
        crate::shim::run::words_naming(&cmd, &ours, 64),
        Vec::<PathBuf>::new()
    );
    std::fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    assert_eq!(crate::shim::run::words_naming(&cmd, &ours, 64), vec![other]);
    std::fs::remove_dir_all(&dir).unwrap();
}
