//! Page addresses built from the ones the reader is on.

/// `path_and_query` without the parameter `key` (every occurrence), the rest as it was.
pub fn without_query_param(path_and_query: &str, key: &str) -> String {
    let Some((path, query)) = path_and_query.split_once('?') else { return path_and_query.to_string() };
    let kept: Vec<&str> =
        query.split('&').filter(|pair| !pair.is_empty() && pair.split('=').next() != Some(key)).collect();
    if kept.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::without_query_param;

    #[test]
    fn a_query_parameter_is_dropped_and_the_rest_kept() {
        assert_eq!(without_query_param("/c/abc?edit=12", "edit"), "/c/abc");
        assert_eq!(without_query_param("/pages/3?c=abc&edit=12", "edit"), "/pages/3?c=abc");
        assert_eq!(without_query_param("/pages/3?edit=1&c=abc&edit=2", "edit"), "/pages/3?c=abc");
        assert_eq!(without_query_param("/pages/3?editor=x&edit", "edit"), "/pages/3?editor=x");
        assert_eq!(without_query_param("/c/abc", "edit"), "/c/abc");
    }
}
