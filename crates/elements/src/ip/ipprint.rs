//! `IPPrint`: pretty-prints IP packets in a tcpdump-like format.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};

use pronto_packet::{Batch, Packet, AGGREGATE_ANNO_OFFSET};

use crate::util::{cfg_err, parse_value};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELDS_5TUPLE, FIELD_OTHER, FIELD_PAYLOAD,
};

/// How packet data is dumped after the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Contents {
    None,
    Hex,
    Ascii,
}

/// Where the lines go.
enum Sink {
    /// Standard error, one write per line.
    Stderr,
    /// A file (OUTFILE) or, in tests, any writer.
    Writer(Box<dyn Write>),
}

/// Prints one line per IP packet (addresses, ports, TCP flags and
/// sequence numbers, UDP length, ICMP type), optionally followed by a dump
/// of the packet or its payload, and passes the packet on unchanged.
pub struct IPPrint {
    label: String,
    contents: Contents,
    payload: bool,
    bytes: i32,
    print_id: bool,
    print_ttl: bool,
    print_tos: bool,
    print_len: bool,
    print_timestamp: bool,
    print_aggregate: bool,
    print_paint: bool,
    swap: bool,
    active: bool,
    sink: Sink,
    line: String,
}

const IP_PROTO_ICMP: u8 = 1;
const IP_PROTO_TCP: u8 = 6;
const IP_PROTO_UDP: u8 = 17;
const IP_MF: u16 = 0x2000;
const IP_OFFMASK: u16 = 0x1fff;

/// Names of IP protocols, as Click's name database knows them.
fn proto_name(p: u8) -> Option<&'static str> {
    Some(match p {
        1 => "icmp",
        2 => "igmp",
        4 => "ipip",
        6 => "tcp",
        17 => "udp",
        33 => "dccp",
        47 => "gre",
        132 => "sctp",
        _ => return None,
    })
}

/// Names of ICMP types.
fn icmp_type_name(t: u8) -> Option<&'static str> {
    Some(match t {
        0 => "echo-reply",
        3 => "unreachable",
        4 => "sourcequench",
        5 => "redirect",
        8 => "echo",
        9 => "routeradvert",
        10 => "routersolicit",
        11 => "timeexceeded",
        12 => "parameterproblem",
        13 => "timestamp",
        14 => "timestamp-reply",
        15 => "inforeq",
        16 => "inforeq-reply",
        17 => "maskreq",
        18 => "maskreq-reply",
        _ => return None,
    })
}

/// Names of ICMP codes for the types that have named codes.
fn icmp_code_name(t: u8, c: u8) -> Option<&'static str> {
    const UNREACH: [&str; 16] = [
        "net",
        "host",
        "protocol",
        "port",
        "needfrag",
        "srcroutefail",
        "netunknown",
        "hostunknown",
        "isolated",
        "netprohibited",
        "hostprohibited",
        "tosnet",
        "toshost",
        "filterprohibited",
        "hostprecedence",
        "precedencecutoff",
    ];
    const REDIRECT: [&str; 4] = ["net", "host", "tosnet", "toshost"];
    const TIMXCEED: [&str; 2] = ["transit", "reassembly"];
    const PARAMPROB: [&str; 3] = ["erroratptr", "missingopt", "length"];
    let table: &[&str] = match t {
        3 => &UNREACH,
        5 => &REDIRECT,
        11 => &TIMXCEED,
        12 => &PARAMPROB,
        _ => return None,
    };
    table.get(c as usize).copied()
}

/// Appends a timestamp (ns since the epoch) the way Click prints one:
/// `SEC.USEC`, or `SEC.NSEC` when it is not a whole number of microseconds.
fn push_timestamp(s: &mut String, ns: i64) {
    let mag = ns.unsigned_abs();
    let (sec, sub) = (mag / 1_000_000_000, mag % 1_000_000_000);
    let sign = if ns < 0 { "-" } else { "" };
    let _ = if sub % 1000 == 0 {
        write!(s, "{sign}{sec}.{:06}", sub / 1000)
    } else {
        write!(s, "{sign}{sec}.{sub:09}")
    };
}

fn be16(d: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([d[o], d[o + 1]])
}

fn be32(d: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
}

fn push_ip(s: &mut String, a: &[u8]) {
    let _ = write!(s, "{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
}

/// The IP header fields the line needs.
struct IpView<'a> {
    /// The IP header (at least 20 bytes).
    ip: &'a [u8],
    /// The transport header onwards (may be empty).
    th: &'a [u8],
    /// Transport bytes present, capped by the IP length (may be negative).
    tlen: isize,
    first_frag: bool,
}

