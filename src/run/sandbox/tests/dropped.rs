//! A call dropped while its confined process is being started: the spawner
//! thread that clones it must not leave it running or unreaped.

use std::time::{Duration, Instant};

use super::{filesystem_supported, fixture};

/// Processes whose command line holds `marker`, and this process's
/// children that ran `sleep` and wait to be reaped (whose command line is
/// gone).
fn left_with(marker: &str) -> Vec<u32> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let running = std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                cmdline
                    .split(|b| *b == 0)
                    .any(|arg| arg == marker.as_bytes())
            });
            // `PID (comm) STATE PPID …`
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let fields: Vec<&str> = stat.split_whitespace().collect();
                fields.get(1) == Some(&"(sleep)")
                    && fields.get(2) == Some(&"Z")
                    && fields.get(3) == Some(&me.as_str())
            });
            running || zombie
        })
        .collect()
}

#[tokio::test]
async fn a_confined_spawn_dropped_before_its_answer_leaves_no_process() {
    if !filesystem_supported() {
        return;
    }
    let f = fixture();
    let sleep = std::path::Path::new("/bin/sleep");
    let env = f.env();
    // A duration no other process uses, so the test finds only its own.
    let marker = format!("3000.{}", std::process::id());
    let args = vec![marker.clone()];
    for _ in 0..20 {
        let spawn = crate::run::executor::Spawn {
            program: sleep,
            args: &args,
            cwd: &f.plugin,
            env: &env,
            sandbox: Some(f.prepare(sleep, &[], &env)),
        };
        // Polled once (the spawn is handed to a spawner thread), then dropped.
        let once =
            tokio::time::timeout(Duration::ZERO, crate::run::executor::Process::spawn(spawn));
        if let Ok(spawned) = once.await {
            // Started at once (no spawner thread here): a process the call
            // owns, killed when dropped like any other.
            drop(spawned);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left = left_with(&marker);
    while !left.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        left = left_with(&marker);
    }
    assert!(
        left.is_empty(),
        "processes left running or unreaped: {left:?}"
    );
}
