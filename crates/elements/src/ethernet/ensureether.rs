//! `EnsureEther`: makes sure IP packets carry an Ethernet header.

use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, HandlerError,
    HandlerInfo, Out, Spec, FIELD_OTHER,
};

/// Gives IP packets without an Ethernet header one.
pub struct EnsureEther {
    hdr: [u8; 14],
    drops: u64,
}

fn is_ip_type(t: &[u8]) -> bool {
    t == [0x08, 0x00] || t == [0x86, 0xdd]
}

impl EnsureEther {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("EnsureEther")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["ETHERTYPE", "SRC", "DST"])
        .profile(
            ActionProfile::reads(FIELD_OTHER)
                .writes(FIELD_OTHER)
                .reshaping()
                .dropping(),
        )
        .doc(
            "EnsureEther([ETHERTYPE, SRC, DST])\n\n\
             Packets without a network header annotation pass unchanged, as do IP\n\
             packets whose IP header is 14 bytes in behind an IP or IPv6 EtherType.\n\
             An IP packet whose IP header starts the packet and is preceded, in the\n\
             headroom, by such an Ethernet header gets that header back. Any other\n\
             IP packet loses what precedes its IP header and gets the header\n\
             DST, SRC, ETHERTYPE (defaults 02:02:02:02:02:02, 01:01:01:01:01:01,\n\
             0x0800). Packets that cannot grow are dropped and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)",
        );

    /// Configures an `EnsureEther`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let t: u32 = a.read_p("ETHERTYPE")?.unwrap_or(0x0800);
        let src: EtherAddr = a.read_p("SRC")?.unwrap_or(EtherAddr([1; 6]));
        let dst: EtherAddr = a.read_p("DST")?.unwrap_or(EtherAddr([2; 6]));
        a.finish()?;
        if t > 0xffff {
            return Err(ConfigError::new(
                "argument 1 (Ethernet encapsulation type) must be <= 0xFFFF",
            ));
        }
        let mut hdr = [0u8; 14];
        hdr[..6].copy_from_slice(&dst.0);
        hdr[6..12].copy_from_slice(&src.0);
        hdr[12..].copy_from_slice(&(t as u16).to_be_bytes());
        Ok(Box::new(EnsureEther { hdr, drops: 0 }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let nh = match p.network_header_offset() {
            Some(o) if o >= 0 => o as usize,
            _ => return Some(0),
        };
        if nh == 14 && p.len() >= 14 && is_ip_type(&p.data()[12..14]) {
            return Some(0);
        }
        if nh == 0 && p.headroom() >= 14 {
            p.push(14)?;
            if is_ip_type(&p.data()[12..14]) {
                p.set_mac_header(0);
                return Some(0);
            }
            p.pull(14);
        }
        p.pull(nh);
        match p.push(14) {
            Some(h) => {
                h.copy_from_slice(&self.hdr);
                p.set_mac_header(0);
                Some(0)
            }
            None => {
                self.drops += 1;
                None
            }
        }
    }
}

impl Element for EnsureEther {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_room", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push};
    use pronto_packet::Pool;

    #[test]
    fn ensures() {
        let pool = Pool::new(16).expect("pool");
        let kw = &["ETHERTYPE", "SRC", "DST"];
        let mut e = configure(kw, EnsureEther::configure, "", 1, 1).expect("ok");
        let mut frame = vec![9, 9, 9, 9, 9, 9, 8, 8, 8, 8, 8, 8, 0x08, 0x00];
        frame.extend_from_slice(&[0x45, 0, 0, 20]);
        // Already Ethernet.
        let mut a = pkt(&pool, &frame);
        a.set_network_header(14, 20);
        // Stripped Ethernet header still in the headroom.
        let mut b = pkt(&pool, &frame);
        b.pull(14);
        b.set_network_header(0, 20);
        // Some other header in front.
        let mut c = pkt(&pool, &[7, 7, 0x45, 0, 0, 20]);
        c.set_network_header(2, 20);
        // Not IP.
        let d = pkt(&pool, &[1, 2, 3]);
        let outs = push(e.as_mut(), &pool, vec![a, b, c, d], 1);
        assert_eq!(outs[0][0].data(), &frame[..]);
        assert_eq!(outs[0][1].data(), &frame[..]);
        assert_eq!(
            outs[0][2].data(),
            &[2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 8, 0, 0x45, 0, 0, 20]
        );
        assert_eq!(outs[0][3].data(), &[1, 2, 3]);
    }
}
