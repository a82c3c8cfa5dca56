//! Every `\n` in a slice, in order.
//!
//! `memchr_iter` sets up a vector search for each match, through a function
//! pointer, and that setup costs more than the search when lines are a few
//! hundred bytes or less. On x86_64 this takes a bit mask of the newlines
//! in 64 bytes at a time (`arch::newline_mask`, SSE2) and reads the matches
//! off the mask; past a few blocks without one, `memchr` takes over, being
//! faster across long lines. Elsewhere it is `memchr_iter`.

#[cfg(target_arch = "x86_64")]
use crate::arch::newline_mask;

/// With `long_first`, the first newline is expected far away (the chunk
/// continues a long held line, or one being discarded) and is found with
/// `memchr` from the start.
#[cfg(target_arch = "x86_64")]
pub fn newlines(bytes: &[u8], long_first: bool) -> impl Iterator<Item = usize> + '_ {
    if !long_first {
        return Masks {
            bytes,
            block: 0,
            mask: newline_mask(bytes, 0),
        };
    }
    match memchr::memchr(b'\n', bytes) {
        Some(newline) => Masks {
            bytes,
            block: newline & !63,
            mask: newline_mask(bytes, newline & !63),
        },
        None => Masks {
            bytes,
            block: bytes.len(),
            mask: 0,
        },
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub fn newlines(bytes: &[u8], _long_first: bool) -> impl Iterator<Item = usize> + '_ {
    memchr::memchr_iter(b'\n', bytes)
}

/// Blocks searched by mask before a line counts as long.
#[cfg(target_arch = "x86_64")]
const SHORT_BLOCKS: usize = 4;

#[cfg(target_arch = "x86_64")]
struct Masks<'a> {
    bytes: &'a [u8],
    /// Start of the 64-byte block that `mask` describes.
    block: usize,
    /// Bit `i` is set if `bytes[block + i]` is a newline not yet returned.
    mask: u64,
}

#[cfg(target_arch = "x86_64")]
impl Iterator for Masks<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        let mut empty = 0;
        while self.mask == 0 {
            self.block += 64;
            if self.block >= self.bytes.len() {
                return None;
            }
            empty += 1;
            if empty == SHORT_BLOCKS {
                // A long line: memchr crosses it faster.
                let newline = self.block + memchr::memchr(b'\n', &self.bytes[self.block..])?;
                self.block = newline & !63;
                self.mask = newline_mask(self.bytes, self.block);
                break;
            }
            self.mask = newline_mask(self.bytes, self.block);
        }
        let bit = self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        Some(self.block + bit)
    }
}

#[cfg(test)]
mod tests {
    use super::newlines;
    use proptest::prelude::*;

    /// Lines from empty to several blocks long, so that both the masks and
    /// the hand-over to memchr are crossed at every offset.
    fn lines() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec((0usize..700, any::<u8>()), 0..12).prop_map(|lines| {
            let mut bytes = Vec::new();
            for (len, filler) in lines {
                let filler = if filler == b'\n' { b'x' } else { filler };
                bytes.extend(std::iter::repeat_n(filler, len));
                bytes.push(b'\n');
            }
            bytes
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn finds_exactly_the_newlines_memchr_finds(bytes in lines(), skip in 0usize..64) {
            let bytes = &bytes[skip.min(bytes.len())..];
            let expected: Vec<usize> = memchr::memchr_iter(b'\n', bytes).collect();
            prop_assert_eq!(newlines(bytes, false).collect::<Vec<_>>(), expected.clone());
            prop_assert_eq!(newlines(bytes, true).collect::<Vec<_>>(), expected);
        }

        #[test]
        fn finds_exactly_the_newlines_in_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..1000)) {
            let expected: Vec<usize> = memchr::memchr_iter(b'\n', &bytes).collect();
            prop_assert_eq!(newlines(&bytes, false).collect::<Vec<_>>(), expected.clone());
            prop_assert_eq!(newlines(&bytes, true).collect::<Vec<_>>(), expected);
        }
    }
}
