//! The framing rules read straight off the documentation, over a whole
//! stream at once: no state carried between chunks, nothing clever. Shared
//! by `tests/properties.rs` and the fuzz target `fuzz/fuzz_targets/feed.rs`.

use mcp_framer_core::Framer;

/// What a whole stream frames to, whatever its cuts.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    pub messages: Vec<Vec<u8>>,
    pub oversize: usize,
    pub held: usize,
    pub discarding: bool,
}

pub fn model(stream: &[u8], cap: usize) -> Outcome {
    let mut lines: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    let tail = lines.pop().unwrap_or_default();
    let mut outcome = Outcome {
        messages: Vec::new(),
        oversize: 0,
        held: 0,
        discarding: false,
    };
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > cap {
            outcome.oversize += 1;
        } else if !line.is_empty() {
            outcome.messages.push(line.to_vec());
        }
    }
    // An unfinished line is held, unless it is already certain to be too
    // long: a trailing `\r` may still be stripped, so it does not count.
    if tail.strip_suffix(b"\r").unwrap_or(tail).len() > cap {
        outcome.oversize += 1;
        outcome.discarding = true;
    } else {
        outcome.held = tail.len();
    }
    outcome
}

/// The state's invariants, after `fed` bytes.
pub fn assert_invariants(framer: &Framer, fed: usize) {
    assert!(framer.held() <= framer.cap() + 1, "held more than cap + 1");
    assert!(
        !framer.is_discarding() || framer.held() == 0,
        "held while discarding"
    );
    assert_eq!(framer.bytes_searched(), fed as u64, "searched a byte twice");
}
