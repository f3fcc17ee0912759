//! What `FastUDPSource` (Ethernet/IPv4/UDP) and `FastUDPSourceIP6`
//! (Ethernet/IPv6/UDP) share: the packet built once at configure time,
//! the pull that copies it into pool packets (BATCH at a time, at most RATE
//! per second, LIMIT in all), the ports that step every INTERVAL packets,
//! and Click's handlers.

use pronto_packet::wire::{fold, ones_sum, set_be16};
use pronto_packet::Batch;

use super::fastudpflows::{clamp_len, flow_rate};
use super::l4sum::l4_checksum;
use super::{parse_port, write_ipv4};
use crate::standard::tokenbucket::GapRate;
use crate::{ConfigError, EtherAddr, HandlerError, HandlerInfo, Ip4, Ip6, Out};

/// Ethernet header length.
const ETHER: usize = 14;

/// The UDP checksum of `udp` (its checksum field zero) under the IPv6
/// pseudo-header of the 40-byte header `ip6`; a sum of 0 is sent as
/// 0xffff (RFC 8200 section 8.1: zero means "no checksum", which IPv6
/// forbids).
pub(crate) fn udp6_checksum(ip6: &[u8], udp: &[u8]) -> u16 {
    let pseudo = ones_sum(&ip6[8..40], 0) + udp.len() as u64 + 17;
    match !fold(ones_sum(udp, pseudo)) {
        0 => 0xffff,
        c => c,
    }
}

/// The network layer of the packet a source sends.
#[derive(Clone, Copy)]
pub(crate) enum Addrs {
    V4 { src: [u8; 4], dst: [u8; 4] },
    V6 { src: [u8; 16], dst: [u8; 16] },
}

impl Addrs {
    /// IP header length.
    fn hlen(&self) -> usize {
        match self {
            Addrs::V4 { .. } => 20,
            Addrs::V6 { .. } => 40,
        }
    }
}

/// A pull source of one UDP packet, sent again and again.
pub(crate) struct UdpSource {
    packet: Vec<u8>,
    addrs: Addrs,
    sport: u16,
    dport: u16,
    cksum: bool,
    interval: u32,
    /// Click's `_incr`: how far the ports have stepped.
    incr: u16,
    active: bool,
    limit: Option<u64>,
    rate: Option<GapRate>,
    count: u64,
    first: i64,
    last: i64,
}

/// The handlers both classes have.
pub(crate) const HANDLERS: &[HandlerInfo] = &[
    HandlerInfo::read("count"),
    HandlerInfo::rw("rate"),
    HandlerInfo::write("reset"),
    HandlerInfo::write("active"),
    HandlerInfo::write("limit"),
];

impl UdpSource {
    /// Reads `RATE, LIMIT, LENGTH, SRCETH, SRCIP[6], SPORT, DSTETH,
    /// DSTIP[6], DPORT [, CHECKSUM, INTERVAL, ACTIVE]` and builds the packet.
    pub(crate) fn configure(mut a: crate::Args, v6: bool) -> Result<UdpSource, ConfigError> {
        let rate: u32 = a.read_mp("RATE")?;
        let limit: i64 = a.read_mp("LIMIT")?;
        let len: i64 = a.read_mp("LENGTH")?;
        let src_eth: EtherAddr = a.read_mp("SRCETH")?;
        // Positional arguments are read in order: SRCIP, SPORT, DSTETH, DSTIP.
        let (addrs, sport, dst_eth) = if v6 {
            let src: Ip6 = a.read_mp("SRCIP6")?;
            let sport: String = a.read_mp("SPORT")?;
            let dst_eth: EtherAddr = a.read_mp("DSTETH")?;
            let dst: Ip6 = a.read_mp("DSTIP6")?;
            let addrs = Addrs::V6 {
                src: src.0,
                dst: dst.0,
            };
            (addrs, sport, dst_eth)
        } else {
            let src: Ip4 = a.read_mp("SRCIP")?;
            let sport: String = a.read_mp("SPORT")?;
            let dst_eth: EtherAddr = a.read_mp("DSTETH")?;
            let dst: Ip4 = a.read_mp("DSTIP")?;
            let addrs = Addrs::V4 {
                src: src.0,
                dst: dst.0,
            };
            (addrs, sport, dst_eth)
        };
        let dport: String = a.read_mp("DPORT")?;
        let cksum: bool = a.read_p("CHECKSUM")?.unwrap_or(true);
        let interval: u32 = a.read_p("INTERVAL")?.unwrap_or(0);
        let active: bool = a.read_p("ACTIVE")?.unwrap_or(true);
        a.finish()?;
        let sport = parse_port("SPORT", &sport)?;
        let dport = parse_port("DPORT", &dport)?;
        let len = clamp_len(len);
        let mut packet = vec![0u8; len];
        packet[0..6].copy_from_slice(&dst_eth.0);
        packet[6..12].copy_from_slice(&src_eth.0);
        let ulen = len - ETHER - addrs.hlen();
        match addrs {
            Addrs::V4 { src, dst } => {
                packet[12..14].copy_from_slice(&[0x08, 0x00]);
                write_ipv4(&mut packet[ETHER..], len - ETHER, 0, 0, 250, 17, src, dst);
            }
            Addrs::V6 { src, dst } => {
                packet[12..14].copy_from_slice(&[0x86, 0xdd]);
                let ip = &mut packet[ETHER..ETHER + 40];
                ip[0] = 0x60; // version 6, traffic class and flow label 0
                set_be16(ip, 4, ulen as u16); // payload length
                ip[6] = 17; // next header: UDP
                ip[7] = 250; // hop limit
                ip[8..24].copy_from_slice(&src);
                ip[24..40].copy_from_slice(&dst);
            }
        }
        let u = ETHER + addrs.hlen();
        set_be16(&mut packet, u + 4, ulen as u16);
        let mut s = UdpSource {
            packet,
            addrs,
            sport,
            dport,
            cksum,
            interval,
            incr: 0,
            active,
            limit: u64::try_from(limit).ok(),
            rate: (rate != 0).then(|| GapRate::new(rate)),
            count: 0,
            first: 0,
            last: 0,
        };
        s.set_ports();
        Ok(s)
    }

