//! Arbitrary streams, cuts and caps through the core framer, checked against
//! the same simple model as `native/mcp_framer_core/tests/properties.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_framer_core::BufferedFramer;
use std::num::NonZeroUsize;

fuzz_target!(|input: &[u8]| {
    // Layout: cap (1 byte), cut count n (1 byte), n cut lengths (1 byte each),
    // then the stream.
    let [cap, n, rest @ ..] = input else { return };
    let cap = usize::from(*cap) + 1;
    let n = usize::from(*n).min(rest.len());
    let (lengths, stream) = rest.split_at(n);

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
        let state = framer.framer();
        assert!(state.held() <= cap + 1);
        assert!(!state.is_discarding() || state.held() == 0);
        assert_eq!(state.bytes_searched(), start as u64);
    }

    let mut lines: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    let tail = lines.pop().unwrap_or_default();
    let mut expected = Vec::new();
    let mut expected_oversize = 0;
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > cap {
            expected_oversize += 1;
        } else if !line.is_empty() {
            expected.push(line.to_vec());
        }
    }
    if tail.strip_suffix(b"\r").unwrap_or(tail).len() > cap {
        expected_oversize += 1;
    }
    assert_eq!(messages, expected);
    assert_eq!(oversize, expected_oversize);
});
