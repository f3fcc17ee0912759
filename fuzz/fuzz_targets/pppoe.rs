//! PPPoE and PPP from a hostile subscriber, as `PPPoEServer` reads them:
//! one session is brought up first (discovery, LCP, PAP, IPCP, IPv6CP),
//! then the input is cut into frames (a flag byte and a one-byte length
//! each): flag bit 0 sends the frame to input 1 (IP from the network)
//! instead of input 0; bit 1 makes it a frame of the live session (its
//! MAC and session id written in); bit 2 runs the timers, a second later,
//! after it. Every frame is counted and dropped or answered, never a
//! panic, and the session table stays consistent (`count` agrees with
//! `sessions`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pronto_elements::{registry, ConfigCtx, Control, Element, NoPeers, Out};
use pronto_packet::{Batch, Pool};

const SERVER: [u8; 6] = [2, 0, 0, 0, 0, 0xaa];
const PEER: [u8; 6] = [2, 0, 0, 0, 0, 1];
const T0: i64 = 1_795_737_600_000_000_000;

fn send(e: &mut dyn Element, pool: &Pool, port: usize, frame: &[u8], now: i64) -> Vec<Vec<u8>> {
    let mut bufs = [Batch::new(), Batch::new()];
    let mut ctrl = Control::default();
    let mut batch = Batch::new();
    if let Some(p) = pool.alloc_from(frame) {
        let _ = batch.push(p);
    }
    let mut out = Out::new(&mut bufs, pool, now, &mut ctrl);
    e.push(port, &mut batch, &mut out);
    let mut got = Vec::new();
    if out.passed() == Some(0) {
        got.extend(batch.iter().map(|p| p.data().to_vec()));
    }
    got.extend(bufs[0].iter().map(|p| p.data().to_vec()));
    got
}

fn discovery(code: u8, tags: &[(u16, &[u8])]) -> Vec<u8> {
    let mut f = SERVER.to_vec();
    f.extend_from_slice(&PEER);
    f.extend_from_slice(&[0x88, 0x63, 0x11, code, 0, 0]);
    let mut body = Vec::new();
    for (t, v) in tags {
        body.extend_from_slice(&t.to_be_bytes());
        body.extend_from_slice(&(v.len() as u16).to_be_bytes());
        body.extend_from_slice(v);
    }
    f.extend_from_slice(&(body.len() as u16).to_be_bytes());
    f.extend_from_slice(&body);
    f
}

fn ppp(proto: u16, code: u8, id: u8, data: &[u8]) -> Vec<u8> {
    let mut f = SERVER.to_vec();
    f.extend_from_slice(&PEER);
    f.extend_from_slice(&[0x88, 0x64, 0x11, 0, 0, 1]);
    f.extend_from_slice(&((data.len() + 6) as u16).to_be_bytes());
    f.extend_from_slice(&proto.to_be_bytes());
    f.extend_from_slice(&[code, id]);
    f.extend_from_slice(&((data.len() + 4) as u16).to_be_bytes());
    f.extend_from_slice(data);
    f
}

fn server() -> Option<Box<dyn Element>> {
    let dir = std::env::temp_dir().join(format!("pronto-fuzz-pppoe-{}", std::process::id()));
    let subs = dir.join("subs");
    std::fs::create_dir_all(&dir).ok()?;
    std::fs::write(&subs, "alice s3cret\n").ok()?;
    let entry = registry::lookup("PPPoEServer")?;
    let config = format!(
        "MAC 02:00:00:00:00:aa, SUBSCRIBERS {}, POOL 10.64.0.0/24, LOCAL 10.64.0.1, \
         CAPACITY 4, ECHO_INTERVAL 2, ECHO_FAILURES 2, IDLE_TIMEOUT 5, SETUP_TIMEOUT 4",
        subs.display()
    );
    let push = [true, true];
    let ctx = ConfigCtx {
        name: "bras",
        config: &config,
        ninputs: 2,
        noutputs: 2,
        base_dir: std::path::Path::new("."),
        keywords: entry.spec.keywords,
        output_push: &push,
        input_push: &push,
        peers: &NoPeers,
    };
    // The file is read at configuration: nothing is left in the
    // temporary directory after a run.
    let e = (entry.factory)(&ctx).ok();
    let _ = std::fs::remove_dir_all(&dir);
    e
}

fuzz_target!(|data: &[u8]| {
    let Ok(pool) = Pool::new(256) else { return };
    let Some(mut e) = server() else { return };
    let e = e.as_mut();
    // Session 1, up.
    let pado = send(e, &pool, 0, &discovery(0x09, &[(0x0101, b"")]), T0);
    let Some(cookie) = pado.first().map(|f| f[f.len() - 8..].to_vec()) else {
        return;
    };
    let r = send(e, &pool, 0, &discovery(0x19, &[(0x0101, b""), (0x0104, &cookie)]), T0);
    let Some(req) = r.get(1) else { return };
    send(e, &pool, 0, &ppp(0xc021, 1, 1, &[5, 6, 1, 2, 3, 4]), T0);
    send(e, &pool, 0, &ppp(0xc021, 2, req[23], &req[26..]), T0);
    let r = send(e, &pool, 0, &ppp(0xc023, 1, 1, b"\x05alice\x06s3cret"), T0);
    let (Some(ipcp), Some(v6)) = (r.get(1), r.get(2)) else { return };
    let (ipcp_id, v6_id) = (ipcp[23], v6[23]);
    send(e, &pool, 0, &ppp(0x8021, 1, 2, &[3, 6, 10, 64, 0, 2]), T0);
    send(e, &pool, 0, &ppp(0x8021, 2, ipcp_id, &[3, 6, 10, 64, 0, 1]), T0);
    send(e, &pool, 0, &ppp(0x8057, 1, 3, &[1, 10, 2, 0x50, 0x52, 0x4f, 0, 0, 0, 1]), T0);
    send(e, &pool, 0, &ppp(0x8057, 2, v6_id, &[1, 10, 2, 0x50, 0x52, 0x4f, 0, 0, 0, 0]), T0);
    assert_eq!(e.read_handler("count").ok().as_deref(), Some("1"));

    let mut now = T0;
    let mut rest = data;
    while let [flags, len, tail @ ..] = rest {
        let n = (*len as usize).min(tail.len());
        let mut frame = tail[..n].to_vec();
        rest = &tail[n..];
        if flags & 2 != 0 && frame.len() >= 18 {
            frame[..6].copy_from_slice(&SERVER);
            frame[6..12].copy_from_slice(&PEER);
            frame[16..18].copy_from_slice(&[0, 1]);
        }
        send(e, &pool, (flags & 1) as usize, &frame, now);
        if flags & 4 != 0 {
            now += 1_000_000_000;
            let mut bufs = [Batch::new(), Batch::new()];
            let mut ctrl = Control::default();
            let mut batch = Batch::new();
            let mut out = Out::new(&mut bufs, &pool, now, &mut ctrl);
            e.run_task(&mut batch, &mut out);
        }
    }
    let count: usize = e
        .read_handler("count")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(usize::MAX);
    let listed = e.read_handler("sessions").map(|s| s.lines().count()).unwrap_or(0);
    assert_eq!(count, listed, "count and the sessions list disagree");
});
