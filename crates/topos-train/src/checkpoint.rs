//! Checkpoints: the complete sampler state, so `--resume` continues an interrupted run to exactly
//! the model an uninterrupted run would give.
//!
//! The state of both samplers is the assignment of every token (in corpus order) plus the number of
//! completed iterations: the counts are rebuilt from the assignments, and random numbers are keyed
//! by (seed, iteration, token) so nothing else needs saving. The file also records what the run
//! was (algorithm, K, α, β, seed, partitions, corpus checksum, and the sampler settings that
//! change the model, such as `--mh-steps`) so a checkpoint is never resumed against a different
//! corpus or different settings.

use std::collections::BTreeMap;
use std::path::Path;
use topos_io::{ByteReader, ByteWriter, FormatError, Kind, Staged, StreamingFile};

const KIND: Kind = Kind {
    name: "Topos checkpoint",
    magic: *b"TOPOSCKP",
    supported: &[1, 2],
    version_hint: "resume it with the topos version that wrote it, or start the run again",
};

/// Everything needed to resume training.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// The run it belongs to and how far it got.
    pub header: CheckpointHeader,
    /// Topic of every training token, in corpus order.
    pub assignments: Vec<u16>,
}

/// What a checkpoint records about its run, beside the assignments.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointHeader {
    pub algorithm: String,
    pub num_topics: u32,
    pub alpha: f64,
    pub beta: f64,
    pub seed: u64,
    pub partitions: u32,
    pub corpus_checksum: u64,
    /// Completed iterations.
    pub iteration: u32,
    /// A run that learns its priors (`--optimize-priors`): the schedule, and the priors as
    /// learned so far (what the next iteration samples with).
    pub priors: Option<LearnedPriors>,
    /// A run with fixed counts (`--seed-words`, `topos update`): their checksum
    /// ([`fixed_counts_checksum`]), so a resume with other seeds or none is refused.
    pub fixed_counts: Option<u64>,
    /// The sampler settings that change the model, where not at their defaults
    /// ([`crate::sampler::SamplerSettings::recorded`]: `mh_steps`), so a resume with other
    /// values is refused. Empty in checkpoints written before settings existed (the defaults).
    pub sampler_settings: BTreeMap<String, u32>,
}

/// The recorded settings whose default does not depend on the device (unknown keys kept, so
/// that they are refused).
fn device_independent(recorded: &BTreeMap<String, u32>) -> BTreeMap<String, u32> {
    recorded
        .iter()
        .filter(|(k, _)| {
            crate::sampler::Setting::from_key(k).is_none_or(|s| !s.default_depends_on_device())
        })
        .map(|(k, &v)| (k.clone(), v))
        .collect()
}

/// The checksum a checkpoint records of a run's fixed counts: XXH3 of their rows.
pub fn fixed_counts_checksum(b: &crate::counts::WordTopics) -> u64 {
    let mut w = ByteWriter::new();
    w.u32(b.num_topics);
    w.u64(b.num_words() as u64);
    for &o in &b.offsets {
        w.u64(o);
    }
    w.u16s(&b.topics);
    for &c in &b.counts {
        w.u32(c);
    }
    topos_io::checksum(&w.buf)
}

/// The learned-priors state of a checkpoint (version 2).
#[derive(Clone, Debug, PartialEq)]
pub struct LearnedPriors {
    pub schedule: crate::priors::PriorSchedule,
    /// α_k, one per topic.
    pub alpha: Vec<f64>,
    pub beta: f64,
}

impl CheckpointHeader {
    /// The file version this header is written as: 2 with learned priors, fixed counts or
    /// sampler settings (a flags byte and their sections after the iteration), else 1, the
    /// bytes it always wrote.
    fn version(&self) -> u32 {
        if self.priors.is_some() || self.fixed_counts.is_some() || !self.sampler_settings.is_empty()
        {
            2
        } else {
            1
        }
    }

