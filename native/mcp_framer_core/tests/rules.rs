//! One test per framing rule, named after it.

use mcp_framer_core::{BufferedFramer, Framer, Message, Reply};
use std::num::NonZeroUsize;

fn framer(cap: usize) -> BufferedFramer {
    BufferedFramer::new(NonZeroUsize::new(cap).unwrap())
}

/// Feeds the chunks in order; returns all messages and all oversize counts.
fn frame(cap: usize, chunks: &[&[u8]]) -> (Vec<Vec<u8>>, usize) {
    let mut framer = framer(cap);
    let mut all = Vec::new();
    let mut oversize = 0;
    for chunk in chunks {
        let (messages, over) = framer.feed(chunk);
        all.extend(messages);
        oversize += over;
    }
    (all, oversize)
}

fn strings(messages: &[Vec<u8>]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| std::str::from_utf8(m).unwrap())
        .collect()
}

#[test]
fn a_message_ends_at_newline() {
    let (messages, _) = frame(100, &[b"{\"a\":", b"1}\n{}\n"]);
    assert_eq!(strings(&messages), ["{\"a\":1}", "{}"]);
}

#[test]
fn exactly_one_trailing_cr_is_stripped() {
    let (messages, _) = frame(100, &[b"a\r\r\nb\r\n"]);
    assert_eq!(strings(&messages), ["a\r", "b"]);
}

#[test]
fn a_cr_held_at_the_end_of_a_chunk_is_stripped_when_newline_opens_the_next() {
    let (messages, _) = frame(100, &[b"ab\r", b"\ncd\r\r", b"\n"]);
    assert_eq!(strings(&messages), ["ab", "cd\r"]);
}

#[test]
fn a_cr_elsewhere_is_data() {
    let (messages, _) = frame(100, &[b"\ra\rb\n", b"c\r", b"d\n"]);
    assert_eq!(strings(&messages), ["\ra\rb", "c\rd"]);
}

#[test]
fn blank_lines_are_skipped() {
    let (messages, _) = frame(100, &[b"\n\r\n\na\n", b"\r", b"\n", b"\n"]);
    assert_eq!(strings(&messages), ["a"]);
}

#[test]
fn a_line_of_spaces_is_a_message() {
    let (messages, _) = frame(100, &[b"   \n \r\n"]);
    assert_eq!(strings(&messages), ["   ", " "]);
}

#[test]
fn message_bytes_are_untouched() {
    let bytes: Vec<u8> = (0u8..=255).filter(|&b| b != b'\n').collect();
    let mut stream = bytes.clone();
    stream.push(b'\n');
    let (messages, _) = frame(1000, &[&stream]);
    assert_eq!(messages, [bytes]);
}

#[test]
fn each_byte_is_searched_once_and_held_bytes_never_again() {
    let line = vec![b'x'; 10_000];
    let mut framer = framer(20_000);
    for byte in &line {
        framer.feed(std::slice::from_ref(byte));
    }
    let (messages, _) = framer.feed(b"\n");
    assert_eq!(messages, [line]);
    assert_eq!(framer.framer().bytes_searched(), 10_001);
}

#[test]
fn bytes_after_the_last_newline_are_held() {
    let mut framer = framer(100);
    let (messages, _) = framer.feed(b"a\nbc\r");
    assert_eq!(strings(&messages), ["a"]);
    assert_eq!(framer.framer().held(), 3);
    let (messages, _) = framer.feed(b"d");
    assert!(messages.is_empty());
    assert_eq!(framer.framer().held(), 4);
}

#[test]
fn a_line_of_exactly_the_cap_passes_however_it_is_split() {
    let stream = b"abcd\r\nefgh\n";
    for cut in 0..=stream.len() {
        for cut2 in cut..=stream.len() {
            let (first, rest) = stream.split_at(cut);
            let (second, third) = rest.split_at(cut2 - cut);
            let (messages, oversize) = frame(4, &[first, second, third]);
            assert_eq!(strings(&messages), ["abcd", "efgh"], "cuts {cut} {cut2}");
            assert_eq!(oversize, 0);
        }
    }
}

