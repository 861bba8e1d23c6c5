use leptos::prelude::*;

use crate::api::Login;
use crate::i18n::Text;
use crate::use_lang;

#[component]
pub fn LoginPage() -> impl IntoView {
    let lang = use_lang();
    let login = ServerAction::<Login>::new();
    let error = move || {
        login.value().get().and_then(|result| result.err()).map(|error| {
            view! { <p class="error" role="alert">{error.message(lang)}</p> }
        })
    };
    view! {
        <main class="login">
            <h1>{lang.t(Text::AppName)}</h1>
            <p class="lead">{lang.t(Text::SignInLead)}</p>
            <ActionForm action=login attr:class="login-form">
                <label>
                    {lang.t(Text::UserName)}
                    <input name="username" autocomplete="username" required/>
                </label>
                <label>
                    {lang.t(Text::Password)}
                    <input type="password" name="password" autocomplete="current-password" required/>
                </label>
                <button type="submit" disabled=move || login.pending().get()>{lang.t(Text::SignIn)}</button>
            </ActionForm>
            {error}
        </main>
    }
}
