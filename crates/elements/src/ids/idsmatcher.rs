//! `IDSMatcher`: signature-based intrusion detection over IPv4 packets with
//! Snort/Suricata-style rules.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use pronto_packet::{Batch, Packet};

use super::engine::{decode, Engine, Scratch};
use super::rules::{self, Action};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELDS_5TUPLE, FIELD_OTHER, FIELD_PAYLOAD,
};

/// Offset in the user annotation area where `IDSMatcher` stores the sid of
/// the rule that sent a packet to its alert output (4 bytes, native byte
/// order, like Click's 32-bit annotations).
pub const IDS_SID_ANNO_OFFSET: usize = 40;

/// The variable keywords `IDSMatcher` accepts, as in Snort's default
/// configuration.
const VAR_KEYWORDS: &[&str] = &[
    "HOME_NET",
    "EXTERNAL_NET",
    "HTTP_SERVERS",
    "SMTP_SERVERS",
    "SQL_SERVERS",
    "DNS_SERVERS",
    "TELNET_SERVERS",
    "SSH_SERVERS",
    "HTTP_PORTS",
    "SSH_PORTS",
    "FTP_PORTS",
    "ORACLE_PORTS",
    "SHELLCODE_PORTS",
];

enum Sink {
    Stderr,
    File(std::io::BufWriter<std::fs::File>),
    None,
}

/// Matches packets against a rule file; matching packets go to output 1.
pub struct IDSMatcher {
    name: String,
    file: PathBuf,
    base_dir: PathBuf,
    vars: Vec<(String, String)>,
    engine: Engine,
    scratch: Scratch,
    /// Hits per rule, indexed like `engine.rules()`.
    hits: Vec<u64>,
    packets: u64,
    alerts: u64,
    drops: u64,
    uninspected: u64,
    sink: Sink,
    line: String,
    wrote: bool,
}

fn load(
    path: &std::path::Path,
    vars: &[(String, String)],
) -> Result<(Engine, Vec<String>), String> {
    let text = crate::files::read_to_string(path)
        .map_err(|e| format!("cannot read rules file {}: {e}", path.display()))?;
    let shown = path.display().to_string();
    let set = rules::parse(&text, &shown, vars).map_err(|errs| {
        let mut m = format!("{} error(s) in {shown}:", errs.len());
        for e in &errs {
            let _ = write!(m, "\n  {e}");
        }
        m
    })?;
    let engine = Engine::new(set)?;
    let skipped = engine.skipped().to_vec();
    Ok((engine, skipped))
}

