//! One test per decoding rule of `Jason.decode/1`, named after it.

use mcp_framer_core::json::{
    parse, Builder, Error, ErrorKind, Limit, Limits, Parser, Ration, Text, Unbalanced, Value,
    ValueBuilder, INTEGER_MAX_CHARS,
};
use std::collections::BTreeMap;

fn decode(input: &[u8]) -> Result<Value, Error<Unbalanced>> {
    parse(input, &mut ValueBuilder::new())
}

fn ok(input: &str) -> Value {
    match decode(input.as_bytes()) {
        Ok(value) => value,
        Err(error) => panic!("{input:?} failed: {error:?}"),
    }
}

/// The position of the error, asserting there is one.
fn error_at(input: &[u8]) -> usize {
    match decode(input) {
        Ok(value) => panic!("{input:?} decoded to {value:?}"),
        Err(error) => error.position,
    }
}

fn kind(input: &[u8]) -> ErrorKind<Unbalanced> {
    match decode(input) {
        Ok(value) => panic!("{input:?} decoded to {value:?}"),
        Err(error) => error.kind,
    }
}

fn string(text: &str) -> Value {
    Value::String(text.to_owned())
}

fn float(input: &str) -> f64 {
    match ok(input) {
        Value::Float(value) => value,
        other => panic!("{input:?} decoded to {other:?}"),
    }
}

// Structure

