//! Server state change → DOM in Chromium.

use crate::process::ServerProcess;
use crate::report::Report;
use crate::stats::millis;
use crate::summary::{Better, Figure};

pub async fn browser(report: &mut Report, server: &ServerProcess) {
    let measured = crate::browser::dom_latency(&server.base).await;
    report.section(
        "Server state change → DOM in Chromium",
        "A signed-in page in Debian's Chromium (headless, Playwright; `end2end/bench/dom-latency.mjs`) is open on a \
         conversation, hydrated, its event stream connected. Each round a message is sent to that conversation from \
         outside the page (the script's own HTTP client with the page's cookies): the server records it and tells \
         the page's stream, the page fetches what changed and renders it. Measured from just before the sending \
         request to the moment a `MutationObserver` in the page sees the message's text in the DOM (both on this \
         machine's clock, `performance.timeOrigin + performance.now()`); the next round starts once the reply is in.",
    );
    let figure = Figure::unmeasured(
        "browser_change_to_dom_p50_ms",
        "server state change → DOM in Chromium, p50",
        "ms",
        Better::Lower,
    )
    .target(30.0);
    match measured {
        Ok(sample) => {
            report.table(&["rounds", "p50", "p99"], &crate::browser::describe(&sample));
            report.figure(Figure { value: Some(millis(sample.p50())), ..figure });
        }
        Err(reason) => {
            report.line(&format!("Not measured in this run: {reason}."));
            report.figure(figure);
        }
    }
}
