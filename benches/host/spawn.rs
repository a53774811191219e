//! The ways to start a plugin process, compared on one full exchange with the
//! tiny plugin (pipes, the request on stdin, the answer read, wait), in a fresh
//! process per host size, because fork's cost grows with the memory the
//! forking process has touched:
//!
//! - `posix_spawn`: raw tokio `Command`; the standard library stays on
//!   `posix_spawn` (a vfork-like clone).
//! - `fork_exec`: the same with a no-op `pre_exec` hook, which forces fork
//!   and exec: the child path of a sandbox applied in a `pre_exec` hook.
//! - `landlock_helper`: raw, through a small static helper that builds a
//!   Landlock ruleset, confines itself and execs the plugin: confinement that
//!   stays on `posix_spawn`, at the price of one more exec.
//! - `host_sandbox_off`, `host_sandbox_on`: `PluginHost::call`.
//!
//! The paths take turns within each iteration, so drift hits all alike; the
//! page faults a fork leaves behind in the forking process are taken by
//! untimed exchanges right after it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use plughost::protocol::Invocation;
use plughost::{PluginHost, SandboxMode};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::stats::{mb, pct, ratio, status_kb};
use crate::{Bench, cell, children, fixtures, raw};

/// The helper: it builds a ruleset like the host's sandbox (the system
/// folders, a few devices, the plugin, data and temp folders), restricts
/// itself, then execs. In C so that it is small and static.
const HELPER_C: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
struct ruleset_attr { uint64_t fs, net, scoped; };
struct __attribute__((packed)) path_beneath { uint64_t access; int32_t fd; };
static const char *ro[] = {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt",
    "/sys", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/sys", 0};
static const char *rw[] = {"/dev/null", "/dev/zero", "/dev/urandom", 0};
static void allow(int rs, const char *path, uint64_t access) {
    struct stat st;
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= 1 | 2 | 4 | 16384 | 32768;
    struct path_beneath pb = {access, fd};
    syscall(SYS_landlock_add_rule, rs, 1, &pb, 0);
    close(fd);
}
int main(int argc, char **argv) {
    /* helper PLUGIN DATA TMP PROGRAM ARGS... */
    struct ruleset_attr a = {0xffff, 3, 3};
    int rs = syscall(SYS_landlock_create_ruleset, &a, sizeof a, 0);
    if (rs < 0 || argc < 5) return 120;
    for (int i = 0; ro[i]; i++) allow(rs, ro[i], 13);
    for (int i = 0; rw[i]; i++) allow(rs, rw[i], 0xffff);
    allow(rs, argv[1], 13);
    allow(rs, argv[2], 0xffff);
    allow(rs, argv[3], 0xffff);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return 121;
    if (syscall(SYS_landlock_restrict_self, rs, 0)) return 122;
    close(rs);
    execv(argv[4], argv + 4);
    return 127;
}
"#;

const PATHS: [&str; 5] = [
    "posix_spawn",
    "fork_exec",
    "landlock_helper",
    "host_sandbox_off",
    "host_sandbox_on",
];

pub(crate) fn rows(bench: &Bench, report: &mut Value) {
    let helper = helper(bench);
    let helper_arg = match &helper {
        Ok(path) => path.display().to_string(),
        Err(_) => "-".to_owned(),
    };
    let mut rows = Vec::new();
    for (host_mb, iters) in [(16, bench.iters(500, 100)), (1024, bench.iters(100, 20))] {
        let out = children::run(
            "spawn-paths",
            &[
                bench.plugins.display().to_string(),
                bench.state.display().to_string(),
                helper_arg.clone(),
                host_mb.to_string(),
                iters.to_string(),
            ],
        );
        rows.extend(out.as_array().unwrap().iter().cloned());
        if let Err(why) = &helper {
            rows.push(json!({"host_mb": host_mb, "path": "landlock_helper", "skipped": why}));
        }
    }
    report["spawn_paths"] = json!(rows);
}

/// The helper, compiled and checked to run the tiny plugin on this kernel.
fn helper(bench: &Bench) -> Result<PathBuf, String> {
    let helper = fixtures::compile_static(&bench.dir.join("bin"), "landlock-helper", HELPER_C)?;
    let dir = bench.plugins.join("tiny");
    let (data, tmp) = helper_dirs(&dir, &bench.state);
    let out = std::process::Command::new(&helper)
        .arg(&dir)
        .arg(&data)
        .arg(&tmp)
        .arg(dir.join("main"))
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run the helper: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the helper failed here ({}; 120-122: Landlock refused)",
            out.status
        ));
    }
    Ok(helper)
}

/// The data and temp folders the helper allows (made when missing).
fn helper_dirs(plugin_dir: &Path, state: &Path) -> (PathBuf, PathBuf) {
    let data = raw::data_dir(plugin_dir, state);
    let tmp = state.join("helper-tmp");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    (data, tmp)
}

