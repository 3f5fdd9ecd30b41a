//! Word segmentation: Unicode word boundaries (UAX #29, as `unicode_words` of
//! unicode-segmentation), with a fast path for ASCII.
//!
//! Looking up the word-break class of every character dominates tokenizing (about 40% of
//! `prepare` in a profile). Most text is ASCII between white space, and for ASCII the UAX #29
//! rules reduce to a few lines: letters, digits and `_` join; a letter, `:`/`.`/`'`, letter
//! sequence joins (`o'clock`, `e.g`); a digit, `,`/`;`/`.`/`'`, digit sequence joins (`3.14`,
//! `1,000`); everything else breaks. So the text is cut at ASCII white space (always a word
//! boundary), pure-ASCII pieces are segmented by [`ascii_words`] and the others by
//! `unicode_words`. The result equals `unicode_words` of the whole text except for a combining
//! mark right after white space, which UAX #29 attaches to the space (and this splitter to the
//! next piece): malformed text in any case.

use unicode_segmentation::UnicodeSegmentation;

/// Calls `f` with each word of `text` (segments that contain a letter or digit), in order.
#[inline]
pub fn for_each_word<'a>(text: &'a str, mut f: impl FnMut(&'a str)) {
    for piece in text.split(|c: char| c.is_ascii_whitespace()) {
        if piece.is_empty() {
            continue;
        }
        if piece.is_ascii() {
            ascii_words(piece, &mut f);
        } else {
            piece.unicode_words().for_each(&mut f);
        }
    }
}

/// Joins with its neighbours as part of a word (UAX #29 ALetter, Numeric, ExtendNumLet).
#[inline]
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// UAX #29 words of an ASCII string without white space.
fn ascii_words<'a>(s: &'a str, f: &mut impl FnMut(&'a str)) {
    let b = s.as_bytes();
    let n = b.len();
    let mut i = 0;
    while i < n {
        if !is_word_byte(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        let mut alnum = b[i] != b'_';
        loop {
            if i + 1 < n && is_word_byte(b[i + 1]) {
                // WB5, WB8, WB9, WB10, WB13a, WB13b.
                i += 1;
                alnum |= b[i] != b'_';
            } else if i + 2 < n && joins_across(b[i], b[i + 1], b[i + 2]) {
                // WB6/WB7 (letter–MidLetter/MidNumLetQ–letter), WB11/WB12 (digit–MidNum/
                // MidNumLetQ–digit).
                i += 2;
                alnum = true;
            } else {
                break;
            }
        }
        i += 1;
        if alnum {
            f(&s[start..i]);
        }
    }
}

#[inline]
fn joins_across(a: u8, mid: u8, b: u8) -> bool {
    (a.is_ascii_alphabetic() && matches!(mid, b':' | b'.' | b'\'') && b.is_ascii_alphabetic())
        || (a.is_ascii_digit() && matches!(mid, b',' | b';' | b'.' | b'\'') && b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use topos_sampling::{CounterRng, Stream};

    fn words(s: &str) -> Vec<&str> {
        let mut v = vec![];
        for_each_word(s, |w| v.push(w));
        v
    }

    #[test]
    fn ascii_cases() {
        assert_eq!(
            words("o'clock e.g. 3.14 1,000,000 a_b __ _x x_ 4:30 a:b a.1 1.a a..b 's"),
            [
                "o'clock",
                "e.g",
                "3.14",
                "1,000,000",
                "a_b",
                "_x",
                "x_",
                "4",
                "30",
                "a:b",
                "a",
                "1",
                "1",
                "a",
                "a",
                "b",
                "s"
            ]
        );
    }

    #[test]
    fn equals_unicode_words_on_random_text() {
        let alphabet: Vec<char> = "aZq09_.,;:'\"-!? \t\n\r()/é’ßΩ東\u{a0}".chars().collect();
        for case in 0..3000u64 {
            let mut rng = CounterRng::new(1, Stream::Synthetic, 0, case);
            let len = rng.below(40) as usize;
            let s: String = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u32) as usize])
                .collect();
            let expected: Vec<&str> = s.unicode_words().collect();
            assert_eq!(words(&s), expected, "{s:?}");
        }
    }
}
