//! Preparing the sandbox: what it reports, what fails, what it costs.

use super::*;
use crate::run::sandbox::os::CHILDREN_PER_RULESET;
use crate::run::sandbox::{Confinement, SandboxError};

#[tokio::test]
async fn a_missing_data_folder_fails_preparation() {
    if !filesystem_supported() {
        return; // said why, or failed in CI
    }
    let fx = fixture();
    let missing = fx.outside.join("no-such-folder");
    let err = sandbox::prepare(&Policy {
        plugin_dir: &fx.plugin,
        data_dir: &missing,
        tmp_dir: &fx.tmp,
        entrypoint: &fx.plugin.join("main.sh"),
        permissions: &[],
        env: &[],
    })
    .unwrap_err();
    assert!(matches!(err, SandboxError::Path { ref path, .. } if *path == missing));
}

#[test]
fn enforcement_reports_what_this_kernel_does() {
    let fx = fixture();
    let support = sandbox::support();
    let entrypoint = fx.plugin.join("main.sh");
    let policy = |permissions| Policy {
        plugin_dir: &fx.plugin,
        data_dir: &fx.data,
        tmp_dir: &fx.tmp,
        entrypoint: &entrypoint,
        permissions,
        env: &[],
    };
    let confinement = Confinement::new(&policy(&[])).unwrap();
    let e = confinement.enforcement();
    assert_eq!(e.reads_confined, support.filesystem);
    assert_eq!(e.writes_confined, support.filesystem);
    assert_eq!(e.tcp_denied, support.network_tcp);
    assert_eq!(e.sockets_denied, support.network_sockets);
    assert!(!confinement.for_call().unwrap().is_empty());

    let all = [
        Permission::FilesystemRead,
        Permission::FilesystemWrite,
        Permission::Network,
    ];
    let confinement = Confinement::new(&policy(&all)).unwrap();
    assert_eq!(confinement.enforcement().not_enforced, Vec::<String>::new());
    assert_eq!(
        *confinement.enforcement(),
        crate::run::sandbox::Enforcement {
            landlock_abi: confinement.enforcement().landlock_abi,
            ..Default::default()
        },
        "nothing to enforce"
    );
    assert!(
        confinement.for_call().unwrap().is_empty(),
        "nothing for the child to do: no ruleset, no program"
    );
}

#[test]
fn confinements_and_prepared_processes_can_cross_threads() {
    fn check<T: Send + Sync + 'static>() {}
    check::<Confinement>();
    check::<sandbox::Prepared>();
}

#[test]
fn a_scoped_folder_made_again_is_noticed() {
    let fx = fixture();
    let scoped = fx.outside.join("scoped");
    std::fs::create_dir(&scoped).unwrap();
    let granted = [Permission::FilesystemWriteIn(scoped.display().to_string())];
    let confinement = Confinement::new(&Policy {
        plugin_dir: &fx.plugin,
        data_dir: &fx.data,
        tmp_dir: &fx.tmp,
        entrypoint: &fx.plugin.join("main.sh"),
        permissions: &granted,
        env: &[],
    })
    .unwrap();
    assert!(confinement.is_current());
    std::fs::remove_dir(&scoped).unwrap();
    assert!(!confinement.is_current(), "a deleted folder is not current");
    std::fs::create_dir(&scoped).unwrap();
    assert!(!confinement.is_current(), "nor is a folder made again");
}

#[tokio::test]
async fn a_ruleset_serves_a_bounded_number_of_processes() {
    if !filesystem_supported() {
        return; // said why, or failed in CI
    }
    let fx = fixture();
    let confinement = Confinement::new(&Policy {
        plugin_dir: &fx.plugin,
        data_dir: &fx.data,
        tmp_dir: &fx.tmp,
        entrypoint: &fx.plugin.join("main.sh"),
        permissions: &[],
        env: &[],
    })
    .unwrap();
    let first = confinement.for_call().unwrap();
    let ruleset = first.child_steps().ruleset;
    assert!(ruleset.is_some());
    let mut held = vec![first];
    for _ in 1..CHILDREN_PER_RULESET {
        let next = confinement.for_call().unwrap();
        assert_eq!(next.child_steps().ruleset, ruleset, "shared");
        held.push(next);
    }
    let fresh = confinement.for_call().unwrap();
    assert_ne!(fresh.child_steps().ruleset, ruleset, "replaced once full");
}

