//! The `TOPOS_GPU_*` environment knobs, read once per process (benchmarks and A/B runs; a user
//! never needs them). Every engine asks [`Tuning::get`] instead of reading the environment.

use std::sync::OnceLock;

/// The knobs.
#[derive(Clone, Debug, Default)]
pub struct Tuning {
    /// `TOPOS_GPU_DEFINES`: extra `-D NAME=VALUE` for the kernels, replacing the engine's own of
    /// the same name (spaces or commas between them).
    pub defines: Vec<(String, u32)>,
    /// `TOPOS_GPU_ROW_REGS` (1..=16): document-row registers of the LDA sampler.
    pub row_regs: Option<u32>,
    /// `TOPOS_GPU_MIN_BLOCKS` (1..=8): resident blocks the LDA sampler is compiled for.
    pub min_blocks: Option<u32>,
    /// `TOPOS_GPU_WORD_TOPICS` (`dense` or `hybrid`): the LDA word-topic format.
    pub word_topics: Option<String>,
    /// `TOPOS_GPU_COUNT_COPIES` (1 or 2): copies of the LDA word-topic counts on the device
    /// (the planner's choice otherwise: two while they fit beside a resident corpus).
    pub count_copies: Option<u32>,
    /// `TOPOS_GPU_LINEINFO`: line information in the PTX, for Nsight Compute's source view.
    pub line_info: bool,
    /// `TOPOS_NVRTC_CACHE`: the PTX cache directory, or `off`.
    pub nvrtc_cache: Option<String>,
    /// `TOPOS_KNN_TILE` (a power of two, 256..=8192): index rows per tile of the GPU k-NN.
    pub knn_tile: Option<u32>,
    /// `TOPOS_KNN_WARPS` (1..=16): queries per block of the GPU k-NN.
    pub knn_warps: Option<u32>,
    /// `TOPOS_GPU_HOST_PDOW`: build a resident corpus's PDOW arrays on the host, not the device
    /// (the A/B of the device sort; the results are the same entries).
    pub host_pdow: bool,
    /// `TOPOS_GPU_MFM_SMEM` (0..=196,608): bytes of dynamic shared memory each block of `mfm`'s
    /// sweep reserves and does not use, which caps the blocks resident on a multiprocessor (the
    /// occupancy A/B of BENCHMARKS.md; the model does not change). Beside the kernel's own
    /// static arrays (about 40 KB) it must fit the device's shared memory a block (227 KB on an
    /// H100, so at most about 186 KB there); more is refused when the engine opens.
    pub mfm_smem_pad: Option<u32>,
    /// `TOPOS_GPU_PAGEABLE=1`: streamed corpora in pageable host memory from the start, as
    /// where the driver refuses to page-lock it (`pinned::HostBuffer`; the fallback's tests).
    pub pageable: bool,
}

impl Tuning {
    /// The knobs of this process.
    pub fn get() -> &'static Tuning {
        static TUNING: OnceLock<Tuning> = OnceLock::new();
        TUNING.get_or_init(|| Tuning::from_env(|name| std::env::var(name).ok()))
    }

    /// The knobs `var` reports (testable without touching the environment).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Tuning {
        let ranged = |name: &str, range: std::ops::RangeInclusive<u32>| {
            var(name)
                .and_then(|v| v.parse().ok())
                .filter(|x| range.contains(x))
        };
        Tuning {
            defines: parse_defines(&var("TOPOS_GPU_DEFINES").unwrap_or_default()),
            row_regs: ranged("TOPOS_GPU_ROW_REGS", 1..=16),
            min_blocks: ranged("TOPOS_GPU_MIN_BLOCKS", 1..=8),
            word_topics: var("TOPOS_GPU_WORD_TOPICS"),
            count_copies: ranged("TOPOS_GPU_COUNT_COPIES", 1..=2),
            line_info: var("TOPOS_GPU_LINEINFO").is_some(),
            nvrtc_cache: var("TOPOS_NVRTC_CACHE"),
            knn_tile: ranged("TOPOS_KNN_TILE", 256..=8192).filter(|t| t.is_power_of_two()),
            knn_warps: ranged("TOPOS_KNN_WARPS", 1..=16),
            host_pdow: var("TOPOS_GPU_HOST_PDOW").is_some(),
            mfm_smem_pad: ranged("TOPOS_GPU_MFM_SMEM", 0..=196_608),
            pageable: var("TOPOS_GPU_PAGEABLE").as_deref() == Some("1"),
        }
    }
}

