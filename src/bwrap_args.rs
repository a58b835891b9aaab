//! What a bubblewrap command line asks for: one option table and one walk,
//! for the `bwrap` shim (shim/, which rewrites the command) and the mount
//! guard (guard/, which checks the mounts before the command starts).
//! Pure: unit-tested on the clients' command lines.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

/// How many values each bubblewrap option takes (bubblewrap 0.8-0.12).
fn arity(option: &[u8]) -> Option<usize> {
    Some(match option {
        b"--help"
        | b"--version"
        | b"--level-prefix"
        | b"--unshare-all"
        | b"--share-net"
        | b"--unshare-user"
        | b"--unshare-user-try"
        | b"--unshare-ipc"
        | b"--unshare-pid"
        | b"--unshare-net"
        | b"--unshare-uts"
        | b"--unshare-cgroup"
        | b"--unshare-cgroup-try"
        | b"--disable-userns"
        | b"--assert-userns-disabled"
        | b"--clearenv"
        | b"--new-session"
        | b"--die-with-parent"
        | b"--as-pid-1" => 0,
        b"--args" | b"--argv0" | b"--userns" | b"--userns2" | b"--pidns" | b"--uid" | b"--gid"
        | b"--hostname" | b"--chdir" | b"--unsetenv" | b"--lock-file" | b"--sync-fd"
        | b"--remount-ro" | b"--overlay-src" | b"--tmp-overlay" | b"--ro-overlay"
        | b"--exec-label" | b"--file-label" | b"--proc" | b"--dev" | b"--tmpfs" | b"--mqueue"
        | b"--dir" | b"--seccomp" | b"--add-seccomp-fd" | b"--block-fd" | b"--userns-block-fd"
        | b"--info-fd" | b"--json-status-fd" | b"--cap-add" | b"--cap-drop" | b"--perms"
        | b"--size" => 1,
        b"--setenv" | b"--bind" | b"--bind-try" | b"--dev-bind" | b"--dev-bind-try"
        | b"--ro-bind" | b"--ro-bind-try" | b"--bind-fd" | b"--ro-bind-fd" | b"--file"
        | b"--bind-data" | b"--ro-bind-data" | b"--symlink" | b"--chmod" => 2,
        b"--overlay" => 3,
        _ => return None,
    })
}

/// Whether `option` makes a mount at its last value (its destination):
/// `(optional, restricts)`. Optional: the `-try` forms, which may
/// legitimately be missing. Restricts: the mount takes something away
/// from what lies beneath it (read-only binds, a tmpfs or a new /dev or
/// /proc over a folder, overlays); a read-write bind adds access instead,
/// and losing it takes access away.
fn makes_mount(option: &[u8]) -> Option<(bool, bool)> {
    match option {
        b"--ro-bind" | b"--ro-bind-fd" | b"--ro-bind-data" | b"--proc" | b"--dev" | b"--tmpfs"
        | b"--mqueue" | b"--overlay" | b"--tmp-overlay" | b"--ro-overlay" => Some((false, true)),
        b"--bind" | b"--dev-bind" | b"--bind-fd" | b"--bind-data" => Some((false, false)),
        b"--ro-bind-try" => Some((true, true)),
        b"--bind-try" | b"--dev-bind-try" => Some((true, false)),
        _ => None,
    }
}

/// One mount bubblewrap was asked to make.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// The option, e.g. `--ro-bind`.
    pub option: String,
    /// The source, for the binds (a path, or an fd number); empty otherwise.
    pub source: Vec<u8>,
    /// The destination inside the sandbox, as given.
    pub dest: Vec<u8>,
    /// A `-try` form: the mount may legitimately be missing.
    pub optional: bool,
    /// It restricts what lies beneath (see `makes_mount`).
    pub restricts: bool,
    /// The index of the option on the line; `None` for one read from an
    /// `--args` file.
    pub at: Option<usize>,
}

impl Mount {
    /// The index just past this mount's option and its values on the line
    /// (`None` for one read from an `--args` file).
    pub fn end(&self) -> Option<usize> {
        Some(self.at? + 1 + arity(self.option.as_bytes())?)
    }

    /// A read-write bind of a host path (`--bind`, `--dev-bind` and their
    /// `-try` forms): what a command can write through it on the host. Not
    /// the fd forms, whose source is a descriptor.
    pub fn binds_host_path_writable(&self) -> bool {
        !self.restricts
            && matches!(
                self.option.as_str(),
                "--bind" | "--bind-try" | "--dev-bind" | "--dev-bind-try"
            )
            && self.source.starts_with(b"/")
    }
}

