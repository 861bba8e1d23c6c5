//! All SQL for pages, and the migrations of the pages table. A write reads the page, applies the
//! change in memory (where the domain rules live) and stores it with one UPDATE guarded on the
//! version it read, so two writers can never both win and an approval made for an older version
//! is refused.

use db::{now, on, Db, Migrations};

use crate::{Block, EditError, EditTarget, NewPage, Page, PageField, PageSummary};

/// How often a write without an expected version retries after losing a race to another writer.
const ATTEMPTS: usize = 3;

/// The migrations of the content's tables.
pub fn migrations() -> Migrations {
    Migrations::new(sqlx::migrate!("../migrations/sqlite/content"), sqlx::migrate!("../migrations/postgres/content"))
}

#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("the blocks of page {page_id} cannot be read: {source}")]
    CorruptBlocks { page_id: i64, source: serde_json::Error },
    #[error("the blocks cannot be written: {0}")]
    EncodeBlocks(serde_json::Error),
    #[error(transparent)]
    Edit(#[from] EditError),
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// The page after the change, and the value the change replaced.
    Updated {
        page: Page,
        previous: String,
    },
    NotFound,
    /// The page is no longer at the expected version; nothing was changed.
    Stale {
        current_version: i64,
    },
}

#[derive(Clone, Debug)]
pub struct ContentStore {
    db: Db,
}

#[derive(sqlx::FromRow)]
struct PageRow {
    id: i64,
    slug: String,
    title: String,
    description: String,
    blocks: String,
    updated_at: i64,
    version: i64,
}

impl PageRow {
    fn into_page(self) -> Result<Page, ContentError> {
        let blocks: Vec<Block> = serde_json::from_str(&self.blocks)
            .map_err(|source| ContentError::CorruptBlocks { page_id: self.id, source })?;
        Ok(Page {
            id: self.id,
            slug: self.slug,
            title: self.title,
            description: self.description,
            blocks,
            updated_at: self.updated_at,
            version: self.version,
        })
    }
}

fn encode(blocks: &[Block]) -> Result<String, ContentError> {
    serde_json::to_string(blocks).map_err(ContentError::EncodeBlocks)
}

macro_rules! select_page {
    ($tail:literal) => {
        concat!("SELECT id, slug, title, description, blocks, updated_at, version FROM pages ", $tail)
    };
}

impl ContentStore {
    pub fn new(db: Db) -> Self {
        ContentStore { db }
    }

    pub async fn count_pages(&self) -> Result<i64, ContentError> {
        Ok(on!(&self.db, pool => sqlx::query_scalar("SELECT COUNT(*) FROM pages").fetch_one(pool).await)?)
    }

    /// The pages in the order they were created, which is the site's menu order.
    pub async fn list_pages(&self) -> Result<Vec<PageSummary>, ContentError> {
        let rows: Vec<(i64, String, String)> = on!(&self.db, pool => sqlx::query_as("SELECT id, slug, title FROM pages ORDER BY id").fetch_all(pool).await)?;
        Ok(rows.into_iter().map(|(id, slug, title)| PageSummary { id, slug, title }).collect())
    }

