//! End-to-end tests of the tokenizer options of `topos prepare` (issue 24, part 2): pre-tokenized
//! text (`--tokenizer whitespace`), languages (`--language`, `--stem`), and `infer` / `similar
//! --text` cutting new text as the corpus was cut.

mod common;
use common::*;

use std::path::Path;
use topos_corpus::Corpus;

/// Pre-segmented Chinese (words separated by spaces, as jieba writes them), three themes.
const ZH: [&str; 3] = [
    "自然语言 处理 分词 词典 语料库 文本 句子 语法",
    "股票 市场 价格 投资 利润 银行 交易 货币",
    "足球 比赛 球员 教练 联赛 进球 赛季 球队",
];

fn vocab(corpus: &Path) -> Vec<String> {
    Corpus::open(corpus).unwrap().vocab().words().to_vec()
}

#[test]
fn whitespace_tokenizer_keeps_pre_segmented_words() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_themes(dir.path(), "zh", &ZH, 300, 20, 0);
    let corpus = dir.path().join("zh.tcorp");
    let report = json(&[
        "prepare",
        s(&input),
        "-o",
        s(&corpus),
        "--tokenizer",
        "whitespace",
        "--max-df",
        "0.9",
        "--holdout",
        "0.1",
    ]);
    assert_eq!(report["tokenizer"]["tokenizer"], "whitespace", "{report}");
    assert_eq!(report["tokenizer"]["min_len"], 1, "{report}");
    // Every word of the input is a vocabulary entry, as written; no word was cut.
    let mut words = vocab(&corpus);
    words.sort();
    let mut expected: Vec<String> = ZH
        .iter()
        .flat_map(|t| t.split(' '))
        .map(String::from)
        .collect();
    expected.sort();
    assert_eq!(words, expected);
    assert!(words.iter().any(|w| w == "自然语言"));

    // The default tokenizer cuts the same text into characters (what the issue reports).
    let chars = dir.path().join("chars.tcorp");
    prepare_text(&input, &chars, "0", &["--min-len", "1"]);
    assert!(vocab(&chars).iter().all(|w| w.chars().count() == 1));
    // At the default minimum length those characters are dropped, and prepare says why and
    // what to use, also with -q (the fifth attack: mixed-language text lost its Chinese).
    let mixed = dir.path().join("mixed.txt");
    std::fs::write(&mixed, "river water fishing 我们喜欢自然语言\n".repeat(30)).unwrap();
    let out = topos(&[
        "prepare",
        s(&mixed),
        "-o",
        s(&dir.path().join("mixed.tcorp")),
        "--max-df",
        "1.0",
        "-q",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: 240 tokens of Chinese") && err.contains("--tokenizer jieba"),
        "{err}"
    );

    // A model of the corpus cuts new text the same way: `infer` and `similar --text` find every
    // word (the default tokenizer would find none of them, cutting them into characters).
    let model = dir.path().join("zh.tmod");
    train_quick(&corpus, &model, "3", "30", &["--doc-topics"]);
    let new = dir.path().join("new.txt");
    std::fs::write(&new, "股票 市场 价格 投资\n足球　比赛 球员 未知词\n").unwrap();
    let out = topos(&["infer", s(&model), s(&new), "--format", "csv"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("split at white space"), "{err}");
    let csv = String::from_utf8(out.stdout).unwrap();
    let tokens: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    // The ideographic space (U+3000) separates; the unknown word is dropped.
    assert_eq!(tokens, ["4", "3"], "{csv}");

    let similar = json(&[
        "similar",
        s(&model),
        "--text",
        "股票 市场 价格 投资",
        "-k",
        "3",
    ]);
    assert_eq!(similar["queries_without_known_words"], 0, "{similar}");
    assert_eq!(
        similar["results"][0]["neighbors"].as_array().unwrap().len(),
        3
    );
}

/// German text with stop words and inflected forms.
const DE: [&str; 2] = [
    "Die Katzen und die Katze spielen nicht mit dem Hund über den Hunden im Garten",
    "Der Markt und die Märkte über die Preise der Banken und der Bank nicht im Handel",
];

#[test]
fn language_chooses_stop_words_and_stemmer() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_themes(dir.path(), "de", &DE, 200, 15, 0);
    let corpus = dir.path().join("de.tcorp");
    let report = json(&[
        "prepare",
        s(&input),
        "-o",
        s(&corpus),
        "--language",
        "german",
        "--stem",
        "--max-df",
        "0.9",
        "--holdout",
        "0.1",
    ]);
    assert_eq!(report["tokenizer"]["language"], "german", "{report}");
    assert!(report["tokens_dropped_stopwords"].as_u64().unwrap() > 0);
    let words = vocab(&corpus);
    for stem in ["katz", "hund", "bank", "markt", "preis", "gart", "spiel"] {
        assert!(words.iter().any(|w| w == stem), "{stem} in {words:?}");
    }
    for gone in ["und", "die", "der", "nicht", "über", "katzen", "hunden"] {
        assert!(!words.iter().any(|w| w == gone), "{gone} in {words:?}");
    }

    // infer stems new text in German and drops German stop words.
    let model = dir.path().join("de.tmod");
    train_quick(&corpus, &model, "2", "20", &[]);
    let new = dir.path().join("new.txt");
    std::fs::write(&new, "Die Katzen und der Hund über den Märkten\n").unwrap();
    let csv = ok(&["infer", s(&model), s(&new), "--format", "csv", "-q"]);
    let row = csv.lines().nth(1).unwrap();
    assert_eq!(row.split(',').nth(1), Some("3"), "{csv}");

    // An ISO code works too; English stays the default (German stop words kept).
    let coded = dir.path().join("coded.tcorp");
    prepare_text(&input, &coded, "0", &["--language", "de", "--stem"]);
    assert_eq!(vocab(&coded), words);
    let english = dir.path().join("en.tcorp");
    ok(&[
        "prepare",
        s(&input),
        "-o",
        s(&english),
        "--max-df",
        "1.0",
        "-q",
    ]);
    assert!(vocab(&english).iter().any(|w| w == "und"));
}

