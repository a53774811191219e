use super::*;
use crate::connect::entry::Node;

fn entry() -> Node {
    Node::map([
        ("command", Node::str("/bin/p")),
        ("args", Node::List(vec!["serve".into()])),
    ])
}

fn set(text: &str) -> String {
    let doc = Doc::parse(text.to_owned()).unwrap();
    doc.set("mcpServers", "p", &|s| entry().render_json(s))
        .unwrap()
}

fn remove(text: &str) -> String {
    Doc::parse(text.to_owned())
        .unwrap()
        .remove("mcpServers", "p")
        .unwrap()
}

#[test]
fn adds_to_the_end_of_the_servers_in_their_indentation() {
    let before = "{\n    \"mcpServers\": {\n        \"a\": {\"command\": \"x\"}\n    },\n    \"theme\": \"dark\"\n}\n";
    let after = set(before);
    assert_eq!(
        after,
        "{\n    \"mcpServers\": {\n        \"a\": {\"command\": \"x\"},\n        \"p\": {\n            \"command\": \"/bin/p\",\n            \"args\": [\n                \"serve\"\n            ]\n        }\n    },\n    \"theme\": \"dark\"\n}\n"
    );
    assert_eq!(remove(&after), before);
}

#[test]
fn adds_the_servers_key_when_missing_and_to_an_empty_file() {
    let after = set("{}\n");
    assert_eq!(
        after,
        "{\n  \"mcpServers\": {\n    \"p\": {\n      \"command\": \"/bin/p\",\n      \"args\": [\n        \"serve\"\n      ]\n    }\n  }\n}\n"
    );
    let with_other = set("{\n\t\"theme\": \"dark\"\n}");
    assert_eq!(
        with_other,
        "{\n\t\"theme\": \"dark\",\n\t\"mcpServers\": {\n\t\t\"p\": {\n\t\t\t\"command\": \"/bin/p\",\n\t\t\t\"args\": [\n\t\t\t\t\"serve\"\n\t\t\t]\n\t\t}\n\t}\n}"
    );
}

#[test]
fn replaces_an_entry_in_place_and_keeps_everything_else() {
    let before = "{\n  // servers\n  \"mcpServers\": {\n    \"p\": {\"command\": \"old\"}, // mine\n    \"z\": {}\n  },\n}\n";
    let after = set(before);
    assert_eq!(
        after,
        "{\n  // servers\n  \"mcpServers\": {\n    \"p\": {\n      \"command\": \"/bin/p\",\n      \"args\": [\n        \"serve\"\n      ]\n    }, // mine\n    \"z\": {}\n  },\n}\n"
    );
    let doc = Doc::parse(after).unwrap();
    assert_eq!(
        doc.get("mcpServers", "p").unwrap().unwrap(),
        serde_json::json!({"command": "/bin/p", "args": ["serve"]})
    );
}

#[test]
fn keeps_crlf_a_trailing_comma_and_a_compact_file_compact() {
    let crlf = set("{\r\n  \"mcpServers\": {\r\n    \"a\": 1,\r\n  }\r\n}\r\n");
    assert_eq!(
        crlf,
        "{\r\n  \"mcpServers\": {\r\n    \"a\": 1,\r\n    \"p\": {\r\n      \"command\": \"/bin/p\",\r\n      \"args\": [\r\n        \"serve\"\r\n      ]\r\n    },\r\n  }\r\n}\r\n"
    );
    let compact = "{\"mcpServers\":{\"a\":1}}";
    let after = set(compact);
    assert_eq!(
        after,
        "{\"mcpServers\":{\"a\":1,\"p\":{\"command\":\"/bin/p\",\"args\":[\"serve\"]}}}"
    );
    assert_eq!(remove(&after), compact);
}

#[test]
fn removes_a_member_in_the_middle_or_the_only_one() {
    assert_eq!(
        remove("{\"mcpServers\": {\n  \"a\": 1,\n  \"p\": 2,\n  \"b\": 3\n}}"),
        "{\"mcpServers\": {\n  \"a\": 1,\n  \"b\": 3\n}}"
    );
    let only = Doc::parse("{\n  \"mcpServers\": {\n    \"p\": 2\n  }\n}".into()).unwrap();
    let emptied = only.remove("mcpServers", "p").unwrap();
    assert_eq!(emptied, "{\n  \"mcpServers\": {}\n}");
    let gone = Doc::parse(emptied)
        .unwrap()
        .remove_if_empty("mcpServers")
        .unwrap();
    assert_eq!(gone, "{}");
}

#[test]
fn the_shape_must_be_the_clients() {
    let list = Doc::parse("[1, 2]".into()).unwrap();
    assert_eq!(list.has("mcpServers"), Err(ShapeError::NotAnObject));
    let wrong = Doc::parse("{\"mcpServers\": []}".into()).unwrap();
    assert_eq!(
        wrong.has("mcpServers"),
        Err(ShapeError::KeyNotAnObject("mcpServers".into()))
    );
}

#[test]
fn broken_json_is_refused_with_its_place() {
    let cases = [
        ("{\n  \"a\": 1\n  \"b\": 2\n}", 3, 3, "expected `,` or `}`"),
        ("{\"a\": }", 1, 7, "expected a value"),
        (
            "{\"a\": 1} x",
            1,
            10,
            "unexpected text after the end of the JSON value",
        ),
        ("{\"a\": \"x", 1, 9, "a string is not closed"),
        ("{a: 1}", 1, 2, "expected a key in double quotes"),
        ("{\"a\": 01}", 1, 7, "a number is malformed"),
        ("/* x", 1, 1, "a comment is not closed"),
        ("", 1, 1, "expected a value"),
    ];
    for (text, line, column, message) in cases {
        let e = Doc::parse(text.into()).unwrap_err();
        assert_eq!(
            e,
            ParseError {
                line,
                column,
                message
            },
            "{text:?}"
        );
    }
    let deep = "[".repeat(MAX_DEPTH + 1);
    assert_eq!(Doc::parse(deep).unwrap_err().message, "nested too deep");
}

#[test]
fn values_read_as_json_with_escapes_and_a_bom() {
    let doc = Doc::parse("\u{feff}{\"mcpServers\": {\"p\": {\"a\": \"\\u00e9\\n\", \"n\": -1.5e3, \"t\": [true, null]}}}".into()).unwrap();
    assert_eq!(
        doc.get("mcpServers", "p").unwrap().unwrap(),
        serde_json::json!({"a": "é\n", "n": -1500.0, "t": [true, null]})
    );
    assert_eq!(doc.get("mcpServers", "q").unwrap(), None);
}
