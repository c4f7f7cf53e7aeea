//! The JSON lexer every reader of a trace's bytes shares: whitespace,
//! string ends, number tokens and their exact value, bare non-finite
//! literals. The event parser (`event.rs`) builds on it; so do the merge
//! (`merge.rs`, which copies events field by field), the scanner's
//! header values (`scan.rs`) and the op argument reader
//! (`analysis/work/args.rs`). The scanner's own boundary search stays in
//! `scan.rs`: it resumes across read chunks, which these do not.
//!
//! Written here rather than taken from a crate: these are the parser's
//! hot loops (SWAR and SSE2 on bytes the parser borrows), and serde_json
//! neither borrows from a `Read` nor exposes its lexer.

/// The bytes a number token (or NaN, Infinity, a broken token) runs over.
const NUMBER_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = matches!(b, b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z');
        c += 1;
    }
    t
};

/// Where the JSON whitespace at `b[i..]` ends: the one definition every
/// reader of the trace's bytes skips it by.
#[inline(always)]
pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(i) {
        i += 1;
    }
    i
}

/// The length of the string whose content `rest` starts with, when it
/// ends before any backslash (nearly every string of a trace: borrowed
/// as it lies); else where its first backslash is, if anywhere.
#[inline(always)]
pub(crate) fn plain_string_len(rest: &[u8]) -> Result<usize, Option<usize>> {
    match quote_or_backslash(rest) {
        Some((k, true)) => Ok(k),
        Some((k, false)) => Err(Some(k)),
        None => Err(None),
    }
}

/// The first `"` or `\\` in `b`, and whether it is the quote. Most strings
/// of a trace are keys and short names: sixteen bytes at a time in an SSE2
/// register (every x86_64 has it) finds their end before memchr's vector
/// setup pays off. Which of the two was found comes from the comparisons,
/// not from reading the byte again: that read waited on the position (a
/// tenth of the event parser's time in perf).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn quote_or_backslash(b: &[u8]) -> Option<(usize, bool)> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    let mut i = 0;
    while i < 32 && i + 16 <= b.len() {
        // SAFETY: SSE2 is part of x86_64; the unaligned load reads
        // b[i..i + 16], inside `b`.
        let (q, s) = unsafe {
            let v = _mm_loadu_si128(b.as_ptr().add(i).cast::<__m128i>());
            let q = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let s = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            (_mm_movemask_epi8(q) as u32, _mm_movemask_epi8(s) as u32)
        };
        let m = q | s;
        if m != 0 {
            let k = m.trailing_zeros();
            return Some((i + k as usize, (q >> k) & 1 == 1));
        }
        i += 16;
    }
    quote_or_backslash_from(b, i)
}

/// [`quote_or_backslash`] elsewhere.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn quote_or_backslash(b: &[u8]) -> Option<(usize, bool)> {
    quote_or_backslash_from(b, 0)
}

/// The first `"` or `\\` in `b` from `i` on: eight bytes at a time in a
/// register up to byte 32 (short strings, the tail of a block), then memchr.
#[inline(always)]
fn quote_or_backslash_from(b: &[u8], mut i: usize) -> Option<(usize, bool)> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    while i < 32 {
        let Some(chunk) = b.get(i..i + 8) else { break };
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let q = w ^ (LO * u64::from(b'"'));
        let s = w ^ (LO * u64::from(b'\\'));
        // A zero byte in q or s is a match; borrows can only mark bytes
        // above a true match, so the lowest mark is the first match (and
        // the lowest quote mark is the first quote).
        let mq = q.wrapping_sub(LO) & !q & HI;
        let m = mq | (s.wrapping_sub(LO) & !s & HI);
        if m != 0 {
            let k = m.trailing_zeros();
            return Some((i + (k / 8) as usize, mq.trailing_zeros() == k));
        }
        i += 8;
    }
    memchr::memchr2(b'"', b'\\', &b[i..]).map(|k| (i + k, b[i + k] == b'"'))
}

const POW10_U64: [u64; 9] =
    [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];

