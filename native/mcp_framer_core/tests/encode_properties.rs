//! The string writer against a reference that escapes one character at a
//! time, straight from Jason 1.4.5's tables, on random strings dense with
//! every character some mode escapes, at every length and offset the lanes
//! see; and the UTF-8 check against std's on random bytes.

#[path = "support/escape_reference.rs"]
mod escape_reference;

use escape_reference::reference;
use mcp_framer_core::encode::{
    check, check_ascii, write_checked, write_escaped, Escape, InvalidUtf8, WriteError,
};
use proptest::prelude::*;

/// Written from the plain prefix `check` gives, from the shorter one
/// `check_ascii` gives, and checked and written in one by `write_checked`:
/// all three must be the same text.
fn ours(text: &str, escape: Escape) -> String {
    let written = |plain| {
        let mut out = Vec::new();
        write_escaped(&mut out, text.as_bytes(), plain, escape).unwrap();
        String::from_utf8(out).unwrap()
    };
    let from_check = written(check(text.as_bytes(), escape).unwrap());
    let from_ascii = written(check_ascii(text.as_bytes(), escape).unwrap());
    assert_eq!(from_check, from_ascii);
    let mut checked = Vec::new();
    write_checked(&mut checked, text.as_bytes(), escape).unwrap();
    assert_eq!(from_check.as_bytes(), checked);
    from_check
}

/// Characters some mode escapes, their neighbours, and plain ones.
fn character() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => prop::char::range('a', 'z'),
        2 => prop::sample::select(vec![
            '"', '\\', '/', '<', '>', '&', '\u{7F}', '\u{0}', '\u{1F}', '\n', '\t', '\u{8}',
            '\u{c}', '\r', 'é', 'ÿ', '߿', 'ࠀ', '\u{2027}', '\u{2028}', '\u{2029}', '\u{202A}',
            '\u{2000}', '日', '\u{FFFF}', '😀', '\u{10000}', '\u{10FFFF}',
        ]),
        1 => any::<char>(),
    ]
}

fn escape() -> impl Strategy<Value = Escape> {
    prop::sample::select(Escape::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn every_string_is_escaped_as_the_reference_escapes_it(
        chars in prop::collection::vec(character(), 0..150),
        escape in escape(),
    ) {
        let text: String = chars.into_iter().collect();
        prop_assert_eq!(ours(&text, escape), reference(&text, escape));
    }

    #[test]
    fn a_plain_run_of_any_length_before_a_special_character_is_kept_whole(
        length in 0usize..100,
        special in prop::sample::select(vec!['"', '\u{1}', '/', '<', '\u{2028}', 'é', '😀']),
        escape in escape(),
    ) {
        let text = format!("{}{special}{}", "x".repeat(length), "y".repeat(length % 7));
        prop_assert_eq!(ours(&text, escape), reference(&text, escape));
    }

    #[test]
    fn the_first_invalid_byte_is_where_std_stops(
        bytes in prop::collection::vec(prop_oneof![
            3 => any::<u8>(),
            3 => Just(b'a'),
            1 => prop::sample::select(vec![0x80u8, 0xBF, 0xC2, 0xE2, 0xED, 0xF0, 0xF4]),
        ], 0..100),
        escape in escape(),
    ) {
        let expected = std::str::from_utf8(&bytes).map_err(|e| InvalidUtf8 { position: e.valid_up_to() });
        prop_assert_eq!(check(&bytes, escape).map(|_| ()), expected.map(|_| ()));
        let written = write_checked(&mut Vec::new(), &bytes, escape);
        prop_assert_eq!(written, expected.map(|_| ()).map_err(WriteError::InvalidUtf8));
    }

}

// Past its first 512 bytes, the rest of a string is checked and escaped
// a segment of about 4 KiB at a time, each ending where a character
// starts: long strings, with characters of every length across those
// boundaries, and bad bytes in any segment.
proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_long_string_is_escaped_across_its_segments_as_the_reference_escapes_it(
        prefix in 0usize..600,
        chars in prop::collection::vec(character(), 0..4000),
        escape in escape(),
    ) {
        let text: String = "p".repeat(prefix) + &chars.into_iter().collect::<String>();
        prop_assert_eq!(ours(&text, escape), reference(&text, escape));
    }

    #[test]
    fn the_first_invalid_byte_of_a_long_string_is_where_std_stops(
        chars in prop::collection::vec(character(), 500..4000),
        bad in prop::sample::select(vec![0x80u8, 0xBF, 0xC0, 0xC2, 0xE2, 0xED, 0xF0, 0xF4, 0xFF]),
        at in any::<prop::sample::Index>(),
        escape in escape(),
    ) {
        let mut bytes = chars.into_iter().collect::<String>().into_bytes();
        let at = at.index(bytes.len());
        bytes[at] = bad;
        let expected = std::str::from_utf8(&bytes).map_err(|e| InvalidUtf8 { position: e.valid_up_to() });
        let written = write_checked(&mut Vec::new(), &bytes, escape);
        prop_assert_eq!(written, expected.map(|_| ()).map_err(WriteError::InvalidUtf8));
    }
}