impl IpView<'_> {
    fn src(&self) -> &[u8] {
        &self.ip[12..16]
    }

    fn dst(&self) -> &[u8] {
        &self.ip[16..20]
    }

    fn address_pair(&self, s: &mut String) {
        push_ip(s, self.src());
        s.push_str(" > ");
        push_ip(s, self.dst());
    }

    /// The source and destination with ports.
    fn ports_pair(&self, s: &mut String) {
        push_ip(s, self.src());
        let _ = write!(s, ".{} > ", be16(self.th, 0));
        push_ip(s, self.dst());
        let _ = write!(s, ".{}: ", be16(self.th, 2));
    }
}

impl IPPrint {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPPrint")
        .printing()
        .ports("1/1")
        .processing("a/a")
        .keywords(&[
            "LABEL",
            "CONTENTS",
            "PAYLOAD",
            "MAXLENGTH",
            "NBYTES",
            "ID",
            "TIMESTAMP",
            "PAINT",
            "TOS",
            "TTL",
            "SWAP",
            "LENGTH",
            "AGGREGATE",
            "ACTIVE",
            "OUTFILE",
            "CHANNEL",
        ])
        .profile(ActionProfile::reads(
            FIELDS_5TUPLE | FIELD_OTHER | FIELD_PAYLOAD,
        ))
        .doc(
            "IPPrint([LABEL, KEYWORDS])\n\n\
             Prints each IP packet (at the network header annotation; packets\n\
             without one pass silently) on one line in a tcpdump-like format,\n\
             preceded by LABEL, on standard error or OUTFILE, then passes it on\n\
             unchanged. Place it after CheckIPHeader or an equivalent.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  \
             CONTENTS   NONE, HEX or ASCII: also dump the packet data (default NONE)\n  \
             PAYLOAD    like CONTENTS, but dump only the transport payload\n             \
             (give at most one of CONTENTS and PAYLOAD)\n  \
             MAXLENGTH  most bytes dumped; -1 means all (default 1500; NBYTES is an\n             \
             older name)\n  \
             ID         boolean; print the IP ID (default false)\n  \
             TTL        boolean; print the IP TTL (default false)\n  \
             TOS        boolean; print the IP TOS (default false)\n  \
             LENGTH     boolean; print the IP length field (default false)\n  \
             TIMESTAMP  boolean; print the timestamp annotation (default true)\n  \
             AGGREGATE  boolean; print the aggregate annotation (default false)\n  \
             PAINT      boolean; print the paint annotation (default false)\n  \
             SWAP       boolean; print ICMP echo ID and sequence numbers in\n             \
             network byte order (default true)\n  \
             OUTFILE    file to print to instead of standard error\n  \
             ACTIVE     boolean; if false, print nothing (default true)\n  \
             CHANNEL    accepted and ignored (pronto has one message channel)\n\
             Handlers:\n  active (read/write)",
        );

