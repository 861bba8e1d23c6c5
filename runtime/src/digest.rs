//! Turn digests: bind a decision or an answer to the exact turn it was shown.
//!
//! The digest is not a secret; it catches staleness. One function per pause kind, shared by the
//! code that renders a pause and the code that verifies a decision, so the two can never drift.

use std::io::Write;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::message::ToolCall;

/// Serialises with object keys sorted and no whitespace, so equal values give equal bytes
/// whatever order their keys were built in.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// The canonical bytes go straight into the hash or the buffer, without a string per value: a
/// digest is made for every question and card shown and every answer and decision checked, and
/// building the text first took three quarters of its 15.6 µs.
fn write_canonical(value: &Value, out: &mut impl Write) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            put(out, b"{");
            for (index, (key, inner)) in entries.into_iter().enumerate() {
                if index > 0 {
                    put(out, b",");
                }
                write_scalar(key, out);
                put(out, b":");
                write_canonical(inner, out);
            }
            put(out, b"}");
        }
        Value::Array(items) => {
            put(out, b"[");
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    put(out, b",");
                }
                write_canonical(item, out);
            }
            put(out, b"]");
        }
        // A string's escaping and a scalar's one rendering are serde_json's own, as before.
        scalar => write_scalar(scalar, out),
    }
}

fn put(out: &mut impl Write, bytes: &[u8]) {
    out.write_all(bytes).expect("a hash or a buffer takes every byte");
}

fn write_scalar<T: serde::Serialize + ?Sized>(value: &T, out: &mut impl Write) {
    serde_json::to_writer(out, value).expect("a hash or a buffer takes every byte");
}

/// `[{"arguments":…,"id":…,"name":…},…]`, the calls as the canonical form of their JSON has them.
fn write_calls(calls: &[ToolCall], out: &mut impl Write) {
    put(out, b"[");
    for (index, call) in calls.iter().enumerate() {
        if index > 0 {
            put(out, b",");
        }
        put(out, b"{\"arguments\":");
        write_canonical(&call.arguments, out);
        put(out, b",\"id\":");
        write_scalar(&call.id, out);
        put(out, b",\"name\":");
        write_scalar(&call.name, out);
        put(out, b"}");
    }
    put(out, b"]");
}

/// The SHA-256 of what `write` writes, in lowercase hex. Each digest writes its object's keys in
/// sorted order itself, so nothing is copied into a `Value` first.
fn digest_of(write: impl FnOnce(&mut Sha256)) -> String {
    // The hash is an `io::Write` itself (the `digest` crate's), so the bytes go straight in.
    let mut hashing = Sha256::new();
    write(&mut hashing);
    format!("{:x}", hashing.finalize())
}

/// Digest of an approval pause: the whole pending turn.
pub fn approval_digest(pending_calls: &[ToolCall]) -> String {
    digest_of(|out| {
        put(out, b"{\"pendingCalls\":");
        write_calls(pending_calls, out);
        put(out, b"}");
    })
}

/// Digest of an approval pause whose writes show previews: the pending turn and what each preview
/// showed, so a decision made on a preview that was since made again is stale.
pub fn approval_digest_with_previews(pending_calls: &[ToolCall], previews: &Value) -> String {
    digest_of(|out| {
        put(out, b"{\"pendingCalls\":");
        write_calls(pending_calls, out);
        put(out, b",\"previews\":");
        write_canonical(previews, out);
        put(out, b"}");
    })
}

/// Digest of an input pause: the pending turn, which call asks, and the schema it asks with. The
/// schema is included so a submission validated against an old question can never resume a new one;
/// so is the state of a tool that asked while it ran, so an answer to one of its questions never
/// answers the next one with the same schema.
pub fn input_digest(
    pending_calls: &[ToolCall],
    input_tool: &str,
    input_call_id: &str,
    schema: &Value,
    asked: Option<&Value>,
) -> String {
    digest_of(|out| {
        put(out, b"{");
        if let Some(asked) = asked {
            put(out, b"\"askedState\":");
            write_canonical(asked, out);
            put(out, b",");
        }
        put(out, b"\"inputCallId\":");
        write_scalar(input_call_id, out);
        put(out, b",\"inputSchema\":");
        write_canonical(schema, out);
        put(out, b",\"inputToolName\":");
        write_scalar(input_tool, out);
        put(out, b",\"pendingCalls\":");
        write_calls(pending_calls, out);
        put(out, b"}");
    })
}

