//! What the string writer must write, one character at a time, straight
//! from Jason 1.4.5's escape tables: shared by tests/encode_properties.rs
//! and the escape fuzz target.

use mcp_framer_core::encode::Escape;

/// `text` escaped as Jason escapes it under `escape`, without quotes.
pub fn reference(text: &str, escape: Escape) -> String {
    let mut out = String::new();
    for c in text.chars() {
        reference_char(c, escape, &mut out);
    }
    out
}

fn reference_char(c: char, escape: Escape, out: &mut String) {
    let u = |out: &mut String, unit: u32| out.push_str(&format!("\\u{unit:04X}"));
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\u{8}' => out.push_str("\\b"),
        '\t' => out.push_str("\\t"),
        '\n' => out.push_str("\\n"),
        '\u{c}' => out.push_str("\\f"),
        '\r' => out.push_str("\\r"),
        c if (c as u32) < 0x20 => u(out, c as u32),
        '/' if escape == Escape::HtmlSafe => out.push_str("\\/"),
        '<' if escape == Escape::HtmlSafe => u(out, 0x3C),
        '\u{2028}' | '\u{2029}' if escape != Escape::Json => u(out, c as u32),
        c if escape == Escape::UnicodeSafe && (c as u32) > 0xFFFF => {
            let offset = c as u32 - 0x10000;
            u(out, 0xD800 | (offset >> 10));
            u(out, 0xDC00 | (offset & 0x3FF));
        }
        c if escape == Escape::UnicodeSafe && (c as u32) > 0x7F => u(out, c as u32),
        c => out.push(c),
    }
}
