//! `.nfp` policies as a tenant writes them: parsing and checking arbitrary
//! text never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pronto_policy::Policy;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(e) = Policy::parse("fuzz.nfp", &text) {
        let _ = e.to_string();
    }
});
