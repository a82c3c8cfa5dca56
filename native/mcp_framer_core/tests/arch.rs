//! The vector code of `mcp_framer_core::arch`: every instruction set this
//! CPU has, and the portable twin, give a byte loop's answers from every
//! offset of inputs of every length, up to and at the input's end.

#[path = "support/letters.rs"]
mod letters;

use letters::Letters;
use mcp_framer_core::arch::{self, portable, Copied, Isa, Masks, Run, Special, Stops};

fn is_special(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

/// xorshift64, so that every run tests the same inputs.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Inputs of every length up to two and a half blocks of 64 and some
/// longer, each of plain text with special and high bytes now and then,
/// thin or thick, with runs of backslashes, and spaces, the first byte
/// past the control bytes; and `\u` escapes at every offset.
fn inputs() -> Vec<Vec<u8>> {
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    let mut inputs = Vec::new();
    for length in (0..=160).chain([200, 255, 256, 257, 400, 700]) {
        for one_in in [3, 40, 1000] {
            let input = (0..length)
                .map(|_| match random.next() % one_in {
                    0 => *b"\"\\\\\\\x00\x1f "
                        .get((random.next() % 7) as usize)
                        .unwrap_or(&b'"'),
                    1 => [0xC3, 0xA9, 0xFF, 0x80][(random.next() % 4) as usize],
                    2 => [b'u', b'p'][(random.next() % 2) as usize],
                    _ => b'a' + (random.next() % 26) as u8,
                })
                .collect();
            inputs.push(input);
        }
    }
    // `\u` escapes at every offset of two blocks and a half, inside a block
    // and going on past its end: of one to three bytes of UTF-8, digits of
    // either case, two in a row, surrogate pairs, lone surrogates,
    // ill-formed ones, one whose `\` is escaped, and a word escaped to
    // ASCII, longer than a block, and a run cut short; with text after
    // them, and without.
    let escapes: [&[u8]; 20] = [
        br"\uabcd",
        br"\u0041\u00e9",
        br"\u07FF\u0800",
        br"\uD83D\uDE80",
        // The first and last code points past the BMP, and the code units
        // around the surrogates'.
        br"\uD800\uDC00\udbff\udfff",
        br"\uD7FF\uDBFF\uDC00\uE000",
        br"\uD83D\uDE80\ud83e\udd16",
        // A high surrogate and no low one, twice, then a pair.
        br"\uD83D\u0041\uD83D\uD83D\uDE80",
        // A high surrogate right before a pair: no pair of two high ones.
        br"\uD83D\uD83D\uDE80",
        br"\uDE80\uD83D",
        br"\uD83D\\uDE80",
        br"\uD83D\uDEg0",
        br"\uD83D\n\uDE80",
        br"\u12g4",
        // Ill-formed in its last digit alone.
        br"\u004g",
        // Bytes whose low seven bits are hex digits.
        b"\\u\xB0\xC1\xE6\xB9",
        br#"\u1"34"#,
        br"\\u0041",
        br"\u65e5\u672C\u8a9e\u306e\u30c6\u30AD\u30b9\u30c8\uD83D\uDE80\u0021",
        // A run whose last escape is cut short.
        br"\u00e9\u00",
    ];
    for at in 0..=160 {
        for escape in escapes {
            let mut input = vec![b'x'; at];
            input.extend_from_slice(escape);
            // And at the input's end.
            inputs.push(input.clone());
            input.extend_from_slice(b"yz\"");
            inputs.push(input);
        }
    }
    inputs
}

fn find_by_bytes(input: &[u8], from: usize) -> Run {
    let rest = &input[from..];
    let length = rest
        .iter()
        .position(|&b| is_special(b))
        .unwrap_or(rest.len());
    Run {
        stop: from + length,
        ascii: rest[..length].is_ascii(),
    }
}

#[test]
fn every_instruction_set_finds_the_first_special_byte_from_every_offset() {
    for input in inputs() {
        for from in 0..=input.len() {
            let expected = find_by_bytes(&input, from);
            assert_eq!(portable::find_special(&input, from), expected);
            for isa in Isa::all() {
                let found = isa.find_special(&input, from);
                assert_eq!(found, expected, "{} from {from} of {input:?}", isa.name());
            }
            assert_eq!(arch::find_special(&input, from), expected);
        }
    }
}

/// What `copy_runs` should do, a byte at a time.
fn copy_by_bytes(input: &[u8], from: usize, out: &mut Vec<u8>, special: &mut Letters) -> Copied {
    let mut at = from;
    let mut ascii = true;
    loop {
        while let Some(&byte) = input.get(at).filter(|&&b| !is_special(b)) {
            out.push(byte);
            ascii &= byte < 0x80;
            at += 1;
        }
        match special.at(input, at) {
            Some(decoded) => {
                out.extend_from_slice(&decoded.bytes[..decoded.length]);
                at = decoded.next;
            }
            None => return Copied { at, ascii },
        }
    }
}

#[test]
fn every_instruction_set_copies_runs_and_escapes_as_a_byte_loop_does_from_every_offset() {
    for input in inputs() {
        for from in 0..=input.len() {
            for left in [0, 1, usize::MAX] {
                let mut expected_out = b"before".to_vec();
                let mut expected_special = Letters { left };
                let expected =
                    copy_by_bytes(&input, from, &mut expected_out, &mut expected_special);
                let mut twin_out = b"before".to_vec();
                let mut twin_special = Letters { left };
                let twin = portable::copy_runs(&input, from, &mut twin_out, &mut twin_special);
                assert_eq!(
                    (twin, &twin_out, twin_special),
                    (expected, &expected_out, expected_special)
                );
                for isa in Isa::all() {
                    // From nothing, so that the output grows as it goes.
                    let mut out = Vec::new();
                    let mut special = Letters { left };
                    let copied = isa.copy_runs(&input, from, &mut out, &mut special);
                    let what = format!("{} from {from}, {left} escapes, of {input:?}", isa.name());
                    assert_eq!(copied, expected, "{what}");
                    assert_eq!(out, expected_out[6..], "{what}");
                    assert_eq!(special, expected_special, "{what}");
                }
            }
        }
    }
}

fn masks_by_bytes(lane: &[u8; 16]) -> Masks {
    let bits = |test: fn(u8) -> bool| {
        lane.iter()
            .enumerate()
            .fold(0, |mask, (i, &b)| mask | u64::from(test(b)) << i)
    };
    Masks {
        special: bits(is_special),
        high: bits(|b| b >= 0x80),
    }
}

#[test]
fn every_byte_value_in_every_position_of_a_lane_is_classified_as_a_byte_loop_does() {
    for position in 0..16 {
        for byte in 0..=255u8 {
            let mut lane = [b'a'; 16];
            lane[position] = byte;
            let expected = masks_by_bytes(&lane);
            assert_eq!(
                arch::classify_lane(&lane),
                expected,
                "{byte:#x} at {position}"
            );
            assert_eq!(
                portable::classify_lane(&lane),
                expected,
                "{byte:#x} at {position}"
            );
        }
    }
    let mut random = Random(0x2545_f491_4f6c_dd1d);
    for _ in 0..20_000 {
        let lane = [0; 16].map(|_: u8| {
            [b'"', b'\\', 0x1F, 0x20, 0x7F, 0x80, 0xFF, b'a'][(random.next() % 8) as usize]
        });
        assert_eq!(arch::classify_lane(&lane), masks_by_bytes(&lane));
        assert_eq!(portable::classify_lane(&lane), masks_by_bytes(&lane));
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_newline_mask_from_every_offset_is_the_portable_twins() {
    let mut random = Random(0x1234_5678_9abc_def1);
    for length in 0..300 {
        let input: Vec<u8> = (0..length)
            .map(|_| {
                if random.next().is_multiple_of(9) {
                    b'\n'
                } else {
                    b'x'
                }
            })
            .collect();
        for at in 0..=length + 1 {
            let expected = input
                .iter()
                .enumerate()
                .skip(at)
                .take(64)
                .fold(0, |mask, (i, &b)| mask | u64::from(b == b'\n') << (i - at));
            assert_eq!(
                portable::newline_mask(&input, at),
                expected,
                "{at} of {length}"
            );
            assert_eq!(arch::newline_mask(&input, at), expected, "{at} of {length}");
        }
    }
}

/// The encoder's escape modes' stops, as `encode::Escape::stops` gives
/// them: each extra byte in each of the three places, and the high bytes;
/// and an extra byte that is high itself, with the high bytes, as its
/// checked copy of ASCII asks for them.
const STOPS: [Stops; 5] = [
    Stops {
        extra: [b'"'; 3],
        high: false,
    },
    Stops {
        extra: [0xE2, b'"', b'"'],
        high: false,
    },
    Stops {
        extra: [0xE2, b'<', b'/'],
        high: false,
    },
    Stops {
        extra: [b'"'; 3],
        high: true,
    },
    Stops {
        extra: [0xE2, b'<', b'/'],
        high: true,
    },
];

fn find_stop_by_bytes(text: &[u8], from: usize, stops: Stops) -> usize {
    (from..text.len())
        .find(|&i| stops.stops_at(text[i]))
        .unwrap_or(text.len())
}

/// Inputs of every length up to two and a half blocks of 64 and some
/// longer, of plain text with, thin or thick, bytes some mode stops at and
/// their neighbours.
fn stop_inputs() -> Vec<Vec<u8>> {
    let mut random = Random(0x2545_f491_4f6c_dd1d);
    let mut inputs = Vec::new();
    for length in (0..=160).chain([200, 255, 256, 257, 400, 700]) {
        for one_in in [2, 40, 1000] {
            let input = (0..length)
                .map(|_| match random.next() % one_in {
                    0 => [
                        b'"', b'\\', 0x1F, 0x20, 0x7F, 0x80, 0xE2, 0xFF, b'<', b'/', 0x00,
                    ][(random.next() % 11) as usize],
                    _ => b'a' + (random.next() % 26) as u8,
                })
                .collect();
            inputs.push(input);
        }
    }
    inputs
}

#[test]
fn every_instruction_set_finds_the_first_stop_from_every_offset() {
    let all = Isa::all();
    for input in stop_inputs() {
        for stops in STOPS {
            for from in 0..=input.len() {
                let expected = find_stop_by_bytes(&input, from, stops);
                let twin = portable::find_stop(&input, from, stops);
                assert_eq!(twin, expected, "{stops:?} from {from} of {input:?}");
                for isa in &all {
                    let found = isa.find_stop(&input, from, stops);
                    let name = isa.name();
                    assert_eq!(found, expected, "{name} {stops:?} from {from} of {input:?}");
                }
                let found = arch::find_stop(&input, from, stops);
                assert_eq!(found, expected, "{stops:?} from {from} of {input:?}");
            }
        }
    }
}

#[test]
fn every_byte_value_in_every_position_of_every_block_is_found_as_a_byte_loop_finds_it() {
    let all = Isa::all();
    // Up to 70 bytes, the byte is in every place of a first block of 8, 16,
    // 32 or 64 and of the last, overlapping one; from 100 on, of the blocks
    // after those.
    for stops in STOPS {
        for length in (1..=70).chain([100, 127, 128, 129, 140]) {
            for position in 0..length {
                let mut input = vec![b'a'; length];
                for byte in 0..=255u8 {
                    input[position] = byte;
                    for from in [0, position.saturating_sub(1), position, position + 1] {
                        let expected = find_stop_by_bytes(&input, from, stops);
                        let finds = all
                            .iter()
                            .map(|isa| (isa.name(), isa.find_stop(&input, from, stops)));
                        let twin = ("portable twin", portable::find_stop(&input, from, stops));
                        let chosen = ("arch::find_stop", arch::find_stop(&input, from, stops));
                        for (name, found) in finds.chain([twin, chosen]) {
                            assert_eq!(
                                found, expected,
                                "{name} {stops:?}: {byte:#x} at {position} of {length} from {from}"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn the_copy_to_the_stop_appends_what_lies_before_it_from_every_offset() {
    for input in stop_inputs() {
        for stops in STOPS {
            for from in 0..=input.len() {
                let stop = find_stop_by_bytes(&input, from, stops);
                let expected = (stop, [b"head", &input[from..stop]].concat());
                let copied = |copy: fn(&[u8], usize, Stops, &mut Vec<u8>) -> usize| {
                    let mut out = b"head".to_vec();
                    (copy(&input, from, stops, &mut out), out)
                };
                let twin = copied(portable::copy_to_stop);
                assert_eq!(twin, expected, "{stops:?} from {from} of {input:?}");
                let lane = copied(arch::copy_to_stop);
                assert_eq!(lane, expected, "{stops:?} from {from} of {input:?}");
            }
        }
    }
}

#[test]
fn the_copy_to_the_stop_stores_nothing_past_the_rest_of_the_text() {
    for input in stop_inputs() {
        for from in 0..=input.len() {
            for copy in [portable::copy_to_stop, arch::copy_to_stop] {
                let mut out = Vec::with_capacity(input.len() - from);
                let capacity = out.capacity();
                copy(&input, from, STOPS[3], &mut out);
                assert_eq!(out.capacity(), capacity, "from {from} of {input:?}");
            }
        }
    }
}

#[test]
fn the_best_instruction_set_is_the_widest_the_cpu_has() {
    let all = Isa::all();
    assert_eq!(all.first().map(|isa| isa.name()), Some("portable"));
    assert_eq!(Isa::best(), *all.last().unwrap());
}

/// `Isa::all` lists each instruction set whose features the CPU reports,
/// as `arch`'s modules name them: AVX2 with BMI1, BMI2 and POPCNT;
/// AVX-512 with F and BW on top; and VBMI and VBMI2 on top of that. One
/// the detection missed would go unused, and untested by every test here.
#[cfg(target_arch = "x86_64")]
#[test]
fn every_instruction_set_the_cpu_reports_is_listed() {
    let avx2 = is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("bmi1")
        && is_x86_feature_detected!("bmi2")
        && is_x86_feature_detected!("popcnt");
    let avx512 =
        avx2 && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw");
    let vbmi2 =
        avx512 && is_x86_feature_detected!("avx512vbmi") && is_x86_feature_detected!("avx512vbmi2");
    let reported = [
        ("portable", true),
        ("sse2", true),
        ("avx2", avx2),
        ("avx512", avx512),
        ("avx512vbmi2", vbmi2),
    ];
    let expected: Vec<&str> = reported
        .into_iter()
        .filter_map(|(name, has)| has.then_some(name))
        .collect();
    let listed: Vec<&str> = Isa::all().into_iter().map(Isa::name).collect();
    assert_eq!(listed, expected);
}

/// Text of every script and width, a bad byte now and then (a lone
/// continuation, an overlong lead, a surrogate, a lead past U+10FFFF, a
/// continuation of 0x80 to 0x9F after E0, overlong, and one of 0x80 to
/// 0x8F after a four-byte lead, overlong after F0 and past U+10FFFF after
/// F5), so that characters, good and bad, fall across every place of a
/// block.
fn utf8_inputs() -> Vec<Vec<u8>> {
    let pieces: [&[u8]; 18] = [
        b"a",
        b"plain ",
        "é".as_bytes(),
        "߿".as_bytes(),
        "ࠀ".as_bytes(),
        "日本".as_bytes(),
        "\u{FFFF}".as_bytes(),
        "😀".as_bytes(),
        "\u{10FFFF}".as_bytes(),
        b"\x80",
        b"\xC0\xAF",
        b"\xED\xA0\x80",
        b"\xE0\x80\xAF",
        b"\xE0\x9F\xBF",
        b"\xF4\x90\x80\x80",
        b"\xF0\x8F\xBF\xBF",
        b"\xF5\x80\x80\x80",
        b"\xFF",
    ];
    let mut random = Random(0x2545_f491_4f6c_dd1d);
    let mut inputs = Vec::new();
    for length in (0..=140).chain([191, 192, 193, 255, 256, 257]) {
        for bad_one_in in [4, 60, u64::MAX] {
            let mut input = Vec::new();
            while input.len() < length {
                let good = (random.next() % 9) as usize;
                let bad = 9 + (random.next() % 9) as usize;
                let piece = if random.next().is_multiple_of(bad_one_in) {
                    bad
                } else {
                    good
                };
                input.extend_from_slice(pieces[piece]);
            }
            inputs.push(input);
        }
    }
    inputs
}

#[test]
fn every_instruction_set_checks_utf8_as_std_does_from_every_offset_to_every_end() {
    let all = Isa::all();
    for input in utf8_inputs() {
        for from in 0..=input.len() {
            for to in [
                input.len(),
                from + (input.len() - from) / 2,
                from + 1,
                from + 63,
                from + 64,
                from + 65,
            ] {
                let Some(text) = input.get(from..to) else {
                    continue;
                };
                let expected = std::str::from_utf8(text).is_ok();
                for isa in &all {
                    assert_eq!(isa.is_utf8(text), expected, "{} on {text:?}", isa.name());
                }
                assert_eq!(arch::is_utf8(text), expected);
            }
        }
    }
}

/// What the JSON escape mode writes for `byte`, as Jason's tables have it,
/// or `None` for a byte it writes as `\u00XX`.
fn json_escape_by_bytes(byte: u8) -> Option<Vec<u8>> {
    Some(match byte {
        b'"' => br#"\""#.to_vec(),
        b'\\' => br"\\".to_vec(),
        0x08 => br"\b".to_vec(),
        0x09 => br"\t".to_vec(),
        0x0A => br"\n".to_vec(),
        0x0C => br"\f".to_vec(),
        0x0D => br"\r".to_vec(),
        ..0x20 => return None,
        _ => vec![byte],
    })
}

/// `escape_blocks` as a byte loop: whole blocks of 32 while none holds a
/// byte written as `\u00XX` and `room` (the output's room when it starts)
/// is left for one more block's 64 bytes.
fn escape_blocks_by_bytes(text: &[u8], from: usize, room: usize) -> (usize, Vec<u8>) {
    let (mut at, mut out) = (from, Vec::new());
    while let Some(block) = text.get(at..at + 32) {
        let written: Option<Vec<Vec<u8>>> =
            block.iter().map(|&b| json_escape_by_bytes(b)).collect();
        match written {
            Some(written) if room - out.len() >= 64 => out.extend(written.concat()),
            _ => break,
        }
        at += 32;
    }
    (at, out)
}

/// Inputs for `escape_blocks`: plain text and high bytes, with escapes
/// from none to every byte, and now and then a byte written as `\u00XX`.
fn escape_inputs() -> Vec<Vec<u8>> {
    let mut random = Random(0x853c_49e6_748f_ea9b);
    let mut inputs = Vec::new();
    for length in (0..=140).chain([200, 256, 257, 700]) {
        for one_in in [1, 2, 8, 40, 1000] {
            let input = (0..length)
                .map(|_| match random.next() % one_in {
                    0 => {
                        b"\"\\\x08\x09\x0a\x0c\x0d\x00\x1f\x7f\x80\xe2\xff<"
                            [(random.next() % 14) as usize]
                    }
                    _ => b'a' + (random.next() % 26) as u8,
                })
                .collect();
            inputs.push(input);
        }
    }
    inputs
}

#[test]
fn the_escape_blocks_twin_writes_whole_blocks_as_a_byte_loop_does_from_every_offset() {
    for input in escape_inputs() {
        for from in 0..=input.len() {
            for room in [64, 100, 2 * input.len() + 64] {
                let mut out = Vec::with_capacity(room);
                let room = out.capacity();
                let stop = portable::escape_blocks(&input, from, &mut out);
                let expected = escape_blocks_by_bytes(&input, from, room);
                assert_eq!(
                    (stop, out),
                    expected,
                    "from {from} with room {room} of {input:?}"
                );
            }
        }
    }
}

/// An output that holds "head", with room for `room` bytes more.
fn head_with_room(room: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + room);
    out.extend_from_slice(b"head");
    out
}

/// The test below checks only the instruction sets that answer with a
/// block loop, so a wide one that lost its loop would go unchecked.
#[test]
fn every_instruction_set_from_avx2_up_has_an_escape_loop() {
    for isa in Isa::all() {
        let has_loop = isa.escape_blocks(b"", 0, &mut Vec::new()).is_some();
        let narrow = ["portable", "sse2"].contains(&isa.name());
        assert_eq!(has_loop, !narrow, "{}", isa.name());
    }
}

#[test]
fn every_instruction_set_with_an_escape_loop_writes_as_the_portable_twin_from_every_offset() {
    let all = Isa::all();
    for input in escape_inputs() {
        for from in 0..=input.len() {
            for room in [64, 100, 2 * input.len() + 64] {
                let mut twin = head_with_room(room);
                let twin_stop = portable::escape_blocks(&input, from, &mut twin);
                for isa in &all {
                    let mut out = head_with_room(room);
                    if let Some(stop) = isa.escape_blocks(&input, from, &mut out) {
                        let name = isa.name();
                        assert_eq!(
                            (stop, &out),
                            (twin_stop, &twin),
                            "{name} from {from} of {input:?}"
                        );
                    }
                }
                let mut chosen = head_with_room(room);
                let stop = arch::escape_blocks(&input, from, &mut chosen);
                let nothing = (from, &b"head".to_vec());
                assert!([nothing, (twin_stop, &twin)].contains(&(stop, &chosen)));
            }
        }
    }
}
