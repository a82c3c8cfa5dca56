//! The order the BEAM keeps a small map's keys in, for keys that are
//! binaries: byte by byte, a prefix before the longer key. A map's keys
//! handed to the BEAM in that order cost it one comparison each.

/// Where a key sorts among binaries: by its first eight bytes, then by its
/// length, which is the BEAM's order for keys of up to eight bytes. Longer
/// keys that share their first eight bytes may come out of order, which
/// costs the BEAM a comparison or two more, never a wrong map.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KeyOrder {
    /// The first eight bytes, big-endian, padded with zeros.
    pub prefix: u64,
    pub length: usize,
}

impl KeyOrder {
    #[inline]
    pub fn of(key: &[u8]) -> KeyOrder {
        // Byte by byte below eight: copying a short key into a word and
        // reading the word back would stall on the store.
        let prefix = match key.first_chunk::<8>() {
            Some(head) => u64::from_be_bytes(*head),
            None => {
                let packed = key
                    .iter()
                    .fold(0, |word, &byte| word << 8 | u64::from(byte));
                packed.checked_shl(8 * (8 - key.len() as u32)).unwrap_or(0)
            }
        };
        KeyOrder {
            prefix,
            length: key.len(),
        }
    }
}

/// `sorted` becomes the positions `0..sorted.len()` of `orders`, in the
/// order of their keys; equal keys keep their order. An insertion sort:
/// a map has few keys, and they often come nearly in order.
pub fn sort_keys(orders: &[KeyOrder], sorted: &mut [u8]) {
    debug_assert!(sorted.len() <= orders.len() && sorted.len() <= 256);
    for (position, slot) in sorted.iter_mut().enumerate() {
        *slot = position as u8;
    }
    for next in 1..sorted.len() {
        let mut at = next;
        while at > 0 && orders[usize::from(sorted[at - 1])] > orders[usize::from(sorted[at])] {
            sorted.swap(at - 1, at);
            at -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{sort_keys, KeyOrder};

    /// Keys of up to eight bytes, zero bytes and prefixes of one another
    /// among them, come out in the BEAM's order of binaries: byte by byte,
    /// a prefix first. That is Rust's order of byte slices.
    #[test]
    fn short_keys_are_sorted_in_the_beams_order_of_binaries() {
        let alphabet: [&[u8]; 6] = [b"", b"\0", b"a", b"a\0", b"ab", b"\xff"];
        let mut state = 0x853c_49e6_748f_ea9b_u64;
        for _ in 0..5_000 {
            let keys: Vec<Vec<u8>> = (0..1 + state as usize % 32)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let mut key = alphabet[(state >> 33) as usize % 6].to_vec();
                    key.extend_from_slice(alphabet[(state >> 40) as usize % 6]);
                    key.truncate(8);
                    key
                })
                .collect();
            let orders: Vec<KeyOrder> = keys.iter().map(|key| KeyOrder::of(key)).collect();
            let mut sorted = vec![0; keys.len()];
            sort_keys(&orders, &mut sorted);
            let ours: Vec<&[u8]> = sorted.iter().map(|&i| &keys[usize::from(i)][..]).collect();
            let mut expected: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            expected.sort();
            assert_eq!(ours, expected);
        }
    }

    /// Equal keys keep the order they came in: the first of a repeated key
    /// is still first.
    #[test]
    fn equal_keys_keep_their_order() {
        let orders: Vec<KeyOrder> = [&b"b"[..], b"a", b"b", b"a"]
            .iter()
            .map(|key| KeyOrder::of(key))
            .collect();
        let mut sorted = [0; 4];
        sort_keys(&orders, &mut sorted);
        assert_eq!(sorted, [1, 3, 0, 2]);
    }
}
