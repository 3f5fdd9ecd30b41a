//! Per-sampler run settings (`topos train --ezlda-g`, `--mh-steps`, `--counters`; the Python
//! keywords `ezlda_g=`, `mh_steps=`, `counters=`), declared by the samplers that take them.
//!
//! A setting is a [`Setting`], a `static` in its sampler's module (`samplers/mh/mod.rs`'s
//! `MH_STEPS_SETTING`, …) listed by [`crate::Sampler::settings`]: its flag, its Python keyword,
//! its values, its defaults and whether the model depends on it. Everything else is generic over
//! the declarations: `topos train` makes a flag of each ([`Setting::all`]), the Python package a
//! keyword, [`SamplerSettings`] holds the values a run asks for by key and refuses one its
//! sampler does not take, checkpoints and model files record those that change the model, and
//! `topos algos` lists them. So a new setting is a declaration and the code that reads it
//! ([`Setting::value_on`]), in its sampler's folder (CONTRIBUTING.md, "Add a sampler").

use std::collections::BTreeMap;

/// The values a setting takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingValues {
    /// Whole numbers from `lo` to `hi`.
    Range { lo: u32, hi: u32 },
    /// Named values, each recorded as its number (`--counters exact|approx8|approx4`: 32, 8, 4).
    Named(&'static [(&'static str, u32)]),
}

/// A per-sampler setting of a run: what its sampler declares (see the module's documentation).
/// Two settings are the same when their keys are.
#[derive(Debug)]
pub struct Setting {
    /// The name checkpoints and model files record it under.
    pub key: &'static str,
    /// The `topos train` flag (`--mh-steps`).
    pub flag: &'static str,
    /// The Python keyword (`mh_steps`).
    pub keyword: &'static str,
    /// The placeholder of its value in `--help` (`N`).
    pub value_name: &'static str,
    /// What it does, for `topos algos` and `--help`.
    pub describe: &'static str,
    pub values: SettingValues,
    /// Its value when not given: the paper's, or the GPU's where the devices differ.
    pub default: u32,
    /// Its value when not given on the CPU (the same as `default` unless it depends on the
    /// device: `--mh-steps` is 2 on the CPU, 4 on the GPU).
    pub cpu_default: u32,
    /// Whether the model depends on it (then checkpoints and models record it).
    pub changes_model: bool,
}

