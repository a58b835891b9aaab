/// The options srt gives bubblewrap around the helper (CONTRACT.md); a
/// root caller also gets `--cap-add CAP_SETFCAP`. One list for the doctor's
/// bubblewrap run and the tests' (tests/common includes this file).
pub const BWRAP_OPTIONS: [&str; 14] = [
    "--new-session",
    "--die-with-parent",
    "--unshare-net",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--unshare-pid",
    "--unshare-user",
    "--cap-drop",
    "ALL",
    "--proc",
    "/proc",
];
