//! Any bytes laid out by `encode::pretty`, JSON or not, with separators
//! cut from the input's last bytes.
//!
//! * `write` must write exactly as many bytes as `len` says, and
//!   `write_vec` the same bytes in one pass.
//! * The output must be what a reference writes that takes
//!   `Jason.Formatter.pretty_print/2`'s rules (1.4.5) one byte at a time,
//!   where the layout skips through strings and scalars by the run.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_framer_core::encode::pretty::{len, write, write_vec, Layout};

fuzz_target!(|input: &[u8]| {
    let Some((&sizes, rest)) = input.split_last() else {
        return;
    };
    // Two bits of the last byte for the length of each separator, taken
    // from the end, so that a JSON seed keeps its opening brackets.
    let mut rest = rest;
    let mut separator = |shift: u8| {
        let at = rest.len().saturating_sub(usize::from(sizes >> shift & 3));
        let (left, taken) = rest.split_at(at);
        rest = left;
        taken
    };
    let layout = Layout {
        indent: separator(0),
        line: separator(2),
        record: separator(4),
        colon: separator(6),
    };
    let text = rest;
    let expected = reference(text, &layout);
    assert_eq!(len(text, &layout), Some(expected.len()));
    let mut out = vec![0; expected.len()];
    assert_eq!(write(text, &layout, &mut out), Some(out.len()));
    assert_eq!(out, expected);
    let mut appended = Vec::new();
    assert_eq!(
        write_vec(text, &layout, &mut appended, expected.len()),
        Ok(())
    );
    assert_eq!(appended, expected);
});

/// `text` laid out a byte at a time. A closing bracket with no opener
/// takes the depth below 0, as in Jason's formatter, which raises only if
/// it must then indent a line there; this and the layout indent it none.
fn reference(text: &[u8], layout: &Layout) -> Vec<u8> {
    let mut out = Vec::new();
    let new_line = |out: &mut Vec<u8>, levels: usize| {
        out.extend_from_slice(layout.line);
        for _ in 0..levels {
            out.extend_from_slice(layout.indent);
        }
    };
    // None until the first array or object opens.
    let mut depth: Option<isize> = None;
    let (mut empty, mut in_string, mut escaped) = (false, false, false);
    for &byte in text {
        if in_string {
            out.push(byte);
            in_string = escaped || byte != b'"';
            escaped = !escaped && byte == b'\\';
            continue;
        }
        let here = depth.unwrap_or(0);
        let levels = usize::try_from(here).unwrap_or(0);
        match byte {
            b' ' | b'\n' | b'\r' | b'\t' => {}
            b'{' | b'[' => {
                match depth {
                    None => {}
                    Some(0) => out.extend_from_slice(layout.record),
                    Some(_) if empty => new_line(&mut out, levels),
                    Some(_) => {}
                }
                out.push(byte);
                depth = Some(here + 1);
                empty = true;
            }
            b'}' | b']' => {
                if !empty {
                    new_line(&mut out, usize::try_from(here - 1).unwrap_or(0));
                }
                out.push(byte);
                depth = Some(here - 1);
                empty = false;
            }
            b',' => {
                out.push(byte);
                new_line(&mut out, levels);
                empty = false;
            }
            b':' => {
                out.push(byte);
                out.extend_from_slice(layout.colon);
            }
            _ => {
                if empty {
                    new_line(&mut out, levels);
                }
                out.push(byte);
                empty = false;
                in_string = byte == b'"';
            }
        }
    }
    out
}