    /// The header as written before `tokens` assignments.
    fn encode(&self, w: &mut ByteWriter, tokens: u64) {
        w.str(&self.algorithm);
        w.u32(self.num_topics);
        w.f64(self.alpha);
        w.f64(self.beta);
        w.u64(self.seed);
        w.u32(self.partitions);
        w.u64(self.corpus_checksum);
        w.u32(self.iteration);
        if self.version() >= 2 {
            w.u8(u8::from(self.priors.is_some())
                | (u8::from(self.fixed_counts.is_some()) << 1)
                | (u8::from(!self.sampler_settings.is_empty()) << 2));
        }
        if let Some(p) = &self.priors {
            w.u32(p.schedule.every);
            w.u32(p.schedule.burn_in);
            for &a in &p.alpha {
                w.f64(a);
            }
            w.f64(p.beta);
        }
        if let Some(f) = self.fixed_counts {
            w.u64(f);
        }
        if !self.sampler_settings.is_empty() {
            w.u32(self.sampler_settings.len() as u32);
            for (name, &value) in &self.sampler_settings {
                w.str(name);
                w.u32(value);
            }
        }
        w.u64(tokens);
    }

    /// Why a checkpoint with this header cannot continue a run of `sampler` with `settings` on a
    /// device whose settings left out take `defaults`, for the settings whose default depends on
    /// the device ([`crate::sampler::Setting::default_depends_on_device`]: `--mh-steps`), which
    /// [`CheckpointHeader::check_resumes`] leaves to this: the values the checkpoint's run and
    /// this one sample with must be equal, whether given or left to the default. A checkpoint
    /// that does not record such a setting ran with its device's default, taken to be this
    /// device's (a run moved to another kind of device changes its chain anyway).
    pub fn check_device_settings(
        &self,
        sampler: &dyn crate::Sampler,
        settings: &crate::sampler::SamplerSettings,
        defaults: crate::sampler::SettingDefaults,
    ) -> Result<(), String> {
        for s in sampler
            .settings()
            .iter()
            .filter(|s| s.changes_model() && s.default_depends_on_device())
        {
            let made = self
                .sampler_settings
                .get(s.key())
                .copied()
                .unwrap_or_else(|| s.default_on(defaults));
            let asked = s.value_on(settings, defaults);
            if made != asked {
                return Err(format!(
                    "it was made with {flag} {}, and this run samples with {flag} {}; the chain depends on it, so resume with {flag} {}",
                    s.show(made),
                    s.show(asked),
                    s.show(made),
                    flag = s.flag()
                ));
            }
        }
        Ok(())
    }

    /// Why a checkpoint with this header cannot continue the run `expected` describes (the
    /// iteration aside; the number of tokens is the engine's to check); `partitions_matter`: the
    /// sampler's model depends on the partition count.
    pub fn check_resumes(
        &self,
        expected: &CheckpointHeader,
        partitions_matter: bool,
    ) -> Result<(), String> {
        if self.corpus_checksum != expected.corpus_checksum {
            return Err("it was made for a different corpus file".into());
        }
        if self.algorithm != expected.algorithm {
            return Err(format!(
                "it was made by the {} sampler, and this run asks for {}; resume with --algo {}",
                self.algorithm, expected.algorithm, self.algorithm
            ));
        }
        if self.num_topics != expected.num_topics
            || self.alpha != expected.alpha
            || self.beta != expected.beta
            || self.seed != expected.seed
        {
            return Err(format!(
                "checkpoint has K={} alpha={} beta={} seed={}, requested K={} alpha={} beta={} seed={}",
                self.num_topics, self.alpha, self.beta, self.seed, expected.num_topics, expected.alpha, expected.beta, expected.seed
            ));
        }
        let schedule = |h: &CheckpointHeader| h.priors.as_ref().map(|p| p.schedule);
        if schedule(self) != schedule(expected) {
            let says = |s: Option<crate::priors::PriorSchedule>| match s {
                Some(s) => format!(
                    "--optimize-priors {} --optimize-burn-in {}",
                    s.every, s.burn_in
                ),
                None => "fixed priors".to_string(),
            };
            return Err(format!(
                "it was made with {}, and this run asks for {}",
                says(schedule(self)),
                says(schedule(expected))
            ));
        }
        if self.fixed_counts != expected.fixed_counts {
            let says = |f: Option<u64>| match f {
                Some(x) => format!("fixed counts {x:016x} (--seed-words or topos update)"),
                None => "no fixed counts".to_string(),
            };
            return Err(format!(
                "it was made with {}, and this run has {}; resume with the same --seed-words file (or model and corpus of topos update)",
                says(self.fixed_counts),
                says(expected.fixed_counts)
            ));
        }
        // Settings whose default depends on the device are compared by the values they run
        // with, once the device is known ([`CheckpointHeader::check_device_settings`]): the same
        // value given or left to the device's default must resume.
        let (mine, wanted) = (
            device_independent(&self.sampler_settings),
            device_independent(&expected.sampler_settings),
        );
        if mine != wanted {
            let says = |recorded: &BTreeMap<String, u32>| {
                crate::sampler::SamplerSettings::describe_recorded(
                    recorded,
                    "the default sampler settings",
                )
            };
            let fix = if mine.is_empty() {
                "leave the setting out".to_string()
            } else {
                format!("add {}", says(&mine))
            };
            return Err(format!(
                "it was made with {}, and this run asks for {}; the chain depends on them, so resume with the checkpoint's ({fix})",
                says(&mine),
                says(&wanted)
            ));
        }
        if partitions_matter && self.partitions != expected.partitions {
            return Err(format!(
                "{} partitions in the checkpoint, {} requested; the sampler's chain depends on them, so resume with --partitions {} (or leave --partitions out)",
                self.partitions, expected.partitions, self.partitions
            ));
        }
        Ok(())
    }
}

