//! Time from a state change on the server to the DOM showing it, in Chromium: the bench hands its
//! running server to `end2end/bench/dom-latency.mjs` (Playwright driving Debian's Chromium) and
//! reads the samples it prints.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::process::PASSWORD;
use crate::stats::{ms, Sample};

const SCRIPT: &str = "end2end/bench/dom-latency.mjs";
const ROUNDS: usize = 40;

/// The samples, or why there are none (no Node packages, no Chromium).
pub async fn dom_latency(base: &str) -> Result<Sample, String> {
    let bundled = Path::new("end2end/node_modules/.bin/node");
    let node = if bundled.exists() { bundled.to_path_buf() } else { "node".into() };
    if !Path::new("end2end/node_modules/@playwright/test").exists() {
        return Err("the end-to-end packages are not installed (npm ci in end2end/)".into());
    }
    let output = tokio::time::timeout(
        Duration::from_secs(300),
        tokio::process::Command::new(node)
            .args([SCRIPT, base, "demo", PASSWORD, &ROUNDS.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .map_err(|_| "the browser measurement took more than five minutes".to_string())?
    .map_err(|error| format!("node did not start: {error}"))?;
    if !output.status.success() {
        return Err(format!("the browser measurement failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().rev().find(|line| line.starts_with('{')).ok_or("no samples printed")?;
    let parsed: serde_json::Value = serde_json::from_str(line).map_err(|error| error.to_string())?;
    let samples: Vec<Duration> = parsed["samples"]
        .as_array()
        .ok_or("no samples printed")?
        .iter()
        .filter_map(|value| value.as_f64())
        .map(|millis| Duration::from_secs_f64(millis.max(0.0) / 1_000.0))
        .collect();
    if samples.len() != ROUNDS {
        return Err(format!("{} of {ROUNDS} rounds measured", samples.len()));
    }
    Ok(Sample::new(samples))
}

pub fn describe(sample: &Sample) -> Vec<Vec<String>> {
    vec![vec![sample.len().to_string(), ms(sample.p50()), ms(sample.p99())]]
}
