//! The packages for people without a Rust toolchain (issue 45): what
//! `./package` builds from this checkout, installed and used as a user
//! would, as root and as uid 65534: the Debian package with dpkg (its
//! man page, `--setup` pointing srt at `/usr/bin` and the root-owned shim,
//! srt running a command through both, and nothing left once removed),
//! the npm package with `npm install -g` offline and without a compiler
//! (the settings naming the binary, not the launcher). Nothing is
//! published; the aarch64 package's binary runs the aarch64 VM's suite
//! (tests/vm.rs).

mod common;

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::package::{self, VERSION};
use common::{User, fixture, skip, stderr, stdout, uid_of, users, which};

/// The packages, in the full suite: `./package`'s nested release builds
/// of both architectures, and tests that install system-wide.
fn dist() -> Option<&'static Path> {
    if !common::in_full_suite("./package's release builds, and installs system-wide") {
        return None;
    }
    package::dist().map_err(|why| skip(&why)).ok()
}

/// What `--version` of a packaged binary says.
fn version_line() -> String {
    format!(
        "apply-seccomp {VERSION} (commit {}{})\n",
        package::commit(),
        if package::modified() {
            ", modified"
        } else {
            ""
        }
    )
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("run")
}

fn ok(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}{}",
        out.status,
        stdout(out),
        stderr(out)
    );
    stdout(out)
}

/// A fresh folder owned by `user`, under the world-readable fixture.
fn owned(user: User, name: &str) -> PathBuf {
    let dir = common::fresh_folder(&format!("{name}-{user:?}"));
    if let Some(u) = uid_of(user) {
        std::os::unix::fs::chown(&dir, Some(u), Some(u)).unwrap();
    }
    dir
}

/// `program args` as `user`, with only `env` (and `HOME`) in its
/// environment, in `dir`.
fn as_user(user: User, home: &Path, dir: &Path, env: &[(&str, &str)], program: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("HOME", home)
        .env("TMPDIR", common::client_tmp())
        .envs(env.iter().copied())
        .current_dir(dir);
    if let Some(u) = uid_of(user) {
        cmd.uid(u).gid(u);
    }
    cmd
}

const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// `srt -s HOME/.srt-settings.json -c 'echo ...'` as `user` under
/// SRT_DEBUG: Err(why) unless the command ran through this helper (its
/// entry line) and its bwrap shim (the shim's lines), with srt naming
/// `apply_path`.
fn srt_runs_through_it(user: User, home: &Path, apply_path: &Path) -> Result<(), String> {
    let srt = common::srt_package().expect("checked by the caller");
    let project = common::srt_cli::project(user, "package");
    let out = run(as_user(
        user,
        home,
        &project,
        &[("PATH", SYSTEM_PATH), ("SRT_DEBUG", "1")],
        &srt.join("node_modules/.bin/srt"),
    )
    .arg("-s")
    .arg(home.join(".srt-settings.json"))
    .args(["-c", "echo sandboxed as $(id -u) in pid $$"]));
    let (o, e) = (stdout(&out), stderr(&out));
    let want_uid = uid_of(user).unwrap_or_else(nix_uid);
    let checks = [
        (out.status.success(), "exit 0".to_string()),
        (
            o.contains(&format!("sandboxed as {want_uid} in pid 2")),
            "the command's line (pid 2: its own PID namespace)".into(),
        ),
        (
            e.contains(&format!(
                "Using apply-seccomp binary from explicit path: {}",
                apply_path.display()
            )),
            format!("srt naming {}", apply_path.display()),
        ),
        (
            e.contains("apply-seccomp: bwrap shim: real bubblewrap"),
            "the shim's line".into(),
        ),
        (
            e.contains("apply-seccomp: entry: ") && e.contains("apply-seccomp: filters: "),
            "the helper's lines".into(),
        ),
    ];
    match checks.iter().find(|(held, _)| !held) {
        Some((_, what)) => Err(format!("no {what}:\n{o}{e}")),
        None => Ok(()),
    }
}

fn nix_uid() -> u32 {
    std::fs::metadata("/proc/self").unwrap().uid()
}

/// The settings `--setup` wrote in `home`: (applyPath, bwrapPath).
fn settings(home: &Path) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(home.join(".srt-settings.json")).unwrap();
    let value = |key: &str| {
        let at = text
            .find(&format!("\"{key}\": \""))
            .unwrap_or_else(|| panic!("{key} in {text}"));
        let rest = &text[at + key.len() + 5..];
        PathBuf::from(&rest[..rest.find('"').unwrap()])
    };
    (value("applyPath"), value("bwrapPath"))
}