/// How many bytes the number token (or NaN, Infinity, a broken token) at
/// the start of `rest` runs over. Most skipped numbers are short integers:
/// their digits counted in one word, without a branch per byte to
/// mispredict at the end.
#[inline(always)]
pub(crate) fn number_len(rest: &[u8]) -> usize {
    if let Some(w) = rest.get(..8) {
        let n = digit_count(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        if n < 8 && !NUMBER_BYTE[usize::from(rest[n])] {
            return n;
        }
    }
    rest.iter().position(|&c| !NUMBER_BYTE[usize::from(c)]).unwrap_or(rest.len())
}

/// How many of the eight bytes of `w` (read little-endian) are digits
/// before the first that is not.
#[inline(always)]
fn digit_count(w: u64) -> usize {
    digit_mask(w).trailing_zeros() as usize / 8
}

/// Bit 7 set in each byte of `w` that is not an ASCII digit: after the
/// XOR below a digit is 0..=9 and anything else 10 or more, which adding
/// 0x76 to its low seven bits (or its own bit 7) marks; no carry crosses
/// a byte, as (x & 0x7F) + 0x76 < 0x100.
#[inline(always)]
fn digit_mask(w: u64) -> u64 {
    const LO7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const HI: u64 = 0x8080_8080_8080_8080;
    let x = w ^ 0x3030_3030_3030_3030; // digits become 0..=9, nothing else does
    (((x & LO7) + 0x7676_7676_7676_7676) | x) & HI
}

/// How many of the eight ASCII bytes of `w` (read little-endian) are
/// digits before the first that is not, and the value of those digits
/// (simdjson's SWAR conversion, on a partial word).
#[inline(always)]
fn digit_run(w: u64) -> (u32, u64) {
    let x = w ^ 0x3030_3030_3030_3030; // digits become 0..=9
    let n = digit_mask(w).trailing_zeros() / 8;
    if n == 0 {
        return (0, 0);
    }
    // The digits moved to the top bytes, zeros (leading digits 0) below.
    let mut v = x << (8 * (8 - n));
    v = v.wrapping_mul(10) + (v >> 8);
    v = ((v & 0x0000_00FF_0000_00FF).wrapping_mul(100 + (1_000_000 << 32))
        + ((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32)))
        >> 32;
    (n, v & 0xFFFF_FFFF)
}

/// A decimal number at the start of `b` like `123`, `-4.5`,
/// `5083520025517.753` or `1661203462599209.0` (no exponent; the digits,
/// trailing zeros of the fraction dropped, an integer of at most 2^53),
/// converted exactly, with the bytes it took: the digits form an integer
/// below 2^53 and one division by an exact power of ten is correctly
/// rounded, so this equals `str::parse` (Clinger's fast path). `None` for
/// anything else (an exponent, more digits, a letter after the digits, or
/// the number running to the end of `b`): the caller's general path.
#[inline(always)]
pub(crate) fn fast_decimal(b: &[u8]) -> Option<(f64, usize)> {
    let neg = b.first() == Some(&b'-');
    let int_start = usize::from(neg);
    let mut mantissa: u64 = 0;
    let mut i = decimal_digits(b, int_start, &mut mantissa);
    if i == int_start {
        return None;
    }
    let mut digits = i - int_start;
    let mut frac = 0;
    if b.get(i) == Some(&b'.') {
        let frac_start = i + 1;
        i = decimal_digits(b, frac_start, &mut mantissa);
        frac = i - frac_start;
        if frac == 0 {
            return None; // `1.` is not JSON
        }
        digits += frac;
    }
    // An exponent, a letter (a broken token) or the end of the bytes (the
    // number may go on): the general path decides.
    match b.get(i) {
        None | Some(b'e' | b'E' | b'.' | b'+' | b'-' | b'a'..=b'z' | b'A'..=b'Z') => return None,
        _ => {}
    }
    if digits > 19 {
        return None; // the mantissa may have wrapped
    }
    // Trailing zeros of the fraction add nothing (`.0` ends most
    // timestamps).
    while frac > 0 && mantissa % 10 == 0 {
        mantissa /= 10;
        frac -= 1;
    }
    if mantissa > 1 << 53 || frac > 16 {
        return None;
    }
    const POW10: [f64; 17] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    ];
    // Integers (most timestamps and ids) need no division.
    let v = if frac == 0 { mantissa as f64 } else { mantissa as f64 / POW10[frac] };
    Some((if neg { -v } else { v }, i))
}

/// Appends the decimal digits of `b` from `i` on to `mantissa` (wrapping
/// past 19 digits; the caller counts them) and returns where they end:
/// up to eight digits a word (epoch timestamps have 16, ids and durations
/// a few), byte by byte only in the last seven bytes of `b`.
#[inline(always)]
fn decimal_digits(b: &[u8], mut i: usize, mantissa: &mut u64) -> usize {
    while let Some(c) = b.get(i..i + 8) {
        let (n, v) = digit_run(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        *mantissa = mantissa.wrapping_mul(POW10_U64[n as usize]).wrapping_add(v);
        i += n as usize;
        if n < 8 {
            return i;
        }
    }
    while let Some(&c @ b'0'..=b'9') = b.get(i) {
        *mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
        i += 1;
    }
    i
}

/// The index of the quote that closes the string opening at `at` (`b[at]`
/// is `"`); `None` when `b` ends first.
#[inline]
pub(crate) fn string_end(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        let (k, quote) = quote_or_backslash(b.get(i..)?)?;
        if quote {
            return Some(i + k);
        }
        i += k + 2;
    }
}