    pub async fn page(&self, id: i64) -> Result<Option<Page>, ContentError> {
        let row: Option<PageRow> = on!(&self.db, pool => sqlx::query_as(select_page!("WHERE id = $1"))
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        row.map(PageRow::into_page).transpose()
    }

    pub async fn page_by_slug(&self, slug: &str) -> Result<Option<Page>, ContentError> {
        let row: Option<PageRow> = on!(&self.db, pool => sqlx::query_as(select_page!("WHERE slug = $1"))
            .bind(slug)
            .fetch_optional(pool)
            .await)?;
        row.map(PageRow::into_page).transpose()
    }

    pub async fn create_page(&self, new: &NewPage) -> Result<i64, ContentError> {
        new.validate()?;
        let at = now();
        let blocks = encode(&new.blocks)?;
        Ok(on!(&self.db, pool => sqlx::query_scalar(
            "INSERT INTO pages (slug, title, description, blocks, version, created_at, updated_at)
             VALUES ($1, $2, $3, $4, 1, $5, $6) RETURNING id",
        )
        .bind(&new.slug)
        .bind(new.title.trim())
        .bind(new.description.trim())
        .bind(&blocks)
        .bind(at)
        .bind(at)
        .fetch_one(pool)
        .await)?)
    }

    /// Inserts the pages only if there are none yet, all or nothing. The count is taken under a
    /// lock that two starting servers cannot both hold (SQLite: `BEGIN IMMEDIATE`, the write lock;
    /// PostgreSQL: a table lock that conflicts with itself), so they cannot both seed.
    pub async fn insert_if_empty(&self, pages: &[NewPage]) -> Result<usize, ContentError> {
        let mut encoded = Vec::with_capacity(pages.len());
        for page in pages {
            page.validate()?;
            encoded.push(encode(&page.blocks)?);
        }
        let at = now();
        macro_rules! seed {
            ($tx:ident) => {{
                let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pages").fetch_one(&mut *$tx).await?;
                if count > 0 {
                    $tx.rollback().await?;
                    return Ok(0);
                }
                for (page, blocks) in pages.iter().zip(&encoded) {
                    sqlx::query(
                        "INSERT INTO pages (slug, title, description, blocks, version, created_at, updated_at)
                         VALUES ($1, $2, $3, $4, 1, $5, $6)",
                    )
                    .bind(&page.slug)
                    .bind(page.title.trim())
                    .bind(page.description.trim())
                    .bind(blocks)
                    .bind(at)
                    .bind(at)
                    .execute(&mut *$tx)
                    .await?;
                }
                $tx.commit().await?;
            }};
        }
        match &self.db {
            Db::Sqlite(db::Sqlite { write: pool, .. }) => {
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                seed!(tx);
            }
            Db::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                sqlx::query("LOCK TABLE pages IN SHARE ROW EXCLUSIVE MODE").execute(&mut *tx).await?;
                seed!(tx);
            }
        }
        Ok(pages.len())
    }

    pub async fn update_field(
        &self,
        page_id: i64,
        field: PageField,
        value: &str,
        expected_version: Option<i64>,
    ) -> Result<UpdateOutcome, ContentError> {
        self.apply_edit(page_id, EditTarget::Field(field), value, expected_version).await
    }

    pub async fn set_alt_text(
        &self,
        page_id: i64,
        block: usize,
        alt: &str,
        expected_version: Option<i64>,
    ) -> Result<UpdateOutcome, ContentError> {
        self.apply_edit(page_id, EditTarget::AltText { block }, alt, expected_version).await
    }

