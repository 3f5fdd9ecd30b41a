//! The run as a library type: driven with a test observer, every registered sampler trains on
//! the CPU (the GPU's equivalents are in `tests/gpu.rs`), writes its model, and resumes from a checkpoint to the model an
//! uninterrupted run writes; the schedule of evaluations, log lines and checkpoints is the
//! configuration's.

use std::path::{Path, PathBuf};
use topos_corpus::{Corpus, OwnedDocs, Vocabulary};
use topos_model::{Hyperparameters, TopicModel};
use topos_train::run::{LogLine, Observer, Progress, Silent};
use topos_train::synthetic::{generate, SyntheticSpec, TopicShape};
use topos_train::{DeviceChoice, Run, RunConfig, SAMPLERS};

/// Records everything a run says.
#[derive(Default)]
struct Recorder {
    infos: Vec<String>,
    progress: Vec<Progress>,
    lines: Vec<LogLine>,
    checkpoints: Vec<(PathBuf, u32)>,
}

impl Observer for Recorder {
    fn info(&mut self, message: &str) {
        self.infos.push(message.to_string());
    }
    fn progress(&mut self, p: &Progress) {
        self.progress.push(p.clone());
    }
    fn evaluated(&mut self, line: &LogLine) {
        self.lines.push(line.clone());
    }
    fn checkpointed(&mut self, path: &Path, iteration: u32) {
        self.checkpoints.push((path.to_path_buf(), iteration));
    }
}

/// A corpus file of a synthetic corpus with known topics, every 10th document held out.
fn corpus(dir: &Path) -> PathBuf {
    let spec = SyntheticSpec {
        num_docs: 300,
        num_words: 200,
        num_topics: 5,
        mean_doc_len: 40,
        alpha: topos_model::Alpha::symmetric(5, 0.1),
        shape: TopicShape::Dirichlet { beta: 0.05 },
        seed: 4,
    };
    let c = generate(&spec);
    let (mut train, mut heldout) = (OwnedDocs::new(), OwnedDocs::new());
    for (d, doc) in c.docs.view().iter().enumerate() {
        if d % 10 == 0 {
            heldout.push(doc)
        } else {
            train.push(doc)
        }
    }
    let vocab = Vocabulary::new((0..spec.num_words).map(|i| format!("w{i}")).collect());
    let path = dir.join("c.tcorp");
    Corpus::from_parts(vocab, train, heldout)
        .write(&path)
        .unwrap();
    path
}

fn config(corpus: &Path, out: &Path) -> RunConfig {
    let mut c = RunConfig::new(
        corpus,
        out,
        Hyperparameters::new(5, Some(0.1), Some(0.01)).unwrap(),
    );
    c.iterations = 20;
    c.threads = 2;
    c.device = DeviceChoice::cpu();
    c
}

#[test]
fn the_observer_sees_the_schedule_the_configuration_asks_for() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    let out = dir.path().join("m.tmod");
    let log = dir.path().join("log.jsonl");
    let mut cfg = config(&c, &out);
    cfg.eval_every = 5;
    cfg.heldout_every = Some(10);
    cfg.log = Some(log.clone());
    cfg.checkpoint_every = 8;
    let mut r = Recorder::default();
    let summary = Run::start(cfg, &mut r).unwrap().run_to_end(&mut r).unwrap();
    // One progress report per iteration, ending at the last with an ETA of zero.
    assert_eq!(r.progress.len(), 20);
    assert_eq!(r.progress.last().unwrap().iteration, 20);
    assert_eq!(r.progress.last().unwrap().eta_seconds, 0.0);
    // Training LL every 5, held-out every 10; the log holds the same lines.
    let at: Vec<u32> = r.lines.iter().map(|l| l.iteration).collect();
    assert_eq!(at, [5, 10, 15, 20]);
    assert!(r.lines.iter().all(|l| l.train_ll.is_some()));
    let heldout: Vec<u32> = r
        .lines
        .iter()
        .filter(|l| l.heldout_ll.is_some())
        .map(|l| l.iteration)
        .collect();
    assert_eq!(heldout, [10, 20]);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged.lines().count(), 4);
    // Checkpoints at 8 and 16, and at the last iteration before the outputs; then removed.
    let ck: Vec<u32> = r.checkpoints.iter().map(|c| c.1).collect();
    assert_eq!(ck, [8, 16, 20]);
    assert!(!r.checkpoints[0].0.exists());
    // The summary agrees with the last line and the files.
    assert_eq!(summary.heldout_ll, r.lines[3].heldout_ll);
    assert_eq!(summary.train_ll, r.lines[3].train_ll);
    assert_eq!(summary.algorithm, "cgs");
    assert!(r.infos.iter().any(|m| m.starts_with("training on cpu")));
    assert!(r.infos.iter().any(|m| m.starts_with("host memory needed")));
    let m = TopicModel::read(&out).unwrap();
    assert_eq!(m.provenance.iterations, 20);
    assert_eq!(m.topic_totals.iter().sum::<u64>(), summary.train_tokens);
}

