//! Percentiles of measured durations, and bounded load loops.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct Sample {
    sorted: Vec<Duration>,
}

impl Sample {
    pub fn new(mut durations: Vec<Duration>) -> Sample {
        assert!(!durations.is_empty(), "a sample needs measurements");
        durations.sort();
        Sample { sorted: durations }
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Nearest-rank percentile.
    pub fn percentile(&self, p: f64) -> Duration {
        let rank = ((p / 100.0) * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1]
    }

    pub fn p50(&self) -> Duration {
        self.percentile(50.0)
    }

    pub fn p99(&self) -> Duration {
        self.percentile(99.0)
    }
}

pub fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1_000.0)
}

/// `total` calls of `call(i)`, at most `concurrency` at a time; every call's duration and the
/// wall time of the whole loop.
pub async fn bounded<F, Fut>(total: usize, concurrency: usize, call: F) -> (Sample, Duration)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let call = Arc::new(call);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (call, next) = (call.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut durations = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break durations;
                }
                let at = Instant::now();
                call(i).await;
                durations.push(at.elapsed());
            }
        }));
    }
    let mut durations = Vec::with_capacity(total);
    for worker in workers {
        durations.extend(worker.await.unwrap());
    }
    (Sample::new(durations), started.elapsed())
}

pub fn per_second(count: usize, elapsed: Duration) -> String {
    format!("{:.0}/s", count as f64 / elapsed.as_secs_f64())
}

/// What a load loop measured: each call's latency, and the wall time of the whole loop.
pub struct Load {
    pub sample: Sample,
    pub elapsed: Duration,
}

impl Load {
    pub fn throughput(&self) -> String {
        per_second(self.sample.len(), self.elapsed)
    }

    /// Requests per second.
    pub fn rate(&self) -> f64 {
        self.sample.len() as f64 / self.elapsed.as_secs_f64()
    }
}

/// The run with the median throughput.
pub fn median(mut runs: Vec<Load>) -> Load {
    runs.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
    runs.swap_remove(runs.len() / 2)
}

/// Every run's throughput, in the order they ran.
pub fn runs_of(runs: &[Load]) -> String {
    runs.iter().map(Load::throughput).collect::<Vec<_>>().join(", ")
}

pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}
