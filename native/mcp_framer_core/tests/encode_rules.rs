//! One test per rule of the JSON text Jason 1.4.5 writes, as
//! `mcp_framer_core::encode` writes it, named after it. The expected bytes
//! are written out from Jason's escape tables and from Erlang's short float
//! form (`float_to_binary(f, [:short])`).

use mcp_framer_core::encode::{
    check, check_ascii, plain_ascii, write_big_integer, write_checked, write_checked_from,
    write_escaped, write_float, write_integer, Escape, InvalidUtf8, WriteError,
};

/// `text` as `escape` writes it, after [`check`].
fn escaped(text: &str, escape: Escape) -> String {
    let plain = check(text.as_bytes(), escape).expect("valid UTF-8");
    let mut out = Vec::new();
    write_escaped(&mut out, text.as_bytes(), plain, escape).unwrap();
    String::from_utf8(out).unwrap()
}

fn float(value: f64) -> String {
    let mut out = Vec::new();
    write_float(&mut out, value);
    String::from_utf8(out).unwrap()
}

// Strings

#[test]
fn every_mode_escapes_quote_and_backslash_with_a_backslash() {
    for escape in Escape::ALL {
        assert_eq!(escaped(r#"a"b\c"#, escape), r#"a\"b\\c"#);
    }
}

#[test]
fn every_mode_escapes_five_control_bytes_by_letter_and_the_rest_as_u00xx_in_upper_case() {
    let letters = [
        (8, "\\b"),
        (9, "\\t"),
        (10, "\\n"),
        (12, "\\f"),
        (13, "\\r"),
    ];
    for escape in Escape::ALL {
        for byte in 0..0x20u8 {
            let expected = match letters.iter().find(|(b, _)| *b == byte) {
                Some((_, letter)) => letter.to_string(),
                None => format!("\\u{byte:04X}"),
            };
            let text = String::from_utf8(vec![b'x', byte, b'y']).unwrap();
            assert_eq!(escaped(&text, escape), format!("x{expected}y"), "{byte:#x}");
        }
    }
}

#[test]
fn del_and_the_other_ascii_bytes_stay_as_they_are_in_every_mode_but_html_safe() {
    let ascii: String = (0x20u8..0x80)
        .filter(|&b| b != b'"' && b != b'\\')
        .map(char::from)
        .collect();
    for escape in [Escape::Json, Escape::UnicodeSafe, Escape::JavascriptSafe] {
        assert_eq!(escaped(&ascii, escape), ascii);
    }
}

#[test]
fn html_safe_writes_slash_as_backslash_slash_and_less_than_as_u003c() {
    assert_eq!(escaped("</a>&'", Escape::HtmlSafe), r"\u003C\/a>&'");
}

#[test]
fn javascript_and_html_safe_escape_u2028_and_u2029_and_no_other_character_of_their_block() {
    let text = "\u{2027}\u{2028}\u{2029}\u{202A}\u{2000}\u{2FFF}";
    for escape in [Escape::JavascriptSafe, Escape::HtmlSafe] {
        assert_eq!(
            escaped(text, escape),
            "\u{2027}\\u2028\\u2029\u{202A}\u{2000}\u{2FFF}"
        );
    }
    assert_eq!(escaped(text, Escape::Json), text);
}

#[test]
fn unicode_safe_escapes_every_character_past_ascii_as_u_escapes_in_upper_case() {
    assert_eq!(
        escaped("é\u{7FF}\u{800}\u{2028}日\u{FFFF}", Escape::UnicodeSafe),
        r"\u00E9\u07FF\u0800\u2028\u65E5\uFFFF"
    );
}

#[test]
fn unicode_safe_escapes_a_character_past_uffff_as_a_surrogate_pair() {
    assert_eq!(
        escaped("😀\u{10000}\u{10FFFF}", Escape::UnicodeSafe),
        r"\uD83D\uDE00\uD800\uDC00\uDBFF\uDFFF"
    );
}

#[test]
fn json_mode_writes_every_character_past_ascii_as_it_is() {
    let text = "é日😀\u{2028}\u{10FFFF}";
    assert_eq!(escaped(text, Escape::Json), text);
}

#[test]
fn a_string_that_is_not_utf8_is_refused_at_the_first_byte_that_starts_no_character() {
    let cases: [(&[u8], usize); 9] = [
        (b"\xFF", 0),
        (b"ab\xC3(", 2),
        (b"ok\xED\xA0\x80", 2),
        (b"\xF4\x90\x80\x80", 0),
        (b"a\xE2\x82", 1),
        (b"\xC0\xAF", 0),
        (b"\xC3\xA9\x80", 2),
        (b"\xE2\x80\xA8\xF8", 3),
        (
            b"plain text that is long enough to fill a lane or two \x80",
            53,
        ),
    ];
    for (text, position) in cases {
        for escape in Escape::ALL {
            assert_eq!(
                check(text, escape),
                Err(InvalidUtf8 { position }),
                "{text:?}"
            );
        }
    }
}

#[test]
fn check_gives_how_much_of_a_string_is_written_unchanged() {
    assert_eq!(check(b"plain", Escape::Json), Ok(5));
    assert_eq!(check("caf\u{e9} \"x\"".as_bytes(), Escape::Json), Ok(6));
    assert_eq!(check("caf\u{e9}".as_bytes(), Escape::UnicodeSafe), Ok(3));
    assert_eq!(
        check("a\u{2027}b\u{2028}".as_bytes(), Escape::JavascriptSafe),
        Ok(5)
    );
    assert_eq!(check(b"a/b", Escape::HtmlSafe), Ok(1));
}

#[test]
fn the_plain_ascii_prefix_ends_at_the_first_escape_or_byte_past_ascii_and_the_rest_is_checked() {
    for escape in Escape::ALL {
        for (text, prefix) in [
            (&b""[..], 0),
            (b"plain", 5),
            (b"\"x", 0),
            ("caf\u{e9} \"x\"".as_bytes(), 3),
        ] {
            assert_eq!(plain_ascii(text, escape), prefix, "{text:?}");
            assert_eq!(check_ascii(text, escape), Ok(prefix), "{text:?}");
        }
        assert_eq!(plain_ascii(b"ok \xC3\xA9 \xFF", escape), 3);
        assert_eq!(
            check_ascii(b"ok \xC3\xA9 \xFF", escape),
            Err(InvalidUtf8 { position: 6 })
        );
    }
    assert_eq!(check_ascii(b"a/b", Escape::HtmlSafe), Ok(1));
    assert_eq!(plain_ascii(b"a/b", Escape::Json), 3);
}

#[test]
fn the_rest_of_a_string_after_a_plain_prefix_is_checked_and_written_as_a_whole_one_is() {
    let long = format!("plain {}\u{2028}\"\u{e9}", "x".repeat(600));
    for escape in Escape::ALL {
        for text in ["plain \"\u{e9}\u{2028}<", &long] {
            let mut out = b"plain ".to_vec();
            write_checked_from(&mut out, text.as_bytes(), 6, escape).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), escaped(text, escape));
        }
        for (text, position) in [(&b"plain \xC3("[..], 6), (long.as_bytes(), 600)] {
            let mut text = text.to_vec();
            text[position] = 0xFF;
            assert_eq!(
                write_checked_from(&mut Vec::new(), &text, 6, escape),
                Err(WriteError::InvalidUtf8(InvalidUtf8 { position }))
            );
        }
    }
}

