use leptos::prelude::*;

use crate::api::Login;
use crate::form_action::{FormAction, PostForm};
use crate::i18n::Text;
use crate::use_lang;

#[component]
pub fn LoginPage() -> impl IntoView {
    let lang = use_lang();
    view! {
        <main class="login">
            <h1>{lang.t(Text::AppName)}</h1>
            <p class="lead">{lang.t(Text::SignInLead)}</p>
            <LoginForm/>
        </main>
    }
}

/// The form with its refusal: the part of the sign-in page the browser runs.
#[island]
fn LoginForm() -> impl IntoView {
    provide_context(crate::initial_lang());
    let lang = use_lang();
    let login = FormAction::new::<Login>();
    let error = move || {
        login.value().get().and_then(|result| result.err()).map(|error| {
            view! { <p class="error" role="alert">{error.message(lang)}</p> }
        })
    };
    view! {
            <PostForm action=login class="login-form">
                <label>
                    {lang.t(Text::UserName)}
                    <input name="username" autocomplete="username" required/>
                </label>
                <label>
                    {lang.t(Text::Password)}
                    <input type="password" name="password" autocomplete="current-password" required/>
                </label>
                <button type="submit" disabled=move || login.pending().get()>{lang.t(Text::SignIn)}</button>
            </PostForm>
            {error}
    }
}
