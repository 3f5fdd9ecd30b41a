//! End-to-end tests of issue 23's commands: `report` (HTML and LDAvis JSON, in a real browser
//! when one is installed), `plot`, `export` and `eval --coherence`.

mod common;
use common::*;

use std::path::{Path, PathBuf};

/// A trained model with its side file, corpus, source text and training log. The words include
/// markup and CSV metacharacters, kept by the whitespace tokenizer.
struct Trained {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    model: PathBuf,
    corpus: PathBuf,
    source: PathBuf,
    log: PathBuf,
}

fn trained(k: &str) -> Trained {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let themes = [
        "river water fish boat lake stream flood rain <script> water",
        "stock market price trade money invest profit share a,\"b market",
        "game team player score match season coach league win team",
    ];
    let source = write_themes(&d, "docs", &themes, 240, 20, 0);
    let corpus = prepare_text(
        &source,
        &d.join("c.tcorp"),
        "0.2",
        &["--tokenizer", "whitespace"],
    );
    let model = d.join("c.tmod");
    let log = d.join("run.log");
    train_quick(
        &corpus,
        &model,
        k,
        "30",
        &[
            "--alpha",
            "0.1",
            "--doc-topics",
            "--log",
            s(&log),
            "--eval-every",
            "10",
        ],
    );
    Trained {
        _dir: dir,
        dir: d,
        model,
        corpus,
        source,
        log,
    }
}

/// Every `src=`/`href=` of the page, and whether any names another host.
fn external_references(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for attr in ["src=", "href=", "url(", "@import"] {
        for (i, _) in html.match_indices(attr) {
            let rest = &html[i + attr.len()..];
            let value: String = rest.chars().take(12).collect();
            let v = value.trim_start_matches(['"', '\'']);
            if v.starts_with("http:") || v.starts_with("https:") || v.starts_with("//") {
                found.push(value);
            }
        }
    }
    found
}

#[test]
fn report_is_one_self_contained_escaped_page() {
    let t = trained("3");
    let out = t.dir.join("report.html");
    ok(&[
        "report",
        s(&t.model),
        "-o",
        s(&out),
        "--log",
        s(&t.log),
        "--source",
        s(&t.source),
        "-q",
    ]);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        html.contains("default-src 'none'"),
        "a CSP that forbids requests"
    );
    assert_eq!(external_references(&html), Vec::<String>::new());
    assert!(
        !html.contains("http://")
            || html.matches("http://").count() == html.matches("http://www.w3.org/").count()
    );
    assert!(!html.contains("https://"));
    // The word <script> is data, never markup: the page has exactly its own two script elements.
    assert_eq!(
        html.matches("<script").count(),
        2,
        "only the page's own script elements"
    );
    assert!(
        html.contains("\\u003cscript\\u003e"),
        "the word travels escaped"
    );
    assert!(html.contains("a,\\\"b"));
    // The convergence figure is inline SVG.
    assert!(html.contains("<svg xmlns"));
    // No temporary left beside it.
    let names: Vec<String> = std::fs::read_dir(&t.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    browser_check(&out, 3);

    // The LDAvis data format.
    let vis = t.dir.join("vis.json");
    ok(&["report", s(&t.model), "--ldavis-json", "-o", s(&vis), "-q"]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&vis).unwrap()).unwrap();
    assert_eq!(v["mdsDat"]["x"].as_array().unwrap().len(), 3);
    // R is 30, or the vocabulary's size when smaller; the overview lists R words.
    let r = v["R"].as_u64().unwrap() as usize;
    let defaults = v["tinfo"]["Category"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| *c == "Default")
        .count();
    assert!(r <= 30 && defaults == r, "R {r}, {defaults} default rows");
    let freq: f64 = v["mdsDat"]["Freq"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert!((freq - 100.0).abs() < 1e-9);
    assert!(v["tinfo"]["Term"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w == "<script>"));

    // Bad input: one line, non-zero exit, nothing written.
    let missing = t.dir.join("no/such/dir/r.html");
    fails(
        &["report", s(&t.model), "-o", s(&missing)],
        "does not exist",
    );
    let bad_log = t.dir.join("bad.log");
    std::fs::write(&bad_log, "not a log\n").unwrap();
    let never = t.dir.join("never.html");
    fails(
        &["report", s(&t.model), "-o", s(&never), "--log", s(&bad_log)],
        "line 1",
    );
    assert!(!never.exists());
    fails(&["report", s(&t.corpus), "-o", s(&never)], "");
    assert!(!never.exists());
}

