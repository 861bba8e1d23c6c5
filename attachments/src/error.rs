use crate::Kind;

/// Why an attachment was refused. The messages are written to be shown to the person who
/// uploaded the file; `detail` fields are for logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttachmentError {
    #[error("the file is {size} bytes; the limit is {limit} bytes")]
    TooLarge { size: usize, limit: usize },

    #[error("the file is empty")]
    Empty,

    /// `extension` is lower-cased and empty when the name has none.
    #[error("files of type \"{extension}\" cannot be attached; use PDF, DOCX, XLSX, TXT or Markdown")]
    UnsupportedType { extension: String },

    /// The name promises one kind and the bytes are something else (or not valid for it).
    #[error("the file is named as {named} but contains {found}")]
    WrongContent { named: Kind, found: &'static str },

    #[error("the PDF is encrypted or password-protected")]
    EncryptedPdf,

    /// The bytes are of the right kind but cannot be read.
    #[error("the {kind} file is damaged and cannot be read")]
    Damaged { kind: Kind, detail: String },

    /// Unpacking would exceed the limits: a DOCX/XLSX archive with too many entries, too many
    /// unpacked bytes (declared or actual) or an absurd compression ratio, or a PDF whose
    /// compressed streams unpack past the limit. Named after the classic case; it covers both.
    #[error("the {kind} file unpacks to far more data than allowed")]
    ZipBomb { kind: Kind },

    /// Readable, but there is no text in it, e.g. a scanned PDF without a text layer.
    #[error("the {kind} file contains no readable text")]
    NoText { kind: Kind },
}

impl AttachmentError {
    pub(crate) fn damaged(kind: Kind, detail: impl std::fmt::Display) -> Self {
        Self::Damaged { kind, detail: detail.to_string() }
    }
}
