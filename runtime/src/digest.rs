//! Turn digests: bind a decision or an answer to the exact turn it was shown.
//!
//! The digest is not a secret; it catches staleness. One function per pause kind, shared by the
//! code that renders a pause and the code that verifies a decision, so the two can never drift.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::message::ToolCall;

/// Serialises with object keys sorted and no whitespace, so equal values give equal bytes
/// whatever order their keys were built in.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                if let Some(inner) = map.get(key) {
                    write_canonical(inner, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(text) => write_string(text, out),
        // Scalars other than strings have a single serde_json rendering already.
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(text: &str, out: &mut String) {
    // serde_json's string escaping is deterministic; reuse it instead of re-implementing JSON.
    out.push_str(&Value::String(text.to_string()).to_string());
}

fn calls_value(calls: &[ToolCall]) -> Value {
    Value::Array(
        calls.iter().map(|call| json!({ "id": call.id, "name": call.name, "arguments": call.arguments })).collect(),
    )
}

fn sha256_hex(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut hex = String::with_capacity(hash.len() * 2);
    for byte in hash {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

/// Digest of an approval pause: the whole pending turn.
pub fn approval_digest(pending_calls: &[ToolCall]) -> String {
    let value = json!({ "pendingCalls": calls_value(pending_calls) });
    sha256_hex(canonical_json(&value).as_bytes())
}

/// Digest of an approval pause whose writes show previews: the pending turn and what each preview
/// showed, so a decision made on a preview that was since made again is stale.
pub fn approval_digest_with_previews(pending_calls: &[ToolCall], previews: &Value) -> String {
    let value = json!({ "pendingCalls": calls_value(pending_calls), "previews": previews });
    sha256_hex(canonical_json(&value).as_bytes())
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
    let mut value = json!({
        "pendingCalls": calls_value(pending_calls),
        "inputToolName": input_tool,
        "inputCallId": input_call_id,
        "inputSchema": schema,
    });
    if let Some(asked) = asked {
        value["askedState"] = asked.clone();
    }
    sha256_hex(canonical_json(&value).as_bytes())
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

    fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
        ToolCall { id: id.into(), name: name.into(), arguments }
    }

    #[test]
    fn canonical_json_sorts_keys_and_drops_whitespace() {
        let a: Value = serde_json::from_str(r#"{ "b": 1, "a": {"y": [1, 2], "x": "é\"q"} }"#).unwrap();
        assert_eq!(canonical_json(&a), r#"{"a":{"x":"é\"q","y":[1,2]},"b":1}"#);
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
