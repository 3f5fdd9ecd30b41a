//! What memory the system gives this process: the host's available memory and the room its
//! memory cgroups (a container's limit) still allow. At the bottom of the crate stack because
//! every stage that can allocate in proportion to its input (`prepare`, training, inference)
//! checks it before allocating ("Memory is the budget", ARCHITECTURE.md, Principles).

use std::path::{Path, PathBuf};

/// Bytes this process can allocate without swapping or being killed: the smaller of the host's
/// `MemAvailable` (`/proc/meminfo`) and what the process's memory cgroup still allows (a
/// container's limit: cgroup v2 `memory.max`, v1 `memory.limit_in_bytes`, minus the memory in
/// use), or `None` where neither is known (non-Linux systems). Reading only the host's figure
/// would let a run in an 8 GiB container on a 512 GiB host start and be OOM-killed instead of
/// refused.
pub fn available_memory() -> Option<u64> {
    let host = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| parse_mem_available(&info));
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|c| cgroup_available(&c, Path::new("/sys/fs/cgroup")));
    min_known(host, cgroup)
}

fn min_known(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn parse_mem_available(info: &str) -> Option<u64> {
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut fields = line.split_whitespace().skip(1);
    let value: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

/// v1 reports "no limit" as a huge number (`LONG_MAX` rounded down to a page); anything this
/// large is no limit.
const NO_LIMIT: u64 = 1 << 60;

/// What the memory cgroups of this process still allow, given the text of `/proc/self/cgroup`
/// and the cgroup mount point (`/sys/fs/cgroup`; a parameter so tests can use fixture trees).
///
/// Every limited level from the process's own cgroup up to the root counts (a parent's limit
/// binds its children), and for each the room left is its limit minus its usage, where usage
/// leaves out inactive file cache (`inactive_file` of `memory.stat`), which the kernel reclaims
/// before it kills anything. `None` when no level has a limit or nothing could be read.
fn cgroup_available(proc_self_cgroup: &str, root: &Path) -> Option<u64> {
    let mut best: Option<u64> = None;
    for line in proc_self_cgroup.lines() {
        // hierarchy-ID:controller-list:cgroup-path
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let rel = path.trim().trim_start_matches('/');
        let room = if id == "0" && controllers.is_empty() {
            // cgroup v2 (the unified hierarchy): mounted at the root, or beside the v1
            // hierarchies at `unified` on a hybrid system.
            let unified = root.join("unified");
            let v2 = if !root.join("cgroup.controllers").exists() && unified.is_dir() {
                unified
            } else {
                root.to_path_buf()
            };
            levels(&v2, rel)
                .filter_map(|dir| room_in(&dir, "memory.max", "memory.current", "inactive_file"))
                .min()
        } else if controllers.split(',').any(|c| c == "memory") {
            // cgroup v1: the memory controller's own hierarchy.
            levels(&root.join("memory"), rel)
                .filter_map(|dir| {
                    room_in(
                        &dir,
                        "memory.limit_in_bytes",
                        "memory.usage_in_bytes",
                        "total_inactive_file",
                    )
                })
                .min()
        } else {
            None
        };
        best = min_known(best, room);
    }
    best
}

/// The directories of cgroup `rel` under `mount` and of its ancestors, up to the mount itself.
/// In a container the cgroup path often names the host's hierarchy (`/docker/ID`) while only
/// the container's own cgroup is mounted: then the mount point is the process's cgroup, and the
/// walk finds it there.
fn levels(mount: &Path, rel: &str) -> impl Iterator<Item = PathBuf> {
    let mut dirs = Vec::new();
    let mut p = PathBuf::from(rel);
    loop {
        let dir = mount.join(&p);
        if dir.is_dir() {
            dirs.push(dir);
        }
        if !p.pop() {
            break;
        }
    }
    if dirs.last().is_none_or(|d| d != mount) {
        dirs.push(mount.to_path_buf());
    }
    dirs.into_iter()
}

/// Limit minus usage (without inactive file cache) in cgroup directory `dir`, or `None` when it
/// has no limit or the files cannot be read.
fn room_in(dir: &Path, limit_file: &str, usage_file: &str, inactive_key: &str) -> Option<u64> {
    let limit = std::fs::read_to_string(dir.join(limit_file)).ok()?;
    let limit = limit.trim();
    if limit == "max" {
        return None;
    }
    let limit: u64 = limit.parse().ok()?;
    if limit >= NO_LIMIT {
        return None;
    }
    let usage: u64 = std::fs::read_to_string(dir.join(usage_file))
        .ok()
        .and_then(|u| u.trim().parse().ok())
        .unwrap_or(0);
    let inactive = std::fs::read_to_string(dir.join("memory.stat"))
        .ok()
        .and_then(|stat| {
            stat.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == inactive_key).then(|| v.trim().parse::<u64>().ok())?
            })
        })
        .unwrap_or(0);
    Some(limit.saturating_sub(usage.saturating_sub(inactive)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_meminfo() {
        let info = "MemTotal:  100 kB\nMemFree:   10 kB\nMemAvailable:   50 kB\n";
        assert_eq!(parse_mem_available(info), Some(50 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
    }

    fn write(dir: &Path, files: &[(&str, &str)]) {
        std::fs::create_dir_all(dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    #[test]
    fn cgroup_v2_limit_minus_working_set() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        // The host's root cgroup has no limit; the container's has 8 GiB, 3 GiB in use of which
        // 1 GiB is inactive file cache.
        write(r, &[("memory.max", "max\n")]);
        let c = r.join("system.slice/box.scope");
        write(
            &c,
            &[
                ("memory.max", "8589934592\n"),
                ("memory.current", "3221225472\n"),
                (
                    "memory.stat",
                    "anon 100\nfile 5\ninactive_file 1073741824\nactive_file 3\n",
                ),
            ],
        );
        let proc = "0::/system.slice/box.scope\n";
        assert_eq!(cgroup_available(proc, r), Some(6 << 30));
        // A parent with less room binds the child.
        write(
            &r.join("system.slice"),
            &[
                ("memory.max", "4294967296\n"),
                ("memory.current", "3221225472\n"),
            ],
        );
        assert_eq!(cgroup_available(proc, r), Some(1 << 30));
        // No limit anywhere: unknown.
        write(&c, &[("memory.max", "max\n")]);
        std::fs::remove_file(r.join("system.slice/memory.max")).unwrap();
        assert_eq!(cgroup_available(proc, r), None);
        // A namespaced container: /proc/self/cgroup says "/", the mount is its own cgroup.
        let ns = tempfile::tempdir().unwrap();
        write(
            ns.path(),
            &[("memory.max", "1000\n"), ("memory.current", "1500\n")],
        );
        assert_eq!(cgroup_available("0::/\n", ns.path()), Some(0));
        // The host's path is not mounted inside the container: the mount point is used.
        assert_eq!(cgroup_available("0::/docker/abc\n", ns.path()), Some(0));
    }

    #[test]
    fn cgroup_v1_memory_controller() {
        let root = tempfile::tempdir().unwrap();
        let m = root.path().join("memory");
        write(&m, &[("memory.limit_in_bytes", "9223372036854771712\n")]);
        let c = m.join("docker/abc");
        write(
            &c,
            &[
                ("memory.limit_in_bytes", "2147483648\n"),
                ("memory.usage_in_bytes", "1073741824\n"),
                ("memory.stat", "cache 10\ntotal_inactive_file 536870912\n"),
            ],
        );
        let proc =
            "12:pids:/docker/abc\n11:cpuset:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/x\n";
        assert_eq!(cgroup_available(proc, root.path()), Some(1536 << 20));
        // Unlimited (LONG_MAX rounded to a page) is no limit.
        write(&c, &[("memory.limit_in_bytes", "9223372036854771712\n")]);
        assert_eq!(cgroup_available(proc, root.path()), None);
        // Hybrid systems list both; the smaller room wins.
        write(&c, &[("memory.limit_in_bytes", "2147483648\n")]);
        write(
            root.path(),
            &[("memory.max", "1073741824\n"), ("memory.current", "0\n")],
        );
        let hybrid = format!("{proc}0::/\n");
        assert_eq!(cgroup_available(&hybrid, root.path()), Some(1 << 30));
        // Nothing readable: unknown; garbage lines are skipped.
        assert_eq!(
            cgroup_available("garbage\n", Path::new("/nonexistent")),
            None
        );
        assert_eq!(min_known(Some(5), None), Some(5));
        assert_eq!(min_known(Some(5), Some(3)), Some(3));
        assert_eq!(min_known(None, None), None);
    }
}
