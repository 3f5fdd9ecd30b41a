//! Helpers shared by the end-to-end tests of the `topos` binary.
// Each test file compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the binary under test.
pub fn topos(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_topos"))
        .args(args)
        .output()
        .expect("run topos")
}

/// Runs the binary under test with `input` on its standard input.
pub fn topos_with_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_topos"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run topos");
    // A command that refuses its input early may close stdin before reading it all.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().expect("wait for topos")
}

/// Runs a command that must succeed; returns its stdout.
pub fn ok(args: &[&str]) -> String {
    let out = topos(args);
    assert!(
        out.status.success(),
        "topos {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a command with `--json` that must succeed with one JSON document on stdout.
pub fn json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--json");
    let out = ok(&a);
    assert_eq!(out.trim().lines().count(), 1, "one JSON document: {out}");
    serde_json::from_str(&out).unwrap()
}

/// Runs a command that must fail with a one-line error containing `needle`; returns its output.
pub fn fails(args: &[&str], needle: &str) -> Output {
    let out = topos(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "topos {args:?} should fail");
    // Status lines may come first; the error is one line, the last.
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(
        errors.len(),
        1,
        "expected one line of error for {args:?}, got: {err}"
    );
    assert_eq!(err.lines().last(), Some(errors[0]), "{err}");
    assert!(errors[0].starts_with("error: "), "{err}");
    assert!(
        errors[0].to_lowercase().contains(&needle.to_lowercase()),
        "error for {args:?} should mention {needle:?}: {err}"
    );
    out
}

/// [`fails`], and nothing at all was printed on stdout (nothing released).
pub fn fails_releasing_nothing(args: &[&str], needle: &str) {
    let out = fails(args, needle);
    assert!(
        out.stdout.is_empty(),
        "nothing may be released: {:?}",
        out.stdout
    );
}

/// A path as the `&str` the binary's arguments take.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Starts `topos args` (a training run with checkpoints), waits until `checkpoint` exists, then
/// kills the process with SIGKILL, as a crash or an impatient user would. A checkpoint is renamed
/// into place only when complete, so the one left behind is whole. Panics if the run ends first.
pub fn kill_at_first_checkpoint(args: &[&str], checkpoint: &Path) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_topos"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run topos");
    let start = std::time::Instant::now();
    while !checkpoint.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("topos {args:?} ended ({status}) before writing {checkpoint:?}");
        }
        assert!(
            start.elapsed().as_secs() < 120,
            "no checkpoint after two minutes"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// `docs` lines of `len` words: line i cycles through theme i % themes.len()'s words, starting
/// `salt` words in (a deterministic corpus whose topics are obvious).
pub fn themed_text(themes: &[&str], docs: usize, len: usize, salt: usize) -> String {
    let mut text = String::new();
    for i in 0..docs {
        let words: Vec<&str> = themes[i % themes.len()].split(' ').collect();
        let doc: Vec<&str> = (0..len)
            .map(|j| words[(i * 7 + j * 5 + salt) % words.len()])
            .collect();
        text.push_str(&doc.join(" "));
        text.push('\n');
    }
    text
}

/// Writes `docs` documents of `len` words over `themes` ([`themed_text`]) to `dir/NAME.txt`.
pub fn write_themes(
    dir: &Path,
    name: &str,
    themes: &[&str],
    docs: usize,
    len: usize,
    salt: usize,
) -> PathBuf {
    let p = dir.join(format!("{name}.txt"));
    std::fs::write(&p, themed_text(themes, docs, len, salt)).unwrap();
    p
}

/// `topos prepare INPUT -o OUT --min-df 1 --max-df 1.0 -q`: every word of a small input kept;
/// extend it with more options.
pub fn prepare_every_word<'a>(input: &'a Path, out: &'a Path) -> Vec<&'a str> {
    vec![
        "prepare",
        s(input),
        "-o",
        s(out),
        "--min-df",
        "1",
        "--max-df",
        "1.0",
        "-q",
    ]
}

/// `topos prepare INPUT -o OUT --holdout HOLDOUT --max-df 0.9 -q EXTRA...`; returns OUT.
pub fn prepare_text(input: &Path, out: &Path, holdout: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec![
        "prepare",
        s(input),
        "-o",
        s(out),
        "--holdout",
        holdout,
        "--max-df",
        "0.9",
        "-q",
    ];
    args.extend_from_slice(extra);
    ok(&args);
    out.to_path_buf()
}

/// `topos train CORPUS -k K --iters ITERS -o MODEL -q EXTRA...`: the small model most tests
/// need; returns what it printed (panics with the output if training fails).
pub fn train_quick(corpus: &Path, model: &Path, k: &str, iters: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "train",
        s(corpus),
        "-k",
        k,
        "--iters",
        iters,
        "-o",
        s(model),
        "-q",
    ];
    args.extend_from_slice(extra);
    ok(&args)
}
