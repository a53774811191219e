//! Server-sent events as a streamable HTTP server sends them: the `data`
//! lines of each event joined, with its `id` (to resume after) and the
//! `retry` the server asks for.

/// One event's worth of what the stream said.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Event {
    pub data: String,
    pub id: Option<String>,
    pub retry_ms: Option<u64>,
}

/// Reads events from the bytes of a stream as they come, in any chunks.
#[derive(Default)]
pub(super) struct Events {
    pending: Vec<u8>,
    /// How much of `pending` holds no line end: a long line is scanned once.
    scanned: usize,
    event: Event,
    has_data: bool,
}

impl Events {
    /// The events `chunk` completes. An event's lines longer than `max`
    /// bytes in all fail the stream (`Err`): a server's answer has a cap.
    pub(super) fn feed(&mut self, chunk: &[u8], max: usize) -> Result<Vec<Event>, String> {
        self.pending.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut start = 0;
        let mut from = self.scanned;
        while let Some(end) = memchr::memchr(b'\n', &self.pending[from..]).map(|e| e + from - start)
        {
            let line = &self.pending[start..start + end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = String::from_utf8_lossy(line).into_owned();
            start += end + 1;
            from = start;
            if let Some(event) = self.line(&line) {
                out.push(event);
            }
        }
        self.pending.drain(..start);
        self.scanned = self.pending.len();
        if self.pending.len() + self.event.data.len() > max {
            return Err(format!("an event of the stream is over {max} bytes"));
        }
        Ok(out)
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            let event = std::mem::take(&mut self.event);
            let had = std::mem::take(&mut self.has_data);
            // An event without data still moves the id and the retry on.
            return (had || event.id.is_some() || event.retry_ms.is_some()).then_some(event);
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.event.data.push('\n');
                }
                self.event.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.event.id = Some(value.to_owned()),
            "retry" => self.event.retry_ms = value.parse().ok(),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_across_chunks_with_their_ids_and_retries() {
        let mut events = Events::default();
        let mut got = events.feed(b"id: 1\nretry: 500\n", 1024).unwrap();
        assert!(got.is_empty());
        got.extend(
            events
                .feed(b"data: {\"a\":\r\ndata: 1}\r\n\r\n: ping\n\n", 1024)
                .unwrap(),
        );
        got.extend(
            events
                .feed(b"event: message\ndata:{}\n\nid: 2\n\n", 1024)
                .unwrap(),
        );
        assert_eq!(
            got,
            vec![
                Event {
                    data: "{\"a\":\n1}".into(),
                    id: Some("1".into()),
                    retry_ms: Some(500)
                },
                Event {
                    data: "{}".into(),
                    ..Event::default()
                },
                Event {
                    id: Some("2".into()),
                    ..Event::default()
                },
            ]
        );
        assert!(events.feed(&[b'x'; 2000], 1024).is_err());
    }
}
