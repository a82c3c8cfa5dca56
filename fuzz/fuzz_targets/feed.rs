//! Arbitrary streams, cuts and caps through the core framer, checked against
//! the model that `native/mcp_framer_core/tests/properties.rs` uses too;
//! and the newline search's vector code held to its portable twin from
//! every offset of the stream, up to its end.
#![no_main]

#[path = "../../native/mcp_framer_core/tests/support/model.rs"]
mod model;

use libfuzzer_sys::fuzz_target;
use mcp_framer_core::BufferedFramer;
use model::{assert_invariants, model, Outcome};
use std::num::NonZeroUsize;

fuzz_target!(|input: &[u8]| {
    // Layout: cap (1 byte), cut count n (1 byte), n cut lengths (1 byte each),
    // then the stream.
    let [cap, n, rest @ ..] = input else { return };
    let cap = usize::from(*cap) + 1;
    let n = usize::from(*n).min(rest.len());
    let (lengths, stream) = rest.split_at(n);
    #[cfg(target_arch = "x86_64")]
    for at in 0..=stream.len() {
        assert_eq!(
            mcp_framer_core::arch::newline_mask(stream, at),
            mcp_framer_core::arch::portable::newline_mask(stream, at)
        );
    }

    let mut framer = BufferedFramer::new(NonZeroUsize::new(cap).unwrap());
    let mut messages = Vec::new();
    let mut oversize = 0;
    let mut chunks = lengths.iter().map(|&l| usize::from(l));
    let mut start = 0;
    while start < stream.len() {
        let end = chunks
            .next()
            .map_or(stream.len(), |l| (start + l).min(stream.len()));
        let (found, over) = framer.feed(&stream[start..end]);
        messages.extend(found);
        oversize += over;
        start = end;
        assert_invariants(framer.framer(), start);
    }

    let framed = Outcome {
        messages,
        oversize,
        held: framer.framer().held(),
        discarding: framer.framer().is_discarding(),
    };
    assert_eq!(framed, model(stream, cap));
});