#[test]
fn unknown_tokenizer_or_language_is_refused_with_the_list() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_themes(dir.path(), "de", &DE, 10, 5, 0);
    let out_path = dir.path().join("x.tcorp");
    for (flag, value, listed) in [
        ("--language", "klingon", "german"),
        ("--tokenizer", "magic", "whitespace"),
    ] {
        let out = topos(&["prepare", s(&input), "-o", s(&out_path), flag, value]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(value) && err.contains(listed), "{err}");
        assert!(!out_path.exists());
    }
}

/// Pre-segmented Chinese in GBK (a legacy encoding of `encoding_rs`): refused as UTF-8 with a
/// hint that names it, decoded with `--encoding gbk`, malformed bytes counted and reported.
#[test]
fn legacy_encoding_of_pre_segmented_chinese() {
    let dir = tempfile::tempdir().unwrap();
    // 股票 市场 / 足球 比赛 in GBK, 40 documents each; the last line ends with a lone lead byte.
    let stock = b"\xb9\xc9\xc6\xb1 \xca\xd0\xb3\xa1\n";
    let football = b"\xd7\xe3\xc7\xf2 \xb1\xc8\xc8\xfc\n";
    let mut bytes = Vec::new();
    for _ in 0..40 {
        bytes.extend_from_slice(stock);
        bytes.extend_from_slice(football);
    }
    bytes.extend_from_slice(b"\xb9\xc9\xc6\xb1 \xca\n");
    let input = dir.path().join("gbk.txt");
    std::fs::write(&input, &bytes).unwrap();
    let corpus = dir.path().join("gbk.tcorp");
    let args = |enc: &'static str| -> Vec<String> {
        [
            "prepare",
            s(&input),
            "-o",
            s(&corpus),
            "--tokenizer",
            "whitespace",
            "--max-df",
            "1.0",
            "--encoding",
            enc,
        ]
        .map(String::from)
        .to_vec()
    };
    let strict = args("utf-8");
    let strict: Vec<&str> = strict.iter().map(String::as_str).collect();
    fails(&strict, "gbk.txt: line 1: invalid UTF-8 at byte 1 (0xb9)");
    fails(&strict, "gbk");
    assert!(!corpus.exists());

    let gbk = args("gbk");
    let gbk: Vec<&str> = gbk.iter().map(String::as_str).collect();
    let v = json(&gbk);
    assert_eq!(v["encoding"], "gbk", "{v}");
    assert_eq!(v["invalid_bytes_replaced"], 1, "{v}");
    assert_eq!(v["documents_with_invalid_bytes"], 1, "{v}");
    let mut words = vocab(&corpus);
    words.sort();
    assert_eq!(words, ["市场", "比赛", "股票", "足球"]);
    // The human summary reports the replaced byte.
    let human = ok(&gbk);
    assert!(
        human.contains("encoding:  gbk: 1 invalid bytes replaced by U+FFFD in 1 documents"),
        "{human}"
    );
}

