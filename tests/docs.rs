//! The documents stay true: no broken relative link in any Markdown file,
//! a man page that names every option the binary accepts and every
//! variable it reads and renders without a warning, a README that stays
//! a front door, and the README's quick start run as written on a fresh
//! copy of the project.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;

fn project() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(project().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The text without fenced code blocks and inline code spans, where a
/// `](...)` is not a link.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// The targets of the inline links `[text](target)`.
fn links(text: &str) -> Vec<String> {
    let p = prose(text);
    let mut out = Vec::new();
    let mut rest = p.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].trim().to_string());
        }
    }
    out
}

/// A heading's anchor as GitHub makes it: lower case, code marks and
/// punctuation other than `-` and `_` dropped, spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#'));
        let n = out
            .iter()
            .filter(|a| **a == base || a.starts_with(&format!("{base}-")))
            .count();
        out.push(if n == 0 { base } else { format!("{base}-{n}") });
    }
    out
}

/// The links of `file` (text `text`) that lead nowhere: a missing file,
/// or a missing heading in a Markdown file.
fn broken_links(file: &Path, text: &str) -> Vec<String> {
    let mut broken = Vec::new();
    for target in links(text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let dest = if path.is_empty() {
            file.to_path_buf()
        } else {
            file.parent().unwrap().join(path)
        };
        if !dest.exists() {
            broken.push(format!("{target}: no such file"));
            continue;
        }
        if let Some(a) = anchor
            && dest.extension().is_some_and(|x| x == "md")
        {
            let there = std::fs::read_to_string(&dest).unwrap();
            if !anchors(&there).iter().any(|h| h == a) {
                broken.push(format!("{target}: no such heading"));
            }
        }
    }
    broken
}

#[test]
fn no_broken_relative_link_in_any_markdown_file() {
    let files = files_under(project(), "md");
    assert!(files.len() >= 10, "found only {files:?}");
    let mut broken = Vec::new();
    let mut count = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        count += links(&text).len();
        for b in broken_links(f, &text) {
            broken.push(format!(
                "{}: {b}",
                f.strip_prefix(project()).unwrap().display()
            ));
        }
    }
    assert!(count >= 40, "only {count} links found: the scan is broken");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_check_sees_a_missing_file_and_a_missing_heading() {
    let dir = fresh_folder("links");
    std::fs::write(dir.join("b.md"), "# B title\n\n## `--x` y: z\n").unwrap();
    let a = dir.join("a.md");
    let text = "see [b](b.md), [y](b.md#--x-y-z), [gone](c.md), [no](b.md#nope), \
                `[code](c.md)`, [web](https://example.com/x), [self](#a)\n\n# A\n";
    std::fs::write(&a, text).unwrap();
    assert_eq!(
        broken_links(&a, text),
        ["c.md: no such file", "b.md#nope: no such heading"]
    );
    assert_eq!(
        anchors("# A\n## A\n```\n# no\n```\n## A"),
        ["a", "a-1", "a-2"]
    );
}

/// The string literals of `text`'s code (comments and tests left out)
/// that match `keep`.
fn literals(text: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (i, piece) in line.split('"').enumerate() {
            if i % 2 == 1 && keep(piece) && !out.iter().any(|o| o == piece) {
                out.push(piece.to_string());
            }
        }
    }
    out
}

