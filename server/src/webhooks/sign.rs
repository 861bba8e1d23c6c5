//! The secret a webhook is signed with, and the signatures: the Standard Webhooks scheme
//! (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>` over `id.timestamp.body`),
//! which its libraries verify as they are, and `Tourguide-Signature: t=…,v1=<hex>` over
//! `timestamp.body`, for a receiver that checks by hand.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2_11::Sha256;

/// What a secret starts with, as Standard Webhooks names it.
pub const PREFIX: &str = "whsec_";

/// A new secret: `whsec_` and the base64 of 24 random bytes, the signing key.
pub fn new_secret() -> String {
    let key: [u8; 24] = rand::random();
    format!("{PREFIX}{}", STANDARD.encode(key))
}

/// The secret as the admin sees it after its creation: enough to tell two apart, not to sign.
pub fn masked(secret: &str) -> String {
    let rest = secret.strip_prefix(PREFIX).unwrap_or(secret);
    format!("{PREFIX}{}…", rest.chars().take(4).collect::<String>())
}

/// The key a secret stands for: the bytes after `whsec_` when they are base64 (as Standard
/// Webhooks' libraries read a secret), else the secret's own bytes.
pub fn key(secret: &str) -> Vec<u8> {
    secret
        .strip_prefix(PREFIX)
        .and_then(|encoded| STANDARD.decode(encoded).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec())
}

fn mac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().to_vec()
}

/// The two signature headers' values for one delivery: `webhook-signature` and
/// `Tourguide-Signature`.
pub fn signatures(secret: &str, event_id: &str, timestamp: i64, body: &str) -> (String, String) {
    let key = key(secret);
    let timestamp = timestamp.to_string();
    let standard = mac(&key, &[event_id.as_bytes(), b".", timestamp.as_bytes(), b".", body.as_bytes()]);
    let ours = mac(&key, &[timestamp.as_bytes(), b".", body.as_bytes()]);
    (format!("v1,{}", STANDARD.encode(standard)), format!("t={timestamp},v1={}", hex::encode(ours)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification (its secret, id, timestamp and body).
    #[test]
    fn the_standard_signature_is_the_specifications_own_example() {
        let (standard, ours) = signatures(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(standard, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assert!(ours.starts_with("t=1614265330,v1=") && ours.len() == "t=1614265330,v1=".len() + 64, "{ours}");
    }

    #[test]
    fn a_new_secret_is_a_key_of_24_bytes_and_its_mask_hides_it() {
        let secret = new_secret();
        assert_eq!(key(&secret).len(), 24);
        assert_ne!(new_secret(), secret);
        let shown = masked(&secret);
        assert!(shown.starts_with("whsec_") && shown.ends_with('…') && shown.chars().count() == 11, "{shown}");
    }
}
