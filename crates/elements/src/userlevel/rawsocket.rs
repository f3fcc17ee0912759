//! `RawSocket`: IPv4 packets through a raw IP socket (`SOCK_RAW`) of one
//! protocol. The same engine serves Click's `FromRawSocket` (push) and
//! `ToRawSocket` (pull), each in its own file.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, OwnedFd};

use pronto_packet::{Batch, Packet, DEFAULT_HEADROOM, EXTRA_LENGTH_ANNO_OFFSET, MAX_PACKET};
use rustix::io::Errno;
use rustix::net::{
    AddressFamily, Protocol, RecvFlags, SendFlags, SocketAddrAny, SocketFlags, SocketType,
};

use super::socket::strerror;
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, PullFrom, Spec,
    TaskStatus, WaitFd,
};

/// An IPv4 header without options.
const IP_MIN: usize = 20;

/// The keywords of the three raw-socket classes.
pub(crate) const KEYWORDS: &[&str] = &["TYPE", "PORT", "SNAPLEN", "HEADROOM", "BURST"];

/// The text shared by the three classes' documentation.
macro_rules! rawsocket_doc_body {
    () => {
        "TYPE is the IP protocol the socket carries: TCP, UDP, GRE, ICMP (or\n\
         another name or number). The socket receives a copy of every IPv4\n\
         packet of that protocol the host receives (its IP header included),\n\
         and sends input packets, which must start with an IPv4 header\n\
         (IP_HDRINCL), to their header's destination address; the kernel fills\n\
         in a zero source address, a zero IP ID and the header checksum.\n\
         Broadcast destinations are allowed (SO_BROADCAST). Opening the socket\n\
         needs CAP_NET_RAW (root). With PORT (TCP and UDP), a TCP or UDP socket\n\
         is also bound to that port on every address, so that the host's stack\n\
         neither answers it with resets nor with port unreachables (Click does\n\
         this for PlanetLab); for GRE and ICMP, PORT (a key or identifier) is\n\
         checked and kept, as in Click, but nothing filters on it.\n\n\
         Received packets get their IP header marked, their destination IP\n\
         annotation set and the receive time (pronto's clock; Click asks the\n\
         socket's SIOCGSTAMP); a packet longer than SNAPLEN (or a packet\n\
         buffer's 1,920 bytes) is cut to it, the extra length annotation set\n\
         to what was cut, and counted in `truncated'. A received packet that\n\
         is not IPv4 is dropped. Input shorter than an IPv4 header (`runt'),\n\
         refused by the kernel, or still unsent after waiting a second for\n\
         room (a push input; Click retries with back-off) is dropped; every\n\
         drop is counted in `drops'. No socket is opened by `pronto check`.\n\n\
         In a sandboxed instance (pronto daemon) the element lives in the\n\
         instance's own network namespace, without CAP_NET_RAW: configuration\n\
         fails there.\n\n\
         Arguments:\n  \
         TYPE      the IP protocol: TCP, UDP, GRE, ICMP or a number 1-255\n  \
         PORT      TCP/UDP port (a number or service name) to reserve; for\n            \
         other protocols a 16-bit key or identifier\n\
         Keywords:\n  \
         SNAPLEN   bytes kept per received packet, at least 1 (default 2048;\n            \
         at most 1,920 are kept)\n  \
         HEADROOM  bytes, at most 128 (accepted; packets have 128)\n  \
         BURST     packets read (and pulled) per task run, at least 1 (default\n            \
         1; pronto's)\n\
         Handlers:\n  \
         received (read), sent (read), drops (read), truncated (read) (all\n  \
         pronto's)"
    };
}
pub(crate) use rawsocket_doc_body;

/// A raw IP socket element (RawSocket, FromRawSocket or ToRawSocket).
pub struct RawSocket {
    decl: String,
    fd: Option<OwnedFd>,
    /// The TCP/UDP socket reserving PORT.
    _reserve: Option<OwnedFd>,
    snaplen: usize,
    burst: usize,
    has_output: bool,
    pull: bool,
    pending: VecDeque<Packet>,
    /// The packet the next read goes into, kept between task runs (Click's
    /// `_rq`) so that an empty poll neither allocates nor frees.
    spare: Option<Packet>,
    empty_polls: u32,
    received: u64,
    sent: u64,
    drops: u64,
    truncated: u64,
    reported: bool,
}

/// Parses an IP protocol name or number.
fn protocol(s: &str) -> Option<u8> {
    match s.to_ascii_uppercase().as_str() {
        "ICMP" => Some(1),
        "IGMP" => Some(2),
        "IPIP" => Some(4),
        "TCP" => Some(6),
        "UDP" => Some(17),
        "GRE" => Some(47),
        "ESP" => Some(50),
        "AH" => Some(51),
        "ICMP6" => Some(58),
        t => t.parse::<u8>().ok().filter(|&p| p != 0),
    }
}

