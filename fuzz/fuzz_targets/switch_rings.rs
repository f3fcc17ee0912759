//! A hostile peer writing into its port's shared memory: arbitrary ring
//! positions and descriptors, then the switch's receive side runs. The
//! switch must count what is wrong and never panic, and a well-behaved
//! neighbour's frame must still arrive.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pronto_switch::layout::{Geometry, PortShm, RingId};
use pronto_switch::peer::Peer;
use pronto_switch::switch::{Config, Switch};

fn frame(dst: u8, src: u8) -> [u8; 60] {
    let mut f = [0u8; 60];
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, dst]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, src]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f
}

fuzz_target!(|data: &[u8]| {
    let Ok(g) = Geometry::new(16, 16) else { return };
    let Ok(mut sw) = Switch::new(Config::default()) else {
        return;
    };
    let (Ok(h), Ok(a), Ok(b)) = (
        PortShm::create("fuzz-h", g),
        PortShm::create("fuzz-a", g),
        PortShm::create("fuzz-b", g),
    ) else {
        return;
    };
    for (id, p) in [(1, &h), (2, &a), (3, &b)] {
        if sw.attach(id, p.clone()).is_err() {
            return;
        }
    }
    sw.add_static([2, 0, 0, 0, 0, 2], 2);
    sw.add_static([2, 0, 0, 0, 0, 3], 3);
    let (Ok(mut pa), Ok(mut pb)) = (Peer::new(a, 8), Peer::new(b, 8)) else {
        return;
    };
    // Each 7-byte record: which ring, a word offset in it (two bytes), a
    // 32-bit value; every few records the switch runs a round.
    let ring_len = g.ring_offset(RingId::Fill) - g.ring_offset(RingId::Rx);
    for (i, rec) in data.chunks_exact(7).enumerate() {
        let ring = [RingId::Rx, RingId::Fill, RingId::Tx, RingId::Done][usize::from(rec[0] & 3)];
        let word = usize::from(u16::from_le_bytes([rec[1], rec[2]])) * 4 % ring_len;
        let v = u32::from_le_bytes([rec[3], rec[4], rec[5], rec[6]]);
        h.region.store_u32(g.ring_offset(ring) + word, v);
        if rec[0] & 0x80 != 0 {
            if let Some(bell) = &h.to_switch {
                let _ = bell.ring();
            }
        }
        if i % 4 == 3 {
            sw.poll_once();
        }
    }
    for _ in 0..4 {
        sw.poll_once();
    }
    // The neighbours still talk.
    let sent = pa.send(&[&frame(3, 2)[..]]);
    for _ in 0..8 {
        sw.poll_once();
    }
    // (The hostile port's frames, all zeros, flood to b as well.)
    let mut got = 0;
    while pb.recv(|f| got += usize::from(f.get(..14) == Some(&frame(3, 2)[..14]))) > 0 {}
    assert_eq!(got, sent, "a neighbour's frame was lost");
});
