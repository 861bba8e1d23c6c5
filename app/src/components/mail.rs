//! The reader's e-mail settings, a section of the account page: the address and the opt-in for
//! mail of the runs that wait for them. A plain form, so it works without WASM.

use leptos::prelude::*;

use crate::api::{mail_settings, SetMail};
use crate::i18n::Text;
use crate::use_lang;

#[component]
pub fn MailSettings() -> impl IntoView {
    let lang = use_lang();
    let save = ServerAction::<SetMail>::new();
    let settings = Resource::new(move || save.version().get(), |_| mail_settings());
    view! {
        <section class="mail-settings" aria-labelledby="mail-title">
            <h2 id="mail-title">{lang.t(Text::MailHeading)}</h2>
            <p class="lead">{lang.t(Text::MailLead)}</p>
            {move || {
                save.value().get().and_then(Result::err).map(|error| view! { <p class="error" role="alert">{error.message(lang)}</p> })
            }}
            <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                {move || Suspend::new(async move {
                    match settings.await {
                        Ok(settings) => view! {
                            {(!settings.available).then(|| view! { <p class="muted mail-unavailable">{lang.t(Text::MailUnavailable)}</p> })}
                            <ActionForm action=save attr:class="mail-form">
                                <label>
                                    {lang.t(Text::MailAddress)}
                                    <input type="email" name="address" autocomplete="email" value=settings.address/>
                                </label>
                                <label class="check">
                                    <input type="checkbox" name="notify" value="true" checked=settings.notify/>
                                    {lang.t(Text::MailNotify)}
                                </label>
                                <button type="submit" class="secondary">{lang.t(Text::MailSave)}</button>
                            </ActionForm>
                        }
                        .into_any(),
                        Err(error) => view! { <p class="error" role="alert">{error.message(lang)}</p> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}
