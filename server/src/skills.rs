//! Skills a conversation can be started with, and which of them make it a process run.

use crate::conversation::Conversation;

/// A skill: instructions for the model, and whether it guides the reader through a process (then
/// a write's card offers "Andere Variante" and "Überspringen", and a new message cancels the
/// waiting run).
#[derive(Debug, Clone)]
pub struct Skill {
    pub id: &'static str,
    pub process: bool,
    pub instructions: &'static str,
}

/// Whether a conversation is a guided process run. One trait so the chat asks one question in one
/// place, wherever the answer comes from.
pub trait ProcessRunDetector: Send + Sync {
    fn is_process_run(&self, conversation: &Conversation) -> bool;
}

#[derive(Debug, Clone)]
pub struct SkillCatalogue {
    skills: Vec<Skill>,
}

pub const PAGE_TOUR: &str = "page-tour";

impl Default for SkillCatalogue {
    fn default() -> Self {
        SkillCatalogue {
            skills: vec![Skill {
                id: PAGE_TOUR,
                process: true,
                instructions: "You guide the user through improving one page of their website, one point at a \
                     time. Analyse the page (analyse_page), ask which point to start with (ask_choice), then for \
                     one point at a time get a proposal (suggest_change) and apply it with the write tool it names \
                     (apply_with). The user approves, asks for another variant (ask suggest_change for the next \
                     variant) or skips it (go on with the next point). Point numbers change after a change is \
                     applied: analyse again before the next point. At the end ask (ask_choice) whether they want \
                     a summary or the next page.",
            }],
        }
    }
}

impl SkillCatalogue {
    pub fn find(&self, id: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.id == id)
    }
}

impl ProcessRunDetector for SkillCatalogue {
    fn is_process_run(&self, conversation: &Conversation) -> bool {
        conversation.skill.as_deref().and_then(|id| self.find(id)).is_some_and(|skill| skill.process)
    }
}
