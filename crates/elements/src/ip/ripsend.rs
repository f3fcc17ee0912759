//! `RIPSend`: sends a fixed RIP II advertisement periodically.

use pronto_packet::wire::checksum;
use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Ip4, IpPrefix, Out, Spec, TaskStatus};

const SEC: i64 = 1_000_000_000;

/// Emits one RIP II packet (IP, UDP, one route) 3 s after start, then
/// every 30 s.
pub struct RIPSend {
    packet: [u8; 52],
    next: Option<i64>,
}

impl RIPSend {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RIPSend")
        .ports("0/1")
        .processing("h/h")
        .keywords(&["SRC", "DST", "PREFIX", "METRIC"])
        .profile(ActionProfile::NONE)
        .doc(
            "RIPSend(SRC, DST, PREFIX, METRIC)\n\n\
             Three seconds after the router starts, then every 30 seconds, emits a\n\
             52-byte RIP II response from SRC to DST (UDP port 520 to 520, TTL 200)\n\
             advertising PREFIX (ADDR/LEN) at METRIC with SRC as next hop; IP and UDP\n\
             checksums are set. Only a tiny piece of RIP.\n\n\
             Ports: no inputs, 1 push output.",
        );

    /// Configures a `RIPSend`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let src: Ip4 = a.read_mp("SRC")?;
        let dst: Ip4 = a.read_mp("DST")?;
        let what: IpPrefix = a.read_mp("PREFIX")?;
        let metric: u32 = a.read_mp("METRIC")?;
        a.finish()?;
        let mut p = [0u8; 52];
        // The pseudo-header fields first, for the UDP checksum.
        p[2..4].copy_from_slice(&32u16.to_be_bytes());
        p[9] = 17;
        p[12..16].copy_from_slice(&src.0);
        p[16..20].copy_from_slice(&dst.0);
        p[20..22].copy_from_slice(&520u16.to_be_bytes());
        p[22..24].copy_from_slice(&520u16.to_be_bytes());
        p[24..26].copy_from_slice(&32u16.to_be_bytes());
        p[28..32].copy_from_slice(&[2, 2, 0, 0]); // response, version 2
        p[32..36].copy_from_slice(&[0, 2, 0, 0]); // address family IP
        let masked: [u8; 4] = std::array::from_fn(|i| what.addr[i] & what.mask[i]);
        p[36..40].copy_from_slice(&masked);
        p[40..44].copy_from_slice(&what.mask);
        p[44..48].copy_from_slice(&src.0);
        p[48..52].copy_from_slice(&metric.to_be_bytes());
        let c = checksum(&p);
        p[26..28].copy_from_slice(&c.to_be_bytes());
        p[0] = 0x45;
        p[2..4].copy_from_slice(&52u16.to_be_bytes());
        p[8] = 200;
        let c = checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        Ok(Box::new(RIPSend {
            packet: p,
            next: None,
        }))
    }
}

impl Element for RIPSend {
    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        let next = *self.next.get_or_insert(now.saturating_add(3 * SEC));
        if now < next {
            return TaskStatus::SleepUntil(next);
        }
        if let Some(mut p) = out.pool.alloc_from(&self.packet) {
            p.set_network_header(0, 20);
            p.set_transport_header(20);
            let _ = batch.push(p);
            out.pass(0);
        }
        let next = now.saturating_add(30 * SEC);
        self.next = Some(next);
        TaskStatus::SleepUntil(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, run_task};
    use crate::Control;
    use pronto_packet::wire::pseudo_header_sum;
    use pronto_packet::Pool;

    #[test]
    fn advertises() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            &["SRC", "DST", "PREFIX", "METRIC"],
            RIPSend::configure,
            "18.26.4.24, 18.26.4.255, 10.0.0.0/8, 10",
            0,
            1,
        )
        .expect("ok");
        let mut c = Control::default();
        let (st, _) = run_task(e.as_mut(), &pool, vec![], 1, 0, &mut c);
        assert_eq!(st, TaskStatus::SleepUntil(3 * SEC));
        let (st, o) = run_task(e.as_mut(), &pool, vec![], 1, 3 * SEC, &mut c);
        assert_eq!(st, TaskStatus::SleepUntil(33 * SEC));
        let d = o[0][0].data();
        assert_eq!(checksum(&d[..20]), 0);
        assert_eq!(&d[..10], &[0x45, 0, 0, 52, 0, 0, 0, 0, 200, 17]);
        assert_eq!(
            &d[28..],
            &[2, 2, 0, 0, 0, 2, 0, 0, 10, 0, 0, 0, 255, 0, 0, 0, 18, 26, 4, 24, 0, 0, 0, 10]
        );
        let ps = pseudo_header_sum(&d[12..16], &d[16..20], 17, 32);
        assert_eq!(
            pronto_packet::wire::fold(pronto_packet::wire::ones_sum(&d[20..], ps)),
            0xffff
        );
    }
}
