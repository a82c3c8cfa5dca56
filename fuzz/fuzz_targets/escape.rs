//! Any bytes through the encoder's string writing, in every escape mode.
//!
//! * The scan for the bytes a mode stops at, in every instruction set the
//!   CPU has, and the copy up to the first of them, are held to the
//!   portable twin, and the twin to a byte loop, from every offset of the
//!   input's first 64 bytes, which covers every place in a block of 8,
//!   16, 32 or 64, and of its last 64, where the blocks run out.
//! * The UTF-8 check, in every instruction set, must answer as std does
//!   from the same offsets.
//! * The JSON mode's block loop, in every instruction set that has one,
//!   must write what its portable twin writes from the same offsets, with
//!   room for one block or for all.
//! * `check` and `write_checked` must refuse exactly what std refuses, at
//!   the same byte, and `check` give a plain prefix that needs no escape.
//! * The written text must be what a reference writes character by
//!   character from Jason 1.4.5's tables, and read back, as JSON, to the
//!   input (checked with serde_json).
//! * The input's first eight bytes, as a float, must be written in a form
//!   that reads back as that float.
#![no_main]

#[path = "../../native/mcp_framer_core/tests/support/escape_reference.rs"]
mod escape_reference;

use escape_reference::reference;
use libfuzzer_sys::fuzz_target;
use mcp_framer_core::arch::{self, portable, Isa};
use mcp_framer_core::encode::{
    check, check_ascii, first_escape, write_checked, write_escaped, write_float, Escape,
    InvalidUtf8, WriteError,
};

fuzz_target!(|input: &[u8]| {
    let all = Isa::all();
    for escape in Escape::ALL {
        let stops = escape.stops();
        let end = input.len();
        for from in (0..end.min(64)).chain(end.saturating_sub(64)..=end) {
            let twin = portable::find_stop(input, from, stops);
            let by_bytes = (from..end).find(|&i| stops.stops_at(input[i]));
            assert_eq!(twin, by_bytes.unwrap_or(end));
            for isa in &all {
                assert_eq!(isa.find_stop(input, from, stops), twin, "{}", isa.name());
            }
            assert_eq!(arch::find_stop(input, from, stops), twin);
            let mut twin_copied = Vec::new();
            let twin_stop = portable::copy_to_stop(input, from, stops, &mut twin_copied);
            assert_eq!((twin_stop, &twin_copied[..]), (twin, &input[from..twin]));
            let mut copied = Vec::new();
            let stop = arch::copy_to_stop(input, from, stops, &mut copied);
            assert_eq!((stop, copied), (twin, twin_copied));
            if escape == Escape::Json {
                for room in [arch::ESCAPE_ROOM, 2 * (end - from) + arch::ESCAPE_ROOM] {
                    let mut twin_out = Vec::with_capacity(room);
                    let twin_at = portable::escape_blocks(input, from, &mut twin_out);
                    for isa in &all {
                        let mut out = Vec::with_capacity(room);
                        if let Some(at) = isa.escape_blocks(input, from, &mut out) {
                            assert_eq!((at, &out), (twin_at, &twin_out), "{}", isa.name());
                        }
                    }
                }
            }
            let utf8 = std::str::from_utf8(&input[from..]).is_ok();
            for isa in &all {
                assert_eq!(isa.is_utf8(&input[from..]), utf8, "{}", isa.name());
            }
        }
        let checked = check(input, escape);
        let mut written = Vec::new();
        let written_checked = write_checked(&mut written, input, escape);
        match std::str::from_utf8(input) {
            Err(error) => {
                assert_eq!(checked.map_err(|e| e.position), Err(error.valid_up_to()));
                let position = InvalidUtf8 {
                    position: error.valid_up_to(),
                };
                assert_eq!(written_checked, Err(WriteError::InvalidUtf8(position)));
            }
            Ok(text) => {
                let plain = checked.expect("valid UTF-8 is accepted");
                assert_eq!(plain, first_escape(input, 0, escape));
                let mut out = Vec::new();
                write_escaped(&mut out, input, plain, escape).unwrap();
                assert_eq!(String::from_utf8_lossy(&out), reference(text, escape));
                assert_eq!(&out[..plain], &input[..plain]);
                let ascii = check_ascii(input, escape).expect("valid UTF-8 is accepted");
                assert!(ascii <= plain);
                let mut from_ascii = Vec::new();
                write_escaped(&mut from_ascii, input, ascii, escape).unwrap();
                assert_eq!(from_ascii, out);
                assert_eq!((written_checked, written), (Ok(()), out.clone()));
                let quoted = [b"\"", &out[..], b"\""].concat();
                let read: String = serde_json::from_slice(&quoted).expect("JSON text");
                assert_eq!(read, text);
            }
        }
    }
    if let Some(bits) = input.first_chunk::<8>() {
        let value = f64::from_le_bytes(*bits);
        if value.is_finite() {
            let mut out = Vec::new();
            write_float(&mut out, value);
            let text = std::str::from_utf8(&out).unwrap();
            assert_eq!(
                text.parse::<f64>().map(f64::to_bits),
                Ok(value.to_bits()),
                "{text}"
            );
        }
    }
});