fn is_elf(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.starts_with(b"\x7fELF"))
}

#[test]
fn the_packages_hold_static_binaries_of_each_architecture() {
    let Some(dist) = dist() else { return };
    let sums = ok(
        "sha256sum -c",
        &run(Command::new("sha256sum")
            .arg("-c")
            .arg("SHA256SUMS")
            .current_dir(dist)),
    );
    let names = [
        format!("apply-seccomp_{VERSION}_amd64.deb"),
        format!("apply-seccomp_{VERSION}_arm64.deb"),
        format!("apply-seccomp-{VERSION}.tgz"),
    ];
    for name in &names {
        assert!(sums.contains(&format!("{name}: OK")), "{sums}");
    }
    let dir = common::fresh_folder("binaries");
    for (arch, native, kind) in [
        ("amd64", "x86_64", "x86-64"),
        ("arm64", "aarch64", "ARM aarch64"),
    ] {
        let from_deb = dir.join(format!("deb-{arch}"));
        package::extract_deb(
            &package::deb(dist, arch),
            "./usr/bin/apply-seccomp",
            &from_deb,
            0o755,
        );
        let from_npm = dir.join(format!("npm-{arch}"));
        package::extract_tgz(
            &package::tgz(dist),
            &format!("package/native/{native}/apply-seccomp"),
            &from_npm,
            0o755,
        );
        assert_eq!(
            std::fs::read(&from_deb).unwrap(),
            std::fs::read(&from_npm).unwrap()
        );
        let file = ok("file", &run(Command::new("file").arg("-b").arg(&from_deb)));
        assert!(file.contains(kind), "{arch}: {file}");
        assert!(
            file.contains("statically linked") || file.contains("static-pie linked"),
            "{arch}: {file}"
        );
    }
    // This machine's binary names the commit it was built from.
    let native = dir.join("deb-amd64");
    assert_eq!(
        ok("--version", &run(Command::new(&native).arg("--version"))),
        version_line()
    );
}

#[test]
fn the_debian_packages_hold_what_users_look_for() {
    let Some(dist) = dist() else { return };
    for arch in ["amd64", "arm64"] {
        let deb = package::deb(dist, arch);
        let info = ok(
            "dpkg-deb -f",
            &run(Command::new("dpkg-deb").arg("-f").arg(&deb)),
        );
        for line in [
            "Package: apply-seccomp".to_string(),
            format!("Version: {VERSION}"),
            format!("Architecture: {arch}"),
            "Depends: bubblewrap".into(),
        ] {
            assert!(info.lines().any(|l| l == line), "{line} in {info}");
        }
        // Installing changes no user's settings (no script runs then);
        // removing takes back each user's --setup first (prerm, issue 58).
        let control = ok(
            "dpkg-deb -I",
            &run(Command::new("dpkg-deb").arg("-I").arg(&deb)),
        );
        for script in ["preinst", "postinst", "postrm", "conffiles"] {
            assert!(!control.contains(script), "{arch}: {script} in {control}");
        }
        assert!(control.contains(" prerm "), "{arch}: no prerm in {control}");
        let list = ok(
            "dpkg-deb -c",
            &run(Command::new("dpkg-deb").arg("-c").arg(&deb)),
        );
        let entry = |path: &str| {
            list.lines()
                .find(|l| l.split_whitespace().nth(5) == Some(path))
                .unwrap_or_else(|| panic!("{path} in {list}"))
                .to_string()
        };
        assert!(entry("./usr/bin/apply-seccomp").starts_with("-rwxr-xr-x root/root"));
        let shim = entry("./usr/lib/apply-seccomp/bwrap");
        assert!(shim.starts_with("lrwxrwxrwx root/root"), "{shim}");
        assert!(shim.ends_with("-> ../../bin/apply-seccomp"), "{shim}");
        entry("./usr/share/man/man1/apply-seccomp.1.gz");
        entry("./usr/share/doc/apply-seccomp/copyright");
        entry("./usr/share/doc/apply-seccomp/docs/setup.md");
        // The shim's folder holds the shim alone.
        let in_shim_dir = list
            .lines()
            .filter(|l| l.contains("./usr/lib/apply-seccomp/"))
            .count();
        assert_eq!(in_shim_dir, 2, "{list}");
        assert!(list.lines().all(|l| l.contains(" root/root ")), "{list}");
    }
}

