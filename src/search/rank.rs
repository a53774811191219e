//! The index and its BM25 ranking.

use std::collections::HashMap;

use serde_json::Value;

use super::words::terms;

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;

/// How much a word counts in each field: a word of the name says most
/// about what a tool does, a parameter's description least.
const NAME: f64 = 3.0;
const PLUGIN: f64 = 1.5;
const TITLE: f64 = 2.0;
const DESCRIPTION: f64 = 1.0;
const PARAM_NAME: f64 = 1.0;
const PARAM_DESCRIPTION: f64 = 0.5;

/// How deep parameters are followed into nested objects and arrays.
const MAX_DEPTH: usize = 3;

/// One tool as the index reads it.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SearchDoc {
    /// The name clients call it by.
    pub name: String,
    /// The plugin that offers it.
    pub plugin: String,
    /// Its title, when it has one.
    pub title: Option<String>,
    /// Its description.
    pub description: String,
    /// Its input schema: the names and descriptions of its parameters.
    pub input_schema: Value,
}

impl SearchDoc {
    /// A tool of `plugin` named `name`, with its `description` and `input_schema`.
    pub fn new(
        name: impl Into<String>,
        plugin: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> SearchDoc {
        SearchDoc {
            name: name.into(),
            plugin: plugin.into(),
            title: None,
            description: description.into(),
            input_schema,
        }
    }

    /// The same, with a title.
    #[must_use]
    pub fn with_title(mut self, title: Option<String>) -> SearchDoc {
        self.title = title;
        self
    }
}

/// One match: the tool's position in the documents given, and its score
/// (higher is better; only comparable within one search).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The tool's position among the documents the index was built from.
    pub index: usize,
    /// Its BM25 score.
    pub score: f64,
}

/// Weighted term counts of one tool, and its weighted length.
#[derive(Debug, Clone)]
struct Bag {
    tf: HashMap<String, f64>,
    len: f64,
}

/// An index over a fixed list of tools, built once per listing.
#[derive(Debug, Clone)]
pub struct SearchIndex {
    bags: Vec<Bag>,
    /// In how many tools each term occurs.
    df: HashMap<String, usize>,
    avg_len: f64,
}

impl SearchIndex {
    /// Indexes `docs`; a [`Hit`]'s `index` is a position in this list.
    pub fn new(docs: &[SearchDoc]) -> SearchIndex {
        let bags: Vec<Bag> = docs.iter().map(bag).collect();
        let mut df: HashMap<String, usize> = HashMap::new();
        for b in &bags {
            for term in b.tf.keys() {
                *df.entry(term.clone()).or_default() += 1;
            }
        }
        let avg_len = match bags.len() {
            0 => 1.0,
            n => (bags.iter().map(|b| b.len).sum::<f64>() / n as f64).max(1.0),
        };
        SearchIndex { bags, df, avg_len }
    }

    /// The number of tools indexed.
    pub fn len(&self) -> usize {
        self.bags.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.bags.is_empty()
    }

