//! One NVRTC compile-and-cache helper for every engine's kernels.
//!
//! Compiling the LDA sampler takes NVRTC about a second at large K (several compile-time
//! shapes), every run. The PTX is a pure function of the source, the options, the target
//! architecture and the NVRTC version, so it is cached on disk under the XXH3 of all four:
//! `$TOPOS_NVRTC_CACHE`, else `$XDG_CACHE_HOME/topos/nvrtc`, else `~/.cache/topos/nvrtc`
//! (`TOPOS_NVRTC_CACHE=off` disables it). Entries are written atomically, so concurrent runs
//! and crashes never leave a half-written entry; an unreadable cache is ignored (the kernels are
//! compiled as if it were not there).

use crate::error::GpuError;
use crate::tuning::Tuning;
use cudarc::nvrtc::{CompileOptions, Ptx};
use std::path::PathBuf;

/// Where compiled PTX comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtxOrigin {
    Compiled,
    Cache,
}

/// The NVRTC version, (major, minor).
pub fn nvrtc_version() -> Option<(i32, i32)> {
    if !crate::device::nvrtc_present() {
        return None;
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC loads (checked above); the call writes two ints.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
}

/// The virtual architectures this NVRTC compiles for (`compute_75` as 75), or `None` when NVRTC
/// is missing or cannot say.
pub fn supported_archs() -> Option<Vec<i32>> {
    // The query exists from NVRTC 11.2 on (an older library lacks the symbol).
    if nvrtc_version()? < (11, 2) {
        return None;
    }
    use cudarc::nvrtc::sys::{nvrtcGetNumSupportedArchs, nvrtcGetSupportedArchs, nvrtcResult};
    let mut n = 0;
    // SAFETY: NVRTC loads (checked above); the first call writes one int, the second n ints.
    unsafe {
        if nvrtcGetNumSupportedArchs(&mut n) != nvrtcResult::NVRTC_SUCCESS || n <= 0 {
            return None;
        }
        let mut archs = vec![0; n as usize];
        (nvrtcGetSupportedArchs(archs.as_mut_ptr()) == nvrtcResult::NVRTC_SUCCESS).then_some(archs)
    }
}

/// The architecture to compile for when the GPU needs `arch` (`compute_XY`) and this NVRTC
/// (`version`) compiles for `supported`: `arch` itself; else the newest supported one below it
/// (a GPU runs PTX of an older virtual architecture, compiled by the driver when loaded: a GPU
/// newer than the NVRTC); else a one-line refusal with what to do (CUDA 13's NVRTC dropped
/// compute 7.0 and 7.2, which a V100 needs: without this the user would see NVRTC's own
/// "invalid value for --gpu-architecture").
pub fn target_arch(arch: &str, supported: &[i32], version: (i32, i32)) -> Result<String, GpuError> {
    let Some(wanted) = arch
        .strip_prefix("compute_")
        .and_then(|x| x.parse::<i32>().ok())
    else {
        return Ok(arch.to_string());
    };
    if supported.is_empty() || supported.contains(&wanted) {
        return Ok(arch.to_string());
    }
    if let Some(older) = supported.iter().copied().filter(|&s| s < wanted).max() {
        return Ok(format!("compute_{older}"));
    }
    let (lo, hi) = (
        supported.iter().min().unwrap(),
        supported.iter().max().unwrap(),
    );
    Err(GpuError::Unsupported(format!(
        "this GPU needs {arch}, which the installed NVRTC {}.{} does not compile for (it covers compute_{lo} to compute_{hi}); install an NVRTC that does (CUDA 12's libnvrtc for compute 7.0), or use --device cpu",
        version.0, version.1
    )))
}

/// The cache directory, or `None` when caching is off or no home is known.
pub fn cache_dir() -> Option<PathBuf> {
    match Tuning::get().nvrtc_cache.as_deref() {
        Some("off") => None,
        Some(dir) => Some(PathBuf::from(dir)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|c| c.join("topos").join("nvrtc")),
    }
}

/// The cache key of a compilation.
fn key(source: &str, options: &[String], arch: &str, version: (i32, i32)) -> u64 {
    let mut text = String::with_capacity(source.len() + 256);
    text.push_str(source);
    for o in options {
        text.push('\0');
        text.push_str(o);
    }
    text.push('\0');
    text.push_str(arch);
    text.push_str(&format!("\0nvrtc {}.{}", version.0, version.1));
    topos_io::checksum(text.as_bytes())
}

/// Compiles `source` for `arch` (e.g. `compute_90`) with `options`, or takes the PTX from the
/// cache when the same compilation was done before.
pub fn compile_cached(
    source: &str,
    options: Vec<String>,
    arch: &'static str,
) -> Result<(Ptx, PtxOrigin), GpuError> {
    let version = nvrtc_version().ok_or(GpuError::NoNvrtc)?;
    let arch = match supported_archs() {
        Some(supported) => target_arch(arch, &supported, version)?,
        None => arch.to_string(),
    };
    let path = cache_dir().map(|d| {
        d.join(format!(
            "{:016x}.ptx",
            key(source, &options, &arch, version)
        ))
    });
    if let Some(ptx) = path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) {
        if ptx.contains(".entry") {
            return Ok((Ptx::from_src(ptx), PtxOrigin::Cache));
        }
    }
    let mut options = options;
    options.push(format!("--gpu-architecture={arch}"));
    let opts = CompileOptions {
        options,
        ..Default::default()
    };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(source, opts)
        .map_err(|e| GpuError::Compile(format!("{e:?}")))?;
    if let Some(p) = path {
        // Best effort: a read-only home only costs the next run a compilation.
        let _ = store(&p, &ptx.to_src());
    }
    Ok((ptx, PtxOrigin::Compiled))
}

