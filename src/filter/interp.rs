//! A small classic-BPF interpreter for seccomp programs, so the generated
//! programs of BOTH architectures can be checked on any build machine.
//! It follows the kernel's rules: 32-bit loads at 4-byte-aligned offsets of
//! `struct seccomp_data`, forward jumps only, and a program must return.

/// `struct seccomp_data`.
#[derive(Clone, Copy, Debug)]
pub struct SeccompData {
    pub nr: i32,
    pub arch: u32,
    pub instruction_pointer: u64,
    pub args: [u64; 6],
}

impl SeccompData {
    fn word(&self, off: u32) -> Result<u32, String> {
        if off % 4 != 0 || off >= 64 {
            return Err(format!("load at bad offset {off}"));
        }
        let mut bytes = [0u8; 64];
        bytes[0..4].copy_from_slice(&self.nr.to_le_bytes());
        bytes[4..8].copy_from_slice(&self.arch.to_le_bytes());
        bytes[8..16].copy_from_slice(&self.instruction_pointer.to_le_bytes());
        for (i, a) in self.args.iter().enumerate() {
            bytes[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        let o = off as usize;
        Ok(u32::from_le_bytes([
            bytes[o],
            bytes[o + 1],
            bytes[o + 2],
            bytes[o + 3],
        ]))
    }
}

#[derive(Clone, Copy, Debug)]
struct Insn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

fn decode(bytes: &[u8]) -> Vec<Insn> {
    bytes
        .chunks_exact(8)
        .map(|c| Insn {
            code: u16::from_le_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect()
}

/// A program decoded once, to run on many inputs.
pub struct Decoded(Vec<Insn>);

impl Decoded {
    pub fn new(program: &[u8]) -> Decoded {
        Decoded(decode(program))
    }

    pub fn run(&self, data: &SeccompData) -> Result<u32, String> {
        execute(&self.0, data)
    }
}

/// A chain's answer as the kernel takes it (kernel/seccomp.c,
/// seccomp_run_filters): every program runs, the strictest action wins,
/// and on a tie the newest program's (`programs` in the order installed,
/// oldest first). A program that cannot run here is an error.
pub fn run_chain(programs: &[Decoded], data: &SeccompData) -> Result<u32, String> {
    let action = |r: u32| (r & super::rules::SECCOMP_RET_ACTION_FULL) as i32;
    let mut best: Option<u32> = None;
    for p in programs.iter().rev() {
        let ret = p.run(data)?;
        if best.is_none_or(|b| action(ret) < action(b)) {
            best = Some(ret);
        }
    }
    best.ok_or_else(|| "an empty chain".to_string())
}

/// Runs `program` on `data`; returns the seccomp return value.
#[cfg(test)]
pub fn run(program: &[u8], data: &SeccompData) -> Result<u32, String> {
    execute(&decode(program), data)
}

fn execute(prog: &[Insn], data: &SeccompData) -> Result<u32, String> {
    let (mut a, mut x) = (0u32, 0u32);
    let mut mem = [0u32; 16];
    let mut pc = 0usize;
    loop {
        let insn = *prog
            .get(pc)
            .ok_or_else(|| format!("fell off the end at {pc}"))?;
        pc += 1;
        let class = insn.code & 0x07;
        let src_x = insn.code & 0x08 != 0;
        let operand = if src_x { x } else { insn.k };
        match class {
            0x00 => {
                // LD
                a = match insn.code & 0xe0 {
                    0x20 if insn.code & 0x18 == 0 => data.word(insn.k)?, // W|ABS
                    0x00 => insn.k,                                      // IMM
                    0x60 => *mem.get(insn.k as usize).ok_or("bad mem")?,
                    0x80 => 64, // LEN
                    _ => return Err(format!("unsupported load {:#x}", insn.code)),
                }
            }
            0x01 => {
                // LDX
                x = match insn.code & 0xe0 {
                    0x00 => insn.k,
                    0x60 => *mem.get(insn.k as usize).ok_or("bad mem")?,
                    0x80 => 64,
                    _ => return Err(format!("unsupported ldx {:#x}", insn.code)),
                }
            }
            0x02 => *mem.get_mut(insn.k as usize).ok_or("bad mem")? = a,
            0x03 => *mem.get_mut(insn.k as usize).ok_or("bad mem")? = x,
            0x04 => {
                a = match insn.code & 0xf0 {
                    0x00 => a.wrapping_add(operand),
                    0x10 => a.wrapping_sub(operand),
                    0x20 => a.wrapping_mul(operand),
                    0x30 => a.checked_div(operand).ok_or("division by zero")?,
                    0x40 => a | operand,
                    0x50 => a & operand,
                    0x60 => a.checked_shl(operand).unwrap_or(0),
                    0x70 => a.checked_shr(operand).unwrap_or(0),
                    0x80 => a.wrapping_neg(),
                    0x90 => a.checked_rem(operand).ok_or("division by zero")?,
                    0xa0 => a ^ operand,
                    _ => return Err(format!("unsupported alu {:#x}", insn.code)),
                }
            }
            0x05 => {
                let off = match insn.code & 0xf0 {
                    0x00 => insn.k as usize, // JA
                    op => {
                        let taken = match op {
                            0x10 => a == operand,
                            0x20 => a > operand,
                            0x30 => a >= operand,
                            0x40 => a & operand != 0,
                            _ => return Err(format!("unsupported jump {:#x}", insn.code)),
                        };
                        usize::from(if taken { insn.jt } else { insn.jf })
                    }
                };
                pc += off;
            }
            0x06 => {
                return Ok(match insn.code & 0x18 {
                    0x00 => insn.k,
                    0x10 => a,
                    _ => return Err(format!("unsupported ret {:#x}", insn.code)),
                });
            }
            0x07 => match insn.code & 0xf8 {
                0x00 => x = a,
                0x80 => a = x,
                _ => return Err(format!("unsupported misc {:#x}", insn.code)),
            },
            _ => unreachable!("class is 3 bits"),
        }
    }
}