/// Loads the page in headless Chromium with the network blocked and reads what its `#selftest`
/// found: K circles, bars that change with λ after a click on a topic, no request, no error. A
/// screenshot is left in `target/test-artifacts/report.png`. Skipped (with a note) when no
/// Chromium is installed, unless `TOPOS_REQUIRE_CHROMIUM` is set (as `.ci/run` sets it).
fn browser_check(page: &Path, k: usize) {
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            std::process::Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let Some(browser) = browser else {
        assert!(
            std::env::var_os("TOPOS_REQUIRE_CHROMIUM").is_none(),
            "TOPOS_REQUIRE_CHROMIUM is set but no chromium is installed"
        );
        eprintln!("note: no chromium installed; the report was not loaded in a browser");
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}#selftest", page.canonicalize().unwrap().display());
    let common = [
        "--headless".to_string(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--host-resolver-rules=MAP * ~NOTFOUND".into(),
        "--proxy-server=127.0.0.1:9".into(),
        format!("--user-data-dir={}", profile.path().display()),
        "--virtual-time-budget=5000".into(),
    ];
    // Chromium logs every console message of the page, of any level, and every uncaught error as
    // a `CONSOLE` line on stderr with --enable-logging=stderr; the page itself writes none.
    let out = std::process::Command::new(browser)
        .args(&common)
        .args(["--enable-logging=stderr", "--v=0"])
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom
        .find("<pre id=\"selftest\">")
        .expect("the page's self-test ran")
        + 19;
    let end = start + dom[start..].find("</pre>").unwrap();
    let text = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let r: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(r["circles"], k, "{r}");
    assert_eq!(r["requests"], 0, "the page made requests: {r}");
    assert_eq!(r["errors"].as_array().unwrap().len(), 0, "errors: {r}");
    assert_eq!(
        r["selected"], 0,
        "a click on a circle selects its topic: {r}"
    );
    assert!(!r["overview"].as_str().unwrap().is_empty());
    assert_ne!(r["lambda0"], r["lambda1"], "moving λ changes the bars: {r}");
    assert!(
        r["docs"].as_u64().unwrap() > 0,
        "example documents listed: {r}"
    );
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("report.png");
    let status = std::process::Command::new(browser)
        .args(&common)
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,1100")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        shot.exists(),
        "screenshot: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

#[test]
fn eval_reports_npmi_c_v_and_umass() {
    let t = trained("3");
    let v = json(&[
        "eval",
        s(&t.model),
        "--coherence",
        "npmi,c_v,umass",
        "--top",
        "5",
    ]);
    let c = v["coherence"].as_array().unwrap();
    assert_eq!(c.len(), 2);
    assert_eq!(c[0]["measure"], "npmi");
    assert_eq!(c[0]["window"], 10);
    assert_eq!(c[1]["measure"], "c_v");
    assert_eq!(c[1]["window"], 110);
    assert_eq!(c[1]["per_topic"].as_array().unwrap().len(), 3);
    let cv = c[1]["mean"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&cv), "{cv}");
    assert_eq!(v["coherence_top_words"], 5);
    // Windows are counted as gensim counts them unless --window-counting exact says otherwise.
    assert_eq!(c[0]["counting"], "gensim");
    let exact = json(&[
        "eval",
        s(&t.model),
        "--coherence",
        "npmi",
        "--top",
        "5",
        "--window-counting",
        "exact",
    ]);
    assert_eq!(exact["coherence"][0]["counting"], "exact");
    assert_eq!(exact["coherence"][0]["windows"], c[0]["windows"]);
    fails(
        &["eval", s(&t.model), "--window-counting", "palmetto"],
        "gensim or exact",
    );
    let human = ok(&["eval", s(&t.model), "--coherence", "uci", "--window", "20"]);
    assert!(
        human.contains("UCI coherence (top 10 words, windows of 20 tokens counted as gensim)"),
        "{human}"
    );
    fails(
        &["eval", s(&t.model), "--coherence", "cosine"],
        "unknown coherence measure",
    );
    // Without --coherence the output is what it was.
    let plain = json(&["eval", s(&t.model)]);
    assert!(plain.get("coherence").is_none());
}

/// Parses CSV as RFC 4180 writes it.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let (mut rows, mut row, mut field, mut quoted) = (vec![], vec![], String::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => row.push(std::mem::take(&mut field)),
            ('\n', false) => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (c, _) => field.push(c),
        }
    }
    rows
}

