//! `plughost connect --list`: each client, whether it is installed (its
//! command on `PATH`, or its settings folder present), and how its file
//! reaches plughost's entry, if it has one.

use std::process::ExitCode;

use serde_json::json;

use super::clients::{Client, Env, Transport};
use super::doc::Doc;
use super::file;

pub fn run(env: &Env, name: &str, as_json: bool) -> Result<ExitCode, String> {
    let rows: Vec<Row> = Client::ALL.iter().map(|&c| row(env, c, name)).collect();
    if as_json {
        let value: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "client": r.client.id(),
                    "installed": r.binary.is_some() || r.dir_exists,
                    "binary": r.binary,
                    "config_dir": r.dir,
                    "config_dir_exists": r.dir_exists,
                    "config": r.file,
                    "connected": match &r.state {
                        State::Connected(Transport::Stdio { command }) =>
                            json!({"transport": "stdio", "command": command}),
                        State::Connected(Transport::Http { url }) =>
                            json!({"transport": "http", "url": url}),
                        State::Connected(Transport::Other) => json!({"transport": "other"}),
                        _ => serde_json::Value::Null,
                    },
                    "error": match &r.state {
                        State::Unreadable(why) => Some(why),
                        _ => None,
                    },
                })
            })
            .collect();
        super::super::print_json(&value);
        return Ok(ExitCode::SUCCESS);
    }
    let table: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            let installed = match (&r.binary, r.dir_exists) {
                (Some(_), _) => format!("yes ({} on PATH)", r.client.binary()),
                (None, true) => format!("yes ({})", env.tilde(std::path::Path::new(&r.dir))),
                (None, false) => "no".to_owned(),
            };
            let state = match &r.state {
                State::Absent => "no".to_owned(),
                State::Connected(Transport::Stdio { .. }) => "stdio".to_owned(),
                State::Connected(Transport::Http { url }) => format!("http {url}"),
                State::Connected(Transport::Other) => "yes (unknown transport)".to_owned(),
                State::Unreadable(why) => format!("? ({why})"),
            };
            [
                r.client.id().to_owned(),
                installed,
                state,
                env.tilde(std::path::Path::new(&r.file)),
            ]
        })
        .collect();
    let header = [
        "CLIENT".to_owned(),
        "INSTALLED".to_owned(),
        name.to_uppercase(),
        "CONFIGURATION".to_owned(),
    ];
    let widths: Vec<usize> = (0..3)
        .map(|i| {
            table
                .iter()
                .chain([&header])
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in [&header].into_iter().chain(&table) {
        println!(
            "{:w0$}  {:w1$}  {:w2$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
    }
    Ok(ExitCode::SUCCESS)
}

struct Row {
    client: Client,
    binary: Option<String>,
    dir: String,
    dir_exists: bool,
    file: String,
    state: State,
}

enum State {
    Absent,
    Connected(Transport),
    Unreadable(String),
}

fn row(env: &Env, client: Client, name: &str) -> Row {
    let dir = client.config_dir(env);
    let path = client.config_file(env);
    let state = match file::read(&path) {
        Err(e) => State::Unreadable(e),
        Ok(None) => State::Absent,
        Ok(Some(c)) => match Doc::parse(client, Some(&c.text)) {
            Err(why) => State::Unreadable(why),
            Ok(doc) => match doc.entry(name) {
                None => State::Absent,
                Some(entry) => State::Connected(super::clients::transport(&entry)),
            },
        },
    };
    Row {
        client,
        binary: env
            .find_binary(client.binary())
            .map(|p| p.display().to_string()),
        dir_exists: dir.is_dir(),
        dir: dir.display().to_string(),
        file: path.display().to_string(),
        state,
    }
}
