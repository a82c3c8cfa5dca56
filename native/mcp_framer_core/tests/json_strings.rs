//! Strings with escapes, as Jason decodes them, whichever way the parser
//! takes them: the vector loop (`arch::copy_runs`) decodes the escapes it
//! can, and the checked path the rest and every error.

use mcp_framer_core::json::{
    parse, Error, ErrorKind, Limits, Parser, Ration, Unbalanced, Value, ValueBuilder,
};

fn decode(input: &[u8]) -> Result<Value, Error<Unbalanced>> {
    parse(input, &mut ValueBuilder::new())
}

/// Grants exactly the fuel asked for, each time: the parse starts with
/// none, so the vector loop is stopped at every escape by its fuel limit,
/// and each escape is decoded by the checked path.
struct Exactly;

impl Ration for Exactly {
    fn more(&mut self, _position: usize, needed: usize) -> usize {
        needed
    }
}

fn decode_escape_by_escape(input: &[u8]) -> Result<Value, Error<Unbalanced>> {
    Parser::default().parse_rationed(
        input,
        &mut ValueBuilder::new(),
        Limits::NONE,
        0,
        &mut Exactly,
    )
}

#[test]
fn every_u_escape_decodes_to_its_character_and_a_lone_surrogate_is_an_error() {
    for code in 0..=0xFFFFu32 {
        let input = format!("[\"a\\u{code:04x}b\", \"\\u{code:04X}\"]");
        let decoded = decode(input.as_bytes());
        match char::from_u32(code) {
            Some(character) => {
                let text = Value::String(format!("a{character}b"));
                let alone = Value::String(character.to_string());
                assert_eq!(decoded, Ok(Value::Array(vec![text, alone])), "{code:#x}");
            }
            // A high surrogate not followed by `\u`: the error is where
            // the low one should begin.
            None if code < 0xDC00 => assert_eq!(
                decoded,
                Err(Error {
                    position: 9,
                    kind: ErrorKind::UnexpectedByte
                }),
                "{code:#x}"
            ),
            None => assert_eq!(
                decoded,
                Err(Error {
                    position: 3,
                    kind: ErrorKind::InvalidToken { length: 6 }
                }),
                "{code:#x}"
            ),
        }
    }
}

#[test]
fn every_surrogate_pair_decodes_to_its_character() {
    for high in (0xD800..=0xDBFFu32).step_by(7) {
        for low in (0xDC00..=0xDFFFu32).step_by(5).chain([0xDFFF]) {
            let input = format!("\"\\u{high:04x}\\u{low:04X}!\"");
            let scalar = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            let expected = format!("{}!", char::from_u32(scalar).unwrap());
            assert_eq!(
                decode(input.as_bytes()),
                Ok(Value::String(expected)),
                "{input}"
            );
        }
    }
}

/// Text of the kind MCP tool results carry (bench/decode_traffic.exs),
/// and every kind of escape and error, at every length to the input's end.
fn documents() -> Vec<Vec<u8>> {
    let pieces: [&[u8]; 20] = [
        b"the ",
        b"file server ",
        br"\n",
        br"\t\r\b\f",
        br#"\"quoted\""#,
        br"C:\\Users\\dev",
        br"caf\u00e9",
        "café naïve 日本語 😀".as_bytes(),
        br"\ud83d\ude80",
        br"\u2014",
        br"\/api\/v1",
        br"\u0000\u007f\u0080\u07FF\u0800\uFFFF",
        br"\uD800\uDBFF",
        br"\udc00",
        br"\u12G4",
        br"\x",
        br"\U0041",
        b"\x01",
        b"\xff\xc3",
        b"\xe2\x82",
    ];
    let mut random = 0x9e37_79b9_7f4a_7c15_u64;
    let mut documents = Vec::new();
    for _ in 0..400 {
        let mut text = b"\"".to_vec();
        for _ in 0..random % 60 {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            // Mostly well-formed pieces, now and then a bad one.
            let piece = match random % 100 {
                0..=2 => pieces[12 + (random / 100) as usize % 8],
                _ => pieces[(random / 100) as usize % 12],
            };
            text.extend_from_slice(piece);
        }
        text.push(b'"');
        for end in [text.len(), text.len() - 1, text.len() * 2 / 3] {
            documents.push(text[..end].to_vec());
        }
    }
    documents
}

#[test]
fn a_string_decodes_the_same_whether_the_vector_loop_or_the_checked_path_takes_its_escapes() {
    for document in documents() {
        let fast = decode(&document);
        let checked = decode_escape_by_escape(&document);
        // The checked path runs out of fuel where the fast one would not:
        // only the kinds of error may differ there.
        match (&fast, &checked) {
            (
                _,
                Err(Error {
                    kind: ErrorKind::Exhausted,
                    ..
                }),
            ) => panic!("{document:?}: ran out of fuel"),
            _ => assert_eq!(fast, checked, "{:?}", String::from_utf8_lossy(&document)),
        }
    }
}
