//! Click's `tcpudp` elements (with the ICMP header check and the NAT
//! rewriters' shared core).

pub mod checkicmpheader;
pub mod checktcpheader;
pub mod checkudpheader;
pub mod dynudpipencap;
pub mod fasttcpflows;
pub mod fastudpflows;
pub mod fastudpsrcip6;
pub mod ftpportmapper;
pub mod ipaddrpairrewriter;
pub mod ipaddrrewriter;
pub mod iprewriter;
pub mod iprewriterpatterns;
pub mod l4sum;
pub mod maglevipmapper;
pub mod rripmapper;
pub mod rwcore;
pub mod rwtable;
pub mod settcpchecksum;
pub mod setudpchecksum;
pub mod sourceiphashmapper;
pub mod tcpfragmenter;
pub mod tcpipsend;
pub mod tcprewriter;
pub mod udpip6encap;
pub mod udpipencap;
pub mod udprewriter;
pub mod udpsource;

/// A port argument: a number or a service name (`www`, `dns`).
pub(crate) fn parse_port(name: &str, s: &str) -> Result<u16, crate::ConfigError> {
    let t = pronto_lang::args::unquote(s);
    match pronto_lang::args::parse_i64(&t) {
        Ok(v) if (0..=65535).contains(&v) => Ok(v as u16),
        Ok(_) => Err(crate::ConfigError::new(format!(
            "{name}: expected port number, found `{s}`"
        ))),
        Err(_) => pronto_classify::names::port_by_name(&t).ok_or_else(|| {
            crate::ConfigError::new(format!("{name}: expected port number, found `{s}`"))
        }),
    }
}

