//! The object keys of one NIF call, each made once: MCP messages repeat a
//! few keys ("jsonrpc", "type", "properties") thousands of times.

use rustler::sys::ErlNifTerm;

/// Keys and the terms made for them. A slot is read only while its bit in
/// `filled` is set; each NIF call starts with them all cleared, since a
/// term is valid only in the call that made it.
pub struct KeyTable {
    slots: [KeySlot; KEY_SLOTS],
    filled: u64,
}

const KEY_SLOTS: usize = 64;
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
            filled: 0,
        }
    }

    /// Forgets every key: their terms belong to another call.
    pub fn clear(&mut self) {
        self.filled = 0;
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

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<ErlNifTerm> {
        let index = Self::index(key)?;
        if self.filled & (1 << index) == 0 {
            return None;
        }
        let slot = &self.slots[index];
        let same = usize::from(slot.len) == key.len() && slot.bytes[..key.len()] == *key;
        same.then_some(slot.term)?
    }

    pub fn put(&mut self, key: &[u8], term: ErlNifTerm) {
        let Some(index) = Self::index(key) else {
            return;
        };
        let slot = &mut self.slots[index];
        slot.len = key.len() as u8;
        slot.bytes[..key.len()].copy_from_slice(key);
        slot.term = Some(term);
        self.filled |= 1 << index;
    }
}
