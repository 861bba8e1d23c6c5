//! The site's content pages: a list, and one page beside the floating chat panel that carries its
//! guided tour. The page loads again whenever the panel's conversation changes, so an approved
//! change shows up at once.

use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::{get_page, list_pages, StartTour};
use crate::components::chat_panel::{ChatPanel, ConversationChanged, PanelPlace};
use crate::error::AppError;
use crate::form_action::{FormAction, PostForm};
use crate::i18n::Text;
use crate::model::{BlockView, PageView};
use crate::pages::header::Header;
use crate::use_lang;

#[component]
pub fn PagesPage() -> impl IntoView {
    let lang = use_lang();
    let pages = Resource::new(|| (), |_| list_pages());
    view! {
        <div class="app">
            <Header/>
            <main class="pages-index">
                <h1>{lang.t(Text::PagesTitle)}</h1>
                <p class="lead">{lang.t(Text::PagesLead)}</p>
                <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                    {move || Suspend::new(async move {
                        match pages.await {
                            Ok(pages) => view! {
                                <ul class="page-list">
                                    {pages
                                        .into_iter()
                                        .map(|page| {
                                            view! {
                                                <li>
                                                    <a href=format!("/pages/{}", page.id)>{page.title}</a>
                                                    <span class="slug">"/" {page.slug}</span>
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
            </main>
        </div>
    }
}

#[component]
pub fn ContentPage() -> impl IntoView {
    let page_id = use_params_map().with_untracked(|params| params.get("id").and_then(|id| id.parse::<i64>().ok()));
    let conversation = use_query_map().with_untracked(|query| query.get("c").filter(|id| !id.is_empty()));
    view! {
        <div class="app">
            <Header/>
            <ContentWorkspace page_id conversation place=PanelPlace::from_router()/>
        </div>
    }
}

/// The page and the panel beside it: the part of a content page the browser runs.
#[island]
fn ContentWorkspace(page_id: Option<i64>, conversation: Option<String>, place: PanelPlace) -> impl IntoView {
    provide_context(crate::initial_lang());
    let lang = use_lang();
    let changed = RwSignal::new(0u64);
    provide_context(ConversationChanged(changed));
    let page = Resource::new(
        move || changed.get(),
        move |_| async move {
            match page_id {
                Some(id) => get_page(id).await,
                None => Err(AppError::NotFound),
            }
        },
    );
    let start = FormAction::new::<StartTour>();
    let with_panel = conversation.is_some();

    view! {
        <div class="content-layout" class:with-panel=with_panel>
            <main class="content-page">
                <Transition fallback=move || view! { <p class="muted">{lang.t(Text::Loading)}</p> }>
                    {move || Suspend::new(async move {
                        match page.await {
                            Ok(page) => view! { <PageBody page start/> }.into_any(),
                            Err(AppError::NotFound) => {
                                view! { <p class="error" role="alert">{lang.t(Text::PageNotFound)}</p> }.into_any()
                            }
                            Err(error) => {
                                view! { <p class="error" role="alert">{error.message(lang)}</p> }.into_any()
                            }
                        }
                    })}
                </Transition>
            </main>
            {conversation
                .map(|id| {
                    view! {
                        <aside class="floating-chat" aria-label=lang.t(Text::ChatAboutPage)>
                            <ChatPanel conversation_id=Signal::stored(Some(id)) place/>
                        </aside>
                    }
                })}
        </div>
    }
}

#[component]
fn PageBody(page: PageView, start: FormAction) -> impl IntoView {
    let lang = use_lang();
    view! {
        <article class="site-page" data-page-version=page.version>
            <div class="page-meta">
                <p class="slug">"/" {page.slug.clone()}</p>
                <PostForm action=start class="start-tour">
                    <input type="hidden" name="page_id" value=page.id/>
                    <input type="hidden" name="panel" value="1"/>
                    <button type="submit" class="primary" disabled=move || start.pending().get()>
                        {lang.t(Text::StartTour)}
                    </button>
                </PostForm>
            </div>
            <h1 class="page-title" data-field="title">{page.title}</h1>
            <dl class="page-description">
                <dt>{lang.t(Text::MetaDescription)}</dt>
                <dd data-field="description">
                    {if page.description.is_empty() { lang.t(Text::Empty).to_string() } else { page.description }}
                </dd>
            </dl>
            <div class="blocks">
                {page
                    .blocks
                    .into_iter()
                    .enumerate()
                    .map(|(index, block)| view! { <Block index block/> })
                    .collect_view()}
            </div>
        </article>
    }
}

#[component]
fn Block(index: usize, block: BlockView) -> impl IntoView {
    let lang = use_lang();
    match block {
        // The site's own h1 is shown one level down: the app's page already has one.
        BlockView::Heading { level, text } => {
            let class = format!("block heading level-{level}");
            match level {
                0 | 1 => view! { <h2 class=class data-block=index>{text}</h2> }.into_any(),
                2 => view! { <h3 class=class data-block=index>{text}</h3> }.into_any(),
                3 => view! { <h4 class=class data-block=index>{text}</h4> }.into_any(),
                4 => view! { <h5 class=class data-block=index>{text}</h5> }.into_any(),
                _ => view! { <h6 class=class data-block=index>{text}</h6> }.into_any(),
            }
        }
        BlockView::Paragraph { text } => view! { <p class="block paragraph" data-block=index>{text}</p> }.into_any(),
        BlockView::Image { src, alt } => {
            let missing = alt.trim().is_empty();
            view! {
                <figure class="block image" data-block=index>
                    <div class="image-box" role="img" aria-label=if missing { src.clone() } else { alt.clone() }>
                        <span class="file">{src.clone()}</span>
                    </div>
                    <figcaption class:missing=missing>
                        {lang.t(Text::AltText)} ": "
                        <span class="alt">{if missing { lang.t(Text::Missing).to_string() } else { alt }}</span>
                    </figcaption>
                </figure>
            }
            .into_any()
        }
        BlockView::Link { text, href } => match href {
            Some(href) => view! {
                <p class="block link" data-block=index>
                    <a href=href rel="nofollow noopener">{text}</a>
                </p>
            }
            .into_any(),
            None => view! { <p class="block link" data-block=index>{text}</p> }.into_any(),
        },
    }
}
