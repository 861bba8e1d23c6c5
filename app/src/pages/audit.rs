//! The audit log (`/audit`): what became of every question and card a run waited on, newest
//! first, filtered by user, tool and dates through the address (a filtered view is a link), with
//! exports of the same rows. Shown on the server only: no island, the filter is a plain GET form.
//! Admins see every conversation's rows, anyone else their own; the server decides which.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::audit_log;
use crate::i18n::{Lang, Text};
use crate::model::{AuditPageView, AuditQuery, AuditRowView};
use crate::pages::header::Header;
use crate::use_lang;

#[component]
pub fn AuditPage() -> impl IntoView {
    let lang = use_lang();
    let params = use_query_map();
    let query = move || {
        let params = params.get();
        let text = |name: &str| params.get(name).filter(|value| !value.trim().is_empty());
        AuditQuery {
            user: text("user"),
            tool: text("tool"),
            from: text("from"),
            to: text("to"),
            page: text("page").and_then(|page| page.parse().ok()),
        }
    };
    let rows = Resource::new(query, |query| audit_log(query.user, query.tool, query.from, query.to, query.page));
    view! {
        <div class="app">
            <Header/>
            <main class="audit">
                <h1>{lang.t(Text::AuditTitle)}</h1>
                <Filters query=query() lang/>
                <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                    {move || Suspend::new(async move {
                        match rows.await {
                            Ok(page) => view! { <Rows page query=query() lang/> }.into_any(),
                            Err(error) => view! { <p class="error" role="alert">{error.message(lang)}</p> }.into_any(),
                        }
                    })}
                </Transition>
            </main>
        </div>
    }
}

#[component]
fn Filters(query: AuditQuery, lang: Lang) -> impl IntoView {
    let value = |field: &Option<String>| field.clone().unwrap_or_default();
    let filters = query.filters_query();
    let export = |path: &str| if filters.is_empty() { path.to_string() } else { format!("{path}?{filters}") };
    view! {
        <form class="audit-filters" method="get" action="/audit">
            <label>
                {lang.t(Text::AuditUser)}
                <input type="text" name="user" value=value(&query.user) autocomplete="off"/>
            </label>
            <label>
                {lang.t(Text::AuditTool)}
                <input type="text" name="tool" value=value(&query.tool) autocomplete="off"/>
            </label>
            <label>
                {lang.t(Text::AuditFrom)}
                <input type="date" name="from" value=value(&query.from)/>
            </label>
            <label>
                {lang.t(Text::AuditUntil)}
                <input type="date" name="to" value=value(&query.to)/>
            </label>
            <button type="submit">{lang.t(Text::AuditFilter)}</button>
            <a class="clear" href="/audit">{lang.t(Text::AuditClear)}</a>
        </form>
        <p class="audit-exports">
            <a class="export-csv" href=export("/audit/export.csv") download>{lang.t(Text::AuditExportCsv)}</a>
            " · "
            <a class="export-json" href=export("/audit/export.json") download>{lang.t(Text::AuditExportJson)}</a>
        </p>
    }
}

#[component]
fn Rows(page: AuditPageView, query: AuditQuery, lang: Lang) -> impl IntoView {
    let lead = if page.all { Text::AuditLeadAdmin } else { Text::AuditLeadOwn };
    let filters = query.filters_query();
    let link = move |to: u32| {
        let page = format!("page={to}");
        if filters.is_empty() {
            format!("/audit?{page}")
        } else {
            format!("/audit?{filters}&{page}")
        }
    };
    let newer = (page.page > 1).then(|| link(page.page - 1));
    let older = page.has_older.then(|| link(page.page + 1));
    let empty = page.rows.is_empty();
    view! {
        <p class="lead">{lang.t(lead)}</p>
        {if empty {
            view! { <p class="muted audit-empty">{lang.t(Text::AuditEmpty)}</p> }.into_any()
        } else {
            view! {
                <table class="audit-rows">
                    <thead>
                        <tr>
                            <th>{lang.t(Text::AuditWhen)}</th>
                            <th>{lang.t(Text::AuditAction)}</th>
                            <th>{lang.t(Text::AuditWho)}</th>
                            <th>{lang.t(Text::AuditConversation)}</th>
                            <th>{lang.t(Text::AuditTool)}</th>
                            <th>{lang.t(Text::AuditSurface)}</th>
                            <th>{lang.t(Text::AuditDetails)}</th>
                        </tr>
                    </thead>
                    <tbody>{page.rows.into_iter().map(|row| view! { <Row row lang/> }).collect_view()}</tbody>
                </table>
            }
            .into_any()
        }}
        <nav class="audit-pages" aria-label=lang.t(Text::AuditPagesNav)>
            {newer.map(|href| view! { <a class="newer" href=href>{lang.t(Text::AuditNewer)}</a> })}
            {older.map(|href| view! { <a class="older" href=href>{lang.t(Text::AuditOlder)}</a> })}
        </nav>
    }
}

#[component]
fn Row(row: AuditRowView, lang: Lang) -> impl IntoView {
    let who = row.actor.clone().unwrap_or_else(|| lang.t(Text::AuditSystem).to_string());
    let detail = |label: Text, value: Option<String>, class: &'static str| {
        value.map(|value| {
            view! {
                <div class=class>
                    <span class="label">{lang.t(label)}</span>
                    <pre>{value}</pre>
                </div>
            }
        })
    };
    view! {
        <tr class="audit-row" data-action=row.action.clone() data-id=row.id.to_string()>
            <td class="when"><time>{row.at}</time></td>
            <td class="action">{row.action_label}</td>
            <td class="who">{who}</td>
            <td class="conversation">
                <a href=format!("/c/{}", row.conversation_id)>{row.conversation_title}</a>
                {row.owner.filter(|owner| Some(owner) != row.actor.as_ref()).map(|owner| {
                    view! { <span class="owner">" (" {lang.t(Text::AuditOwner)} ": " {owner} ")"</span> }
                })}
            </td>
            <td class="tools">{row.tools.join(", ")}</td>
            <td class="surface">{row.surface_label}</td>
            <td class="details">
                {detail(Text::AuditAnswer, row.answer, "answer")}
                {detail(Text::AuditReason, row.reason, "reason")}
                {detail(Text::AuditPreview, row.preview, "preview")}
                {detail(Text::AuditArguments, row.arguments, "arguments")}
                {detail(Text::AuditArgumentsRun, row.arguments_run, "arguments-run")}
            </td>
        </tr>
    }
}