#[test]
fn objects_become_maps_with_string_keys() {
    let expected = BTreeMap::from([
        ("a".to_owned(), Value::Integer(1)),
        ("b".to_owned(), Value::Object(BTreeMap::new())),
    ]);
    assert_eq!(ok(r#" { "a" : 1 , "b":{} } "#), Value::Object(expected));
}

#[test]
fn duplicate_key_first_occurrence_wins() {
    let expected = BTreeMap::from([
        ("a".to_owned(), Value::Integer(1)),
        ("b".to_owned(), Value::Integer(2)),
    ]);
    assert_eq!(ok(r#"{"a":1,"b":2,"a":3,"a":4}"#), Value::Object(expected));
}

#[test]
fn duplicate_keys_are_all_given_to_the_builder() {
    // A NIF builder must see every pair to keep the first itself.
    struct Keys(Vec<String>, usize);
    impl<'de> Builder<'de> for Keys {
        type Value = (Vec<String>, usize);
        type Error = ();
        fn null(&mut self) -> Result<(), ()> {
            Ok(())
        }
        fn bool(&mut self, _: bool) -> Result<(), ()> {
            Ok(())
        }
        fn integer(&mut self, _: i64) -> Result<(), ()> {
            Ok(())
        }
        fn big_integer(&mut self, _: &'de str) -> Result<(), ()> {
            Ok(())
        }
        fn float(&mut self, _: f64) -> Result<(), ()> {
            Ok(())
        }
        fn string(&mut self, _: Text<'de, '_>) -> Result<(), ()> {
            Ok(())
        }
        fn end_array(&mut self, _: usize) -> Result<(), ()> {
            Ok(())
        }
        fn key(&mut self, text: Text<'de, '_>) -> Result<(), ()> {
            self.0.push(text.as_str().to_owned());
            Ok(())
        }
        fn end_object(&mut self, count: usize) -> Result<(), ()> {
            self.1 = count;
            Ok(())
        }
        fn finish(&mut self) -> Result<Self::Value, ()> {
            Ok((std::mem::take(&mut self.0), self.1))
        }
    }
    let seen = parse(br#"{"a":1,"a":2}"#, &mut Keys(Vec::new(), 0));
    assert_eq!(seen, Ok((vec!["a".to_owned(), "a".to_owned()], 2)));
}

#[test]
fn arrays_become_lists_in_order() {
    let expected = Value::Array(vec![Value::Integer(1), Value::Array(vec![]), string("x")]);
    assert_eq!(ok(" [ 1 , [ ] ,\"x\" ] "), expected);
}

#[test]
fn true_false_and_null_are_literals() {
    assert_eq!(
        ok("[true,false,null]"),
        Value::Array(vec![Value::Bool(true), Value::Bool(false), Value::Null])
    );
}

#[test]
fn a_misspelt_literal_is_an_error_at_its_first_byte() {
    assert_eq!(error_at(b"[trux]"), 1);
    assert_eq!(error_at(b"[nul"), 1);
    assert_eq!(kind(b"[nul"), ErrorKind::UnexpectedByte);
    assert_eq!(error_at(b"True"), 0);
}

#[test]
fn a_trailing_comma_is_an_error_at_the_bracket() {
    assert_eq!(error_at(b"[1,]"), 3);
    assert_eq!(error_at(br#"{"a":1,}"#), 7);
}

#[test]
fn a_missing_comma_or_colon_is_an_error_at_the_byte_found() {
    assert_eq!(error_at(b"[1 2]"), 3);
    assert_eq!(error_at(br#"{"a" 1}"#), 5);
    assert_eq!(error_at(b"{1:2}"), 1);
}

#[test]
fn million_open_brackets_do_not_overflow_the_stack() {
    let input = vec![b'['; 1_000_000];
    assert_eq!(
        decode(&input),
        Err(Error {
            position: input.len(),
            kind: ErrorKind::UnexpectedEnd
        })
    );
}

#[test]
fn depth_is_limited_only_by_input_length() {
    let depth = 1_000_000;
    let mut input = vec![b'['; depth];
    input.extend(std::iter::repeat_n(b']', depth));
    // Only the outermost level is checked: comparing the whole value would
    // recurse in the derived PartialEq. Dropping it must not recurse.
    assert!(matches!(decode(&input), Ok(Value::Array(ref items)) if items.len() == 1));
}

#[test]
fn nested_objects_are_as_deep_as_arrays_and_dropped_without_recursion() {
    let depth = 100_000;
    let mut input = br#"{"a":"#.repeat(depth);
    input.push(b'1');
    input.extend(std::iter::repeat_n(b'}', depth));
    assert!(matches!(decode(&input), Ok(Value::Object(ref pairs)) if pairs.len() == 1));
}

// Strings

#[test]
fn all_escapes_are_decoded() {
    assert_eq!(
        ok(r#""\"\\\/\b\f\n\r\t\u0041\u00e9\u20AC""#),
        string("\"\\/\u{8}\u{c}\n\r\tAé€")
    );
}

#[test]
fn an_unknown_escape_is_an_error_at_its_letter_up_to_u_and_at_its_backslash_past_it() {
    // Jason's escape table ends at `u` (0x75): a letter after it falls
    // through to the error for the backslash.
    assert_eq!(error_at(br#""\U0041""#), 2);
    assert_eq!(error_at(b"\"\\\x00\""), 2);
    assert_eq!(error_at(b"\"\\\n\""), 2);
    assert_eq!(error_at(br#""ab\a""#), 4);
    assert_eq!(error_at(br#""ab\x""#), 3);
    assert_eq!(error_at(br#""\v""#), 1);
    assert_eq!(error_at(b"\"\\\x7f\""), 1);
    // The four such files of JSONTestSuite.
    assert_eq!(error_at(br#"["\x00"]"#), 2);
    assert_eq!(error_at("[\"\\\u{1F300}\"]".as_bytes()), 2);
    assert_eq!(error_at(b"[\"\\\xE5\"]"), 2);
    assert_eq!(error_at(br#"["\{["\{["\{["\{"#), 2);
}

#[test]
fn surrogate_pairs_are_joined() {
    assert_eq!(ok(r#""\ud83d\ude00""#), string("😀"));
    assert_eq!(ok(r#""\uD834\uDD1E""#), string("𝄞"));
}

#[test]
fn lone_surrogate_is_an_error() {
    // A lone low surrogate: the escape is the token.
    assert_eq!(
        decode(br#""\udc00""#),
        Err(Error {
            position: 1,
            kind: ErrorKind::InvalidToken { length: 6 }
        })
    );
    // A high surrogate followed by something other than an escape: the
    // error is where the low one should begin.
    assert_eq!(error_at(br#""\ud800x""#), 7);
    assert_eq!(error_at(br#""\ud800""#), 7);
    // A high surrogate followed by another escape that is not a low one:
    // the pair is the token.
    assert_eq!(
        kind(br#""\ud800\u0041""#),
        ErrorKind::InvalidToken { length: 12 }
    );
    assert_eq!(error_at(br#""\ud800\u0041""#), 1);
    assert_eq!(error_at(br#""\ud800\ud800""#), 1);
}

#[test]
fn a_bad_hex_escape_is_an_error_at_its_backslash() {
    assert_eq!(
        decode(br#"["\u12G4"]"#),
        Err(Error {
            position: 2,
            kind: ErrorKind::InvalidToken { length: 6 }
        })
    );
    // Cut short: Jason needs four bytes before it reads any.
    assert_eq!(error_at(br#""\u12"#), 1);
    // Bad last digits of a low surrogate blame the low escape alone.
    assert_eq!(error_at(br#""\ud800\udcZZ""#), 7);
}

#[test]
fn a_u_escape_with_any_two_bad_hex_digits_is_an_error_at_its_backslash() {
    for (first, second) in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)] {
        let mut digits = *b"0000";
        digits[first] = b'G';
        digits[second] = b'z';
        let input = [br#""\u"#, &digits[..], b"\""].concat();
        assert_eq!(
            decode(&input),
            Err(Error {
                position: 1,
                kind: ErrorKind::InvalidToken { length: 6 }
            }),
            "{}",
            String::from_utf8_lossy(&input)
        );
    }
}

/// Control bytes too: the vector loops stop at one as at any in a string.
#[test]
fn a_byte_next_to_a_range_of_hex_digits_is_not_one() {
    for byte in [b'/', b':', b'@', b'G', b'`', b'g', 0x00, 0x1F] {
        for place in 0..4 {
            let mut digits = *b"0041";
            digits[place] = byte;
            let input = [br#""\u"#, &digits[..], b"\""].concat();
            assert_eq!(
                kind(&input),
                ErrorKind::InvalidToken { length: 6 },
                "{}",
                String::from_utf8_lossy(&input)
            );
        }
    }
}

#[test]
fn one_bad_digit_among_the_last_two_of_a_low_surrogate_blames_the_low_escape_alone() {
    for input in [br#""\ud800\udc0Z""#, br#""\ud800\udcZ0""#] {
        assert_eq!(
            decode(input),
            Err(Error {
                position: 7,
                kind: ErrorKind::InvalidToken { length: 6 }
            })
        );
    }
}

#[test]
fn invalid_utf8_is_an_error_at_the_first_bad_byte() {
    assert_eq!(error_at(b"\"ab\xff\""), 3);
    assert_eq!(error_at(b"\"\xe2\x82\""), 1);
    // An encoded surrogate is not UTF-8 either.
    assert_eq!(error_at(b"\"a\xed\xa0\x80\""), 2);
    // After an escape, too.
    assert_eq!(error_at(b"\"\\n\xc0\xaf\""), 3);
}

#[test]
fn invalid_utf8_among_the_first_16_bytes_of_a_longer_string_is_an_error() {
    // The first 16 bytes of a string are classified apart from the rest.
    let text = "a".repeat(40);
    for bad_at in [1, 16] {
        for escape in ["\\n", ""] {
            let mut input = format!("\"{text}{escape}\"").into_bytes();
            input[bad_at] = 0xFF;
            assert_eq!(error_at(&input), bad_at, "{escape:?}");
        }
    }
}

/// The text after an escape is copied and checked a 16-byte lane at a
/// time, then byte by byte near the end of the input: a bad byte, a
/// control byte, a character split across lanes, or the next escape is
/// found at every offset from the escape, with and without input after
/// the string.
#[test]
fn text_after_an_escape_is_checked_at_every_offset() {
    for run in 0..40 {
        let plain = "a".repeat(run);
        for after in ["", " ", &" ".repeat(40)] {
            let bad = [b"\"\\n", plain.as_bytes(), b"\xff\"", after.as_bytes()].concat();
            assert_eq!(error_at(&bad), 3 + run, "{run} plain bytes, then 0xff");
            let control = [b"\"\\n", plain.as_bytes(), b"\x01\"", after.as_bytes()].concat();
            assert_eq!(error_at(&control), 3 + run, "{run} plain bytes, then 0x01");
            let text = format!("\"\\n{plain}\u{e9}\\t{plain}\u{1F600}\"{after}");
            assert_eq!(
                ok(&text),
                string(&format!("\n{plain}\u{e9}\t{plain}\u{1F600}"))
            );
        }
    }
}

#[test]
fn an_unescaped_control_byte_in_a_string_is_an_error() {
    // Jason reports the byte itself.
    assert_eq!(error_at(b"\"abc\x01\""), 4);
    assert_eq!(error_at(b"[\"a\\nb\nc\"]"), 6);
    assert_eq!(error_at(b"\"\t\""), 1);
}

#[test]
fn escaped_nul_is_fine() {
    assert_eq!(ok(r#""a\u0000b""#), string("a\0b"));
}

#[test]
fn delete_and_non_ascii_text_need_no_escape() {
    assert_eq!(ok("\"\x7fé€😀\""), string("\x7fé€😀"));
}

#[test]
fn strings_without_escapes_are_borrowed_from_the_input() {
    struct Borrowed(bool);
    impl<'de> Builder<'de> for Borrowed {
        type Value = bool;
        type Error = ();
        fn null(&mut self) -> Result<(), ()> {
            Ok(())
        }
        fn bool(&mut self, _: bool) -> Result<(), ()> {
            Ok(())
        }
        fn integer(&mut self, _: i64) -> Result<(), ()> {
            Ok(())
        }
        fn big_integer(&mut self, _: &'de str) -> Result<(), ()> {
            Ok(())
        }
        fn float(&mut self, _: f64) -> Result<(), ()> {
            Ok(())
        }
        fn string(&mut self, text: Text<'de, '_>) -> Result<(), ()> {
            self.0 = matches!(text, Text::Input(_));
            Ok(())
        }
        fn end_array(&mut self, _: usize) -> Result<(), ()> {
            Ok(())
        }
        fn key(&mut self, _: Text<'de, '_>) -> Result<(), ()> {
            Ok(())
        }
        fn end_object(&mut self, _: usize) -> Result<(), ()> {
            Ok(())
        }
        fn finish(&mut self) -> Result<bool, ()> {
            Ok(self.0)
        }
    }
    assert_eq!(
        parse(br#""a long string, no escapes""#, &mut Borrowed(false)),
        Ok(true)
    );
    assert_eq!(parse(br#""a\n""#, &mut Borrowed(true)), Ok(false));
}

#[test]
fn an_unterminated_string_is_an_unexpected_end() {
    assert_eq!(
        decode(b"\"abc"),
        Err(Error {
            position: 4,
            kind: ErrorKind::UnexpectedEnd
        })
    );
    // Cut off after a backslash: Jason blames the backslash.
    assert_eq!(error_at(b"\"ab\\"), 3);
}

// Numbers

#[test]
fn integers_that_fit_i64_are_integers() {
    assert_eq!(ok("0"), Value::Integer(0));
    assert_eq!(ok("-12"), Value::Integer(-12));
    assert_eq!(ok("9223372036854775807"), Value::Integer(i64::MAX));
    assert_eq!(ok("-9223372036854775808"), Value::Integer(i64::MIN));
}

#[test]
fn integers_beyond_i64_are_kept_exactly() {
    assert_eq!(
        ok("9223372036854775808"),
        Value::BigInteger("9223372036854775808".to_owned())
    );
    assert_eq!(
        ok("-9223372036854775809"),
        Value::BigInteger("-9223372036854775809".to_owned())
    );
    let huge = format!("-1{}", "0".repeat(400));
    assert_eq!(ok(&huge), Value::BigInteger(huge.clone()));
}

/// An integer of `chars` characters, sign included.
fn integer_text(chars: usize, negative: bool) -> String {
    let sign = if negative { "-" } else { "" };
    format!("{sign}7{}", "1".repeat(chars - 1 - sign.len()))
}

#[test]
fn an_integer_of_up_to_1024_characters_sign_included_is_decoded() {
    assert_eq!(INTEGER_MAX_CHARS, 1024);
    for chars in [1023, 1024] {
        for negative in [false, true] {
            let text = integer_text(chars, negative);
            assert_eq!(ok(&text), Value::BigInteger(text.clone()));
            let array = ok(&format!("[{text}]"));
            assert_eq!(array, Value::Array(vec![Value::BigInteger(text.clone())]));
        }
    }
}

#[test]
fn a_longer_integer_is_an_invalid_token_at_its_first_byte() {
    for chars in [1025, 1026, 100_000] {
        for negative in [false, true] {
            let text = integer_text(chars, negative);
            for (input, at) in [
                (text.clone(), 0),
                (format!("[{text}]"), 1),
                (format!(r#"{{"n": {text}}}"#), 6),
                (format!("[1, {text}, 2]"), 4),
            ] {
                let error = decode(input.as_bytes()).unwrap_err();
                let expected = ErrorKind::InvalidToken { length: chars };
                assert_eq!((error.position, error.kind), (at, expected), "{chars}");
            }
        }
    }
}

#[test]
fn a_long_integer_cut_off_by_the_end_is_still_an_invalid_token() {
    let text = integer_text(1025, true);
    let error = decode(format!("[{text}").as_bytes()).unwrap_err();
    let expected = ErrorKind::InvalidToken { length: 1025 };
    assert_eq!((error.position, error.kind), (1, expected));
    assert_eq!(
        kind(format!("[{}", integer_text(1024, true)).as_bytes()),
        ErrorKind::UnexpectedEnd
    );
}

#[test]
fn the_digits_of_a_long_integer_end_at_the_first_other_byte() {
    for count in 1..48 {
        let digits = "7".repeat(count);
        for byte in 0..=u8::MAX {
            let mut input = digits.clone().into_bytes();
            input.extend([byte, b' ']);
            let decoded = decode(&input);
            match byte {
                b'0'..=b'9' | b' ' | b'\t' | b'\r' | b'\n' => {
                    assert!(decoded.is_ok(), "{count} digits, then {byte}: {decoded:?}")
                }
                b'.' | b'e' | b'E' => assert_eq!(error_at(&input), count + 1),
                _ => assert_eq!(error_at(&input), count, "{count} digits, then {byte}"),
            }
        }
    }
}

#[test]
fn a_long_integer_ends_before_a_run_of_whitespace_or_letters() {
    // Runs of eight or more bytes, as the digits are scanned a word at a time.
    for count in 1..48 {
        let digits = "7".repeat(count);
        let alone = ok(&digits);
        for run in ["\t".repeat(9), "\r\n".repeat(5), " ".repeat(9)] {
            let input = format!("{digits}{run}");
            assert_eq!(ok(&input), alone, "{input:?}");
        }
        assert_eq!(error_at(format!("{digits}ABCDEFGHI").as_bytes()), count);
    }
}

#[test]
fn a_long_integer_part_before_a_fraction_or_exponent_is_a_float() {
    let digits = integer_text(1025, false);
    // About 7e1024 before the exponent: only a negative one keeps it finite.
    for input in [
        format!("{digits}.5e-1030"),
        format!("{digits}e-1030"),
        format!("-{digits}E-1000"),
    ] {
        let expected: f64 = input.parse().unwrap();
        assert_eq!(float(&input).to_bits(), expected.to_bits(), "{input}");
    }
}

#[test]
fn minus_zero_is_integer_zero() {
    assert_eq!(ok("-0"), Value::Integer(0));
}

#[test]
fn a_fraction_or_exponent_makes_a_float() {
    assert_eq!(ok("1.5"), Value::Float(1.5));
    assert_eq!(ok("1e2"), Value::Float(100.0));
    assert_eq!(ok("1E+2"), Value::Float(100.0));
    assert_eq!(ok("-2.5e-1"), Value::Float(-0.25));
    assert_eq!(ok("0e0"), Value::Float(0.0));
}

#[test]
fn floats_are_correctly_rounded() {
    assert_eq!(float("0.1"), 0.1);
    assert_eq!(float("2.2250738585072011e-308"), 2.225_073_858_507_201e-308);
    // Halfway between two doubles, rounded to even.
    assert_eq!(float("9007199254740993.0"), 9_007_199_254_740_992.0);
    assert_eq!(float("1.7976931348623157e308"), f64::MAX);
}

#[test]
fn overflowing_float_is_an_error() {
    assert_eq!(
        decode(b"[1, 1e400]"),
        Err(Error {
            position: 4,
            kind: ErrorKind::InvalidToken { length: 5 }
        })
    );
    assert_eq!(error_at(b"-1.8e308"), 0);
}

#[test]
fn underflowing_float_is_zero() {
    assert_eq!(float("1.5e-400"), 0.0);
    assert_eq!(float("1e-99999999999999999999"), 0.0);
}

#[test]
fn minus_zero_float_is_negative_zero() {
    let value = float("-0.0");
    assert!(value == 0.0 && value.is_sign_negative());
}

#[test]
fn leading_zeros_are_an_error() {
    assert_eq!(error_at(b"01"), 1);
    assert_eq!(error_at(b"[-00]"), 3);
}

#[test]
fn a_dot_needs_digits_on_both_sides() {
    assert_eq!(error_at(b"2."), 2);
    assert_eq!(error_at(b"[2.e1]"), 3);
    assert_eq!(error_at(b".5"), 0);
}

#[test]
fn an_exponent_needs_digits() {
    assert_eq!(error_at(b"1e"), 2);
    assert_eq!(error_at(b"1e+"), 3);
    assert_eq!(error_at(b"[1e-x]"), 4);
}

#[test]
fn plus_sign_nan_and_infinity_are_errors() {
    assert_eq!(error_at(b"+1"), 0);
    assert_eq!(error_at(b"NaN"), 0);
    assert_eq!(error_at(b"Infinity"), 0);
    assert_eq!(error_at(b"-Infinity"), 1);
}

#[test]
fn minus_alone_is_an_error() {
    assert_eq!(
        decode(b"-"),
        Err(Error {
            position: 1,
            kind: ErrorKind::UnexpectedEnd
        })
    );
    assert_eq!(error_at(b"[-]"), 2);
}

// The document

#[test]
fn any_value_may_be_at_top_level() {
    assert_eq!(ok("\"s\""), string("s"));
    assert_eq!(ok("42"), Value::Integer(42));
    assert_eq!(ok("null"), Value::Null);
}

#[test]
fn whitespace_is_exactly_space_tab_cr_and_lf() {
    assert_eq!(
        ok(" \t\r\n[ \t\r\n1 \t\r\n] \t\r\n"),
        Value::Array(vec![Value::Integer(1)])
    );
    assert_eq!(error_at(b"\x0c1"), 0);
    assert_eq!(error_at(b"1\x0b"), 1);
    assert_eq!(error_at("\u{a0}1".as_bytes()), 0);
}

#[test]
fn anything_after_the_value_but_whitespace_is_an_error() {
    assert_eq!(error_at(b"1 2"), 2);
    assert_eq!(error_at(b"{} x"), 3);
    assert_eq!(error_at(b"[]]"), 2);
}

#[test]
fn empty_input_is_an_error() {
    for input in [&b""[..], b"  \n"] {
        assert_eq!(
            decode(input),
            Err(Error {
                position: input.len(),
                kind: ErrorKind::UnexpectedEnd
            })
        );
    }
}

#[test]
fn a_builder_error_stops_parsing_at_the_value_it_refused() {
    /// Refuses integers above ten; builds everything else.
    struct AtMostTen(ValueBuilder);
    impl<'de> Builder<'de> for AtMostTen {
        type Value = Value;
        type Error = Unbalanced;
        fn null(&mut self) -> Result<(), Unbalanced> {
            self.0.null()
        }
        fn bool(&mut self, value: bool) -> Result<(), Unbalanced> {
            self.0.bool(value)
        }
        fn integer(&mut self, value: i64) -> Result<(), Unbalanced> {
            if value > 10 {
                return Err(Unbalanced);
            }
            Builder::integer(&mut self.0, value)
        }
        fn big_integer(&mut self, digits: &'de str) -> Result<(), Unbalanced> {
            self.0.big_integer(digits)
        }
        fn float(&mut self, value: f64) -> Result<(), Unbalanced> {
            self.0.float(value)
        }
        fn string(&mut self, text: Text<'de, '_>) -> Result<(), Unbalanced> {
            self.0.string(text)
        }
        fn end_array(&mut self, count: usize) -> Result<(), Unbalanced> {
            self.0.end_array(count)
        }
        fn key(&mut self, text: Text<'de, '_>) -> Result<(), Unbalanced> {
            self.0.key(text)
        }
        fn end_object(&mut self, count: usize) -> Result<(), Unbalanced> {
            self.0.end_object(count)
        }
        fn finish(&mut self) -> Result<Value, Unbalanced> {
            self.0.finish()
        }
    }
    let mut builder = AtMostTen(ValueBuilder::new());
    assert_eq!(
        parse(br#"{"a": [1, 12]}"#, &mut builder),
        Err(Error {
            position: 10,
            kind: ErrorKind::Builder(Unbalanced)
        })
    );
}

#[test]
fn value_builder_refuses_counts_it_did_not_build() {
    let mut builder = ValueBuilder::new();
    assert_eq!(Builder::end_array(&mut builder, 1), Err(Unbalanced));
    assert_eq!(Builder::finish(&mut builder), Err(Unbalanced));
}

#[test]
fn value_builder_refuses_to_finish_with_a_key_left_over() {
    let mut builder = ValueBuilder::new();
    assert_eq!(Builder::key(&mut builder, Text::Input("a")), Ok(()));
    assert_eq!(Builder::null(&mut builder), Ok(()));
    assert_eq!(Builder::finish(&mut builder), Err(Unbalanced));
}

#[test]
fn a_reused_parser_keeps_bounded_scratch_and_decodes_the_same() {
    let mut parser = Parser::default();
    let escaped = format!("\"{}\"", "\\n".repeat(1 << 20));
    let deep = "[".repeat(1 << 20);
    for input in [escaped.as_bytes(), deep.as_bytes(), b"{\"a\\n\":[1]}"] {
        let reused = parser.parse(input, &mut ValueBuilder::new());
        assert_eq!(reused, decode(input));
        assert!(
            parser.capacity() <= 2 * Parser::KEEP_BYTES,
            "{}",
            parser.capacity()
        );
    }
}

#[test]
fn a_parser_s_capacity_counts_the_decoded_text_and_the_nesting_it_keeps() {
    // Both are far below what a parser frees after a document. Each open
    // container keeps at least its count of items.
    let escaped = format!("\"{}\"", "\\n".repeat(1_000));
    let deep = format!("{}{}", "[".repeat(1_000), "]".repeat(1_000));
    for (input, kept) in [(escaped, 1_000), (deep, 1_000 * size_of::<usize>())] {
        let mut parser = Parser::default();
        let parsed = parser.parse(input.as_bytes(), &mut ValueBuilder::new());
        assert!(parsed.is_ok());
        assert!(parser.capacity() >= kept, "{}", parser.capacity());
    }
}

#[test]
fn a_reused_parser_keeps_bounded_room_for_the_keys_of_unique_keys() {
    let mut parser = Parser::default();
    let keys: String = (0..100_000).map(|n| format!("\"key {n}\":{n},")).collect();
    // Closed, or left open by a repeated key: either way the keys are let go.
    let closed = format!("{{{keys}\"end\":0}}");
    let repeated = format!("{{{keys}\"key 7\":0}}");
    for input in [&closed, &repeated, &closed] {
        let reused = parser.parse_limited(input.as_bytes(), &mut ValueBuilder::new(), UNIQUE_KEYS);
        assert_eq!(reused, limited(input, UNIQUE_KEYS));
        // The keys' text alone keeps KEEP_BYTES, so a count that left the
        // keys out could not pass for bounded.
        assert!(
            (Parser::KEEP_BYTES..=4 * Parser::KEEP_BYTES).contains(&parser.capacity()),
            "{}",
            parser.capacity()
        );
    }
}

#[test]
fn invalid_utf8_is_reported_before_a_later_error_in_the_same_string() {
    assert_eq!(error_at(b"\"a\\n\xff\""), 4);
    assert_eq!(error_at(b"\"a\\n\xff\\q\""), 4);
    assert_eq!(error_at(b"\"\\u00e9\xc3\x01\""), 7);
    assert_eq!(error_at(b"\"\\ud83d\\ude00\xe2\x82"), 13);
    assert_eq!(error_at(b"\"\\n\xc3\xa9\\q\""), 6);
}

#[test]
fn minus_zero_with_an_exponent_but_no_fraction_is_positive_zero() {
    for input in ["-0e2", "-0E4", "-0E+48", "-0e-3"] {
        assert_eq!(float(input).to_bits(), 0.0f64.to_bits(), "{input}");
    }
    assert_eq!(float("-0.0e5").to_bits(), (-0.0f64).to_bits());
}

#[test]
fn parse_within_stops_inside_long_escapes_digits_and_whitespace() {
    let escapes = format!("\"{}\"", "\\n".repeat(100_000));
    let digits = format!("0.{}", "1".repeat(100_000));
    let spaces = format!("{}1", " ".repeat(100_000));
    for input in [&escapes, &digits, &spaces] {
        let mut parser = Parser::default();
        let limited = parser.parse_within(input.as_bytes(), &mut ValueBuilder::new(), 10_000);
        assert!(
            matches!(
                limited,
                Err(Error {
                    kind: ErrorKind::Exhausted,
                    ..
                })
            ),
            "{limited:?}"
        );
        assert!(decode(input.as_bytes()).is_ok());
        let enough = parser.parse_within(input.as_bytes(), &mut ValueBuilder::new(), 1_000_000);
        assert!(enough.is_ok());
    }
}

/// Gives `step` more fuel `times` times, noting where it was asked.
struct Counted {
    step: usize,
    times: usize,
    asked_at: Vec<usize>,
}

impl Ration for Counted {
    fn more(&mut self, position: usize, needed: usize) -> usize {
        self.asked_at.push(position);
        if self.asked_at.len() > self.times {
            return 0;
        }
        self.step.max(needed)
    }
}

/// `input` parsed with 1,000 units of fuel to start and 1,000 more each
/// time, given `times` times; and where the parse asked for them.
fn parse_counted(input: &str, times: usize) -> (Result<Value, Error<Unbalanced>>, Vec<usize>) {
    let mut ration = Counted {
        step: 1_000,
        times,
        asked_at: Vec::new(),
    };
    let parsed = Parser::default().parse_rationed(
        input.as_bytes(),
        &mut ValueBuilder::new(),
        Limits::NONE,
        1_000,
        &mut ration,
    );
    (parsed, ration.asked_at)
}

#[test]
fn a_ration_is_asked_for_more_as_the_parse_goes_on_and_can_stop_it_there() {
    let structure = format!("[{}1]", "{\"a\":[1,true]},".repeat(2_000));
    let escapes = format!("\"{}\"", "\\n".repeat(100_000));
    let spaces = format!("{}1", " ".repeat(1_000_000));
    for input in [&structure, &escapes, &spaces] {
        let (parsed, enough) = parse_counted(input, usize::MAX);
        assert_eq!(parsed, decode(input.as_bytes()));
        assert!(enough.len() > 10, "{}", enough.len());
        assert!(enough.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(enough.iter().all(|&at| at <= input.len()));

        let (stopped, stopping) = parse_counted(input, 3);
        let error = stopped.unwrap_err();
        assert_eq!(error.kind, ErrorKind::Exhausted);
        assert_eq!(Some(&error.position), stopping.last());
        assert_eq!(stopping[..], enough[..4]);
    }
}

// The caller's limits

fn limited(input: &str, limits: Limits) -> Result<Value, Error<Unbalanced>> {
    Parser::default().parse_limited(input.as_bytes(), &mut ValueBuilder::new(), limits)
}

fn depth(max_depth: usize) -> Limits {
    Limits {
        max_depth,
        ..Limits::NONE
    }
}

fn values(max_values: usize) -> Limits {
    Limits {
        max_values,
        ..Limits::NONE
    }
}

const UNIQUE_KEYS: Limits = Limits {
    unique_keys: true,
    ..Limits::NONE
};

fn limit_at(position: usize, limit: Limit) -> Result<Value, Error<Unbalanced>> {
    Err(Error {
        position,
        kind: ErrorKind::Limit(limit),
    })
}

#[test]
fn max_depth_counts_a_top_level_container_as_depth_one() {
    assert_eq!(limited("[1,2]", depth(1)), decode(b"[1,2]"));
    assert_eq!(limited("{\"a\":{}}", depth(2)), decode(b"{\"a\":{}}"));
    assert_eq!(limited("7", depth(1)), Ok(Value::Integer(7)));
}

#[test]
fn max_depth_is_passed_at_the_bracket_that_would_open_one_level_more() {
    assert_eq!(limited("[[1]]", depth(1)), limit_at(1, Limit::Depth));
    assert_eq!(limited("[[]]", depth(1)), limit_at(1, Limit::Depth));
    assert_eq!(
        limited(r#"{"a":[1,{"b":2}]}"#, depth(2)),
        limit_at(8, Limit::Depth)
    );
    let deep = "[".repeat(100_000);
    assert_eq!(limited(&deep, depth(64)), limit_at(64, Limit::Depth));
}

#[test]
fn max_values_counts_each_scalar_array_and_object_but_not_keys() {
    assert_eq!(limited("[1,2]", values(3)), decode(b"[1,2]"));
    assert_eq!(limited(r#"{"a":[]}"#, values(3)), decode(br#"{"a":[]}"#));
    assert_eq!(limited(r#"{"a":[]}"#, values(2)), decode(br#"{"a":[]}"#));
    assert_eq!(limited("[1,2,3]", values(3)), limit_at(5, Limit::Values));
    assert_eq!(
        limited(r#"{"a":{"b":1}}"#, values(2)),
        limit_at(10, Limit::Values)
    );
    assert_eq!(limited("1", values(1)), Ok(Value::Integer(1)));
}

#[test]
fn a_repeated_key_is_an_error_at_its_quote_with_unique_keys() {
    assert_eq!(
        limited(r#"{"a":1,"a":2}"#, UNIQUE_KEYS),
        limit_at(7, Limit::DuplicateKey)
    );
    assert_eq!(
        limited(r#"{"a":1,"b":2}"#, UNIQUE_KEYS),
        decode(br#"{"a":1,"b":2}"#)
    );
}

#[test]
fn keys_are_compared_decoded() {
    assert_eq!(
        limited(r#"{"a":1,"\u0061":2}"#, UNIQUE_KEYS),
        limit_at(7, Limit::DuplicateKey)
    );
    assert_eq!(
        limited(r#"{"\n":1,"\u000a":2}"#, UNIQUE_KEYS),
        limit_at(8, Limit::DuplicateKey)
    );
}

#[test]
fn each_object_is_checked_for_repeated_keys_on_its_own() {
    let separate = r#"{"a":{"a":1},"b":[{"a":2},{"a":3}]}"#;
    assert_eq!(limited(separate, UNIQUE_KEYS), decode(separate.as_bytes()));
    let nested = r#"{"a":{"x":1,"y":2,"x":3}}"#;
    assert_eq!(
        limited(nested, UNIQUE_KEYS),
        limit_at(18, Limit::DuplicateKey)
    );
    // The outer object's keys go on after the inner one closes.
    let after = r#"{"a":{"b":1},"b":2,"a":3}"#;
    assert_eq!(
        limited(after, UNIQUE_KEYS),
        limit_at(19, Limit::DuplicateKey)
    );
}

#[test]
fn the_first_thing_wrong_wins_reading_left_to_right() {
    // A syntax error before the limit is reached.
    assert_eq!(limited("[1,x,[[2]]]", depth(1)), decode(b"[1,x,[[2]]]"));
    assert_eq!(limited("[1,x,3,4]", values(3)), decode(b"[1,x,3,4]"));
    assert_eq!(
        limited(r#"{"a":01,"a":2}"#, UNIQUE_KEYS),
        decode(br#"{"a":01,"a":2}"#)
    );
    // A limit before a later syntax error.
    assert_eq!(limited("[[1],x", depth(1)), limit_at(1, Limit::Depth));
    assert_eq!(
        limited(r#"{"a":1,"a" 2}"#, UNIQUE_KEYS),
        limit_at(7, Limit::DuplicateKey)
    );
    // A byte that cannot begin a value is a syntax error, not a value
    // past the limit; one that can is counted before the value is read.
    assert_eq!(limited("[1,2,x]", values(3)), decode(b"[1,2,x]"));
    assert_eq!(limited("[1,2,tru]", values(3)), limit_at(5, Limit::Values));
}

#[test]
fn a_limit_costs_only_the_bytes_read_up_to_it() {
    /// Counts the values it is given, and how many.
    #[derive(Default)]
    struct Counting(usize);
    impl<'de> Builder<'de> for Counting {
        type Value = ();
        type Error = Unbalanced;
        fn null(&mut self) -> Result<(), Unbalanced> {
            self.0 += 1;
            Ok(())
        }
        fn bool(&mut self, _value: bool) -> Result<(), Unbalanced> {
            self.null()
        }
        fn integer(&mut self, _value: i64) -> Result<(), Unbalanced> {
            self.null()
        }
        fn big_integer(&mut self, _digits: &'de str) -> Result<(), Unbalanced> {
            self.null()
        }
        fn float(&mut self, _value: f64) -> Result<(), Unbalanced> {
            self.null()
        }
        fn string(&mut self, _text: Text<'de, '_>) -> Result<(), Unbalanced> {
            self.null()
        }
        fn end_array(&mut self, _count: usize) -> Result<(), Unbalanced> {
            self.null()
        }
        fn key(&mut self, _text: Text<'de, '_>) -> Result<(), Unbalanced> {
            Ok(())
        }
        fn end_object(&mut self, _count: usize) -> Result<(), Unbalanced> {
            self.null()
        }
        fn finish(&mut self) -> Result<(), Unbalanced> {
            Ok(())
        }
    }
    let long = format!("[{}0]", "0,".repeat(1_000_000));
    let mut builder = Counting::default();
    let parsed = Parser::default().parse_limited(long.as_bytes(), &mut builder, values(10));
    assert_eq!(
        parsed,
        Err(Error {
            position: 19,
            kind: ErrorKind::Limit(Limit::Values)
        })
    );
    assert_eq!(builder.0, 9);
}

#[test]
fn a_builder_end_pair_error_is_reported_at_the_pair_s_key_after_its_value() {
    /// Refuses every pair whose key is "bad", once its value is built.
    struct NoBadKeys(ValueBuilder, Vec<bool>);
    impl<'de> Builder<'de> for NoBadKeys {
        type Value = Value;
        type Error = Unbalanced;
        fn null(&mut self) -> Result<(), Unbalanced> {
            self.0.null()
        }
        fn bool(&mut self, value: bool) -> Result<(), Unbalanced> {
            self.0.bool(value)
        }
        fn integer(&mut self, value: i64) -> Result<(), Unbalanced> {
            Builder::integer(&mut self.0, value)
        }
        fn big_integer(&mut self, digits: &'de str) -> Result<(), Unbalanced> {
            self.0.big_integer(digits)
        }
        fn float(&mut self, value: f64) -> Result<(), Unbalanced> {
            self.0.float(value)
        }
        fn string(&mut self, text: Text<'de, '_>) -> Result<(), Unbalanced> {
            self.0.string(text)
        }
        fn end_array(&mut self, count: usize) -> Result<(), Unbalanced> {
            self.0.end_array(count)
        }
        fn key(&mut self, text: Text<'de, '_>) -> Result<(), Unbalanced> {
            self.1.push(text.as_str() == "bad");
            self.0.key(text)
        }
        fn end_pair(&mut self) -> Result<(), Unbalanced> {
            match self.1.pop() {
                Some(true) => Err(Unbalanced),
                _ => Ok(()),
            }
        }
        fn end_object(&mut self, count: usize) -> Result<(), Unbalanced> {
            self.0.end_object(count)
        }
        fn finish(&mut self) -> Result<Value, Unbalanced> {
            self.0.finish()
        }
    }
    let parse = |input: &str| {
        parse(
            input.as_bytes(),
            &mut NoBadKeys(ValueBuilder::new(), Vec::new()),
        )
    };
    let refused = |position| {
        Err(Error {
            position,
            kind: ErrorKind::Builder(Unbalanced),
        })
    };
    assert_eq!(parse(r#"{"ok":1,"bad":2}"#), refused(8));
    assert_eq!(parse(r#"{"bad":{"ok":[1]},"x":2}"#), refused(1));
    assert_eq!(parse(r#"{"a":{"bad":1}}"#), refused(6));
    // A syntax error in the value, or right after it, comes first.
    assert_eq!(parse(r#"{"bad":[1,}"#), decode(br#"{"bad":[1,}"#));
    assert_eq!(parse(r#"{"bad":1 2}"#), decode(br#"{"bad":1 2}"#));
    // The error at the comma comes before the next key is read.
    assert_eq!(parse(r#"{"bad":1,"x"#), refused(1));
}

#[test]
fn a_repeated_key_is_found_in_an_object_of_any_size() {
    // Small objects are compared key by key, large ones by hash; the
    // switch is at 16 keys.
    for keys in [2, 15, 16, 17, 40, 5_000] {
        for repeated in [0, keys / 2, keys - 1] {
            let mut text = String::from("{");
            for n in 0..keys {
                text.push_str(&format!("\"k{n}\":{n},"));
            }
            let at = text.len();
            text.push_str(&format!("\"k{repeated}\":0}}"));
            assert_eq!(
                limited(&text, UNIQUE_KEYS),
                limit_at(at, Limit::DuplicateKey),
                "{keys} keys, k{repeated} repeated"
            );
            let fresh = text.replace(&format!("\"k{repeated}\":0}}"), "\"new\":0}");
            assert_eq!(limited(&fresh, UNIQUE_KEYS), decode(fresh.as_bytes()));
        }
    }
}

#[test]
fn objects_after_a_closed_one_start_with_no_keys() {
    let siblings = format!("[{}{{\"a\":1}}]", "{\"a\":0,\"b\":1},".repeat(10_000));
    assert_eq!(limited(&siblings, UNIQUE_KEYS), decode(siblings.as_bytes()));
    let wide: String = (0..40)
        .map(|n| format!("\"k{n}\":{{\"k{n}\":{n}}},"))
        .collect();
    let nested = format!("{{{wide}\"end\":{{\"k1\":0}}}}");
    assert_eq!(limited(&nested, UNIQUE_KEYS), decode(nested.as_bytes()));
}

/// The least fuel `input` parses with, from the start, with no more given.
fn fuel_needed(input: &str) -> usize {
    let parses = |fuel| {
        Parser::default()
            .parse_within(input.as_bytes(), &mut ValueBuilder::new(), fuel)
            .is_ok()
    };
    let (mut low, mut high) = (0, 10 * input.len() + 1_000);
    assert!(parses(high), "{input:.40}");
    while low < high {
        let mid = (low + high) / 2;
        if parses(mid) {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    high
}

#[test]
fn a_numbers_fuel_does_not_depend_on_where_it_is() {
    let text = format!("\"{}\"", "x".repeat(10_000));
    let long = "1".repeat(40);
    let short = vec!["1"; 1_000].join(",");
    for numbers in [&long, &short] {
        let first = fuel_needed(&format!("[{numbers},{text}]"));
        let last = fuel_needed(&format!("[{text},{numbers}]"));
        assert_eq!(first, last, "{numbers:.40}");
    }
}

/// Grants exactly the fuel asked for, adding it up.
struct Granted(usize);

impl Ration for Granted {
    fn more(&mut self, _position: usize, needed: usize) -> usize {
        self.0 += needed;
        needed
    }
}

/// The fuel a string of `n` times `escape` then `text` uses, parsed with
/// `start` fuel and then exactly what it asks for. Spaces after it, charged
/// last, take what is left and ask for the rest: the string used what was
/// given but their share.
fn string_fuel(escape: &str, text: &str, n: usize, start: usize) -> usize {
    let string = format!("\"{}\"", [escape, text].concat().repeat(n));
    let spaces = 2 * (start + string.len()) + 2;
    let input = [string, " ".repeat(spaces)].concat();
    let mut granted = Granted(0);
    let parsed = Parser::default().parse_rationed(
        input.as_bytes(),
        &mut ValueBuilder::new(),
        Limits::NONE,
        start,
        &mut granted,
    );
    assert!(parsed.is_ok(), "{escape}");
    start + granted.0 - spaces / 2
}

const ESCAPES: [&str; 3] = [r"\n", r"\u00e9", r"\ud83d\ude00"];

/// With fuel for the whole string at hand, the vector loop decodes every
/// escape and counts the text between them over the whole string.
#[test]
fn an_escaped_string_costs_two_units_an_escape_byte_and_one_per_eight_bytes_of_text() {
    let n = 100;
    for escape in ESCAPES {
        for text in ["abcd", "abcdefgh", "ab"] {
            let start = 4 * n * (escape.len() + text.len());
            assert_eq!(
                string_fuel(escape, text, n, start),
                2 * n * escape.len() + n * text.len() / 8,
                "{escape}{text}"
            );
        }
    }
}

/// With no fuel at hand, each escape is past the vector loop's limit and
/// decoded by the checked path, for the same fuel.
#[test]
fn escapes_decoded_one_at_a_time_cost_as_much_as_in_the_vector_loop() {
    let n = 100;
    for escape in ESCAPES {
        for text in ["abcdefgh", "abcdefghijklmnop"] {
            assert_eq!(
                string_fuel(escape, text, n, 0),
                2 * n * escape.len() + n * text.len() / 8,
                "{escape}{text}"
            );
        }
    }
}

/// Fuel is charged before the work it pays for: with none, a parse stops
/// at its first charge, even of one unit (two bytes of whitespace).
#[test]
fn parse_within_no_fuel_stops_at_the_first_charge_however_small() {
    let parsed = Parser::default().parse_within(b"  1", &mut ValueBuilder::new(), 0);
    assert_eq!(
        parsed,
        Err(Error {
            position: 2,
            kind: ErrorKind::Exhausted
        })
    );
}

/// Whitespace costs a unit per two bytes, a long run charged as it goes:
/// given exactly what it asks for, from none, a parse asks for that much.
#[test]
fn whitespace_costs_one_unit_per_two_bytes_however_long_the_run() {
    for run in [2, 3, 1_000, 16 * 1024, 40_000, 100_001] {
        let input = [" ".repeat(run), "1".into()].concat();
        let mut granted = Granted(0);
        let parsed = Parser::default().parse_rationed(
            input.as_bytes(),
            &mut ValueBuilder::new(),
            Limits::NONE,
            0,
            &mut granted,
        );
        assert_eq!(parsed, Ok(Value::Integer(1)));
        assert_eq!(granted.0, run / 2, "{run}");
    }
}

/// Without `unique_keys` a key is a string like any other: from the
/// input, with no escape, it costs nothing of its own, however long.
#[test]
fn a_plain_keys_length_costs_nothing_without_unique_keys() {
    assert_eq!(
        fuel_needed(r#"{"a key of some length":1,"another":2}"#),
        fuel_needed(r#"{"k":1,"l":2}"#)
    );
}
