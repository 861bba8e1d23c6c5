//! The accounts page (admins): every account with its role, whether it may approve its own
//! changes and its open sessions; add one, change one, set a password, end its sessions. Plain
//! forms, so it works without WASM too; the server checks the role on every call.

use leptos::prelude::*;

use crate::api::{admin_accounts, AdminAddAccount, AdminEndSessions, AdminSetPassword, AdminSetRole};
use crate::i18n::Text;
use crate::model::AccountView;
use crate::pages::header::Header;
use crate::use_lang;

#[component]
pub fn AdminPage() -> impl IntoView {
    let lang = use_lang();
    let add = ServerAction::<AdminAddAccount>::new();
    let set_role = ServerAction::<AdminSetRole>::new();
    let set_password = ServerAction::<AdminSetPassword>::new();
    let end_sessions = ServerAction::<AdminEndSessions>::new();
    let accounts = Resource::new(
        move || {
            (add.version().get(), set_role.version().get(), set_password.version().get(), end_sessions.version().get())
        },
        |_| admin_accounts(),
    );
    let outcome = move || {
        let errors = [
            add.value().get().and_then(Result::err),
            set_role.value().get().and_then(Result::err),
            set_password.value().get().and_then(Result::err),
            end_sessions.value().get().and_then(Result::err),
        ];
        errors
            .into_iter()
            .flatten()
            .next()
            .map(|error| view! { <p class="error" role="alert">{error.message(lang)}</p> })
    };
    view! {
        <div class="app">
            <Header/>
            <main class="admin">
                <h1>{lang.t(Text::AdminTitle)}</h1>
                <p class="lead">{lang.t(Text::AdminLead)}</p>
                <p><a href="/admin/webhooks">{lang.t(Text::WebhooksTitle)}</a></p>
                {outcome}
                <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                    {move || Suspend::new(async move {
                        match accounts.await {
                            Ok(accounts) => view! {
                                <table class="accounts">
                                    <tbody>
                                        {accounts
                                            .into_iter()
                                            .map(|account| view! { <Account account set_role set_password end_sessions/> })
                                            .collect_view()}
                                    </tbody>
                                </table>
                            }
                            .into_any(),
                            Err(error) => view! { <p class="error" role="alert">{error.message(lang)}</p> }.into_any(),
                        }
                    })}
                </Transition>
                <h2>{lang.t(Text::AdminAdd)}</h2>
                <ActionForm action=add attr:class="add-account">
                    <label>{lang.t(Text::AdminUser)} <input name="username" required autocomplete="off"/></label>
                    <label>
                        {lang.t(Text::AdminPassword)}
                        <input name="password" type="password" required minlength="8" autocomplete="new-password"/>
                    </label>
                    <label class="check"><input type="checkbox" name="admin" value="true"/> {lang.t(Text::AdminRoleAdmin)}</label>
                    <label class="check">
                        <input type="checkbox" name="may_approve_own" value="true"/>
                        {lang.t(Text::AdminMayApproveOwn)}
                    </label>
                    <button type="submit" class="primary">{lang.t(Text::AdminAdd)}</button>
                </ActionForm>
            </main>
        </div>
    }
}

#[component]
fn Account(
    account: AccountView,
    set_role: ServerAction<AdminSetRole>,
    set_password: ServerAction<AdminSetPassword>,
    end_sessions: ServerAction<AdminEndSessions>,
) -> impl IntoView {
    let lang = use_lang();
    view! {
        <tr class="account" data-username=account.username.clone()>
            <th scope="row">
                {account.username.clone()}
                {account.is_you.then(|| view! { " " <span class="muted">{lang.t(Text::AdminYou)}</span> })}
            </th>
            <td>
                <ActionForm action=set_role attr:class="role">
                    <input type="hidden" name="account" value=account.id/>
                    <label class="check">
                        <input type="checkbox" name="admin" value="true" checked=account.admin/>
                        {lang.t(Text::AdminRoleAdmin)}
                    </label>
                    <label class="check">
                        <input type="checkbox" name="may_approve_own" value="true" checked=account.may_approve_own/>
                        {lang.t(Text::AdminMayApproveOwn)}
                    </label>
                    <button type="submit" class="secondary">{lang.t(Text::AdminSave)}</button>
                </ActionForm>
            </td>
            <td>
                <ActionForm action=set_password attr:class="password">
                    <input type="hidden" name="account" value=account.id/>
                    <label>
                        <span class="visually-hidden">{lang.t(Text::AdminNewPassword)}</span>
                        <input
                            name="password"
                            type="password"
                            minlength="8"
                            required
                            autocomplete="new-password"
                            placeholder=lang.t(Text::AdminNewPassword)
                        />
                    </label>
                    <button type="submit" class="secondary">{lang.t(Text::AdminSetPassword)}</button>
                </ActionForm>
            </td>
            <td>
                <ActionForm action=end_sessions attr:class="sessions">
                    <input type="hidden" name="account" value=account.id/>
                    <span class="count">{account.sessions} " " {lang.t(Text::AdminSessions)}</span>
                    " "
                    <button type="submit" class="link">{lang.t(Text::AdminEndSessions)}</button>
                </ActionForm>
            </td>
        </tr>
    }
}