impl PartialEq for Setting {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Setting {}

impl Setting {
    /// Every setting a registered sampler takes, in registry order, each once.
    pub fn all() -> Vec<&'static Setting> {
        let mut out: Vec<&'static Setting> = Vec::new();
        for s in crate::samplers::SAMPLERS.iter() {
            for &x in s.settings() {
                if !out.contains(&x) {
                    out.push(x);
                }
            }
        }
        out
    }
    /// The setting recorded as `key`.
    pub fn from_key(key: &str) -> Option<&'static Setting> {
        Setting::all().into_iter().find(|s| s.key == key)
    }
    /// The setting whose Python keyword is `keyword`.
    pub fn from_keyword(keyword: &str) -> Option<&'static Setting> {
        Setting::all().into_iter().find(|s| s.keyword == keyword)
    }

    /// The name checkpoints and model files record it under.
    pub fn key(&self) -> &'static str {
        self.key
    }
    /// The `topos train` flag.
    pub fn flag(&self) -> &'static str {
        self.flag
    }
    /// What it does.
    pub fn describe(&self) -> &'static str {
        self.describe
    }
    /// Its value when not given, the paper's (the GPU's, where the CPU's differs:
    /// [`Setting::default_on`]).
    pub fn default_value(&self) -> u32 {
        self.default
    }
    /// Its smallest and largest values.
    pub fn range(&self) -> (u32, u32) {
        match self.values {
            SettingValues::Range { lo, hi } => (lo, hi),
            SettingValues::Named(names) => (
                names.iter().map(|n| n.1).min().unwrap_or(0),
                names.iter().map(|n| n.1).max().unwrap_or(0),
            ),
        }
    }
    /// Its value when not given, on a device that takes `defaults`.
    pub fn default_on(&self, defaults: SettingDefaults) -> u32 {
        match defaults {
            SettingDefaults::Cpu => self.cpu_default,
            SettingDefaults::Gpu => self.default,
        }
    }
    /// Whether its value when not given depends on the device: then a value given is recorded
    /// even when it equals [`Setting::default_value`], so that a record never depends on the
    /// device it is read on.
    pub fn default_depends_on_device(&self) -> bool {
        SettingDefaults::ALL
            .iter()
            .any(|&d| self.default_on(d) != self.default_value())
    }
    /// Whether the model depends on it.
    pub fn changes_model(&self) -> bool {
        self.changes_model
    }
    /// A value of it for people: its name for a named value, the number otherwise.
    pub fn show(&self, value: u32) -> String {
        match self.values {
            SettingValues::Named(names) => names
                .iter()
                .find(|n| n.1 == value)
                .map_or_else(|| value.to_string(), |n| n.0.to_string()),
            SettingValues::Range { .. } => value.to_string(),
        }
    }
    /// The values it takes, for people: `1..64`, or `exact|approx8|approx4`.
    pub fn choices(&self) -> String {
        match self.values {
            SettingValues::Named(names) => names.iter().map(|n| n.0).collect::<Vec<_>>().join("|"),
            SettingValues::Range { lo, hi } => format!("{lo}..{hi}"),
        }
    }
    /// The help of its flag: what it does, which samplers take it, its values and defaults.
    pub fn help(&self) -> String {
        let takers: Vec<&str> = crate::samplers::SAMPLERS
            .iter()
            .filter(|s| s.settings().contains(&self))
            .map(|s| s.name())
            .collect();
        let default = if self.default_depends_on_device() {
            format!(
                "{} on the GPU, {} on the CPU",
                self.show(self.default),
                self.show(self.cpu_default)
            )
        } else {
            self.show(self.default)
        };
        format!(
            "{} only: {} [{}; default {default}]",
            takers.join(", "),
            self.describe,
            self.choices()
        )
    }

    /// `value` if it is one this setting takes.
    pub fn check(&self, value: u32) -> Result<u32, SettingError> {
        match self.values {
            SettingValues::Range { lo, hi } if (lo..=hi).contains(&value) => Ok(value),
            SettingValues::Range { .. } => Err(self.out_of_range(value)),
            SettingValues::Named(names) if names.iter().any(|n| n.1 == value) => Ok(value),
            SettingValues::Named(_) => Err(self.not_named(format!("{value}"))),
        }
    }
    /// The value `text` names: a whole number in range, or one of the names.
    pub fn parse(&self, text: &str) -> Result<u32, SettingError> {
        let t = text.trim();
        match self.values {
            SettingValues::Range { .. } => match t.parse::<u32>() {
                Ok(v) => self.check(v),
                Err(_) => Err(self.out_of_range(format!("{text:?}"))),
            },
            SettingValues::Named(names) => names
                .iter()
                .find(|n| n.0 == t)
                .map(|n| n.1)
                .ok_or_else(|| self.not_named(format!("{text:?}"))),
        }
    }
    /// The refusal of a value this setting does not take, shown as `shown` (a Python value's
    /// repr, say): the message [`Setting::parse`] gives.
    pub fn refuse(&self, shown: &str) -> SettingError {
        match self.values {
            SettingValues::Range { .. } => self.out_of_range(shown),
            SettingValues::Named(_) => self.not_named(shown.to_string()),
        }
    }
    fn out_of_range(&self, value: impl std::fmt::Display) -> SettingError {
        let (lo, hi) = self.range();
        SettingError(format!(
            "{} must be a whole number from {lo} to {hi}, got {value}",
            self.flag
        ))
    }
    fn not_named(&self, value: String) -> SettingError {
        let names: Vec<&str> = match self.values {
            SettingValues::Named(n) => n.iter().map(|n| n.0).collect(),
            SettingValues::Range { .. } => Vec::new(),
        };
        let list = match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        };
        SettingError(format!("{} must be {list}, got {value}", self.flag))
    }

    /// The value `settings` asks for, if it sets this one.
    pub fn given(&self, settings: &SamplerSettings) -> Option<u32> {
        settings.values.get(self.key).copied()
    }
    /// The value `settings` runs with (the default when not given).
    pub fn value(&self, settings: &SamplerSettings) -> u32 {
        self.given(settings).unwrap_or(self.default)
    }
    /// Its value in a run on a device that takes `defaults` for settings left out.
    pub fn value_on(&self, settings: &SamplerSettings, defaults: SettingDefaults) -> u32 {
        self.given(settings)
            .unwrap_or_else(|| self.default_on(defaults))
    }
}