/// Writes a checkpoint piece by piece (the assignments streamed from a device), with the bytes
/// of [`Checkpoint::write`].
pub struct CheckpointWriter {
    file: StreamingFile,
    remaining: u64,
    num_topics: u32,
}

impl CheckpointWriter {
    /// Starts the checkpoint of `tokens` assignments at `path` (under a temporary name).
    pub fn create(
        path: &Path,
        header: &CheckpointHeader,
        tokens: u64,
    ) -> Result<Self, FormatError> {
        let mut file = StreamingFile::create(&KIND, header.version(), path)?;
        let mut w = ByteWriter::new();
        header.encode(&mut w, tokens);
        file.write(&w.buf)?;
        Ok(Self {
            file,
            remaining: tokens,
            num_topics: header.num_topics,
        })
    }

    /// Appends the next tokens' topics (corpus order).
    pub fn push(&mut self, z: &[u16]) -> Result<(), FormatError> {
        let bad = |what: String| FormatError::Malformed {
            path: String::new(),
            kind: KIND.name,
            what,
        };
        if z.len() as u64 > self.remaining {
            return Err(bad("more assignments than tokens".into()));
        }
        if let Some(t) = z.iter().find(|&&t| u32::from(t) >= self.num_topics) {
            return Err(bad(format!("assignment {t} is not a topic below K")));
        }
        let mut w = ByteWriter::new();
        w.u16s(z);
        self.remaining -= z.len() as u64;
        self.file.write(&w.buf)
    }

    /// Completes the file under its temporary name.
    pub fn stage(self) -> Result<Staged, FormatError> {
        if self.remaining != 0 {
            return Err(FormatError::Malformed {
                path: String::new(),
                kind: KIND.name,
                what: format!("{} assignments missing", self.remaining),
            });
        }
        Ok(self.file.stage()?.0)
    }
}

impl Checkpoint {
    /// Writes the checkpoint atomically.
    pub fn write(&self, path: &Path) -> Result<(), FormatError> {
        let mut w = ByteWriter::new();
        self.header.encode(&mut w, self.assignments.len() as u64);
        w.u16s(&self.assignments);
        topos_io::write_file(&KIND, self.header.version(), path, &w.buf)
    }

