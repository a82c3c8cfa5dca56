//! The JSON parser against `serde_json`, on documents rendered from random
//! values and on random token soup.
//!
//! Where Jason and serde_json differ, only Jason's side is tested here (in
//! `json_rules.rs`), and the generators avoid the difference:
//! * Repeated keys: serde_json keeps the last occurrence, Jason the first.
//!   Generated objects have distinct keys.
//! * `-0`: serde_json makes the float -0.0, Jason the integer 0; and `-0e5`
//!   is -0.0 to serde_json, 0.0 to Jason. Generated integers never render
//!   as `-0`, and -0.0 renders only as `-0.0`.
//! * Integers beyond `u64`: serde_json (without `arbitrary_precision`)
//!   makes them floats, and fails past f64's range; Jason keeps them exact.
//!   Generated integers fit `i64` or `u64`.
//! * Nesting: serde_json stops at 128 levels; Jason has no limit. Generated
//!   documents and token soup stay far below it.

use mcp_framer_core::json::{parse, Value, ValueBuilder};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// A document to render, objects with distinct keys.
#[derive(Clone, Debug)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Unsigned(u64),
    Float(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(BTreeMap<String, Json>),
}

/// What both parsers' values are compared as.
#[derive(Debug, PartialEq)]
enum Common {
    Null,
    Bool(bool),
    Int(i128),
    /// The bits, so that -0.0 and 0.0 differ.
    Float(u64),
    Str(String),
    Arr(Vec<Common>),
    Obj(BTreeMap<String, Common>),
}

/// Any text, or text thick with what strings must escape or may borrow.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[\\x00-\\x1f\"\\\\/a-z\u{7f}é€😀]{0,12}"]
}

fn json() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(Json::Int),
        any::<u64>().prop_map(Json::Unsigned),
        any::<f64>()
            .prop_filter("JSON has no infinities or NaN", |f| f.is_finite())
            .prop_map(Json::Float),
        text().prop_map(Json::Str),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Json::Arr),
            prop::collection::btree_map(text(), inner, 0..8).prop_map(Json::Obj),
        ]
    })
}

/// Choices for rendering, drawn from a seed so that one value renders many
/// ways: xorshift64.
struct Choices(u64);

impl Choices {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn whitespace(choices: &mut Choices, out: &mut String) {
    for _ in 0..choices.below(3) {
        out.push([' ', '\t', '\r', '\n'][choices.below(4) as usize]);
    }
}

fn render_string(text: &str, choices: &mut Choices, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        let short = match c {
            '"' => Some('"'),
            '\\' => Some('\\'),
            '/' => Some('/'),
            '\u{8}' => Some('b'),
            '\u{c}' => Some('f'),
            '\n' => Some('n'),
            '\r' => Some('r'),
            '\t' => Some('t'),
            _ => None,
        };
        let must_escape = c == '"' || c == '\\' || c < ' ';
        match (choices.below(3), short) {
            (0, _) if !must_escape => out.push(c),
            (1, Some(letter)) => {
                out.push('\\');
                out.push(letter);
            }
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    if choices.below(2) == 0 {
                        out.push_str(&format!("\\u{unit:04x}"));
                    } else {
                        out.push_str(&format!("\\u{unit:04X}"));
                    }
                }
            }
        }
    }
    out.push('"');
}

fn render(json: &Json, choices: &mut Choices, out: &mut String) {
    whitespace(choices, out);
    match json {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Int(i) => out.push_str(&i.to_string()),
        Json::Unsigned(u) => out.push_str(&u.to_string()),
        // Both forms are the shortest text that reads back as `f`.
        Json::Float(f) if choices.below(2) == 0 || *f == 0.0 => out.push_str(&format!("{f:?}")),
        Json::Float(f) => out.push_str(&format!("{f:e}")),
        Json::Str(s) => render_string(s, choices, out),
        Json::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                render(item, choices, out);
            }
            whitespace(choices, out);
            out.push(']');
        }
        Json::Obj(pairs) => {
            out.push('{');
            for (i, (key, value)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                whitespace(choices, out);
                render_string(key, choices, out);
                whitespace(choices, out);
                out.push(':');
                render(value, choices, out);
            }
            whitespace(choices, out);
            out.push('}');
        }
    }
    whitespace(choices, out);
}

fn float_from_text(text: &str) -> Common {
    // `{:e}` of an integral float has no dot, and still is a float.
    Common::Float(text.parse::<f64>().expect("a float").to_bits())
}

fn from_generated(json: &Json) -> Common {
    match json {
        Json::Null => Common::Null,
        Json::Bool(b) => Common::Bool(*b),
        Json::Int(i) => Common::Int(i128::from(*i)),
        Json::Unsigned(u) => Common::Int(i128::from(*u)),
        Json::Float(f) => float_from_text(&format!("{f:?}")),
        Json::Str(s) => Common::Str(s.clone()),
        Json::Arr(items) => Common::Arr(items.iter().map(from_generated).collect()),
        Json::Obj(pairs) => Common::Obj(
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), from_generated(v)))
                .collect(),
        ),
    }
}

