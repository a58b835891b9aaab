//! The run's code stays together. `link/run-order.txt` lists, in the order
//! runs first execute them, the functions a run of the helper executes;
//! build.rs hands it to lld (`--symbol-ordering-file`), which lays them out
//! first and together, so a run faults in a few 64 KB windows of the text
//! instead of most of it (docs/performance.md). This test traces real runs
//! of an unstripped release build (`link/trace.c`: a breakpoint on every
//! function, taken out once hit, at the addresses the linker's map gives
//! the shipped, stripped build): on the host and under srt's bubblewrap line, as root
//! and as uid 65534, a command not found, the capability-free way, and the
//! `bwrap` shim keeping a placeholder. It fails when a function they
//! execute is missing from the file (the code moved on; the file did not):
//!
//!     APPLY_SECCOMP_WRITE_ORDER=1 cargo test --test order
//!
//! writes the file anew: these runs' functions, then those it listed that
//! the binary still has (a function only some runs execute stays).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn project() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The release build as shipped (stripped), and the linker's map of it
/// (build.rs). A build that keeps its symbols is not the same build: cargo
/// gives it another `-C metadata`, and every function of this crate
/// another hash in its name, which the ordering file would then list in
/// vain (it did: 103 of 538 names matched the shipped build).
fn shipped_release() -> (PathBuf, PathBuf) {
    let bin = release_build(common::RELEASE, &[], "apply-seccomp-ordered");
    let target = common::target_dir().join(common::RELEASE);
    let map = std::fs::read_dir(&target)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("release/build"))
        .chain([target.join("release/build")])
        .filter_map(|b| std::fs::read_dir(b).ok())
        .flatten()
        .flatten()
        .map(|e| e.path().join("out/apply-seccomp.map"))
        .filter_map(|m| Some((m.metadata().ok()?.modified().ok()?, m)))
        .max()
        .expect("the linker's map (build.rs: rust-lld's -Map)")
        .1;
    (bin, map)
}

/// The binary's functions, by address, from the linker's map: (start,
/// size, name), each a symbol of the `.text` output section.
fn functions(map: &Path) -> Vec<(u64, u64, String)> {
    let text = std::fs::read_to_string(map).expect("the linker's map");
    let mut out_section = String::new();
    let mut f = Vec::new();
    for line in text.lines().skip(1) {
        let w: Vec<&str> = line.split_whitespace().collect();
        let [vma, _, size, _, name] = w.as_slice() else {
            continue;
        };
        let (Ok(vma), Ok(size)) = (u64::from_str_radix(vma, 16), u64::from_str_radix(size, 16))
        else {
            continue;
        };
        // Columns: VMA, LMA, size, alignment, then the output section's
        // name, an input section's (indented once more) or a symbol's
        // (twice more).
        match line.find(name) {
            Some(at) if at < 52 => out_section = name.to_string(),
            Some(at) if at >= 60 && out_section == ".text" => {
                f.push((vma, size, name.to_string()));
            }
            _ => {}
        }
    }
    f.sort();
    f
}