#[test]
fn exports_round_trip_and_match_topics() {
    let t = trained("3");
    // Topic keys equal `topics --json`.
    let keys = t.dir.join("keys.csv");
    ok(&[
        "export",
        s(&t.model),
        "--what",
        "topic-keys",
        "--top",
        "5",
        "-o",
        s(&keys),
        "-q",
    ]);
    let rows = parse_csv(&std::fs::read_to_string(&keys).unwrap());
    assert_eq!(rows[0], ["topic", "rank", "word", "count", "phi"]);
    let topics = json(&["topics", s(&t.model), "--top", "5"]);
    for tp in topics["topics"].as_array().unwrap() {
        let k = tp["topic"].as_u64().unwrap().to_string();
        let words: Vec<&str> = tp["top_words"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["word"].as_str().unwrap())
            .collect();
        let ours: Vec<&str> = rows[1..]
            .iter()
            .filter(|r| r[0] == k)
            .map(|r| r[2].as_str())
            .collect();
        assert_eq!(ours, words, "topic {k}");
    }
    // φ wide: the header quotes the word with a comma and a quote, and rows sum to 1.
    let phi = t.dir.join("phi.csv");
    ok(&["export", s(&t.model), "--what", "phi", "-o", s(&phi), "-q"]);
    let rows = parse_csv(&std::fs::read_to_string(&phi).unwrap());
    assert!(rows[0].iter().any(|w| w == "a,\"b") && rows[0].iter().any(|w| w == "<script>"));
    assert_eq!(rows.len(), 4);
    for r in &rows[1..] {
        let sum: f64 = r[1..].iter().map(|x| x.parse::<f64>().unwrap()).sum();
        assert!((sum - 1.0).abs() < 1e-9, "{sum}");
    }
    // θ as JSON Lines (wide and long) and .npy agree.
    let wide = t.dir.join("theta.jsonl");
    ok(&["export", s(&t.model), "-o", s(&wide), "-q"]);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&wide)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let npy = t.dir.join("theta.npy");
    ok(&[
        "export",
        s(&t.model),
        "--what",
        "doc-topics",
        "--format",
        "npy",
        "-o",
        s(&npy),
        "-q",
    ]);
    let bytes = std::fs::read(&npy).unwrap();
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize + 10;
    let header = String::from_utf8_lossy(&bytes[10..header_len]);
    assert!(
        header.contains(&format!("'shape': ({}, 3)", lines.len())),
        "{header}"
    );
    let first = f64::from_le_bytes(bytes[header_len..header_len + 8].try_into().unwrap());
    assert_eq!(first, lines[0]["theta"][0].as_f64().unwrap());
    let long = t.dir.join("long.csv");
    ok(&[
        "export",
        s(&t.model),
        "--layout",
        "long",
        "-o",
        s(&long),
        "-q",
    ]);
    let rows = parse_csv(&std::fs::read_to_string(&long).unwrap());
    assert_eq!(rows[0], ["doc", "record", "topic", "count", "theta"]);
    let r = &rows[1];
    let (d, k): (usize, usize) = (r[0].parse().unwrap(), r[2].parse().unwrap());
    assert_eq!(
        r[4].parse::<f64>().unwrap(),
        lines[d]["theta"][k].as_f64().unwrap()
    );
    // Each row's `record` is its input record, the number `similar --doc` takes and answers
    // with, and the records skip the held-out documents' lines (the fifth attack: the two used
    // to be joined by position): every Manhattan distance `similar` reports is the distance of
    // the two θ rows found by record.
    let corpus = topos_corpus::Corpus::open(&t.model.with_extension("tcorp")).unwrap();
    let records: Vec<u64> = lines
        .iter()
        .map(|l| l["record"].as_u64().unwrap())
        .collect();
    assert_eq!(records, corpus.train_ids());
    assert!(
        records.iter().enumerate().any(|(d, &r)| r != d as u64),
        "{records:?}"
    );
    let theta_of = |record: u64| -> Vec<f64> {
        let d = records
            .iter()
            .position(|&r| r == record)
            .expect("a training record");
        let row = lines[d]["theta"].as_array().unwrap();
        row.iter().map(|x| x.as_f64().unwrap()).collect()
    };
    let query = records[lines.len() - 1];
    let found = json(&[
        "similar",
        s(&t.model),
        "--doc",
        &query.to_string(),
        "-k",
        "5",
        "--metric",
        "manhattan",
    ]);
    let neighbors = found["results"][0]["neighbors"].as_array().unwrap();
    assert_eq!(neighbors.len(), 5, "{found}");
    for n in neighbors {
        let theta = theta_of(n["doc"].as_u64().unwrap());
        let by_record: f64 = theta_of(query)
            .iter()
            .zip(&theta)
            .map(|(a, b)| (a - b).abs())
            .sum();
        let reported = n["distance"].as_f64().unwrap();
        assert!((reported - by_record).abs() < 1e-5, "{by_record} {found}");
    }
    // Mallet's files.
    let mallet = t.dir.join("mallet");
    ok(&[
        "export",
        s(&t.model),
        "--format",
        "mallet",
        "-o",
        s(&mallet),
        "-q",
    ]);
    let dt = std::fs::read_to_string(mallet.join("doc-topics.txt")).unwrap();
    assert_eq!(dt.lines().count(), lines.len());
    assert_eq!(dt.lines().next().unwrap().split('\t').count(), 2 + 3);
    let tk = std::fs::read_to_string(mallet.join("topic-keys.txt")).unwrap();
    assert!(tk.starts_with("0\t0.1\t"), "{tk}");
    let wtc = std::fs::read_to_string(mallet.join("word-topic-counts.txt")).unwrap();
    assert!(wtc.lines().next().unwrap().starts_with("0 "));
    // Refusals: one line, nothing written.
    let no = t.dir.join("no.npy");
    fails(
        &["export", s(&t.model), "--what", "topic-keys", "-o", s(&no)],
        "npy",
    );
    fails(
        &["export", s(&t.model), "-o", s(&t.dir.join("x.txt"))],
        "--format",
    );
    assert!(!no.exists());
    // The corpus export is unchanged.
    let text = t.dir.join("text");
    ok(&["export", s(&t.corpus), "-o", s(&text), "-q"]);
    assert!(text.join("train.txt").exists());
}