fn store(path: &std::path::Path, ptx: &str) -> Result<(), topos_io::FormatError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| topos_io::FormatError::io(dir, e))?;
    }
    let mut f = topos_io::AtomicFile::create(path)?;
    f.write_all(ptx.as_bytes())?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_architecture_is_the_gpus_or_the_newest_older_one_nvrtc_knows() {
        let cuda13 = [75, 80, 86, 87, 89, 90, 100, 120];
        assert_eq!(
            target_arch("compute_90", &cuda13, (13, 0)).unwrap(),
            "compute_90"
        );
        // A GPU newer than this NVRTC: PTX of the newest older architecture.
        assert_eq!(
            target_arch("compute_121", &cuda13, (13, 0)).unwrap(),
            "compute_120"
        );
        // One NVRTC dropped: refused with what to do.
        let e = target_arch("compute_70", &cuda13, (13, 0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("compute_70") && e.contains("NVRTC 13.0"), "{e}");
        assert!(
            e.contains("compute_75 to compute_120") && e.contains("--device cpu"),
            "{e}"
        );
        // Nothing known: as asked (NVRTC itself then decides).
        assert_eq!(
            target_arch("compute_70", &[], (13, 0)).unwrap(),
            "compute_70"
        );
        assert_eq!(target_arch("sm_70", &cuda13, (13, 0)).unwrap(), "sm_70");
    }

    #[test]
    fn the_key_covers_source_options_arch_and_version() {
        let o = vec!["-DX=1".to_string()];
        let k = key("src", &o, "compute_90", (13, 0));
        assert_ne!(k, key("src2", &o, "compute_90", (13, 0)));
        assert_ne!(k, key("src", &["-DX=2".to_string()], "compute_90", (13, 0)));
        assert_ne!(k, key("src", &o, "compute_80", (13, 0)));
        assert_ne!(k, key("src", &o, "compute_90", (12, 8)));
        assert_eq!(k, key("src", &o, "compute_90", (13, 0)));
    }

    #[test]
    fn compiles_and_caches_where_nvrtc_is_installed() {
        // Needs NVRTC only (no GPU); skipped where it is not installed, as in CI.
        if !crate::device::nvrtc_present() {
            return;
        }
        let src = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }";
        let (a, _) = compile_cached(src, vec![], "compute_90").unwrap();
        let (b, again) = compile_cached(src, vec![], "compute_90").unwrap();
        assert_eq!(a.to_src(), b.to_src());
        if cache_dir().is_some() {
            assert_eq!(again, PtxOrigin::Cache);
        }
    }
}