#[test]
fn every_function_a_run_executes_is_in_the_run_order() {
    if !is_root() {
        skip("the traced runs include root's and uid 65534's: run as root");
        return;
    }
    let (Some(gcc), Some(bwrap)) = (which("gcc"), which("bwrap")) else {
        skip("gcc and bubblewrap are needed (Debian packages gcc, bubblewrap)");
        return;
    };
    let dir = fresh_folder("order");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let tracer = dir.join("trace");
    let built = Command::new(gcc)
        .args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&tracer)
        .arg(project().join("link/trace.c"))
        .status()
        .unwrap();
    assert!(built.success(), "gcc link/trace.c");
    let (bin, map) = shipped_release();
    let functions = functions(&map);
    assert!(
        functions.len() > 1000,
        "{} functions: no symbols?",
        functions.len()
    );
    let list = dir.join("functions.txt");
    let text: String = functions
        .iter()
        .map(|(a, _, n)| format!("{a:x} {n}\n"))
        .collect();
    std::fs::write(&list, text).unwrap();

    // A folder of uid 65534's with an absent deny path, for the shim.
    let work = dir.join("work");
    std::fs::create_dir(&work).unwrap();
    std::os::unix::fs::chown(&work, Some(NOBODY), Some(NOBODY)).unwrap();
    let shim_dir = dir.join("shim");
    std::fs::create_dir(&shim_dir).unwrap();
    std::os::unix::fs::symlink(&bin, shim_dir.join("bwrap")).unwrap();
    let w = work.to_str().unwrap();
    let placeholder = format!("{w}/.bashrc");

    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    let b = bin.to_str().unwrap();
    let bw = bwrap.to_str().unwrap();
    let mut bwrap_line = s(&[bw]);
    bwrap_line.extend(s(&BWRAP_OPTIONS));
    bwrap_line.extend(s(&["--", b, "/bin/true"]));
    let mut shim_line = s(&[shim_dir.join("bwrap").to_str().unwrap()]);
    shim_line.extend(s(&BWRAP_OPTIONS));
    shim_line.extend(s(&["--bind", w, w, "--ro-bind", "/dev/null", &placeholder]));
    shim_line.extend(s(&["--", "/bin/true"]));
    // The most frequent first: srt's bubblewrap line as a user.
    let runs: Vec<(&str, User, Vec<String>, i32)> = vec![
        ("bubblewrap, uid 65534", User::Unprivileged, bwrap_line, 0),
        (
            "host, uid 65534",
            User::Unprivileged,
            s(&[b, "/bin/true"]),
            0,
        ),
        ("host, root", User::Root, s(&[b, "/bin/true"]), 0),
        (
            "capability-free",
            User::Unprivileged,
            s(&[b, "--way-in=capability-free", "/bin/true"]),
            0,
        ),
        (
            "not found",
            User::Unprivileged,
            s(&[b, "no-such-command"]),
            127,
        ),
        (
            "the shim keeping a placeholder",
            User::Unprivileged,
            shim_line,
            0,
        ),
    ];
    let mut hot = Vec::new();
    for (i, (what, user, line, status)) in runs.iter().enumerate() {
        let out_file = dir.join(format!("trace-{i}.txt"));
        let mut args = vec![
            b.to_string(),
            list.to_str().unwrap().to_string(),
            out_file.to_str().unwrap().to_string(),
            "--".into(),
        ];
        args.extend(line.iter().cloned());
        // The tracer stays root (a non-dumpable task's memory needs
        // CAP_SYS_PTRACE); the run drops to uid 65534 under it.
        if *user == User::Unprivileged {
            let drop = [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
            ];
            args.splice(4..4, drop.iter().map(|d| d.to_string()));
        }
        let out = command(Place::Host, User::Root, &[], &tracer, &args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(*status), "{what}: {}", stderr(&out));
        let before = hot.len();
        for name in std::fs::read_to_string(&out_file).unwrap().lines() {
            if !hot.iter().any(|h| h == name) {
                hot.push(name.to_string());
            }
        }
        eprintln!(
            "{what}: {} functions, {} new",
            hot.len(),
            hot.len() - before
        );
    }
    assert!(
        !std::path::Path::new(&placeholder).exists(),
        "the shim left its placeholder"
    );
    let size: u64 = functions
        .iter()
        .filter(|f| hot.contains(&f.2))
        .map(|f| f.1)
        .sum();
    eprintln!(
        "{} functions, {size} bytes, executed by these runs",
        hot.len()
    );

    let file = project().join("link/run-order.txt");
    if std::env::var_os("APPLY_SECCOMP_WRITE_ORDER").is_some_and(|v| v == "1") {
        // After these runs' functions, those the file listed that the
        // binary still has: a function some runs execute and others not
        // (a branch taken by timing) stays listed, so one writing does
        // not leave the next check to chance.
        let old = std::fs::read_to_string(&file).unwrap_or_default();
        let mut all = hot.clone();
        for name in old.lines() {
            if !all.iter().any(|h| h == name) && functions.iter().any(|f| f.2 == name) {
                all.push(name.to_string());
            }
        }
        std::fs::write(&file, all.join("\n") + "\n").unwrap();
        eprintln!("wrote {}", file.display());
        return;
    }
    let listed = std::fs::read_to_string(&file).unwrap_or_default();
    let listed: Vec<&str> = listed.lines().collect();
    let missing: Vec<&String> = hot
        .iter()
        .filter(|h| !listed.contains(&h.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of the {} functions these runs execute are not in link/run-order.txt, so the \
         build lays them out away from the rest: {missing:?}; write the file anew with \
         APPLY_SECCOMP_WRITE_ORDER=1 cargo test --test order",
        missing.len(),
        hot.len()
    );
}
