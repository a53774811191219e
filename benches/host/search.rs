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
//!
//! `benches/search/tasks-held-out.json` is a second set of tasks, written
//! before the ranking was tuned on the first and never tuned on: its recall
//! is the honest one. `benches/search/tasks-fresh.json` is a third, written
//! later by someone who had read neither set nor the ranker, to judge what
//! was tried after the second set had been looked at. The time is that of
//! one search over the whole catalog (the mean over every set's queries).

use plughost::search::{SearchDoc, SearchIndex};
use serde_json::{Value, json};

use super::Bench;

fn load(file: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

pub(crate) fn rows(_bench: &Bench, report: &mut Value) {
    let catalog = load("benches/search/tool-catalog.json");
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
    let tuned = recall(&index, &ids, &tools, &load("benches/search/tasks.json"));
    let held_out = recall(
        &index,
        &ids,
        &tools,
        &load("benches/search/tasks-held-out.json"),
    );
    let fresh = recall(
        &index,
        &ids,
        &tools,
        &load("benches/search/tasks-fresh.json"),
    );
    let queries: Vec<&str> = [&tuned, &held_out, &fresh]
        .iter()
        .flat_map(|set| set.queries.iter().map(String::as_str))
        .collect();
    let search_micros = time_search(&index, &queries);
    let full = json!({ "tools": tools }).to_string().len();
    let two = json!({ "tools": plughost::serve::tool_search_listing() })
        .to_string()
        .len();
    let n = tuned.tasks;
    report["search"] = json!({
        "servers": catalog["servers"].as_array().unwrap().len(),
        "tools": tools.len(),
        "tasks": n,
        "recall_at_1": ratio(tuned.at[0], n),
        "recall_at_3": ratio(tuned.at[1], n),
        "recall_at_5": ratio(tuned.at[2], n),
        "held_out_tasks": held_out.tasks,
        "held_out_recall_at_1": ratio(held_out.at[0], held_out.tasks),
        "held_out_recall_at_3": ratio(held_out.at[1], held_out.tasks),
        "held_out_recall_at_5": ratio(held_out.at[2], held_out.tasks),
        "fresh_tasks": fresh.tasks,
        "fresh_recall_at_1": ratio(fresh.at[0], fresh.tasks),
        "fresh_recall_at_3": ratio(fresh.at[1], fresh.tasks),
        "fresh_recall_at_5": ratio(fresh.at[2], fresh.tasks),
        "search_micros_mean": search_micros,
        "list_chars_all": full,
        "list_tokens_all": full / 4,
        "list_chars_search": two,
        "list_tokens_search": two / 4,
        "search_answer_chars_mean": tuned.answer_chars / n.max(1),
        "search_answer_tokens_mean": tuned.answer_chars / n.max(1) / 4,
        "misses": tuned.misses,
        "held_out_misses": held_out.misses,
    });
}

/// How one task file fares: found at 1, 3 and 5, the misses, and the
/// characters of the answers.
struct Recall {
    tasks: usize,
    at: [usize; 3],
    misses: Vec<Value>,
    answer_chars: usize,
    queries: Vec<String>,
}

fn recall(index: &SearchIndex, ids: &[String], tools: &[Value], file: &Value) -> Recall {
    let tasks = file["tasks"].as_array().unwrap();
    let mut r = Recall {
        tasks: tasks.len(),
        at: [0; 3],
        misses: Vec::new(),
        answer_chars: 0,
        queries: Vec::new(),
    };
    for task in tasks {
        let query = task["task"].as_str().unwrap();
        r.queries.push(query.to_owned());
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
        r.at[0] += usize::from(rank.is_some_and(|r| r < 1));
        r.at[1] += usize::from(rank.is_some_and(|r| r < 3));
        r.at[2] += usize::from(rank.is_some());
        if rank.is_none() {
            r.misses.push(json!({
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
        r.answer_chars += 2 * json!({ "tools": found }).to_string().len();
    }
    r
}

/// The mean time of one search over the whole catalog, in microseconds:
/// every task's query, repeated until about a quarter of a second has gone.
fn time_search(index: &SearchIndex, queries: &[&str]) -> f64 {
    let start = std::time::Instant::now();
    let mut runs = 0usize;
    while runs == 0 || start.elapsed() < std::time::Duration::from_millis(250) {
        for q in queries {
            std::hint::black_box(index.search(q, 5));
            runs += 1;
        }
    }
    let micros = start.elapsed().as_secs_f64() * 1e6 / runs as f64;
    (micros * 10.0).round() / 10.0
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
        "  held out, {} tasks (benches/search/tasks-held-out.json, never tuned on):",
        s["held_out_tasks"]
    );
    println!(
        "  recall@1 {}   recall@3 {}   recall@5 {}",
        s["held_out_recall_at_1"], s["held_out_recall_at_3"], s["held_out_recall_at_5"]
    );
    println!(
        "  fresh, {} tasks (benches/search/tasks-fresh.json, written without the other sets):",
        s["fresh_tasks"]
    );
    println!(
        "  recall@1 {}   recall@3 {}   recall@5 {}",
        s["fresh_recall_at_1"], s["fresh_recall_at_3"], s["fresh_recall_at_5"]
    );
    println!(
        "  one search over every tool: {} µs (mean)",
        s["search_micros_mean"]
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
    for (set, key) in [("", "misses"), ("held out ", "held_out_misses")] {
        for m in s[key].as_array().into_iter().flatten() {
            println!(
                "  {set}missed: {}  want {}  got {}",
                m["task"], m["expected"], m["got"]
            );
        }
    }
}