impl Tuning {
    /// NVRTC options for a kernel source: C++17, device code by default, the engine's
    /// `tunable` definitions as `-DNAME=VALUE` (a `TOPOS_GPU_DEFINES` definition of the same name
    /// replaces the engine's), its `fixed` ones (which the host's buffers depend on: a tuning
    /// definition of the same name is dropped), then the other tuning definitions, and line
    /// information if asked for.
    pub fn nvrtc_options(&self, tunable: &[(&str, u32)], fixed: &[(&str, String)]) -> Vec<String> {
        let mut options = vec!["--std=c++17".to_string(), "-default-device".to_string()];
        options.extend(
            tunable
                .iter()
                .filter(|(name, _)| !self.defines.iter().any(|(n, _)| n == name))
                .map(|(name, value)| format!("-D{name}={value}")),
        );
        options.extend(
            fixed
                .iter()
                .map(|(name, value)| format!("-D{name}={value}")),
        );
        options.extend(
            self.defines
                .iter()
                .filter(|(name, _)| !fixed.iter().any(|(n, _)| n == name))
                .map(|(name, value)| format!("-D{name}={value}")),
        );
        if self.line_info {
            options.push("-lineinfo".into());
        }
        options
    }
}

/// `NAME=VALUE` pairs separated by spaces or commas; names of capitals and underscores.
fn parse_defines(s: &str) -> Vec<(String, u32)> {
    s.split([' ', ','])
        .filter_map(|d| {
            let (name, value) = d.split_once('=')?;
            let valid =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_');
            Some((name.to_string(), value.parse().ok()?)).filter(|_| valid)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_parse_and_ignore_nonsense() {
        let env = |name: &str| match name {
            "TOPOS_GPU_DEFINES" => Some("ROW_MID=5,LEAF_BATCH=8 bad=1 X=y".to_string()),
            "TOPOS_GPU_ROW_REGS" => Some("99".to_string()),
            "TOPOS_GPU_MIN_BLOCKS" => Some("3".to_string()),
            "TOPOS_GPU_PAGEABLE" => Some("yes".to_string()),
            _ => None,
        };
        let t = Tuning::from_env(env);
        assert_eq!(
            t.defines,
            vec![("ROW_MID".to_string(), 5), ("LEAF_BATCH".to_string(), 8)]
        );
        assert_eq!((t.row_regs, t.min_blocks), (None, Some(3)));
        assert!(!t.line_info && t.word_topics.is_none());
        assert_eq!(t.mfm_smem_pad, None);
        // Only `1` asks for pageable memory.
        assert!(!t.pageable);
        assert!(Tuning::from_env(|n| (n == "TOPOS_GPU_PAGEABLE").then(|| "1".into())).pageable);
    }

    #[test]
    fn a_tuning_definition_replaces_the_engines_own() {
        let env = |name: &str| match name {
            "TOPOS_GPU_DEFINES" => Some("ROW_MID=5,EXTRA=1".to_string()),
            "TOPOS_GPU_LINEINFO" => Some(String::new()),
            _ => None,
        };
        let options = Tuning::from_env(env).nvrtc_options(
            &[("ROW_MID", 3), ("WARPS", 8)],
            &[("EXTRA", "2".to_string())],
        );
        // EXTRA is fixed: the tuning's EXTRA=1 is dropped.
        assert_eq!(
            options,
            [
                "--std=c++17",
                "-default-device",
                "-DWARPS=8",
                "-DEXTRA=2",
                "-DROW_MID=5",
                "-lineinfo"
            ]
        );
    }
}
