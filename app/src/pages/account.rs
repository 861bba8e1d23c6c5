//! The reader's own sessions: where they are signed in, since when and until when, and a way to
//! end one, or all but this one.

use leptos::prelude::*;

use crate::api::{my_sessions, EndOtherSessions, EndSession};
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
            </main>
        </div>
    }
}
