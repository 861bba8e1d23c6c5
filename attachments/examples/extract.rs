//! Prints what the model would get for a file: `cargo run -p attachments --example extract -- FILE`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: extract FILE");
        return ExitCode::FAILURE;
    };
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let started = std::time::Instant::now();
    match attachments::extract(&path, &bytes, &attachments::Limits::default()) {
        Ok(extracted) => {
            println!("{}", extracted.text);
            eprintln!(
                "{:?}: {} characters{} in {:?}",
                extracted.kind,
                extracted.text.chars().count(),
                if extracted.truncated { ", truncated" } else { "" },
                started.elapsed()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("refused: {e} ({e:?})");
            ExitCode::FAILURE
        }
    }
}
