//! Any bytes through the core JSON parser, checked against `serde_json`.
//!
//! serde_json parses the same bytes into the shapes Jason makes, through a
//! visitor of our own that keeps a repeated key's first value, as Jason does.
//! Both parsers must then accept the same inputs and give the same values,
//! floats compared bit for bit. The remaining differences, the ones listed
//! in `native/mcp_framer_core/tests/json_properties.rs`, are allowed and
//! nothing else:
//! * `-0`: serde_json makes the float -0.0, Jason the integer 0; and `-0e5`
//!   is -0.0 to serde_json, 0.0 to Jason.
//! * Integers outside `i64` and `u64`: serde_json makes them floats, and
//!   fails with "number out of range" past f64's range; Jason keeps them
//!   exact up to 1,024 characters and refuses longer ones, which are past
//!   f64's range too.
//! * Nesting: serde_json gives up at 128 levels with "recursion limit
//!   exceeded"; Jason has no limit. Past that, only our own checks apply.
//!
//! Whatever the outcome, the parser must not panic, and an error must lie
//! inside the input.
//!
//! The caller's limits only ever cut a document short: within them it
//! decodes as without them, and past them it stops no later than its first
//! error without them.
//!
//! The vector code is held to its portable twin on the same bytes, in
//! every instruction set the CPU has: every 16-byte lane of the input, the
//! scan for a special byte from every offset of the first 256, and the
//! copying of runs and escapes from every offset of the first 64, up to
//! the input's end. And the escapes the vector loop decodes are held to
//! the checked path, which decodes them all when the parse has no fuel to
//! spare.
#![no_main]

#[path = "../../native/mcp_framer_core/tests/support/letters.rs"]
mod letters;

use letters::Letters;
use libfuzzer_sys::fuzz_target;
use mcp_framer_core::arch::{self, portable, Isa};
use mcp_framer_core::json::{parse, Error, ErrorKind, Limits, Parser, Ration, Value, ValueBuilder};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::BTreeMap;
use std::fmt;

fuzz_target!(|input: &[u8]| {
    for lane in input.windows(16) {
        let lane = lane.first_chunk::<16>().unwrap();
        assert_eq!(arch::classify_lane(lane), portable::classify_lane(lane));
    }
    for isa in Isa::all() {
        for from in 0..=input.len().min(256) {
            assert_eq!(
                isa.find_special(input, from),
                portable::find_special(input, from),
                "{}",
                isa.name()
            );
        }
        for from in 0..=input.len().min(64) {
            let every = Letters { left: usize::MAX };
            let (mut out, mut special) = (Vec::new(), every);
            let copied = isa.copy_runs(input, from, &mut out, &mut special);
            let (mut twin_out, mut twin_special) = (Vec::new(), every);
            let twin = portable::copy_runs(input, from, &mut twin_out, &mut twin_special);
            assert_eq!((copied, out), (twin, twin_out), "{}", isa.name());
        }
    }
    let ours = parse(input, &mut ValueBuilder::new());
    let checked = Parser::default().parse_rationed(
        input,
        &mut ValueBuilder::new(),
        Limits::NONE,
        0,
        &mut Exactly,
    );
    assert_eq!(ours, checked, "{:?}", String::from_utf8_lossy(input));
    let theirs = serde_json::from_slice::<Jason>(input).map(|jason| jason.0);
    let shown = String::from_utf8_lossy(input);
    match (&ours, &theirs) {
        (Ok(ours), Ok(theirs)) => assert!(
            agrees(ours, theirs),
            "{shown:?}: ours {ours:?}, serde_json {theirs:?}"
        ),
        (Err(error), _) => {
            assert!(error.position <= input.len(), "{shown:?}: {error:?}");
            match error.kind {
                ErrorKind::UnexpectedEnd => assert_eq!(error.position, input.len()),
                ErrorKind::UnexpectedByte => assert!(error.position < input.len()),
                ErrorKind::InvalidToken { length } => {
                    assert!(length > 0 && error.position + length <= input.len())
                }
                ErrorKind::Builder(_) => panic!("{shown:?}: the builder was driven unbalanced"),
                ErrorKind::Exhausted => panic!("{shown:?}: parse has no fuel limit"),
                ErrorKind::Limit(_) => panic!("{shown:?}: parse has no limits"),
            }
            if let Ok(theirs) = &theirs {
                panic!("{shown:?}: ours {error:?}, serde_json {theirs:?}");
            }
        }
        (Ok(ours), Err(error)) => {
            let message = error.to_string();
            let explained = message.starts_with("recursion limit exceeded")
                || (message.starts_with("number out of range") && has_integer_past_f64(ours));
            assert!(explained, "{shown:?}: ours {ours:?}, serde_json {message}");
        }
    }

    let limits = Limits {
        max_depth: 1 + input.len() % 5,
        max_values: 1 + input.len() % 13,
        unique_keys: input.len() % 2 == 0,
    };
    let limited = Parser::default().parse_limited(input, &mut ValueBuilder::new(), limits);
    match (&limited, &ours) {
        (
            Err(Error {
                kind: ErrorKind::Limit(_),
                position,
            }),
            Err(error),
        ) => assert!(
            *position <= error.position,
            "{shown:?} ({limits:?}): limited {limited:?}, unlimited {error:?}"
        ),
        (
            Err(Error {
                kind: ErrorKind::Limit(_),
                ..
            }),
            Ok(_),
        ) => {}
        _ => assert_eq!(limited, ours, "{shown:?} ({limits:?})"),
    }
});

