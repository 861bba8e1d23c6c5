//! What the server's async workers free after a burst goes back to the system well within
//! mimalloc's own purge delay (1 s), although the workers then sleep and nothing allocates. One
//! test per file: it reads the whole process's memory, which another test beside it would change.

use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

/// `VmRSS` of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc is readable");
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).expect("VmRSS is there");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmRSS is a number")
}

#[test]
fn memory_freed_on_workers_that_then_sleep_is_returned() {
    // As the server's runtime is built and woken (server/src/main.rs).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_park(allocator::on_thread_park)
        .build()
        .unwrap();
    let handle = runtime.handle().clone();
    allocator::return_memory_in_background(move || (0..2).for_each(|_| drop(handle.spawn(async {}))))
        .expect("the thread starts");
    let before = rss_kib();
    // A burst like a thousand open event streams: tasks, each holding buffers, until told to end.
    let (close, _) = tokio::sync::broadcast::channel::<()>(1);
    let (opened, mut all_open) = tokio::sync::mpsc::channel::<()>(1);
    for n in 0..4000_u32 {
        let (mut closed, opened) = (close.subscribe(), opened.clone());
        runtime.spawn(async move {
            let buffers: Vec<Vec<u8>> = (0..4).map(|i| vec![(n + i) as u8; 4096]).collect();
            let small: Vec<Box<[u8; 64]>> = (0..16).map(|_| Box::new([n as u8; 64])).collect();
            drop(opened);
            let _ = closed.recv().await;
            std::hint::black_box((buffers, small));
        });
    }
    drop(opened);
    runtime.block_on(async { all_open.recv().await });
    let with_tasks = rss_kib();
    assert!(with_tasks >= before + 60 * 1024, "the tasks take memory: {before} KiB, then {with_tasks} KiB");
    close.send(()).unwrap();
    // Each task ends on whichever worker polls it; then the workers have nothing left to do.
    let closed_at = Instant::now();

    // Well before mimalloc's purge delay would let it return the pages by itself.
    let deadline = Duration::from_millis(900);
    let mut after;
    loop {
        std::thread::sleep(Duration::from_millis(50));
        after = rss_kib();
        if after <= before + 5 * 1024 || closed_at.elapsed() >= deadline {
            break;
        }
    }
    assert!(
        after <= before + 5 * 1024,
        "{} KiB of the tasks' {} KiB still held after {:?} ({before} KiB before)",
        after.saturating_sub(before),
        with_tasks - before,
        closed_at.elapsed()
    );
}
