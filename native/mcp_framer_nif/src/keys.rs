//! The object keys of one NIF call, each made once: MCP messages repeat a
//! few keys ("jsonrpc", "type", "properties") thousands of times.

use rustler::sys::ErlNifTerm;

/// Keys and the terms made for them. A slot is read only while its bit in
/// `filled` is set; each NIF call starts with them all cleared, since a
/// term is valid only in the call that made it.
pub struct KeyTable {
    slots: [KeySlot; KEY_SLOTS],
    filled: [u64; KEY_SLOTS / 64],
}

/// Enough, with two slots a key, that the fifty-odd keys of a
/// `tools/list` result are made about once a call (2% of them again on
/// the benchmark's traffic), where 64 slots of one made a fifth of them
/// again.
const KEY_SLOTS: usize = 256;
const KEY_MAX: usize = 22;

#[derive(Clone, Copy)]
struct KeySlot {
    len: u8,
    bytes: [u8; KEY_MAX],
    term: Option<ErlNifTerm>,
}

impl KeyTable {
    pub fn new() -> KeyTable {
        let empty = KeySlot {
            len: 0,
            bytes: [0; KEY_MAX],
            term: None,
        };
        KeyTable {
            slots: [empty; KEY_SLOTS],
            filled: [0; KEY_SLOTS / 64],
        }
    }

    /// Forgets every key: their terms belong to another call.
    pub fn clear(&mut self) {
        self.filled = [0; KEY_SLOTS / 64];
    }

    /// The slot a key may be kept in; `None` for keys too long to keep.
    #[inline]
    fn index(key: &[u8]) -> Option<usize> {
        let (&first, &last) = (key.first()?, key.last()?);
        if key.len() > KEY_MAX {
            return None;
        }
        Some((key.len() * 7 + usize::from(first) * 3 + usize::from(last) * 5) % KEY_SLOTS)
    }

    /// The term made for `key` in this call, if it is kept: in the key's
    /// slot or the one beside it.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<ErlNifTerm> {
        let index = Self::index(key)?;
        match self.kept(index, key) {
            Some(term) => Some(term),
            None => self.kept_beside(index, key),
        }
    }

    /// Most keys are in their own slot: the other is looked at out of line.
    #[cold]
    #[inline(never)]
    fn kept_beside(&self, index: usize, key: &[u8]) -> Option<ErlNifTerm> {
        self.kept(index ^ 1, key)
    }

    #[inline]
    fn kept(&self, index: usize, key: &[u8]) -> Option<ErlNifTerm> {
        if !self.is_filled(index) {
            return None;
        }
        let slot = &self.slots[index];
        let same = usize::from(slot.len) == key.len() && same_bytes(&slot.bytes, key);
        same.then_some(slot.term)?
    }

    /// Keeps `term` for `key`: in the key's slot if it is free, or else in
    /// the one beside it, over what that held.
    pub fn put(&mut self, key: &[u8], term: ErlNifTerm) {
        let Some(index) = Self::index(key) else {
            return;
        };
        // A key is put again when it is an atom made under itself.
        let index = if !self.is_filled(index) || self.kept(index, key).is_some() {
            index
        } else {
            index ^ 1
        };
        let slot = &mut self.slots[index];
        slot.len = key.len() as u8;
        slot.bytes[..key.len()].copy_from_slice(key);
        slot.term = Some(term);
        self.filled[index / 64] |= 1 << (index % 64);
    }

    #[inline]
    fn is_filled(&self, index: usize) -> bool {
        self.filled[index / 64] & (1 << (index % 64)) != 0
    }
}

/// Whether `key`, of 1 to [`KEY_MAX`] bytes, is the start of `kept`: two
/// loads from each, overlapping for lengths between two sizes, where a
/// slice compare calls `memcmp` (5% of the samples on `tools/list`).
#[inline]
fn same_bytes(kept: &[u8; KEY_MAX], key: &[u8]) -> bool {
    let n = key.len();
    match n {
        0 => true,
        1..=3 => [0, n / 2, n - 1].iter().all(|&i| kept.get(i) == key.get(i)),
        4..=7 => same_words::<4>(kept, key),
        8..=15 => same_words::<8>(kept, key),
        _ => same_words::<16>(kept, key),
    }
}

/// The first `N` bytes and the last `N` of `key` against `kept`'s at the
/// same places; `key` is `N` to `2 * N` bytes long.
#[inline]
fn same_words<const N: usize>(kept: &[u8], key: &[u8]) -> bool {
    let last = key.len().saturating_sub(N);
    let word =
        |bytes: &[u8], at: usize| -> Option<[u8; N]> { bytes.get(at..at + N)?.try_into().ok() };
    word(kept, 0) == word(key, 0) && word(kept, last) == word(key, last)
}
