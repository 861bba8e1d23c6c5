//! The assistant's markdown as HTML that is safe to insert: pulldown-cmark renders it, ammonia
//! keeps only harmless tags and attributes (no scripts, no event handlers, no `javascript:` links).
//! The model's text is untrusted; so is anything a tool put into it.

use pulldown_cmark::{html, Options, Parser};

/// The version of [`to_safe_html`]'s output. Lines store their rendering with it; bump it when
/// the output changes (the options, the sanitiser's rules), and stored renderings of another
/// version are made again when read.
pub const RENDERER_VERSION: i64 = 1;

pub fn to_safe_html(markdown: &str) -> String {
    let parser = Parser::new_ext(markdown, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH);
    let mut rendered = String::new();
    html::push_html(&mut rendered, parser);
    ammonia::Builder::default()
        .link_rel(Some("nofollow noopener noreferrer"))
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .clean(&rendered)
        .to_string()
}

/// A link target from content that may be shown as a link: web, mail, or a path on this site.
pub fn safe_href(href: &str) -> Option<String> {
    let href = href.trim();
    let lower = href.to_ascii_lowercase();
    let allowed = lower.starts_with("https://")
        || lower.starts_with("http://")
        || lower.starts_with("mailto:")
        || (href.starts_with('/') && !href.starts_with("//"))
        || href.starts_with('#');
    allowed.then(|| href.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_html() {
        let html = to_safe_html("**Bold** and a [link](https://example.org)\n\n- one\n- two");
        assert!(html.contains("<strong>Bold</strong>"));
        assert!(
            html.contains(r#"<a href="https://example.org" rel="nofollow noopener noreferrer">link</a>"#),
            "{html}"
        );
        assert!(html.contains("<li>one</li>"));
    }

    #[test]
    fn scripts_handlers_and_script_links_are_removed() {
        let html = to_safe_html(
            "<script>alert(1)</script><img src=x onerror=alert(2)> <b onclick=\"alert(4)\">b</b>\n\n[x](javascript:alert(3))",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("onerror"), "{html}");
        assert!(!html.contains("href=\"javascript"), "{html}");
        assert!(!html.contains("onclick"), "{html}");
        assert!(html.contains("<b>b</b>"), "harmless markup stays: {html}");
    }

    #[test]
    fn only_safe_hrefs_are_links() {
        assert_eq!(safe_href("/kontakt").as_deref(), Some("/kontakt"));
        assert_eq!(safe_href("https://example.org").as_deref(), Some("https://example.org"));
        assert_eq!(safe_href("JavaScript:alert(1)"), None);
        assert_eq!(safe_href("//evil.example"), None);
        assert_eq!(safe_href("data:text/html,x"), None);
    }
}
