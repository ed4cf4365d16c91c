//! A pprof profile (`profile.proto`, gzipped) of `jaxpr stats`' figures:
//! one sample per name stack and Python line (or per jaxpr where a file has
//! no source information), its stack the file, the name stack's scopes
//! (`jit(inner)`, `transpose(jvp(dense))`, ...) and the Python line, its
//! values the equations and FLOPs — as JAX's `eqn_count_pprof` dump counts
//! equations per traceback. `pprof` and speedscope open it. The protobuf and gzip encodings are written here by hand: the
//! format is small and stable, and a stored (uncompressed) deflate stream
//! is valid gzip.

use serde_json::Value;
use std::collections::HashMap;

/// Protobuf wire encoding of one message.
#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.0.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.0.push(value as u8);
    }
    fn int(&mut self, field: u32, value: u64) {
        if value != 0 {
            self.varint(u64::from(field) << 3);
            self.varint(value);
        }
    }
    fn bytes(&mut self, field: u32, data: &[u8]) {
        self.varint((u64::from(field) << 3) | 2);
        self.varint(data.len() as u64);
        self.0.extend_from_slice(data);
    }
    fn message(&mut self, field: u32, message: Message) {
        self.bytes(field, &message.0);
    }
    /// A packed repeated integer field.
    fn packed(&mut self, field: u32, values: &[u64]) {
        let mut inner = Message::default();
        for &v in values {
            inner.varint(v);
        }
        self.bytes(field, &inner.0);
    }
}

/// The string table: index 0 is the empty string.
struct Strings {
    table: Vec<String>,
    index: HashMap<String, u64>,
}

impl Strings {
    fn new() -> Strings {
        Strings {
            table: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
    }
    fn id(&mut self, s: &str) -> u64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as u64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// A frame: a function name, its file and line.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Frame {
    name: String,
    file: String,
    line: i64,
}

/// A Python line (`{"file", "line", "function"}`) as a frame.
fn python_frame(line: &Value) -> Frame {
    let file = line["file"].as_str().unwrap_or("").to_string();
    let number = line["line"].as_i64().unwrap_or(0);
    let function = line["function"].as_str().unwrap_or("");
    let name = if function.is_empty() {
        format!("{file}:{number}")
    } else {
        format!("{function} {file}:{number}")
    };
    Frame {
        name,
        file,
        line: number,
    }
}

/// The profile of the files `jaxpr stats` computed (its JSON objects).
pub fn profile(files: &[Value]) -> Vec<u8> {
    let mut strings = Strings::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut frame_ids: HashMap<Frame, u64> = HashMap::new();
    let mut samples: Vec<(Vec<u64>, [u64; 2])> = Vec::new();
    let mut frame_id = |frame: Frame, frames: &mut Vec<Frame>| -> u64 {
        *frame_ids.entry(frame.clone()).or_insert_with(|| {
            frames.push(frame);
            frames.len() as u64
        })
    };
    for file in files {
        let path = file["file"].as_str().unwrap_or("").to_string();
        let root = frame_id(
            Frame {
                name: path.clone(),
                file: path.clone(),
                line: 0,
            },
            &mut frames,
        );
        let scopes = file["scopes"].as_array().cloned().unwrap_or_default();
        if scopes.is_empty() {
            for j in file["jaxprs"].as_array().into_iter().flatten() {
                // Nested jaxprs are inside their callers' totals; leaves only.
                if j["name"] != "main" && !j["name"].as_str().unwrap_or("").starts_with("let ") {
                    continue;
                }
                let leaf = frame_id(
                    Frame {
                        name: j["name"].as_str().unwrap_or("").to_string(),
                        file: path.clone(),
                        line: j["line"].as_i64().unwrap_or(0),
                    },
                    &mut frames,
                );
                let flops = j["cost"]["flops"].as_u64().unwrap_or(0);
                samples.push((
                    vec![leaf, root],
                    [j["equations"].as_u64().unwrap_or(0), flops],
                ));
            }
        }
        for scope in scopes {
            // Leaf first: the Python line, the scopes innermost first, the file.
            let mut stack = Vec::new();
            if !scope["python_line"].is_null() {
                stack.push(frame_id(python_frame(&scope["python_line"]), &mut frames));
            }
            for name in scope["name_stack"].as_array().into_iter().flatten().rev() {
                let frame = Frame {
                    name: name.as_str().unwrap_or("").to_string(),
                    file: path.clone(),
                    line: 0,
                };
                stack.push(frame_id(frame, &mut frames));
            }
            stack.push(root);
            let flops = scope["cost"]["flops"].as_u64().unwrap_or(0);
            samples.push((stack, [scope["equations"].as_u64().unwrap_or(0), flops]));
        }
    }
    let mut profile = Message::default();
    for (kind, unit) in [("equations", "count"), ("flops", "count")] {
        let mut value_type = Message::default();
        value_type.int(1, strings.id(kind));
        value_type.int(2, strings.id(unit));
        profile.message(1, value_type);
    }
    for (locations, values) in &samples {
        let mut sample = Message::default();
        sample.packed(1, locations);
        sample.packed(2, values);
        profile.message(2, sample);
    }
    for (i, frame) in frames.iter().enumerate() {
        let id = i as u64 + 1;
        let mut line = Message::default();
        line.int(1, id);
        line.int(2, frame.line.max(0) as u64);
        let mut location = Message::default();
        location.int(1, id);
        location.message(4, line);
        profile.message(4, location);
    }
    for (i, frame) in frames.iter().enumerate() {
        let mut function = Message::default();
        function.int(1, i as u64 + 1);
        function.int(2, strings.id(&frame.name));
        function.int(3, strings.id(&frame.name));
        function.int(4, strings.id(&frame.file));
        function.int(5, frame.line.max(0) as u64);
        profile.message(5, function);
    }
    for s in &strings.table {
        profile.bytes(6, s.as_bytes());
    }
    profile.0
}

/// CRC-32 (IEEE), as gzip's trailer needs.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// `data` as a gzip stream of stored deflate blocks.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    let mut chunks = data.chunks(0xffff).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}
