//! Properties over random streams, caps and cuts. The fuzz target in `fuzz/`
//! checks the same model with coverage guidance.

mod support;

use mcp_framer_core::{BufferedFramer, Framer, Message};
use proptest::prelude::*;
use std::convert::Infallible;
use std::num::NonZeroUsize;
use support::model::{assert_invariants, model, Outcome};

/// The ends of the chunks `stream` is cut into at `cuts` (positions in any
/// order; those out of range are ignored).
fn chunk_ends(stream: &[u8], cuts: &[usize]) -> Vec<usize> {
    let mut ends: Vec<usize> = cuts.iter().copied().filter(|&c| c < stream.len()).collect();
    ends.sort_unstable();
    ends.push(stream.len());
    ends
}

/// Feeds `stream` cut at `cuts`, checking the state invariants after every
/// feed.
fn frame(stream: &[u8], cap: usize, cuts: &[usize]) -> Outcome {
    let mut framer = BufferedFramer::new(NonZeroUsize::new(cap).unwrap());
    let mut messages = Vec::new();
    let mut oversize = 0;
    let mut start = 0;
    for cut in chunk_ends(stream, cuts) {
        let (found, over) = framer.feed(&stream[start..cut]);
        messages.extend(found);
        oversize += over;
        start = cut;
        assert_invariants(framer.framer(), start);
    }
    Outcome {
        messages,
        oversize,
        held: framer.framer().held(),
        discarding: framer.framer().is_discarding(),
    }
}

/// Streams rich in the bytes the rules care about, with any byte at all.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => Just(b'a'),
        2 => Just(b'\n'),
        2 => Just(b'\r'),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..400)
}

fn cap() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..8, 1usize..64, 1usize..1024]
}

fn cuts() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..400, 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn every_way_of_cutting_a_stream_frames_it_the_same(
        stream in stream(), cap in cap(), a in cuts(), b in cuts(),
    ) {
        prop_assert_eq!(frame(&stream, cap, &a), frame(&stream, cap, &b));
    }

    #[test]
    fn framing_matches_the_simple_model(stream in stream(), cap in cap(), cuts in cuts()) {
        prop_assert_eq!(frame(&stream, cap, &cuts), model(&stream, cap));
    }

    #[test]
    fn byte_at_a_time_matches_the_simple_model(stream in stream(), cap in cap()) {
        let every_byte: Vec<usize> = (1..stream.len()).collect();
        prop_assert_eq!(frame(&stream, cap, &every_byte), model(&stream, cap));
    }

    #[test]
    fn pausing_after_any_message_count_changes_nothing(
        stream in stream(), cap in cap(), cuts in cuts(), max_messages in 1usize..5,
    ) {
        let mut framer = Framer::new(NonZeroUsize::new(cap).unwrap());
        let mut lengths = Vec::new();
        let mut oversize = 0;
        let mut start = 0;
        for cut in chunk_ends(&stream, &cuts) {
            let mut chunk = &stream[start..cut];
            loop {
                let fed = framer
                    .feed_some(chunk, max_messages, |m: Message| {
                        lengths.push(m.len());
                        Ok::<(), Infallible>(())
                    })
                    .unwrap_or_else(|never| match never {});
                oversize += fed.oversize;
                prop_assert!(fed.consumed > 0 || chunk.is_empty());
                chunk = &chunk[fed.consumed..];
                if chunk.is_empty() {
                    break;
                }
            }
            start = cut;
            assert_invariants(&framer, start);
        }
        let expected = model(&stream, cap);
        let expected_lengths: Vec<usize> = expected.messages.iter().map(Vec::len).collect();
        prop_assert_eq!(lengths, expected_lengths);
        prop_assert_eq!(oversize, expected.oversize);
        prop_assert_eq!(framer.held(), expected.held);
    }
}
