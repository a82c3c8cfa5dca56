//! The bytes of JSON text as Jason 1.4.5 writes them: strings in each of
//! its escape modes ([`escape`]), integers and floats ([`number`]). What
//! is written where, and in what order, is up to the caller's walk over
//! its values; this module knows JSON's text and nothing of the terms.
//!
//! Strings are scanned for the bytes their mode may escape, and copied up
//! to them, by the vector code in [`crate::arch`] ([`crate::arch::find_stop`],
//! [`crate::arch::copy_to_stop`]).

pub mod escape;
pub mod number;
pub mod pretty;

pub use escape::{
    check, check_ascii, check_utf8, check_utf8_from, first_escape, plain_ascii, write_checked,
    write_checked_from, write_escaped, write_plain, Escape, InvalidUtf8, WriteError,
};
pub use number::{write_big_integer, write_float, write_integer, write_unsigned};
