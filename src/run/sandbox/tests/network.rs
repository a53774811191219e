//! Sockets without `network`.

use std::net::TcpListener;

use super::*;

/// Runs a bash client against a listener; returns whether the listener saw a
/// connection, and the client's output.
async fn try_connect(fx: &Fixture, granted: &[Permission]) -> (bool, Output) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let script = fx.script(
        "net.sh",
        "#!/bin/bash\n\
         exec 3<>/dev/tcp/127.0.0.1/$1 && echo connected\n\
         exit 0\n",
    );
    let out = fx.run(&script, &[&port], granted).await;
    // A completed handshake waits in the backlog; give a stray one a moment.
    let deadline = Instant::now() + Duration::from_millis(300);
    let accepted = loop {
        match listener.accept() {
            Ok(_) => break true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() > deadline {
                    break false;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    (accepted, out)
}

#[tokio::test]
async fn without_network_tcp_and_udp_are_denied() {
    let support = sandbox::support(true);
    if !prerequisite(
        "Landlock ABI 4 or seccomp",
        support.network_tcp || support.network_sockets,
    ) {
        return;
    }
    let fx = fixture();
    let (accepted, out) = try_connect(&fx, &[]).await;
    assert!(!accepted, "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("connected"),
        "{}",
        text(&out)
    );

    let (accepted, out) = try_connect(&fx, &[Permission::Network]).await;
    assert!(accepted, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("connected"),
        "{}",
        text(&out)
    );

    if !prerequisite("seccomp filters", support.network_sockets) {
        return;
    }
    let script = fx.script(
        "udp.py",
        "#!/usr/bin/env python3\n\
         import socket\n\
         try:\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    print('udp-open')\n\
         except OSError as e:\n    print('udp-denied', e.errno)\n",
    );
    let out = fx.run(&script, &[], &[]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("udp-denied {}", libc::EACCES)),
        "{}",
        text(&out)
    );
}