#[test]
fn man_page_names_every_option_and_variable() {
    // The roff source with its escapes undone: `\-` is a hyphen.
    let man = read("man/apply-seccomp.1").replace("\\-", "-");
    // The options: every `--word` the parsers match (the door's and the run's, the
    // doctor's, --setup's, the race tester's); the others' `--` words are
    // bubblewrap's.
    let mut options = Vec::new();
    for file in [
        "src/cli/mod.rs",
        "src/cli/command.rs",
        "src/doctor/mod.rs",
        "src/setup/options.rs",
        "src/setup/limits.rs",
        "src/race/mod.rs",
    ] {
        for o in literals(&read(file), |s| {
            s.len() > 3
                && s.starts_with("--")
                && s[2..]
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-' || c == '=')
        }) {
            let o = o.trim_end_matches('=').to_string();
            if !options.contains(&o) {
                options.push(o);
            }
        }
    }
    for must in [
        "--way-in",
        "--doctor",
        "--setup",
        "--undo",
        "--race-test",
        "--bwrap-shim",
        "--exec",
    ] {
        assert!(
            options.iter().any(|o| o == must),
            "the scan missed {must}: {options:?}"
        );
    }
    // The variables: every name the code reads from the environment.
    let files = files_under(&project().join("src"), "rs");
    let mut variables = Vec::new();
    for f in files
        .iter()
        .filter(|f| !f.to_string_lossy().contains("/tests"))
    {
        let text = std::fs::read_to_string(f).unwrap();
        for v in literals(&text, |s| {
            ["SRT_", "APPLY_SECCOMP_", "XDG_"]
                .iter()
                .any(|p| s.starts_with(p))
                && s.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        }) {
            if !variables.contains(&v) {
                variables.push(v);
            }
        }
        // Other names read with std::env::var / var_os.
        for call in ["var(\"", "var_os(\""] {
            for piece in text.split(call).skip(1) {
                let name = piece.split('"').next().unwrap_or("");
                if !name.is_empty() && !variables.iter().any(|v| v == name) {
                    variables.push(name.to_string());
                }
            }
        }
    }
    for must in [
        "SRT_DEBUG",
        "APPLY_SECCOMP_LOG",
        "APPLY_SECCOMP_SHIM_VISITED",
        "HOME",
        "PATH",
    ] {
        assert!(
            variables.iter().any(|v| v == must),
            "the scan missed {must}: {variables:?}"
        );
    }
    let missing: Vec<&String> = options
        .iter()
        .chain(&variables)
        .filter(|w| !man.contains(w.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "man/apply-seccomp.1 does not name {missing:?}"
    );
    // Every exit status the helper gives.
    for status in ["125", "126", "127", "128+"] {
        assert!(
            man.contains(status),
            "the man page says nothing of {status}"
        );
    }
}

#[test]
fn man_page_renders_without_warnings() {
    let Some(groff) = which("groff") else {
        skip("groff is not installed (Debian package groff-base)");
        return;
    };
    let page = project().join("man/apply-seccomp.1");
    let out = Command::new(groff)
        .args(["-man", "-ww", "-z", "-Tutf8"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "groff: {}", stderr(&out));
    assert_eq!(stderr(&out), "", "groff warns");
    // As a reader opens it before it is installed.
    let Some(man) = which("man") else {
        skip("man is not installed (Debian package man-db)");
        return;
    };
    let out = Command::new(man)
        .args(["--warnings", "-l"])
        .arg(&page)
        .env("MANWIDTH", "80")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "man -l: {}", stderr(&out));
    assert_eq!(stderr(&out), "", "man -l warns");
    // Bold and underline come as overstrikes (`c\x08c`): keep the last.
    let mut text = String::new();
    for c in stdout(&out).chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    for section in [
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "ENVIRONMENT",
        "EXIT STATUS",
    ] {
        assert!(text.contains(section), "no {section} in:\n{text}");
    }
}

#[test]
fn readme_is_a_front_door_with_a_map_of_docs() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md is {lines} lines (at most about 250)"
    );
    for heading in [
        "## Quick start",
        "## Using it with srt",
        "## Using it with Claude Code",
        "## The doctor",
        "## Exit statuses",
        "## Measured",
        "## Documents",
    ] {
        assert!(readme.contains(heading), "README.md has no {heading:?}");
    }
    // Every document is on the map, and opens saying who it is for.
    for e in std::fs::read_dir(project().join("docs")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            readme.contains(&format!("](docs/{name})")),
            "docs/{name} is not on the README's map"
        );
        let text = std::fs::read_to_string(e.path()).unwrap();
        let first = text
            .split("\n\n")
            .nth(1)
            .unwrap_or_else(|| panic!("docs/{name} is empty"));
        assert!(
            text.starts_with("# ") && first.starts_with("For "),
            "docs/{name} does not open with a title and who it is for"
        );
    }
}

