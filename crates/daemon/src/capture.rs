//! `GET /v1/switch/ports/{port}/capture`: what a switch port sees, as a
//! pcapng stream (`pronto capture`).
//!
//! pcapng rather than pcap because it says which way each frame went
//! (the enhanced packet block's direction flag: inbound is what the switch
//! delivered to the port, outbound what the port's instance sent) and
//! ends with a statistics block carrying the frames the capture could not
//! keep up with; tcpdump and Wireshark read it as they read pcap.

use std::time::{Duration, Instant};

use pronto_switch::{Capture, Captured, Direction};

/// The most frames one capture may ask for.
pub const MAX_COUNT: u64 = 1_000_000;
/// The longest a capture may run.
pub const MAX_SECONDS: f64 = 3600.0;
/// Frames a capture's channel holds before the switch drops (and counts)
/// what the reader cannot take in time.
pub const QUEUE: usize = 4096;

fn block(kind: u32, body: &[u8]) -> Vec<u8> {
    let len = (12 + body.len()) as u32;
    let mut b = Vec::with_capacity(len as usize);
    b.extend_from_slice(&kind.to_le_bytes());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(body);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

/// Appends option `code` with `value`, padded to 4 bytes.
fn option(b: &mut Vec<u8>, code: u16, value: &[u8]) {
    b.extend_from_slice(&code.to_le_bytes());
    b.extend_from_slice(&(value.len() as u16).to_le_bytes());
    b.extend_from_slice(value);
    b.resize(b.len().next_multiple_of(4), 0);
}

fn end_of_options(b: &mut Vec<u8>) {
    b.extend_from_slice(&[0, 0, 0, 0]);
}

/// The section header and the one interface's description: `name` (the
/// switch port's), Ethernet, nanosecond timestamps.
pub fn header(name: &str, snaplen: u32) -> Vec<u8> {
    let mut shb = Vec::new();
    shb.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    shb.extend_from_slice(&1u16.to_le_bytes());
    shb.extend_from_slice(&0u16.to_le_bytes());
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    option(&mut shb, 4, b"pronto capture");
    end_of_options(&mut shb);
    let mut idb = Vec::new();
    idb.extend_from_slice(&1u16.to_le_bytes()); // LINKTYPE_ETHERNET
    idb.extend_from_slice(&0u16.to_le_bytes());
    idb.extend_from_slice(&snaplen.to_le_bytes());
    option(&mut idb, 2, name.as_bytes()); // if_name
    option(&mut idb, 9, &[9]); // if_tsresol: 10^-9 s
    end_of_options(&mut idb);
    let mut out = block(0x0A0D_0D0A, &shb);
    out.extend(block(1, &idb));
    out
}

fn ts_words(ns: i64) -> [u8; 8] {
    let t = ns.max(0) as u64;
    let mut w = [0u8; 8];
    w[..4].copy_from_slice(&((t >> 32) as u32).to_le_bytes());
    w[4..].copy_from_slice(&(t as u32).to_le_bytes());
    w
}

/// One frame as an enhanced packet block.
pub fn frame(c: &Captured) -> Vec<u8> {
    let mut b = Vec::with_capacity(48 + c.bytes.len());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&ts_words(c.ts_ns));
    b.extend_from_slice(&(c.bytes.len() as u32).to_le_bytes());
    b.extend_from_slice(&c.len.to_le_bytes());
    b.extend_from_slice(&c.bytes);
    b.resize(b.len().next_multiple_of(4), 0);
    // epb_flags, direction: 1 inbound (delivered to the port), 2 outbound
    // (sent by the port's instance).
    let dir: u32 = match c.dir {
        Direction::ToPort => 1,
        Direction::FromPort => 2,
    };
    option(&mut b, 2, &dir.to_le_bytes());
    end_of_options(&mut b);
    block(6, &b)
}

/// The closing statistics block: frames kept, and frames that passed the
/// filter but were dropped because the reader was behind (isb_osdrop).
pub fn statistics(now_ns: i64, received: u64, dropped: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&ts_words(now_ns));
    option(&mut b, 4, &received.to_le_bytes()); // isb_ifrecv
    option(&mut b, 7, &dropped.to_le_bytes()); // isb_osdrop
    end_of_options(&mut b);
    block(5, &b)
}

/// Runs `cap` until `count` frames, `seconds`, or `send` refusing (the
/// client left), handing each pcapng chunk to `send`; ends with the
/// statistics block.
/// `gone` says whether the client left (checked while no frame comes, so
/// that a capture nobody reads ends within a fifth of a second).
pub fn pump(
    cap: Capture,
    count: u64,
    seconds: f64,
    gone: impl Fn() -> bool,
    mut send: impl FnMut(Vec<u8>) -> bool,
) {
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let mut got = 0u64;
    while got < count {
        let left = until.saturating_duration_since(Instant::now());
        if gone() {
            return;
        }
        if left.is_zero() {
            break;
        }
        if let Some(c) = cap.next(left.min(Duration::from_millis(200))) {
            got += 1;
            if !send(frame(&c)) {
                return;
            }
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    let _ = send(statistics(now, got, cap.dropped()));
}

#[cfg(test)]
mod tests {
    #[test]
    fn blocks_are_padded_and_framed_by_their_length() {
        let c = pronto_switch::Captured {
            ts_ns: 1_700_000_000_123_456_789,
            dir: pronto_switch::Direction::FromPort,
            len: 61,
            bytes: vec![0xab; 61],
        };
        let b = super::frame(&c);
        // 12 framing + 20 fixed + 64 data (61 padded) + 8 flags + 4 end.
        assert_eq!(b.len(), 108);
        assert_eq!(&b[..4], &6u32.to_le_bytes());
        assert_eq!(&b[4..8], &108u32.to_le_bytes());
        assert_eq!(&b[104..], &108u32.to_le_bytes());
        // Captured and original lengths.
        assert_eq!(&b[20..24], &61u32.to_le_bytes());
        assert_eq!(&b[24..28], &61u32.to_le_bytes());
        // epb_flags: outbound.
        assert_eq!(&b[92..96], &[2, 0, 4, 0]);
        assert_eq!(&b[96..100], &2u32.to_le_bytes());
        let h = super::header("default/fw/eth0", 2048);
        assert_eq!(h.len() % 4, 0);
        assert_eq!(&h[8..12], &0x1A2B_3C4Du32.to_le_bytes());
    }
}
