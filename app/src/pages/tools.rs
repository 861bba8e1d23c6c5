//! The tools the assistant is offered: the built-in ones, and per MCP server its state (connecting,
//! connected, or down with the kind of problem and the next attempt) and its tools with their effect;
//! an admin also sees where it is (its URL masked, or its program's name), and permits or
//! withdraws "always for me" for each tool that can wait for a card (plain forms, no WASM). A
//! server that signs in with OAuth shows whether the reader's sign-in (or the shared one) is
//! there, with Connect (a page that goes to the authorization server) or Disconnect.

use leptos::prelude::*;

use crate::api::{list_tools, DisconnectMcp, SetPolicyPermit};
use crate::i18n::{Lang, Text};
use crate::model::{
    McpOAuthView, McpPlaceView, McpProblemView, McpServerStatus, McpServerView, ToolEffectView, ToolView,
};
use crate::pages::header::Header;
use crate::use_lang;

#[component]
pub fn ToolsPage() -> impl IntoView {
    let lang = use_lang();
    let permit = ServerAction::<SetPolicyPermit>::new();
    let disconnect = ServerAction::<DisconnectMcp>::new();
    let tools = Resource::new(move || (permit.version().get(), disconnect.version().get()), |_| list_tools());
    view! {
        <div class="app">
            <Header/>
            <main class="tools-index">
                <h1>{lang.t(Text::ToolsTitle)}</h1>
                <p class="lead">{lang.t(Text::ToolsLead)}</p>
                {move || {
                    permit.value().get().and_then(Result::err).map(|error| view! { <p class="error" role="alert">{error.message(lang)}</p> })
                }}
                {move || {
                    disconnect.value().get().and_then(Result::err).map(|error| view! { <p class="error" role="alert">{error.message(lang)}</p> })
                }}
                <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                    {move || Suspend::new(async move {
                        match tools.await {
                            Ok(tools) => {
                                let no_servers = tools.servers.is_empty();
                                view! {
                                    <section aria-labelledby="built-in">
                                        <h2 id="built-in">{lang.t(Text::ToolsBuiltIn)}</h2>
                                        <ToolList tools=tools.built_in lang permit/>
                                    </section>
                                    <section aria-labelledby="mcp-servers">
                                        <h2 id="mcp-servers">{lang.t(Text::ToolsMcpServers)}</h2>
                                        {no_servers.then(|| view! { <p class="muted">{lang.t(Text::ToolsNoMcp)}</p> })}
                                        {tools
                                            .servers
                                            .into_iter()
                                            .map(|server| view! { <McpServer server lang permit disconnect/> })
                                            .collect_view()}
                                    </section>
                                }
                                .into_any()
                            }
                            Err(error) => view! { <p class="error" role="alert">{error.message(lang)}</p> }.into_any(),
                        }
                    })}
                </Transition>
            </main>
        </div>
    }
}

#[component]
fn McpServer(
    server: McpServerView,
    lang: Lang,
    permit: ServerAction<SetPolicyPermit>,
    disconnect: ServerAction<DisconnectMcp>,
) -> impl IntoView {
    let (state, label, detail) = match &server.status {
        McpServerStatus::Starting => ("starting", lang.t(Text::McpStarting), None),
        McpServerStatus::Ready => ("ready", lang.t(Text::McpReady), None),
        McpServerStatus::SignInNeeded => ("sign-in", lang.t(Text::McpSignInNeeded), None),
        McpServerStatus::Down { problem, retry_in_seconds } => (
            "down",
            lang.t(Text::McpDown),
            Some(format!(
                "{} ({} {retry_in_seconds} {})",
                problem_sentence(*problem, lang),
                lang.t(Text::McpRetryIn),
                lang.t(Text::Seconds)
            )),
        ),
    };
    let place = server.place.clone().map(|place| match place {
        McpPlaceView::Url(url) => (lang.t(Text::McpAddress), url),
        McpPlaceView::Program(program) => (lang.t(Text::McpCommand), program),
    });
    let empty = server.tools.is_empty() && server.status != McpServerStatus::Ready;
    let sign_in = server.oauth.map(|oauth| view! { <McpSignIn server=server.name.clone() oauth lang disconnect/> });
    view! {
        <article class="mcp-server" data-server=server.name.clone() data-state=state>
            <h3>
                <code>{server.name.clone()}</code>
                " "
                <span class=format!("status {state}")>{label}</span>
            </h3>
            {place.map(|(label, place)| view! { <p class="place">{label} ": " <code>{place}</code></p> })}
            {detail.map(|detail| view! { <p class="problem">{detail}</p> })}
            {sign_in}
            {if empty {
                view! { <p class="muted">{lang.t(Text::McpNoTools)}</p> }.into_any()
            } else {
                view! { <ToolList tools=server.tools lang permit/> }.into_any()
            }}
        </article>
    }
}

