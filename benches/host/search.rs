//! `search`: how well `serve --tool-search` finds the tool a person would
//! pick, and what a client's tool list costs with and without it.
//!
//! The catalog is `benches/search/tool-catalog.json`: the `tools/list`
//! answers of public MCP servers (`scripts/tool-catalog` captures them and
//! names the versions). The tasks are `benches/search/tasks.json`: a
//! request as a person says it, and the tools they would pick (several when
//! two servers do the same). A task counts as found at k when one of its
//! tools is among the first k results. Sizes are of the JSON a client gets:
//! `tools/list` with every tool, then with the two tools of tool search, and
//! one `search_tools` answer of 5 tools (the mean over the tasks). Tokens
//! are estimated as characters / 4 (no tokenizer is bundled).

use plughost::search::{SearchDoc, SearchIndex};
use serde_json::{Value, json};

use super::Bench;

fn load(file: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

pub(crate) fn rows(_bench: &Bench, report: &mut Value) {
    let catalog = load("benches/search/tool-catalog.json");
    let tasks = load("benches/search/tasks.json");
    let mut ids = Vec::new();
    let mut tools = Vec::new();
    let mut docs = Vec::new();
    for server in catalog["servers"].as_array().unwrap() {
        let plugin = server["name"].as_str().unwrap();
        for tool in server["tools"].as_array().unwrap() {
            let name = tool["name"].as_str().unwrap();
            ids.push(format!("{plugin}/{name}"));
            tools.push(tool.clone());
            let title = tool["title"]
                .as_str()
                .or_else(|| tool["annotations"]["title"].as_str())
                .map(str::to_owned);
            docs.push(
                SearchDoc::new(
                    name,
                    plugin,
                    tool["description"].as_str().unwrap_or_default(),
                    tool["inputSchema"].clone(),
                )
                .with_title(title),
            );
        }
    }
    let index = SearchIndex::new(&docs);
    let tasks = tasks["tasks"].as_array().unwrap();
    let (mut at1, mut at3, mut at5, mut answer_chars) = (0, 0, 0, 0);
    let mut misses = Vec::new();
    for task in tasks {
        let query = task["task"].as_str().unwrap();
        let expected: Vec<&str> = task["expected"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        let hits = index.search(query, 5);
        let rank = hits
            .iter()
            .position(|h| expected.contains(&ids[h.index].as_str()));
        at1 += usize::from(rank.is_some_and(|r| r < 1));
        at3 += usize::from(rank.is_some_and(|r| r < 3));
        at5 += usize::from(rank.is_some());
        if rank.is_none() {
            misses.push(json!({
                "task": query,
                "expected": expected,
                "got": hits.iter().map(|h| ids[h.index].clone()).collect::<Vec<_>>(),
            }));
        }
        let found: Vec<Value> = hits
            .iter()
            .map(|h| {
                let t = &tools[h.index];
                json!({"name": t["name"], "description": t["description"], "inputSchema": t["inputSchema"]})
            })
            .collect();
        // Structured and as text, as the server sends it.
        answer_chars += 2 * json!({ "tools": found }).to_string().len();
    }
    let n = tasks.len();
    let full = json!({ "tools": tools }).to_string().len();
    let two = json!({ "tools": plughost::serve::tool_search_listing() })
        .to_string()
        .len();
    report["search"] = json!({
        "servers": catalog["servers"].as_array().unwrap().len(),
        "tools": tools.len(),
        "tasks": n,
        "recall_at_1": ratio(at1, n),
        "recall_at_3": ratio(at3, n),
        "recall_at_5": ratio(at5, n),
        "list_chars_all": full,
        "list_tokens_all": full / 4,
        "list_chars_search": two,
        "list_tokens_search": two / 4,
        "search_answer_chars_mean": answer_chars / n.max(1),
        "search_answer_tokens_mean": answer_chars / n.max(1) / 4,
        "misses": misses,
    });
}

fn ratio(k: usize, n: usize) -> f64 {
    (k as f64 / n.max(1) as f64 * 1000.0).round() / 1000.0
}

pub(crate) fn print(r: &Value) {
    let s = &r["search"];
    if s.is_null() {
        return;
    }
    println!(
        "\ntool search: {} tasks over {} tools of {} servers (benches/search)",
        s["tasks"], s["tools"], s["servers"]
    );
    println!(
        "  recall@1 {}   recall@3 {}   recall@5 {}",
        s["recall_at_1"], s["recall_at_3"], s["recall_at_5"]
    );
    println!(
        "  tools/list, every tool:     {:>7} chars  ~{:>6} tokens (chars/4)",
        s["list_chars_all"], s["list_tokens_all"]
    );
    println!(
        "  tools/list, --tool-search:  {:>7} chars  ~{:>6} tokens",
        s["list_chars_search"], s["list_tokens_search"]
    );
    println!(
        "  one search_tools answer (5 tools, mean): {} chars ~{} tokens",
        s["search_answer_chars_mean"], s["search_answer_tokens_mean"]
    );
    for m in s["misses"].as_array().into_iter().flatten() {
        println!(
            "  missed: {}  want {}  got {}",
            m["task"], m["expected"], m["got"]
        );
    }
}