/// Whose defaults the sampler settings a run leaves out take, where they differ between devices
/// ([`Setting::cpu_default`]; `--mh-steps` is 2 on the CPU, whose sweep refreshes the documents'
/// counts between its two proposal phases, and 4 on the GPU). Each engine says which its device
/// takes ([`crate::Engine::setting_defaults`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SettingDefaults {
    Cpu,
    Gpu,
}

impl SettingDefaults {
    /// Every kind of defaults.
    pub const ALL: [SettingDefaults; 2] = [SettingDefaults::Cpu, SettingDefaults::Gpu];
}

/// Why a sampler setting was refused (one line that names the flag).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingError(pub String);

/// The per-sampler settings of a run: the values asked for, by key; a setting left out runs at
/// its default. Each value is checked when set; whether the run's sampler takes it is
/// [`SamplerSettings::check_for`]'s question.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SamplerSettings {
    values: BTreeMap<&'static str, u32>,
}

impl SamplerSettings {
    /// Sets `setting` to `value`, checked.
    pub fn set(&mut self, setting: &'static Setting, value: u32) -> Result<(), SettingError> {
        self.values.insert(setting.key, setting.check(value)?);
        Ok(())
    }
    /// These settings with `setting` set to `value`, checked (tests, tools).
    pub fn with(mut self, setting: &'static Setting, value: u32) -> Result<Self, SettingError> {
        self.set(setting, value)?;
        Ok(self)
    }
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Refuses a setting given for a sampler that does not take it, naming those that do.
    pub fn check_for(&self, sampler: &dyn crate::Sampler) -> Result<(), SettingError> {
        for setting in Setting::all() {
            if setting.given(self).is_some() && !sampler.settings().contains(&setting) {
                let takers: Vec<&str> = crate::samplers::SAMPLERS
                    .iter()
                    .filter(|s| s.settings().contains(&setting))
                    .map(|s| s.name())
                    .collect();
                return Err(SettingError(format!(
                    "{} applies to --algo {} only, and this run uses {}; leave {} out or choose --algo {}",
                    setting.flag,
                    takers.join(" or "),
                    sampler.name(),
                    setting.flag,
                    takers.join(" or --algo ")
                )));
            }
        }
        Ok(())
    }

    /// What a checkpoint and the model record of a run of `sampler`: the settings it takes that
    /// change its model, where they differ from their defaults (or are given at all, for a
    /// setting whose default depends on the device), by key. Empty for a run at the defaults,
    /// so its files are byte for byte those of a build without settings.
    pub fn recorded(&self, sampler: &dyn crate::Sampler) -> BTreeMap<String, u32> {
        sampler
            .settings()
            .iter()
            .filter(|s| {
                s.changes_model
                    && s.given(self)
                        .is_some_and(|v| v != s.default || s.default_depends_on_device())
            })
            .map(|s| (s.key.to_string(), s.value(self)))
            .collect()
    }

