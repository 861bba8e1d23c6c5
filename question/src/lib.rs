//! The question a tool asks while its run waits: its JSON Schema checked for use (`schema`), read
//! as reply buttons or a small form, and an answer checked against that reading (`form`).
//!
//! A crate of its own with nothing but serde and the schema engine below it: the runtime (which
//! validates), the app (which renders and checks) and the fuzz target share it, and the fuzz
//! target builds in a minute instead of compiling the web stack and the database drivers.

pub mod form;
#[cfg(feature = "schema")]
pub mod schema;

use serde_json::{Number, Value};

/// Strict equality, but numbers by value: 1 and 1.0 are the same option, 1 and "1" are not. The
/// chat's check (`form`) and the runtime's (`schema`) must agree on this, so there is one copy.
pub(crate) fn same_value(offered: &Value, given: &Value) -> bool {
    match (offered, given) {
        (Value::Number(a), Value::Number(b)) => same_number(a, b),
        _ => offered == given,
    }
}

/// Exact: integers as integers (above 2^53 two integers may share one f64), an integer and a
/// float only when the float is that whole number, floats as floats.
fn same_number(a: &Number, b: &Number) -> bool {
    let whole = |n: &Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    match (whole(a), whole(b)) {
        (Some(x), Some(y)) => x == y,
        (None, None) => a.as_f64() == b.as_f64(),
        (Some(x), None) => b.as_f64().is_some_and(|f| f.fract() == 0.0 && f == x as f64 && f as i128 == x),
        (None, Some(y)) => a.as_f64().is_some_and(|f| f.fract() == 0.0 && f == y as f64 && f as i128 == y),
    }
}
