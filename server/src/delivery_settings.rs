//! How the delivery worker tries what it sends, webhooks and mails alike: apart from both, since
//! the worker (`webhooks`) drives the mailer (`mail`) and each reads these.

use std::time::Duration;

/// How deliveries are tried. Tests shorten the waits.
#[derive(Debug, Clone)]
pub struct DeliverySettings {
    /// The wait after the first failed attempt; it doubles after each one.
    pub first_retry: Duration,
    /// The longest wait between two attempts.
    pub longest_retry: Duration,
    /// After this long since its event, a delivery that still fails is given up.
    pub give_up_after: Duration,
    /// How long one attempt may take.
    pub timeout: Duration,
    /// How often the worker looks without being woken (for retries that fell due, and the
    /// reminders).
    pub sweep: Duration,
}

impl Default for DeliverySettings {
    fn default() -> Self {
        DeliverySettings {
            first_retry: Duration::from_secs(10),
            longest_retry: Duration::from_secs(3600),
            give_up_after: Duration::from_secs(24 * 3600),
            timeout: Duration::from_secs(10),
            sweep: Duration::from_secs(2),
        }
    }
}

impl DeliverySettings {
    /// The wait before the attempt after `attempts` failed ones.
    pub fn backoff(&self, attempts: i64) -> Duration {
        let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
        self.first_retry.saturating_mul(2u32.saturating_pow(doublings)).min(self.longest_retry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        let settings = DeliverySettings::default();
        let waits: Vec<u64> = (1..=12).map(|attempts| settings.backoff(attempts).as_secs()).collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600, 3600]);
        assert_eq!(settings.backoff(i64::MAX).as_secs(), 3600);
    }
}
