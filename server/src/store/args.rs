//! The values a statement of the store binds when its text is made at run time (a guarded write's
//! steps, an audit row): typed, so one list can be bound on either backend.

/// A value bound to a guarded UPDATE.
#[derive(Debug, Clone, Copy)]
pub(super) enum Arg<'a> {
    Text(&'a str),
    MaybeText(Option<&'a str>),
    Int(i64),
    MaybeInt(Option<i64>),
    Bool(bool),
}

/// Binds `args` in order. A macro, not a function: the query's type differs per backend.
macro_rules! bind_args {
    ($query:expr, $args:expr) => {{
        let mut query = $query;
        for arg in $args {
            query = match *arg {
                $crate::store::args::Arg::Text(value) => query.bind(value),
                $crate::store::args::Arg::MaybeText(value) => query.bind(value),
                $crate::store::args::Arg::Int(value) => query.bind(value),
                $crate::store::args::Arg::MaybeInt(value) => query.bind(value),
                $crate::store::args::Arg::Bool(value) => query.bind(value),
            };
        }
        query
    }};
}
pub(super) use bind_args;