impl IDSMatcher {
    /// The class description.
    pub const SPEC: Spec = Spec::new("IDSMatcher")
        .ports("1/2")
        .processing("a/a")
        .keywords(&[
            "FILE",
            "LOG",
            "VARS",
            "QUIET",
            "HOME_NET",
            "EXTERNAL_NET",
            "HTTP_SERVERS",
            "SMTP_SERVERS",
            "SQL_SERVERS",
            "DNS_SERVERS",
            "TELNET_SERVERS",
            "SSH_SERVERS",
            "HTTP_PORTS",
            "SSH_PORTS",
            "FTP_PORTS",
            "ORACLE_PORTS",
            "SHELLCODE_PORTS",
        ])
        .profile(ActionProfile::reads(FIELDS_5TUPLE | FIELD_PAYLOAD | FIELD_OTHER).writes(FIELD_OTHER))
        .doc(
            "IDSMatcher(FILE [, KEYWORDS])\n\n\
             Signature-based intrusion detection (pronto's own element). Loads a\n\
             Snort/Suricata-style rule file and matches every IPv4 and IPv6 packet\n\
             against it:\n\
             all rules' contents are searched in one multi-pattern pass over the\n\
             payload, then each candidate rule's header (protocol, addresses, ports,\n\
             direction, flags, dsize, itype/icode) and content placement (offset,\n\
             depth, distance, within, nocase, negated contents) are verified.\n\
             Needs the IP header annotation (CheckIPHeader, CheckIP6Header or\n\
             MarkIPHeader before it). In IPv6 packets the extension-header chain is\n\
             walked (at most 16 headers) to the transport header: its ports, flags and\n\
             ICMPv6 type and code are matched, and contents after it.\n\n\
             Rule precedence: pass rules first, then drop, alert, log, each in file\n\
             order. A matching pass rule stops matching (the packet goes to output 0).\n\
             Each matching alert/drop/log rule is counted and logged; if an alert or\n\
             drop rule matched, the packet goes to output 1 with the sid of the first\n\
             such rule in the annotation at offset 40 (4 bytes, native order); log\n\
             rules alone leave the packet on output 0. Packets matched by drop rules\n\
             are counted in `drops` (send output 1 to Discard to really drop them).\n\n\
             Supported rule syntax: actions alert log pass drop; protocols tcp udp icmp\n\
             icmpv6 (also icmp6) ip (tcp, udp and ip match both families, icmp IPv4,\n\
             icmpv6 IPv6); `->` and `<>`; addresses any, a.b.c.d, a.b.c.d/len, IPv6\n\
             x:y::z and x:y::/len, $VAR, !X, [X,Y] (nested, families mixed; a network\n\
             of one family never holds an address of the other); ports any, N, lo:hi, :hi, lo:, $VAR, !X, [X,Y]; `var`, `ipvar`,\n\
             `portvar` lines; `#` comments; `\\` line continuation; options msg,\n\
             content (with |hex| bytes, `!` negation), nocase, offset, depth, distance,\n\
             within, fast_pattern, sid, rev, gid, classtype, priority, dsize, flags,\n\
             itype, icode; reference, metadata, rawbytes and target are ignored.\n\
             Syntax errors reject the file (FILE:LINE:COLUMN: message). A rule using\n\
             an unsupported option (pcre, flow, flowbits, byte_test, byte_jump,\n\
             isdataat, http_* buffers, threshold, ...), another action or protocol or\n\
             an undefined variable is skipped with a warning on\n\
             standard error and counted in `skipped_rules`; the rest load.\n\n\
             Not done: no TCP stream reassembly (a signature split over two segments\n\
             is missed; matching is within one packet), no IP defragmentation (put\n\
             IPReassembler before it; later fragments only match `ip` rules against\n\
             their raw data), no flow or flowbits state, no pcre, no HTTP/protocol\n\
             normalisation or decoding, no thresholds or event suppression.\n\n\
             Alerts are logged one line each, fast.log style:\n\
             `11/22-10:00:00.123456  [**] [1:1000001:1] msg [**] [Classification: C]\n\
             [Priority: 2] {TCP} 10.0.0.1:1234 -> 10.0.0.2:80` (drop rules start with\n\
             `[Drop] `), time from the packet's timestamp (UTC); for IPv6\n\
             `{TCP} [2001:db8::1]:1234 -> [2001:db8::2]:80`, `{IPV6-ICMP} A -> B`.\n\n\
             Ports: 1 input; output 0 clean packets, output 1 alerted packets.\n\
             Keywords:\n  \
             FILE     the rules file (also the first positional argument)\n  \
             LOG      file to append alert lines to (default standard error)\n  \
             QUIET    boolean; do not log alerts at all (default false)\n  \
             VARS     more variables: `NAME VALUE; NAME VALUE ...`\n  \
             HOME_NET, EXTERNAL_NET, HTTP_SERVERS, SMTP_SERVERS, SQL_SERVERS,\n  \
             DNS_SERVERS, TELNET_SERVERS, SSH_SERVERS, HTTP_PORTS, SSH_PORTS,\n  \
             FTP_PORTS, ORACLE_PORTS, SHELLCODE_PORTS: variable values (override\n  \
             the file's var lines), e.g. HOME_NET [10.0.0.0/8,192.168.0.0/16]\n\
             Handlers:\n  \
             packets (read)        packets seen\n  \
             alerts (read)         alert events logged (alert, drop and log rules)\n  \
             drops (read)          packets matched by a drop rule\n  \
             uninspected (read)    packets without a valid IPv4 or IPv6 header, or\n  \
             \x20                   with an extension-header chain the walk refuses (output 0)\n  \
             rules (read)          rules loaded\n  \
             skipped_rules (read)  rules skipped when loading\n  \
             skipped (read)        the skipped rules' diagnostics, one a line\n  \
             hits (read)           `SID COUNT` for every rule, in file order\n  \
             hit SID (read)        the count of rule SID\n  \
             reset (write)         zero all counters\n  \
             reload (write)        re-read FILE (or the file named in the value);\n                        \
             on an error the old rules stay and the write fails",
        );