/// Compares in time independent of where the inputs differ, so response timing reveals nothing
/// about how much of a guessed digest was right. A missing or empty digest never matches.
pub fn digests_match(expected: &str, given: Option<&str>) -> bool {
    let Some(given) = given else { return false };
    if given.is_empty() || expected.len() != given.len() {
        return false;
    }
    expected.bytes().zip(given.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
        ToolCall { id: id.into(), name: name.into(), arguments }
    }

    #[test]
    fn canonical_json_sorts_keys_and_drops_whitespace() {
        let a: Value = serde_json::from_str(r#"{ "b": 1, "a": {"y": [1, 2], "x": "é\"q"} }"#).unwrap();
        assert_eq!(canonical_json(&a), r#"{"a":{"x":"é\"q","y":[1,2]},"b":1}"#);
    }

    /// The digests write their canonical text straight into the hash; it must be the hash of the
    /// canonical JSON of the pause's object, byte for byte, or every digest a page holds would go
    /// stale with a new version.
    #[test]
    fn a_digest_is_the_sha256_of_the_canonical_text() {
        let hash = |value: Value| -> String {
            Sha256::digest(canonical_json(&value).as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect()
        };
        let calls = [
            call("c1", "ask_choice", json!({"question": "Ünïcode \"q\"\n", "options": ["a", 1.5, null, true]})),
            call("c2", "write", json!({"z": {"b": [], "a": {}}, "a": -3})),
        ];
        let calls_json = json!([
            { "id": "c1", "name": "ask_choice", "arguments": calls[0].arguments },
            { "id": "c2", "name": "write", "arguments": calls[1].arguments },
        ]);
        let schema = json!({"type": "object", "properties": {"answer": {"enum": ["a", "b"]}}});
        let asked = json!({"round": 2, "at": "x"});
        let input = json!({ "pendingCalls": calls_json, "inputToolName": "ask_choice", "inputCallId": "c1",
                            "inputSchema": schema });
        assert_eq!(input_digest(&calls, "ask_choice", "c1", &schema, None), hash(input.clone()));
        let mut asking = input;
        asking["askedState"] = asked.clone();
        assert_eq!(input_digest(&calls, "ask_choice", "c1", &schema, Some(&asked)), hash(asking));
        assert_eq!(approval_digest(&calls), hash(json!({ "pendingCalls": calls_json })));
        let previews = json!([{ "call_id": "c2", "preview": { "b": 1, "a": 2 } }]);
        assert_eq!(
            approval_digest_with_previews(&calls, &previews),
            hash(json!({ "pendingCalls": calls_json, "previews": previews }))
        );
        // Computed apart from this code (Python's hashlib on '{"pendingCalls":[]}').
        assert_eq!(approval_digest(&[]), "a0e8f84ff076a35d1d1d1200a6cfae4ec72555e4e16eb17b15be1b98cacd9166");
    }

    #[test]
    fn approval_digest_ignores_key_order_but_not_content() {
        let one = approval_digest(&[call("c1", "write", json!({"a": 1, "b": 2}))]);
        let two = approval_digest(&[call("c1", "write", serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap())]);
        assert_eq!(one, two);
        assert_eq!(one.len(), 64);
        let changed = approval_digest(&[call("c1", "write", json!({"a": 1, "b": 3}))]);
        assert_ne!(one, changed);
        let other_id = approval_digest(&[call("c2", "write", json!({"a": 1, "b": 2}))]);
        assert_ne!(one, other_id);
    }

    #[test]
    fn input_digest_covers_the_schema_and_the_asking_call() {
        let calls = [call("c1", "ask_choice", json!({"question": "Q", "options": ["a", "b"]}))];
        let schema = json!({"type": "object", "properties": {"answer": {"enum": ["a", "b"]}}});
        let base = input_digest(&calls, "ask_choice", "c1", &schema, None);
        let changed_schema = json!({"type": "object", "properties": {"answer": {"enum": ["a", "c"]}}});
        assert_ne!(base, input_digest(&calls, "ask_choice", "c1", &changed_schema, None));
        assert_ne!(base, input_digest(&calls, "other", "c1", &schema, None));
        assert_ne!(base, input_digest(&calls, "ask_choice", "c9", &schema, None));
        // Two questions a tool asks while it runs, with the same schema, are different questions.
        let first = input_digest(&calls, "ask_choice", "c1", &schema, Some(&json!({ "round": 1 })));
        assert_ne!(base, first);
        assert_ne!(first, input_digest(&calls, "ask_choice", "c1", &schema, Some(&json!({ "round": 2 }))));
        assert_ne!(base, approval_digest(&calls));
    }

    #[test]
    fn digests_match_refuses_missing_empty_and_different() {
        let digest = approval_digest(&[]);
        assert!(digests_match(&digest, Some(&digest)));
        assert!(!digests_match(&digest, None));
        assert!(!digests_match(&digest, Some("")));
        assert!(!digests_match(&digest, Some(&digest[..63])));
        let mut wrong = digest.clone();
        wrong.replace_range(63.., if digest.ends_with('0') { "1" } else { "0" });
        assert!(!digests_match(&digest, Some(&wrong)));
    }
}
