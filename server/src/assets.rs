//! The built site's static files under `/pkg`. The build (`scripts/common.sh`, `pack_site`) names
//! the script, the WASM and the stylesheet after a hash of their content and writes the hashes to
//! `hash.txt` in the site root (Leptos' format, `kind: hash` a line), which the server reads once
//! to name them in every page ([`SiteAssets::site_files`]). A hashed file never changes under its name, so browsers may keep it for good; anything
//! else under `/pkg` (an unhashed development build) is revalidated on every load.
//!
//! Each file may have `.br` and `.gz` siblings made at build time; `ServeDir` picks the one the
//! request's `Accept-Encoding` allows, so the bundle is compressed once, at the best setting,
//! instead of on every request.

use std::collections::HashMap;
use std::path::Path;

use axum::extract::Request;
use axum::http::header::{CACHE_CONTROL, VARY};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use tower_http::services::ServeDir;

/// Where the build writes the hashes, relative to the site root.
pub const HASH_FILE: &str = "hash.txt";
/// The URL path of the built files; the site root's `pkg` directory.
pub const PKG_DIR: &str = "pkg";
/// The stem every built file starts with (`tourguide.<hash>.js` …): Leptos' output name.
pub const OUTPUT_NAME: &str = "tourguide";

const FOREVER: HeaderValue = HeaderValue::from_static("public, max-age=31536000, immutable");
const REVALIDATE: HeaderValue = HeaderValue::from_static("no-cache");

/// What the build wrote: the content hash of each kind of file (`js`, `wasm`, `css`), or none
/// for a build without hashed names (`cargo leptos watch`, an old site).
#[derive(Debug, Clone, Default)]
pub struct SiteAssets {
    hashes: HashMap<String, String>,
}

impl SiteAssets {
    pub fn load(site_root: &Path) -> SiteAssets {
        let path = site_root.join(HASH_FILE);
        let Ok(text) = std::fs::read_to_string(&path) else {
            return SiteAssets::default();
        };
        // `cargo leptos watch` writes plain names and leaves an earlier hash.txt alone: a plain
        // script newer than the hashes is the build to serve.
        let modified = |path: &Path| std::fs::metadata(path).and_then(|meta| meta.modified()).ok();
        let plain = site_root.join(PKG_DIR).join(format!("{OUTPUT_NAME}.js"));
        if let (Some(plain), Some(hashes)) = (modified(&plain), modified(&path)) {
            if plain > hashes {
                return SiteAssets::default();
            }
        }
        let hashes: HashMap<String, String> = text
            .lines()
            .filter_map(|line| line.split_once(':'))
            .map(|(kind, hash)| (kind.trim().to_string(), hash.trim().to_string()))
            .filter(|(_, hash)| !hash.is_empty())
            .collect();
        SiteAssets { hashes }
    }

    /// The URL of the stylesheet, for pages rendered outside the Leptos shell.
    pub fn stylesheet_href(&self) -> String {
        self.url("css", OUTPUT_NAME)
    }

    /// The URL of the built file of `kind`: its hashed name, else `plain`.
    fn url(&self, kind: &str, plain: &str) -> String {
        match self.hashes.get(kind) {
            Some(hash) => format!("/{PKG_DIR}/{OUTPUT_NAME}.{hash}.{kind}"),
            None => format!("/{PKG_DIR}/{plain}.{kind}"),
        }
    }

    /// The URLs the page shell links: hashed names as the build wrote them, else the plain names
    /// Leptos' `HydrationScripts` would use (the WASM is `tourguide.wasm` from `cargo leptos`,
    /// which sets `LEPTOS_OUTPUT_NAME`, and `tourguide_bg.wasm` straight from `wasm-bindgen`).
    pub fn site_files(&self) -> app::SiteFiles {
        let plain_wasm = if option_env!("LEPTOS_OUTPUT_NAME").is_some() {
            OUTPUT_NAME.to_string()
        } else {
            format!("{OUTPUT_NAME}_bg")
        };
        app::SiteFiles::new(self.stylesheet_href(), self.url("js", OUTPUT_NAME), self.url("wasm", &plain_wasm))
    }

    /// Whether a file under `/pkg` carries one of this build's hashes in its name (its
    /// precompressed siblings share the name up to `.br`/`.gz`).
    fn is_hashed(&self, file_name: &str) -> bool {
        let mut parts = file_name.split('.');
        parts.next() == Some(OUTPUT_NAME)
            && parts.next().is_some_and(|hash| self.hashes.values().any(|known| known == hash))
    }
}

/// `/pkg/…` from the site root's `pkg` directory, precompressed variants by content negotiation,
/// with the cache lifetime each name allows. Outside the session and body layers: a static file
/// needs neither, and a first load asks for several at once.
pub fn router(site_root: &Path, assets: SiteAssets) -> Router {
    let files = ServeDir::new(site_root.join(PKG_DIR)).precompressed_br().precompressed_gzip();
    let assets = std::sync::Arc::new(assets);
    Router::new().nest_service(&format!("/{PKG_DIR}"), files).layer(axum::middleware::from_fn(
        move |request: Request, next: Next| {
            let assets = assets.clone();
            async move {
                let name = request.uri().path().rsplit('/').next().unwrap_or_default().to_string();
                let mut response: Response = next.run(request).await;
                if response.status().is_success() || response.status().as_u16() == 304 {
                    let lifetime = if assets.is_hashed(&name) { FOREVER } else { REVALIDATE };
                    response.headers_mut().insert(CACHE_CONTROL, lifetime);
                    // The same URL is sent as brotli, gzip or plain: a shared cache must key on it.
                    response.headers_mut().insert(VARY, HeaderValue::from_static("accept-encoding"));
                }
                response
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_hashes_and_names_the_stylesheet() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(&*SiteAssets::load(dir.path()).site_files().script, "/pkg/tourguide.js");
        assert_eq!(SiteAssets::load(dir.path()).stylesheet_href(), "/pkg/tourguide.css");

        std::fs::write(dir.path().join(HASH_FILE), "js: aa11\nwasm: bb22\ncss: cc33\n").unwrap();
        let assets = SiteAssets::load(dir.path());
        let files = assets.site_files();
        assert_eq!((&*files.script, &*files.wasm), ("/pkg/tourguide.aa11.js", "/pkg/tourguide.bb22.wasm"));
        assert_eq!(assets.stylesheet_href(), "/pkg/tourguide.cc33.css");
        assert!(assets.is_hashed("tourguide.bb22.wasm"));
        assert!(assets.is_hashed("tourguide.bb22.wasm.br"));
        assert!(!assets.is_hashed("tourguide.ffff.wasm"), "a hash of another build");
        assert!(!assets.is_hashed("tourguide_bg.wasm"));

        // A later unhashed build (cargo leptos watch) wins over the hashes of an earlier one.
        std::fs::create_dir_all(dir.path().join(PKG_DIR)).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.path().join(PKG_DIR).join("tourguide.js"), "plain").unwrap();
        assert_eq!(&*SiteAssets::load(dir.path()).site_files().script, "/pkg/tourguide.js");
    }
}