    /// Changes one value of a page. With `expected_version` the write happens only on that
    /// version; without one it is retried on the newest version if another write came between.
    /// An invalid value or block is an error and changes nothing.
    pub async fn apply_edit(
        &self,
        page_id: i64,
        target: EditTarget,
        value: &str,
        expected_version: Option<i64>,
    ) -> Result<UpdateOutcome, ContentError> {
        for _ in 0..ATTEMPTS {
            let Some(mut page) = self.page(page_id).await? else { return Ok(UpdateOutcome::NotFound) };
            if expected_version.is_some_and(|expected| expected != page.version) {
                return Ok(UpdateOutcome::Stale { current_version: page.version });
            }
            let read_version = page.version;
            let previous = page.apply(target, value)?;
            let at = now();
            let blocks = encode(&page.blocks)?;
            let written = on!(&self.db, pool => sqlx::query(
                "UPDATE pages SET title = $1, description = $2, blocks = $3, version = version + 1, updated_at = $4
                 WHERE id = $5 AND version = $6",
            )
            .bind(&page.title)
            .bind(&page.description)
            .bind(&blocks)
            .bind(at)
            .bind(page_id)
            .bind(read_version)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
            if written == 1 {
                page.version = read_version + 1;
                page.updated_at = at;
                return Ok(UpdateOutcome::Updated { page, previous });
            }
        }
        // Every attempt lost a race: give up rather than loop while others keep writing.
        match self.page(page_id).await? {
            Some(page) => Ok(UpdateOutcome::Stale { current_version: page.version }),
            None => Ok(UpdateOutcome::NotFound),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::BlockKind;

    /// A fresh database with the content's tables: in memory, or a new PostgreSQL database when
    /// `TOURGUIDE_TEST_POSTGRES` names a server.
    pub(crate) async fn content_store() -> ContentStore {
        let db = match db::scratch_postgres().await.expect("a scratch PostgreSQL database") {
            Some(url) => Db::open_postgres(&url).await.expect("PostgreSQL"),
            None => Db::in_memory().await.expect("in-memory database"),
        };
        db.migrate(&migrations()).await.expect("migrations");
        ContentStore::new(db)
    }

    fn sample() -> NewPage {
        NewPage {
            slug: "sample".into(),
            title: "A sample page".into(),
            description: String::new(),
            blocks: vec![
                Block::Heading { level: 1, text: "Sample".into() },
                Block::Paragraph { text: "Some text.".into() },
                Block::Image { src: "/bread.jpg".into(), alt: String::new() },
                Block::Link { text: "here".into(), href: "/contact".into() },
            ],
        }
    }

    async fn with_sample() -> (ContentStore, i64) {
        let store = content_store().await;
        let id = store.create_page(&sample()).await.expect("create");
        (store, id)
    }

    #[tokio::test]
    async fn content_store_reads_what_it_created() {
        let (store, id) = with_sample().await;
        let page = store.page(id).await.expect("read").expect("page");
        assert_eq!(page.slug, "sample");
        assert_eq!(page.blocks, sample().blocks);
        assert_eq!(page.version, 1);
        assert_eq!(store.page_by_slug("sample").await.expect("read"), Some(page));
        assert_eq!(store.page_by_slug("nope").await.expect("read"), None);
        assert_eq!(store.page(id + 100).await.expect("read"), None);
        let list = store.list_pages().await.expect("list");
        assert_eq!(list, vec![PageSummary { id, slug: "sample".into(), title: "A sample page".into() }]);
    }

    #[tokio::test]
    async fn content_store_update_really_changes_the_page_and_bumps_the_version() {
        let (store, id) = with_sample().await;
        let outcome = store.update_field(id, PageField::Title, "Fresh bread every morning in Freiburg", Some(1)).await;
        let Ok(UpdateOutcome::Updated { page, previous }) = outcome else { panic!("not updated: {outcome:?}") };
        assert_eq!(previous, "A sample page");
        assert_eq!(page.version, 2);
        let stored = store.page(id).await.expect("read").expect("page");
        assert_eq!(stored, page);
        assert_eq!(stored.title, "Fresh bread every morning in Freiburg");

        let outcome = store.set_alt_text(id, 2, "A loaf of sourdough bread on a board", None).await;
        assert!(matches!(outcome, Ok(UpdateOutcome::Updated { .. })), "{outcome:?}");
        let outcome = store.update_field(id, PageField::LinkText { block: 3 }, "Contact us", Some(3)).await;
        assert!(matches!(outcome, Ok(UpdateOutcome::Updated { .. })), "{outcome:?}");
        let outcome = store.update_field(id, PageField::HeadingLevel { block: 0 }, "2", None).await;
        assert!(matches!(outcome, Ok(UpdateOutcome::Updated { .. })), "{outcome:?}");
        let stored = store.page(id).await.expect("read").expect("page");
        assert_eq!(stored.version, 5);
        assert_eq!(stored.blocks[0], Block::Heading { level: 2, text: "Sample".into() });
        assert_eq!(
            stored.blocks[2],
            Block::Image { src: "/bread.jpg".into(), alt: "A loaf of sourdough bread on a board".into() }
        );
        assert_eq!(stored.blocks[3], Block::Link { text: "Contact us".into(), href: "/contact".into() });
    }

    #[tokio::test]
    async fn content_store_refuses_a_stale_version_and_changes_nothing() {
        let (store, id) = with_sample().await;
        let before = store.page(id).await.expect("read");
        let outcome = store.update_field(id, PageField::Description, "Something else entirely", Some(7)).await;
        assert!(matches!(outcome, Ok(UpdateOutcome::Stale { current_version: 1 })), "{outcome:?}");
        assert_eq!(store.page(id).await.expect("read"), before);
        // Two approval cards made for version 1: the first wins, the second finds the page changed.
        let first = store.set_alt_text(id, 2, "A loaf of bread", Some(1)).await;
        assert!(matches!(first, Ok(UpdateOutcome::Updated { .. })), "{first:?}");
        let second = store.set_alt_text(id, 2, "Bread on a board", Some(1)).await;
        assert!(matches!(second, Ok(UpdateOutcome::Stale { current_version: 2 })), "{second:?}");
        let page = store.page(id).await.expect("read").expect("page");
        assert_eq!(page.blocks[2], Block::Image { src: "/bread.jpg".into(), alt: "A loaf of bread".into() });
        let outcome = store.update_field(id + 1, PageField::Title, "Whatever the title", None).await;
        assert!(matches!(outcome, Ok(UpdateOutcome::NotFound)), "{outcome:?}");
    }

    #[tokio::test]
    async fn content_store_refuses_bad_blocks_and_values_and_changes_nothing() {
        let (store, id) = with_sample().await;
        let before = store.page(id).await.expect("read");
        let outcome = store.set_alt_text(id, 9, "An alt text", Some(1)).await;
        assert!(
            matches!(outcome, Err(ContentError::Edit(EditError::NoSuchBlock { block: 9, count: 4 }))),
            "{outcome:?}"
        );
        let outcome = store.set_alt_text(id, 1, "An alt text", None).await;
        assert!(
            matches!(
                outcome,
                Err(ContentError::Edit(EditError::WrongBlockKind {
                    expected: BlockKind::Image,
                    found: BlockKind::Paragraph,
                    ..
                }))
            ),
            "{outcome:?}"
        );
        let outcome = store.update_field(id, PageField::Paragraph { block: 2 }, "Text", None).await;
        assert!(matches!(outcome, Err(ContentError::Edit(EditError::WrongBlockKind { .. }))), "{outcome:?}");
        let outcome = store.update_field(id, PageField::Title, " ", None).await;
        assert!(matches!(outcome, Err(ContentError::Edit(EditError::Empty { .. }))), "{outcome:?}");
        let outcome = store.update_field(id, PageField::Description, &"d".repeat(401), None).await;
        assert!(matches!(outcome, Err(ContentError::Edit(EditError::TooLong { max: 400, .. }))), "{outcome:?}");
        let outcome = store.set_alt_text(id, 2, &"a".repeat(301), None).await;
        assert!(matches!(outcome, Err(ContentError::Edit(EditError::TooLong { max: 300, .. }))), "{outcome:?}");
        let outcome = store.update_field(id, PageField::Title, "Line one\nline two", None).await;
        assert!(matches!(outcome, Err(ContentError::Edit(EditError::ControlCharacter { .. }))), "{outcome:?}");
        assert_eq!(store.page(id).await.expect("read"), before);
    }

    #[tokio::test]
    async fn content_store_refuses_invalid_new_pages() {
        let store = content_store().await;
        let mut page = sample();
        page.slug = "Not A Slug".into();
        assert!(matches!(store.create_page(&page).await, Err(ContentError::Edit(EditError::Slug { .. }))));
        assert_eq!(store.count_pages().await.expect("count"), 0);
    }

    #[tokio::test]
    async fn content_store_reports_corrupt_blocks() {
        let (store, id) = with_sample().await;
        on!(&store.db, pool => sqlx::query("UPDATE pages SET blocks = 'not json' WHERE id = $1")
            .bind(id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))
        .expect("corrupt");
        assert!(matches!(store.page(id).await, Err(ContentError::CorruptBlocks { .. })));
    }
}
