//! Feeds arbitrary bytes to the configuration parser. It must never panic,
//! and a configuration it accepts, written back with `to_click` and parsed
//! again, must have the same elements.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pronto_lang::{parse_flat, Options, SourceMap};

fn is_primitive(class: &str) -> bool {
    matches!(
        class,
        "Idle" | "Discard" | "Queue" | "Counter" | "Tee" | "Strip" | "Classifier" | "Paint"
    )
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut sm = SourceMap::new();
    let file = sm.add("fuzz.click", text.as_ref());
    let defines = [("X".to_string(), "1".to_string())];
    let opts = Options {
        defines: &defines,
        is_primitive: &is_primitive,
    };
    match parse_flat(&sm, file, &opts) {
        Ok((flat, _warnings)) => {
            let mut sm2 = SourceMap::new();
            let file2 = sm2.add("flat.click", flat.to_click());
            if let Ok((again, _)) = parse_flat(&sm2, file2, &opts) {
                let names = |f: &pronto_lang::FlatConfig| -> Vec<String> {
                    f.elements.iter().map(|e| e.name.clone()).collect()
                };
                assert_eq!(names(&flat), names(&again));
                assert_eq!(flat.connections.len(), again.connections.len());
            }
        }
        Err(diags) => {
            for d in diags {
                let _ = d.render(&sm);
                let _ = d.render_click(&sm);
            }
        }
    }
});
