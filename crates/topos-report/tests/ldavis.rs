//! The LDAvis data equals pyLDAvis.prepare's on the same φ and θ (issue 23): the fixture holds a
//! small model's counts and pyLDAvis 3.4.1's output (`tests/fixtures/pyldavis.py` made it).

use serde_json::Value;
use std::collections::BTreeMap;
use topos_corpus::Vocabulary;
use topos_model::{DocTopics, Hyperparameters, Provenance, TopicModel};
use topos_report::{topic_frequencies, Vis, VisOptions};

fn fixture() -> (TopicModel, DocTopics, Value) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/pyldavis.json"
    ))
    .unwrap();
    let f: Value = serde_json::from_str(&text).unwrap();
    let vocab: Vec<String> = f["vocab"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect();
    let counts: Vec<u32> = f["word_topic"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap() as u32)
        .collect();
    let k = counts.len() / vocab.len();
    let hyper = Hyperparameters::new(
        k as u32,
        Some(f["alpha"].as_f64().unwrap()),
        Some(f["beta"].as_f64().unwrap()),
    )
    .unwrap();
    let model =
        TopicModel::from_counts(Vocabulary::new(vocab), hyper, counts, Provenance::default());
    let mut a = DocTopics::new(k as u32);
    for row in f["doc_topics"].as_array().unwrap() {
        let row: Vec<u32> = row
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap() as u32)
            .collect();
        a.push_dense(&row);
    }
    (model, a, f["expected"].clone())
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() <= 1e-6, "{what}: {a} vs pyLDAvis {b}");
}

/// tinfo or token.table as (key columns) → numeric columns.
fn table(v: &Value, keys: &[&str], values: &[&str]) -> BTreeMap<String, Vec<f64>> {
    let n = v[keys[0]].as_array().unwrap().len();
    (0..n)
        .map(|i| {
            let key: Vec<String> = keys.iter().map(|k| v[*k][i].to_string()).collect();
            let vals = values.iter().map(|c| v[*c][i].as_f64().unwrap()).collect();
            (key.join("|"), vals)
        })
        .collect()
}

#[test]
fn equals_pyldavis_prepare() {
    let (model, a, expected) = fixture();
    let f = topic_frequencies(&a, &topos_report::vis::alphas(&model));
    let opts = VisOptions {
        terms: 10,
        lambda_step: 0.01,
    };
    let got = Vis::prepare(&model, f, opts).ldavis_json(&model);
    assert_eq!(got["topic.order"], expected["topic.order"]);
    assert_eq!(got["R"], expected["R"]);
    assert_eq!(got["mdsDat"]["topics"], expected["mdsDat"]["topics"]);
    for (g, e) in floats(&got["mdsDat"]["Freq"])
        .iter()
        .zip(floats(&expected["mdsDat"]["Freq"]))
    {
        close(*g, e, "topic proportion");
    }
    // Coordinates up to the sign of each axis (an eigenvector's sign is arbitrary).
    for axis in ["x", "y"] {
        let (g, e) = (
            floats(&got["mdsDat"][axis]),
            floats(&expected["mdsDat"][axis]),
        );
        let sign = if g.iter().zip(&e).map(|(a, b)| a * b).sum::<f64>() < 0.0 {
            -1.0
        } else {
            1.0
        };
        for (a, b) in g.iter().zip(&e) {
            close(sign * a, *b, axis);
        }
    }
    let cols = ["Freq", "Total", "logprob", "loglift"];
    let (gt, et) = (
        table(&got["tinfo"], &["Category", "Term"], &cols),
        table(&expected["tinfo"], &["Category", "Term"], &cols),
    );
    assert_eq!(gt.keys().collect::<Vec<_>>(), et.keys().collect::<Vec<_>>());
    for (key, e) in &et {
        for (c, (a, b)) in cols.iter().zip(gt[key].iter().zip(e)) {
            close(*a, *b, &format!("tinfo {key} {c}"));
        }
    }
    let (gk, ek) = (
        table(&got["token.table"], &["Term", "Topic"], &["Freq"]),
        table(&expected["token.table"], &["Term", "Topic"], &["Freq"]),
    );
    assert_eq!(gk.keys().collect::<Vec<_>>(), ek.keys().collect::<Vec<_>>());
    for (key, e) in &ek {
        close(gk[key][0], e[0], &format!("token.table {key}"));
    }
}
