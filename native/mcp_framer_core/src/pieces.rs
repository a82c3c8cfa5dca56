//! Copying a message out of the pieces its held bytes were kept in.

use std::mem::MaybeUninit;
use std::num::NonZeroUsize;

/// Fills `to` with the bytes of `pieces`, taken in order, from offset
/// `from` on, in one pass; after each `step` bytes, goes on only while
/// `more()`. Returns how many bytes it copied: `to.len()` unless it
/// stopped early or the pieces ran out. `to` may be memory not yet
/// written, such as a new binary's.
pub fn copy_pieces<'p>(
    pieces: impl Iterator<Item = &'p [u8]>,
    from: usize,
    to: &mut [MaybeUninit<u8>],
    step: NonZeroUsize,
    mut more: impl FnMut() -> bool,
) -> usize {
    let (mut skip, mut at, mut in_step) = (from, 0, 0);
    for bytes in pieces {
        if at == to.len() {
            break;
        }
        if skip >= bytes.len() {
            skip -= bytes.len();
            continue;
        }
        let mut bytes = &bytes[skip..];
        skip = 0;
        while !bytes.is_empty() && at < to.len() {
            let n = bytes.len().min(to.len() - at).min(step.get() - in_step);
            let (slots, bytes_now) = (&mut to[at..at + n], &bytes[..n]);
            // SAFETY: both hold `n` bytes, and cannot overlap: `slots` is
            // borrowed mutably. (`write_copy_of_slice` says this without
            // `unsafe`, from a Rust newer than 1.91; a loop of writes was
            // not always made a call to memcpy.)
            unsafe {
                std::ptr::copy_nonoverlapping(bytes_now.as_ptr(), slots.as_mut_ptr().cast(), n);
            }
            at += n;
            in_step += n;
            bytes = &bytes[n..];
            if in_step == step.get() {
                in_step = 0;
                if !more() {
                    return at;
                }
            }
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    // The caller is asked whether to go on after every `step` bytes, also
    // when a step spans pieces, and a copy it stops holds that many steps.
    #[test]
    fn a_copy_asks_to_go_on_after_each_step_even_across_pieces() {
        let pieces: [&[u8]; 4] = [&[1], &[2, 3], &[4, 5, 6], &[7, 8, 9, 10]];
        for step in (1..=4).filter_map(NonZeroUsize::new) {
            for steps_a_call in 1..=3 {
                let mut message = [MaybeUninit::new(0); 10];
                let mut asked = 0;
                let copied = copy_pieces(pieces.iter().copied(), 0, &mut message, step, || {
                    asked += 1;
                    asked < steps_a_call
                });
                assert_eq!(
                    (copied, asked),
                    (
                        10.min(step.get() * steps_a_call),
                        steps_a_call.min(10 / step.get())
                    ),
                    "step {step}, {steps_a_call} steps a call"
                );
            }
        }
    }

    // A large message is copied over several calls, each stopping after
    // some steps: wherever a call stops, in a piece or between two, the
    // next one goes on from there, and the message gets every byte once.
    #[test]
    fn a_copy_stopped_after_any_step_resumes_where_it_stopped() {
        let layouts: [&[usize]; 5] = [&[9], &[1, 2, 3], &[4, 0, 7, 1], &[3, 3, 3, 3], &[0, 5, 0]];
        for sizes in layouts {
            let bytes: Vec<u8> = (1..=sizes.iter().sum::<usize>() as u8).collect();
            let mut pieces = Vec::new();
            let mut rest = &bytes[..];
            for &size in sizes {
                let (piece, after) = rest.split_at(size);
                pieces.push(piece);
                rest = after;
            }
            for step in (1..=4).filter_map(NonZeroUsize::new) {
                for steps_a_call in 1..=3 {
                    for slice in [1, 2, 5, bytes.len()] {
                        let mut message = vec![MaybeUninit::new(0); bytes.len()];
                        let mut copied = 0;
                        for _call in 0..=bytes.len() {
                            let until = bytes.len().min(copied + slice);
                            let mut steps = 0;
                            copied += copy_pieces(
                                pieces.iter().copied(),
                                copied,
                                &mut message[copied..until],
                                step,
                                || {
                                    steps += 1;
                                    steps < steps_a_call
                                },
                            );
                        }
                        // SAFETY: every byte was made by `MaybeUninit::new`.
                        let message: Vec<u8> = message
                            .iter()
                            .map(|byte| unsafe { byte.assume_init() })
                            .collect();
                        assert_eq!(
                            message, bytes,
                            "pieces {sizes:?}, step {step}, {steps_a_call} steps a call, slice {slice}"
                        );
                    }
                }
            }
        }
    }
}