    /// People's words for a record of [`SamplerSettings::recorded`]: "--mh-steps 8", or the
    /// given text when it is empty.
    pub fn describe_recorded(recorded: &BTreeMap<String, u32>, empty: &str) -> String {
        if recorded.is_empty() {
            return empty.to_string();
        }
        recorded
            .iter()
            .map(|(k, v)| match Setting::from_key(k) {
                Some(s) => format!("{} {}", s.flag, s.show(*v)),
                None => format!("{k} = {v}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The settings a record of [`SamplerSettings::recorded`] describes (a checkpoint's): a
    /// name this build does not know, or a value out of range, is refused.
    pub fn from_recorded(
        recorded: &BTreeMap<String, u32>,
    ) -> Result<SamplerSettings, SettingError> {
        let mut s = SamplerSettings::default();
        for (k, v) in recorded {
            let setting = Setting::from_key(k).ok_or_else(|| {
                SettingError(format!(
                    "unknown sampler setting {k:?} (written by a newer topos?)"
                ))
            })?;
            s.set(setting, *v)?;
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::{sampler_named, EzldaDepth, MhSteps, SamplerInfo};
    use crate::samplers::ezlda::EZLDA_G;
    use crate::samplers::mfm::{counter_width, counters::CounterWidth, COUNTERS};
    use crate::samplers::mh::MH_STEPS_SETTING;

    #[test]
    fn bad_values_are_refused_in_one_line_naming_the_flag() {
        assert_eq!(EzldaDepth::new(1).unwrap().get(), 1);
        assert_eq!(EzldaDepth::new(16).unwrap().get(), 16);
        assert_eq!("3".parse::<EzldaDepth>().unwrap().get(), 3);
        for bad in ["0", "17", "-1", "two", ""] {
            let e = bad.parse::<EzldaDepth>().unwrap_err().to_string();
            assert!(
                e.starts_with("--ezlda-g must be a whole number from 1 to 16, got"),
                "{e}"
            );
            assert!(!e.contains('\n'));
        }
        assert_eq!(MhSteps::new(64).unwrap().get(), 64);
        let e = "0".parse::<MhSteps>().unwrap_err().to_string();
        assert_eq!(e, "--mh-steps must be a whole number from 1 to 64, got 0");
        assert!(MhSteps::new(65).is_err());
        // The defaults are what the samplers ran with before they could be set.
        let none = SamplerSettings::default();
        assert_eq!(EzldaDepth::of(&none).get(), 2);
        assert_eq!(MhSteps::of(&none, SettingDefaults::Gpu).get(), 4);
        assert_eq!(MhSteps::of(&none, SettingDefaults::Cpu).get(), 2);
        assert_eq!(counter_width(&none), CounterWidth::Exact);
        // Named values: by name from text, by number (their bits) when set.
        assert_eq!(COUNTERS.parse(" approx8 ").unwrap(), 8);
        assert_eq!(
            COUNTERS.parse("approx2").unwrap_err().to_string(),
            "--counters must be exact, approx8 or approx4, got \"approx2\""
        );
        assert_eq!(
            COUNTERS.check(5).unwrap_err().to_string(),
            "--counters must be exact, approx8 or approx4, got 5"
        );
        assert_eq!(COUNTERS.show(4), "approx4");
        assert_eq!(COUNTERS.choices(), "exact|approx8|approx4");
        assert_eq!(MH_STEPS_SETTING.choices(), "1..64");
        assert_eq!(crate::samplers::mh::MH_STEPS, 4);
    }

    #[test]
    fn a_setting_is_refused_for_a_sampler_that_does_not_take_it() {
        let named = |n: &str| sampler_named(n).unwrap();
        let mh = SamplerSettings::default()
            .with(&MH_STEPS_SETTING, 8)
            .unwrap();
        let g = SamplerSettings::default().with(&EZLDA_G, 3).unwrap();
        assert!(mh.check_for(named("mh")).is_ok());
        assert!(g.check_for(named("ezlda")).is_ok());
        assert!(SamplerSettings::default().check_for(named("cgs")).is_ok());
        let e = mh.check_for(named("cgs")).unwrap_err().to_string();
        assert_eq!(
            e,
            "--mh-steps applies to --algo mh only, and this run uses cgs; leave --mh-steps out or choose --algo mh"
        );
        let e = g.check_for(named("mh")).unwrap_err().to_string();
        assert!(
            e.starts_with("--ezlda-g applies to --algo ezlda only"),
            "{e}"
        );
        // Every setting is taken by some sampler, so the message always names one.
        let all = Setting::all();
        assert_eq!(all.len(), 4);
        for s in all {
            assert!(crate::samplers::SAMPLERS
                .iter()
                .any(|x| x.settings().contains(&s)));
            // Keys, flags and keywords are each unique.
            assert_eq!(Setting::from_key(s.key), Some(s));
            assert_eq!(Setting::from_keyword(s.keyword), Some(s));
            assert!(s.flag.starts_with("--"));
        }
    }

    #[test]
    fn only_settings_that_change_the_model_and_are_given_are_recorded() {
        let named = |n: &str| sampler_named(n).unwrap();
        let both = SamplerSettings::default()
            .with(&EZLDA_G, 3)
            .and_then(|s| s.with(&MH_STEPS_SETTING, 8))
            .and_then(|s| s.with(&COUNTERS, 4))
            .unwrap();
        assert_eq!(
            both.recorded(named("mfm")).into_iter().collect::<Vec<_>>(),
            [("counter_bits".into(), 4)]
        );
        // g is a speed knob: never recorded.
        assert!(both.recorded(named("ezlda")).is_empty());
        let r = both.recorded(named("mh"));
        assert_eq!(r.into_iter().collect::<Vec<_>>(), [("mh_steps".into(), 8)]);
        // mh's default depends on the device (4 on the GPU, 2 on the CPU): a value given is
        // recorded even when it is one of them; none given, nothing is.
        let four = SamplerSettings::default()
            .with(&MH_STEPS_SETTING, 4)
            .unwrap();
        let r = four.recorded(named("mh"));
        assert_eq!(r.into_iter().collect::<Vec<_>>(), [("mh_steps".into(), 4)]);
        assert!(SamplerSettings::default().recorded(named("mh")).is_empty());
        // A record reads back, and says what it is.
        let r = both.recorded(named("mh"));
        assert_eq!(
            MhSteps::of(
                &SamplerSettings::from_recorded(&r).unwrap(),
                SettingDefaults::Cpu
            ),
            MhSteps::of(&both, SettingDefaults::Cpu)
        );
        assert_eq!(SamplerSettings::describe_recorded(&r, "-"), "--mh-steps 8");
        assert_eq!(
            SamplerSettings::describe_recorded(&BTreeMap::new(), "-"),
            "-"
        );
        let unknown = BTreeMap::from([("warp".to_string(), 1)]);
        assert!(SamplerSettings::from_recorded(&unknown).is_err());
    }

    #[test]
    fn sampler_info_lists_the_settings() {
        let info = SamplerInfo::of(sampler_named("mh").unwrap());
        assert_eq!(info.settings.len(), 1);
        assert_eq!(info.settings[0].flag, "--mh-steps");
        assert_eq!(info.settings[0].default, 4);
        assert!(info.settings[0].changes_model);
        let info = SamplerInfo::of(sampler_named("ezlda").unwrap());
        assert_eq!(info.settings[0].flag, "--ezlda-g");
        assert!(!info.settings[0].changes_model);
        assert!(SamplerInfo::of(sampler_named("cgs").unwrap())
            .settings
            .is_empty());
    }
}
