//! Whether work under way will finish in the time it has left, judged by
//! the pace it has kept so far.

use std::time::Duration;

/// Whether work `done` bytes into `length`, having taken `spent`, will be
/// finished within `left` at the pace it has kept, with a quarter of the
/// time to go to spare. With nothing done yet, or all of it, there is no
/// pace to judge against it.
pub fn on_pace(spent: Duration, done: usize, length: usize, left: Duration) -> bool {
    if done == 0 || done >= length {
        return true;
    }
    let to_go = spent.as_nanos().saturating_mul((length - done) as u128) / done as u128;
    to_go.saturating_add(to_go / 4) < left.as_nanos()
}

/// A map of more pairs than this is hashed (a HAMT); one of this many or
/// fewer has its keys sorted (a flat map). The BEAM's `MAP_SMALL_MAP_LIMIT`.
const FLAT_MAP_MAX: usize = 32;

/// What making a map's term costs a pair, and hashing a byte of a large
/// map's keys, generously: a map of 512 keys of 2 KB each, with one
/// repeated (made twice), took 1.4-1.9 ms on a busy host.
const PAIR_PICOS: u64 = 200_000;
const HASH_PICOS_PER_BYTE: u64 = 2_000;

/// What remaking a map a pair at a time costs a pair beyond making it:
/// each put copies the map's path to its key. 2,000 short keys, one
/// repeated, took up to 1.1 ms made and remade.
const PUT_PICOS: u64 = 400_000;

/// What comparing a byte of two keys costs a flat map's sort, which may
/// compare each key with every other: 32 keys of 32 KB sharing a prefix,
/// one repeated, took 1.0-1.3 ms.
const COMPARE_PICOS_PER_BYTE: u64 = 100;

/// What the BEAM may take, in nanoseconds, to make a map of `pairs` pairs
/// whose keys are binaries of `key_bytes` bytes in all: it hashes every
/// key whole, or, for a flat map, sorts them, comparing each with up to
/// all the others.
pub fn map_nanos(pairs: usize, key_bytes: usize) -> u64 {
    let (pairs64, bytes) = (pairs as u64, key_bytes as u64);
    let keys = if pairs <= FLAT_MAP_MAX {
        bytes.saturating_mul(pairs64) / 2 * COMPARE_PICOS_PER_BYTE
    } else {
        bytes.saturating_mul(HASH_PICOS_PER_BYTE)
    };
    keys.saturating_add(pairs64.saturating_mul(PAIR_PICOS)) / 1000
}

/// What remaking that map may take, a pair at a time, as when a key
/// repeats: each put hashes or compares its key as making the map did,
/// and copies the map's path to it.
pub fn map_put_nanos(pairs: usize, key_bytes: usize) -> u64 {
    let puts = (pairs as u64).saturating_mul(PUT_PICOS) / 1000;
    map_nanos(pairs, key_bytes).saturating_add(puts)
}

#[cfg(test)]
mod tests {
    use super::{map_nanos, map_put_nanos, on_pace};
    use std::time::Duration;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn work_that_keeps_its_pace_finishes_in_the_time_left() {
        // 90 us to go, 112.5 with the spare quarter: exactly that is too
        // little.
        assert!(on_pace(10 * US, 10_000, 100_000, 700 * US));
        assert!(!on_pace(10 * US, 10_000, 100_000, 112 * US));
        assert!(!on_pace(
            10 * US,
            10_000,
            100_000,
            Duration::from_nanos(112_500)
        ));
        assert!(on_pace(10 * US, 10_000, 100_000, 113 * US));
    }

    #[test]
    fn slow_work_is_off_pace_from_its_first_bytes() {
        assert!(!on_pace(5 * US, 1_000, 1_000_000, 700 * US));
    }

    #[test]
    fn nothing_done_or_all_done_has_no_pace_to_judge() {
        assert!(on_pace(Duration::from_secs(1), 0, 1_000, US));
        assert!(on_pace(
            Duration::from_secs(1),
            1_000,
            1_000,
            Duration::ZERO
        ));
    }

    #[test]
    fn a_map_costs_by_its_pairs_and_its_keys_bytes() {
        // A message's object of four short keys: under a microsecond.
        assert!(map_nanos(4, 40) < 1_000);
        // 512 keys of 2 KB: each byte hashed, 2 ns a byte.
        assert!(map_nanos(512, 1_024_000) >= 2_048_000);
        // 32 keys of 32 KB: each compared with half the others.
        assert!(map_nanos(32, 1_043_000) >= 1_600_000);
        // The pairs of a large map of short keys: what the BEAM's terms take.
        assert!(map_nanos(100_000, 600_000) >= 20_000_000);
        assert_eq!(map_nanos(usize::MAX, usize::MAX), u64::MAX / 1000);
    }

    /// An estimate too high sends a map the call had time for to a dirty
    /// scheduler: each stays within twice the time the maps its constants
    /// come from took.
    #[test]
    fn a_maps_estimate_is_within_twice_what_such_maps_took() {
        // 32 keys of 32 KB sharing a prefix: 1.0-1.3 ms.
        assert!(map_nanos(32, 1_043_000) <= 2_600_000);
        // 512 keys of 2 KB, one repeated: 1.4-1.9 ms, made and remade.
        assert!(map_put_nanos(512, 1_024_000) <= 3_800_000);
        // 2,000 short keys, one repeated: up to 1.1 ms, made and remade.
        assert!(map_put_nanos(2_000, 10_000) <= 2_200_000);
    }

    #[test]
    fn a_map_remade_a_pair_at_a_time_costs_more_a_pair() {
        // 2,000 short keys: 600 ns a pair in all.
        assert!(map_put_nanos(2_000, 10_000) >= 1_200_000);
        assert!(map_put_nanos(512, 1_024_000) > map_nanos(512, 1_024_000));
        assert!(map_put_nanos(usize::MAX, usize::MAX) >= u64::MAX / 1000);
    }

    #[test]
    fn a_long_spent_time_does_not_overflow() {
        assert!(!on_pace(Duration::MAX, 1, usize::MAX, Duration::MAX));
    }
}