#[test]
fn a_last_character_across_the_end_of_a_segment_is_written_whole() {
    // Past its plain prefix, here empty, a string is checked and escaped a
    // segment at a time, the first 512 bytes long.
    for before in 505..=512 {
        for last in ["\u{e9}", "\u{65e5}", "\u{1F600}"] {
            let text = format!("\u{e9}{}{last}", "x".repeat(before));
            for escape in Escape::ALL {
                let mut out = Vec::new();
                write_checked(&mut out, text.as_bytes(), escape).unwrap();
                assert_eq!(String::from_utf8(out).unwrap(), escaped(&text, escape));
            }
        }
    }
}

// Numbers

#[test]
fn integers_are_written_in_decimal() {
    for value in [0, -1, 42, i64::MIN, i64::MAX] {
        let mut out = Vec::new();
        write_integer(&mut out, value);
        assert_eq!(out, value.to_string().as_bytes());
    }
}

#[test]
fn a_bignum_is_written_in_decimal_from_its_magnitude_in_base_256() {
    for value in [
        0u128,
        1,
        u64::MAX as u128 + 1,
        10u128.pow(19),
        10u128.pow(38) + 7,
        u128::MAX,
    ] {
        for negative in [false, true] {
            let mut out = Vec::new();
            write_big_integer(&mut out, negative, &value.to_le_bytes());
            let sign = if negative && value != 0 { "-" } else { "" };
            assert_eq!(String::from_utf8(out).unwrap(), format!("{sign}{value}"));
        }
    }
    // 10^100, from its bytes, with trailing zero bytes as the BEAM never has.
    let mut magnitude = vec![0u8; 48];
    let mut value = vec![1u32];
    for _ in 0..100 {
        let mut carry = 0u64;
        for limb in value.iter_mut() {
            let product = u64::from(*limb) * 10 + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry > 0 {
            value.push(carry as u32);
        }
    }
    for (i, limb) in value.iter().enumerate() {
        magnitude[4 * i..4 * i + 4].copy_from_slice(&limb.to_le_bytes());
    }
    let mut out = Vec::new();
    write_big_integer(&mut out, false, &magnitude);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!("1{}", "0".repeat(100))
    );
}