/// `--tokenizer jieba` in a build without the feature: one line that says how to get it.
#[cfg(not(feature = "jieba"))]
#[test]
fn jieba_without_the_feature_says_how_to_build_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_themes(dir.path(), "zh", &ZH, 10, 5, 0);
    let out = dir.path().join("x.tcorp");
    fails(
        &["prepare", s(&input), "-o", s(&out), "--tokenizer", "jieba"],
        "--features jieba",
    );
    assert!(!out.exists());
}

/// `--tokenizer jieba` cuts unsegmented Chinese into words, and `infer` cuts new text the same
/// way (`cargo test -p topos-cli --features jieba`).
#[cfg(feature = "jieba")]
#[test]
fn jieba_segments_unsegmented_chinese() {
    let dir = tempfile::tempdir().unwrap();
    // The themes without their spaces.
    let joined: Vec<String> = ZH.iter().map(|t| t.replace(' ', "")).collect();
    let themes: Vec<&str> = joined.iter().map(String::as_str).collect();
    let text: String = (0..240)
        .map(|i| format!("{}。{}\n", themes[i % 3], themes[i % 3]))
        .collect();
    let input = dir.path().join("zh.txt");
    std::fs::write(&input, text).unwrap();
    let corpus = dir.path().join("zh.tcorp");
    let report = json(&[
        "prepare",
        s(&input),
        "-o",
        s(&corpus),
        "--tokenizer",
        "jieba",
        "--max-df",
        "0.9",
    ]);
    assert_eq!(report["tokenizer"]["tokenizer"], "jieba", "{report}");
    let words = vocab(&corpus);
    // jieba's dictionary has 股票市场 and 足球比赛 as words.
    for w in ["股票市场", "足球比赛", "自然语言", "语料库", "投资", "球员"] {
        assert!(words.iter().any(|x| x == w), "{w} in {words:?}");
    }
    assert!(words.iter().all(|w| w.chars().count() >= 2), "{words:?}");
    train_quick(&corpus, &dir.path().join("zh.tmod"), "3", "10", &[]);
    let new = dir.path().join("new.txt");
    std::fs::write(&new, format!("{}\n", themes[1])).unwrap();
    let csv = ok(&[
        "infer",
        s(&dir.path().join("zh.tmod")),
        s(&new),
        "--format",
        "csv",
        "-q",
    ]);
    assert_eq!(
        csv.lines().nth(1).unwrap().split(',').nth(1),
        Some("7"),
        "{csv}"
    );
}