#[test]
fn lintian_has_nothing_to_say_but_the_explained() {
    let Some(dist) = dist() else { return };
    if which("lintian").is_none() {
        skip("lintian is not installed (./setup installs it)");
        return;
    }
    // Its temporary files in the fixture's folder: lintian leaves two
    // (`mldbm-elf-*`) in `$TMPDIR` each run.
    let tmp = common::fresh_folder("lintian-tmp");
    for arch in ["amd64", "arm64"] {
        let out = run(Command::new("lintian")
            .args(["--fail-on", "error,warning", "--tag-display-limit", "0"])
            .arg(package::deb(dist, arch))
            .env("TMPDIR", &tmp));
        // Overridden tags (pkg/debian/lintian-overrides, each explained)
        // print nothing; any other error or warning fails.
        assert!(
            out.status.success(),
            "{arch}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(
            !stdout(&out)
                .lines()
                .any(|l| l.starts_with("E:") || l.starts_with("W:")),
            "{}",
            stdout(&out)
        );
    }
}

#[test]
fn the_npm_package_has_no_install_script_and_both_binaries() {
    let Some(dist) = dist() else { return };
    let tgz = package::tgz(dist);
    let list = ok("tar -tv", &run(Command::new("tar").arg("-tvzf").arg(&tgz)));
    for (path, mode) in [
        ("package/bin/apply-seccomp", "-rwxr-xr-x"),
        ("package/native/x86_64/apply-seccomp", "-rwxr-xr-x"),
        ("package/native/aarch64/apply-seccomp", "-rwxr-xr-x"),
        ("package/man/apply-seccomp.1", "-rw-r--r--"),
        ("package/package.json", "-rw-r--r--"),
    ] {
        let line = list
            .lines()
            .find(|l| l.ends_with(&format!(" {path}")))
            .unwrap_or_else(|| panic!("{path} in {list}"));
        assert!(line.starts_with(mode), "{line}");
    }
    let json = ok(
        "tar -xO",
        &run(Command::new("tar")
            .arg("-xzOf")
            .arg(&tgz)
            .arg("package/package.json")),
    );
    assert!(
        json.contains(&format!("\"version\": \"{VERSION}\"")),
        "{json}"
    );
    assert!(
        json.contains("\"bin\": { \"apply-seccomp\": \"bin/apply-seccomp\" }"),
        "{json}"
    );
    // No install script of any kind: npm runs none, needs no compiler.
    assert!(!json.contains("\"scripts\""), "{json}");
    assert!(!list.contains("binding.gyp"), "{list}");
}

/// Purges the package when the test ends, however it ends.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = run(Command::new("dpkg").args(["-P", "apply-seccomp"]));
    }
}

fn dpkg_knows_it() -> bool {
    run(Command::new("dpkg").args(["-s", "apply-seccomp"]))
        .status
        .success()
}

