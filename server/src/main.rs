use std::process::ExitCode;
use std::sync::Arc;

use server::config::{Config, ConfigError};

/// mimalloc as its crate gives it. Our own housekeeping, which had freed memory returned after a
/// burst (the `allocator` crate), did not win enough to keep (bench/RESULTS.md, "What the own
/// pieces win"): mimalloc returns it when the threads that freed it next allocate.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Transparent huge pages off for this process. With the kernel's `always` setting, a page the
/// allocator returned and touches again comes back as a 2 MiB page zeroed whole. Measured on the
/// bench with returning pages: RSS at rest 38 MiB with them, 28 MiB without; per open event
/// stream 37 KiB against 25 KiB.
#[cfg(target_os = "linux")]
fn without_transparent_huge_pages() {
    // The flag belongs to the whole process (its memory map), whatever thread sets it.
    if let Err(error) = rustix::thread::disable_transparent_huge_pages(true) {
        // Only an old kernel says no; the server works the same, only with more memory.
        eprintln!("transparent huge pages stay on: {error}");
    }
}

#[cfg(not(target_os = "linux"))]
fn without_transparent_huge_pages() {}

fn main() -> ExitCode {
    // Before the runtime's threads exist, so nothing of the process is laid out in huge pages.
    without_transparent_huge_pages();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("the async runtime starts");
    runtime.block_on(serve())
}

async fn serve() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // Operator commands print their own lines; the server's log would only get in the way.
    if server::cli::is_admin_command(&args) {
        return server::cli::run(args, |key| std::env::var(key).ok()).await;
    }
    let filter = || tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,sqlx=warn".into());
    if server::config::wants_json_logs(&args, |key| std::env::var(key).ok()) {
        tracing_subscriber::fmt().json().with_env_filter(filter()).init();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter()).init();
    }

    // `serve` is the default command; naming it is allowed.
    if args.first().is_some_and(|first| first == "serve") {
        args.remove(0);
    }
    let config = match Config::from_env_and_args(|key| std::env::var(key).ok(), args) {
        Ok(config) => config,
        Err(ConfigError::Help(text)) => {
            println!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("tourguide: bad configuration: {error}");
            return ExitCode::from(2);
        }
    };

    // An OpenAI-compatible model when the environment names one, else the built-in demo model.
    let provider: Arc<dyn runtime::ModelProvider> = match runtime::OpenAiProvider::from_env() {
        Ok(Some(provider)) => Arc::new(provider),
        Ok(None) => Arc::new(demo::DemoProvider),
        Err(error) => {
            eprintln!("tourguide: bad model configuration: {error}");
            return ExitCode::from(2);
        }
    };
    let running = match server::serve(&config, server::Services::new(provider)).await {
        Ok(running) => running,
        Err(error) => {
            eprintln!("tourguide: cannot start: {error}");
            return ExitCode::from(1);
        }
    };
    match running.address {
        Some(address) => println!("Tourguide listens on http://{address}"),
        None => println!("Tourguide works on {} (worker only, no web server)", config.database.describe()),
    }

    let shutdown = running.shutdown_sender();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        let _ = shutdown.send(true);
    });
    #[cfg(unix)]
    {
        let shutdown = running.shutdown_sender();
        tokio::spawn(async move {
            if let Ok(mut terminate) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                terminate.recv().await;
                let _ = shutdown.send(true);
            }
        });
    }
    running.wait().await;
    ExitCode::SUCCESS
}
