//! Test helpers for the `standard` elements: configure an element by hand
//! and drive it with batches.

use pronto_packet::{Batch, Packet, Pool};

use crate::{ConfigCtx, ConfigError, Control, Element, Factory, Out, TaskStatus};

/// Configures `factory` with `config`, `nin` push inputs and `nout` push
/// outputs.
pub fn configure(
    keywords: &'static [&'static str],
    factory: Factory,
    config: &str,
    nin: usize,
    nout: usize,
) -> Result<Box<dyn Element>, ConfigError> {
    configure_with(
        keywords,
        factory,
        config,
        &vec![true; nin],
        &vec![true; nout],
    )
}

/// As [`configure`], with explicit push (true) / pull (false) ports.
pub fn configure_with(
    keywords: &'static [&'static str],
    factory: Factory,
    config: &str,
    input_push: &[bool],
    output_push: &[bool],
) -> Result<Box<dyn Element>, ConfigError> {
    let ctx = ConfigCtx {
        name: "e",
        config,
        ninputs: input_push.len(),
        noutputs: output_push.len(),
        base_dir: std::path::Path::new("."),
        keywords,
        output_push,
        input_push,
        peers: &crate::NoPeers,
    };
    factory(&ctx)
}

/// The configure error text.
pub fn config_err(r: Result<Box<dyn Element>, ConfigError>) -> String {
    match r {
        Ok(_) => panic!("configuration unexpectedly accepted"),
        Err(e) => e.message,
    }
}

/// A packet holding `data`.
pub fn pkt(pool: &Pool, data: &[u8]) -> Packet {
    pool.alloc_from(data).expect("pool has room")
}

/// What one call emitted, per output port.
pub type Outputs = Vec<Vec<Packet>>;

fn collect(bufs: &mut [Batch], batch: &mut Batch, passed: Option<usize>) -> Outputs {
    let mut outs: Outputs = (0..bufs.len()).map(|_| Vec::new()).collect();
    if let Some(k) = passed {
        if let Some(o) = outs.get_mut(k) {
            o.extend(batch.drain());
        }
    }
    batch.clear();
    for (i, b) in bufs.iter_mut().enumerate() {
        outs[i].extend(b.drain());
    }
    outs
}

/// Pushes `pkts` into input `port` at time `now`, with `nout` outputs.
pub fn push_at(
    e: &mut dyn Element,
    pool: &Pool,
    port: usize,
    pkts: Vec<Packet>,
    nout: usize,
    now: i64,
    ctrl: &mut Control,
) -> Outputs {
    let mut batch = Batch::new();
    for p in pkts {
        batch.push(p).expect("batch has room");
    }
    let mut bufs: Vec<Batch> = (0..nout).map(|_| Batch::new()).collect();
    let (passed, spilled) = {
        let mut out = Out::new(&mut bufs, pool, now, ctrl);
        e.push(port, &mut batch, &mut out);
        (out.passed(), out.spilled())
    };
    let mut outs = collect(&mut bufs, &mut batch, passed);
    // Spilled batches come before what stayed in each port's buffer.
    for (k, mut b) in spilled.into_iter().rev() {
        let mut v: Vec<Packet> = b.drain().collect();
        v.append(&mut outs[k]);
        outs[k] = v;
    }
    outs
}

/// Pushes `pkts` into input 0 at time 0.
pub fn push(e: &mut dyn Element, pool: &Pool, pkts: Vec<Packet>, nout: usize) -> Outputs {
    let mut ctrl = Control::default();
    push_at(e, pool, 0, pkts, nout, 0, &mut ctrl)
}

/// Pushes `pkts` into input 0 one packet per call (a batch of one each,
/// as the runtime does where it keeps Click's order); the outputs of all
/// the calls, in order.
pub fn push_one_by_one(
    e: &mut dyn Element,
    pool: &Pool,
    pkts: Vec<Packet>,
    nout: usize,
) -> Outputs {
    let mut outs: Outputs = (0..nout).map(|_| Vec::new()).collect();
    for p in pkts {
        for (k, v) in push(e, pool, vec![p], nout).into_iter().enumerate() {
            outs[k].extend(v);
        }
    }
    outs
}

/// Pulls up to `max` packets from output `port`.
pub fn pull(
    e: &mut dyn Element,
    pool: &Pool,
    port: usize,
    max: usize,
    nout: usize,
    now: i64,
) -> (Vec<Packet>, Outputs) {
    let mut batch = Batch::new();
    let mut bufs: Vec<Batch> = (0..nout).map(|_| Batch::new()).collect();
    let mut ctrl = Control::default();
    {
        let mut out = Out::new(&mut bufs, pool, now, &mut ctrl);
        e.pull(port, &mut batch, max, &mut out);
    }
    let got: Vec<Packet> = batch.drain().collect();
    let outs = collect(&mut bufs, &mut Batch::new(), None);
    (got, outs)
}

/// Runs the element's task at `now`, first giving it `pulled` if it asked
/// to pull; returns the status and what it emitted.
pub fn run_task(
    e: &mut dyn Element,
    pool: &Pool,
    pulled: Vec<Packet>,
    nout: usize,
    now: i64,
    ctrl: &mut Control,
) -> (TaskStatus, Outputs) {
    let mut batch = Batch::new();
    for p in pulled {
        batch.push(p).expect("batch has room");
    }
    let mut bufs: Vec<Batch> = (0..nout).map(|_| Batch::new()).collect();
    let (st, passed) = {
        let mut out = Out::new(&mut bufs, pool, now, ctrl);
        let st = e.run_task(&mut batch, &mut out);
        (st, out.passed())
    };
    (st, collect(&mut bufs, &mut batch, passed))
}

/// The bytes of each packet.
pub fn bytes(pkts: &[Packet]) -> Vec<Vec<u8>> {
    pkts.iter().map(|p| p.data().to_vec()).collect()
}

/// Reads a handler.
pub fn read(e: &dyn Element, h: &str) -> String {
    e.read_handler(h).expect("handler reads")
}

/// The drop reasons an element reports ([`Element::counters`]), in order.
pub fn drop_counters(e: &dyn Element) -> Vec<(&'static str, u64)> {
    let mut c = crate::Counters::new();
    e.counters(&mut c);
    c.drops().collect()
}

/// The other counters an element reports, in order.
pub fn count_counters(e: &dyn Element) -> Vec<(&'static str, u64)> {
    let mut c = crate::Counters::new();
    e.counters(&mut c);
    c.iter()
        .filter(|x| x.1 == crate::CounterKind::Count)
        .map(|(n, _, v)| (n, v))
        .collect()
}

/// An IPv4/UDP packet 127.0.0.1:`sport` -> 127.0.0.1:`dport` carrying
/// `payload`, for raw sockets on loopback (IP and UDP checksums 0: the
/// kernel fills the first, the second means none).
pub fn loopback_udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = (28 + payload.len()) as u16;
    let mut p = Vec::with_capacity(usize::from(len));
    // Version 4, 20-byte header, TOS 0, total length; ID 0, don't
    // fragment; TTL 64, UDP, checksum left to the kernel.
    p.extend_from_slice(&[0x45, 0]);
    p.extend_from_slice(&len.to_be_bytes());
    p.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    p.extend_from_slice(&[127, 0, 0, 1, 127, 0, 0, 1]);
    p.extend_from_slice(&sport.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    p.extend_from_slice(&(len - 20).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    p
}