fn from_ours(value: &Value) -> Common {
    match value {
        Value::Null => Common::Null,
        Value::Bool(b) => Common::Bool(*b),
        Value::Integer(i) => Common::Int(i128::from(*i)),
        Value::BigInteger(text) => Common::Int(text.parse().expect("an i128")),
        Value::Float(f) => Common::Float(f.to_bits()),
        Value::String(s) => Common::Str(s.clone()),
        Value::Array(items) => Common::Arr(items.iter().map(from_ours).collect()),
        Value::Object(pairs) => Common::Obj(
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), from_ours(v)))
                .collect(),
        ),
    }
}

fn from_serde(value: &serde_json::Value) -> Common {
    use serde_json::Value as S;
    match value {
        S::Null => Common::Null,
        S::Bool(b) => Common::Bool(*b),
        S::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Common::Int(i128::from(i)),
            (_, Some(u), _) => Common::Int(i128::from(u)),
            (_, _, Some(f)) => Common::Float(f.to_bits()),
            _ => unreachable!("a serde_json number is one of the three"),
        },
        S::String(s) => Common::Str(s.clone()),
        S::Array(items) => Common::Arr(items.iter().map(from_serde).collect()),
        S::Object(pairs) => Common::Obj(
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), from_serde(v)))
                .collect(),
        ),
    }
}

/// Pieces of JSON, whole and broken, for token soup.
const PIECES: &[&[u8]] = &[
    b"[",
    b"]",
    b"{",
    b"}",
    b",",
    b":",
    b" ",
    b"\n",
    b"\t",
    b"\x0c",
    b"\"",
    b"\\",
    b"\\u",
    b"d8",
    b"dc",
    b"00",
    b"41",
    b"0",
    b"1",
    b"9",
    b"-",
    b"+",
    b".",
    b"e",
    b"E",
    b"true",
    b"false",
    b"null",
    b"tru",
    b"\"a\"",
    b"\"k\":",
    b"\x01",
    b"\x7f",
    b"\xc3\xa9",
    b"\xff",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\\ud83d\\ude00",
    b"\\n",
    b"\\x",
    b"x",
    b"1e400",
    b"1e-400",
    b"12345678901234567890",
];

fn soup() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(0..PIECES.len(), 0..24).prop_map(|picks| {
        picks
            .iter()
            .flat_map(|&i| PIECES[i].iter().copied())
            .collect()
    })
}

/// A rendered document with one byte replaced, inserted or removed: text
/// that is valid JSON or nearly.
fn mutant() -> impl Strategy<Value = Vec<u8>> {
    let bytes = prop_oneof![
        prop::sample::select(b"[]{},:\" \\u0123456789-+.eEtrufalsn\x01\x7f\xff".to_vec()),
        any::<u8>(),
    ];
    (
        json(),
        1..u64::MAX,
        any::<prop::sample::Index>(),
        0..3u8,
        bytes,
    )
        .prop_map(|(json, seed, at, how, byte)| {
            let mut text = String::new();
            render(&json, &mut Choices(seed), &mut text);
            let mut text = text.into_bytes();
            let at = at.index(text.len() + 1);
            match how {
                0 if at < text.len() => text[at] = byte,
                1 => text.insert(at, byte),
                _ if at < text.len() => {
                    text.remove(at);
                }
                _ => {}
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn rendered_documents_decode_to_the_value_rendered(json in json(), seed in 1..u64::MAX) {
        let mut text = String::new();
        render(&json, &mut Choices(seed), &mut text);
        let expected = from_generated(&json);
        let ours = parse(text.as_bytes(), &mut ValueBuilder::new());
        let ours = ours.map(|value| from_ours(&value));
        prop_assert_eq!(ours.as_ref().ok(), Some(&expected), "{}", text);
        let theirs: serde_json::Value = serde_json::from_str(&text).expect("serde_json agrees");
        prop_assert_eq!(from_serde(&theirs), expected);
    }

    #[test]
    fn token_soup_is_accepted_exactly_when_serde_json_accepts_it(input in soup()) {
        let ours = parse(&input, &mut ValueBuilder::new());
        let theirs = serde_json::from_slice::<serde_json::Value>(&input);
        prop_assert_eq!(
            ours.is_ok(),
            theirs.is_ok(),
            "{:?}: ours {:?}, serde_json {:?}",
            String::from_utf8_lossy(&input),
            ours,
            theirs
        );
    }

    #[test]
    fn mutated_documents_are_accepted_exactly_when_serde_json_accepts_them(input in mutant()) {
        // Mutants may repeat a key or make `-0`, whose values differ (see the
        // top of this file), but not whether they are accepted.
        let ours = parse(&input, &mut ValueBuilder::new());
        let theirs = serde_json::from_slice::<serde_json::Value>(&input);
        prop_assert_eq!(
            ours.is_ok(),
            theirs.is_ok(),
            "{:?}: ours {:?}, serde_json {:?}",
            String::from_utf8_lossy(&input),
            ours,
            theirs
        );
    }

    #[test]
    fn any_bytes_give_a_value_or_an_error_inside_the_input(input in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Err(error) = parse(&input, &mut ValueBuilder::new()) {
            prop_assert!(error.position <= input.len());
        }
    }
}
