//! The binary installs like a real tool: statically linked, so it runs in
//! minimal sandboxes with no dynamic loader in reach.

mod common;

use std::process::Command;

/// The type of each program header of a 64-bit little-endian ELF file.
fn program_header_types(elf: &[u8]) -> Vec<u32> {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "not a 64-bit ELF file");
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()) as usize;
    let (size, count) = (u16_at(0x36), u16_at(0x38));
    (0..count)
        .map(|i| {
            let o = phoff + i * size;
            u32::from_le_bytes(elf[o..o + 4].try_into().unwrap())
        })
        .collect()
}

const PT_INTERP: u32 = 3;

#[test]
fn the_binary_has_no_interpreter() {
    let path = env!("CARGO_BIN_EXE_apply-seccomp");
    let types = program_header_types(&std::fs::read(path).unwrap());
    assert!(!types.is_empty());
    assert!(
        !types.contains(&PT_INTERP),
        "{path} needs a dynamic loader: {types:?}"
    );
    // A static-pie keeps a dynamic section for its own relocations but
    // names no library; `file` says so in words.
    match common::which("file") {
        None => {
            common::skip("file(1) is not installed: only the ELF header was checked");
        }
        Some(file) => {
            let out = Command::new(file).arg("-L").arg(path).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains("static-pie linked") || text.contains("statically linked"),
                "{text}"
            );
            assert!(!text.contains("interpreter"), "{text}");
        }
    }
}

#[test]
fn it_runs_in_a_mount_tree_without_libraries() {
    // Only the binary and /proc: no /lib, no ld.so.
    let Some(bwrap) = common::which("bwrap") else {
        common::skip("bubblewrap is not installed");
        return;
    };
    let helper = &common::fixture().helper;
    let out = Command::new(bwrap)
        .args([
            "--unshare-user",
            "--unshare-pid",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
        ])
        .arg("--ro-bind")
        .arg(helper)
        .arg("/apply-seccomp")
        .args(["--", "/apply-seccomp", "--version"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert!(common::stdout(&out).starts_with("apply-seccomp "));
}

/// The names of the sections of a 64-bit little-endian ELF file.
fn section_names(elf: &[u8]) -> Vec<String> {
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap()) as usize;
    let shoff = u64_at(0x28);
    let (size, count, names) = (u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let strtab = u64_at(shoff + names * size + 0x18);
    (0..count)
        .map(|i| {
            let at = strtab + u32_at(shoff + i * size);
            let end = at + elf[at..].iter().position(|&b| b == 0).unwrap();
            String::from_utf8_lossy(&elf[at..end]).into_owned()
        })
        .collect()
}

#[test]
fn the_release_binary_carries_no_unwind_tables() {
    // build.rs drops them where rust-lld links (the x86_64 musl build) and
    // the profile aborts on panic: 85 KB that nothing reads.
    if !(cfg!(target_env = "musl") && cfg!(target_arch = "x86_64")) {
        common::skip("not the x86_64 musl build: another linker keeps the unwind tables");
        return;
    }
    let release = common::release_build(common::RELEASE, &[], "apply-seccomp-release");
    let names = section_names(&std::fs::read(&release).unwrap());
    assert!(names.iter().any(|n| n == ".text"), "{names:?}");
    for gone in [".eh_frame", ".eh_frame_hdr", ".gcc_except_table"] {
        assert!(!names.iter().any(|n| n == gone), "{gone} in {names:?}");
    }
    let out = Command::new(&release).arg("true").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    // The dev profile unwinds, and keeps them.
    if cfg!(debug_assertions) {
        let dev = section_names(&std::fs::read(env!("CARGO_BIN_EXE_apply-seccomp")).unwrap());
        assert!(dev.iter().any(|n| n == ".eh_frame"), "{dev:?}");
    }
}