impl RawSocket {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RawSocket")
        .ports("0-1/0-1")
        .processing("l/h")
        .flow("x/y")
        .keywords(KEYWORDS)
        .profile(ActionProfile::NONE.dropping())
        .doc(concat!(
            "RawSocket(TYPE [, PORT] [, KEYWORDS])\n\n\
             Sends and receives IPv4 packets through a raw IP socket: input\n\
             packets go out through the host's routing, and packets of TYPE that\n\
             the host receives are pushed out of output 0. Packets do not flow\n\
             through the element.\n\n\
             Ports: 0 or 1 pull input (a push input works too: pronto's); 0 or 1\n\
             push output.\n\n",
            rawsocket_doc_body!()
        ));

    /// Configures a `RawSocket`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(RawSocket::open(ctx, "RawSocket")?))
    }

    /// Reads the arguments and, unless checking, opens the socket.
    pub(crate) fn open(ctx: &ConfigCtx<'_>, class: &str) -> Result<RawSocket, ConfigError> {
        let mut a = ctx.args();
        let ty: String = a.read_mp("TYPE")?;
        let proto = protocol(&ty).ok_or_else(|| {
            cfg_err(format!(
                "TYPE: unknown IP protocol `{ty}' (expected TCP, UDP, GRE, ICMP or 1-255)"
            ))
        })?;
        let port: Option<String> = a.read_p("PORT")?;
        let snaplen: u32 = a.read_or("SNAPLEN", 2048)?;
        let headroom: Option<u32> = a.read("HEADROOM")?;
        let burst: u32 = a.read_or("BURST", 1)?;
        a.finish()?;
        let port = match port {
            None => 0,
            Some(p) if proto == 6 || proto == 17 => crate::tcpudp::parse_port("PORT", &p)?,
            Some(p) => {
                crate::util::parse_value::<u16>("PORT", &p).map_err(|e| cfg_err(e.to_string()))?
            }
        };
        if snaplen == 0 {
            return Err(cfg_err("SNAPLEN must be at least 1"));
        }
        if headroom.is_some_and(|h| h as usize > DEFAULT_HEADROOM) {
            return Err(cfg_err(format!(
                "HEADROOM too large: pronto packets have {DEFAULT_HEADROOM} bytes of headroom"
            )));
        }
        if burst == 0 {
            return Err(cfg_err("BURST must be at least 1"));
        }
        let mut e = RawSocket {
            decl: format!("{} :: {class}", ctx.name),
            fd: None,
            _reserve: None,
            snaplen: (snaplen as usize).min(MAX_PACKET),
            burst: (burst as usize).min(pronto_packet::BATCH_MAX),
            has_output: ctx.noutputs > 0,
            pull: ctx.ninputs > 0 && !ctx.input_push.first().copied().unwrap_or(true),
            pending: VecDeque::with_capacity(burst as usize),
            spare: None,
            empty_polls: 0,
            received: 0,
            sent: 0,
            drops: 0,
            truncated: 0,
            reported: false,
        };
        if crate::world::check_only() {
            return Ok(e);
        }
        let sys = |what: &str, e: Errno| cfg_err(format!("{what}: {}", strerror(e)));
        let fd = rustix::net::socket_with(
            AddressFamily::INET,
            SocketType::RAW,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            Protocol::from_raw(
                std::num::NonZeroU32::new(u32::from(proto)).expect("protocol is not zero"),
            )
            .into(),
        )
        .map_err(|e| sys("socket", e))?;
        if port != 0 && (proto == 6 || proto == 17) {
            let ty = if proto == 6 {
                SocketType::STREAM
            } else {
                SocketType::DGRAM
            };
            let r = rustix::net::socket_with(AddressFamily::INET, ty, SocketFlags::CLOEXEC, None)
                .map_err(|e| sys("socket", e))?;
            rustix::net::bind(
                &r,
                &SocketAddrAny::from(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port)),
            )
            .map_err(|e| sys("bind", e))?;
            e._reserve = Some(r);
        }
        pronto_netdev::rawip::set_ip_hdrincl(fd.as_fd(), true)
            .map_err(|err| cfg_err(format!("IP_HDRINCL: {err}")))?;
        rustix::net::sockopt::set_socket_broadcast(&fd, true)
            .map_err(|e| sys("SO_BROADCAST", e))?;
        e.fd = Some(fd);
        Ok(e)
    }

    /// Reads up to BURST packets and emits them. True if any came.
    fn receive(&mut self, out: &mut Out<'_>) -> bool {
        let mut got = false;
        for _ in 0..self.burst {
            let Some(fd) = &self.fd else { break };
            let Some(mut p) = self.spare.take().or_else(|| out.pool.alloc()) else {
                break;
            };
            p.take(p.len());
            p.anno_bytes_mut().fill(0);
            let buf = p.put_uninit(self.snaplen);
            let n = match rustix::net::recv(fd, &mut *buf, RecvFlags::TRUNC) {
                Ok((_, n)) => n,
                Err(Errno::AGAIN | Errno::INTR) => {
                    self.spare = Some(p);
                    break;
                }
                Err(e) => {
                    if !self.reported {
                        self.reported = true;
                        eprintln!("{}: recv: {}", self.decl, strerror(e));
                    }
                    self.spare = Some(p);
                    break;
                }
            };
            got = true;
            if n > self.snaplen {
                let extra = (n - self.snaplen) as u32;
                p.anno_bytes_mut()[EXTRA_LENGTH_ANNO_OFFSET..EXTRA_LENGTH_ANNO_OFFSET + 4]
                    .copy_from_slice(&extra.to_ne_bytes());
                self.truncated += 1;
            } else {
                p.take(self.snaplen - n);
            }
            // Click's fake_pcap_force_ip: an IPv4 header, marked.
            let d = p.data();
            let hl = d.first().map_or(0, |b| usize::from(b & 0x0f) * 4);
            if d.len() < IP_MIN || d[0] >> 4 != 4 || hl < IP_MIN || hl > d.len() {
                self.drops += 1;
                self.spare = Some(p);
                continue;
            }
            let dst = [d[16], d[17], d[18], d[19]];
            p.set_network_header(0, hl);
            p.set_dst_ip_anno(dst);
            p.set_timestamp_ns(out.now);
            self.received += 1;
            out.emit(0, p);
        }
        got
    }

    /// Sends one packet: `Some(true)` sent, `Some(false)` lost, `None` no
    /// room now.
    fn send_one(&mut self, p: &Packet) -> Option<bool> {
        let Some(fd) = &self.fd else {
            return Some(false);
        };
        let d = p.data();
        if d.len() < IP_MIN {
            if !self.reported {
                self.reported = true;
                eprintln!("{}: runt IP packet ({} bytes)", self.decl, d.len());
            }
            return Some(false);
        }
        let to = SocketAddrAny::from(SocketAddrV4::new(
            Ipv4Addr::new(d[16], d[17], d[18], d[19]),
            0,
        ));
        loop {
            match rustix::net::sendto(fd, d, SendFlags::NOSIGNAL, &to) {
                Ok(_) => return Some(true),
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN | Errno::NOBUFS) => return None,
                Err(e) => {
                    if !self.reported {
                        self.reported = true;
                        eprintln!("{}: sendto: {}", self.decl, strerror(e));
                    }
                    return Some(false);
                }
            }
        }
    }

    fn count(&mut self, ok: bool) {
        if ok {
            self.sent += 1;
        } else {
            self.drops += 1;
        }
    }

    fn flush(&mut self) -> bool {
        let mut q = std::mem::take(&mut self.pending);
        let (any, sent, lost) = super::flush_pending(&mut q, |p| self.send_one(p));
        self.pending = q;
        self.sent += sent;
        self.drops += lost;
        any
    }

    fn wait_writable(&self) -> bool {
        super::wait_writable(self.fd.as_ref(), super::PUSH_WAIT_MS)
    }
}

