//! IDS rule files (Snort syntax): parsing arbitrary text never panics,
//! and every error it reports renders.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pronto_elements::ids::rules;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let vars = [("HOME_NET".to_string(), "10.0.0.0/8".to_string())];
    if let Err(diags) = rules::parse(&text, "fuzz.rules", &vars) {
        for d in diags {
            let _ = format!("{d:?}");
        }
    }
});
