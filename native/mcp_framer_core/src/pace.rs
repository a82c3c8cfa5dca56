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

#[cfg(test)]
mod tests {
    use super::on_pace;
    use std::time::Duration;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn work_that_keeps_its_pace_finishes_in_the_time_left() {
        // 90 us to go, 112.5 with the spare quarter.
        assert!(on_pace(10 * US, 10_000, 100_000, 700 * US));
        assert!(!on_pace(10 * US, 10_000, 100_000, 112 * US));
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
    fn a_long_spent_time_does_not_overflow() {
        assert!(!on_pace(Duration::MAX, 1, usize::MAX, Duration::MAX));
    }
}
