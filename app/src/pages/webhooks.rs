//! The webhooks page (admins): the webhooks with their events and masked secrets, adding one
//! (the secret it will get is shown on the form, the only time it is shown whole), removing one,
//! and the newest deliveries with "Send again". Plain forms, so it works without WASM; the
//! server checks the role on every call.

use leptos::prelude::*;

use crate::api::{admin_webhooks, AdminAddWebhook, AdminRemoveWebhook, AdminResendDelivery};
use crate::i18n::Text;
use crate::model::{DeliveryView, WebhookView};
use crate::pages::header::Header;
use crate::use_lang;

/// The form's checkbox for each kind of event (a field each: a plain form cannot post a list).
const EVENT_FIELDS: [(&str, &str); 5] = [
    ("run.waiting", "waiting"),
    ("run.decided", "decided"),
    ("run.expired", "expired"),
    ("run.failed", "failed"),
    ("run.reminder", "reminder"),
];

#[component]
pub fn WebhooksPage() -> impl IntoView {
    let lang = use_lang();
    let add = ServerAction::<AdminAddWebhook>::new();
    let remove = ServerAction::<AdminRemoveWebhook>::new();
    let resend = ServerAction::<AdminResendDelivery>::new();
    let page = Resource::new(
        move || (add.version().get(), remove.version().get(), resend.version().get()),
        |_| admin_webhooks(),
    );
    let outcome = move || {
        let errors = [
            add.value().get().and_then(Result::err),
            remove.value().get().and_then(Result::err),
            resend.value().get().and_then(Result::err),
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
            <main class="admin webhooks">
                <h1>{lang.t(Text::WebhooksTitle)}</h1>
                <p class="lead">{lang.t(Text::WebhooksLead)}</p>
                {outcome}
                <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                    {move || Suspend::new(async move {
                        match page.await {
                            Ok(page) => view! {
                                {if page.webhooks.is_empty() {
                                    view! { <p class="muted">{lang.t(Text::WebhookNone)}</p> }.into_any()
                                } else {
                                    view! {
                                        <table class="accounts webhook-list">
                                            <tbody>
                                                {page.webhooks.into_iter().map(|webhook| view! { <Webhook webhook remove/> }).collect_view()}
                                            </tbody>
                                        </table>
                                    }
                                    .into_any()
                                }}
                                <h2>{lang.t(Text::WebhookAdd)}</h2>
                                <ActionForm action=add attr:class="add-webhook">
                                    <label>
                                        {lang.t(Text::WebhookUrl)}
                                        " "
                                        <input name="url" type="url" required autocomplete="off" placeholder="https://"/>
                                    </label>
                                    <fieldset class="events">
                                        <legend>{lang.t(Text::WebhookEvents)}</legend>
                                        {EVENT_FIELDS
                                            .into_iter()
                                            .map(|(kind, field)| view! {
                                                <label class="check">
                                                    <input type="checkbox" name=field value="true" checked=kind != "run.reminder"/>
                                                    <code>{kind}</code>
                                                </label>
                                            })
                                            .collect_view()}
                                    </fieldset>
                                    <p class="secret">
                                        {lang.t(Text::WebhookSecretOnce)}
                                        " "
                                        <code class="new-secret">{page.new_secret.clone()}</code>
                                    </p>
                                    <input type="hidden" name="secret" value=page.new_secret/>
                                    <button type="submit" class="primary">{lang.t(Text::WebhookAdd)}</button>
                                </ActionForm>
                                <h2>{lang.t(Text::WebhookDeliveries)}</h2>
                                {if page.deliveries.is_empty() {
                                    view! { <p class="muted">{lang.t(Text::WebhookDeliveriesNone)}</p> }.into_any()
                                } else {
                                    view! {
                                        <table class="accounts deliveries">
                                            <thead>
                                                <tr>
                                                    <th scope="col">{lang.t(Text::WebhookEvent)}</th>
                                                    <th scope="col">{lang.t(Text::WebhookUrl)}</th>
                                                    <th scope="col">{lang.t(Text::WebhookStatus)}</th>
                                                    <th scope="col">{lang.t(Text::WebhookAttempts)}</th>
                                                    <th scope="col">{lang.t(Text::WebhookLastError)}</th>
                                                    <th></th>
                                                </tr>
                                            </thead>
                                            <tbody>
                                                {page.deliveries.into_iter().map(|delivery| view! { <Delivery delivery resend/> }).collect_view()}
                                            </tbody>
                                        </table>
                                    }
                                    .into_any()
                                }}
                            }
                            .into_any(),
                            Err(error) => view! { <p class="error" role="alert">{error.message(lang)}</p> }.into_any(),
                        }
                    })}
                </Transition>
            </main>
        </div>
    }
}

#[component]
fn Webhook(webhook: WebhookView, remove: ServerAction<AdminRemoveWebhook>) -> impl IntoView {
    let lang = use_lang();
    view! {
        <tr class="webhook" data-id=webhook.id>
            <th scope="row" class="url">{webhook.url.clone()}</th>
            <td class="events">{webhook.events.join(", ")}</td>
            <td>
                <span class="muted">{lang.t(Text::WebhookSecret)} ": "</span>
                <code class="masked">{webhook.secret_masked.clone()}</code>
            </td>
            <td>
                <ActionForm action=remove attr:class="remove">
                    <input type="hidden" name="webhook" value=webhook.id/>
                    <button type="submit" class="link">{lang.t(Text::WebhookRemove)}</button>
                </ActionForm>
            </td>
        </tr>
    }
}

#[component]
fn Delivery(delivery: DeliveryView, resend: ServerAction<AdminResendDelivery>) -> impl IntoView {
    let lang = use_lang();
    let state = match delivery.state.as_str() {
        "delivered" => Text::WebhookDelivered,
        "failed" => Text::WebhookFailed,
        _ => Text::WebhookPending,
    };
    let status = delivery.last_status.map(|status| format!(" ({status})")).unwrap_or_default();
    view! {
        <tr class="delivery" data-state=delivery.state.clone() data-event=delivery.event_id.clone()>
            <td>
                <code>{delivery.kind.clone()}</code>
                {delivery.resent.then(|| view! { " " <span class="muted">{lang.t(Text::WebhookResent)}</span> })}
            </td>
            <td class="url">{delivery.url.clone()}</td>
            <td class="state">{lang.t(state)} {status}</td>
            <td class="attempts">{delivery.attempts}</td>
            <td class="last-error">{delivery.last_error.clone().unwrap_or_default()}</td>
            <td>
                <ActionForm action=resend attr:class="resend">
                    <input type="hidden" name="delivery" value=delivery.id/>
                    <button type="submit" class="secondary">{lang.t(Text::WebhookResend)}</button>
                </ActionForm>
            </td>
        </tr>
    }
}