#[test]
fn a_held_partial_of_cap_plus_one_ending_in_cr_is_not_yet_oversize() {
    let mut framer = framer(4);
    let (_, oversize) = framer.feed(b"abcd\r");
    assert_eq!(oversize, 0);
    assert_eq!(framer.framer().held(), 5);
    let (messages, oversize) = framer.feed(b"\n");
    assert_eq!((strings(&messages), oversize), (vec!["abcd"], 0));
}

#[test]
fn a_held_cr_that_is_not_followed_by_newline_makes_the_line_oversize() {
    let mut framer = framer(4);
    framer.feed(b"abcd\r");
    let (messages, oversize) = framer.feed(b"e");
    assert_eq!((messages.len(), oversize), (0, 1));
    assert!(framer.framer().is_discarding());
}

#[test]
fn oversize_is_detected_as_soon_as_certain_without_holding_more() {
    let mut framer = framer(4);
    let (_, oversize) = framer.feed(b"abcd");
    assert_eq!((oversize, framer.framer().held()), (0, 4));
    let (_, oversize) = framer.feed(b"e");
    assert_eq!((oversize, framer.framer().held()), (1, 0));
    assert!(framer.framer().is_discarding());
}

#[test]
fn oversize_is_detected_for_a_line_wholly_inside_one_chunk() {
    let (messages, oversize) = frame(4, &[b"a\nabcde\nb\n"]);
    assert_eq!((strings(&messages), oversize), (vec!["a", "b"], 1));
}

#[test]
fn every_byte_through_the_next_newline_is_discarded_then_framing_resumes() {
    let (messages, oversize) = frame(3, &[b"toolong", b"still\r", b"gone\nok\n"]);
    assert_eq!((strings(&messages), oversize), (vec!["ok"], 1));
}

#[test]
fn nothing_is_held_while_discarding() {
    let mut framer = framer(3);
    framer.feed(b"toolong");
    framer.feed(b"more");
    assert_eq!(framer.framer().held(), 0);
    assert!(framer.framer().is_discarding());
}

#[test]
fn one_feed_reports_every_oversize_line_and_keeps_the_messages_around_them() {
    let (messages, oversize) = frame(2, &[b"a\nlong\nb\nlonger\nc\nlo"]);
    assert_eq!((strings(&messages), oversize), (vec!["a", "b", "c"], 2));
}

#[test]
fn a_failed_emit_leaves_the_framer_as_it_was() {
    let mut framer = Framer::new(NonZeroUsize::new(10).unwrap());
    framer.feed(b"ab", |_| Ok::<(), ()>(())).unwrap();
    let before = framer;
    assert_eq!(framer.feed(b"c\nd\ne", |_| Err(())), Err(()));
    assert_eq!(framer, before);
}

#[test]
fn joined_messages_name_the_held_prefix_and_the_chunk_end() {
    let mut framer = Framer::new(NonZeroUsize::new(10).unwrap());
    framer.feed(b"ab\r", |_| Ok::<(), ()>(())).unwrap();
    let mut seen = Vec::new();
    let fed = framer
        .feed(b"\nxy", |m| {
            seen.push(m);
            Ok::<(), ()>(())
        })
        .unwrap();
    assert_eq!(seen, [Message::Joined { held: 2, end: 0 }]);
    assert!(fed.released_held);
    assert_eq!(fed.hold_from, Some(1));
}