#[test]
fn mallet_files_import_back_as_the_same_model() {
    let t = trained("3");
    let original = json(&["topics", s(&t.model), "--top", "1000"]);
    let beta = original["hyperparameters"]["beta"]
        .as_f64()
        .unwrap()
        .to_string();
    let mallet = t.dir.join("mallet");
    ok(&[
        "export",
        s(&t.model),
        "--format",
        "mallet",
        "-o",
        s(&mallet),
        "-q",
    ]);
    // The directory: counts, K and α from topic-keys.txt, the side file from doc-topics.txt.
    let imported = t.dir.join("imported.tmod");
    ok(&[
        "import",
        "--from",
        "mallet",
        s(&mallet),
        "--corpus",
        s(&t.corpus),
        "--beta",
        &beta,
        "-o",
        s(&imported),
        "-q",
    ]);
    let back = json(&["topics", s(&imported), "--top", "1000"]);
    assert_eq!(back["topics"], original["topics"], "every count and φ");
    assert_eq!(back["hyperparameters"], original["hyperparameters"]);
    assert_eq!(back["provenance"]["algorithm"], "imported");
    // Exported again, the three files are the same bytes.
    let again = t.dir.join("again");
    ok(&[
        "export",
        s(&imported),
        "--format",
        "mallet",
        "--corpus",
        s(&t.corpus),
        "-o",
        s(&again),
        "-q",
    ]);
    for name in ["doc-topics.txt", "topic-keys.txt", "word-topic-counts.txt"] {
        assert_eq!(
            std::fs::read(mallet.join(name)).unwrap(),
            std::fs::read(again.join(name)).unwrap(),
            "{name}"
        );
    }
    // The side file came back: eval scores the training likelihood as for the original.
    let e0 = json(&["eval", s(&t.model)]);
    let e1 = json(&["eval", s(&imported), "--corpus", s(&t.corpus)]);
    assert!(e0["train_ll_per_token"].is_number(), "{e0}");
    assert_eq!(e1["train_ll_per_token"], e0["train_ll_per_token"]);
    assert_eq!(e1["coherence_per_topic"], e0["coherence_per_topic"]);
    // The counts file alone, with K and α given, and Mallet's doc-topics beside it.
    let alone = t.dir.join("alone.tmod");
    ok(&[
        "import",
        "--from",
        "mallet",
        s(&mallet.join("word-topic-counts.txt")),
        "--doc-topics",
        s(&mallet.join("doc-topics.txt")),
        "--corpus",
        s(&t.corpus),
        "-k",
        "3",
        "--alpha",
        "0.1",
        "--beta",
        &beta,
        "-o",
        s(&alone),
        "-q",
    ]);
    assert_eq!(
        std::fs::read(&alone).unwrap(),
        std::fs::read(&imported).unwrap()
    );
    // The same counts as `word<TAB>topic<TAB>count` lines (--from tsv) make the same model.
    let mut tsv = String::from("word\ttopic\tcount\n");
    for line in std::fs::read_to_string(mallet.join("word-topic-counts.txt"))
        .unwrap()
        .lines()
    {
        let mut f = line.split(' ');
        let word = f.nth(1).unwrap();
        for pair in f {
            let (topic, count) = pair.split_once(':').unwrap();
            tsv.push_str(&format!("{word}\t{topic}\t{count}\n"));
        }
    }
    let tsv_path = t.dir.join("counts.tsv");
    std::fs::write(&tsv_path, tsv).unwrap();
    let from_tsv = t.dir.join("tsv.tmod");
    ok(&[
        "import",
        s(&tsv_path),
        "--corpus",
        s(&t.corpus),
        "-k",
        "3",
        "--alpha",
        "0.1",
        "--beta",
        &beta,
        "-o",
        s(&from_tsv),
        "-q",
    ]);
    assert_eq!(
        std::fs::read(&from_tsv).unwrap(),
        std::fs::read(&alone).unwrap()
    );
    // A word and topic given twice (here the whole file twice) is added, and said: the sixth
    // attack found repeats summed without a word. A sum past a model's 32 bits is refused.
    let tsv_args = |path: &Path, out: &Path| -> Vec<String> {
        let (p, c, o) = (s(path), s(&t.corpus), s(out));
        ["import", p, "--corpus", c, "-k", "3", "--alpha", "0.1"]
            .iter()
            .map(|x| x.to_string())
            .chain([
                "--beta".into(),
                beta.clone(),
                "-o".into(),
                o.into(),
                "-q".into(),
            ])
            .collect()
    };
    let twice = t.dir.join("twice.tsv");
    let once = std::fs::read_to_string(&tsv_path).unwrap();
    std::fs::write(&twice, format!("{once}{once}")).unwrap();
    let doubled = t.dir.join("doubled.tmod");
    let a = tsv_args(&twice, &doubled);
    let out = topos(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{out:?}");
    let data = || {
        once.lines()
            .filter(|l| !l.is_empty() && !l.starts_with("word\t"))
    };
    let repeated = data().count();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(
            "{repeated} lines gave a word and topic already given"
        )),
        "{out:?}"
    );
    let counts = |m: &Path| -> u64 {
        json(&["topics", s(m), "--top", "0"])["topics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["tokens"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(counts(&doubled), 2 * counts(&from_tsv));
    let word = data().next().unwrap().split('\t').next().unwrap();
    let huge = t.dir.join("huge.tsv");
    std::fs::write(&huge, format!("{word}\t0\t4294967295\n{word}\t0\t1\n")).unwrap();
    let a = tsv_args(&huge, &t.dir.join("huge.tmod"));
    fails(
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        "line 2: the counts given for this word and topic add up past 4294967295",
    );
    // Refusals, one line each: a word the corpus lacks, proportions that another α made, no K.
    let bad = t.dir.join("bad.txt");
    std::fs::write(&bad, "0 nosuchword 0:3\n").unwrap();
    let no = t.dir.join("no.tmod");
    let base = ["import", "--from", "mallet", "--corpus", s(&t.corpus)];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter()
            .chain(extra)
            .map(|x| x.to_string())
            .chain(["-o".into(), s(&no).into()])
            .collect()
    };
    let run = |a: Vec<String>, needle: &str| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        fails(&a, needle);
    };
    run(
        with(&[s(&bad), "-k", "3", "--alpha", "0.1", "--beta", &beta]),
        "not in the corpus vocabulary",
    );
    run(
        with(&[
            s(&mallet.join("word-topic-counts.txt")),
            "--doc-topics",
            s(&mallet.join("doc-topics.txt")),
            "-k",
            "3",
            "--alpha",
            "0.7",
            "--beta",
            &beta,
        ]),
        "alpha",
    );
    run(
        with(&[
            s(&mallet.join("word-topic-counts.txt")),
            "--alpha",
            "0.1",
            "--beta",
            &beta,
        ]),
        "-k",
    );
    fails(
        &[
            "import",
            "--from",
            "lda-c",
            s(&mallet),
            "--corpus",
            s(&t.corpus),
            "--beta",
            &beta,
            "-o",
            s(&no),
        ],
        "not tsv or mallet",
    );
    assert!(!no.exists());
}

