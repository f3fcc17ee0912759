//! IP summary dump text, as FromIPSummaryDump reads it from a file it did
//! not write: arbitrary bytes become its DATA (byte for byte, through a
//! `\<hex>` string) and the router runs until the dump ends. Bad lines are
//! counted and skipped, never a panic.
#![no_main]

use std::fmt::Write as _;

use libfuzzer_sys::fuzz_target;
use pronto_lang::{parse_flat, Options, SourceMap};
use pronto_runtime::{Clock, Router, RouterOptions};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, dump)) = data.split_first() else {
        return;
    };
    let mut hex = String::with_capacity(dump.len() * 2);
    for b in dump {
        let _ = write!(hex, "{b:02x}");
    }
    let config = format!(
        "FromIPSummaryDump(DATA \"\\<{hex}>\", STOP true, CHECKSUM {}, PROTO {}) -> Discard;",
        flags & 1 == 1,
        flags >> 1,
    );
    let mut sm = SourceMap::new();
    let file = sm.add("fuzz.click", config);
    let opts = Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    let Ok((flat, _)) = parse_flat(&sm, file, &opts) else {
        return;
    };
    let ropts = RouterOptions {
        clock: Clock::Simulated(1_000_000_000_000_000_000),
        // A small pool: a run is one dump of a few kilobytes.
        pool_slots: 512,
        ..Default::default()
    };
    if let Ok(mut r) = Router::build(&flat, &sm, &ropts) {
        let _ = r.run();
    }
});
