//! Plain Rust values, for tests, fuzzing and callers outside the BEAM.

use super::{Builder, Text};
use std::collections::BTreeMap;

/// A decoded document, shaped as Jason shapes it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Integer(i64),
    /// An integer outside `i64`, as decimal text (`-` included).
    BigInteger(String),
    Float(f64),
    String(String),
    Array(Vec<Value>),
    /// Each key's first occurrence, as Jason keeps it.
    Object(BTreeMap<String, Value>),
}

impl Drop for Value {
    /// The derived drop would recurse once per level of nesting, and the
    /// parser accepts any depth; children are moved to a heap stack instead.
    fn drop(&mut self) {
        let mut pending = Vec::new();
        take_children(self, &mut pending);
        while let Some(mut child) = pending.pop() {
            take_children(&mut child, &mut pending);
        }
    }
}

fn take_children(value: &mut Value, pending: &mut Vec<Value>) {
    match value {
        Value::Array(items) => pending.append(items),
        Value::Object(pairs) => pending.extend(std::mem::take(pairs).into_values()),
        _ => {}
    }
}

/// The builder was driven with counts that do not match what it built:
/// never by [`parse`](super::parse), only by a caller misusing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unbalanced;

/// Builds [`Value`]s, keeping finished values and keys on stacks.
#[derive(Debug, Default)]
pub struct ValueBuilder {
    values: Vec<Value>,
    keys: Vec<String>,
}

impl ValueBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, value: Value) -> Result<(), Unbalanced> {
        self.values.push(value);
        Ok(())
    }
}

/// The last `count` entries of `stack`, removed in order.
fn pop_last<T>(stack: &mut Vec<T>, count: usize) -> Result<Vec<T>, Unbalanced> {
    let start = stack.len().checked_sub(count).ok_or(Unbalanced)?;
    Ok(stack.split_off(start))
}

impl<'de> Builder<'de> for ValueBuilder {
    type Value = Value;
    type Error = Unbalanced;

    fn null(&mut self) -> Result<(), Unbalanced> {
        self.push(Value::Null)
    }

    fn bool(&mut self, value: bool) -> Result<(), Unbalanced> {
        self.push(Value::Bool(value))
    }

    fn integer(&mut self, value: i64) -> Result<(), Unbalanced> {
        self.push(Value::Integer(value))
    }

    fn big_integer(&mut self, digits: &'de str) -> Result<(), Unbalanced> {
        self.push(Value::BigInteger(digits.to_owned()))
    }

    fn float(&mut self, value: f64) -> Result<(), Unbalanced> {
        self.push(Value::Float(value))
    }

    fn string(&mut self, text: Text<'de, '_>) -> Result<(), Unbalanced> {
        self.push(Value::String(text.as_str().to_owned()))
    }

    fn end_array(&mut self, count: usize) -> Result<(), Unbalanced> {
        let items = pop_last(&mut self.values, count)?;
        self.push(Value::Array(items))
    }

    fn key(&mut self, text: Text<'de, '_>) -> Result<(), Unbalanced> {
        self.keys.push(text.as_str().to_owned());
        Ok(())
    }

    fn end_object(&mut self, count: usize) -> Result<(), Unbalanced> {
        let values = pop_last(&mut self.values, count)?;
        let keys = pop_last(&mut self.keys, count)?;
        let mut pairs = BTreeMap::new();
        for (key, value) in keys.into_iter().zip(values) {
            // First occurrence wins: a later duplicate is dropped.
            pairs.entry(key).or_insert(value);
        }
        self.push(Value::Object(pairs))
    }

    fn finish(&mut self) -> Result<Value, Unbalanced> {
        match (
            self.values.pop(),
            self.values.is_empty() && self.keys.is_empty(),
        ) {
            (Some(value), true) => Ok(value),
            _ => Err(Unbalanced),
        }
    }
}