#[test]
fn plots_overlay_runs_as_svg_and_png() {
    let t = trained("3");
    let other = t.dir.join("other.log");
    // Another run's log: the same iterations, 100 later (still increasing: one run).
    std::fs::write(
        &other,
        std::fs::read_to_string(&t.log)
            .unwrap()
            .replace("\"iteration\":", "\"iteration\":10"),
    )
    .unwrap();
    let svg = t.dir.join("conv.svg");
    ok(&["plot", s(&t.log), s(&other), "-o", s(&svg), "-q"]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains(">run<") && text.contains(">other<"));
    assert_eq!(text.matches("<polyline").count(), 8);
    let png = t.dir.join("conv.png");
    ok(&["plot", s(&t.log), "-o", s(&png), "-q"]);
    assert_eq!(&std::fs::read(&png).unwrap()[..4], b"\x89PNG");
    let prev = t.dir.join("prev.svg");
    ok(&["plot", "--prevalence", s(&t.model), "-o", s(&prev), "-q"]);
    assert!(std::fs::read_to_string(&prev)
        .unwrap()
        .contains("topic prevalence"));
    fails(
        &["plot", s(&t.log), "-o", s(&t.dir.join("conv.gif"))],
        ".svg or .png",
    );
    fails(
        &["plot", s(&t.model), "-o", s(&t.dir.join("x.svg"))],
        "training log",
    );
    assert!(!t.dir.join("x.svg").exists());
}