#[test]
fn a_float_has_the_fewest_digits_that_read_back_as_it() {
    assert_eq!(float(0.1), "0.1");
    assert_eq!(float(0.1 + 0.2), "0.30000000000000004");
    assert_eq!(float(1.0 / 3.0), "0.3333333333333333");
    assert_eq!(float(5e-324), "5.0e-324");
    assert_eq!(float(f64::MAX), "1.7976931348623157e308");
}

#[test]
fn a_float_is_plain_when_not_longer_than_scientific_and_scientific_otherwise() {
    let cases = [
        (1.0, "1.0"),
        (-1.5, "-1.5"),
        (100.0, "100.0"),
        (1000.0, "1.0e3"),
        (1234.0, "1234.0"),
        (123400.0, "1.234e5"),
        (0.001, "0.001"),
        (0.0001, "0.0001"),
        (0.00012, "1.2e-4"),
        (0.0012, "0.0012"),
        (12345678.9, "12345678.9"),
        (1234567890.0, "1234567890.0"),
        (1e15, "1.0e15"),
        (1.5e-7, "1.5e-7"),
    ];
    for (value, expected) in cases {
        assert_eq!(float(value), expected);
    }
}

#[test]
fn a_float_below_one_is_plain_while_its_leading_zeros_keep_it_not_longer_than_scientific() {
    let cases = [
        (0.00123, "0.00123"),
        (0.000123, "1.23e-4"),
        (0.0001, "0.0001"),
        (0.00001, "1.0e-5"),
        (0.12345, "0.12345"),
    ];
    for (value, expected) in cases {
        assert_eq!(float(value), expected);
    }
}

#[test]
fn a_float_of_magnitude_2_to_the_53_or_more_is_scientific() {
    assert_eq!(float(9007199254740991.0), "9007199254740991.0");
    assert_eq!(float(9007199254740992.0), "9.007199254740992e15");
    assert_eq!(float(-4.637715513831999e16), "-4.637715513831999e16");
    assert_eq!(float(1e22), "1.0e22");
}

#[test]
fn of_two_shortest_digits_equally_close_the_even_one_is_written() {
    // 1149636667324797.25 lies halfway between ...797.2 and ...797.3.
    assert_eq!(float(-(1149636667324797.0 + 0.25)), "-1149636667324797.2");
}

#[test]
fn zero_is_0_0_and_negative_zero_minus_0_0() {
    assert_eq!(float(0.0), "0.0");
    assert_eq!(float(-0.0), "-0.0");
}

/// An escape may still double the room, as a `Vec` grows: the first
/// reserve is for the text and a lane, and each escape asks for room for
/// its growth.
#[test]
fn a_string_without_escapes_is_written_in_about_its_own_length() {
    let text = b"a".repeat(1 << 20);
    for escape in Escape::ALL {
        let mut checked = Vec::new();
        write_checked(&mut checked, &text, escape).unwrap();
        let mut escaped = Vec::new();
        let plain = check(&text, escape).unwrap();
        write_escaped(&mut escaped, &text, plain, escape).unwrap();
        for out in [checked, escaped] {
            assert!(
                out.capacity() < 2 * text.len(),
                "{escape:?}: {}",
                out.capacity()
            );
        }
    }
}

/// Each turn of the escaping loop reserves room for the rest of the text,
/// a lane (16 bytes a vector copy may store past what it keeps) and the
/// longest escape (12 bytes, a surrogate pair): never more than the output
/// and those 28 bytes, which a `Vec` at most doubles.
#[test]
fn a_string_with_escapes_is_written_in_less_than_twice_its_output_and_a_reserve() {
    for plain in [0, 1, 30, 100, 1000, 1 << 16] {
        let text = format!("\"{}\"", "a".repeat(plain));
        for escape in Escape::ALL {
            let mut checked = Vec::new();
            write_checked(&mut checked, text.as_bytes(), escape).unwrap();
            let mut escaped = Vec::new();
            let prefix = check(text.as_bytes(), escape).unwrap();
            write_escaped(&mut escaped, text.as_bytes(), prefix, escape).unwrap();
            for out in [checked, escaped] {
                assert_eq!(out.len(), plain + 4);
                assert!(
                    out.capacity() < 2 * (out.len() + 16 + 12),
                    "{escape:?}, {plain} plain bytes: {}",
                    out.capacity()
                );
            }
        }
    }
}

/// Escaping grows the text only through its `try_reserve`, whose failure
/// is an error and not an abort: a debug assertion in its loop checks it,
/// which blocks dense with escapes, then plain text, once broke.
#[test]
fn escapes_dense_in_blocks_then_plain_text_are_written_within_the_reserve() {
    for (quotes, plain) in [(240, 284), (256, 300)] {
        let text = ["\"".repeat(quotes), "x".repeat(plain)].concat();
        let expected = ["\\\"".repeat(quotes), "x".repeat(plain)].concat();
        for escape in Escape::ALL {
            let mut out = Vec::new();
            write_checked(&mut out, text.as_bytes(), escape).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected, "{escape:?}");
        }
    }
}
