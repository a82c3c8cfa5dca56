//! The keys of the objects still open, for [`Limits::unique_keys`]: a key
//! that repeats within its object is found at once, and an object's keys
//! are let go as it closes, so that what is kept is bounded by the keys of
//! the open objects, not by the document.
//!
//! [`Limits::unique_keys`]: super::Limits::unique_keys

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;

/// An object's keys are compared one by one while it has fewer than this
/// many: most have a handful. From then on they are found by their hash,
/// so that an object of a million keys costs linear time.
const SCANNED_MAX: usize = 16;

/// Room kept between documents, in keys; more is freed.
const KEEP_KEYS: usize = 1024;

/// `S` is a parameter so that the tests can make every key collide.
#[derive(Default)]
pub(super) struct OpenKeys<S = RandomState> {
    /// The text of the open objects' keys, the innermost object's last;
    /// the last key is the one being checked.
    text: Vec<u8>,
    keys: Vec<Key>,
    objects: Vec<Object>,
    /// The keys of the objects that outgrew [`SCANNED_MAX`]: for the index
    /// of an object's first key and a key's hash, the first key of that
    /// object with that hash.
    hashed: HashMap<(usize, u64), usize>,
    /// Keyed by the VM's run, so that a server cannot choose keys that
    /// collide.
    hasher: S,
}

/// A key's text, `text[start..end]`, and its hash once its object is
/// hashed.
struct Key {
    start: usize,
    end: usize,
    hash: u64,
}

/// An open object: where its keys start in `keys`.
struct Object {
    first: usize,
    hashed: bool,
}

impl<S: BuildHasher> OpenKeys<S> {
    /// An object opens; the keys noted from now on are its own.
    pub fn open(&mut self) {
        let first = self.keys.len();
        self.objects.push(Object {
            first,
            hashed: false,
        });
    }

    /// The innermost object closes: its keys are let go.
    pub fn close(&mut self) {
        let Some(object) = self.objects.pop() else {
            return;
        };
        let keys = self.keys.get(object.first..).unwrap_or_default();
        if object.hashed {
            for key in keys {
                self.hashed.remove(&(object.first, key.hash));
            }
        }
        let start = keys.first().map_or(self.text.len(), |key| key.start);
        self.keys.truncate(object.first);
        self.text.truncate(start);
    }

    /// Notes `key` as the innermost object's next key, to be checked by
    /// [`OpenKeys::is_new`]: its text is copied, which costs a pass at
    /// memory speed, and the check, which costs more, can be paid for in
    /// between.
    pub fn note(&mut self, key: &str) {
        let start = self.text.len();
        self.text.extend_from_slice(key.as_bytes());
        let end = self.text.len();
        self.keys.push(Key {
            start,
            end,
            hash: 0,
        });
    }

    /// Whether the key noted last is new in its object. One that is not
    /// stops the parse, so nothing more is kept of it.
    pub fn is_new(&mut self) -> bool {
        let Some(object) = self.objects.last_mut() else {
            return true;
        };
        let first = object.first;
        let Some((key, earlier)) = self.keys.get(first..).and_then(<[Key]>::split_last) else {
            return true;
        };
        let text = |key: &Key| self.text.get(key.start..key.end);
        let noted = text(key);
        if !object.hashed {
            if earlier.iter().any(|key| text(key) == noted) {
                return false;
            }
            if earlier.len() + 1 == SCANNED_MAX {
                object.hashed = true;
                for (index, key) in self.keys.iter_mut().enumerate().skip(first) {
                    key.hash = self.hasher.hash_one(self.text.get(key.start..key.end));
                    self.hashed.entry((first, key.hash)).or_insert(index);
                }
            }
            return true;
        }
        let hash = self.hasher.hash_one(noted);
        let index = first + earlier.len();
        match self.hashed.get(&(first, hash)) {
            Some(&same) if self.keys.get(same).and_then(text) == noted => return false,
            // Another key with the same hash: rare, and compared in full.
            Some(_) if earlier.iter().any(|key| text(key) == noted) => return false,
            Some(_) => {}
            None => {
                self.hashed.insert((first, hash), index);
            }
        }
        if let Some(key) = self.keys.get_mut(index) {
            key.hash = hash;
        }
        true
    }

    pub fn capacity(&self) -> usize {
        self.text.capacity()
            + self.keys.capacity() * std::mem::size_of::<Key>()
            + self.objects.capacity() * std::mem::size_of::<Object>()
            + self.hashed.capacity() * std::mem::size_of::<((usize, u64), usize)>()
    }

    /// Forgets every key, keeping bounded room for the next document.
    pub fn clear(&mut self) {
        self.text.clear();
        self.text.shrink_to(super::Parser::KEEP_BYTES);
        self.keys.clear();
        self.keys.shrink_to(KEEP_KEYS);
        self.objects.clear();
        self.objects.shrink_to(KEEP_KEYS);
        self.hashed.clear();
        self.hashed.shrink_to(KEEP_KEYS);
    }
}

#[cfg(test)]
mod tests {
    use super::{OpenKeys, SCANNED_MAX};
    use std::hash::{BuildHasherDefault, Hasher};

    /// Gives every key the same hash, as keys chosen to collide would have.
    #[derive(Default)]
    struct Colliding;

    impl Hasher for Colliding {
        fn finish(&self) -> u64 {
            7
        }

        fn write(&mut self, _bytes: &[u8]) {}
    }

    #[test]
    fn a_closed_objects_keys_are_let_go_hashed_or_not() {
        let mut open: OpenKeys = OpenKeys::default();
        open.open();
        open.note("outer");
        assert!(open.is_new());
        for keys in [SCANNED_MAX - 1, 2 * SCANNED_MAX].repeat(50) {
            open.open();
            for n in 0..keys {
                open.note(&format!("key {n}"));
                assert!(open.is_new());
            }
            open.close();
        }
        assert!(open.hashed.is_empty(), "{}", open.hashed.len());
        assert_eq!((open.keys.len(), open.objects.len()), (1, 1));
        assert_eq!(open.text, b"outer");
    }

    #[test]
    fn keys_whose_hashes_collide_are_still_told_apart() {
        let keys: Vec<String> = (0..2 * SCANNED_MAX).map(|n| format!("key {n}")).collect();
        // One noted before its object was hashed, one after, and the one
        // the hash finds.
        for repeated in [3, SCANNED_MAX + 3, 0] {
            let mut open: OpenKeys<BuildHasherDefault<Colliding>> = OpenKeys::default();
            open.open();
            for key in &keys {
                open.note(key);
                assert!(open.is_new(), "{key}");
            }
            open.note(&keys[repeated]);
            assert!(!open.is_new(), "{}", keys[repeated]);
        }
    }
}
