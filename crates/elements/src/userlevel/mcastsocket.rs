//! `McastSocket`: packets over multicast UDP. Input packets are sent to
//! the group; datagrams received from it are pushed out.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, OwnedFd};

use pronto_packet::{Batch, Packet, DEFAULT_HEADROOM, EXTRA_LENGTH_ANNO_OFFSET, MAX_PACKET};
use rustix::io::Errno;
use rustix::net::{
    sockopt, AddressFamily, RecvFlags, SendFlags, SocketAddrAny, SocketFlags, SocketType,
};

use super::socket::{port_arg, strerror};
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out, PullFrom,
    Spec, TaskStatus, WaitFd,
};

/// A multicast UDP transport.
pub struct McastSocket {
    decl: String,
    group: SocketAddrV4,
    /// Our sending address when SOURCEIP is given (own datagrams that loop
    /// back from it are ignored).
    source: Option<SocketAddrV4>,
    snaplen: usize,
    timestamp: bool,
    burst: usize,
    recv: Option<OwnedFd>,
    send: Option<OwnedFd>,
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
    own: u64,
}

impl McastSocket {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("McastSocket")
        .ports("0-1/0-1")
        .processing("a/h")
        .flow("x/y")
        .keywords(&[
            "MCASTIP",
            "MCASTPORT",
            "SOURCEIP",
            "SOURCEPORT",
            "SNAPLEN",
            "HEADROOM",
            "TIMESTAMP",
            "RCVBUF",
            "SNDBUF",
            "LOOP",
            "BURST",
        ])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "McastSocket(MCASTIP, MCASTPORT [, SOURCEIP] [, SOURCEPORT] [, KEYWORDS])\n\n\
             A multicast UDP transport: each input packet is sent as one datagram\n\
             to the group MCASTIP:MCASTPORT, and each datagram received on the\n\
             group is pushed out of output 0 as one packet. Packets do not flow\n\
             through the element. It joins the group when configured (on the\n\
             interface of SOURCEIP if given, else the one the routing table picks),\n\
             receiving on a socket bound to MCASTIP:MCASTPORT with SO_REUSEADDR (so\n\
             other listeners may share it), and sends from a second socket, bound\n\
             to SOURCEIP:SOURCEPORT and sending through SOURCEIP's interface when\n\
             SOURCEIP is given. With SOURCEIP, copies of its own datagrams that\n\
             loop back are ignored (counted in `own'); without it, LOOP false keeps\n\
             the host's copies from coming back (and from every other process on\n\
             the host).\n\n\
             Received packets carry the receive time (TIMESTAMP true); a datagram\n\
             longer than SNAPLEN (or a packet buffer's 1,920 bytes) is cut to it,\n\
             the extra length annotation set to what was cut, and counted in\n\
             `truncated'. A pull input sends whenever the socket has room; a push\n\
             input waits up to one second for room (Click waits for ever), then\n\
             drops the packet. Packets the kernel refuses are dropped; every drop\n\
             is counted in `drops'. No socket is opened by `pronto check`.\n\n\
             In a sandboxed instance (pronto daemon) the element lives in the\n\
             instance's own network namespace: its groups reach only that\n\
             namespace's loopback, not the switch ports.\n\n\
             Ports: 0 or 1 input (pull or push); 0 or 1 push output.\n\
             Arguments:\n  \
             MCASTIP     the IPv4 multicast group\n  \
             MCASTPORT   the UDP port (a number or service name)\n  \
             SOURCEIP    the local address to send from and receive on\n  \
             SOURCEPORT  the local port to send from (default: any)\n\
             Keywords:\n  \
             LOOP       boolean: IP_MULTICAST_LOOP, local copies of what is sent\n             \
             (default true)\n  \
             SNAPLEN    bytes kept per datagram, at least 1 (default 2048; at\n             \
             most 1,920 are kept)\n  \
             SNDBUF, RCVBUF  socket buffer sizes in bytes (default: the kernel's)\n  \
             TIMESTAMP  boolean: stamp received packets (default true)\n  \
             HEADROOM   bytes, at most 128 (accepted; packets have 128)\n  \
             BURST      datagrams read (and pulled) per task run, at least 1\n             \
             (default 1; pronto's)\n\
             Handlers:\n  \
             received (read), sent (read), drops (read), truncated (read),\n  \
             own (read: own datagrams ignored) (all pronto's)",
        );

    /// Configures a `McastSocket`: joins the group.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let group: Ip4 = a.read_mp("MCASTIP")?;
        let port = port_arg(&mut a, "MCASTPORT")?
            .ok_or_else(|| cfg_err("missing mandatory MCASTPORT argument"))?;
        let source: Option<Ip4> = a.read_p("SOURCEIP")?;
        let sport = port_arg(&mut a, "SOURCEPORT")?;
        let snaplen: u32 = a.read_or("SNAPLEN", 2048)?;
        let headroom: Option<u32> = a.read("HEADROOM")?;
        let timestamp = a.read_or("TIMESTAMP", true)?;
        let rcvbuf: Option<u32> = a.read("RCVBUF")?;
        let sndbuf: Option<u32> = a.read("SNDBUF")?;
        let lp = a.read_or("LOOP", true)?;
        let burst: u32 = a.read_or("BURST", 1)?;
        a.finish()?;
        let group_ip = Ipv4Addr::from(group.0);
        if !group_ip.is_multicast() {
            return Err(cfg_err(format!(
                "MCASTIP: {group_ip} is not a multicast address (224.0.0.0/4)"
            )));
        }
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
        let source = source
            .filter(|s| s.0 != [0; 4])
            .map(|s| SocketAddrV4::new(Ipv4Addr::from(s.0), sport.unwrap_or(0)));
        let mut e = McastSocket {
            decl: format!("{} :: McastSocket", ctx.name),
            group: SocketAddrV4::new(group_ip, port),
            source,
            snaplen: (snaplen as usize).min(MAX_PACKET),
            timestamp,
            burst: (burst as usize).min(pronto_packet::BATCH_MAX),
            recv: None,
            send: None,
            has_output: ctx.noutputs > 0,
            pull: ctx.ninputs > 0 && !ctx.input_push.first().copied().unwrap_or(true),
            pending: VecDeque::with_capacity(burst as usize),
            spare: None,
            empty_polls: 0,
            received: 0,
            sent: 0,
            drops: 0,
            truncated: 0,
            own: 0,
        };
        if crate::world::check_only() {
            return Ok(Box::new(e));
        }
        e.open(rcvbuf, sndbuf, lp)?;
        Ok(Box::new(e))
    }

    fn open(
        &mut self,
        rcvbuf: Option<u32>,
        sndbuf: Option<u32>,
        lp: bool,
    ) -> Result<(), ConfigError> {
        let sys = |what: &str, e: Errno| cfg_err(format!("{what}: {}", strerror(e)));
        let udp = || {
            rustix::net::socket_with(
                AddressFamily::INET,
                SocketType::DGRAM,
                SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
                None,
            )
            .map_err(|e| sys("socket", e))
        };
        let recv = udp()?;
        let send = udp()?;
        if let Some(v) = sndbuf {
            sockopt::set_socket_send_buffer_size(&send, v as usize)
                .map_err(|e| sys("setsockopt(SO_SNDBUF)", e))?;
        }
        if let Some(v) = rcvbuf {
            sockopt::set_socket_recv_buffer_size(&recv, v as usize)
                .map_err(|e| sys("setsockopt(SO_RCVBUF)", e))?;
        }
        sockopt::set_socket_reuseaddr(&recv, true)
            .map_err(|e| sys("setsockopt(SO_REUSEADDR)", e))?;
        rustix::net::bind(&recv, &SocketAddrAny::from(self.group)).map_err(|e| sys("bind", e))?;
        let iface = match self.source {
            Some(src) => {
                rustix::net::bind(&send, &SocketAddrAny::from(src)).map_err(|e| sys("bind", e))?;
                let bound = rustix::net::getsockname(&send)
                    .ok()
                    .and_then(|a| SocketAddrV4::try_from(a).ok())
                    .ok_or_else(|| cfg_err("getsockname: not an IPv4 address"))?;
                self.source = Some(bound);
                sockopt::set_ip_multicast_if(&send, src.ip())
                    .map_err(|e| sys("setsockopt(IP_MULTICAST_IF)", e))?;
                *src.ip()
            }
            None => Ipv4Addr::UNSPECIFIED,
        };
        sockopt::set_ip_add_membership(&recv, self.group.ip(), &iface)
            .map_err(|e| sys("setsockopt(IP_ADD_MEMBERSHIP)", e))?;
        sockopt::set_ip_multicast_loop(&send, lp)
            .map_err(|e| sys("setsockopt(IP_MULTICAST_LOOP)", e))?;
        self.recv = Some(recv);
        self.send = Some(send);
        Ok(())
    }

    /// Reads up to BURST datagrams and emits them. True if any came.
    fn receive(&mut self, out: &mut Out<'_>) -> bool {
        let mut got = false;
        for _ in 0..self.burst {
            let Some(fd) = &self.recv else { break };
            let Some(mut p) = self.spare.take().or_else(|| out.pool.alloc()) else {
                break;
            };
            p.take(p.len());
            p.anno_bytes_mut().fill(0);
            let buf = p.put_uninit(self.snaplen);
            let (n, from) = match rustix::net::recvfrom(fd, &mut *buf, RecvFlags::TRUNC) {
                Ok((_, n, from)) => (n, from),
                Err(Errno::AGAIN | Errno::INTR) => {
                    self.spare = Some(p);
                    break;
                }
                Err(e) => {
                    eprintln!("{}: {}", self.decl, strerror(e));
                    self.recv = None;
                    self.spare = Some(p);
                    break;
                }
            };
            got = true;
            let from = from.and_then(|a| SocketAddrV4::try_from(a).ok());
            if self.source.is_some() && from == self.source {
                self.own += 1;
                self.spare = Some(p);
                continue;
            }
            if n > self.snaplen {
                let extra = (n - self.snaplen) as u32;
                p.anno_bytes_mut()[EXTRA_LENGTH_ANNO_OFFSET..EXTRA_LENGTH_ANNO_OFFSET + 4]
                    .copy_from_slice(&extra.to_ne_bytes());
                self.truncated += 1;
            } else {
                p.take(self.snaplen - n);
            }
            if self.timestamp {
                p.set_timestamp_ns(out.now);
            }
            self.received += 1;
            out.emit(0, p);
        }
        got
    }

    /// Sends one datagram: `Some(true)` sent, `Some(false)` lost, `None`
    /// no room now.
    fn send_one(&mut self, p: &Packet) -> Option<bool> {
        let Some(fd) = &self.send else {
            return Some(false);
        };
        let to = SocketAddrAny::from(self.group);
        loop {
            match rustix::net::sendto(fd, p.data(), SendFlags::NOSIGNAL, &to) {
                Ok(_) => return Some(true),
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN | Errno::NOBUFS) => return None,
                Err(e) => {
                    eprintln!("{}: {}, dropping packet", self.decl, strerror(e));
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
        super::wait_writable(self.send.as_ref(), super::PUSH_WAIT_MS)
    }
}

impl Element for McastSocket {
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
        (self.pull && self.pending.is_empty() && self.send.is_some()).then_some((0, self.burst))
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
        if !self.pending.is_empty() {
            return self.send.as_ref().map(|fd| WaitFd {
                fd: fd.as_fd(),
                writable: true,
            });
        }
        if !self.has_output {
            return None;
        }
        self.recv.as_ref().map(|fd| WaitFd {
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
            HandlerInfo::read("own"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "received" => Ok(self.received.to_string()),
            "sent" => Ok(self.sent.to_string()),
            "drops" => Ok(self.drops.to_string()),
            "truncated" => Ok(self.truncated.to_string()),
            "own" => Ok(self.own.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        self.drops += self.pending.len() as u64;
        self.pending.clear();
        self.spare = None;
        self.recv = None;
        self.send = None;
    }
}

#[cfg(test)]
mod tests {
    use std::net::UdpSocket;
    use std::time::{Duration, Instant};

    use pronto_packet::Pool;

    use super::*;
    use crate::app::testing::{config_err, configure};

    fn err(conf: &str) -> String {
        config_err(configure(
            McastSocket::SPEC.keywords,
            McastSocket::configure,
            conf,
            &[true],
            &[true],
            std::path::Path::new("."),
        ))
    }

    #[test]
    fn config_errors() {
        assert_eq!(err(""), "missing mandatory MCASTIP argument");
        assert_eq!(err("239.1.2.3"), "missing mandatory MCASTPORT argument");
        assert_eq!(
            err("10.1.2.3, 5000"),
            "MCASTIP: 10.1.2.3 is not a multicast address (224.0.0.0/4)"
        );
        assert_eq!(
            err("239.1.2.3, 5000, SNAPLEN 0"),
            "SNAPLEN must be at least 1"
        );
        assert_eq!(err("239.1.2.3, 5000, BURST 0"), "BURST must be at least 1");
    }

    /// On loopback: a peer in the group hears what the element sends, the
    /// element pushes out what the peer sends to the group, and its own
    /// datagrams coming back are ignored.
    #[test]
    fn sends_to_and_receives_from_the_group_on_loopback() {
        let lo = Ipv4Addr::LOCALHOST;
        // A group and port of this test's own.
        let group = Ipv4Addr::new(239, 255, 77, (std::process::id() % 200) as u8 + 1);
        let port = {
            let u = UdpSocket::bind("127.0.0.1:0").expect("bind");
            u.local_addr().expect("addr").port()
        };
        let e = configure(
            McastSocket::SPEC.keywords,
            McastSocket::configure,
            &format!("{group}, {port}, 127.0.0.1, BURST 8"),
            &[true],
            &[true],
            std::path::Path::new("."),
        );
        let mut e = match e {
            Ok(e) => e,
            Err(err) if err.message.starts_with("setsockopt(IP_") => {
                eprintln!("SKIPPED: no multicast on loopback here ({})", err.message);
                return;
            }
            Err(err) => panic!("{}", err.message),
        };
        // The peer shares the group's port (SO_REUSEADDR, as the element).
        let fd = rustix::net::socket(AddressFamily::INET, SocketType::DGRAM, None).expect("socket");
        sockopt::set_socket_reuseaddr(&fd, true).expect("reuseaddr");
        rustix::net::bind(&fd, &SocketAddrAny::from(SocketAddrV4::new(group, port)))
            .expect("peer bind");
        let peer = UdpSocket::from(fd);
        peer.join_multicast_v4(&group, &lo).expect("join");
        rustix::net::sockopt::set_ip_multicast_if(&peer, &lo).expect("multicast if");
        peer.set_multicast_loop_v4(true).expect("loop");
        peer.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let pool = Pool::new(32).expect("pool");
        // The element sends; the peer (in the group) hears it.
        let _ = crate::app::testing::push(e.as_mut(), &pool, &[b"to the group"], 1, 0);
        let mut buf = [0u8; 64];
        let (n, _) = peer.recv_from(&mut buf).expect("group datagram");
        assert_eq!(&buf[..n], b"to the group");
        assert_eq!(e.read_handler("sent").expect("sent"), "1");
        // The peer sends to the group; the element pushes it out, and
        // ignores its own copy of "to the group".
        peer.send_to(b"from a member", (group, port)).expect("send");
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut got: Vec<Vec<u8>> = Vec::new();
        while got.is_empty() && Instant::now() < deadline {
            let (_, outs, _) = crate::app::testing::run_task(e.as_mut(), &pool, 1, 42);
            got.extend(outs[0].iter().map(|p| p.data().to_vec()));
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(got, vec![b"from a member".to_vec()]);
        assert_eq!(e.read_handler("own").expect("own"), "1");
        assert_eq!(e.read_handler("received").expect("received"), "1");
        assert_eq!(e.read_handler("drops").expect("drops"), "0");
    }
}