/// A fifth attack, row 4: `--log` appends, so two runs to one file read as iterations 10, 20,
/// 30, 10, 20, 30; the figure drew them as one line jumping back. Each run is now its own line,
/// "run 1" and "run 2", and a warning (not silenced by `--quiet`) says the file holds two runs.
/// Each line names its process and the iteration the process started from, so a new run is
/// not taken for a resume whatever its iterations.
#[test]
fn runs_appended_to_one_log_are_drawn_apart_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("t.txt");
    std::fs::write(
        &input,
        "alpha beta\nalpha gamma\nbeta gamma\nalpha beta gamma\n",
    )
    .unwrap();
    let corpus = d.join("t.tcorp");
    let mut args = prepare_every_word(&input, &corpus);
    args.extend(["--min-len", "1", "--holdout", "0"]);
    ok(&args);
    let log = d.join("run.log");
    // The second run evaluates at 15 and 30: by its iterations alone (15 after 10) it would read
    // as a resume of the first; the process tag of each line tells them apart.
    for (seed, model, every) in [("1", "p1.tmod", "10"), ("2", "p2.tmod", "15")] {
        let model = d.join(model);
        let args = [
            "train",
            s(&corpus),
            "-k",
            "2",
            "--iters",
            "30",
            "--eval-every",
            every,
            "--log",
            s(&log),
            "--seed",
            seed,
            "-o",
            s(&model),
            "-q",
        ];
        ok(&args);
    }
    let svg = d.join("run.svg");
    let out = topos(&["plot", s(&log), "-o", s(&svg), "-q"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("warning: ") && err.contains("holds 2 training runs"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.contains(">run 1<") && text.contains(">run 2<"),
        "{text}"
    );
    // Two runs in four panels; every line goes forward.
    assert_eq!(text.matches("<polyline").count(), 8);
    for line in text.split("points=\"").skip(1) {
        let xs: Vec<f64> = line[..line.find('"').unwrap()]
            .split(' ')
            .map(|p| p.split(',').next().unwrap().parse().unwrap())
            .collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
    }
    // The report's figure is the same, with the same warning.
    let html = d.join("r.html");
    let model = d.join("p2.tmod");
    let out = topos(&["report", s(&model), "--log", s(&log), "-o", s(&html), "-q"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds 2 training runs"));
}

/// A fifth attack, row 1: a word with white space ("new york", from a vocabulary file) made
/// Mallet's files that `import --from mallet` could not read back, and the export said nothing.
/// It is refused before anything is written, as the corpus export refuses it.
#[test]
fn mallet_export_refuses_a_word_with_white_space() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("v3.txt"), "new york\nbanana\nzebra\n").unwrap();
    let ldac = d.join("c3.ldac");
    std::fs::write(&ldac, "3 0:2 1:3 2:1\n2 0:1 2:4\n3 0:1 1:2 2:2\n").unwrap();
    let corpus = d.join("c3.tcorp");
    let vocab = d.join("v3.txt");
    let mut args = prepare_every_word(&ldac, &corpus);
    args.extend(["--vocab", s(&vocab)]);
    ok(&args);
    let model = d.join("c3.tmod");
    train_quick(&corpus, &model, "2", "5", &["--doc-topics"]);
    let mallet = d.join("m3");
    let out = fails(
        &["export", s(&model), "--format", "mallet", "-o", s(&mallet)],
        "word \"new york\" contains white space",
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("csv, jsonl, npy or parquet"));
    assert!(!mallet.exists(), "nothing written");
    let text = d.join("text");
    fails(
        &["export", s(&corpus), "-o", s(&text)],
        "word \"new york\" contains white space",
    );
    assert!(!text.exists(), "nothing written");
    // A format that quotes words keeps it.
    let keys = d.join("keys.csv");
    ok(&[
        "export",
        s(&model),
        "--what",
        "topic-keys",
        "-o",
        s(&keys),
        "-q",
    ]);
    assert!(std::fs::read_to_string(&keys).unwrap().contains("new york"));
}

/// A fifth attack left `report --source` of a JSON Lines corpus showing the raw JSON. With
/// `--text-field` (the field `prepare` read) the example documents show their text; without it,
/// a warning says the lines are JSON objects shown whole.
#[test]
fn a_json_lines_source_shows_its_text_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let themes = [
        "river water fishing boat lake shore",
        "market stock price money bank trade",
    ];
    let jsonl = d.join("docs.jsonl");
    let lines: String = themed_text(&themes, 40, 12, 0)
        .lines()
        .map(|l| format!("{{\"id\": \"x\", \"body\": \"{l}\"}}\n"))
        .collect();
    std::fs::write(&jsonl, lines).unwrap();
    let corpus = d.join("c.tcorp");
    let mut args = prepare_every_word(&jsonl, &corpus);
    args.extend(["--text-field", "body", "--holdout", "0.1"]);
    ok(&args);
    let model = d.join("c.tmod");
    train_quick(&corpus, &model, "2", "10", &["--doc-topics"]);
    let page = d.join("r.html");
    let report = |extra: &[&str]| {
        let mut a = vec!["report", s(&model), "-o", s(&page), "--source", s(&jsonl)];
        a.extend_from_slice(extra);
        let out = topos(&a);
        assert!(out.status.success(), "{out:?}");
        (
            String::from_utf8_lossy(&out.stderr).into_owned(),
            std::fs::read_to_string(&page).unwrap(),
        )
    };
    let (err, html) = report(&[]);
    assert!(
        err.contains("are JSON objects, shown whole") && err.contains("--text-field"),
        "{err}"
    );
    assert!(html.contains("body"), "the raw lines");
    let (err, html) = report(&["--text-field", "body"]);
    assert!(!err.contains("JSON objects"), "{err}");
    assert!(
        !html.contains("&quot;body&quot;") && !html.contains("\"body\":"),
        "no raw JSON in the page"
    );
    assert!(
        themed_text(&themes, 40, 12, 0)
            .lines()
            .any(|body| html.contains(body)),
        "a document's text"
    );
    // A field the lines do not have names the line.
    let out = topos(&[
        "report",
        s(&model),
        "-o",
        s(&page),
        "--source",
        s(&jsonl),
        "--text-field",
        "title",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no field \"title\""),
        "{out:?}"
    );
}
