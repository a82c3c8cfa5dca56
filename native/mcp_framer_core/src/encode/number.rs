//! Numbers as Jason 1.4.5 writes them: integers in decimal, any size, and
//! floats as `:erlang.float_to_binary(f, [:short])` does on OTP 24 and
//! later, which is what Jason calls there.
//!
//! That form has the fewest digits that read back as the same float, laid
//! out in one of two ways: plain, with at least one digit on each side of
//! the point (`100.0`, `0.0001`, `-1.5`), or scientific, with one digit
//! before the point, at least one after it, and an exponent without `+` or
//! leading zeros (`1.0e3`, `1.2e-4`, `1.7976931348623157e308`). The plain
//! form is taken when it is not longer, except for a float of magnitude
//! 2^53 or more, which is always scientific: past 2^53 a float no longer
//! holds every integer, and Erlang shows that. Zero is `0.0`, negative zero
//! `-0.0`.

/// Appends `value` in decimal.
#[inline]
pub fn write_integer(out: &mut Vec<u8>, value: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Appends `value` in decimal.
#[inline]
pub fn write_unsigned(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Appends, in decimal, the integer whose magnitude is `magnitude`, in
/// base 256, least significant byte first: a bignum as the BEAM's external
/// term format holds it. Quadratic in the magnitude's length.
pub fn write_big_integer(out: &mut Vec<u8>, negative: bool, magnitude: &[u8]) {
    const CHUNK: u64 = 10_000_000_000_000_000_000; // 10^19, the most in a u64
    let mut limbs: Vec<u64> = magnitude
        .chunks(8)
        .map(|bytes| {
            let mut limb = [0; 8];
            limb[..bytes.len()].copy_from_slice(bytes);
            u64::from_le_bytes(limb)
        })
        .collect();
    // Base 10^19 chunks, least significant first, by long division.
    let mut chunks = Vec::with_capacity(limbs.len() * 20 / 19 + 1);
    loop {
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
        if limbs.is_empty() {
            break;
        }
        let mut remainder = 0u128;
        for limb in limbs.iter_mut().rev() {
            let dividend = remainder << 64 | u128::from(*limb);
            *limb = (dividend / u128::from(CHUNK)) as u64;
            remainder = dividend % u128::from(CHUNK);
        }
        chunks.push(remainder as u64);
    }
    let Some((&first, rest)) = chunks.split_last() else {
        out.push(b'0');
        return;
    };
    if negative {
        out.push(b'-');
    }
    write_unsigned(out, first);
    for &chunk in rest.iter().rev() {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(chunk).as_bytes();
        out.extend(std::iter::repeat_n(b'0', 19 - digits.len()));
        out.extend_from_slice(digits);
    }
}

/// The shortest digits that read back as a float, and where the point
/// goes: the value is `0.d1d2d3... × 10^point`.
#[derive(Debug, PartialEq, Eq)]
struct Shortest {
    negative: bool,
    /// No leading or trailing zeros; empty for zero.
    digits: [u8; 17],
    length: usize,
    point: i32,
}

/// The shortest digits of a finite float that read back as it, of those
/// the closest, and of two as close the one ending in an even digit:
/// Erlang's choice (std's `{:e}` rounds such a tie up instead).
fn shortest(value: f64) -> Shortest {
    let mut buffer = zmij::Buffer::new();
    read_digits(buffer.format_finite(value).as_bytes())
}

/// Reads the digits out of a float's text, in whatever layout it has:
/// `1.5`, `1e20`, `-1.5e-7`, `0.001`.
fn read_digits(text: &[u8]) -> Shortest {
    let mut shortest = Shortest {
        negative: text.first() == Some(&b'-'),
        digits: [0; 17],
        length: 0,
        point: 0,
    };
    let mut bytes = text.iter();
    let mut after_point = false;
    let mut point = 0;
    for &byte in bytes.by_ref() {
        match byte {
            b'e' | b'E' => break,
            b'.' => after_point = true,
            // A zero before the first digit moves the point if it follows it.
            b'0' if shortest.length == 0 => point -= i32::from(after_point),
            b'0'..=b'9' => {
                if let Some(digit) = shortest.digits.get_mut(shortest.length) {
                    *digit = byte;
                    shortest.length += 1;
                }
                point += i32::from(!after_point);
            }
            _ => {}
        }
    }
    let (mut exponent, mut negative) = (0i32, false);
    for &byte in bytes {
        match byte {
            b'-' => negative = true,
            b'0'..=b'9' => exponent = exponent.saturating_mul(10) + i32::from(byte - b'0'),
            _ => {}
        }
    }
    while shortest.length > 0 && shortest.digits[shortest.length - 1] == b'0' {
        shortest.length -= 1;
    }
    shortest.point = match shortest.length {
        0 => 1,
        _ if negative => point - exponent,
        _ => point + exponent,
    };
    shortest
}

/// Appends `value`, which must be finite, as `float_to_binary(value,
/// [:short])` writes it.
pub fn write_float(out: &mut Vec<u8>, value: f64) {
    let Shortest {
        negative,
        digits,
        length,
        point,
    } = shortest(value);
    if negative {
        out.push(b'-');
    }
    if length == 0 {
        out.extend_from_slice(b"0.0");
        return;
    }
    let digits = &digits[..length];
    let length = length as i32;
    // Scientific: d.ddd (d.0 for one digit), then e and the exponent.
    let exponent = point - 1;
    let mut exponent_text = itoa::Buffer::new();
    let exponent_text = exponent_text.format(exponent).as_bytes();
    let scientific = length.max(2) + 2 + exponent_text.len() as i32;
    let plain = if point <= 0 {
        2 - point + length
    } else if length <= point {
        point + 2
    } else {
        length + 1
    };
    // 2^53: every float from there on is an integer, and plain digits would
    // suggest more precision than it has.
    let huge = value.abs() >= 9_007_199_254_740_992.0;
    if plain <= scientific && !huge {
        if point <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-point) as usize));
            out.extend_from_slice(digits);
        } else if length <= point {
            out.extend_from_slice(digits);
            out.extend(std::iter::repeat_n(b'0', (point - length) as usize));
            out.extend_from_slice(b".0");
        } else {
            let (whole, fraction) = digits.split_at(point as usize);
            out.extend_from_slice(whole);
            out.push(b'.');
            out.extend_from_slice(fraction);
        }
    } else {
        out.push(digits[0]);
        out.push(b'.');
        match &digits[1..] {
            [] => out.push(b'0'),
            rest => out.extend_from_slice(rest),
        }
        out.push(b'e');
        out.extend_from_slice(exponent_text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_and_point_are_read_from_every_layout() {
        let read = |text: &str| {
            let shortest = read_digits(text.as_bytes());
            let digits = String::from_utf8(shortest.digits[..shortest.length].to_vec()).unwrap();
            (shortest.negative, digits, shortest.point)
        };
        assert_eq!(read("1.5"), (false, "15".into(), 1));
        assert_eq!(read("-0.00125"), (true, "125".into(), -2));
        assert_eq!(read("1e20"), (false, "1".into(), 21));
        assert_eq!(read("1.5e-7"), (false, "15".into(), -6));
        assert_eq!(read("120.0"), (false, "12".into(), 3));
        assert_eq!(read("0.0"), (false, "".into(), 1));
        assert_eq!(read("-0.0"), (true, "".into(), 1));
        assert_eq!(
            read("4.9406564584124654E-324"),
            (false, "49406564584124654".into(), -323)
        );
    }
}
