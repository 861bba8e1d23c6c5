use leptos::prelude::*;

use crate::api::Login;

#[component]
pub fn LoginPage() -> impl IntoView {
    let login = ServerAction::<Login>::new();
    let error = move || {
        login.value().get().and_then(|result| result.err()).map(|error| {
            view! { <p class="error" role="alert">{error.to_string()}</p> }
        })
    };
    view! {
        <main class="login">
            <h1>"Tourguide"</h1>
            <p class="lead">"Sign in to chat with the assistant."</p>
            <ActionForm action=login attr:class="login-form">
                <label>
                    "User name"
                    <input name="username" autocomplete="username" required/>
                </label>
                <label>
                    "Password"
                    <input type="password" name="password" autocomplete="current-password" required/>
                </label>
                <button type="submit" disabled=move || login.pending().get()>"Sign in"</button>
            </ActionForm>
            {error}
        </main>
    }
}
