//! The layout stays what the README's architecture section says: every
//! source file is named there, no source file outgrows about 400 lines
//! (unless one concern needs more, listed here with why), only `sys`
//! holds `unsafe`, and every `sys` file says which processes call it.

use std::path::{Path, PathBuf};

const LIMIT: usize = 430;
/// Files allowed past the limit, and why.
const LONGER: [(&str, &str); 1] = [(
    "src/filter/tests.rs",
    "the THREATS decision table of both architectures, one case per row",
)];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn all() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

#[test]
fn every_source_file_is_in_the_readmes_architecture_section() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("## Architecture")
        .expect("an Architecture section");
    let section = &readme[start
        ..readme[start + 3..]
            .find("\n## ")
            .map_or(readme.len(), |e| e + start + 3)];
    for (rel, _) in all() {
        // `src/a/b.rs`, or `a/b.rs` inside its folder's row.
        let short = rel.strip_prefix("src/").unwrap();
        assert!(
            section.contains(&format!("`{rel}`")) || section.contains(&format!("`{short}`")),
            "{rel} is not in the README's architecture section"
        );
    }
}

#[test]
fn no_source_file_outgrows_about_400_lines() {
    for (rel, text) in all() {
        let lines = text.lines().count();
        if let Some((_, why)) = LONGER.iter().find(|(f, _)| *f == rel) {
            assert!(!why.is_empty());
            continue;
        }
        assert!(lines <= LIMIT, "{rel}: {lines} lines (limit {LIMIT})");
    }
}

#[test]
fn only_sys_holds_unsafe_and_says_who_calls_it() {
    for (rel, text) in all() {
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        if rel.starts_with("src/sys/") {
            let head: String = text.lines().take(12).collect::<Vec<_>>().join(" ");
            assert!(
                head.starts_with("//!"),
                "{rel} opens without saying what it is for"
            );
            assert!(
                ["stub", "init", "worker", "race tester", "doctor", "shim"]
                    .iter()
                    .any(|who| head.contains(who)),
                "{rel} does not say which processes call it"
            );
        } else {
            assert!(!code.contains("unsafe {"), "{rel} holds an unsafe block");
            assert!(!code.contains("unsafe fn"), "{rel} holds an unsafe fn");
        }
    }
}
