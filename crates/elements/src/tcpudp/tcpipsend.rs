//! `TCPIPSend`: makes TCP/IP packets on request (a write handler).

use std::collections::VecDeque;

use pronto_packet::wire::set_be16;

use super::l4sum::l4_checksum;
use super::{parse_port, write_ipv4};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// A 40-byte TCP/IP packet waiting to leave, and copies wanted.
struct Request {
    packet: [u8; 40],
    count: u32,
    stop: bool,
}

/// Sends the TCP/IP packets its `send` handler describes.
pub struct TCPIPSend {
    pending: VecDeque<Request>,
}

impl TCPIPSend {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("TCPIPSend")
        .ports("0/1")
        .processing("h/h")
        .profile(ActionProfile::NONE)
        .doc(
            "TCPIPSend()\n\n\
             Emits TCP/IP packets when its `send' handler is written `SADDR SPORT\n\
             DADDR DPORT SEQNO ACKNO FLAGS [COUNT STOP]': COUNT (default 1) 40-byte\n\
             packets (DF set, TTL 255, window 32120, FLAGS the TCP flag byte, both\n\
             checksums set); with STOP true the driver stops after them.\n\n\
             Ports: no inputs, 1 push output.\n\
             Handlers:\n  send (write)",
        );

    /// Configures a `TCPIPSend`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(TCPIPSend {
            pending: VecDeque::new(),
        }))
    }

    fn parse(value: &str) -> Result<Request, ConfigError> {
        let words = pronto_lang::args::split_words(value);
        let text = words.join(", ");
        let mut a = crate::Args::new(&text, &[]);
        let src: crate::Ip4 = a.read_mp("SRC")?;
        let sport: String = a.read_mp("SPORT")?;
        let dst: crate::Ip4 = a.read_mp("DST")?;
        let dport: String = a.read_mp("DPORT")?;
        let seq: u32 = a.read_mp("SEQNO")?;
        let ack: u32 = a.read_mp("ACKNO")?;
        let flags: u8 = a.read_mp("FLAGS")?;
        let count: u32 = a.read_p("COUNT")?.unwrap_or(1);
        let stop = a.read_p("STOP")?.unwrap_or(false);
        a.finish()?;
        let mut d = [0u8; 40];
        write_ipv4(&mut d, 40, 0, 0x4000, 255, 6, src.0, dst.0);
        set_be16(&mut d, 20, parse_port("SPORT", &sport)?);
        set_be16(&mut d, 22, parse_port("DPORT", &dport)?);
        d[24..28].copy_from_slice(&seq.to_be_bytes());
        d[28..32].copy_from_slice(&ack.to_be_bytes());
        d[32] = 0x50;
        d[33] = flags;
        set_be16(&mut d, 34, 32120);
        let (ip, tcp) = d.split_at_mut(20);
        let c = l4_checksum(ip, tcp);
        set_be16(tcp, 16, c);
        Ok(Request {
            packet: d,
            count,
            stop,
        })
    }
}

impl Element for TCPIPSend {
    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::write("send")];
        H
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "send" => {
                let r = Self::parse(value).map_err(|e| HandlerError::BadValue(e.message))?;
                self.pending.push_back(r);
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn after_write(&mut self, out: &mut Out<'_>) -> bool {
        let mut room = pronto_packet::BATCH_MAX;
        while let Some(r) = self.pending.front_mut() {
            while r.count > 0 && room > 0 {
                if let Some(mut p) = out.pool.alloc_from(&r.packet) {
                    p.set_network_header(0, 20);
                    p.set_transport_header(20);
                    out.emit(0, p);
                }
                r.count -= 1;
                room -= 1;
            }
            if r.count > 0 {
                return true;
            }
            if r.stop {
                out.stop();
            }
            self.pending.pop_front();
        }
        false
    }
}

/// The bytes of a `send` request (for tests).
#[cfg(test)]
fn request_bytes(value: &str) -> Vec<u8> {
    TCPIPSend::parse(value)
        .map(|r| r.packet.to_vec())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt};
    use crate::Control;
    use pronto_packet::wire::{checksum, fold, ones_sum, pseudo_header_sum};
    use pronto_packet::{Batch, Pool};

    #[test]
    fn sends_on_request() {
        let d = request_bytes("1.0.0.1 20 2.0.0.2 www 1000 2000 18");
        assert_eq!(
            &d[..12],
            &[0x45, 0, 0, 40, 0, 0, 0x40, 0, 255, 6, d[10], d[11]]
        );
        assert_eq!(checksum(&d[..20]), 0);
        assert_eq!(
            &d[20..36],
            &[0, 20, 0, 80, 0, 0, 3, 0xe8, 0, 0, 7, 0xd0, 0x50, 18, 0x7d, 0x78]
        );
        let ps = pseudo_header_sum(&d[12..16], &d[16..20], 6, 20);
        assert_eq!(fold(ones_sum(&d[20..], ps)), 0xffff);

        let pool = Pool::new(8).expect("pool");
        let _ = pkt(&pool, &[0]);
        let mut e = configure(&[], TCPIPSend::configure, "", 0, 1).expect("ok");
        e.write_handler("send", "1.0.0.1 20 2.0.0.2 80 1 2 2 3 true")
            .expect("send");
        assert!(e.write_handler("send", "1.0.0.1 20").is_err());
        let mut bufs = vec![Batch::new()];
        let mut ctrl = Control::default();
        let more = {
            let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
            e.after_write(&mut out)
        };
        assert!(!more);
        assert_eq!(bufs[0].len(), 3);
        assert_eq!(ctrl.stop_requests, 1);
    }
}