/// `--child spawn-paths PLUGINS STATE HELPER|- HOST_MB ITERS`: with `HOST_MB`
/// of memory touched, every path in turn, `ITERS` times.
pub(crate) fn child(args: &[String]) -> Value {
    let (plugins, state) = (Path::new(&args[0]), Path::new(&args[1]));
    let helper = (args[2] != "-").then(|| PathBuf::from(&args[2]));
    let host_mb: usize = args[3].parse().unwrap();
    let iters: usize = args[4].parse().unwrap();
    // Filled with ones, so every page is touched, and kept alive to the end.
    let ballast = vec![1u8; host_mb << 20];
    let host_rss_mb = mb(status_kb("VmRSS") as f64);
    let rows = children::runtime().block_on(async {
        let ctx = Paths::new(plugins, state, helper);
        let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); PATHS.len()];
        for i in 0..iters + 10 {
            for (p, path) in PATHS.iter().enumerate() {
                if *path == "landlock_helper" && ctx.helper.is_none() {
                    continue;
                }
                let t = Instant::now();
                ctx.exchange(path).await;
                // The first ten are warm-up.
                if i >= 10 {
                    samples[p].push(t.elapsed());
                }
                if *path == "fork_exec" {
                    ctx.after_fork().await;
                }
            }
        }
        let base = pct(&mut samples[0], 50);
        PATHS
            .iter()
            .zip(&mut samples)
            .filter(|(_, s)| !s.is_empty())
            .map(|(path, s)| {
                let p50 = pct(s, 50);
                json!({"host_mb": host_mb, "host_rss_mb": host_rss_mb, "path": path,
                       "p50_us": p50, "p99_us": pct(s, 99), "ratio_p50": ratio(p50, base)})
            })
            .collect::<Vec<_>>()
    });
    std::hint::black_box(&ballast);
    json!(rows)
}

/// What each path needs.
struct Paths {
    dir: PathBuf,
    program: PathBuf,
    request: Vec<u8>,
    helper: Option<PathBuf>,
    data: PathBuf,
    tmp: PathBuf,
    off: PluginHost,
    on: PluginHost,
}

impl Paths {
    fn new(plugins: &Path, state: &Path, helper: Option<PathBuf>) -> Paths {
        let dir = plugins.join("tiny");
        let (data, tmp) = helper_dirs(&dir, state);
        let host = |mode| {
            PluginHost::builder()
                .plugins_dir(plugins)
                .state_dir(state)
                .sandbox(mode)
                .build()
                .unwrap()
        };
        Paths {
            program: dir.join("main"),
            request: raw::request("tiny_echo", &json!({}), &dir, state),
            dir,
            helper,
            data,
            tmp,
            off: host(SandboxMode::Off),
            on: host(SandboxMode::On),
        }
    }

    /// A fork leaves every page of this process copy-on-write: whatever
    /// runs next pays a fault on each page it writes first. One untimed
    /// exchange of each other path takes those faults, so they do not land on
    /// the path measured next.
    async fn after_fork(&self) {
        for path in PATHS {
            if path != "fork_exec" && (path != "landlock_helper" || self.helper.is_some()) {
                self.exchange(path).await;
            }
        }
    }

    async fn exchange(&self, path: &str) {
        let mut cmd;
        match path {
            "posix_spawn" => cmd = Command::new(&self.program),
            "fork_exec" => {
                cmd = Command::new(&self.program);
                // SAFETY: the hook does nothing, so it cannot break what the
                // forked child may do before exec.
                unsafe {
                    cmd.pre_exec(|| Ok(()));
                }
            }
            "landlock_helper" => {
                cmd = Command::new(self.helper.as_ref().unwrap());
                cmd.arg(&self.dir)
                    .arg(&self.data)
                    .arg(&self.tmp)
                    .arg(&self.program);
            }
            "host_sandbox_off" | "host_sandbox_on" => {
                let host = if path == "host_sandbox_on" {
                    &self.on
                } else {
                    &self.off
                };
                host.call("tiny_echo", json!({}), Invocation::default())
                    .await
                    .unwrap();
                return;
            }
            other => unreachable!("no path {other}"),
        }
        raw::exchange(cmd.current_dir(&self.dir), &self.request).await;
    }
}

pub(crate) fn print(r: &Value) {
    println!("spawn paths, tiny (µs)           host RSS MB       p50       p99  p50 / posix_spawn");
    for row in r["spawn_paths"].as_array().unwrap() {
        let label = format!("{} MB {}", cell(&row["host_mb"]), cell(&row["path"]));
        match row.get("skipped") {
            Some(why) => println!("  {label:<30} skipped: {}", cell(why)),
            None => println!(
                "  {label:<30} {:>12} {:>9} {:>9} {:>18}",
                cell(&row["host_rss_mb"]),
                cell(&row["p50_us"]),
                cell(&row["p99_us"]),
                cell(&row["ratio_p50"])
            ),
        }
    }
}
