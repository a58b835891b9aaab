//! The layout stays what docs/architecture.md says: every
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
fn every_source_file_is_in_the_architecture_document() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    for (rel, _) in all() {
        // `src/a/b.rs`, or `a/b.rs` inside its folder's row.
        let short = rel.strip_prefix("src/").unwrap();
        assert!(
            doc.contains(&format!("`{rel}`")) || doc.contains(&format!("`{short}`")),
            "{rel} is not in docs/architecture.md"
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

/// The top-level modules a module's code names (`crate::x`, `crate::{x, y}`),
/// comments and test code left out: the edges of the import graph.
fn imports(text: &str, modules: &[String]) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())]
                    .split(',')
                    .map(|n| n.trim().split("::").next().unwrap_or(""))
                    .collect(),
                None => vec![
                    rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .next()
                        .unwrap(),
                ],
            };
            for n in names {
                if modules.iter().any(|m| m == n) && !out.iter().any(|o| o == n) {
                    out.push(n.to_string());
                }
            }
        }
    }
    out
}

/// A circle in the graph, as the modules along it, if there is one.
fn circle(edges: &[(String, String)]) -> Option<Vec<String>> {
    fn path(
        from: &str,
        to: &str,
        edges: &[(String, String)],
        seen: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if from == to {
            return Some(vec![to.to_string()]);
        }
        seen.push(from.to_string());
        for (_, b) in edges.iter().filter(|(a, _)| a == from) {
            if !seen.contains(b)
                && let Some(mut rest) = path(b, to, edges, seen)
            {
                rest.insert(0, from.to_string());
                return Some(rest);
            }
        }
        None
    }
    edges.iter().find_map(|(a, b)| {
        path(b, a, edges, &mut Vec::new()).map(|mut back| {
            back.insert(0, a.clone());
            back
        })
    })
}

#[test]
fn no_import_circle_between_modules() {
    // A module is a file or folder under src/ (its submodules are part of
    // it); main.rs is the root, above all. Test code is left out.
    let files: Vec<(String, String)> = all()
        .into_iter()
        .filter(|(rel, _)| {
            rel != "src/main.rs" && !rel.contains("/tests/") && !rel.ends_with("tests.rs")
        })
        .collect();
    let top = |rel: &str| {
        let r = rel.strip_prefix("src/").unwrap();
        r.split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string()
    };
    let mut modules: Vec<String> = files.iter().map(|(r, _)| top(r)).collect();
    modules.sort();
    modules.dedup();
    let mut edges: Vec<(String, String)> = Vec::new();
    for (rel, text) in &files {
        let from = top(rel);
        for to in imports(text, &modules) {
            if to != from && !edges.contains(&(from.clone(), to.clone())) {
                edges.push((from.clone(), to));
            }
        }
    }
    assert!(edges.len() > 20, "the scan found only {edges:?}");
    if let Some(c) = circle(&edges) {
        panic!("an import circle: {}", c.join(" -> "));
    }
}

#[test]
fn the_import_scan_reads_paths_and_finds_circles() {
    let modules = ["cli".to_string(), "error".to_string(), "sys".to_string()];
    let text = "use crate::{cli::X, sys};\n// crate::error in a comment\nfn f() { crate::error::g() }\n#[cfg(test)]\nuse crate::cli;";
    assert_eq!(imports(text, &modules), ["cli", "sys", "error"]);
    let e = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(circle(&[e("a", "b"), e("b", "c")]), None);
    assert_eq!(
        circle(&[e("a", "b"), e("b", "c"), e("c", "a")]).unwrap(),
        ["a", "b", "c", "a"]
    );
}
