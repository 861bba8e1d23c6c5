//! The key that keeps MCP OAuth tokens unreadable at rest (`TOURGUIDE_TOKEN_KEY`, from the
//! environment only): 32 bytes, written as 64 hex digits or in base64. Each value is sealed with
//! ChaCha20-Poly1305 under a random nonce of its own, bound to what it belongs to (the
//! associated data: the server and the owner), so a sealed value moved to another row does not
//! open. The database, a backup of it and the log only ever see the sealed bytes.

use base64::Engine;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};

/// The environment variable that holds the key.
pub const TOKEN_KEY_VARIABLE: &str = "TOURGUIDE_TOKEN_KEY";

const NONCE_BYTES: usize = 12;

#[derive(Clone)]
pub struct TokenKey(Key);

/// The key's value is never printed.
impl std::fmt::Debug for TokenKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("TokenKey(…)")
    }
}

impl PartialEq for TokenKey {
    fn eq(&self, other: &TokenKey) -> bool {
        self.0 == other.0
    }
}

/// A sealed value that does not open: another key, another row's, or damaged.
#[derive(Debug, thiserror::Error)]
#[error("a stored MCP sign-in cannot be opened with TOURGUIDE_TOKEN_KEY (another key, or damaged)")]
pub struct Unopenable;

impl TokenKey {
    /// `None` unless `text` is 32 bytes as 64 hex digits or as base64.
    pub fn parse(text: &str) -> Option<TokenKey> {
        let text = text.trim();
        let bytes = if text.len() == 64 && text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            hex::decode(text).ok()?
        } else {
            base64::engine::general_purpose::STANDARD.decode(text).ok()?
        };
        let bytes: [u8; 32] = bytes.try_into().ok()?;
        Some(TokenKey(bytes.into()))
    }

    /// The nonce followed by the ciphertext and its tag.
    pub fn seal(&self, bound_to: &str, plain: &[u8]) -> Vec<u8> {
        let cipher = ChaCha20Poly1305::new(&self.0);
        let nonce = ChaCha20Poly1305::generate_nonce(&mut OsRng);
        let sealed = cipher
            .encrypt(&nonce, Payload { msg: plain, aad: bound_to.as_bytes() })
            .expect("ChaCha20-Poly1305 seals any value shorter than 256 GiB");
        let mut out = Vec::with_capacity(NONCE_BYTES + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    pub fn open(&self, bound_to: &str, sealed: &[u8]) -> Result<Vec<u8>, Unopenable> {
        if sealed.len() < NONCE_BYTES {
            return Err(Unopenable);
        }
        let (nonce, sealed) = sealed.split_at(NONCE_BYTES);
        ChaCha20Poly1305::new(&self.0)
            .decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: bound_to.as_bytes() })
            .map_err(|_| Unopenable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    #[test]
    fn a_key_is_32_bytes_in_hex_or_base64() {
        let hex = TokenKey::parse(HEX).unwrap();
        let base64 = TokenKey::parse("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap();
        assert_eq!(hex, base64);
        for bad in ["", "short", &HEX[..62], "not base64 at all!", "AAECAwQFBgcICQoLDA0ODw=="] {
            assert!(TokenKey::parse(bad).is_none(), "{bad:?}");
        }
        assert_eq!(format!("{hex:?}"), "TokenKey(…)");
    }

    #[test]
    fn a_sealed_value_opens_only_with_its_key_and_its_binding() {
        let key = TokenKey::parse(HEX).unwrap();
        let sealed = key.seal("search/shared", b"the access token");
        assert!(!sealed.windows(6).any(|window| window == b"access"), "sealed, not in clear");
        assert_ne!(sealed, key.seal("search/shared", b"the access token"), "a nonce per value");
        assert_eq!(key.open("search/shared", &sealed).unwrap(), b"the access token");
        assert!(key.open("search/user:2", &sealed).is_err(), "another row's binding");
        let other = TokenKey::parse(&HEX.replace("00", "ff")).unwrap();
        assert!(other.open("search/shared", &sealed).is_err(), "another key");
        let mut damaged = sealed.clone();
        *damaged.last_mut().unwrap() ^= 1;
        assert!(key.open("search/shared", &damaged).is_err());
        assert!(key.open("search/shared", &sealed[..4]).is_err());
    }
}
