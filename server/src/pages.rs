//! The `ContentBackend` seam: the content pages as the app shows them beside the chat.

use async_trait::async_trait;

use app::backend::{ContentBackend, CurrentUser};
use app::error::AppError;
use app::model::{BlockView, PageSummaryView, PageView};
use content::store::ContentStore;
use content::Block;

use crate::failures::content_failure;

#[derive(Clone)]
pub struct PagesService {
    content: ContentStore,
}

impl PagesService {
    pub fn new(content: ContentStore) -> Self {
        PagesService { content }
    }
}

#[async_trait]
impl ContentBackend for PagesService {
    async fn list_pages(&self, _user: &CurrentUser) -> Result<Vec<PageSummaryView>, AppError> {
        let pages = self.content.list_pages().await.map_err(content_failure)?;
        Ok(pages.into_iter().map(|page| PageSummaryView { id: page.id, slug: page.slug, title: page.title }).collect())
    }

    async fn page(&self, _user: &CurrentUser, id: i64) -> Result<PageView, AppError> {
        let page = self.content.page(id).await.map_err(content_failure)?.ok_or(AppError::NotFound)?;
        Ok(PageView {
            id: page.id,
            slug: page.slug,
            title: page.title,
            description: page.description,
            version: page.version,
            blocks: page
                .blocks
                .into_iter()
                .map(|block| match block {
                    Block::Heading { level, text } => BlockView::Heading { level, text },
                    Block::Paragraph { text } => BlockView::Paragraph { text },
                    Block::Image { src, alt } => BlockView::Image { src, alt },
                    Block::Link { text, href } => BlockView::Link { text, href: crate::markdown::safe_href(&href) },
                })
                .collect(),
        })
    }
}