    /// The `limit` best tools for `query`, best first; tools that share no
    /// term with it are left out. Ties keep the documents' order.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let mut words = terms(query);
        words.sort();
        words.dedup();
        let n = self.bags.len() as f64;
        let idf: Vec<(String, f64)> = words
            .into_iter()
            .filter_map(|w| {
                let df = *self.df.get(&w)? as f64;
                // BM25's idf, kept positive for terms in most tools.
                Some((w, ((n - df + 0.5) / (df + 0.5)).ln_1p()))
            })
            .collect();
        let mut hits: Vec<Hit> = self
            .bags
            .iter()
            .enumerate()
            .filter_map(|(index, bag)| {
                let norm = K1 * (1.0 - B + B * bag.len / self.avg_len);
                let score: f64 = idf
                    .iter()
                    .filter_map(|(w, idf)| {
                        let tf = *bag.tf.get(w)?;
                        Some(idf * tf * (K1 + 1.0) / (tf + norm))
                    })
                    .sum();
                (score > 0.0).then_some(Hit { index, score })
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        hits.truncate(limit);
        hits
    }
}

fn bag(doc: &SearchDoc) -> Bag {
    let mut bag = Bag {
        tf: HashMap::new(),
        len: 0.0,
    };
    let mut add = |text: &str, weight: f64| {
        for term in terms(text) {
            *bag.tf.entry(term).or_default() += weight;
            bag.len += weight;
        }
    };
    add(&doc.name, NAME);
    add(&doc.plugin, PLUGIN);
    if let Some(title) = &doc.title {
        add(title, TITLE);
    }
    add(&doc.description, DESCRIPTION);
    params(&doc.input_schema, 0, &mut add);
    bag
}

/// The names and descriptions of the parameters of `schema`, nested ones
/// too (a bit deep, not forever).
fn params(schema: &Value, depth: usize, add: &mut impl FnMut(&str, f64)) {
    if depth >= MAX_DEPTH {
        return;
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            add(name, PARAM_NAME);
            if let Some(d) = prop.get("description").and_then(Value::as_str) {
                add(d, PARAM_DESCRIPTION);
            }
            params(prop, depth + 1, add);
        }
    }
    if let Some(items) = schema.get("items") {
        params(items, depth + 1, add);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn docs() -> Vec<SearchDoc> {
        vec![
            SearchDoc::new(
                "read_text_file",
                "filesystem",
                "Read the complete contents of a file from the file system as text.",
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            ),
            SearchDoc::new(
                "list_directory",
                "filesystem",
                "Get a detailed listing of all files and directories in a specified path.",
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            ),
            SearchDoc::new(
                "git_commit",
                "git",
                "Records changes to the repository",
                json!({"type": "object", "properties": {
                    "repo_path": {"type": "string"},
                    "message": {"type": "string", "description": "Commit message"}}}),
            ),
            SearchDoc::new(
                "get_current_time",
                "time",
                "Get current time in a specific timezones",
                json!({"type": "object", "properties": {
                    "timezone": {"type": "string", "description": "IANA timezone name"}}}),
            ),
            SearchDoc::new(
                "browser_take_screenshot",
                "playwright",
                "Take a screenshot of the current page",
                json!({"type": "object", "properties": {}}),
            ),
        ]
    }

    fn top(query: &str) -> Vec<&'static str> {
        let names = [
            "read_text_file",
            "list_directory",
            "git_commit",
            "get_current_time",
            "browser_take_screenshot",
        ];
        SearchIndex::new(&docs())
            .search(query, 3)
            .iter()
            .map(|h| names[h.index])
            .collect()
    }

    #[test]
    fn the_tool_that_does_it_comes_first() {
        assert_eq!(
            top("show me the files in this directory")[0],
            "list_directory"
        );
        assert_eq!(top("read a file")[0], "read_text_file");
        assert_eq!(top("commit my changes with a message")[0], "git_commit");
        assert_eq!(
            top("what time is it in Tokyo timezone")[0],
            "get_current_time"
        );
        assert_eq!(top("screenshot the page")[0], "browser_take_screenshot");
    }

    #[test]
    fn names_count_more_than_parameter_descriptions() {
        let docs = vec![
            SearchDoc::new(
                "notes_add",
                "notes",
                "Adds a note.",
                json!({"type": "object",
                "properties": {"text": {"description": "the message text"}}}),
            ),
            SearchDoc::new("send_message", "chat", "Sends a chat message.", json!({})),
        ];
        let hits = SearchIndex::new(&docs).search("message", 2);
        assert_eq!(hits[0].index, 1);
        assert_eq!(hits.len(), 2);
    }

    #[test]
    fn no_shared_word_no_hit_and_limits_hold() {
        let index = SearchIndex::new(&docs());
        assert!(index.search("zebra quantum", 5).is_empty());
        assert!(index.search("", 5).is_empty());
        assert_eq!(index.search("file path", 1).len(), 1);
        assert!(SearchIndex::new(&[]).search("file", 5).is_empty());
    }

    #[test]
    fn nested_parameters_are_indexed() {
        let docs = vec![
            SearchDoc::new(
                "a",
                "p",
                "First.",
                json!({"properties": {"opts": {"properties": {
                "latitude": {"description": "degrees north"}}}}}),
            ),
            SearchDoc::new("b", "p", "Second.", json!({})),
        ];
        let hits = SearchIndex::new(&docs).search("latitude", 5);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].index, 0);
    }
}
