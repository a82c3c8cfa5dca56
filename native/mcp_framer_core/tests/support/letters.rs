//! A `Special` for holding `arch::copy_runs` to its portable twin, shared
//! by tests/arch.rs and the json fuzz target.

use mcp_framer_core::arch::{Decoded, Special};

/// `\` and a letter decode to one to four copies of the letter plus one;
/// `\u` takes four more bytes and `\p` ten, whatever they are, special
/// ones too. `\!`, `"`, a control byte and the end stop the loop, and so
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
        let next = at
            + match letter {
                b'u' => 6,
                b'p' => 12,
                _ => 2,
            };
        if letter == b'!' || self.left == 0 || next > input.len() {
            return None;
        }
        self.left -= 1;
        Some(Decoded {
            next,
            bytes: [letter.wrapping_add(1); 4],
            length: 1 + usize::from(letter % 4),
        })
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

    /// The first `left` of them.
    fn simple(&mut self, escapes: u64, _at: usize) -> u64 {
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