#[test]
fn the_deb_installs_sets_up_srt_runs_and_leaves_nothing() {
    let Some(dist) = dist() else { return };
    if !common::is_root() {
        skip("not root: dpkg -i needs root");
        return;
    }
    if dpkg_knows_it() {
        skip("apply-seccomp is installed by dpkg on this machine: this test would remove it");
        return;
    }
    let deb = fixture().dir.join("apply-seccomp.deb");
    common::install(&package::deb(dist, "amd64"), &deb, 0o644);
    let _purge = Installed;
    ok("dpkg -i", &run(Command::new("dpkg").arg("-i").arg(&deb)));
    assert_eq!(
        ok(
            "man -w",
            &run(Command::new("man").args(["-w", "apply-seccomp"]))
        ),
        "/usr/share/man/man1/apply-seccomp.1.gz\n"
    );
    let page = ok(
        "man",
        &run(Command::new("man")
            .args(["-P", "cat", "apply-seccomp"])
            .env("MANWIDTH", "80")),
    );
    assert!(page.contains("REFUSED CALLS"), "{page}");
    let binary = Path::new("/usr/bin/apply-seccomp");
    let shim = Path::new("/usr/lib/apply-seccomp/bwrap");
    // Root's home as its passwd entry names it, where tests/runner made
    // that a temporary folder: the package's prerm finds users there.
    let root_home = common::runner_root_home();
    for user in users() {
        let home = match (&root_home, user) {
            (Some(h), User::Root) => h.clone(),
            _ => owned(user, "deb-home"),
        };
        let out = ok(
            "--setup --srt",
            &run(
                as_user(user, &home, &home, &[("PATH", SYSTEM_PATH)], binary)
                    .args(["--setup", "--srt"]),
            ),
        );
        assert!(
            out.contains("unchanged /usr/lib/apply-seccomp/bwrap -> /usr/bin/apply-seccomp"),
            "{out}"
        );
        assert!(
            out.contains("ok       install: the Debian package apply-seccomp"),
            "{out}"
        );
        assert_eq!(settings(&home), (binary.into(), shim.into()), "{user:?}");
        // No link of the user's: the package's shim is root's.
        assert!(!home.join(".local/lib").exists(), "{out}");
        if common::srt_package().is_some() {
            if let Err(e) = srt_runs_through_it(user, &home, binary) {
                panic!("{user:?}: srt through the Debian package: {e}");
            }
        }
        // Uid 65534 has no home the prerm can find (/nonexistent): it
        // undoes by hand, as docs/setup.md says.
        if root_home.is_none() || user != User::Root {
            ok(
                "--setup --undo",
                &run(
                    as_user(user, &home, &home, &[("PATH", SYSTEM_PATH)], binary)
                        .args(["--setup", "--undo"]),
                ),
            );
            let left = std::fs::read_to_string(home.join(".srt-settings.json")).unwrap_or_default();
            assert!(!left.contains("applyPath"), "{left}");
        }
    }
    let files = ok(
        "dpkg -L",
        &run(Command::new("dpkg").args(["-L", "apply-seccomp"])),
    );
    // Issue 58: removed with root's --setup in place, the prerm takes it
    // back first; srt then runs its bundled helper, not a missing shim.
    let removed = ok(
        "dpkg -r",
        &run(Command::new("dpkg").args(["-r", "apply-seccomp"])),
    );
    if let Some(home) = &root_home {
        assert!(
            removed
                .contains("apply-seccomp: for root, taking back what apply-seccomp --setup set:"),
            "{removed}"
        );
        let left = std::fs::read_to_string(home.join(".srt-settings.json")).unwrap_or_default();
        assert!(!left.contains("/usr/lib/apply-seccomp"), "{left}");
        assert!(!left.contains("applyPath"), "{left}");
        if let Some(package) = common::srt_package() {
            let out = run(as_user(
                User::Root,
                home,
                home,
                &[(
                    "PATH",
                    &format!(
                        "{SYSTEM_PATH}:{}",
                        package.join("node_modules/.bin").display()
                    ),
                )],
                &package.join("node_modules/.bin/srt"),
            )
            .args(["-c", "echo ran"]));
            let said = ok("srt after the removal", &out);
            assert!(said.lines().any(|l| l == "ran"), "{said}");
        }
    } else {
        skip("not run through tests/runner: the prerm's undo of root's --setup is not tried");
    }
    let left: Vec<&str> = files
        .lines()
        .filter(|f| std::fs::symlink_metadata(f).is_ok_and(|m| !m.is_dir()))
        .collect();
    assert!(left.is_empty(), "left by dpkg -r: {left:?}");
    assert!(!Path::new("/usr/lib/apply-seccomp").exists());
    assert!(!Path::new("/usr/share/doc/apply-seccomp").exists());
    ok(
        "dpkg -P",
        &run(Command::new("dpkg").args(["-P", "apply-seccomp"])),
    );
    let info: Vec<_> = std::fs::read_dir("/var/lib/dpkg/info")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("apply-seccomp."))
        .collect();
    assert!(info.is_empty(), "dpkg's records left: {info:?}");
    assert!(!dpkg_knows_it());
    // The README's way: apt, which would also pull in bubblewrap.
    if which("apt").is_some() {
        let out = run(Command::new("apt")
            .args(["install", "-y", "--no-install-recommends"])
            .arg(&deb)
            .env("DEBIAN_FRONTEND", "noninteractive"));
        ok("apt install ./apply-seccomp.deb", &out);
        let installed = run(Command::new("/usr/bin/apply-seccomp").arg("--version"));
        assert_eq!(ok("--version", &installed), version_line());
        ok(
            "dpkg -P",
            &run(Command::new("dpkg").args(["-P", "apply-seccomp"])),
        );
        assert!(!dpkg_knows_it());
    }
}

