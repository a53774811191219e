//! Reads and writes outside the plugin's folders, the host's environment and signals.

use super::*;

#[tokio::test]
async fn without_filesystem_write_only_the_data_and_temp_folders_are_writable() {
    if !filesystem_supported() {
        return; // said why, or failed in CI
    }
    let fx = fixture();
    let script = fx.script("write.sh", BASH_WRITE);
    let (data, outside) = (fx.data.to_str().unwrap(), fx.outside.to_str().unwrap());

    let out = fx.run(&script, &[data, outside], &[]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("wrote-data"), "{}", text(&out));
    assert!(!stdout.contains("wrote-outside"), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out)
    );
    assert!(fx.data.join("ok.txt").exists());
    assert!(!fx.outside.join("new.txt").exists());

    // The same through the standard library's spawn, the fallback.
    std::fs::remove_file(fx.data.join("ok.txt")).unwrap();
    let out = fx.run_forked(&script, &[data, outside], &[]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("wrote-data"), "{}", text(&out));
    assert!(!stdout.contains("wrote-outside"), "{}", text(&out));
    assert!(!fx.outside.join("new.txt").exists());

    // The temp folder is writable too, and the plugin folder is not.
    let tmp = fx.tmp.to_str().unwrap();
    let plugin = fx.plugin.to_str().unwrap();
    let out = fx.run(&script, &[tmp, plugin], &[]).await;
    assert!(fx.tmp.join("ok.txt").exists(), "{}", text(&out));
    assert!(!fx.plugin.join("new.txt").exists(), "{}", text(&out));

    // Granted, it writes anywhere.
    let out = fx
        .run(&script, &[data, outside], &[Permission::FilesystemWrite])
        .await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("wrote-outside"),
        "{}",
        text(&out)
    );
    assert!(fx.outside.join("new.txt").exists());
}

#[tokio::test]
async fn with_filesystem_read_but_not_write_writes_stay_confined() {
    if !filesystem_supported() {
        return; // said why, or failed in CI
    }
    let fx = fixture();
    let script = fx.script("write.sh", BASH_WRITE);
    let (data, outside) = (fx.data.to_str().unwrap(), fx.outside.to_str().unwrap());
    let out = fx
        .run(&script, &[data, outside], &[Permission::FilesystemRead])
        .await;
    assert!(fx.data.join("ok.txt").exists(), "{}", text(&out));
    assert!(!fx.outside.join("new.txt").exists(), "{}", text(&out));
}

#[tokio::test]
async fn without_filesystem_read_only_its_own_folders_and_the_system_are_readable() {
    if !filesystem_supported() {
        return; // said why, or failed in CI
    }
    let fx = fixture();
    let script = fx.script(
        "read.sh",
        "#!/bin/bash\n\
         cat own.txt\n\
         cat \"$1/secret.txt\"\n\
         ls \"$1\" >/dev/null && echo listed-outside\n\
         head -c 4 /etc/hostname >/dev/null && echo read-etc\n\
         exit 0\n",
    );
    let outside = fx.outside.to_str().unwrap();

    let out = fx.run(&script, &[outside], &[]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("own-content"), "{}", text(&out));
    assert!(stdout.contains("read-etc"), "{}", text(&out));
    assert!(!stdout.contains("secret-content"), "{}", text(&out));
    assert!(!stdout.contains("listed-outside"), "{}", text(&out));

    let out = fx
        .run(&script, &[outside], &[Permission::FilesystemRead])
        .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("secret-content"), "{}", text(&out));
    assert!(stdout.contains("listed-outside"), "{}", text(&out));
}

#[tokio::test]
async fn the_host_environment_and_signals_stay_out_of_reach() {
    if !filesystem_supported() {
        return; // said why, or failed in CI
    }
    let fx = fixture();
    let script = fx.script(
        "peek.sh",
        "#!/bin/bash\n\
         read -r line < /proc/self/status && echo own-proc\n\
         read -r line < /proc/cpuinfo && echo cpuinfo\n\
         cat /proc/$1/environ >/dev/null && echo read-host-env\n\
         cat /proc/$1/maps >/dev/null && echo read-host-maps\n\
         kill -0 $1 && echo signalled-host\n\
         exit 0\n",
    );
    let host = std::process::id().to_string();
    // filesystem:read is approved without asking: it must not expose the
    // host's environment either. Through the executor's spawn (seccomp
    // inherited from a spawner thread) and through the fallback (`pre_exec`
    // in a forked child).
    for (granted, forked) in [
        (&[][..], false),
        (&[Permission::FilesystemRead][..], false),
        (&[][..], true),
        (&[Permission::FilesystemRead][..], true),
    ] {
        let out = if forked {
            fx.run_forked(&script, &[&host], granted).await
        } else {
            fx.run(&script, &[&host], granted).await
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("own-proc"), "{granted:?}: {}", text(&out));
        assert!(stdout.contains("cpuinfo"), "{granted:?}: {}", text(&out));
        assert!(
            !stdout.contains("read-host-env"),
            "{granted:?}: {}",
            text(&out)
        );
        assert!(
            !stdout.contains("read-host-maps"),
            "{granted:?}: {}",
            text(&out)
        );
        if sandbox::support(true).scopes {
            assert!(
                !stdout.contains("signalled-host"),
                "{granted:?}: {}",
                text(&out)
            );
        } else {
            prerequisite("Landlock ABI 6 (signal scoping)", false);
        }
    }
}