impl Element for RawSocket {
    fn push(&mut self, _port: usize, batch: &mut Batch, _out: &mut Out<'_>) {
        for p in batch.drain() {
            let r = match self.send_one(&p) {
                Some(ok) => ok,
                None if self.wait_writable() => self.send_one(&p).unwrap_or(false),
                None => false,
            };
            self.count(r);
        }
    }

    fn has_task(&self) -> bool {
        self.has_output || self.pull
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        (self.pull && self.pending.is_empty() && self.fd.is_some()).then_some((0, self.burst))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let mut busy = false;
        if self.pull {
            for p in batch.drain() {
                self.pending.push_back(p);
            }
            busy |= self.flush();
        }
        if self.has_output {
            busy |= self.receive(out);
        }
        if busy {
            self.empty_polls = 0;
            return TaskStatus::Busy;
        }
        super::poll_status(false, &mut self.empty_polls)
    }

    fn wait_fd(&self) -> Option<WaitFd<'_>> {
        let fd = self.fd.as_ref()?;
        if !self.pending.is_empty() {
            return Some(WaitFd {
                fd: fd.as_fd(),
                writable: true,
            });
        }
        self.has_output.then(|| WaitFd {
            fd: fd.as_fd(),
            writable: false,
        })
    }

    fn held(&self) -> usize {
        self.pending.len() + usize::from(self.spare.is_some())
    }

    fn pull_from(&mut self, _port: usize) -> PullFrom {
        PullFrom::Nothing
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("send_failed", self.drops);
        c.count("received", self.received);
        c.count("sent", self.sent);
        c.count("truncated", self.truncated);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("received"),
            HandlerInfo::read("sent"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("truncated"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "received" => Ok(self.received.to_string()),
            "sent" => Ok(self.sent.to_string()),
            "drops" => Ok(self.drops.to_string()),
            "truncated" => Ok(self.truncated.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        self.drops += self.pending.len() as u64;
        self.pending.clear();
        self.spare = None;
        self.fd = None;
    }
}

impl RawSocket {
    /// Reads nothing (ToRawSocket: its output is pull).
    pub(crate) fn no_receive(&mut self) {
        self.has_output = false;
    }
}

#[cfg(test)]
mod tests {
    use std::net::UdpSocket;
    use std::time::{Duration, Instant};

    use pronto_packet::Pool;

    use super::*;
    use crate::app::testing::{config_err, configure};
    use crate::standard::test_support::loopback_udp;

    fn raw(conf: &str, inputs: &[bool], outputs: &[bool]) -> Option<Box<dyn Element>> {
        match configure(
            KEYWORDS,
            RawSocket::configure,
            conf,
            inputs,
            outputs,
            std::path::Path::new("."),
        ) {
            Ok(e) => Some(e),
            Err(e) if e.message.starts_with("socket: Operation not permitted") => {
                eprintln!("SKIPPED: raw sockets need CAP_NET_RAW ({})", e.message);
                None
            }
            Err(e) => panic!("{conf}: {}", e.message),
        }
    }

    fn err(conf: &str) -> String {
        config_err(configure(
            KEYWORDS,
            RawSocket::configure,
            conf,
            &[false],
            &[true],
            std::path::Path::new("."),
        ))
    }

    #[test]
    fn config_errors() {
        assert_eq!(err(""), "missing mandatory TYPE argument");
        assert_eq!(
            err("SCTPX"),
            "TYPE: unknown IP protocol `SCTPX' (expected TCP, UDP, GRE, ICMP or 1-255)"
        );
        assert_eq!(
            err("UDP, 70000"),
            "PORT: expected port number, found `70000`"
        );
        assert_eq!(err("UDP, SNAPLEN 0"), "SNAPLEN must be at least 1");
        assert_eq!(err("UDP, BURST 0"), "BURST must be at least 1");
        assert_eq!(
            err("UDP, 9, 10"),
            "too many arguments: `10` was not expected"
        );
    }

    /// What the element sends reaches a UDP socket on loopback byte for
    /// byte; what a UDP socket sends comes out of the element as an IP
    /// packet, marked and annotated.
    #[test]
    fn sends_and_receives_udp_on_loopback() {
        let Some(mut e) = raw("UDP, BURST 8", &[true], &[true]) else {
            return;
        };
        let pool = Pool::new(64).expect("pool");
        let rx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        rx.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let port = rx.local_addr().expect("addr").port();
        let tag = format!("raw {}", std::process::id());
        let pkt = loopback_udp(12345, port, tag.as_bytes());
        let _ = crate::app::testing::push(e.as_mut(), &pool, &[&pkt, &[0u8; 10]], 1, 0);
        let mut buf = [0u8; 128];
        let (n, from) = rx.recv_from(&mut buf).expect("datagram");
        assert_eq!(&buf[..n], tag.as_bytes());
        assert_eq!(from.port(), 12345);
        assert_eq!(e.read_handler("sent").expect("sent"), "1");
        assert_eq!(e.read_handler("drops").expect("drops"), "1");
        // The other way: a datagram from a UDP socket.
        let tx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let tport = tx.local_addr().expect("addr").port();
        let back = format!("back {}", std::process::id());
        tx.send_to(back.as_bytes(), ("127.0.0.1", port))
            .expect("send");
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut found = None;
        while found.is_none() && Instant::now() < deadline {
            let (_, outs, _) = crate::app::testing::run_task(e.as_mut(), &pool, 1, 99);
            found = outs[0]
                .iter()
                .find(|p| p.data().ends_with(back.as_bytes()))
                .map(|p| {
                    (
                        p.data().to_vec(),
                        p.network_header_offset(),
                        p.network_header_len(),
                        p.dst_ip_anno(),
                        p.timestamp_ns(),
                    )
                });
        }
        let (d, off, hl, dst, ts) = found.expect("the datagram as an IP packet");
        assert_eq!(d.len(), 28 + back.len());
        assert_eq!(d[0], 0x45);
        assert_eq!(d[9], 17);
        assert_eq!(&d[12..20], &[127, 0, 0, 1, 127, 0, 0, 1]);
        assert_eq!(&d[20..22], &tport.to_be_bytes());
        assert_eq!(&d[22..24], &port.to_be_bytes());
        assert_eq!((off, hl, dst, ts), (Some(0), Some(20), [127, 0, 0, 1], 99));
    }
}