    /// Configures an `IDSMatcher`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let file: String = a.read_mp("FILE")?;
        let log: Option<String> = a.read("LOG")?;
        let quiet = a.read_or("QUIET", false)?;
        let more: Option<String> = a.read("VARS")?;
        let mut vars = Vec::new();
        if let Some(more) = more {
            for def in more.split(';').map(str::trim).filter(|d| !d.is_empty()) {
                match def.split_once(char::is_whitespace) {
                    Some((n, v)) if !v.trim().is_empty() => {
                        vars.push((n.to_string(), v.trim().to_string()))
                    }
                    _ => {
                        return Err(ConfigError::new(format!(
                            "VARS: expected `NAME VALUE`, found `{def}`"
                        )))
                    }
                }
            }
        }
        for &k in VAR_KEYWORDS {
            if let Some(v) = a.read::<String>(k)? {
                vars.push((k.to_string(), v));
            }
        }
        a.finish()?;
        let path = ctx.path(&file);
        let (engine, skipped) = load(&path, &vars).map_err(ConfigError::new)?;
        for s in &skipped {
            eprintln!("{}: {s}", ctx.name);
        }
        let sink = if quiet {
            Sink::None
        } else if let Some(l) = log {
            let p = ctx.path(&l);
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .map_err(|e| ConfigError::new(format!("LOG: cannot open {}: {e}", p.display())))?;
            Sink::File(std::io::BufWriter::new(f))
        } else {
            Sink::Stderr
        };
        Ok(Box::new(IDSMatcher {
            name: ctx.name.to_string(),
            file: path,
            base_dir: ctx.base_dir.to_path_buf(),
            vars,
            scratch: engine.scratch(),
            hits: vec![0; engine.rules().len()],
            engine,
            packets: 0,
            alerts: 0,
            drops: 0,
            uninspected: 0,
            sink,
            line: String::with_capacity(1024),
            wrote: false,
        }))
    }

    fn action(&mut self, p: &mut Packet, now: i64) -> Option<usize> {
        self.packets += 1;
        let Some(ip) = p.network_data() else {
            self.uninspected += 1;
            return Some(0);
        };
        let Some(v) = decode(ip) else {
            self.uninspected += 1;
            return Some(0);
        };
        let ts = match p.timestamp_ns() {
            0 => now,
            t => t,
        };
        let mut first: Option<u32> = None;
        let mut dropped = false;
        let Self {
            engine,
            scratch,
            hits,
            alerts,
            sink,
            line,
            wrote,
            ..
        } = self;
        engine.scan(&v, scratch, |i| {
            hits[i] += 1;
            let r = &engine.rules()[i];
            if r.action == Action::Pass {
                return;
            }
            *alerts += 1;
            if matches!(r.action, Action::Alert | Action::Drop) && first.is_none() {
                first = Some(r.sid);
            }
            dropped |= r.action == Action::Drop;
            if !matches!(sink, Sink::None) {
                line.clear();
                format_alert(line, ts, r, &v);
                let res = match sink {
                    Sink::Stderr => std::io::stderr().lock().write_all(line.as_bytes()),
                    Sink::File(f) => f.write_all(line.as_bytes()),
                    Sink::None => Ok(()),
                };
                *wrote |= res.is_ok();
            }
        });
        self.drops += dropped as u64;
        let Some(sid) = first else {
            return Some(0);
        };
        p.anno_bytes_mut()[IDS_SID_ANNO_OFFSET..IDS_SID_ANNO_OFFSET + 4]
            .copy_from_slice(&sid.to_ne_bytes());
        Some(1)
    }
}