/// Writes a 20-byte IPv4 header (no options) with its checksum.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_ipv4(
    d: &mut [u8],
    len: usize,
    id: u16,
    frag: u16,
    ttl: u8,
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
) {
    use pronto_packet::wire::ipv4::{Ipv4Packet, IPV4_MIN_HEADER_LEN};
    let mut ip = Ipv4Packet::new_unchecked(&mut d[..IPV4_MIN_HEADER_LEN]);
    ip.set_version_and_header_len(IPV4_MIN_HEADER_LEN);
    ip.set_tos(0);
    ip.set_total_len(len as u16);
    ip.set_ident(id);
    ip.set_frag_field(frag);
    ip.set_ttl(ttl);
    ip.set_protocol(proto);
    ip.set_src_addr(src);
    ip.set_dst_addr(dst);
    ip.fill_checksum();
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers for this family's unit tests.

    use crate::{ConfigCtx, ConfigError, Element};
    use pronto_packet::{Packet, Pool};

    /// Configures an element of class `spec` by hand.
    pub fn configure(
        factory: crate::Factory,
        spec: &crate::Spec,
        config: &str,
        ninputs: usize,
        noutputs: usize,
    ) -> Result<Box<dyn Element>, ConfigError> {
        configure_with(factory, spec, config, ninputs, noutputs, &crate::NoPeers)
    }

    /// Elements configured earlier, for tests of elements that name others.
    #[derive(Default)]
    pub struct TestPeers {
        peers: Vec<crate::Peer>,
    }

    impl TestPeers {
        /// Adds element `name` of class `class`.
        pub fn add(&mut self, name: &str, class: &'static str, e: &dyn Element) {
            self.peers.push(crate::Peer {
                name: name.to_string(),
                class,
                shared: e.shared(),
            });
        }
    }

    impl crate::Peers for TestPeers {
        fn lookup(&self, name: &str) -> Option<crate::Peer> {
            self.peers.iter().find(|p| p.name == name).cloned()
        }

        fn of_class(&self, class: &str) -> Vec<crate::Peer> {
            self.peers
                .iter()
                .filter(|p| p.class == class)
                .cloned()
                .collect()
        }
    }

    /// As [`configure`], with `peers` configured earlier.
    pub fn configure_with(
        factory: crate::Factory,
        spec: &crate::Spec,
        config: &str,
        ninputs: usize,
        noutputs: usize,
        peers: &dyn crate::Peers,
    ) -> Result<Box<dyn Element>, ConfigError> {
        let push_in = vec![true; ninputs];
        let push_out = vec![true; noutputs];
        let ctx = ConfigCtx {
            name: "e",
            config,
            ninputs,
            noutputs,
            base_dir: std::path::Path::new("."),
            keywords: spec.keywords,
            output_push: &push_out,
            input_push: &push_in,
            peers,
        };
        factory(&ctx)
    }

    /// The error of a configuration that must fail.
    pub fn config_error(r: Result<Box<dyn Element>, ConfigError>) -> ConfigError {
        match r {
            Ok(_) => panic!("configuration should fail"),
            Err(e) => e,
        }
    }

    /// The Internet checksum of `parts` laid end to end (each of even
    /// length but the last), computed from scratch, word by word: the
    /// tests' independent check of incremental updates.
    pub fn inet_checksum(parts: &[&[u8]]) -> u16 {
        let bytes: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        let mut sum: u32 = 0;
        for c in bytes.chunks(2) {
            sum += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    /// An IPv6 packet from `src` to `dst` whose first next header is `next`
    /// and whose payload is `payload` (extension headers, if any, then the
    /// upper-layer message of protocol `upper` at `upper_off` in
    /// `payload`). With `csum` (the checksum's offset in the upper-layer
    /// message), that checksum is computed from scratch over the IPv6
    /// pseudo-header (RFC 8200 8.1) and the message.
    pub fn ip6(
        src: [u8; 16],
        dst: [u8; 16],
        next: u8,
        payload: &[u8],
        upper: (u8, usize),
        csum: Option<usize>,
    ) -> Vec<u8> {
        let mut v = vec![0x60, 0, 0, 0];
        v.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        v.extend_from_slice(&[next, 64]);
        v.extend_from_slice(&src);
        v.extend_from_slice(&dst);
        v.extend_from_slice(payload);
        if let Some(off) = csum {
            let (proto, at) = upper;
            let at = 40 + at;
            let at_c = at + off;
            v[at_c..at_c + 2].copy_from_slice(&[0, 0]);
            let ulen = (v.len() - at) as u32;
            let mut ph = Vec::new();
            ph.extend_from_slice(&src);
            ph.extend_from_slice(&dst);
            ph.extend_from_slice(&ulen.to_be_bytes());
            ph.extend_from_slice(&[0, 0, 0, proto]);
            let c = inet_checksum(&[&ph, &v[at..]]);
            let c = if c == 0 && proto == 17 { 0xffff } else { c };
            v[at_c..at_c + 2].copy_from_slice(&c.to_be_bytes());
        }
        v
    }

    /// A packet holding `bytes`, with its network header at `nh` (if any),
    /// `nh_len` bytes long.
    pub fn packet(pool: &Pool, bytes: &[u8], nh: Option<(isize, usize)>) -> Packet {
        let mut p = pool.alloc_from(bytes).expect("pool slot");
        if let Some((off, len)) = nh {
            p.set_network_header(off, len);
        }
        p
    }

    /// Pushes `pkts` into input `port` of `e`; returns the packets that came
    /// out of each of `noutputs` outputs, as bytes.
    pub fn run(
        e: &mut dyn Element,
        port: usize,
        pkts: Vec<Packet>,
        noutputs: usize,
        pool: &Pool,
        now: i64,
    ) -> Vec<Vec<Vec<u8>>> {
        run_packets(e, port, pkts, noutputs, pool, now)
            .into_iter()
            .map(|v| v.iter().map(|p| p.data().to_vec()).collect())
            .collect()
    }

    /// As [`run`], returning the packets themselves.
    pub fn run_packets(
        e: &mut dyn Element,
        port: usize,
        pkts: Vec<Packet>,
        noutputs: usize,
        pool: &Pool,
        now: i64,
    ) -> Vec<Vec<Packet>> {
        let mut batch = pronto_packet::Batch::new();
        for p in pkts {
            batch.push(p).expect("room");
        }
        let mut bufs: Vec<pronto_packet::Batch> =
            (0..noutputs).map(|_| pronto_packet::Batch::new()).collect();
        let mut ctrl = crate::Control::default();
        let passed = {
            let mut out = crate::Out::new(&mut bufs, pool, now, &mut ctrl);
            e.push(port, &mut batch, &mut out);
            out.passed()
        };
        let mut res: Vec<Vec<Packet>> = (0..noutputs).map(|_| Vec::new()).collect();
        if let Some(port) = passed {
            // Packets left in the batch go first: they were kept in order.
            let mut kept: Vec<Packet> = batch.drain().collect();
            kept.extend(bufs[port].drain());
            res[port] = kept;
        }
        for (i, b) in bufs.iter_mut().enumerate() {
            if Some(i) != passed {
                res[i].extend(b.drain());
            }
        }
        res
    }
}