    /// Writes SPORT + incr and DPORT + incr, and the checksum.
    fn set_ports(&mut self) {
        let u = ETHER + self.addrs.hlen();
        let d = &mut self.packet;
        set_be16(d, u, self.sport.wrapping_add(self.incr));
        set_be16(d, u + 2, self.dport.wrapping_add(self.incr));
        set_be16(d, u + 6, 0);
        if self.cksum {
            let (ip, udp) = d[ETHER..].split_at_mut(self.addrs.hlen());
            let c = match self.addrs {
                Addrs::V4 { .. } => l4_checksum(ip, udp),
                Addrs::V6 { .. } => udp6_checksum(ip, udp),
            };
            set_be16(udp, 6, c);
        }
    }

    /// Up to `max` copies of the packet into `batch`.
    pub(crate) fn pull(&mut self, batch: &mut Batch, max: usize, out: &mut Out<'_>) {
        let hlen = self.addrs.hlen();
        for _ in 0..max {
            if !self.active || self.limit.is_some_and(|l| self.count >= l) {
                return;
            }
            if let Some(r) = self.rate.as_mut() {
                if !r.need_update(out.now) {
                    return;
                }
                r.update();
            }
            // A refusal is counted by the pool against this element.
            let Some(mut p) = out.pool.alloc_from(&self.packet) else {
                return;
            };
            p.set_mac_header(0);
            p.set_network_header(ETHER as isize, hlen);
            p.set_transport_header((ETHER + hlen) as isize);
            match self.addrs {
                Addrs::V4 { dst, .. } => p.set_dst_ip_anno(dst),
                Addrs::V6 { dst, .. } => p.set_dst_ip6_anno(dst),
            }
            self.count += 1;
            if self.count == 1 {
                self.first = out.now;
            }
            if self.limit.is_some_and(|l| self.count >= l) {
                self.last = out.now;
            }
            if self.interval > 0 && self.count.is_multiple_of(u64::from(self.interval)) {
                self.incr = self.incr.wrapping_add(1);
                self.set_ports();
            }
            if batch.push(p).is_err() {
                return;
            }
        }
    }

    /// Click's `reset`: the counts and the port step start again (the
    /// packet keeps its ports until the next step, as in Click).
    fn reset(&mut self) {
        self.count = 0;
        self.first = 0;
        self.last = 0;
        self.incr = 0;
    }

    /// Packets made (the `count` handler).
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    pub(crate) fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "rate" => Ok(flow_rate(self.count, self.first, self.last)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    pub(crate) fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let v = value.trim();
        match name {
            "reset" => self.reset(),
            "active" => {
                self.active = pronto_lang::args::parse_bool(v).map_err(|_| {
                    HandlerError::BadValue("active parameter must be boolean".into())
                })?;
                if self.active {
                    self.reset();
                }
            }
            "limit" => {
                let l = pronto_lang::args::parse_i64(v).map_err(|_| {
                    HandlerError::BadValue("limit parameter must be integer >= 0".into())
                })?;
                self.limit = u64::try_from(l).ok();
            }
            "rate" => {
                let r = pronto_lang::args::parse_u32(v).map_err(|_| {
                    HandlerError::BadValue("rate parameter must be integer >= 0".into())
                })?;
                self.rate = (r != 0).then(|| GapRate::new(r));
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}