#[test]
fn the_npm_package_installs_offline_without_a_compiler_and_srt_runs_the_binary() {
    let Some(dist) = dist() else { return };
    let (Some(node), Some(npm)) = (which("node"), which("npm")) else {
        skip("node and npm are not installed (./setup installs them)");
        return;
    };
    let (Some(setpriv), Some(unshare)) = (which("setpriv"), which("unshare")) else {
        skip("setpriv and unshare (util-linux) are not installed");
        return;
    };
    let tgz = fixture().dir.join(format!("apply-seccomp-{VERSION}.tgz"));
    common::install(&package::tgz(dist), &tgz, 0o644);
    // A PATH of node and npm alone: no compiler, no shell tool.
    let tools = common::fresh_folder("npm-tools");
    for (name, at) in [("node", &node), ("npm", &npm)] {
        std::os::unix::fs::symlink(std::fs::canonicalize(at).unwrap(), tools.join(name)).unwrap();
    }
    for user in users() {
        let prefix = owned(user, "npm-prefix");
        let home = owned(user, "npm-home");
        let _undo = common::UndoSetup(user, home.clone());
        // No network: a network namespace of its own (root), or none
        // reachable (an unprivileged runner).
        let mut install = if common::is_root() {
            let mut c = Command::new(&unshare);
            c.args(["-n", "--"]);
            if let Some(u) = uid_of(user) {
                c.arg(&setpriv)
                    .args(["--reuid", &u.to_string(), "--regid", &u.to_string()])
                    .args(["--clear-groups", "--"]);
            }
            c.arg(tools.join("npm"));
            c
        } else {
            Command::new(tools.join("npm"))
        };
        install
            .env_clear()
            .env("HOME", &home)
            .env("PATH", &tools)
            .env("npm_config_registry", "http://127.0.0.1:9/")
            .args([
                "install",
                "-g",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--prefix",
            ])
            .arg(&prefix)
            .arg(&tgz)
            .current_dir(&home);
        ok("npm install -g", &run(&mut install));
        let launcher = prefix.join("bin/apply-seccomp");
        let native = prefix.join("lib/node_modules/apply-seccomp/native/x86_64/apply-seccomp");
        let path = format!("{}:{SYSTEM_PATH}", prefix.join("bin").display());
        let env = [("PATH", path.as_str())];
        assert_eq!(
            ok(
                "--version",
                &run(as_user(user, &home, &home, &env, &launcher).arg("--version"))
            ),
            version_line()
        );
        let out = ok(
            "--setup --srt",
            &run(as_user(user, &home, &home, &env, &launcher).args(["--setup", "--srt"])),
        );
        assert!(
            out.contains("ok       install: the npm package apply-seccomp"),
            "{out}"
        );
        // The settings name the binary itself, never the launcher.
        let (apply, bwrap) = settings(&home);
        assert_eq!(apply, native, "{out}");
        assert!(is_elf(&apply));
        assert_eq!(bwrap, home.join(".local/lib/apply-seccomp/bwrap"));
        assert_eq!(std::fs::canonicalize(&bwrap).unwrap(), native);
        assert!(!is_elf(&launcher), "the launcher is a script");
        if common::srt_package().is_some() {
            if let Err(e) = srt_runs_through_it(user, &home, &native) {
                panic!("{user:?}: srt through the npm package: {e}");
            }
            // What a sandboxed command's start executes: the binary, as
            // the shim and as the helper, and never the launcher (a
            // shell's start, 2.3 ms a run here; Node's would be 58 ms).
            let execs = srt_execs(user, &home);
            let count = |path: &Path| {
                execs
                    .iter()
                    .filter(|l| l.contains(&format!("execve(\"{}\"", path.display())))
                    .count()
            };
            let package_launcher = prefix.join("lib/node_modules/apply-seccomp/bin/apply-seccomp");
            assert_eq!(count(&launcher) + count(&package_launcher), 0, "{execs:#?}");
            // srt asks `bwrap --version` first, then runs the line.
            assert_eq!(count(&bwrap), 2, "the shim: {execs:#?}");
            assert_eq!(count(&native), 1, "the helper: {execs:#?}");
        }
    }
}

/// The programs srt's run of a command executed (`strace -f -e execve`),
/// one line each.
fn srt_execs(user: User, home: &Path) -> Vec<String> {
    let Some(strace) = which("strace") else {
        skip("strace is not installed (./setup installs it)");
        return Vec::new();
    };
    let srt = common::srt_package().expect("checked by the caller");
    let project = common::srt_cli::project(user, "package-execs");
    let log = owned(user, "execs").join("log");
    let out = run(
        as_user(user, home, &project, &[("PATH", SYSTEM_PATH)], &strace)
            .args(["-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o"])
            .arg(&log)
            .arg(srt.join("node_modules/.bin/srt"))
            .arg("-s")
            .arg(home.join(".srt-settings.json"))
            .args(["-c", "true"]),
    );
    ok("strace srt", &out);
    let text = std::fs::read_to_string(&log).unwrap();
    text.lines()
        .filter(|l| l.contains("execve(") && !l.contains("= -1 "))
        .map(str::to_string)
        .collect()
}
