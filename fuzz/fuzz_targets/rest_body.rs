//! The daemon's REST request bodies (tenant-supplied JSON): the first
//! byte picks the route, the rest is the body. Parsing and every check
//! that needs no daemon state must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pronto_daemon::api::{parse_request_body, BodyKind};

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    let kind = match which % 4 {
        0 => BodyKind::Tenant,
        1 => BodyKind::Instance,
        2 => BodyKind::Config,
        _ => BodyKind::Mac,
    };
    let _ = parse_request_body(kind, body);
});