/// Grants exactly the fuel asked for: a parse started with none decodes
/// every escape by the checked path.
struct Exactly;

impl Ration for Exactly {
    fn more(&mut self, _position: usize, needed: usize) -> usize {
        needed
    }
}

/// Whether our value and serde_json's are the same document, up to the
/// number differences listed at the top.
fn agrees(ours: &Value, theirs: &Value) -> bool {
    match (ours, theirs) {
        (Value::Float(a), Value::Float(b)) => {
            a.to_bits() == b.to_bits() || (a.to_bits() == 0 && b.to_bits() == (-0.0f64).to_bits())
        }
        (Value::Integer(0), Value::Float(b)) => b.to_bits() == (-0.0f64).to_bits(),
        (Value::BigInteger(digits), Value::Float(b)) => {
            beyond_64_bits(digits) && digits.parse::<f64>().map(f64::to_bits) == Ok(b.to_bits())
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| agrees(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, a), (kb, b))| ka == kb && agrees(a, b))
        }
        (ours, theirs) => ours == theirs,
    }
}

/// Integer text that serde_json makes a float: no `i64`, and no `u64`
/// unless negative.
fn beyond_64_bits(digits: &str) -> bool {
    let magnitude = digits.strip_prefix('-').unwrap_or(digits);
    magnitude.bytes().all(|b| b.is_ascii_digit())
        && !magnitude.starts_with('0')
        && digits.parse::<i64>().is_err()
        && (digits.starts_with('-') || digits.parse::<u64>().is_err())
}

/// Whether `value` holds an integer too large for any f64, which serde_json
/// refuses and Jason keeps.
fn has_integer_past_f64(value: &Value) -> bool {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::BigInteger(digits) if digits.parse::<f64>().is_ok_and(f64::is_infinite) => {
                return true
            }
            Value::Array(items) => pending.extend(items),
            Value::Object(pairs) => pending.extend(pairs.values()),
            _ => {}
        }
    }
    false
}

/// A document as Jason shapes it, built by serde_json.
struct Jason(Value);

impl<'de> Deserialize<'de> for Jason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JasonVisitor).map(Jason)
    }
}

struct JasonVisitor;

impl<'de> Visitor<'de> for JasonVisitor {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Integer(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(match i64::try_from(value) {
            Ok(value) => Value::Integer(value),
            Err(_) => Value::BigInteger(value.to_string()),
        })
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Value::Float(value))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut array = Vec::new();
        while let Some(Jason(item)) = items.next_element()? {
            array.push(item);
        }
        Ok(Value::Array(array))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut pairs: A) -> Result<Value, A::Error> {
        let mut object = BTreeMap::new();
        while let Some(key) = pairs.next_key::<String>()? {
            let Jason(value) = pairs.next_value()?;
            // First occurrence wins, as in Jason.
            object.entry(key).or_insert(value);
        }
        Ok(Value::Object(object))
    }
}