    /// Reads and validates a checkpoint.
    pub fn read(path: &Path) -> Result<Self, FormatError> {
        let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
        let checked = topos_io::check(&KIND, path, &bytes)?;
        let bad = |what: String| FormatError::Malformed {
            path: path.display().to_string(),
            kind: KIND.name,
            what,
        };
        let mut r = ByteReader::new(checked.payload);
        let algorithm = r.str("algorithm").map_err(bad)?.to_string();
        let num_topics = r.u32("K").map_err(bad)?;
        let alpha = r.f64("alpha").map_err(bad)?;
        let beta = r.f64("beta").map_err(bad)?;
        let seed = r.u64("seed").map_err(bad)?;
        let partitions = r.u32("partitions").map_err(bad)?;
        let corpus_checksum = r.u64("corpus checksum").map_err(bad)?;
        let iteration = r.u32("iteration").map_err(bad)?;
        let flags = if checked.version >= 2 {
            let f = r.u8("flags").map_err(bad)?;
            if f == 0 || f > 7 {
                return Err(bad(format!("flags are {f}, expected 1 to 7")));
            }
            f
        } else {
            0
        };
        let priors = if flags & 1 != 0 {
            let every = r.u32("prior schedule").map_err(bad)?;
            let burn_in = r.u32("prior burn-in").map_err(bad)?;
            let mut alpha = Vec::with_capacity((num_topics as usize).min(r.remaining() / 8));
            for _ in 0..num_topics {
                alpha.push(r.f64("learned alpha").map_err(bad)?);
            }
            let beta = r.f64("learned beta").map_err(bad)?;
            if alpha
                .iter()
                .chain([&beta])
                .any(|x| !(x.is_finite() && *x > 0.0))
                || every == 0
            {
                return Err(bad("learned priors are not positive and finite".into()));
            }
            Some(LearnedPriors {
                schedule: crate::priors::PriorSchedule { every, burn_in },
                alpha,
                beta,
            })
        } else {
            None
        };
        let fixed_counts = if flags & 2 != 0 {
            Some(r.u64("fixed counts checksum").map_err(bad)?)
        } else {
            None
        };
        let mut sampler_settings = BTreeMap::new();
        if flags & 4 != 0 {
            let n = r.u32("number of sampler settings").map_err(bad)?;
            if n == 0 || n > 64 {
                return Err(bad(format!("{n} sampler settings, expected 1 to 64")));
            }
            for _ in 0..n {
                let name = r.str("sampler setting name").map_err(bad)?.to_string();
                let value = r.u32("sampler setting value").map_err(bad)?;
                if sampler_settings
                    .keys()
                    .next_back()
                    .is_some_and(|p| *p >= name)
                {
                    return Err(bad(
                        "sampler settings not in increasing order of name".into()
                    ));
                }
                sampler_settings.insert(name, value);
            }
        }
        let n = r.u64("token count").map_err(bad)?;
        let assignments = r.u16s(n as usize, "assignments").map_err(bad)?;
        if r.remaining() != 0 {
            return Err(bad(format!("{} unexpected trailing bytes", r.remaining())));
        }
        if let Some(z) = assignments.iter().find(|&&z| u32::from(z) >= num_topics) {
            return Err(bad(format!(
                "assignment {z} is not a topic below K = {num_topics}"
            )));
        }
        Ok(Self {
            header: CheckpointHeader {
                algorithm,
                num_topics,
                alpha,
                beta,
                seed,
                partitions,
                corpus_checksum,
                iteration,
                priors,
                fixed_counts,
                sampler_settings,
            },
            assignments,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.tckp");
        let c = Checkpoint {
            header: CheckpointHeader {
                algorithm: "esca".into(),
                num_topics: 5,
                alpha: 0.1,
                beta: 0.01,
                seed: 42,
                partitions: 3,
                corpus_checksum: 77,
                iteration: 9,
                priors: None,
                fixed_counts: None,
                sampler_settings: BTreeMap::new(),
            },
            assignments: vec![0, 4, 2, 1],
        };
        c.write(&path).unwrap();
        assert_eq!(Checkpoint::read(&path).unwrap(), c);
        let whole = std::fs::read(&path).unwrap();
        let mut w = CheckpointWriter::create(&path, &c.header, 4).unwrap();
        w.push(&c.assignments[..1]).unwrap();
        w.push(&c.assignments[1..]).unwrap();
        w.stage().unwrap().persist().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), whole);
        let mut bad = c.clone();
        bad.assignments[0] = 5;
        bad.write(&path).unwrap();
        assert!(Checkpoint::read(&path)
            .unwrap_err()
            .to_string()
            .contains("not a topic"));
        std::fs::write(&path, b"nonsense").unwrap();
        assert!(Checkpoint::read(&path)
            .unwrap_err()
            .to_string()
            .contains("not a Topos checkpoint"));

        // Learned priors: version 2, read back whole, streamed the same; a run with other
        // settings for them is refused.
        let schedule = crate::priors::PriorSchedule {
            every: 10,
            burn_in: 20,
        };
        let mut learned = c.clone();
        learned.header.priors = Some(LearnedPriors {
            schedule,
            alpha: vec![0.5, 0.25, 0.125, 1.0, 2.0],
            beta: 0.02,
        });
        learned.write(&path).unwrap();
        let whole = std::fs::read(&path).unwrap();
        assert_eq!(whole[8..12], 2u32.to_le_bytes());
        assert_eq!(Checkpoint::read(&path).unwrap(), learned);
        let mut w = CheckpointWriter::create(&path, &learned.header, 4).unwrap();
        w.push(&learned.assignments).unwrap();
        w.stage().unwrap().persist().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), whole);
        let msg = c.header.check_resumes(&learned.header, false).unwrap_err();
        assert!(
            msg.contains("fixed priors") && msg.contains("--optimize-priors 10"),
            "{msg}"
        );
        assert!(learned.header.check_resumes(&learned.header, true).is_ok());

        // Fixed counts: their checksum is recorded (alone or beside learned priors), and a run
        // with other fixed counts or none is refused.
        let mut seeded = learned.clone();
        seeded.header.fixed_counts = Some(0xfeed);
        seeded.write(&path).unwrap();
        assert_eq!(Checkpoint::read(&path).unwrap(), seeded);
        let mut only = c.clone();
        only.header.fixed_counts = Some(7);
        only.write(&path).unwrap();
        assert_eq!(Checkpoint::read(&path).unwrap(), only);
        let msg = only.header.check_resumes(&c.header, false).unwrap_err();
        assert!(
            msg.contains("no fixed counts") && msg.contains("--seed-words"),
            "{msg}"
        );
        let msg = seeded
            .header
            .check_resumes(&learned.header, false)
            .unwrap_err();
        assert!(msg.contains("000000000000feed"), "{msg}");

        // Sampler settings that change the model: recorded (alone or beside the others), read
        // back, streamed the same; a resume with other values, or the defaults, is refused with
        // what to pass.
        let mut mh = c.clone();
        mh.header.algorithm = "mh".into();
        mh.header.sampler_settings = BTreeMap::from([("mh_steps".to_string(), 8)]);
        mh.write(&path).unwrap();
        let whole = std::fs::read(&path).unwrap();
        assert_eq!(whole[8..12], 2u32.to_le_bytes());
        assert_eq!(Checkpoint::read(&path).unwrap(), mh);
        let mut w = CheckpointWriter::create(&path, &mh.header, 4).unwrap();
        w.push(&mh.assignments).unwrap();
        w.stage().unwrap().persist().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), whole);
        let mut all = seeded.clone();
        all.header.sampler_settings = mh.header.sampler_settings.clone();
        all.write(&path).unwrap();
        assert_eq!(Checkpoint::read(&path).unwrap(), all);
        let mut default = mh.clone();
        default.header.sampler_settings.clear();
        // A setting whose default does not depend on the device (`counter_bits`, standing in
        // for any such): its record must match.
        let mut bits = mh.clone();
        bits.header.sampler_settings = BTreeMap::from([("counter_bits".to_string(), 8)]);
        let msg = bits
            .header
            .check_resumes(&default.header, false)
            .unwrap_err();
        assert_eq!(
            msg,
            "it was made with --counters approx8, and this run asks for the default sampler settings; the chain depends on them, so resume with the checkpoint's (add --counters approx8)"
        );
        let msg = default
            .header
            .check_resumes(&bits.header, false)
            .unwrap_err();
        assert!(msg.contains("leave the setting out"), "{msg}");
        assert!(bits.header.check_resumes(&bits.header, false).is_ok());
        // `--mh-steps`, whose default depends on the device, is compared by the value each run
        // samples with once the device is known: given or left to the default alike.
        assert!(mh.header.check_resumes(&default.header, false).is_ok());
        let mh_sampler = crate::sampler::sampler_named("mh").unwrap();
        let given = |v: u32| {
            let mut s = crate::sampler::SamplerSettings::default();
            s.set(crate::sampler::Setting::from_key("mh_steps").unwrap(), v)
                .unwrap();
            s
        };
        let none = crate::sampler::SamplerSettings::default();
        use crate::sampler::SettingDefaults::{Cpu, Gpu};
        for (header, settings, defaults, ok) in [
            (&default.header, &none, Cpu, true),
            (&default.header, &given(2), Cpu, true),
            (&default.header, &given(4), Gpu, true),
            (&default.header, &given(4), Cpu, false),
            (&mh.header, &given(8), Cpu, true),
            (&mh.header, &none, Cpu, false),
            (&mh.header, &none, Gpu, false),
        ] {
            let got = header.check_device_settings(mh_sampler, settings, defaults);
            assert_eq!(got.is_ok(), ok, "{settings:?} on {defaults:?}: {got:?}");
        }
        let msg = mh
            .header
            .check_device_settings(mh_sampler, &none, Cpu)
            .unwrap_err();
        assert_eq!(
            msg,
            "it was made with --mh-steps 8, and this run samples with --mh-steps 2; the chain depends on it, so resume with --mh-steps 8"
        );
    }
}
