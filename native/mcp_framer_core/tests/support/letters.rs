//! A `Special` for holding `arch::copy_runs` to its portable twin, shared
//! by tests/arch.rs and the json fuzz target.

use mcp_framer_core::arch::{Decoded, Special};

/// `\` and a letter decode to one to four bytes, the letter plus one, two
/// and so on; `\p` takes ten more bytes, whatever they are, special ones
/// too. `\u` and four hex digits decode as in JSON, a surrogate pair as
/// one escape; a lone surrogate stops the loop as a `\u` without four
/// digits does. `\!`, `"`, a control byte and the end stop it too, and so
/// does the escape after `left` of them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Letters {
    pub left: usize,
}

impl Special for Letters {
    fn at(&mut self, input: &[u8], at: usize) -> Option<Decoded> {
        let &[b'\\', letter] = input.get(at..at + 2)? else {
            return None;
        };
        if letter == b'!' || self.left == 0 {
            return None;
        }
        let decoded = match letter {
            b'u' => {
                let code = hex4(input.get(at + 2..at + 6)?)?;
                // A high surrogate takes the low one right after it.
                let (code, next) = match code {
                    0xD800..=0xDBFF => {
                        let &[b'\\', b'u', ref digits @ ..] = input.get(at + 6..at + 12)? else {
                            return None;
                        };
                        let low = hex4(digits)?
                            .checked_sub(0xDC00)
                            .filter(|&low| low < 0x400)?;
                        (0x10000 + ((code - 0xD800) << 10) + low, at + 12)
                    }
                    _ => (code, at + 6),
                };
                // A lone low surrogate is no character.
                let character = char::from_u32(code)?;
                let mut bytes = [0; 4];
                let length = character.encode_utf8(&mut bytes).len();
                Decoded {
                    next,
                    bytes,
                    length,
                }
            }
            _ => {
                let next = at + if letter == b'p' { 12 } else { 2 };
                if next > input.len() {
                    return None;
                }
                // Four different bytes, so that their order shows.
                let byte = |plus: u8| letter.wrapping_add(plus);
                Decoded {
                    next,
                    bytes: [byte(1), byte(2), byte(3), byte(4)],
                    length: 1 + usize::from(letter % 4),
                }
            }
        };
        self.left -= 1;
        Some(decoded)
    }

    /// The letters that `at` decodes to one byte, the letter plus one:
    /// those whose value is a multiple of four, but for `p`.
    const SIMPLE: [u8; 128] = {
        let mut table = [0; 128];
        let mut letter = 0;
        while letter < 128 {
            if letter % 4 == 0 && letter != b'p' {
                table[letter as usize] = letter + 1;
            }
            letter += 1;
        }
        table
    };

    const UNICODE: bool = true;

    /// The first `left` of them, of any kind.
    fn simple(&mut self, escapes: u64, _unicode: u64, _pairs: u64, _at: usize) -> u64 {
        let mut taken = 0;
        let mut rest = escapes;
        while rest != 0 && self.left > 0 {
            let first = rest & rest.wrapping_neg();
            taken |= first;
            rest ^= first;
            self.left -= 1;
        }
        taken
    }
}

/// Four hex digits of either case as a code unit.
fn hex4(digits: &[u8]) -> Option<u32> {
    if digits.len() != 4 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}