/// Copies `raw`, replacing the bare literals `NaN`, `Infinity` and
/// `-Infinity` (outside strings) with `null`: PyTorch writes them, JSON
/// has no word for them.
pub(crate) fn sanitize_nonfinite(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        if c == b'"' {
            let end = string_end(raw, i).map_or(raw.len(), |e| e + 1);
            out.extend_from_slice(&raw[i..end]);
            i = end;
            continue;
        }
        let word =
            [&b"-Infinity"[..], b"Infinity", b"NaN"].into_iter().find(|w| raw[i..].starts_with(w));
        match word {
            Some(w) => {
                out.extend_from_slice(b"null");
                i += w.len();
            }
            None => {
                out.push(c);
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_scans_equal_the_byte_by_byte_answer() {
        // Every position of a `"` or `\\` (or none) in strings of 0..80
        // bytes, the other one after it or not, against memchr2; digits at
        // every position against parse.
        for len in 0..80 {
            for (at, c, then) in (0..=len).flat_map(|at| {
                [(b'"', b'\\'), (b'\\', b'"')]
                    .into_iter()
                    .flat_map(move |(c, d)| [0, 1, 7, 20].map(|gap| (at, c, Some((gap, d)))))
                    .chain([(at, b'"', None), (at, b'\\', None)])
            }) {
                let mut b = vec![b'a'; len];
                b.iter_mut()
                    .enumerate()
                    .for_each(|(k, x)| *x = b"x\x80 \x22\xffz"[k % 6] ^ u8::from(k % 6 == 3));
                if at < len {
                    b[at] = c;
                }
                if let Some((gap, d)) = then.filter(|(gap, _)| at + 1 + gap < len) {
                    b[at + 1 + gap] = d;
                }
                assert_eq!(
                    quote_or_backslash(&b),
                    memchr::memchr2(b'"', b'\\', &b).map(|k| (k, b[k] == b'"')),
                    "{len} {at}"
                );
            }
        }
        for k in 0..8 {
            let mut w = *b"12345678";
            assert_eq!(digit_run(u64::from_le_bytes(w)), (8, 12_345_678));
            for bad in [b'/', b':', b'.', b' ', b'e', 0, 0xB0, 0x39 + 0x80, 0xFF] {
                w[k] = bad;
                let want = std::str::from_utf8(&w[..k]).unwrap().parse::<u64>().unwrap_or(0);
                assert_eq!(digit_run(u64::from_le_bytes(w)), (k as u32, want), "{k} {bad}");
                assert_eq!(digit_count(u64::from_le_bytes(w)), k, "{k} {bad}");
            }
        }
        assert_eq!(digit_run(u64::from_le_bytes(*b"00000000")), (8, 0));
        assert_eq!(digit_run(u64::from_le_bytes(*b"99999999")), (8, 99_999_999));
        assert_eq!(digit_run(u64::from_le_bytes(*b"0070, \"a")), (4, 70));
    }

    #[test]
    fn fast_decimals_equal_the_standard_parse() {
        let fast = |tok: &str| {
            fast_decimal(format!("{tok},").as_bytes()).map(|(v, used)| (v, used == tok.len()))
        };
        for tok in [
            "0",
            "7",
            "-3",
            "12.5",
            "5083520025517.753",
            "1623142623531625",
            "1661203462599209.0",
            "1661203462599209.000",
            "0.001",
            "-4458676983543.183",
            "41.407",
            "999999999999999",
            "0.0",
            "-0.50",
        ] {
            assert_eq!(fast(tok), Some((tok.parse::<f64>().unwrap(), true)), "{tok}");
        }
        for tok in [
            "1e3",
            "1.",
            "-",
            "12345678901234567",
            "9007199254740993",
            "1.2.3",
            "",
            "1661203462599209.5",
            "12x",
            "1E5",
            "-.5",
        ] {
            assert_eq!(fast(tok), None, "{tok}");
        }
        assert_eq!(fast_decimal(b"123"), None, "at the end of the bytes the number may go on");
        let mut x: u64 = 0x2545F4914F6CDD1D;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = (x % 1_000_000_000_000_000) as f64;
            let tok = format!("{}.{:03}", (digits / 1000.0).floor(), x % 1000);
            if let Some((v, whole)) = fast(&tok) {
                assert!(whole);
                assert_eq!(Some(v), tok.parse::<f64>().ok(), "{tok}");
            }
        }
    }

    #[test]
    fn strings_end_at_their_closing_quote_past_escapes() {
        let b = br#"{"a\"b": "c\\", "long string past thirty-two bytes \" here": 1}"#;
        assert_eq!(string_end(b, 1), Some(6));
        assert_eq!(string_end(b, 9), Some(13), "an escaped backslash, then the quote");
        let long = b.iter().position(|&c| c == b'l').unwrap() - 1;
        let end = string_end(b, long).unwrap();
        assert_eq!(&b[end + 1..end + 2], b":");
        assert_eq!(string_end(br#""open \""#, 0), None, "the escaped quote does not close it");
        assert_eq!(string_end(b"\"", 0), None);
    }

    #[test]
    fn rewrites_nonfinite_literals_outside_strings_only() {
        let mut out = Vec::new();
        sanitize_nonfinite(
            br#"{"v": NaN, "w": -Infinity, "x": Infinity, "n": "NaN \" Infinity"}"#,
            &mut out,
        );
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"v": null, "w": null, "x": null, "n": "NaN \" Infinity"}"#
        );
    }
}
