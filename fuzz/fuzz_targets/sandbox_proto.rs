//! The sandbox control protocol from either side: the instance parses
//! requests, the daemon parses replies from an instance it does not trust,
//! and both read length-prefixed frames off a socket. Arbitrary bytes must
//! never panic, and a frame announcing more than the limit is refused
//! without allocating it.
#![no_main]

use std::io::Write;
use std::os::unix::net::UnixStream;

use libfuzzer_sys::fuzz_target;
use pronto_sandbox::proto::{recv_frame, Reply, Request, MAX_MESSAGE};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = Request::parse(data) {
        // What parses encodes (as a frame payload) and parses back to the
        // same request.
        let payload = r.encode();
        assert_eq!(Request::parse(&payload).ok(), Some(r));
    }
    let _ = Reply::parse(data);
    // The same bytes as a stream of frames.
    let Ok((mut a, b)) = UnixStream::pair() else {
        return;
    };
    if a.write_all(data).is_err() {
        return;
    }
    drop(a);
    while let Ok(Some((payload, _fds))) = recv_frame(&b) {
        assert!(payload.len() <= MAX_MESSAGE);
    }
});