#[test]
fn a_paused_feed_resumed_with_the_rest_gives_the_messages_of_one_feed() {
    let chunk = b"a\n\nb\r\ntoolong\nc\nd\ne";
    let (whole, whole_oversize) = frame(4, &[b"x", chunk]);
    for max_messages in 1..5 {
        let mut framer = Framer::new(NonZeroUsize::new(4).unwrap());
        let mut messages = Vec::new();
        let mut oversize = 0;
        let mut rest: &[u8] = chunk;
        let mut held = b"x".to_vec();
        framer.feed(b"x", |_| Ok::<(), ()>(())).unwrap();
        while !rest.is_empty() {
            let fed = framer
                .feed_some(rest, max_messages, |m| {
                    messages.push(match m {
                        Message::Inside { start, end } => rest[start..end].to_vec(),
                        Message::Joined { held: n, end } => [&held[..n], &rest[..end]].concat(),
                    });
                    Ok::<(), ()>(())
                })
                .unwrap();
            if fed.released_held {
                held.clear();
            }
            if let Some(from) = fed.hold_from {
                held.extend_from_slice(&rest[from..fed.consumed]);
            }
            oversize += fed.oversize;
            rest = &rest[fed.consumed..];
        }
        assert_eq!(
            (&messages, oversize),
            (&whole, whole_oversize),
            "max {max_messages}"
        );
        assert_eq!(framer.bytes_searched(), 1 + chunk.len() as u64);
    }
}

#[test]
fn a_feed_of_some_messages_stops_before_the_message_after_the_last() {
    // A blank line after the last message is consumed with it, being no message.
    let chunk: &[u8] = b"a\n\nb\nc\nd";
    for (max_messages, consumed) in [(0, 0), (1, 3), (2, 5), (3, 8), (4, 8)] {
        let mut framer = Framer::new(NonZeroUsize::new(100).unwrap());
        let mut messages = Vec::new();
        let fed = framer
            .feed_some(chunk, max_messages, |m| {
                messages.push(m);
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(messages.len(), max_messages.min(3), "max {max_messages}");
        assert_eq!(fed.consumed, consumed, "max {max_messages}");
    }
}

#[test]
fn a_declined_message_is_offered_again_by_the_next_feed() {
    let mut framer = Framer::new(NonZeroUsize::new(100).unwrap());
    framer.feed(b"x", |_| Ok::<(), ()>(())).unwrap();
    let chunk: &[u8] = b"y\nlong one\nz\n";
    let mut offered = Vec::new();
    let mut decline = |m: Message| {
        offered.push(m);
        Ok::<Reply, ()>(if m.len() > 5 {
            Reply::Declined
        } else {
            Reply::Taken
        })
    };
    let fed = framer.feed_offering(chunk, &mut decline).unwrap();
    assert_eq!(fed.consumed, 2, "paused before the declined line");
    assert!(fed.released_held);
    let fed = framer.feed_offering(&chunk[2..], &mut decline).unwrap();
    assert_eq!(fed.consumed, 0, "declined first: nothing consumed");
    assert_eq!(framer.held(), 0);
    assert_eq!(
        offered,
        [
            Message::Joined { held: 1, end: 1 },
            Message::Inside { start: 2, end: 10 },
            Message::Inside { start: 0, end: 8 },
        ]
    );
}

#[test]
fn declining_a_message_that_joins_held_bytes_changes_nothing() {
    let mut framer = Framer::new(NonZeroUsize::new(100).unwrap());
    framer.feed(b"held", |_| Ok::<(), ()>(())).unwrap();
    let before = framer;
    let fed = framer
        .feed_offering(b"\r\nnext\n", |_| Ok::<Reply, ()>(Reply::Declined))
        .unwrap();
    assert_eq!((fed.consumed, fed.released_held), (0, false));
    assert_eq!(framer, before);
}

#[test]
fn a_held_message_given_up_is_discarded_through_its_newline() {
    let mut framer = Framer::new(NonZeroUsize::new(100).unwrap());
    let mut lengths = Vec::new();
    let mut feed = |framer: &mut Framer, chunk: &[u8]| {
        framer
            .feed(chunk, |m| {
                lengths.push(m.len());
                Ok::<(), ()>(())
            })
            .unwrap()
    };
    feed(&mut framer, b"{\"lost\":");
    framer.discard_held();
    assert_eq!((framer.held(), framer.is_discarding()), (0, true));
    feed(&mut framer, b"1}\n{}\n");
    assert_eq!(lengths, [2]);

    // With nothing held there is nothing to give up.
    framer.discard_held();
    assert!(!framer.is_discarding());
}
