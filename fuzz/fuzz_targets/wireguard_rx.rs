//! The WireGuard gateway's receive side: arbitrary UDP payloads (and
//! arbitrary IP packets) arriving for its port never panic, every packet
//! leaves or is counted, and arbitrary key-file text parses or is refused
//! with a message. The first byte picks the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pronto_elements::vpn::wgconf::{PeerConf, WgConf};
use pronto_elements::vpn::wireguard::WireGuard;
use pronto_elements::{Control, Counters, Element, Out};
use pronto_packet::{Batch, Pool};

fn gateway() -> WireGuard {
    let conf = WgConf {
        private_key: [1; 32],
        listen_port: Some(51820),
        peers: vec![PeerConf {
            public_key: [9; 32],
            preshared_key: None,
            allowed_ips: vec![("10.0.0.0".parse().expect("address"), 8)],
            endpoint: Some("192.0.2.2:51820".parse().expect("address")),
            persistent_keepalive: Some(25),
        }],
    };
    WireGuard::from_conf(&conf, [192, 0, 2, 1], 51820, 1420).expect("configures")
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    if sel % 3 == 2 {
        let _ = WgConf::parse("fuzz.conf", &String::from_utf8_lossy(rest));
        return;
    }
    let pool = Pool::new(64).expect("pool");
    let mut wg = gateway();
    let mut frame = Vec::with_capacity(28 + rest.len());
    if sel % 3 == 0 {
        // An IPv4/UDP header to our port around the payload.
        let total = (28 + rest.len()).min(65535) as u16;
        frame.extend_from_slice(&[0x45, 0]);
        frame.extend_from_slice(&total.to_be_bytes());
        frame.extend_from_slice(&[0, 0, 0, 0, 64, 17, 0, 0, 192, 0, 2, 2, 192, 0, 2, 1]);
        frame.extend_from_slice(&51820u16.to_be_bytes());
        frame.extend_from_slice(&51820u16.to_be_bytes());
        frame.extend_from_slice(&(total - 20).to_be_bytes());
        frame.extend_from_slice(&[0, 0]);
    }
    frame.extend_from_slice(rest);
    let Some(p) = pool.alloc_from(&frame[..frame.len().min(pronto_packet::MAX_PACKET)]) else {
        return;
    };
    let mut batch = Batch::new();
    let _ = batch.push(p);
    let mut bufs = [Batch::new(), Batch::new()];
    let mut ctrl = Control::default();
    let left = {
        let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
        wg.push(1, &mut batch, &mut out);
        let passed = out.passed().map_or(0, |_| batch.len());
        passed + out.spilled().iter().map(|(_, b)| b.len()).sum::<usize>()
    } + bufs[0].len()
        + bufs[1].len();
    let mut c = Counters::new();
    wg.counters(&mut c);
    // One packet in: it left (possibly as an answer) or was counted.
    assert!(left >= 1 || c.dropped() == 1, "a packet vanished uncounted");
});
