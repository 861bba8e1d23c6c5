//! The reader's own sessions: where they are signed in, since when and until when, and a way to
//! end one, or all but this one.

use leptos::prelude::*;

use crate::api::{my_sessions, EndOtherSessions, EndSession};
use crate::components::mail::MailSettings;
use crate::components::policies::AlwaysAllowed;
use crate::components::waiting::NotifyToggle;
use crate::i18n::Text;
use crate::pages::header::Header;
use crate::use_lang;

#[component]
pub fn AccountPage() -> impl IntoView {
    let lang = use_lang();
    let end = ServerAction::<EndSession>::new();
    let end_others = ServerAction::<EndOtherSessions>::new();
    let sessions = Resource::new(move || (end.version().get(), end_others.version().get()), |_| my_sessions());
    view! {
        <div class="app">
            <Header/>
            <main class="account">
                <h1>{lang.t(Text::SessionsTitle)}</h1>
                <p class="lead">{lang.t(Text::SessionsLead)}</p>
                {move || {
                    end.value().get().and_then(Result::err).map(|error| view! { <p class="error" role="alert">{error.message(lang)}</p> })
                }}
                <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                    {move || Suspend::new(async move {
                        match sessions.await {
                            Ok(sessions) => view! {
                                <ul class="sessions">
                                    {sessions
                                        .into_iter()
                                        .map(|session| {
                                            let handle = session.handle.clone();
                                            let agent = session.agent.clone().unwrap_or_else(|| lang.t(Text::SessionUnknownBrowser).to_string());
                                            view! {
                                                <li class="session" class:current=session.current data-handle=session.handle.clone()>
                                                    <span class="agent">{agent}</span>
                                                    {session.current.then(|| view! { <strong class="this">{lang.t(Text::SessionThis)}</strong> })}
                                                    <span class="when">
                                                        {lang.t(Text::SessionBegan)} " " {session.began} " · " {lang.t(Text::SessionEnds)} " "
                                                        {session.ends}
                                                    </span>
                                                    {(!session.current).then(|| view! {
                                                        <ActionForm action=end attr:class="end-session">
                                                            <input type="hidden" name="handle" value=handle.clone()/>
                                                            <button type="submit" class="secondary">{lang.t(Text::SessionEnd)}</button>
                                                        </ActionForm>
                                                    })}
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
                <ActionForm action=end_others attr:class="end-others">
                    <button type="submit" class="secondary">{lang.t(Text::SessionEndOthers)}</button>
                </ActionForm>
                <ThemeChoice/>
                <NotifyToggle/>
                <MailSettings/>
                <AlwaysAllowed/>
            </main>
        </div>
    }
}

/// Light, dark or the system's: kept in this browser and applied by the page's script
/// (`PAGE_SCRIPT` in the crate root), which also shows the choice; without JS it stays hidden and
/// the system's setting applies.
#[component]
fn ThemeChoice() -> impl IntoView {
    let lang = use_lang();
    let option = move |value: &'static str, text: Text| {
        view! {
            <label class="check">
                <input type="radio" name="theme" value=value checked={value == "system"}/>
                {lang.t(text)}
            </label>
        }
    };
    view! {
        <section class="theme-choice" aria-labelledby="theme-title" hidden>
            <h2 id="theme-title">{lang.t(Text::ThemeHeading)}</h2>
            <fieldset>
                <legend>{lang.t(Text::ThemeLead)}</legend>
                {option("light", Text::ThemeLight)}
                {option("dark", Text::ThemeDark)}
                {option("system", Text::ThemeSystem)}
            </fieldset>
        </section>
    }
}
