//! Whether an image's alt text or a link's text says anything: the rules of thumb, as word lists
//! in English and German.

const USELESS_ALT: &[&str] =
    &["image", "img", "picture", "pic", "photo", "graphic", "bild", "foto", "grafik", "abbildung", "symbolbild"];

const IMAGE_EXTENSIONS: &[&str] = &["jpg", "jpeg", "png", "gif", "webp", "svg", "avif", "heic", "tif", "tiff", "bmp"];

const CAMERA_PREFIXES: &[&str] =
    &["img", "dsc", "dscn", "dscf", "pxl", "image", "photo", "foto", "bild", "screenshot", "scan"];

const VAGUE_LINK_TEXT: &[&str] = &[
    "click here",
    "click",
    "here",
    "this link",
    "link",
    "read more",
    "more",
    "learn more",
    "details",
    "info",
    "go",
    "hier klicken",
    "klicken sie hier",
    "hier",
    "mehr",
    "mehr lesen",
    "weiterlesen",
    "weiter",
    "mehr erfahren",
    "mehr infos",
    "infos",
    "dieser link",
    "diesen link",
];

/// A file name, or what a camera calls its pictures ("IMG_1234", "DSC-0042").
pub fn is_file_name_like(text: &str) -> bool {
    let lower = text.trim().to_lowercase();
    if lower.is_empty() || lower.contains(char::is_whitespace) {
        return false;
    }
    if let Some((_, extension)) = lower.rsplit_once('.') {
        if IMAGE_EXTENSIONS.contains(&extension) {
            return true;
        }
    }
    CAMERA_PREFIXES.iter().any(|prefix| {
        lower.strip_prefix(prefix).is_some_and(|rest| {
            let rest = rest.trim_start_matches(['_', '-']);
            rest.starts_with(|c: char| c.is_ascii_digit())
                && rest.chars().all(|c| c.is_ascii_digit() || c == '_' || c == '-')
        })
    })
}

/// An alt text that is there but says nothing: a generic word, a file name, or no letters.
pub fn is_useless_alt(alt: &str) -> bool {
    let normal = alt.trim().trim_end_matches('.').to_lowercase();
    USELESS_ALT.contains(&normal.as_str()) || is_file_name_like(&normal) || !normal.chars().any(char::is_alphabetic)
}

/// Link text that only makes sense next to the text around it.
pub fn is_vague_link_text(text: &str) -> bool {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let normal = words.join(" ");
    let normal = normal.trim_matches(|c: char| !c.is_alphanumeric());
    normal.is_empty() || VAGUE_LINK_TEXT.contains(&normal)
}