/// Issue 59: docs/performance.md is a document, not a log: at most 220
/// lines, and the dates of its figures said once, before its first
/// section.
#[test]
fn performance_md_dates_its_figures_once_at_the_top() {
    let text = read("docs/performance.md");
    assert!(
        text.lines().count() <= 220,
        "{} lines",
        text.lines().count()
    );
    let body = &text[text.find("\n## ").expect("sections")..];
    let dated: Vec<&str> = body
        .lines()
        .filter(|l| {
            l.as_bytes().windows(10).any(|w| {
                w[..4].iter().all(u8::is_ascii_digit)
                    && w[4] == b'-'
                    && w[5..7].iter().all(u8::is_ascii_digit)
                    && w[7] == b'-'
                    && w[8..].iter().all(u8::is_ascii_digit)
            })
        })
        .collect();
    assert!(dated.is_empty(), "dates below the top: {dated:?}");
}

/// The commands of the `sh` code blocks of `text`'s section `heading`
/// (the whole text for ""), line by line.
fn sh_lines(text: &str, heading: &str) -> Vec<String> {
    let start = text.find(heading).unwrap_or_else(|| panic!("no {heading}"));
    let section = &text[start + heading.len()..];
    let section = if heading.is_empty() {
        section
    } else {
        &section[..section.find("\n## ").unwrap_or(section.len())]
    };
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in section.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line == "```sh";
            continue;
        }
        if in_sh && !line.trim().is_empty() && !line.trim_start().starts_with('#') {
            out.push(line.to_string());
        }
    }
    out
}

#[test]
fn readme_quick_start_works_on_a_fresh_copy() {
    if !in_full_suite("the quick start's ./setup and package lines install system-wide") {
        return;
    }
    if !is_root() {
        skip("the quick start's ./setup installs packages: run as root");
        return;
    }
    let readme = read("README.md");
    let quick = sh_lines(&readme, "## Quick start");
    // Run as written, but for `cargo test` (this is it); the package
    // lines after the source's, as a machine without a toolchain would.
    let version = env!("CARGO_PKG_VERSION");
    let packages = [
        format!("apt install ./dist/apply-seccomp_{version}_amd64.deb "),
        format!("npm install -g ./dist/apply-seccomp-{version}.tgz "),
        "apply-seccomp --setup ".to_string(),
    ];
    let is_package = |l: &str| packages.iter().any(|p| l.starts_with(p.as_str()));
    let package_lines: Vec<&String> = quick.iter().filter(|l| is_package(l)).collect();
    let run: Vec<&String> = quick
        .iter()
        .filter(|l| !l.starts_with("cargo test") && !is_package(l))
        .collect();
    assert_eq!(
        package_lines.len(),
        3,
        "the package lines changed: {quick:?}"
    );
    assert_eq!(
        quick.len(),
        run.len() + 4,
        "what the test leaves out changed: {quick:?}"
    );
    assert!(run.iter().any(|l| l.starts_with("./setup")), "{run:?}");
    assert!(run.iter().any(|l| l.contains("--setup")), "{run:?}");
    // What the README says the run line prints.
    let printed = readme
        .split_once("The first prints `")
        .and_then(|(_, rest)| rest.split_once('`'))
        .expect("the README says what the run line prints")
        .0
        .to_string();
    let claude = sh_lines(&readme, "## Using it with Claude Code");
    let srt = sh_lines(&readme, "## Using it with srt");
    // The set-up guide's commands by hand: the links and srt's check.
    let guide = sh_lines(&read("docs/setup.md"), "");
    assert_eq!(
        guide.len(),
        2,
        "docs/setup.md's commands changed: {guide:?}"
    );
    let lines = Lines {
        run,
        claude,
        srt,
        guide,
        printed,
    };

    // A fresh copy of the project (what git tracks, and new files not
    // ignored), and a fresh home: the cargo registry and rustup shared,
    // nothing else.
    let dir = fresh_folder("quick-start");
    let copy = dir.join("apply-seccomp");
    let listed = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(project())
        .output()
        .unwrap();
    assert!(listed.status.success(), "git ls-files: {}", stderr(&listed));
    for rel in listed.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let rel = Path::new(std::str::from_utf8(rel).unwrap());
        let (from, to) = (project().join(rel), copy.join(rel));
        if from.is_file() {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&from, &to).unwrap();
        }
    }
    // Twice: the default cargo home (`~/.cargo`), then one outside the
    // home folder (`CARGO_HOME`, issue 46: the PATH the user has is the
    // cargo home's `bin`, never `~/.cargo/bin` by name).
    for outside in [false, true] {
        quick_start_in(&dir, &copy, &lines, outside);
    }
    packages_as_written(&dir, &copy, &package_lines);
}

