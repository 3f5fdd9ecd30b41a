//! Languages the tokenizer knows: each has a built-in stop-word list, and all but Chinese a
//! Snowball stemmer.
//!
//! The languages are those of the Snowball stemmers in `rust-stemmers` (18), and Chinese (stop
//! words only: Chinese has no inflection to stem). Their stop words are NLTK's lists (as shipped
//! by the `stop-words` crate, feature `nltk`), except English, which keeps Topos's own list
//! ([`crate::stopwords::ENGLISH`]) so that the default tokenizer's output does not change.

use rust_stemmers::Algorithm;

/// A language of stop words and stemming (`prepare --language`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Language {
    Arabic,
    Chinese,
    Danish,
    Dutch,
    #[default]
    English,
    Finnish,
    French,
    German,
    Greek,
    Hungarian,
    Italian,
    Norwegian,
    Portuguese,
    Romanian,
    Russian,
    Spanish,
    Swedish,
    Tamil,
    Turkish,
}

impl Language {
    /// Every language, in alphabetical order.
    pub const ALL: [Language; 19] = [
        Language::Arabic,
        Language::Chinese,
        Language::Danish,
        Language::Dutch,
        Language::English,
        Language::Finnish,
        Language::French,
        Language::German,
        Language::Greek,
        Language::Hungarian,
        Language::Italian,
        Language::Norwegian,
        Language::Portuguese,
        Language::Romanian,
        Language::Russian,
        Language::Spanish,
        Language::Swedish,
        Language::Tamil,
        Language::Turkish,
    ];

    /// The name used by `--language` and recorded in a corpus (lower-case English name).
    pub fn name(self) -> &'static str {
        self.info().0
    }

    /// The ISO 639-1 code (also accepted by `--language`).
    pub fn code(self) -> &'static str {
        self.info().1
    }

    /// Whether words of this language lower-case by Turkish rules (`I` → `ı`, `İ` → `i`).
    pub fn turkic_casing(self) -> bool {
        self == Language::Turkish
    }

    /// The name for messages ("German").
    pub fn title(self) -> String {
        let n = self.name();
        n[..1].to_uppercase() + &n[1..]
    }

    fn info(self) -> (&'static str, &'static str, Option<Algorithm>) {
        use Language::*;
        let (name, code, algorithm) = match self {
            Chinese => return ("chinese", "zh", None),
            Arabic => ("arabic", "ar", Algorithm::Arabic),
            Danish => ("danish", "da", Algorithm::Danish),
            Dutch => ("dutch", "nl", Algorithm::Dutch),
            English => ("english", "en", Algorithm::English),
            Finnish => ("finnish", "fi", Algorithm::Finnish),
            French => ("french", "fr", Algorithm::French),
            German => ("german", "de", Algorithm::German),
            Greek => ("greek", "el", Algorithm::Greek),
            Hungarian => ("hungarian", "hu", Algorithm::Hungarian),
            Italian => ("italian", "it", Algorithm::Italian),
            Norwegian => ("norwegian", "no", Algorithm::Norwegian),
            Portuguese => ("portuguese", "pt", Algorithm::Portuguese),
            Romanian => ("romanian", "ro", Algorithm::Romanian),
            Russian => ("russian", "ru", Algorithm::Russian),
            Spanish => ("spanish", "es", Algorithm::Spanish),
            Swedish => ("swedish", "sv", Algorithm::Swedish),
            Tamil => ("tamil", "ta", Algorithm::Tamil),
            Turkish => ("turkish", "tr", Algorithm::Turkish),
        };
        (name, code, Some(algorithm))
    }

    /// The Snowball stemmer of the language (none for Chinese).
    pub fn stemmer(self) -> Option<rust_stemmers::Stemmer> {
        self.info().2.map(rust_stemmers::Stemmer::create)
    }

    /// The stemmer for `--stem`, or why there is none: "there is no Snowball stemmer for
    /// chinese; …".
    pub fn stemmer_for_stem(self) -> Result<rust_stemmers::Stemmer, String> {
        self.stemmer().ok_or_else(|| {
            format!(
                "there is no Snowball stemmer for {self}; drop --stem (the languages with a stemmer are {})",
                Language::ALL
                    .into_iter()
                    .filter(|l| l.stemmer().is_some())
                    .map(Language::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// The built-in stop words of the language, lower-case.
    pub fn stop_words(self) -> &'static [&'static str] {
        match self {
            Language::English => crate::stopwords::ENGLISH,
            // Every language of `ALL` has an NLTK list (checked by a test).
            l => stop_words::lookup(l.code()).unwrap_or(&[]),
        }
    }

    /// The names `--language` accepts, for messages: "arabic, danish, …".
    pub fn names() -> String {
        Language::ALL.map(Language::name).join(", ")
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Language {
    type Err = String;

    /// A name (`german`, any case) or ISO 639-1 code (`de`); anything else is refused with the
    /// list.
    fn from_str(s: &str) -> Result<Self, String> {
        let l = s.trim().to_lowercase();
        Language::ALL
            .into_iter()
            .find(|x| x.name() == l || x.code() == l)
            .ok_or_else(|| {
                format!(
                    "unknown language {s:?}; the languages with stop words (and, but for chinese, a stemmer) are {}",
                    Language::names()
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_has_stop_words_and_a_stemmer() {
        for l in Language::ALL {
            let words = l.stop_words();
            assert!(words.len() >= 50, "{l}: {} stop words", words.len());
            assert!(
                words
                    .iter()
                    .all(|w| *w == w.to_lowercase() && !w.is_empty()),
                "{l}"
            );
            assert_eq!(l.stemmer().is_some(), l != Language::Chinese);
            if let Some(s) = l.stemmer() {
                let _ = s.stem("test");
            }
            assert_eq!(l.name().parse::<Language>(), Ok(l));
            assert_eq!(l.code().parse::<Language>(), Ok(l));
            assert_eq!(l.title().to_lowercase(), l.name());
        }
        assert_eq!("German".parse::<Language>(), Ok(Language::German));
        let e = "klingon".parse::<Language>().unwrap_err();
        assert!(e.contains("german") && e.contains("turkish"), "{e}");
    }

    #[test]
    fn german_stop_words_and_stems() {
        let de = Language::German;
        for w in ["und", "der", "die", "nicht", "über"] {
            assert!(de.stop_words().contains(&w), "{w}");
        }
        let s = de.stemmer().unwrap();
        assert_eq!(s.stem("häuser"), s.stem("hauses"));
        assert_eq!(s.stem("katzen"), "katz");
        let e = Language::Chinese.stemmer_for_stem().err().unwrap();
        assert!(e.contains("drop --stem") && e.contains("german"), "{e}");
        assert!(Language::Chinese.stop_words().contains(&"我们"));
    }
}
