//! The observe filter, per architecture: write-intent calls notified,
//! everything else allowed, by numbers from the kernel's tables.

use super::*;

/// The observe filter, per architecture: (arch, program, openat, unlinkat,
/// renameat2, read, legacy `open` where there is one). Numbers from the
/// kernel's tables.
#[test]
fn the_observe_filter_notifies_write_intent_only() {
    type Case = (u32, &'static [u8], i32, i32, i32, i32, Option<i32>);
    let cases: [Case; 2] = [
        (AUDIT_ARCH_X86_64, OBSERVE_X86_64, 257, 263, 316, 0, Some(2)),
        (AUDIT_ARCH_AARCH64, OBSERVE_AARCH64, 56, 35, 276, 63, None),
    ];
    for (arch, prog, openat, unlinkat, renameat2, read, open) in cases {
        let call = |nr: i32, args: [u64; 6]| {
            let data = SeccompData {
                nr,
                arch,
                instruction_pointer: 0,
                args,
            };
            outcome(run(prog, &data).expect("program runs"))
        };
        let flags_at = |i: usize, flags: u64| {
            let mut a = [0u64; 6];
            a[i] = flags;
            a
        };
        // openat: flags are argument 2; read-only opens pass silently,
        // whatever the upper 32 bits hold.
        assert_eq!(call(openat, flags_at(2, 0)), Allow);
        assert_eq!(call(openat, flags_at(2, 0o400_000)), Allow); // O_CLOEXEC
        assert_eq!(call(openat, flags_at(2, 0xffff_ffff_0000_0000)), Allow);
        for bit in [0o1u64, 0o2, 0o100, 0o1000, 0o2000] {
            assert_eq!(
                call(openat, flags_at(2, bit | 0o400_000)),
                Notify,
                "{bit:o}"
            );
            // The flag in another argument does not count.
            assert_eq!(call(openat, flags_at(1, bit)), Allow, "{bit:o}");
        }
        if let Some(open) = open {
            assert_eq!(call(open, flags_at(1, 0)), Allow);
            assert_eq!(call(open, flags_at(1, 0o100)), Notify);
        }
        assert_eq!(call(unlinkat, [0; 6]), Notify);
        assert_eq!(call(renameat2, [0; 6]), Notify);
        assert_eq!(call(read, [0; 6]), Allow);
        assert_eq!(call(437, [0; 6]), Notify, "openat2");
    }
    // Changes through descriptors, xattrs, futimesat, bind (THREATS row
    // 23): numbers from the kernel's tables.
    let more: [(u32, &[u8], &[i32]); 2] = [
        (
            AUDIT_ARCH_X86_64,
            OBSERVE_X86_64,
            &[91, 93, 188, 189, 190, 197, 198, 199, 261, 49, 463, 466],
        ),
        (
            AUDIT_ARCH_AARCH64,
            OBSERVE_AARCH64,
            &[52, 55, 5, 6, 7, 14, 15, 16, 200, 463, 466],
        ),
    ];
    for (arch, prog, nrs) in more {
        for &nr in nrs {
            let data = SeccompData {
                nr,
                arch,
                instruction_pointer: 0,
                args: [0; 6],
            };
            assert_eq!(
                outcome(run(prog, &data).unwrap()),
                Notify,
                "{arch:#x} nr {nr}"
            );
        }
    }
}
