//! `LinuxIPLookup`: routes packets by the host's IPv4 routing table, as
//! read from `/proc/net/route` once, at configuration.

use pronto_packet::{Batch, Packet};

use crate::util::cfg_err;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out,
    Spec, FIELD_DST_IP,
};

/// Where the host's IPv4 routes are read from.
const ROUTE_FILE: &str = "/proc/net/route";

/// One route: destination (masked), mask, gateway, output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Route {
    dst: u32,
    mask: u32,
    gw: [u8; 4],
    out: usize,
}

/// The routes of a `/proc/net/route` text whose interface is one of
/// `devs` (output = its index), in file order, and one message for each
/// route whose interface is not. A field written by the kernel as `%08X`
/// of the address's in-memory value is read back the same way.
fn parse_routes(text: &str, devs: &[String]) -> (Vec<Route>, Vec<String>) {
    let mut routes = Vec::new();
    let mut unknown = Vec::new();
    for line in text.lines() {
        // Iface Destination Gateway Flags RefCnt Use Metric Mask ...
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 {
            continue;
        }
        let hex = |s: &str| u32::from_str_radix(s, 16).ok().map(u32::to_ne_bytes);
        let (Some(dst), Some(gw), Some(mask)) = (hex(f[1]), hex(f[2]), hex(f[7])) else {
            continue; // the header line
        };
        match devs.iter().position(|d| d == f[0]) {
            Some(out) => {
                let mask = u32::from_be_bytes(mask);
                routes.push(Route {
                    dst: u32::from_be_bytes(dst) & mask,
                    mask,
                    gw,
                    out,
                });
            }
            None => unknown.push(format!("LinuxIPLookup: no output for dev {}", f[0])),
        }
    }
    (routes, unknown)
}

/// Click's `IPTable` lookup: the most specific matching route, the later
/// one of equally specific routes.
fn lookup(routes: &[Route], dst: [u8; 4]) -> Option<&Route> {
    let a = u32::from_be_bytes(dst);
    let mut best: Option<&Route> = None;
    for r in routes {
        if a & r.mask == r.dst && best.is_none_or(|b| r.mask & b.mask == b.mask) {
            best = Some(r);
        }
    }
    best
}

/// Routes by the host's routing table.
pub struct LinuxIPLookup {
    routes: Vec<Route>,
    nout: usize,
    noutputs: usize,
    drops: u64,
}

impl LinuxIPLookup {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("LinuxIPLookup")
        .ports("1/1-")
        .processing("h/h")
        .profile(ActionProfile::reads(FIELD_DST_IP).dropping())
        .doc(
            "LinuxIPLookup(IF0, IF1, ..., IFN)\n\n\
             Routes each packet by its destination address annotation through\n\
             the host's IPv4 routing table, read once, at configuration, from\n\
             /proc/net/route (the routes of the network namespace pronto runs\n\
             in). The most specific matching route wins (the later one of equal\n\
             ones). A route through interface IFi sends the packet to output i,\n\
             its gateway (if nonzero) replacing the annotation. Routes through\n\
             interfaces not named are left out (each reported on standard error\n\
             at configuration); a packet no route matches goes to output N+1,\n\
             or is dropped and counted in `drops' if there is none.\n\n\
             Differences from Click: no line is printed per routed packet; the\n\
             ports are push (Click's are agnostic but route only pushed packets);\n\
             `drops' is pronto's. `pronto check' does not read the table.\n\n\
             Ports: 1 push input; N or N+1 push outputs.\n\
             Arguments:\n  \
             IF0 ... IFN  interface names, one per output\n\
             Handlers:\n  \
             routes (read: the routes kept, one per line: DST/MASK GW OUTPUT)\n  \
             drops (read)",
        );

    /// Configures a `LinuxIPLookup`: reads the routing table.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let devs: Vec<String> = ctx
            .args()
            .rest()
            .into_iter()
            .map(|d| pronto_lang::args::unquote(&d).to_string())
            .collect();
        let nout = devs.len();
        if ctx.noutputs < nout || ctx.noutputs > nout + 1 {
            return Err(cfg_err(format!(
                "need {nout} or {} output ports (one per interface argument, and one \
                 for unrouted packets)",
                nout + 1
            )));
        }
        let routes = if crate::world::check_only() {
            Vec::new()
        } else {
            let text = std::fs::read_to_string(ROUTE_FILE)
                .map_err(|e| cfg_err(format!("cannot open {ROUTE_FILE}: {e}")))?;
            let (routes, unknown) = parse_routes(&text, &devs);
            for u in unknown {
                eprintln!("{u}");
            }
            routes
        };
        Ok(Box::new(Self::with_routes(routes, nout, ctx.noutputs)))
    }

    fn with_routes(routes: Vec<Route>, nout: usize, noutputs: usize) -> LinuxIPLookup {
        LinuxIPLookup {
            routes,
            nout,
            noutputs,
            drops: 0,
        }
    }

    fn route(&mut self, p: &mut Packet) -> Option<usize> {
        match lookup(&self.routes, p.dst_ip_anno()) {
            Some(r) => {
                if r.gw != [0; 4] {
                    p.set_dst_ip_anno(r.gw);
                }
                Some(r.out)
            }
            None if self.noutputs > self.nout => Some(self.nout),
            None => {
                self.drops += 1;
                None
            }
        }
    }
}

