use std::fmt;

/// A supported attachment format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Pdf,
    Docx,
    Xlsx,
    Text,
    Markdown,
}

impl Kind {
    pub const ALL: [Kind; 5] = [Kind::Pdf, Kind::Docx, Kind::Xlsx, Kind::Text, Kind::Markdown];

    /// Stable lower-case name, for storage and logs; [`Kind::parse`] reads it back.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Pdf => "pdf",
            Kind::Docx => "docx",
            Kind::Xlsx => "xlsx",
            Kind::Text => "text",
            Kind::Markdown => "markdown",
        }
    }

    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    pub fn mime_type(self) -> &'static str {
        match self {
            Kind::Pdf => "application/pdf",
            Kind::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            Kind::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            Kind::Text => "text/plain; charset=utf-8",
            Kind::Markdown => "text/markdown; charset=utf-8",
        }
    }

    /// The kind a file name claims, by its extension (case-insensitive).
    pub fn from_file_name(file_name: &str) -> Option<Kind> {
        match extension(file_name).as_str() {
            "pdf" => Some(Kind::Pdf),
            "docx" => Some(Kind::Docx),
            "xlsx" => Some(Kind::Xlsx),
            "txt" => Some(Kind::Text),
            "md" | "markdown" => Some(Kind::Markdown),
            _ => None,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Kind::Pdf => "PDF",
            Kind::Docx => "Word (DOCX)",
            Kind::Xlsx => "Excel (XLSX)",
            Kind::Text => "text",
            Kind::Markdown => "Markdown",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The lower-cased extension of the last path component, or "" when there is none.
///
/// Some browsers (old Edge/IE) send the whole client-side path, with either separator.
pub(crate) fn extension(file_name: &str) -> String {
    let base = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
    match base.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext.trim().to_ascii_lowercase(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(Kind::parse("PDF"), None);
    }

    #[test]
    fn kind_comes_from_the_last_extension() {
        assert_eq!(Kind::from_file_name("Report.PDF"), Some(Kind::Pdf));
        assert_eq!(Kind::from_file_name(r"C:\Users\a.b\notes.Markdown"), Some(Kind::Markdown));
        assert_eq!(Kind::from_file_name("archive.docx.exe"), None);
        assert_eq!(Kind::from_file_name(".md"), None);
        assert_eq!(Kind::from_file_name("README"), None);
        assert_eq!(extension("dir.d/README"), "");
    }
}
