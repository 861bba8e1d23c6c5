//! Secrets masked in text for the log: URLs' query values and userinfo, configured values, and the
//! Rust type paths rmcp's errors are full of. The configuration uses it to show where a server is,
//! `problem` and the hub to keep what the library said.

/// A configured value shorter than this is not masked on its own: `"1"` would mask every digit.
const SHORTEST_SECRET: usize = 4;

/// `text` as the log may keep it: each URL's query values and userinfo masked (`?api_key=***`,
/// `https://***@host`), each of `secrets` (and each longer word of one, such as the token of
/// `Bearer …`) masked wherever it appears, and Rust type paths
/// (`rmcp::transport::worker::WorkerTransport<…>`) left out.
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut masked = text.to_string();
    let mut words: Vec<&str> = Vec::new();
    for secret in secrets {
        words.push(secret.trim());
        words.extend(secret.split_whitespace().filter(|word| word.len() >= 8));
    }
    // The longest first, so a value is masked whole before a word of it is.
    words.sort_by_key(|word| std::cmp::Reverse(word.len()));
    for word in words.into_iter().filter(|word| word.len() >= SHORTEST_SECRET) {
        masked = masked.replace(word, "***");
    }
    strip_type_paths(&mask_urls(&masked))
}

/// Where a URL in running text ends.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | '}')
}

fn mask_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        // The scheme: the letters before `://`.
        let scheme_start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |index| index + 1);
        if scheme_start == at {
            out.push_str(&rest[..at + 3]);
            rest = &rest[at + 3..];
            continue;
        }
        out.push_str(&rest[..scheme_start]);
        let url_end = rest[at + 3..].find(ends_url).map_or(rest.len(), |index| at + 3 + index);
        out.push_str(&mask_url(&rest[scheme_start..url_end]));
        rest = &rest[url_end..];
    }
    out.push_str(rest);
    out
}

/// One URL with its userinfo and query values masked; the rest as it was.
pub fn mask_url(url: &str) -> String {
    let Some(at) = url.find("://") else { return url.to_string() };
    let (scheme, after) = url.split_at(at + 3);
    let authority_end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, path) = after.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(index) => format!("***{}", &authority[index..]),
        None => authority.to_string(),
    };
    let (path, fragment) = match path.find('#') {
        Some(index) => path.split_at(index),
        None => (path, ""),
    };
    let path = match path.split_once('?') {
        Some((path, query)) => {
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) => format!("{key}=***"),
                    None => pair.to_string(),
                })
                .collect();
            format!("{path}?{}", pairs.join("&"))
        }
        None => path.to_string(),
    };
    format!("{scheme}{authority}{path}{fragment}")
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Leaves out every `a::b…` path, with its generic arguments (`<…>`, nested).
fn strip_type_paths(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    while index < chars.len() {
        let starts_word = is_ident_start(chars[index]) && (index == 0 || !is_ident(chars[index - 1]));
        if starts_word {
            let mut end = index;
            while end < chars.len() && is_ident(chars[end]) {
                end += 1;
            }
            let mut segments = 1;
            while end + 2 < chars.len() && chars[end] == ':' && chars[end + 1] == ':' && is_ident_start(chars[end + 2])
            {
                end += 2;
                while end < chars.len() && is_ident(chars[end]) {
                    end += 1;
                }
                segments += 1;
            }
            if segments > 1 {
                if end < chars.len() && chars[end] == '<' {
                    let mut depth = 0;
                    while end < chars.len() {
                        match chars[end] {
                            '<' => depth += 1,
                            '>' => depth -= 1,
                            _ => {}
                        }
                        end += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                }
                out.push_str("(…)");
                index = end;
                continue;
            }
            out.extend(&chars[index..end]);
            index = end;
            continue;
        }
        out.push(chars[index]);
        index += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_userinfo_and_configured_secrets_are_masked() {
        assert_eq!(
            redact("error sending request for url (https://mcp.example.com/mcp?api_key=s3cret&x=1)", &[]),
            "error sending request for url (https://mcp.example.com/mcp?api_key=***&x=***)"
        );
        assert_eq!(redact("to https://ann:pw@host:8080/p#top, then", &[]), "to https://***@host:8080/p#top, then");
        assert_eq!(
            redact("sent Authorization: Bearer tok-123456789 and TOKEN=abcd", &["Bearer tok-123456789", "abcd"]),
            "sent Authorization: *** and TOKEN=***"
        );
        assert_eq!(redact("the token tok-123456789 alone", &["Bearer tok-123456789"]), "the token *** alone");
        assert_eq!(redact("value 1 stays", &["1"]), "value 1 stays", "too short to mask alone");
        assert_eq!(redact("ipv6 http://[::1]:9/x?k=v", &[]), "ipv6 http://[::1]:9/x?k=***");
        assert_eq!(mask_url("https://mcp.example.com/mcp?api_key=abc"), "https://mcp.example.com/mcp?api_key=***");
    }

    #[test]
    fn rust_type_paths_are_left_out() {
        assert_eq!(
            redact(
                "Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::\
                 StreamableHttpClientWorker<reqwest::async_impl::client::Client>>] error: Client error",
                &[]
            ),
            "Transport [(…)] error: Client error"
        );
        assert_eq!(redact("a std::io::Error here; time 12:30", &[]), "a (…) here; time 12:30");
    }
}
