//! Binary trace records, as FromDAGDump and FromNLANRDump read them from a
//! file they did not write: the first byte picks the format (DAG with each
//! ENCAP, NLANR FR, FR+ or TSH), the rest is the file. Every record found
//! must lie inside the file and move the position forward; a malformed
//! record ends the walk, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pronto_elements::app::fromdagdump::Dag;
use pronto_elements::app::fromnlanrdump::Nlanr;
use pronto_elements::app::recordfile::{RecordFormat, Step};

fn walk<F: RecordFormat>(mut fmt: F, data: &[u8]) {
    let mut pos = 0;
    while let Step::Record(r) = fmt.record(data, pos) {
        assert!(r.next > pos, "record at {pos} does not advance");
        assert!(r.next <= data.len(), "record at {pos} ends past the file");
        assert!(r.start >= pos && r.start + r.caplen <= r.next, "packet bytes outside record at {pos}");
        pos = r.next;
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    // Link types ENCAP accepts, and none.
    const ENCAPS: [i32; 8] = [-1, 123, 104, 1, 100, 9, 50, 101];
    match pick % 11 {
        k @ 0..=7 => walk(Dag::new("fuzz", ENCAPS[k as usize]), file),
        8 => walk(Nlanr::new("fr").expect("format"), file),
        9 => walk(Nlanr::new("fr+").expect("format"), file),
        _ => walk(Nlanr::new("tsh").expect("format"), file),
    }
});