#[test]
fn every_registered_sampler_trains_and_resumes_to_the_uninterrupted_model() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    for &sampler in SAMPLERS {
        let name = |what: &str| dir.path().join(format!("{}-{what}.tmod", sampler.name()));
        let mut whole = config(&c, &name("whole"));
        whole.sampler = sampler;
        whole.doc_topics = true;
        let s = Run::start(whole.clone(), &mut Silent)
            .unwrap()
            .run_to_end(&mut Silent)
            .unwrap();
        assert_eq!(s.algorithm, sampler.name());
        assert!(s.heldout_ll.unwrap() < 0.0 && s.train_ll.unwrap() < 0.0);
        let (model, sum) = TopicModel::read_with_checksum(&name("whole")).unwrap();
        assert_eq!(model.provenance.algorithm, sampler.name());
        let a = topos_model::DocTopics::read_for_model(&name("whole"), sum).unwrap();
        assert_eq!(a.len(), 270);

        // Stopped after the checkpoint of iteration 6 (dropped, as a killed process would be),
        // resumed on another number of threads: the same files, byte for byte.
        let mut cut = config(&c, &name("resumed"));
        cut.sampler = sampler;
        cut.doc_topics = true;
        cut.checkpoint_every = 6;
        if !sampler.keeps_assignments() {
            // A sampler without assignments (mfm) has no checkpoints: refused before any work.
            let e = Run::start(cut, &mut Silent).err().unwrap().to_string();
            assert!(e.contains("keeps no topic assignments"), "{e}");
            assert!(!name("resumed").exists());
            continue;
        }
        let mut run = Run::start(cut.clone(), &mut Silent).unwrap();
        while run.iteration() < 7 {
            run.step(&mut Silent).unwrap();
        }
        drop(run);
        cut.resume = true;
        cut.threads = 1;
        Run::start(cut, &mut Silent)
            .unwrap()
            .run_to_end(&mut Silent)
            .unwrap();
        assert_eq!(
            std::fs::read(name("whole")).unwrap(),
            std::fs::read(name("resumed")).unwrap(),
            "{}",
            sampler.name()
        );
        // The side file records its own model's checksum, so the files are not identical
        // across models, but these two runs wrote the same model and the same counts.
        assert_eq!(
            std::fs::read(
                dir.path()
                    .join(format!("{}-whole.tmod.doctopics", sampler.name()))
            )
            .unwrap(),
            std::fs::read(
                dir.path()
                    .join(format!("{}-resumed.tmod.doctopics", sampler.name()))
            )
            .unwrap()
        );

        // Resuming with another sampler is refused, saying which one made the checkpoint.
        let mut other = config(&c, &name("other"));
        other.sampler = SAMPLERS
            .iter()
            .copied()
            .find(|s| s.name() != sampler.name() && s.keeps_assignments())
            .unwrap();
        other.checkpoint_every = 3;
        let mut run = Run::start(other.clone(), &mut Silent).unwrap();
        for _ in 0..4 {
            run.step(&mut Silent).unwrap();
        }
        drop(run);
        let mut wrong = other.clone();
        wrong.sampler = sampler;
        wrong.resume = true;
        let e = Run::start(wrong, &mut Silent).err().unwrap().to_string();
        assert!(
            e.contains("sampler") && e.contains(other.sampler.name()),
            "{e}"
        );
    }
}

/// ezlda reports what its tokens skipped (thesis §1.3): in every progress report and every log
/// line, as fractions of the iteration's tokens, and the log file has them; a sampler that
/// skips nothing (cgs) writes neither field. On this corpus, after 20 iterations, most tokens
/// land in their word's most popular topic.
#[test]
fn ezlda_reports_the_fractions_of_tokens_that_skipped_work() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path());
    for sampler in ["ezlda", "cgs"] {
        let log = dir.path().join(format!("{sampler}.jsonl"));
        let mut cfg = config(&c, &dir.path().join(format!("{sampler}.tmod")));
        cfg.sampler = topos_train::sampler::sampler_named(sampler).unwrap();
        cfg.eval_every = 5;
        cfg.log = Some(log.clone());
        let mut r = Recorder::default();
        let summary = Run::start(cfg, &mut r).unwrap().run_to_end(&mut r).unwrap();
        let logged = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<serde_json::Value> = logged
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);
        if sampler == "cgs" {
            assert!(r.progress.iter().all(|p| p.skipped.is_none()));
            assert!(lines
                .iter()
                .all(|l| l.get("skipped_final_fraction").is_none()
                    && l.get("skipped_construction_fraction").is_none()));
            continue;
        }
        for p in &r.progress {
            let s = p.skipped.expect("ezlda reports its skips every iteration");
            assert_eq!(s.tokens, summary.train_tokens);
            assert!(s.skipped_construction <= s.skipped_final && s.skipped_final <= s.tokens);
        }
        for (line, json) in r.lines.iter().zip(&lines) {
            let f = line.skipped_final_fraction.unwrap();
            let c = line.skipped_construction_fraction.unwrap();
            assert!((0.0..=1.0).contains(&f) && c <= f, "{f} {c}");
            assert_eq!(json["skipped_final_fraction"].as_f64(), Some(f));
            assert_eq!(json["skipped_construction_fraction"].as_f64(), Some(c));
        }
        let last = r.lines.last().unwrap();
        eprintln!(
            "ezlda at 20 iterations: skipped final {:.3}, S' {:.3}",
            last.skipped_final_fraction.unwrap(),
            last.skipped_construction_fraction.unwrap()
        );
        assert!(last.skipped_final_fraction.unwrap() > 0.3);
        assert!(last.skipped_construction_fraction.unwrap() > 0.1);
    }
}