/// An OAuth server's sign-in: whose it is, whether it is there, and Connect or Disconnect for a
/// reader who may change it. No token ever reaches the page.
#[component]
fn McpSignIn(
    server: String,
    oauth: McpOAuthView,
    lang: Lang,
    disconnect: ServerAction<DisconnectMcp>,
) -> impl IntoView {
    let whose = if oauth.shared { Text::McpOAuthShared } else { Text::McpOAuthPerUser };
    let state = if oauth.connected { Text::McpConnected } else { Text::McpNotConnected };
    let change = oauth.may_change.then(|| {
        if oauth.connected {
            view! {
                <ActionForm action=disconnect attr:class="mcp-disconnect">
                    <input type="hidden" name="server" value=server.clone()/>
                    <button type="submit" class="secondary">{lang.t(Text::McpDisconnect)}</button>
                </ActionForm>
            }
            .into_any()
        } else {
            view! {
                <form method="post" action=crate::model::MCP_CONNECT_PATH class="mcp-connect-form">
                    <input type="hidden" name="server" value=server.clone()/>
                    <button type="submit" class="mcp-connect">{lang.t(Text::McpConnect)}</button>
                </form>
            }
            .into_any()
        }
    });
    view! {
        <div class="mcp-sign-in" data-connected=oauth.connected.to_string()>
            <p>{lang.t(whose)} " " <strong class="sign-in-state">{lang.t(state)}</strong></p>
            {change}
        </div>
    }
}

/// The sentence for why a server is down; an HTTP status goes beside it.
fn problem_sentence(problem: McpProblemView, lang: Lang) -> String {
    let text = match problem {
        McpProblemView::CannotStart => Text::McpProblemCannotStart,
        McpProblemView::Exited => Text::McpProblemExited,
        McpProblemView::Unreachable => Text::McpProblemUnreachable,
        McpProblemView::Disconnected => Text::McpProblemDisconnected,
        McpProblemView::Refused { status } => return format!("{} (HTTP {status})", lang.t(Text::McpProblemRefused)),
        McpProblemView::CredentialsRefused => Text::McpProblemCredentials,
        McpProblemView::Handshake => Text::McpProblemHandshake,
        McpProblemView::TimedOut => Text::McpProblemTimedOut,
        McpProblemView::Protocol => Text::McpProblemProtocol,
        McpProblemView::Misconfigured => Text::McpProblemMisconfigured,
        McpProblemView::AuthorizationServerChanged => Text::McpProblemAuthorizationServerChanged,
    };
    lang.t(text).to_string()
}

#[component]
fn ToolList(tools: Vec<ToolView>, lang: Lang, permit: ServerAction<SetPolicyPermit>) -> impl IntoView {
    view! {
        <ul class="tool-list">
            {tools
                .into_iter()
                .map(|tool| {
                    let effect = match tool.effect {
                        ToolEffectView::Reads => lang.t(Text::EffectReads),
                        ToolEffectView::WritesIdempotent => lang.t(Text::EffectWritesIdempotent),
                        ToolEffectView::Writes => lang.t(Text::EffectWrites),
                    };
                    let name = tool.name.clone();
                    let permit = tool.permit.map(|permitted| view! { <Permit tool=tool.name.clone() permitted lang action=permit/> });
                    view! {
                        <li data-tool=name>
                            <code class="tool-name">{tool.name}</code>
                            " "
                            <span class="effect">{effect}</span>
                            {tool.needs_approval.then(|| view! { " " <span class="badge approval">{lang.t(Text::NeedsApproval)}</span> })}
                            <p class="description">{tool.description}</p>
                            {permit}
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
}

/// An admin's control of "always for me" for one tool: permit it, or withdraw the permit (users'
/// standing approvals for everywhere then stay but are no longer used).
#[component]
fn Permit(tool: String, permitted: bool, lang: Lang, action: ServerAction<SetPolicyPermit>) -> impl IntoView {
    let (state, button, value) = match permitted {
        true => (Some(lang.t(Text::PolicyPermitted)), Text::PolicyWithdraw, "false"),
        false => (None, Text::PolicyPermit, "true"),
    };
    view! {
        <ActionForm action attr:class="policy-permit" attr:data-permitted=permitted.to_string()>
            <span class="permit-title">{lang.t(Text::PolicyPermitTitle)} ": "</span>
            {state.map(|state| view! { <span class="permit-state">{state}</span> " " })}
            <input type="hidden" name="tool" value=tool/>
            <input type="hidden" name="permitted" value=value/>
            <button type="submit" class="secondary">{lang.t(button)}</button>
        </ActionForm>
    }
}