/// Appends a fast.log-style alert line for rule `r` on packet `v` at `ts`
/// (ns since the epoch, shown in UTC).
fn format_alert(s: &mut String, ts: i64, r: &rules::Rule, v: &super::engine::View<'_>) {
    let secs = ts.div_euclid(1_000_000_000);
    let micros = ts.rem_euclid(1_000_000_000) / 1000;
    let (_, month, day) = civil(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    let _ = write!(
        s,
        "{month:02}/{day:02}-{:02}:{:02}:{:02}.{micros:06}  ",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    );
    if r.action == Action::Drop {
        s.push_str("[Drop] ");
    }
    let _ = write!(s, "[**] [{}:{}:{}] {} [**] ", r.gid, r.sid, r.rev, r.msg);
    if let Some(c) = &r.classtype {
        let _ = write!(s, "[Classification: {c}] ");
    }
    let _ = write!(s, "[Priority: {}] ", r.priority);
    let v6 = matches!(v.src, rules::Addr::V6(_));
    let _ = match v.proto {
        6 => write!(s, "{{TCP}} "),
        17 => write!(s, "{{UDP}} "),
        1 if !v6 => write!(s, "{{ICMP}} "),
        58 if v6 => write!(s, "{{IPV6-ICMP}} "),
        n => write!(s, "{{PROTO:{n:03}}} "),
    };
    // IPv6 addresses in RFC 5952 form, in brackets before a port.
    let ports = v.l4 && matches!(v.proto, 6 | 17);
    let addr = |s: &mut String, a: rules::Addr, port: u16| match a {
        rules::Addr::V4(a) => {
            let _ = write!(s, "{}", std::net::Ipv4Addr::from(a));
            if ports {
                let _ = write!(s, ":{port}");
            }
        }
        rules::Addr::V6(a) => {
            if ports {
                s.push('[');
            }
            pronto_lang::args::write_ip6(s, &a.to_be_bytes());
            if ports {
                let _ = write!(s, "]:{port}");
            }
        }
    };
    addr(s, v.src, v.sport);
    s.push_str(" -> ");
    addr(s, v.dst, v.dport);
    s.push('\n');
}

/// (year, month, day) of day `z` since 1970-01-01 (proleptic Gregorian).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

impl Element for IDSMatcher {
    /// Unless it prints its alerts on standard error.
    fn one_for_one(&self) -> bool {
        !matches!(self.sink, Sink::Stderr)
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        push_each(batch, out, |p, _| self.action(p, now));
        if self.wrote {
            self.wrote = false;
            if let Sink::File(f) = &mut self.sink {
                let _ = f.flush();
            }
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("filtered", self.drops);
        c.count("packets", self.packets);
        c.count("alerts", self.alerts);
        c.count("uninspected", self.uninspected);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("packets"),
            HandlerInfo::read("alerts"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("uninspected"),
            HandlerInfo::read("rules"),
            HandlerInfo::read("skipped_rules"),
            HandlerInfo::read("skipped"),
            HandlerInfo::read("hits"),
            HandlerInfo::read("hit"),
            HandlerInfo::write("reset"),
            HandlerInfo::write("reload"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let (h, param) = match name.split_once(' ') {
            Some((h, p)) => (h, p.trim()),
            None => (name, ""),
        };
        if !param.is_empty() && h != "hit" {
            return Err(HandlerError::BadValue(format!("{h}: takes no parameter")));
        }
        match h {
            "packets" => Ok(self.packets.to_string()),
            "alerts" => Ok(self.alerts.to_string()),
            "drops" => Ok(self.drops.to_string()),
            "uninspected" => Ok(self.uninspected.to_string()),
            "rules" => Ok(self.engine.rules().len().to_string()),
            "skipped_rules" => Ok(self.engine.skipped().len().to_string()),
            "skipped" => Ok(self.engine.skipped().join("\n")),
            "hits" => {
                let rules = self.engine.rules();
                let mut order: Vec<usize> = (0..rules.len()).collect();
                order.sort_by_key(|&i| rules[i].line);
                let mut s = String::new();
                for i in order {
                    let _ = writeln!(s, "{} {}", rules[i].sid, self.hits[i]);
                }
                Ok(s)
            }
            "hit" => {
                let sid: u32 = param.parse().map_err(|_| {
                    HandlerError::BadValue(format!("hit: expected a sid, found `{param}`"))
                })?;
                let rules = self.engine.rules();
                match rules.iter().position(|r| r.sid == sid) {
                    Some(i) => Ok(self.hits[i].to_string()),
                    None => Err(HandlerError::BadValue(format!(
                        "hit: no rule with sid {sid}"
                    ))),
                }
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.packets = 0;
                self.alerts = 0;
                self.drops = 0;
                self.uninspected = 0;
                self.hits.iter_mut().for_each(|h| *h = 0);
                Ok(())
            }
            "reload" => {
                let f = pronto_lang::args::unquote(value.trim());
                let path = match f.is_empty() {
                    false => {
                        let p = std::path::Path::new(&f);
                        if p.is_absolute() {
                            p.to_path_buf()
                        } else {
                            self.base_dir.join(p)
                        }
                    }
                    true => self.file.clone(),
                };
                let (engine, skipped) = load(&path, &self.vars).map_err(|e| {
                    HandlerError::BadValue(format!("reload: {e}; the old rules stay"))
                })?;
                for s in &skipped {
                    eprintln!("{}: {s}", self.name);
                }
                self.scratch = engine.scratch();
                self.hits = vec![0; engine.rules().len()];
                self.engine = engine;
                self.file = path;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        if let Sink::File(f) = &mut self.sink {
            let _ = f.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Control;
    use pronto_packet::Pool;

    /// A scratch directory for one test.
    fn dir(tag: &str) -> crate::app::testing::Scratch {
        crate::app::testing::scratch(&format!("ids-{tag}"))
    }

    fn configure(base: &std::path::Path, config: &str) -> Result<Box<dyn Element>, ConfigError> {
        let push = [true, true];
        let ctx = ConfigCtx {
            name: "ids",
            config,
            ninputs: 1,
            noutputs: 2,
            base_dir: base,
            keywords: IDSMatcher::SPEC.keywords,
            output_push: &push,
            input_push: &push[..1],
            peers: &crate::NoPeers,
        };
        IDSMatcher::configure(&ctx)
    }

    const RULES: &str = "ipvar HOME_NET 192.168.1.0/24\n\
        portvar HTTP_PORTS [80,8080]\n\
        # web\n\
        alert tcp any any -> $HOME_NET $HTTP_PORTS (msg:\"WEB cmd.exe access\"; content:\"cmd.exe\"; nocase; classtype:web-application-attack; sid:1000001; rev:2;)\n\
        drop tcp any any -> $HOME_NET any (msg:\"SHELLCODE x86 NOOP\"; content:\"|90 90 90 90 90 90|\"; sid:1000002;)\n\
        log udp any any -> any 53 (msg:\"DNS query for evil\"; content:\"|04|evil\"; sid:1000003; priority:1;)\n\
        pass tcp 10.9.9.9 any -> any any (content:\"cmd.exe\"; nocase; sid:1000004;)\n\
        alert tcp any any -> any any (msg:\"uses pcre\"; pcre:\"/x/\"; sid:1000005;)\n";

    /// An Ethernet + IPv4 + TCP frame src:sport -> dst:dport with `payload`
    /// (the IP header annotation is set by `packet`).
    fn tcp_frame(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let total = 40 + payload.len();
        let mut f = vec![0u8; 14]; // Ethernet header (not looked at)
        f.extend_from_slice(&[
            0x45,
            0x00,
            (total >> 8) as u8,
            total as u8, // version/IHL, TOS, length
            0x00,
            0x01,
            0x00,
            0x00,
            64,
            6,
            0x00,
            0x00, // id, frag, TTL, TCP, checksum
        ]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&sport.to_be_bytes());
        f.extend_from_slice(&dport.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        f.extend_from_slice(payload);
        f
    }

    /// A UDP frame src:sport -> dst:dport.
    fn udp_frame(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let total = 28 + payload.len();
        let mut f = vec![0u8; 14];
        f.extend_from_slice(&[
            0x45,
            0x00,
            (total >> 8) as u8,
            total as u8,
            0x00,
            0x01,
            0x00,
            0x00,
            64,
            17,
            0,
            0,
        ]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&sport.to_be_bytes());
        f.extend_from_slice(&dport.to_be_bytes());
        f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
        f.extend_from_slice(payload);
        f
    }

    const EXT: [u8; 4] = [10, 0, 0, 1];
    const WEB: [u8; 4] = [192, 168, 1, 5];
    /// 2024-11-22 10:00:00.123456 UTC, in ns.
    const T: i64 = 1_732_269_600_123_456_000;

    /// Pushes frames (timestamped `T` + i µs, IP header at 14) and returns
    /// (output 0 lengths, output 1 (length, sid anno)).
    fn run(e: &mut dyn Element, frames: &[Vec<u8>]) -> (Vec<usize>, Vec<(usize, u32)>) {
        let pool = Pool::new(64).expect("pool");
        let mut batch = Batch::new();
        for (i, f) in frames.iter().enumerate() {
            let mut p = pool.alloc_from(f).expect("slot");
            p.set_network_header(14, 20);
            p.set_timestamp_ns(T + i as i64 * 1000);
            batch.push(p).expect("room");
        }
        let mut bufs = [Batch::new(), Batch::new()];
        let mut ctrl = Control::default();
        let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
        e.push(0, &mut batch, &mut out);
        let passed = out.passed();
        let sid = |p: &Packet| {
            let a = p.anno_bytes();
            u32::from_ne_bytes([a[40], a[41], a[42], a[43]])
        };
        let (mut o0, mut o1) = (Vec::new(), Vec::new());
        for p in batch.iter() {
            match passed {
                Some(0) => o0.push(p.len()),
                Some(1) => o1.push((p.len(), sid(p))),
                _ => panic!("unexpected pass {passed:?}"),
            }
        }
        o0.extend(bufs[0].iter().map(|p| p.len()));
        o1.extend(bufs[1].iter().map(|p| (p.len(), sid(p))));
        batch.clear();
        (o0, o1)
    }

    #[test]
    fn routes_counts_logs_and_annotates() {
        let d = dir("route");
        std::fs::write(d.join("r.rules"), RULES).expect("write");
        let mut e = configure(&d, "r.rules, LOG alerts.log").expect("configures");
        let frames = [
            tcp_frame(EXT, WEB, 40000, 80, b"GET /scripts/CMD.EXE?/c+dir"), // 1000001
            tcp_frame(EXT, WEB, 40000, 443, b"GET /scripts/cmd.exe"),       // wrong port
            tcp_frame(
                EXT,
                WEB,
                40001,
                8080,
                b"\x90\x90\x90\x90\x90\x90\x90cmd.exe",
            ), // drop + alert
            udp_frame(
                EXT,
                [8, 8, 8, 8],
                5353,
                53,
                b"\x12\x34\x01\x00\x00\x01\x04evil\x03com\x00",
            ), // log
            tcp_frame([10, 9, 9, 9], WEB, 1234, 80, b"cmd.exe"),            // pass
            tcp_frame(EXT, WEB, 40002, 80, b"GET / HTTP/1.1"),              // clean
        ];
        let (o0, o1) = run(e.as_mut(), &frames);
        assert_eq!(
            o0,
            [
                frames[1].len(),
                frames[3].len(),
                frames[4].len(),
                frames[5].len()
            ]
        );
        assert_eq!(
            o1,
            [(frames[0].len(), 1_000_001), (frames[2].len(), 1_000_002)]
        );
        let h = |e: &dyn Element, n: &str| e.read_handler(n).expect(n);
        let e = e.as_mut();
        assert_eq!(h(e, "packets"), "6");
        assert_eq!(h(e, "alerts"), "4");
        assert_eq!(h(e, "drops"), "1");
        assert_eq!(h(e, "rules"), "4");
        assert_eq!(h(e, "skipped_rules"), "1");
        assert_eq!(h(e, "uninspected"), "0");
        assert!(h(e, "skipped").ends_with("r.rules:8:48: rule skipped: unsupported option `pcre`"));
        assert_eq!(h(e, "hits"), "1000001 2\n1000002 1\n1000003 1\n1000004 1\n");
        assert_eq!(h(e, "hit 1000001"), "2");
        assert_eq!(h(e, "hit 1000004"), "1");
        assert_eq!(
            e.read_handler("hit 42"),
            Err(HandlerError::BadValue("hit: no rule with sid 42".into()))
        );
        e.cleanup();
        let log = std::fs::read_to_string(d.join("alerts.log")).expect("log");
        assert_eq!(
            log,
            "11/22-10:00:00.123456  [**] [1:1000001:2] WEB cmd.exe access [**] [Classification: web-application-attack] [Priority: 1] {TCP} 10.0.0.1:40000 -> 192.168.1.5:80\n\
             11/22-10:00:00.123458  [Drop] [**] [1:1000002:0] SHELLCODE x86 NOOP [**] [Priority: 3] {TCP} 10.0.0.1:40001 -> 192.168.1.5:8080\n\
             11/22-10:00:00.123458  [**] [1:1000001:2] WEB cmd.exe access [**] [Classification: web-application-attack] [Priority: 1] {TCP} 10.0.0.1:40001 -> 192.168.1.5:8080\n\
             11/22-10:00:00.123459  [**] [1:1000003:0] DNS query for evil [**] [Priority: 1] {UDP} 10.0.0.1:5353 -> 8.8.8.8:53\n"
        );
        e.write_handler("reset", "").expect("reset");
        assert_eq!(h(e, "packets"), "0");
        assert_eq!(h(e, "hit 1000001"), "0");
    }

    #[test]
    fn non_ip_goes_to_output_0() {
        let d = dir("nonip");
        std::fs::write(d.join("r.rules"), RULES).expect("write");
        let mut e = configure(&d, "r.rules, QUIET true").expect("configures");
        let pool = Pool::new(8).expect("pool");
        let mut batch = Batch::new();
        // No IP header annotation; then an annotation on bytes of IP
        // version 5; then IPv6 with 17 Destination Options headers (longer
        // than the walk follows) before a TCP segment holding `cmd.exe`.
        batch
            .push(pool.alloc_from(b"cmd.exe").expect("slot"))
            .expect("room");
        let mut p = pool.alloc_from(&[0x50; 40]).expect("slot");
        p.set_network_header(0, 20);
        batch.push(p).expect("room");
        let mut v6 = vec![0x60, 0, 0, 0, 0, 0, 60, 64];
        v6.extend_from_slice(&[0x20; 32]);
        for i in 0..17 {
            v6.extend_from_slice(&[if i == 16 { 6 } else { 60 }, 0, 1, 4, 0, 0, 0, 0]);
        }
        v6.extend_from_slice(&[
            0, 1, 0, 80, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x18, 1, 0, 0, 0, 0, 0,
        ]);
        v6.extend_from_slice(b"cmd.exe");
        let plen = (v6.len() - 40) as u16;
        v6[4..6].copy_from_slice(&plen.to_be_bytes());
        let mut p = pool.alloc_from(&v6).expect("slot");
        p.set_network_header(0, 40);
        batch.push(p).expect("room");
        let mut bufs = [Batch::new(), Batch::new()];
        let mut ctrl = Control::default();
        let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
        e.push(0, &mut batch, &mut out);
        assert_eq!(out.passed(), Some(0));
        assert_eq!(batch.len(), 3);
        assert_eq!(e.read_handler("uninspected").expect("h"), "3");
        assert_eq!(e.read_handler("alerts").expect("h"), "0");
    }

    #[test]
    fn keyword_variables_and_errors() {
        let d = dir("vars");
        std::fs::write(
            d.join("v.rules"),
            "alert tcp any any -> $HOME_NET $HTTP_PORTS (content:\"x\"; sid:1;)\n\
             alert tcp any any -> $MINE any (content:\"y\"; sid:2;)\n",
        )
        .expect("write");
        let mut e = configure(
            &d,
            "v.rules, QUIET true, HOME_NET [192.168.1.0/24,172.16.0.0/12], HTTP_PORTS 80, VARS \"MINE 10.0.0.1; OTHER any\"",
        )
        .expect("configures");
        let (o0, o1) = run(
            e.as_mut(),
            &[
                tcp_frame(EXT, WEB, 1, 80, b"x"),
                tcp_frame(EXT, [172, 20, 0, 1], 1, 80, b"x"),
                tcp_frame(EXT, WEB, 1, 81, b"x"),
                tcp_frame(WEB, EXT, 1, 81, b"y"),
            ],
        );
        assert_eq!(o0.len(), 1);
        assert_eq!(o1.iter().map(|x| x.1).collect::<Vec<_>>(), [1, 1, 2]);
        let err = |c: &str| match configure(&d, c) {
            Ok(_) => panic!("accepted {c}"),
            Err(e) => e.message,
        };
        assert_eq!(err(""), "missing mandatory FILE argument");
        assert!(err("nope.rules").starts_with("cannot read rules file "));
        assert_eq!(
            err("v.rules, VARS \"LONELY\""),
            "VARS: expected `NAME VALUE`, found `LONELY`"
        );
        std::fs::write(
            d.join("bad.rules"),
            "alert tcp any any -> any 99999 (sid:1;)\n",
        )
        .expect("write");
        let m = err("bad.rules");
        assert!(m.starts_with("1 error(s) in "), "{m}");
        assert!(m.ends_with("bad.rules:1:26: bad port `99999`"), "{m}");
    }

    #[test]
    fn reload_keeps_old_rules_on_error() {
        let d = dir("reload");
        let f = d.join("r.rules");
        std::fs::write(
            &f,
            "alert tcp any any -> any any (content:\"one\"; sid:1;)\n",
        )
        .expect("w");
        let mut e = configure(&d, "r.rules, QUIET true").expect("configures");
        let (_, o1) = run(e.as_mut(), &[tcp_frame(EXT, WEB, 1, 2, b"one two")]);
        assert_eq!(o1.len(), 1);
        // A broken file: the write fails, the old rules stay.
        std::fs::write(
            &f,
            "alert tcp any any -> any any (content:\"two\"; sid:x;)\n",
        )
        .expect("w");
        let r = e.write_handler("reload", "");
        let Err(HandlerError::BadValue(m)) = r else {
            panic!("{r:?}")
        };
        assert!(
            m.contains("r.rules:1:50: `sid` expects an unsigned integer, found `x`"),
            "{m}"
        );
        assert!(m.ends_with("; the old rules stay"), "{m}");
        assert_eq!(e.read_handler("hits").expect("h"), "1 1\n");
        // A good file replaces them; hit counts start again.
        std::fs::write(
            &f,
            "alert tcp any any -> any any (content:\"two\"; sid:2;)\n",
        )
        .expect("w");
        e.write_handler("reload", "").expect("reloads");
        assert_eq!(e.read_handler("hits").expect("h"), "2 0\n");
        let (_, o1) = run(e.as_mut(), &[tcp_frame(EXT, WEB, 1, 2, b"one two")]);
        assert_eq!(o1, [(61, 2)]);
        // Another file by name.
        std::fs::write(
            d.join("s.rules"),
            "alert tcp any any -> any any (content:\"one\"; sid:3;)\n",
        )
        .expect("w");
        e.write_handler("reload", "s.rules").expect("reloads");
        assert_eq!(e.read_handler("rules").expect("h"), "1");
        assert_eq!(e.read_handler("hits").expect("h"), "3 0\n");
    }

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(19_782), (2024, 2, 29));
        assert_eq!(civil(-1), (1969, 12, 31));
        let mut s = String::new();
        let r = rules::parse("alert ip any any -> any any (msg:\"m\"; sid:9;)", "x", &[])
            .expect("parses")
            .rules
            .remove(0);
        let pkt = [
            0x45, 0, 0, 20, 0, 0, 0, 0, 64, 47, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, // GRE, no data
        ];
        let v = decode(&pkt).expect("ip");
        format_alert(&mut s, 86_399_999_999_999, &r, &v);
        assert_eq!(
            s,
            "01/01-23:59:59.999999  [**] [1:9:0] m [**] [Priority: 3] {PROTO:047} 1.2.3.4 -> 5.6.7.8\n"
        );
    }
}
