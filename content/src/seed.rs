//! The site a fresh installation starts with: a fictional bakery in Freiburg. Its pages are
//! imperfect on purpose, so the tour has something to find on each of them, except the contact
//! page, which shows what a clean page looks like. The blog post is in English, so both languages
//! of the checks have an example.

use crate::store::{ContentError, ContentStore};
use crate::{Block, NewPage};

fn heading(level: u8, text: &str) -> Block {
    Block::Heading { level, text: text.to_string() }
}

fn paragraph(text: &str) -> Block {
    Block::Paragraph { text: text.to_string() }
}

fn image(src: &str, alt: &str) -> Block {
    Block::Image { src: src.to_string(), alt: alt.to_string() }
}

fn link(text: &str, href: &str) -> Block {
    Block::Link { text: text.to_string(), href: href.to_string() }
}

fn page(slug: &str, title: &str, description: &str, blocks: Vec<Block>) -> NewPage {
    NewPage { slug: slug.to_string(), title: title.to_string(), description: description.to_string(), blocks }
}

/// The seed pages in menu order. The comments name what the analysis is meant to find.
pub fn seed_pages() -> Vec<NewPage> {
    vec![
        // A title that is too long, no description, an image without alt text, "Hier klicken".
        page(
            "home",
            "Bäckerei Sonnenkorn Freiburg – frisches Brot, Brötchen, Kuchen, Torten und Kaffee seit 1952",
            "",
            vec![
                heading(1, "Willkommen bei der Bäckerei Sonnenkorn"),
                paragraph(
                    "Seit 1952 backen wir in der Freiburger Wiehre Brot und Brötchen nach alten Familienrezepten. \
                     Unser Sauerteig reift langsam, unser Mehl kommt aus der Region. \
                     Jeden Morgen ab halb sieben ist der Laden in der Talstraße geöffnet.",
                ),
                image("/images/IMG_4711.jpg", ""),
                heading(2, "Unser Angebot"),
                paragraph(
                    "Von knusprigen Brötchen über Vollkornbrot bis zur Schwarzwälder Kirschtorte: Bei uns finden Sie \
                     jeden Tag frische Backwaren. Torten backen wir auch auf Bestellung.",
                ),
                link("Hier klicken", "/angebot"),
                heading(2, "Besuchen Sie uns"),
                paragraph("Sie finden uns in der Talstraße 12, gleich an der Haltestelle Wiehre. Wir freuen uns auf Ihren Besuch!"),
            ],
        ),
        // A title that is too short, a 50-word sentence, two h1, alt text "Bild", an h4 after an h2.
        page(
            "ueber-uns",
            "Über uns",
            "Seit 1952 backt die Familie Sonnenkorn in Freiburg: die Geschichte unserer Bäckerei und das Team hinter unseren Broten.",
            vec![
                heading(1, "Über uns"),
                paragraph(
                    "Großvater Karl Sonnenkorn übernahm im Frühjahr 1952 die kleine Backstube in der Talstraße, und er \
                     hatte damals kaum mehr als einen alten Holzofen und den festen Willen, den Menschen in der Wiehre \
                     jeden Morgen ein ehrliches Brot zu backen, und dieser Wille hat sich über drei Generationen bis \
                     heute gehalten. Heute führt seine Enkelin Anna die Bäckerei.",
                ),
                heading(1, "Drei Generationen Handwerk"),
                paragraph(
                    "Heute führen Anna und Jonas Sonnenkorn die Bäckerei gemeinsam. Gebacken wird noch immer jede Nacht \
                     in der Talstraße.",
                ),
                image("/images/backstube-nachts.jpg", "Bild"),
                heading(2, "Unser Team"),
                heading(4, "In der Backstube"),
                paragraph(
                    "Zwölf Bäckerinnen und Bäcker, drei Konditorinnen und fünf Verkäuferinnen sorgen dafür, dass morgens \
                     alles frisch im Regal liegt.",
                ),
            ],
        ),
        // A description that is too short, no h1, a camera file name as alt text, "mehr".
        page(
            "angebot",
            "Unser Angebot: Brot, Brötchen, Kuchen und Torten",
            "Brot und Kuchen aus Freiburg.",
            vec![
                heading(2, "Unser Angebot"),
                paragraph(
                    "Jeden Tag backen wir rund zwanzig Sorten Brot und Brötchen. Dazu kommen Kuchen, Gebäck und Torten \
                     aus der eigenen Konditorei.",
                ),
                heading(2, "Brot und Brötchen"),
                paragraph(
                    "Unser Roggenmischbrot reift zwei Tage im Sauerteig. Dinkelbrötchen und Laugenbrezeln gibt es ab \
                     halb sieben.",
                ),
                image("/images/brot-sortiment.jpg", "IMG_0815.JPG"),
                heading(2, "Kuchen und Torten"),
                paragraph(
                    "Schwarzwälder Kirschtorte, Käsekuchen und saisonale Obstkuchen backen wir täglich. Hochzeits- und \
                     Geburtstagstorten fertigen wir auf Bestellung.",
                ),
                link("mehr", "/kontakt"),
            ],
        ),
        // The clean page.
        page(
            "kontakt",
            "Kontakt und Öffnungszeiten – Bäckerei Sonnenkorn",
            "So erreichen Sie die Bäckerei Sonnenkorn in der Freiburger Wiehre: Adresse, Telefon, Öffnungszeiten \
             und Bestellungen für Torten.",
            vec![
                heading(1, "Kontakt"),
                paragraph(
                    "Bäckerei Sonnenkorn, Talstraße 12, 79102 Freiburg. Telefon 0761 123456, E-Mail \
                     hallo@sonnenkorn.example.",
                ),
                heading(2, "Öffnungszeiten"),
                paragraph("Montag bis Freitag von 6:30 bis 18:30 Uhr, Samstag von 7 bis 13 Uhr. Sonntags haben wir geschlossen."),
                image("/images/laden-talstrasse.jpg", "Ladenfront der Bäckerei Sonnenkorn mit roter Markise in der Talstraße"),
                link("Route zur Talstraße 12 in OpenStreetMap", "https://www.openstreetmap.org/search?query=Talstra%C3%9Fe%2012%20Freiburg"),
            ],
        ),
        // In English: a description that is too long, long sentences, alt text "image", "Read more".
        page(
            "blog/sourdough",
            "Why our sourdough bread takes 48 hours",
            "In this post our head baker Jonas explains step by step why our sourdough bread rests for two whole days \
             before it goes into the oven, which flours we use, and why the long wait makes the bread tastier and \
             easier to digest.",
            vec![
                heading(1, "Why our sourdough takes 48 hours"),
                paragraph(
                    "Every batch of our sourdough starts two days before it is sold, when Jonas feeds the starter with \
                     rye flour and water, and the dough then rests in a cool room for a whole day and night. During this \
                     long rest the wild yeasts and lactic acid bacteria break down much of the starch, so the bread \
                     develops its mild sour taste and stays fresh for days.",
                ),
                image("/images/sauerteig.jpg", "image"),
                heading(2, "What you can taste"),
                paragraph(
                    "The long fermentation gives the crumb large, irregular holes and a deep, slightly sour aroma. Try it \
                     with butter and a pinch of salt.",
                ),
                link("Read more", "/blog"),
            ],
        ),
    ]
}