/// The quick start's lines, sorted by where the test runs them.
struct Lines<'a> {
    run: Vec<&'a String>,
    claude: Vec<String>,
    srt: Vec<String>,
    guide: Vec<String>,
    /// What the README says the run line prints.
    printed: String,
}

/// The user's own cargo home: `CARGO_HOME`, else `~/.cargo`.
fn real_cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"))
}

/// The quick start's `run` lines, then the clients' sections' lines, in a
/// fresh home folder under `dir`, for the copy `copy`; with `outside`, a
/// cargo home outside that folder (`CARGO_HOME`).
fn rustup_home() -> PathBuf {
    std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or(PathBuf::from(std::env::var_os("HOME").unwrap()).join(".rustup"))
}

/// A line of the docs run by `bash -c` in `at`, with only `env` (and
/// the quick start's build folder: built once per machine, outside the
/// copy, which is fresh while its build need not be); its output, or the
/// test fails saying so.
fn shell(line: &str, at: &Path, env: &[(&str, std::ffi::OsString)]) -> String {
    let out = Command::new("bash")
        .args(["-c", line])
        .current_dir(at)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("CARGO_TARGET_DIR", common::target_dir().join("quick-start"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        out.status.success(),
        "`{line}` failed ({}; {env:?}):\n{text}",
        out.status
    );
    text
}

fn quick_start_in(dir: &Path, copy: &Path, lines: &Lines, outside: bool) {
    let Lines {
        run,
        claude,
        srt,
        guide,
        printed,
    } = lines;
    let home = dir.join(if outside {
        "home-cargo-outside"
    } else {
        "home"
    });
    let cargo_home = if outside {
        dir.join("cargo-home")
    } else {
        home.join(".cargo")
    };
    let real = real_cargo_home();
    std::fs::create_dir_all(cargo_home.join("bin")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    for shared in ["registry", "git"] {
        if real.join(shared).exists() {
            std::os::unix::fs::symlink(real.join(shared), cargo_home.join(shared)).unwrap();
        }
    }
    // The toolchain's commands (rustup's proxies) in the user's cargo home,
    // as rustup installs them there; the PATH names that folder alone.
    for e in std::fs::read_dir(real.join("bin")).unwrap().flatten() {
        let name = e.file_name();
        if name != "apply-seccomp" && !cargo_home.join("bin").join(&name).exists() {
            std::os::unix::fs::symlink(e.path(), cargo_home.join("bin").join(&name)).unwrap();
        }
    }
    let rustup_home = rustup_home();
    let path = format!(
        "{}:{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        home.join(".local/lib/apply-seccomp").display(),
        cargo_home.join("bin").display(),
    );
    let sh = |line: &str, extra_path: Option<&Path>| {
        let mut p = path.clone();
        if let Some(x) = extra_path {
            p = format!("{p}:{}", x.display());
        }
        let mut env = vec![
            ("HOME", home.clone().into_os_string()),
            ("PATH", p.into()),
            ("RUSTUP_HOME", rustup_home.clone().into_os_string()),
        ];
        if outside {
            env.push(("CARGO_HOME", cargo_home.clone().into_os_string()));
        }
        shell(line, copy, &env)
    };
    let mut said = String::new();
    for line in run {
        said += &sh(line, None);
    }
    // ./setup says what each package is for, and the next step whole.
    assert!(
        said.contains("setup: bubblewrap ") && said.contains(" the sandbox the helper runs in\n"),
        "{said}"
    );
    assert!(
        said.contains("setup: done; now: cargo install --path . && apply-seccomp --setup\n"),
        "{said}"
    );
    // Issue 58: srt's Node.js (>= 22.12) is there after ./setup, said so.
    assert!(
        said.contains(" there (srt asks for >= 22.12)\n")
            || said.contains(": installed (/usr/local/bin/node)\n"),
        "{said}"
    );
    assert!(said.contains("verdict: ok"), "--setup's doctor:\n{said}");
    assert!(
        said.contains(&format!("\n{printed}\n")),
        "the run line does not print what the README says ({printed:?}):\n{said}"
    );
    // The binary --setup named is the one cargo installed, in that home.
    let settings = std::fs::read_to_string(home.join(".srt-settings.json")).unwrap();
    assert!(
        settings.contains(&format!(
            "\"applyPath\": \"{}\"",
            cargo_home.join("bin/apply-seccomp").display()
        )),
        "{settings}"
    );
    // The link the Claude Code section makes (--setup made it already:
    // running it again must change nothing), and the shim answers as it.
    for line in claude {
        sh(line, None);
    }
    let shim = sh("SRT_DEBUG=1 bwrap --version", None);
    assert!(
        shim.contains("apply-seccomp: bwrap shim: real bubblewrap"),
        "{shim}"
    );
    // srt, pointed at the helper by --setup, runs it: the README's check.
    let Some(package) = srt_package() else {
        return;
    };
    assert_eq!(srt.len(), 1, "{srt:?}");
    for line in srt.iter().chain(guide.iter()) {
        let said = sh(line, Some(&package.join("node_modules/.bin")));
        if line.contains("SRT_DEBUG=1 srt") {
            assert!(said.contains("apply-seccomp: entry: "), "{said}");
            assert!(said.contains("apply-seccomp: filters: "), "{said}");
        }
    }
}

/// Purges the Debian package when dropped (a failed assertion included).
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        let _ = Command::new("dpkg")
            .args(["-P", "apply-seccomp"])
            .stdin(Stdio::null())
            .output();
    }
}