/// A command line walked option by option.
#[derive(Debug, PartialEq, Eq)]
pub struct Walk {
    /// Where the options end: the index of `--`, or of the command.
    pub options_end: usize,
    /// The index of the command's first word.
    pub command_at: usize,
    /// The mounts, in order (those of `--args` files included).
    pub mounts: Vec<Mount>,
    /// `--setenv ARGV0 apply-seccomp` (the older multicall hook) was given.
    pub setenv_argv0: bool,
    /// The `--args FD` files read: where on the line, and their words.
    pub args_files: Vec<ArgsFile>,
}

/// An `--args FD` file's words, and where it stood on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgsFile {
    /// The index of `--args` on the line.
    pub at: usize,
    /// The fd, as given.
    pub fd: OsString,
    pub words: Vec<OsString>,
}

/// Why a command line could not be walked.
#[derive(Debug, PartialEq, Eq)]
pub enum Unwalked {
    /// No command after the options.
    NoCommand,
    /// An option this table does not know (a newer bubblewrap's, or a typo).
    Unknown(String),
    /// `--args FD`: more options come from a file that was not read (why),
    /// or that holds more than options.
    Args(String),
    /// An option's values run past the end.
    MissingValue,
}

impl std::fmt::Display for Unwalked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unwalked::NoCommand => write!(f, "no command"),
            Unwalked::Unknown(o) => write!(f, "unknown option {o}"),
            Unwalked::Args(why) => write!(f, "options come from --args, {why}"),
            Unwalked::MissingValue => write!(f, "an option lacks its value"),
        }
    }
}

/// Reads an `--args FD` file's words (the fd as given), or says why not.
pub type ReadArgs<'a> = dyn FnMut(&OsString) -> Result<Vec<OsString>, String> + 'a;

/// Walks bubblewrap's arguments (without `argv[0]`) with the options'
/// arities, up to `--` or the first word that is not an option; an
/// `--args FD` is not followed (see [`walk_reading`]).
pub fn walk(args: &[OsString]) -> Result<Walk, Unwalked> {
    walk_reading(args, &mut |_| Err("not read".into()))
}

/// [`walk`], reading `--args FD` files with `read`: their words must all
/// be options (the command stays on the line), walked as if they stood
/// where `--args FD` does.
pub fn walk_reading(args: &[OsString], read: &mut ReadArgs<'_>) -> Result<Walk, Unwalked> {
    let mut mounts = Vec::new();
    let mut setenv_argv0 = false;
    let mut args_files = Vec::new();
    let mut i = 0;
    loop {
        let Some(arg) = args.get(i) else {
            return Err(Unwalked::NoCommand);
        };
        let a = arg.as_bytes();
        if a == b"--" || !a.starts_with(b"--") {
            let command_at = if a == b"--" { i + 1 } else { i };
            if command_at >= args.len() {
                return Err(Unwalked::NoCommand);
            }
            return Ok(Walk {
                options_end: i,
                command_at,
                mounts,
                setenv_argv0,
                args_files,
            });
        }
        if a == b"--args" {
            let fd = args.get(i + 1).ok_or(Unwalked::MissingValue)?;
            let words = read(fd).map_err(Unwalked::Args)?;
            options_only(&words, &mut mounts, &mut setenv_argv0)?;
            args_files.push(ArgsFile {
                at: i,
                fd: fd.clone(),
                words,
            });
            i += 2;
            continue;
        }
        i += 1 + option(&args[i..], Some(i), &mut mounts, &mut setenv_argv0)?;
    }
}

/// Walks the words of an `--args` file, which must all be options.
fn options_only(
    words: &[OsString],
    mounts: &mut Vec<Mount>,
    setenv_argv0: &mut bool,
) -> Result<(), Unwalked> {
    let mut i = 0;
    while i < words.len() {
        let a = words[i].as_bytes();
        if a == b"--args" {
            return Err(Unwalked::Args("whose file names another --args".into()));
        }
        if a == b"--" || !a.starts_with(b"--") {
            return Err(Unwalked::Args(
                "whose file holds more than options (a command)".into(),
            ));
        }
        i += 1 + option(&words[i..], None, mounts, setenv_argv0)?;
    }
    Ok(())
}