    /// Configures an `IPPrint`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(Self::new(ctx)?))
    }

    fn new(ctx: &ConfigCtx<'_>) -> Result<IPPrint, ConfigError> {
        let mut a = ctx.args();
        let label: String = a.read_p("LABEL")?.unwrap_or_default();
        let contents: String = a.read_or("CONTENTS", "no".to_string())?;
        let payload: String = a.read_or("PAYLOAD", "no".to_string())?;
        let mut bytes: i32 = a.read_or("MAXLENGTH", 1500)?;
        if let Some(b) = a.read("NBYTES")? {
            bytes = b;
        }
        let print_id = a.read_or("ID", false)?;
        let print_timestamp = a.read_or("TIMESTAMP", true)?;
        let print_paint = a.read_or("PAINT", false)?;
        let print_tos = a.read_or("TOS", false)?;
        let print_ttl = a.read_or("TTL", false)?;
        let swap = a.read_or("SWAP", true)?;
        let print_len = a.read_or("LENGTH", false)?;
        let print_aggregate = a.read_or("AGGREGATE", false)?;
        let active = a.read_or("ACTIVE", true)?;
        let outfile: Option<String> = a.read("OUTFILE")?;
        let _channel: Option<String> = a.read("CHANNEL")?;
        a.finish()?;

        let mut contents_v = match pronto_lang::args::parse_bool(&contents) {
            Ok(true) => Contents::Hex,
            Ok(false) => Contents::None,
            Err(_) => match contents.to_uppercase().as_str() {
                "NONE" => Contents::None,
                "HEX" => Contents::Hex,
                "ASCII" => Contents::Ascii,
                other => {
                    return Err(cfg_err(format!(
                        "bad contents value '{other}'; should be 'NONE', 'HEX', or 'ASCII'"
                    )))
                }
            },
        };
        let payload_v = match payload.to_uppercase().as_str() {
            "NO" | "FALSE" => Contents::None,
            "YES" | "TRUE" | "HEX" => Contents::Hex,
            "ASCII" => Contents::Ascii,
            other => {
                return Err(cfg_err(format!(
                    "bad payload value '{other}'; should be 'false', 'hex', or 'ascii'"
                )))
            }
        };
        let mut payload_only = false;
        if payload_v != Contents::None {
            if contents_v != Contents::None {
                return Err(cfg_err("specify at most one of PAYLOAD and CONTENTS"));
            }
            contents_v = payload_v;
            payload_only = true;
        }
        let sink = match outfile {
            Some(f) => {
                let file = File::create(ctx.path(&f)).map_err(|e| {
                    cfg_err(format!("{f}: {}", crate::app::pcap::os_error_text(&e)))
                })?;
                Sink::Writer(Box::new(BufWriter::new(file)))
            }
            None => Sink::Stderr,
        };
        Ok(IPPrint {
            label,
            contents: contents_v,
            payload: payload_only,
            bytes,
            print_id,
            print_ttl,
            print_tos,
            print_len,
            print_timestamp,
            print_aggregate,
            print_paint,
            swap,
            active,
            sink,
            line: String::with_capacity(256),
        })
    }

    /// Formats the line for `p` into `s` (without the final newline).
    /// Returns false for a packet without a network header (nothing is
    /// printed for it).
    fn format(&self, p: &Packet, s: &mut String) -> bool {
        s.clear();
        let Some(nh) = p.network_header_offset() else {
            return false;
        };
        if !self.label.is_empty() {
            s.push_str(&self.label);
            s.push_str(": ");
        }
        if self.print_timestamp {
            push_timestamp(s, p.timestamp_ns());
            s.push_str(": ");
        }
        if self.print_aggregate {
            let a = p.anno_bytes();
            let o = AGGREGATE_ANNO_OFFSET;
            let agg = u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]]);
            let _ = write!(s, "#{agg}");
        }
        if self.print_paint {
            s.push_str(if self.print_aggregate { "." } else { "paint " });
            let _ = write!(s, "{}", p.paint_anno());
        }
        if self.print_aggregate || self.print_paint {
            s.push_str(": ");
        }

        let d = p.data();
        if nh < 0 || d.len() < nh as usize + 20 {
            s.push_str("truncated-ip");
            return true;
        }
        let nh = nh as usize;
        let ip = &d[nh..];
        let ip_len = be16(ip, 2) as isize;
        let hl = ((ip[0] & 0x0f) as isize) << 2;
        let payload_len = ip_len - hl;
        let th_off = match p.transport_header_offset() {
            Some(t) => t,
            None => nh as isize + hl,
        };
        let (th, tlen): (&[u8], isize) = if th_off >= 0 && (th_off as usize) <= d.len() {
            let th = &d[th_off as usize..];
            (th, (th.len() as isize).min(payload_len))
        } else {
            (&[], (d.len() as isize - th_off).min(payload_len))
        };
        let off = be16(ip, 6);
        let v = IpView {
            ip,
            th,
            tlen,
            first_frag: off & IP_OFFMASK == 0,
        };
        if self.print_id {
            let _ = write!(s, "id {} ", be16(ip, 4));
        }
        if self.print_ttl {
            let _ = write!(s, "ttl {} ", ip[8]);
        }
        if self.print_tos {
            let _ = write!(s, "tos {} ", ip[1]);
        }
        if self.print_len {
            let _ = write!(s, "length {ip_len} ");
        }
        let proto = ip[9];
        match proto {
            IP_PROTO_TCP => Self::tcp_line(s, &v, p.len(), ip_len),
            IP_PROTO_UDP => Self::udp_line(s, &v),
            IP_PROTO_ICMP => self.icmp_line(s, &v),
            _ => {
                v.address_pair(s);
                let _ = write!(s, ": ip-proto-{proto}");
            }
        }
        if off & (IP_MF | IP_OFFMASK) != 0 {
            let _ = write!(
                s,
                " (frag {}:{}@{}{})",
                be16(ip, 4),
                payload_len,
                ((off & IP_OFFMASK) as u32) << 3,
                if off & IP_MF != 0 { "+" } else { "" }
            );
        }
        if self.contents != Contents::None {
            let start = if self.payload {
                let extra = if v.first_frag && proto == IP_PROTO_TCP {
                    // Past the TCP header; unknown when the offset byte is
                    // missing, so nothing is dumped then.
                    th.get(12).map_or(usize::MAX, |b| ((b >> 4) as usize) << 2)
                } else if v.first_frag && proto == IP_PROTO_UDP {
                    8
                } else {
                    0
                };
                if th_off < 0 {
                    None
                } else {
                    (th_off as usize).checked_add(extra)
                }
            } else {
                Some(0)
            };
            let data = match start {
                Some(st) if st < d.len() => &d[st..],
                _ => &[],
            };
            let n = if self.bytes < 0 || data.len() < self.bytes as usize {
                data.len()
            } else {
                self.bytes as usize
            };
            self.dump(s, &data[..n]);
        }
        true
    }

    fn dump(&self, s: &mut String, data: &[u8]) {
        match self.contents {
            Contents::Hex => crate::util::push_hex(s, data, 24),
            Contents::Ascii => crate::util::push_ascii(s, data, 48),
            Contents::None => {}
        }
    }

    fn tcp_line(s: &mut String, v: &IpView<'_>, plen: usize, ip_len: isize) {
        if v.tlen < 4 || !v.first_frag {
            v.address_pair(s);
            s.push_str(if v.first_frag {
                ": truncated-tcp"
            } else {
                ": tcp"
            });
            return;
        }
        v.ports_pair(s);
        if v.tlen < 14 {
            s.push_str("truncated-tcp");
            return;
        }
        let th = v.th;
        let flags = th[13];
        let doff = ((th[12] >> 4) as isize) << 2;
        let hl = ((v.ip[0] & 0x0f) as isize) << 2;
        let mut seqlen = ip_len - hl - doff;
        let (fin, syn, rst, psh, ack) = (0x01, 0x02, 0x04, 0x08, 0x10);
        if flags & syn != 0 {
            s.push('S');
            seqlen += 1;
        }
        if flags & fin != 0 {
            s.push('F');
            seqlen += 1;
        }
        if flags & rst != 0 {
            s.push('R');
        }
        if flags & psh != 0 {
            s.push('P');
        }
        if flags & (syn | fin | rst | psh) == 0 {
            s.push('.');
        }
        let seq = be32(th, 4);
        let _ = write!(
            s,
            " {seq}:{}({seqlen},{plen},{ip_len})",
            seq.wrapping_add(seqlen as u32)
        );
        if flags & ack != 0 {
            let _ = write!(s, " ack {}", be32(th, 8));
        }
        if v.tlen < 16 {
            s.push_str("truncated-tcp");
            return;
        }
        let _ = write!(s, " win {}", be16(th, 14));
    }

    fn udp_line(s: &mut String, v: &IpView<'_>) {
        if v.tlen < 4 || !v.first_frag {
            v.address_pair(s);
            s.push_str(if v.first_frag {
                ": truncated-udp"
            } else {
                ": udp"
            });
            return;
        }
        v.ports_pair(s);
        if v.tlen < 8 {
            s.push_str("truncated-udp");
            return;
        }
        let _ = write!(s, "udp {}", be16(v.th, 4));
    }

    fn icmp_line(&self, s: &mut String, v: &IpView<'_>) {
        v.address_pair(s);
        s.push_str(": ");
        if !v.first_frag {
            s.push_str("icmp");
            return;
        }
        if v.tlen < 2 {
            s.push_str("truncated-icmp");
            return;
        }
        let th = v.th;
        let (ty, code) = (th[0], th[1]);
        match ty {
            0 | 8 => {
                s.push_str(if ty == 0 {
                    "icmp echo-reply "
                } else {
                    "icmp echo "
                });
                if v.tlen < 8 {
                    s.push_str("truncated-icmp");
                    return;
                }
                let field = |o: usize| {
                    let x = u16::from_ne_bytes([th[o], th[o + 1]]);
                    if self.swap {
                        x.swap_bytes()
                    } else {
                        x
                    }
                };
                let _ = write!(s, "({}, {})", field(4), field(6));
            }
            3 => {
                let eiph_len = v.tlen - 8;
                if eiph_len < 20 {
                    s.push_str("icmp unreachable ");
                    push_code(s, ty, code);
                    s.push_str(" truncated-icmp");
                    return;
                }
                let eip = &th[8..];
                let ehl = ((eip[0] & 0x0f) as isize) << 2;
                let eudp_len = eiph_len - ehl;
                s.push_str("icmp ");
                push_ip(s, &eip[16..20]);
                s.push_str(" unreachable ");
                push_code(s, ty, code);
                let eproto = eip[9];
                match code {
                    2 => {
                        s.push(' ');
                        match proto_name(eproto) {
                            Some(n) => s.push_str(n),
                            None => {
                                let _ = write!(s, "{eproto}");
                            }
                        }
                    }
                    3 => {
                        s.push(' ');
                        match proto_name(eproto) {
                            Some(n) => s.push_str(n),
                            None => {
                                let _ = write!(s, "protocol {eproto}");
                            }
                        }
                        if eudp_len < 4 {
                            s.push_str("truncated-icmp");
                            return;
                        }
                        let o = ehl as usize;
                        let _ = write!(s, "/{}", be16(eip, o + 2));
                    }
                    4 => {
                        let mtu = be16(th, 6);
                        if mtu != 0 {
                            let _ = write!(s, " (mtu {mtu})");
                        }
                    }
                    _ => {}
                }
            }
            _ => {
                s.push_str("icmp ");
                match icmp_type_name(ty) {
                    Some(n) => s.push_str(n),
                    None => {
                        let _ = write!(s, "type {ty}");
                    }
                }
                match icmp_code_name(ty, code) {
                    Some(n) => {
                        s.push(' ');
                        s.push_str(n);
                    }
                    None if code != 0 => {
                        let _ = write!(s, " code {code}");
                    }
                    None => {}
                }
            }
        }
    }

    /// Sends lines to `w` instead of standard error (for tests and
    /// embedding).
    #[cfg(test)]
    fn set_writer(&mut self, w: Box<dyn Write>) {
        self.sink = Sink::Writer(w);
    }
}

