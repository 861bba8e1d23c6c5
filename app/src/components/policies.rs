//! The reader's standing approvals ("always allow"), each with a way to revoke it: a section of
//! the account page. Plain forms, so it works without WASM.

use leptos::prelude::*;

use crate::api::{policies, RevokePolicy};
use crate::i18n::Text;
use crate::use_lang;

#[component]
pub fn AlwaysAllowed() -> impl IntoView {
    let lang = use_lang();
    let revoke = ServerAction::<RevokePolicy>::new();
    let listed = Resource::new(move || revoke.version().get(), |_| policies());
    view! {
        <section class="policies" aria-labelledby="policies-title">
            <h2 id="policies-title">{lang.t(Text::PoliciesTitle)}</h2>
            {move || {
                revoke.value().get().and_then(Result::err).map(|error| view! { <p class="error" role="alert">{error.message(lang)}</p> })
            }}
            <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                {move || Suspend::new(async move {
                    match listed.await {
                        Ok(policies) if policies.is_empty() => view! { <p class="muted">{lang.t(Text::PoliciesNone)}</p> }.into_any(),
                        Ok(policies) => view! {
                            <ul class="policy-list">
                                {policies
                                    .into_iter()
                                    .map(|policy| {
                                        let scope = match &policy.conversation {
                                            Some((_, title)) => lang.t(Text::PolicyInConversation).replace("{}", title),
                                            None => lang.t(Text::PolicyEverywhere).to_string(),
                                        };
                                        view! {
                                            <li class="policy">
                                                <code class="tool">{policy.tool}</code>
                                                " "
                                                <span class="scope">{scope}</span>
                                                <ActionForm action=revoke attr:class="revoke-policy">
                                                    <input type="hidden" name="policy" value=policy.id.to_string()/>
                                                    <button type="submit" class="secondary">{lang.t(Text::PolicyRevoke)}</button>
                                                </ActionForm>
                                            </li>
                                        }
                                    })
                                    .collect_view()}
                            </ul>
                        }
                        .into_any(),
                        Err(error) => view! { <p class="error" role="alert">{error.message(lang)}</p> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}