/// The re-exec helper of DESIGN.md's second option, in C so that it is small
/// and static: it builds a ruleset like `sandbox::prepare` (the system folders,
/// a few devices, the three plugin folders), restricts itself, then execs.
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

/// Compiles `source` statically into `dir/name` with the system C compiler.
fn compile_static(dir: &Path, name: &str, source: &str) -> Option<PathBuf> {
    let c = dir.join(format!("{name}.c"));
    let out = dir.join(name);
    std::fs::write(&c, source).ok()?;
    let ok = std::process::Command::new("cc")
        .args(["-O2", "-static", "-o"])
        .arg(&out)
        .arg(&c)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(out)
}

/// Per-spawn cost of the options DESIGN.md asks to compare. Run with
/// `cargo test --test sandbox spawn_cost -- --ignored --nocapture`.
/// Needs `cc` with a static libc for the static rows (skipped otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check"]
async fn spawn_cost() {
    let fx = fixture();
    let env = fx.env();
    let static_true = compile_static(&fx.tmp, "true_static", "int main(void) { return 0; }\n");
    let helper = compile_static(&fx.tmp, "helper", HELPER_C);
    prerequisite(
        "cc -static (for the static rows)",
        static_true.is_some() && helper.is_some(),
    );
    let dirs: Vec<String> = [&fx.plugin, &fx.data, &fx.tmp]
        .iter()
        .map(|p| p.display().to_string())
        .collect();

    async fn spawn(program: &Path, args: &[&str], setup: impl FnOnce(&mut Command)) -> Duration {
        let start = Instant::now();
        let mut cmd = Command::new(program);
        cmd.args(args).process_group(0).stdin(Stdio::null());
        setup(&mut cmd);
        let status = cmd.status().await.unwrap();
        assert!(status.success(), "{}: {status:?}", program.display());
        start.elapsed()
    }
    fn report(label: &str, mut v: Vec<Duration>) {
        v.sort();
        let p = |q: f64| v[((v.len() as f64 - 1.0) * q) as usize].as_secs_f64() * 1e3;
        println!("{label:<46} p50 {:>7.3} ms  p90 {:>7.3} ms", p(0.5), p(0.9));
    }
    async fn measure(n: usize, mut one: impl AsyncFnMut() -> Duration) -> Vec<Duration> {
        for _ in 0..20 {
            one().await;
        }
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(one().await);
        }
        v
    }
    let noop = |cmd: &mut Command| {
        // SAFETY: the hook does nothing.
        unsafe {
            cmd.pre_exec(|| Ok(()));
        }
    };

    for (touched_mib, n) in [(0usize, 500), (512, 200)] {
        let ballast: Vec<u8> = vec![1; touched_mib << 20];
        println!("-- host with {touched_mib} MiB touched, {n} spawns a row");
        let targets = [Some(PathBuf::from("/bin/true")), static_true.clone()];
        for target in targets.iter().flatten() {
            let name = target.file_name().unwrap().to_string_lossy().into_owned();
            let policy = Policy {
                plugin_dir: &fx.plugin,
                data_dir: &fx.data,
                tmp_dir: &fx.tmp,
                entrypoint: target,
                permissions: &[],
                env: &env,
            };
            report(
                &format!("{name}: posix_spawn"),
                measure(n, async || spawn(target, &[], |_| {}).await).await,
            );
            report(
                &format!("{name}: fork+exec, pre_exec no-op"),
                measure(n, async || spawn(target, &[], noop).await).await,
            );
            let mut prep = Vec::new();
            let v = measure(n, async || {
                let start = Instant::now();
                let prepared = sandbox::prepare(&policy).unwrap();
                prep.push(start.elapsed());
                spawn(target, &[], |cmd| prepared.apply_to(cmd)).await
            })
            .await;
            report(&format!("{name}: fork+exec, Landlock+seccomp hook"), v);
            report(&format!("{name}:   + sandbox::prepare beforehand"), prep);
            if let Some(helper) = &helper {
                let t = target.display().to_string();
                let args = [&dirs[0][..], &dirs[1], &dirs[2], &t];
                report(
                    &format!("{name}: posix_spawn helper, Landlock, exec"),
                    measure(n, async || spawn(helper, &args, |_| {}).await).await,
                );
            }
        }
        std::hint::black_box(&ballast);
        drop(ballast);
    }
}
