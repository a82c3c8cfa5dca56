//! Numbers: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, nothing looser.

use super::{Cursor, Error, Syntax};

/// The longest integer text, sign included, that Jason (1.4.1 and later)
/// decodes: a longer one is a token error at its first byte. It bounds the
/// conversion to a bignum, which takes time quadratic in the digits.
pub const INTEGER_MAX_CHARS: usize = 1024;

pub enum Number<'de> {
    Integer(i64),
    /// An integer outside `i64`, as its text.
    Big(&'de str),
    Float(f64),
}

impl<'de> Cursor<'de, '_> {
    /// A number starting at the current byte, which is `-` or a digit.
    ///
    /// Scanning stops at the first byte the grammar cannot continue with;
    /// whatever comes next (`01` leaves `1`) is the caller's to reject.
    pub(super) fn number(&mut self) -> Result<Number<'de>, Syntax> {
        let start = self.position;
        if self.peek() == Some(b'-') {
            self.position += 1;
        }
        let digits_start = self.position;
        match self.peek() {
            Some(b'0') => self.position += 1,
            Some(b'1'..=b'9') => self.skip_digits(),
            _ => return Err(Error::at(self.position, self.input)),
        }
        let digits_end = self.position;
        let fraction = self.peek() == Some(b'.');
        if fraction {
            self.position += 1;
            self.expect_digits()?;
        }
        let mut float = fraction;
        if let Some(b'e' | b'E') = self.peek() {
            self.position += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.position += 1;
            }
            self.expect_digits()?;
            float = true;
        }
        let end = self.position;
        if !float && end - start > INTEGER_MAX_CHARS {
            return Err(Error::token(start, end - start));
        }
        // Before the conversion it pays for.
        if end - start > 32 {
            self.burn(end - start)?;
        }
        let digits = self.input.get(digits_start..digits_end).unwrap_or_default();
        if float && !fraction && digits == b"0" {
            // Jason reads a zero with an exponent and no fraction as "0.0e...",
            // dropping its sign: `-0e5` is 0.0, while `-0.0e5` is -0.0.
            return Ok(Number::Float(0.0));
        }
        if float {
            // Rust's parse is correctly rounded, as is the strtod behind
            // Erlang's binary_to_float, which Jason fails on overflow only.
            return match self.token(start, end)?.parse::<f64>() {
                Ok(value) if value.is_finite() => Ok(Number::Float(value)),
                _ => Err(Error::token(start, end - start)),
            };
        }
        let negative = digits_start > start;
        // Most integers fit: their text is not needed as a `str`.
        match small_integer(digits, negative) {
            Some(value) => Ok(Number::Integer(value)),
            None => Ok(Number::Big(self.token(start, end)?)),
        }
    }

    /// The number's text `start..end`. Every byte scanned is ASCII, so the
    /// conversion cannot fail; were it to, the token is reported rather
    /// than a panic.
    fn token(&self, start: usize, end: usize) -> Result<&'de str, Syntax> {
        self.input
            .get(start..end)
            .and_then(|bytes| std::str::from_utf8(bytes).ok())
            .ok_or(Error::token(start, end - start))
    }

    #[inline(always)]
    fn skip_digits(&mut self) {
        let short = self.position + 16;
        while let Some(b'0'..=b'9') = self.peek() {
            self.position += 1;
            if self.position == short {
                return self.skip_long_digits();
            }
        }
    }

    /// The rest of a run of digits, eight at a time: a hostile line of
    /// digits is scanned at memory speed, not a byte per step.
    #[cold]
    #[inline(never)]
    fn skip_long_digits(&mut self) {
        while let Some(word) = self
            .input
            .get(self.position..)
            .and_then(<[u8]>::first_chunk)
        {
            if !all_digits(u64::from_le_bytes(*word)) {
                break;
            }
            self.position += 8;
        }
        while let Some(b'0'..=b'9') = self.peek() {
            self.position += 1;
        }
    }

    /// One or more digits, as after `.` or an exponent's `e` and sign.
    fn expect_digits(&mut self) -> Result<(), Syntax> {
        match self.peek() {
            Some(b'0'..=b'9') => {
                self.skip_digits();
                Ok(())
            }
            _ => Err(Error::at(self.position, self.input)),
        }
    }
}

/// The integer with these decimal digits, if it fits in an `i64`. `-0` is 0.
fn small_integer(digits: &[u8], negative: bool) -> Option<i64> {
    let mut magnitude: u64 = 0;
    for &digit in digits {
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(digit.wrapping_sub(b'0')))?;
    }
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Whether all eight bytes of `word` are ASCII digits. XORed with `'0'`,
/// exactly the digits become 0 to 9; adding 0x76 then sets the high bit of
/// each byte of 10 or more. A byte carries into the next only if its own
/// high bit was set already, which `| x` keeps.
fn all_digits(word: u64) -> bool {
    let x = word ^ 0x3030_3030_3030_3030;
    (x.wrapping_add(0x7676_7676_7676_7676) | x) & 0x8080_8080_8080_8080 == 0
}