/// Appends an ICMP code's name, or `code N`.
fn push_code(s: &mut String, ty: u8, code: u8) {
    match icmp_code_name(ty, code) {
        Some(n) => s.push_str(n),
        None => {
            let _ = write!(s, "code {code}");
        }
    }
}

impl Element for IPPrint {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
        if !self.active {
            return;
        }
        let mut line = std::mem::take(&mut self.line);
        for p in batch.iter() {
            if self.format(p, &mut line) {
                line.push('\n');
                let _ = match &mut self.sink {
                    Sink::Stderr => {
                        if crate::chatter::listening() {
                            crate::chatter::copy(&line);
                        }
                        std::io::stderr().lock().write_all(line.as_bytes())
                    }
                    Sink::Writer(w) => w.write_all(line.as_bytes()),
                };
            }
        }
        self.line = line;
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("active")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "active" => Ok(self.active.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "active" => {
                self.active = parse_value(name, value)?;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        if let Sink::Writer(w) = &mut self.sink {
            let _ = w.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Control;
    use pronto_packet::Pool;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A writer whose bytes the test can read afterwards.
    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn make(cfg: &str, dir: &std::path::Path) -> Result<IPPrint, ConfigError> {
        let ctx = ConfigCtx {
            name: "p",
            config: cfg,
            ninputs: 1,
            noutputs: 1,
            base_dir: dir,
            keywords: IPPrint::SPEC.keywords,
            output_push: &[true],
            input_push: &[true],
            peers: &crate::NoPeers,
        };
        IPPrint::new(&ctx)
    }

    fn err(cfg: &str) -> String {
        match make(cfg, std::path::Path::new(".")) {
            Ok(_) => panic!("accepted {cfg}"),
            Err(e) => e.message,
        }
    }

    /// Pushes `frames` (IP at offset `nh`) through an IPPrint configured
    /// with `cfg` and returns what it printed.
    fn run(cfg: &str, frames: &[(&[u8], usize)]) -> String {
        let mut e = make(cfg, std::path::Path::new(".")).expect("config");
        let buf = Shared::default();
        e.set_writer(Box::new(buf.clone()));
        let pool = Pool::new(64).expect("pool");
        let mut batch = Batch::new();
        for (f, nh) in frames {
            let mut p = pool.alloc_from(f).expect("packet");
            p.set_timestamp_ns(1_000_000_000);
            if *nh != usize::MAX {
                let hl = f.get(*nh).map_or(20, |b| ((b & 0x0f) as usize) * 4);
                p.set_network_header(*nh as isize, hl);
            }
            let _ = batch.push(p);
        }
        let n = batch.len();
        let mut bufs = [Batch::new()];
        let mut ctrl = Control::default();
        let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
        e.push(0, &mut batch, &mut out);
        assert_eq!(out.passed(), Some(0));
        assert_eq!(batch.len(), n, "every packet passes");
        let v = buf.0.borrow().clone();
        String::from_utf8(v).expect("utf8")
    }

    /// An IPv4 header (20 bytes) for `proto`, total length `len`.
    fn ip(proto: u8, len: u16, off: u16) -> Vec<u8> {
        let l = len.to_be_bytes();
        let o = off.to_be_bytes();
        vec![
            0x45, 0x10, l[0], l[1], // version/ihl, tos 16, total length
            0x12, 0x34, o[0], o[1], // id 0x1234 = 4660, flags/fragment offset
            64, proto, 0, 0, // ttl 64, protocol, checksum
            10, 0, 0, 1, // src 10.0.0.1
            10, 0, 0, 2, // dst 10.0.0.2
        ]
    }

    fn tcp_packet(flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = ip(6, 40 + payload.len() as u16, 0);
        f.extend([
            0x04, 0xd2, 0x00, 0x50, // sport 1234, dport 80
            0, 0, 0, 100, // seq 100
            0, 0, 0, 200, // ack 200
            0x50, flags, 0x10, 0x00, // data offset 5, flags, window 4096
            0, 0, 0, 0, // checksum, urgent pointer
        ]);
        f.extend(payload);
        f
    }

    #[test]
    fn tcp_lines() {
        let syn = tcp_packet(0x02, b"");
        let data = tcp_packet(0x18, b"hello");
        let ack = tcp_packet(0x10, b"");
        let fin = tcp_packet(0x11, b"");
        let got = run(
            "x",
            &[(&syn, 0), (&data, 0), (&ack, 0), (&fin, 0), (&syn[..30], 0)],
        );
        assert_eq!(
            got,
            "x: 1.000000: 10.0.0.1.1234 > 10.0.0.2.80: S 100:101(1,40,40) win 4096\n\
             x: 1.000000: 10.0.0.1.1234 > 10.0.0.2.80: P 100:105(5,45,45) ack 200 win 4096\n\
             x: 1.000000: 10.0.0.1.1234 > 10.0.0.2.80: . 100:100(0,40,40) ack 200 win 4096\n\
             x: 1.000000: 10.0.0.1.1234 > 10.0.0.2.80: F 100:101(1,40,40) ack 200 win 4096\n\
             x: 1.000000: 10.0.0.1.1234 > 10.0.0.2.80: truncated-tcp\n"
        );
        // Ports missing.
        assert_eq!(
            run("TIMESTAMP false", &[(&syn[..22], 0)]),
            "10.0.0.1 > 10.0.0.2: truncated-tcp\n"
        );
    }

    #[test]
    fn link_header_counts_in_packet_length() {
        let mut f = vec![0u8; 14]; // Ethernet header
        f.extend(tcp_packet(0x02, b""));
        assert_eq!(
            run("TIMESTAMP false", &[(&f, 14)]),
            "10.0.0.1.1234 > 10.0.0.2.80: S 100:101(1,54,40) win 4096\n"
        );
    }

    #[test]
    fn udp_and_other_protocols() {
        let mut u = ip(17, 32, 0);
        u.extend([0, 53, 0x30, 0x39, 0, 12, 0, 0]); // sport 53, dport 12345, len 12
        u.extend([1, 2, 3, 4]);
        let g = ip(47, 20, 0);
        assert_eq!(
            run("TIMESTAMP false", &[(&u, 0), (&u[..26], 0), (&g, 0)]),
            "10.0.0.1.53 > 10.0.0.2.12345: udp 12\n\
             10.0.0.1.53 > 10.0.0.2.12345: truncated-udp\n\
             10.0.0.1 > 10.0.0.2: ip-proto-47\n"
        );
    }

    #[test]
    fn fragments() {
        // A middle fragment: offset 185*8 = 1480, more fragments.
        let mut f = ip(17, 28, 0x2000 | 185);
        f.extend([0; 8]);
        // A first fragment with MF set.
        let mut first = ip(17, 28, 0x2000);
        first.extend([0, 1, 0, 2, 0, 8, 0, 0]);
        assert_eq!(
            run("TIMESTAMP false", &[(&f, 0), (&first, 0)]),
            "10.0.0.1 > 10.0.0.2: udp (frag 4660:8@1480+)\n\
             10.0.0.1.1 > 10.0.0.2.2: udp 8 (frag 4660:8@0+)\n"
        );
    }

    #[test]
    fn icmp_lines() {
        let mut echo = ip(1, 28, 0);
        echo.extend([8, 0, 0, 0, 0x01, 0x02, 0x00, 0x07]); // echo, id 0x0102, seq 7
        let mut reply = ip(1, 28, 0);
        reply.extend([0, 0, 0, 0, 0x01, 0x02, 0x00, 0x07]);
        // Port unreachable quoting a UDP packet to port 53.
        let mut unreach = ip(1, 56, 0);
        unreach.extend([3, 3, 0, 0, 0, 0, 0, 0]);
        let mut inner = ip(17, 28, 0);
        inner[16..20].copy_from_slice(&[192, 168, 1, 1]);
        unreach.extend(&inner);
        unreach.extend([0x30, 0x39, 0, 53, 0, 8, 0, 0]);
        // Fragmentation needed, MTU 1400.
        let mut needfrag = ip(1, 48, 0);
        needfrag.extend([3, 4, 0, 0, 0, 0, 0x05, 0x78]);
        needfrag.extend(&inner);
        // Time exceeded in transit; an unknown type with a code.
        let mut tx = ip(1, 28, 0);
        tx.extend([11, 0, 0, 0, 0, 0, 0, 0]);
        let mut odd = ip(1, 28, 0);
        odd.extend([42, 3, 0, 0, 0, 0, 0, 0]);
        let got = run(
            "TIMESTAMP false",
            &[
                (&echo, 0),
                (&reply, 0),
                (&echo[..26], 0),
                (&unreach, 0),
                (&unreach[..40], 0),
                (&needfrag, 0),
                (&tx, 0),
                (&odd, 0),
                (&echo[..21], 0),
            ],
        );
        assert_eq!(
            got,
            "10.0.0.1 > 10.0.0.2: icmp echo (258, 7)\n\
             10.0.0.1 > 10.0.0.2: icmp echo-reply (258, 7)\n\
             10.0.0.1 > 10.0.0.2: icmp echo truncated-icmp\n\
             10.0.0.1 > 10.0.0.2: icmp 192.168.1.1 unreachable port udp/53\n\
             10.0.0.1 > 10.0.0.2: icmp unreachable port truncated-icmp\n\
             10.0.0.1 > 10.0.0.2: icmp 192.168.1.1 unreachable needfrag (mtu 1400)\n\
             10.0.0.1 > 10.0.0.2: icmp timeexceeded transit\n\
             10.0.0.1 > 10.0.0.2: icmp type 42 code 3\n\
             10.0.0.1 > 10.0.0.2: truncated-icmp\n"
        );
        // Host byte order (little-endian hosts print 0x0201 and 0x0700).
        let want = if cfg!(target_endian = "little") {
            "10.0.0.1 > 10.0.0.2: icmp echo (513, 1792)\n"
        } else {
            "10.0.0.1 > 10.0.0.2: icmp echo (258, 7)\n"
        };
        assert_eq!(run("TIMESTAMP false, SWAP false", &[(&echo, 0)]), want);
    }

    #[test]
    fn optional_fields_and_annotations() {
        let mut u = ip(17, 28, 0);
        u.extend([0, 1, 0, 2, 0, 8, 0, 0]);
        let mut e = make(
            "l, ID true, TTL true, TOS true, LENGTH true, AGGREGATE true, PAINT true",
            std::path::Path::new("."),
        )
        .expect("ok");
        let pool = Pool::new(4).expect("pool");
        let mut p = pool.alloc_from(&u).expect("p");
        p.set_network_header(0, 20);
        p.set_timestamp_ns(1_500_000_001);
        p.set_paint_anno(3);
        let o = AGGREGATE_ANNO_OFFSET;
        p.anno_bytes_mut()[o..o + 4].copy_from_slice(&77u32.to_ne_bytes());
        let mut s = String::new();
        assert!(e.format(&p, &mut s));
        assert_eq!(
            s,
            "l: 1.500000001: #77.3: id 4660 ttl 64 tos 16 length 28 10.0.0.1.1 > 10.0.0.2.2: udp 8"
        );
        e.print_aggregate = false;
        assert!(e.format(&p, &mut s));
        assert_eq!(
            s,
            "l: 1.500000001: paint 3: id 4660 ttl 64 tos 16 length 28 10.0.0.1.1 > 10.0.0.2.2: udp 8"
        );
    }

    #[test]
    fn no_network_header_and_truncated_ip() {
        let t = tcp_packet(0x02, b"");
        assert_eq!(
            run("", &[(&t, usize::MAX), (&t[..19], 0)]),
            "1.000000: truncated-ip\n"
        );
    }

    #[test]
    fn contents_and_payload_dumps() {
        let payload: Vec<u8> = (0u8..30).map(|i| b'a' + (i % 26)).collect();
        let t = tcp_packet(0x18, &payload);
        let got = run("CONTENTS HEX, MAXLENGTH 28, TIMESTAMP false", &[(&t, 0)]);
        assert_eq!(
            got,
            "10.0.0.1.1234 > 10.0.0.2.80: P 100:130(30,70,70) ack 200 win 4096\n  \
             45100046 12340000 40060000 0a000001 0a000002 04d20050\n  \
             00000064\n"
        );
        let got = run("PAYLOAD ASCII, TIMESTAMP false", &[(&t, 0)]);
        assert_eq!(
            got,
            "10.0.0.1.1234 > 10.0.0.2.80: P 100:130(30,70,70) ack 200 win 4096\n  \
             abcdefgh ijklmnop qrstuvwx yzabcd\n"
        );
        let got = run("PAYLOAD HEX, MAXLENGTH 5, TIMESTAMP false", &[(&t, 0)]);
        assert_eq!(
            got,
            "10.0.0.1.1234 > 10.0.0.2.80: P 100:130(30,70,70) ack 200 win 4096\n  \
             61626364 65\n"
        );
        // Non-printable bytes show as dots; -1 prints everything.
        let mut u = ip(17, 31, 0);
        u.extend([0, 1, 0, 2, 0, 11, 0, 0, b'h', 0, b'i']);
        let got = run("PAYLOAD ASCII, MAXLENGTH -1, TIMESTAMP false", &[(&u, 0)]);
        assert_eq!(got, "10.0.0.1.1 > 10.0.0.2.2: udp 11\n  h.i\n");
        // Payload of an empty packet prints no dump line.
        let s = tcp_packet(0x02, b"");
        let got = run("PAYLOAD HEX, TIMESTAMP false", &[(&s, 0)]);
        assert_eq!(
            got,
            "10.0.0.1.1234 > 10.0.0.2.80: S 100:101(1,40,40) win 4096\n"
        );
    }

    #[test]
    fn configure_errors() {
        assert_eq!(
            err("CONTENTS bin"),
            "bad contents value 'BIN'; should be 'NONE', 'HEX', or 'ASCII'"
        );
        assert_eq!(
            err("PAYLOAD bin"),
            "bad payload value 'BIN'; should be 'false', 'hex', or 'ascii'"
        );
        assert_eq!(
            err("CONTENTS HEX, PAYLOAD ASCII"),
            "specify at most one of PAYLOAD and CONTENTS"
        );
        assert_eq!(err("TTL maybe"), "TTL: expected boolean, found `maybe`");
        let e = make("CONTENTS true, CHANNEL x", std::path::Path::new(".")).expect("ok");
        assert_eq!(e.contents, Contents::Hex);
        assert!(!e.payload);
        let e = make("PAYLOAD yes", std::path::Path::new(".")).expect("ok");
        assert_eq!(e.contents, Contents::Hex);
        assert!(e.payload);
    }

    #[test]
    fn active_handler_and_outfile() {
        let dir = crate::app::testing::scratch("ipprint");
        let mut e = make("o, OUTFILE out.txt, TIMESTAMP false", &dir).expect("ok");
        let mut u = ip(17, 28, 0);
        u.extend([0, 1, 0, 2, 0, 8, 0, 0]);
        let pool = Pool::new(8).expect("pool");
        let push = |e: &mut IPPrint| {
            let mut p = pool.alloc_from(&u).expect("p");
            p.set_network_header(0, 20);
            let mut batch = Batch::new();
            let _ = batch.push(p);
            let mut bufs = [Batch::new()];
            let mut ctrl = Control::default();
            let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
            e.push(0, &mut batch, &mut out);
            assert_eq!(batch.len(), 1);
        };
        push(&mut e);
        e.write_handler("active", "false").expect("write");
        assert_eq!(e.read_handler("active").expect("read"), "false");
        push(&mut e);
        e.write_handler("active", "true").expect("write");
        push(&mut e);
        assert!(e.write_handler("active", "x").is_err());
        e.cleanup();
        let text = std::fs::read_to_string(dir.join("out.txt")).expect("read");
        assert_eq!(
            text,
            "o: 10.0.0.1.1 > 10.0.0.2.2: udp 8\no: 10.0.0.1.1 > 10.0.0.2.2: udp 8\n"
        );
        let m = match make("OUTFILE /nonexistent-dir/x", std::path::Path::new(".")) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.message,
        };
        assert_eq!(m, "/nonexistent-dir/x: No such file or directory");
    }
}