impl Element for LinuxIPLookup {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.route(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_route", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("routes"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "routes" => Ok(self
                .routes
                .iter()
                .map(|r| {
                    format!(
                        "{}/{} {} {}\n",
                        Ip4(r.dst.to_be_bytes()),
                        Ip4(r.mask.to_be_bytes()),
                        Ip4(r.gw),
                        r.out
                    )
                })
                .collect()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure, push};

    /// A routing table as the kernel writes it (little-endian host):
    /// default via 192.0.2.1 on eth0, 192.0.2.0/24 on eth0, 10.1.0.0/16
    /// via 192.0.2.254 on eth0, 10.1.2.0/24 on eth1, 172.16.0.0/12 on
    /// docker0.
    const TABLE: &str = "\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
eth0\t0000010A\tFE0200C0\t0003\t0\t0\t0\t0000FFFF\t0\t0\t0
eth1\t0002010A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
docker0\t000010AC\t00000000\t0001\t0\t0\t0\t0000F0FF\t0\t0\t0
";

    #[test]
    fn parses_the_table_and_routes_most_specific_first() {
        if cfg!(target_endian = "big") {
            return; // TABLE is written as a little-endian kernel writes it
        }
        let devs = vec!["eth0".to_string(), "eth1".to_string()];
        let (routes, unknown) = parse_routes(TABLE, &devs);
        assert_eq!(unknown, ["LinuxIPLookup: no output for dev docker0"]);
        let mut e = LinuxIPLookup::with_routes(routes, 2, 3);
        assert_eq!(
            e.read_handler("routes").expect("routes"),
            "0.0.0.0/0.0.0.0 192.0.2.1 0\n\
             192.0.2.0/255.255.255.0 0.0.0.0 0\n\
             10.1.0.0/255.255.0.0 192.0.2.254 0\n\
             10.1.2.0/255.255.255.0 0.0.0.0 1\n"
        );
        let pool = pronto_packet::Pool::new(16).expect("pool");
        let cases: [([u8; 4], usize, [u8; 4]); 5] = [
            ([10, 1, 2, 3], 1, [10, 1, 2, 3]),     // on eth1's /24
            ([10, 1, 9, 9], 0, [192, 0, 2, 254]),  // via the /16's gateway
            ([192, 0, 2, 77], 0, [192, 0, 2, 77]), // on eth0's /24
            ([8, 8, 8, 8], 0, [192, 0, 2, 1]),     // default route
            ([172, 16, 0, 1], 0, [192, 0, 2, 1]),  // docker0 left out
        ];
        for (dst, port, anno) in cases {
            let mut b = Batch::new();
            let mut p = pool.alloc_from(&[0u8; 20]).expect("pkt");
            p.set_dst_ip_anno(dst);
            b.push(p).expect("room");
            let outs = crate::app::testing::push_batch(&mut e, &pool, &mut b, 3, 0);
            assert_eq!(outs[port].len(), 1, "{dst:?}");
            assert_eq!(outs[port][0].dst_ip_anno(), anno, "{dst:?}");
        }
        // Without a default route: unrouted packets to output N, or
        // dropped and counted when there is no such output.
        let (mut routes, _) = parse_routes(TABLE, &devs);
        routes.remove(0);
        let mut e = LinuxIPLookup::with_routes(routes.clone(), 2, 3);
        let mut b = Batch::new();
        b.push(pool.alloc_from(&[0u8; 20]).expect("pkt"))
            .expect("room");
        let outs = crate::app::testing::push_batch(&mut e, &pool, &mut b, 3, 0);
        assert_eq!(outs[2].len(), 1);
        let mut e = LinuxIPLookup::with_routes(routes, 2, 2);
        let outs = push(&mut e, &pool, &[&[0u8; 20]], 2, 0);
        assert!(outs.iter().all(Vec::is_empty));
        assert_eq!(e.read_handler("drops").expect("drops"), "1");
    }

    #[test]
    fn equally_specific_routes_the_later_wins() {
        let r = |gw: u8, out| Route {
            dst: 0x0a00_0000,
            mask: 0xff00_0000,
            gw: [1, 1, 1, gw],
            out,
        };
        let routes = [r(1, 0), r(2, 1)];
        assert_eq!(lookup(&routes, [10, 0, 0, 1]), Some(&routes[1]));
        assert_eq!(lookup(&routes, [11, 0, 0, 1]), None);
    }

    #[test]
    fn output_count_and_the_real_table() {
        let conf = |c: &str, nout: usize| {
            configure(
                LinuxIPLookup::SPEC.keywords,
                LinuxIPLookup::configure,
                c,
                &[true],
                &vec![true; nout],
                std::path::Path::new("."),
            )
        };
        assert_eq!(
            config_err(conf("eth0, eth1", 1)),
            "need 2 or 3 output ports (one per interface argument, and one for unrouted packets)"
        );
        assert_eq!(
            config_err(conf("eth0", 3)),
            "need 1 or 2 output ports (one per interface argument, and one for unrouted packets)"
        );
        // This host's own table: every route kept is one of its lines.
        let Ok(text) = std::fs::read_to_string(ROUTE_FILE) else {
            eprintln!("SKIPPED: no {ROUTE_FILE} here");
            return;
        };
        let devs: Vec<String> = text
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect();
        let e = conf(&devs.join(", "), devs.len() + 1).expect("configures");
        let kept = e.read_handler("routes").expect("routes");
        assert_eq!(kept.lines().count(), text.lines().skip(1).count());
    }
}
