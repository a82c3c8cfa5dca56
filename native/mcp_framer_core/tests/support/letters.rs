//! A `Special` for holding `arch::copy_runs` to its portable twin, shared
//! by tests/arch.rs and the json fuzz target.

use mcp_framer_core::arch::{Decoded, Special};

/// `\` and a letter decode to one to four bytes, the letter plus one, two
/// and so on; `\p` takes ten more bytes, whatever they are, special ones
/// too. `\u` and four hex digits decode as in JSON, but for a surrogate,
/// which stops the loop as a `\u` without them does. `\!`, `"`, a control
/// byte and the end stop it too, and so does the escape after `left` of
/// them.
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
                let digits = input.get(at + 2..at + 6)?;
                if !digits.iter().all(u8::is_ascii_hexdigit) {
                    return None;
                }
                let code = u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()?;
                let character = char::from_u32(code)?;
                let mut bytes = [0; 4];
                let length = character.encode_utf8(&mut bytes).len();
                Decoded {
                    next: at + 6,
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

    /// The first `left` of them, of either kind.
    fn simple(&mut self, escapes: u64, _unicode: u64, _at: usize) -> u64 {
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
