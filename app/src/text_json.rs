//! JSON for the server functions the browser reads, decoded from text. Leptos' own `Json` decodes
//! a response with `serde_json::from_slice`, while an island's props, the pages' hydration data
//! (`page_data`) and the event streams are read with `from_str`: every view model that comes both
//! ways was compiled twice into the WASM, once per reader of serde_json (about 4 % of it). The
//! bytes on the wire are the same as `Json`'s.

use leptos::server_fn::codec::Post;
use leptos::server_fn::{ContentType, Decodes, Encodes, Format, FormatType};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The encoding: JSON written as `Json` writes it, read back from a `str`.
pub struct TextJsonEncoding;

/// A server function's output (and `AppError`'s body) as JSON read from text.
pub type TextJson = Post<TextJsonEncoding>;

impl ContentType for TextJsonEncoding {
    const CONTENT_TYPE: &'static str = "application/json";
}

impl FormatType for TextJsonEncoding {
    const FORMAT_TYPE: Format = Format::Text;
}

impl<T: Serialize> Encodes<T> for TextJsonEncoding {
    type Error = serde_json::Error;

    fn encode(output: &T) -> Result<leptos::server_fn::Bytes, Self::Error> {
        serde_json::to_vec(output).map(Into::into)
    }
}

impl<T: DeserializeOwned> Decodes<T> for TextJsonEncoding {
    type Error = serde_json::Error;

    fn decode(bytes: leptos::server_fn::Bytes) -> Result<T, Self::Error> {
        // `from_slice` refuses invalid UTF-8 too, as a syntax error.
        let text =
            std::str::from_utf8(&bytes).map_err(|_| <serde_json::Error as serde::de::Error>::custom("not UTF-8"))?;
        serde_json::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::AppError;

    #[test]
    fn it_writes_what_json_writes_and_reads_it_back() {
        use leptos::server_fn::codec::JsonEncoding;
        let error = AppError::Invalid(crate::i18n::Text::ErrorEmptyMessage);
        let ours = <TextJsonEncoding as Encodes<AppError>>::encode(&error).unwrap();
        assert_eq!(ours, <JsonEncoding as Encodes<AppError>>::encode(&error).unwrap());
        assert_eq!(<TextJsonEncoding as Decodes<AppError>>::decode(ours).unwrap(), error);
        assert!(<TextJsonEncoding as Decodes<AppError>>::decode(vec![b'"', 0xff, b'"'].into()).is_err());
    }
}