/// Stores the seed site on first start; returns how many pages it inserted (none when there
/// already are pages, so calling it on every start is safe).
pub async fn seed_if_empty(store: &ContentStore) -> Result<usize, ContentError> {
    store.insert_if_empty(&seed_pages()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{analyse, propose, PointKind};
    use crate::store::tests::content_store;
    use crate::store::UpdateOutcome;

    #[tokio::test]
    async fn content_seed_inserts_once_only() {
        let store = content_store().await;
        assert_eq!(seed_if_empty(&store).await.expect("seed"), 5);
        assert_eq!(seed_if_empty(&store).await.expect("seed again"), 0);
        let slugs: Vec<String> = store.list_pages().await.expect("list").into_iter().map(|page| page.slug).collect();
        assert_eq!(slugs, ["home", "ueber-uns", "angebot", "kontakt", "blog/sourdough"]);
    }

    #[tokio::test]
    async fn content_seed_is_not_added_to_an_existing_site() {
        let store = content_store().await;
        store.create_page(&seed_pages()[3]).await.expect("create");
        assert_eq!(seed_if_empty(&store).await.expect("seed"), 0);
        assert_eq!(store.count_pages().await.expect("count"), 1);
    }

    fn kinds(slug: &str) -> Vec<PointKind> {
        let new = seed_pages().into_iter().find(|page| page.slug == slug).expect("seed page");
        let page = crate::Page {
            id: 1,
            slug: new.slug,
            title: new.title,
            description: new.description,
            blocks: new.blocks,
            updated_at: 0,
            version: 1,
        };
        analyse(&page).points.into_iter().map(|point| point.kind).collect()
    }

    #[test]
    fn content_seed_pages_yield_the_intended_points() {
        use PointKind::*;
        assert_eq!(kinds("home"), [TitleTooLong, DescriptionMissing, AltMissing, VagueLinkText]);
        assert_eq!(kinds("ueber-uns"), [TitleTooShort, LongSentences, MultipleH1, AltUseless, SkippedHeadingLevel]);
        assert_eq!(kinds("angebot"), [DescriptionTooShort, NoH1, AltUseless, VagueLinkText]);
        assert_eq!(kinds("kontakt"), []);
        assert_eq!(kinds("blog/sourdough"), [DescriptionTooLong, LongSentences, AltUseless, VagueLinkText]);
    }

    /// Every point of every seed page has two different proposals, and the first one fixes it.
    #[tokio::test]
    async fn content_seed_every_point_has_two_proposals_and_the_first_fixes_it() {
        let store = content_store().await;
        seed_if_empty(&store).await.expect("seed");
        for summary in store.list_pages().await.expect("list") {
            let page = store.page(summary.id).await.expect("read").expect("page");
            for point in analyse(&page).points {
                let first =
                    propose(&page, &point, 0).unwrap_or_else(|| panic!("{}: no proposal for {point:?}", page.slug));
                let second =
                    propose(&page, &point, 1).unwrap_or_else(|| panic!("{}: one proposal for {point:?}", page.slug));
                assert_ne!(first, second);
                assert_ne!(first.proposed, first.current);
                assert_ne!(second.proposed, second.current);
                let mut trial = page.clone();
                trial.apply(first.target, &first.proposed).expect("applies");
                let left: Vec<_> =
                    analyse(&trial).points.into_iter().filter(|later| later.target == point.target).collect();
                assert!(left.is_empty(), "{}: {first:?} left {left:?}", page.slug);
            }
        }
    }

    /// The scripted demo's tour: taking the first proposal for the first point, again and again,
    /// through the store, leaves every seed page without points.
    #[tokio::test]
    async fn content_seed_tour_of_first_proposals_cleans_every_page() {
        let store = content_store().await;
        seed_if_empty(&store).await.expect("seed");
        for summary in store.list_pages().await.expect("list") {
            for _ in 0..12 {
                let page = store.page(summary.id).await.expect("read").expect("page");
                let Some(point) = analyse(&page).points.into_iter().next() else { break };
                let proposal = propose(&page, &point, 0).expect("proposal");
                let outcome = store.apply_edit(page.id, proposal.target, &proposal.proposed, Some(page.version)).await;
                assert!(matches!(outcome, Ok(UpdateOutcome::Updated { .. })), "{outcome:?}");
            }
            let page = store.page(summary.id).await.expect("read").expect("page");
            assert_eq!(analyse(&page).points, [], "{}", page.slug);
        }
    }
}