/// Issue 58: the quick start's package lines as written. Whoever has the
/// toolchain runs `./package` in the copy (`./setup` ran there already);
/// the machine without one gets `dist/` in a folder of its own, and runs
/// the lines from there: the `.deb` with `apt`, `--setup`, then `apt
/// remove` (its prerm takes the setup back), then the npm package with
/// `npm install -g` (into a prefix of the test's) and `--setup`, undone.
/// As root, whose passwd home is the runner's temporary one (the prerm
/// finds users by it).
fn packages_as_written(dir: &Path, copy: &Path, lines: &[&String]) {
    if which("apt").is_none() || which("npm").is_none() {
        skip("apt and npm are needed for the README's package lines");
        return;
    }
    let Some(home) = runner_root_home() else {
        skip("not run through tests/runner (cargo test does): root's home would be the real one");
        return;
    };
    let dpkg_has_it = |p: &str| {
        Command::new("dpkg")
            .args(["-s", p])
            .stdin(Stdio::null())
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if dpkg_has_it("apply-seccomp") {
        skip("apply-seccomp is installed by dpkg here: the package lines would replace it");
        return;
    }
    let npm_prefix = dir.join("npm-global");
    let machine = dir.join("machine");
    // The machine without a toolchain: no cargo home on its PATH (where
    // an apply-seccomp of cargo's would come first); the npm prefix's bin.
    // The one with it: the user's cargo and rustup homes.
    let system = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    let machine_path = format!("{}/bin:{system}", npm_prefix.display());
    let toolchain_path = format!("{}:{system}", real_cargo_home().join("bin").display());
    let rustup_home = rustup_home();
    let sh_with = |line: &str, at: &Path, toolchain: bool| {
        let mut env = vec![
            ("HOME", home.clone().into_os_string()),
            ("npm_config_prefix", npm_prefix.clone().into_os_string()),
            (
                "npm_config_cache",
                common::target_dir().join("npm-cache").into_os_string(),
            ),
            ("DEBIAN_FRONTEND", "noninteractive".into()),
        ];
        if toolchain {
            env.extend([
                ("PATH", toolchain_path.clone().into()),
                ("CARGO_HOME", real_cargo_home().into_os_string()),
                ("RUSTUP_HOME", rustup_home.clone().into_os_string()),
            ]);
        } else {
            env.push(("PATH", machine_path.clone().into()));
        }
        shell(line, at, &env)
    };
    let sh = |line: &str, at: &Path| sh_with(line, at, false);
    sh_with("./package", copy, true);
    std::fs::create_dir_all(machine.join("dist")).unwrap();
    for e in std::fs::read_dir(copy.join("dist")).unwrap().flatten() {
        std::fs::copy(e.path(), machine.join("dist").join(e.file_name())).unwrap();
    }
    let [apt, npm, setup] = [lines[0], lines[1], lines[2]];
    assert!(
        apt.starts_with("apt install") && npm.starts_with("npm install"),
        "{lines:?}"
    );
    let applied = || std::fs::read_to_string(home.join(".srt-settings.json")).unwrap_or_default();

    let purge = Purge;
    sh(apt, &machine);
    let said = sh(setup, &machine);
    assert!(said.contains("verdict: ok"), "{said}");
    assert!(
        applied().contains("\"applyPath\": \"/usr/bin/apply-seccomp\""),
        "{}",
        applied()
    );
    let removed = sh("apt remove -y apply-seccomp", &machine);
    assert!(
        removed.contains("apply-seccomp: for root, taking back what apply-seccomp --setup set:"),
        "{removed}"
    );
    assert!(!applied().contains("apply-seccomp"), "left: {}", applied());
    drop(purge);
    assert!(!dpkg_has_it("apply-seccomp"));

    sh(npm, &machine);
    let said = sh(setup, &machine);
    assert!(said.contains("verdict: ok"), "{said}");
    assert!(
        applied().contains(&npm_prefix.display().to_string()),
        "{}",
        applied()
    );
    sh("apply-seccomp --undo", &machine);
    assert!(!applied().contains("apply-seccomp"), "left: {}", applied());
    sh("npm uninstall -g apply-seccomp", &machine);
    assert!(!npm_prefix.join("bin/apply-seccomp").exists());
}

/// Issue 46: a skip is seen in a plain `cargo test`, whose harness
/// captures what a passing test prints: the `SKIP` line goes past it, with
/// the test's name and the count in its file.
#[test]
fn a_skip_is_seen_without_nocapture() {
    if std::env::var_os("APPLY_SECCOMP_SKIP_DEMO").is_some() {
        skip("a demonstration");
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_skip_is_seen_without_nocapture",
            "--test-threads",
            "1",
        ])
        .env("APPLY_SECCOMP_SKIP_DEMO", "1")
        .env_remove("APPLY_SECCOMP_MUST_WORK")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "SKIP (1 in tests/docs.rs): a_skip_is_seen_without_nocapture: a demonstration\n"
        ),
        "{err}"
    );
}

/// Issue 46: a test binary's folder under /tmp (the binary copies, srt's
/// install: tens of MB) is gone once the binary has exited.
#[test]
fn a_test_binary_leaves_no_folder_in_tmp() {
    if std::env::var_os("APPLY_SECCOMP_FIXTURE_DEMO").is_some() {
        use std::io::Write;
        let line = format!("fixture: {}\n", fixture().dir.display());
        let _ = std::io::stdout().write_all(line.as_bytes());
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_test_binary_leaves_no_folder_in_tmp",
            "--test-threads",
            "1",
        ])
        .env("APPLY_SECCOMP_FIXTURE_DEMO", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    let dir = said
        .lines()
        .find_map(|l| l.split("fixture: ").nth(1))
        .unwrap_or_else(|| panic!("{said}"));
    let dir = Path::new(dir);
    assert!(dir.starts_with(std::env::temp_dir()), "{}", dir.display());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while dir.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!dir.exists(), "{} left", dir.display());
}