/// `--language chinese`: Chinese stop words (NLTK's list) with a segmenter that yields words;
/// there is no Chinese stemmer, so `--stem` is refused.
#[test]
fn chinese_stop_words_without_a_stemmer() {
    let dir = tempfile::tempdir().unwrap();
    let themes = ["我们 的 股票 市场 价格", "我们 的 足球 比赛 球员"];
    let input = write_themes(dir.path(), "zh", &themes, 60, 10, 0);
    let corpus = dir.path().join("zh.tcorp");
    let base = [
        "prepare",
        s(&input),
        "-o",
        s(&corpus),
        "--tokenizer",
        "whitespace",
        "--max-df",
        "1.0",
        "--language",
        "zh",
    ];
    let v = json(&base);
    assert_eq!(v["tokenizer"]["language"], "chinese", "{v}");
    let mut words = vocab(&corpus);
    words.sort();
    assert_eq!(words, ["价格", "市场", "比赛", "球员", "股票", "足球"]);
    std::fs::remove_file(&corpus).unwrap();
    let mut stem = base.to_vec();
    stem.push("--stem");
    fails(&stem, "no Snowball stemmer for chinese");
    assert!(!corpus.exists());
}

/// A bag-of-words vocabulary with capitals is matched as written by `infer` (lower-cased text
/// would never meet `Apple`), and its stop words go whatever their case; NFC spellings of one
/// word are one word in `prepare` and in `infer` (the fifth attack, RELIABILITY.md).
#[test]
fn given_capitals_and_combining_accents_meet_their_words() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("v.txt"), "Apple\nbanana\nThe\n").unwrap();
    let docs: String = (0..20).map(|_| "3 0:3 1:1 2:2\n").collect();
    std::fs::write(d.join("c.ldac"), docs).unwrap();
    let corpus = d.join("c.tcorp");
    let (ldac, words) = (d.join("c.ldac"), d.join("v.txt"));
    let mut args = prepare_every_word(&ldac, &corpus);
    args.extend(["--vocab", s(&words)]);
    let report = json(&args);
    assert_eq!(vocab(&corpus), ["Apple", "banana"], "{report}");
    let model = d.join("c.tmod");
    train_quick(&corpus, &model, "2", "3", &[]);
    std::fs::write(d.join("new.txt"), "Apple apple banana\n").unwrap();
    let inferred = json(&["infer", s(&model), s(&d.join("new.txt")), "-q"]);
    assert_eq!(inferred["documents"][0]["tokens"], 2, "{inferred}");

    // NFC: "café" precomposed and with a combining accent, in 10 documents, survives
    // --min-df 10 as one word; new text in either form meets it.
    let text: String = (0..10)
        .map(|i| match i % 2 {
            0 => "caf\u{e9} alpha beta\n",
            _ => "cafe\u{301} alpha gamma\n",
        })
        .collect();
    std::fs::write(d.join("nfd.txt"), text).unwrap();
    let (text, nfd) = (d.join("nfd.txt"), d.join("nfd.tcorp"));
    let mut args = prepare_every_word(&text, &nfd);
    let min_df = args.iter().position(|&a| a == "--min-df").unwrap() + 1;
    args[min_df] = "10";
    ok(&args);
    assert_eq!(vocab(&nfd).len(), 2, "{:?}", vocab(&nfd));
    assert!(vocab(&nfd).contains(&"caf\u{e9}".to_string()));
    let nfd_model = d.join("nfd.tmod");
    train_quick(&nfd, &nfd_model, "2", "3", &[]);
    std::fs::write(d.join("new.txt"), "cafe\u{301} caf\u{e9} alpha\n").unwrap();
    let inferred = json(&["infer", s(&nfd_model), s(&d.join("new.txt")), "-q"]);
    assert_eq!(inferred["documents"][0]["tokens"], 3, "{inferred}");

    // A given vocabulary is kept as written, combining accent and all, and new text meets it
    // as written.
    std::fs::write(d.join("v.txt"), "cafe\u{301}\nbanana\nzebra\n").unwrap();
    let given = d.join("given.tcorp");
    let mut args = prepare_every_word(&ldac, &given);
    let words = d.join("v.txt");
    args.extend(["--vocab", s(&words)]);
    ok(&args);
    let given_model = d.join("given.tmod");
    train_quick(&given, &given_model, "2", "3", &[]);
    std::fs::write(d.join("new.txt"), "cafe\u{301} banana\n").unwrap();
    let inferred = json(&["infer", s(&given_model), s(&d.join("new.txt")), "-q"]);
    assert_eq!(inferred["documents"][0]["tokens"], 2, "{inferred}");
}
