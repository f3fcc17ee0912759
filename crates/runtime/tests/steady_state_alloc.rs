//! The data plane allocates nothing per packet: running the firewall
//! example over a trace 20 times longer makes no more heap allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Writes the example trace repeated `times` times (timestamps kept
/// increasing) and returns its path.
fn repeated_trace(dir: &std::path::Path, times: usize) -> std::path::PathBuf {
    let src = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/firewall.pcap"
    ))
    .expect("examples/firewall.pcap");
    let (hdr, body) = src.split_at(24);
    let mut out = hdr.to_vec();
    for _ in 0..times {
        out.extend_from_slice(body);
    }
    let p = dir.join(format!("trace{times}.pcap"));
    std::fs::write(&p, out).expect("write trace");
    p
}

/// A scratch directory, removed with all in it when dropped (a failing
/// case's too).
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: String) -> Scratch {
        let d = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&d).expect("scratch dir");
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn allocations_for(times: usize) -> (u64, String) {
    let scratch = Scratch::new(format!("pronto-alloc-{}", std::process::id()));
    let dir = &scratch.0;
    let trace = repeated_trace(dir, times);
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/firewall.click"
    ))
    .expect("examples/firewall.click");
    let mut sm = pronto_lang::SourceMap::new();
    let file = sm.add("firewall.click", text);
    let defines = vec![
        ("TRACE".to_string(), trace.display().to_string()),
        (
            "OUT".to_string(),
            dir.join(format!("out{times}.pcap")).display().to_string(),
        ),
    ];
    let opts = pronto_lang::Options {
        defines: &defines,
        is_primitive: &pronto_runtime::is_known_class,
    };
    let (flat, _) = pronto_lang::parse_flat(&sm, file, &opts).expect("firewall.click parses");
    let ropts = pronto_runtime::RouterOptions {
        clock: pronto_runtime::Clock::Simulated(1_000_000_000_000_000_000),
        ..Default::default()
    };
    let mut router = pronto_runtime::Router::build(&flat, &sm, &ropts)
        .unwrap_or_else(|e| panic!("build: {e:?}"));
    let before = ALLOCS.load(Ordering::Relaxed);
    router.run().expect("run");
    let after = ALLOCS.load(Ordering::Relaxed);
    let count = router.read_handler("src.count", "").expect("src.count");
    (after - before, count)
}

#[test]
fn firewall_allocates_nothing_per_packet() {
    let (small, n1) = allocations_for(1);
    let (large, n20) = allocations_for(20);
    assert_eq!(n1.trim(), "158");
    assert_eq!(n20.trim(), "3160");
    // Set-up and the printed report allocate a little (number formatting
    // makes the exact count wobble by a few); 3,002 more packets must not
    // add an allocation per packet, or even per batch (12 more batches).
    assert!(
        large <= small + 8,
        "allocations grew with the packet count: {small} for 158 packets, {large} for 3160"
    );
}
