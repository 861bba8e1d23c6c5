//! What an MCP tool does to the world, read from its annotations the strict way: only a tool that
//! says it reads is a read, only one that says it is neither destructive nor repeated is an
//! idempotent write, and everything else, a tool without annotations among them (the spec's
//! defaults), is a write that may do harm twice, so it goes through an approval card.

use rmcp::model::ToolAnnotations;
use runtime::ToolEffect;

pub fn effect_of(annotations: Option<&ToolAnnotations>) -> ToolEffect {
    let Some(annotations) = annotations else { return ToolEffect::NonIdempotentWrite };
    if annotations.read_only_hint == Some(true) {
        return ToolEffect::ReadOnly;
    }
    if annotations.destructive_hint == Some(false) && annotations.idempotent_hint == Some(true) {
        return ToolEffect::IdempotentWrite;
    }
    ToolEffect::NonIdempotentWrite
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(read_only: Option<bool>, destructive: Option<bool>, idempotent: Option<bool>) -> ToolAnnotations {
        let mut annotations = ToolAnnotations::default();
        annotations.read_only_hint = read_only;
        annotations.destructive_hint = destructive;
        annotations.idempotent_hint = idempotent;
        annotations
    }

    #[test]
    fn only_what_a_tool_declares_makes_it_harmless() {
        assert_eq!(effect_of(None), ToolEffect::NonIdempotentWrite);
        assert_eq!(effect_of(Some(&hints(None, None, None))), ToolEffect::NonIdempotentWrite);
        assert_eq!(effect_of(Some(&hints(Some(true), None, None))), ToolEffect::ReadOnly);
        assert_eq!(effect_of(Some(&hints(Some(false), Some(false), Some(true)))), ToolEffect::IdempotentWrite);
        // Idempotent but possibly destructive (the default): still a write that needs care.
        assert_eq!(effect_of(Some(&hints(None, None, Some(true)))), ToolEffect::NonIdempotentWrite);
        assert_eq!(effect_of(Some(&hints(Some(false), Some(false), Some(false)))), ToolEffect::NonIdempotentWrite);
    }
}
