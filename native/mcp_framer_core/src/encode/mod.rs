//! The bytes of JSON text as Jason 1.4.5 writes them: strings in each of
//! its escape modes ([`escape`]), integers and floats ([`number`]). What
//! is written where, and in what order, is up to the caller's walk over
//! its values; this module knows JSON's text and nothing of the terms.
//!
//! Strings are scanned for the bytes their mode may escape by [`lanes`],
//! sixteen or thirty-two at a time.

pub mod escape;
pub mod lanes;
pub mod number;

pub use escape::{
    check, check_ascii, check_utf8, first_escape, write_escaped, write_plain, Escape, InvalidUtf8,
};
pub use number::{write_big_integer, write_float, write_integer, write_unsigned};