/// The option at `words[0]`: notes what it asks for, returns how many
/// values it took.
fn option(
    words: &[OsString],
    at: Option<usize>,
    mounts: &mut Vec<Mount>,
    setenv_argv0: &mut bool,
) -> Result<usize, Unwalked> {
    let arg = &words[0];
    let a = arg.as_bytes();
    let Some(n) = arity(a) else {
        return Err(Unwalked::Unknown(arg.to_string_lossy().into_owned()));
    };
    {
        let values = words.get(1..1 + n).ok_or(Unwalked::MissingValue)?;

        if a == b"--setenv"
            && values[0].as_bytes() == b"ARGV0"
            && values[1].as_bytes() == b"apply-seccomp"
        {
            *setenv_argv0 = true;
        }
        if let Some((optional, restricts)) = makes_mount(a) {
            mounts.push(Mount {
                restricts,
                option: arg.to_string_lossy().into_owned(),
                source: if n >= 2 {
                    values[0].as_bytes().to_vec()
                } else {
                    Vec::new()
                },
                dest: values[n - 1].as_bytes().to_vec(),
                optional,
                at,
            });
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::os_words as args;

    #[test]
    fn the_mounts_of_srts_line_are_found_with_their_destinations() {
        let line = args(&[
            "--new-session",
            "--die-with-parent",
            "--unshare-net",
            "--ro-bind",
            "/",
            "/",
            "--bind",
            "/w",
            "/w",
            "--ro-bind",
            "/dev/null",
            "/w/.bashrc",
            "--ro-bind-try",
            "/w/.git/hooks",
            "/w/.git/hooks",
            "--setenv",
            "X",
            "--",
            "--dev",
            "/dev",
            "--overlay",
            "/a",
            "/b",
            "/c",
            "--",
            "bash",
            "-c",
            "x",
        ]);
        let w = walk(&line).unwrap();
        // `--setenv X --` takes "--" as its value.
        assert_eq!((w.options_end, w.command_at), (24, 25));
        let dests: Vec<(&str, String, bool)> = w
            .mounts
            .iter()
            .map(|m| {
                (
                    m.option.as_str(),
                    String::from_utf8(m.dest.clone()).unwrap(),
                    m.optional,
                )
            })
            .collect();
        assert_eq!(
            dests,
            [
                ("--ro-bind", "/".to_string(), false),
                ("--bind", "/w".to_string(), false),
                ("--ro-bind", "/w/.bashrc".to_string(), false),
                ("--ro-bind-try", "/w/.git/hooks".to_string(), true),
                ("--dev", "/dev".to_string(), false),
                ("--overlay", "/c".to_string(), false),
            ]
        );
        assert_eq!(w.mounts[2].source, b"/dev/null");
        let restricts: Vec<bool> = w.mounts.iter().map(|m| m.restricts).collect();
        assert_eq!(restricts, [true, false, true, true, true, true]);
        assert!(!w.setenv_argv0);
    }

    #[test]
    fn what_cannot_be_walked_says_why() {
        assert_eq!(walk(&args(&["--unshare-pid"])), Err(Unwalked::NoCommand));
        assert_eq!(
            walk(&args(&["--unshare-pid", "--"])),
            Err(Unwalked::NoCommand)
        );
        assert_eq!(
            walk(&args(&["--frob", "--", "x"])),
            Err(Unwalked::Unknown("--frob".into()))
        );
        assert_eq!(
            walk(&args(&["--args", "9", "--", "x"])),
            Err(Unwalked::Args("not read".into()))
        );
        assert_eq!(walk(&args(&["--bind", "/a"])), Err(Unwalked::MissingValue));
    }

    #[test]
    fn an_args_file_is_walked_where_it_stands() {
        let mut read = |fd: &OsString| -> Result<Vec<OsString>, String> {
            assert_eq!(fd, "9");
            Ok(args(&[
                "--ro-bind",
                "/dev/null",
                "/w/.bashrc",
                "--setenv",
                "A",
                "b",
            ]))
        };
        let line = args(&[
            "--unshare-pid",
            "--args",
            "9",
            "--proc",
            "/proc",
            "--",
            "sh",
        ]);
        let w = walk_reading(&line, &mut read).unwrap();
        assert_eq!((w.options_end, w.command_at), (5, 6));
        let dests: Vec<&[u8]> = w.mounts.iter().map(|m| &m.dest[..]).collect();
        assert_eq!(dests, [&b"/w/.bashrc"[..], b"/proc"]);
        assert_eq!(w.args_files.len(), 1);
        assert_eq!(w.args_files[0].at, 1);
        // A file holding a command, or another --args, is not walked.
        for words in [&["--proc", "/proc", "--", "sh"][..], &["--args", "8"][..]] {
            let mut read = |_: &OsString| Ok(args(words));
            assert!(matches!(
                walk_reading(&line, &mut read),
                Err(Unwalked::Args(_))
            ));
        }
    }

    #[test]
    fn a_command_without_dashdash_ends_the_options() {
        let w = walk(&args(&["--proc", "/proc", "sh", "-c", "x"])).unwrap();
        assert_eq!((w.options_end, w.command_at), (2, 2));
        let w = walk(&args(&["--setenv", "ARGV0", "apply-seccomp", "--", "x"])).unwrap();
        assert!(w.setenv_argv0);
    }
}
