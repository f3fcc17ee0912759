//! `LookupIP6Route`: IPv6 routing lookup by longest-prefix match in a
//! Poptrie (`route6_table`).

use std::collections::BTreeSet;

use pronto_lang::args::{format_ip6, mask6_len, parse_i64, parse_ip6, parse_ip6_prefix};
use pronto_packet::{Batch, Packet, BATCH_MAX};

use crate::ip6::route6_table::{mask128, Lpm6, MAX_VALUE};
use crate::util::cfg_err;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_DST_IP,
};

/// One route: destination prefix, gateway (zero: none), output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Route6 {
    addr: [u8; 16],
    len: u8,
    gw: [u8; 16],
    port: u32,
}

/// IPv6 routing lookup.
pub struct LookupIP6Route {
    table: Lpm6,
    /// Click's route list: slots in `table` order, a removed route's slot
    /// reused by the next route added. A route's table value is its slot
    /// plus one.
    routes: Vec<Option<Route6>>,
    free: BTreeSet<u32>,
    noutputs: usize,
    drops: u64,
}

/// Why a route text did not parse.
enum RouteErr {
    Syntax,
    Mask,
}

/// Parses `PREFIX [GW] OUT` (Click's two or three words); a bare address
/// is a /128.
fn parse_route(words: &[&str]) -> Result<Route6, RouteErr> {
    let (prefix, gw, port) = match *words {
        [p, o] => (p, None, o),
        [p, g, o] => (p, Some(g), o),
        _ => return Err(RouteErr::Syntax),
    };
    let (addr, mask) = parse_ip6_prefix(prefix).map_err(|_| RouteErr::Syntax)?;
    let len = mask6_len(&mask).ok_or(RouteErr::Mask)?;
    let gw = match gw {
        Some(g) => parse_ip6(g).map_err(|_| RouteErr::Syntax)?,
        None => [0; 16],
    };
    let port = parse_i64(port)
        .ok()
        .and_then(|p| u32::try_from(p).ok())
        .ok_or(RouteErr::Syntax)?;
    let masked = u128::from_be_bytes(addr) & mask128(len);
    Ok(Route6 {
        addr: masked.to_be_bytes(),
        len: len as u8,
        gw,
        port,
    })
}

/// The usage text of a route argument.
const SYNTAX: &str = "should be DADDR/MASK [GW] OUTPUT";

impl LookupIP6Route {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("LookupIP6Route")
        .ports("1/-")
        .processing("h/h")
        .keywords(&["ROUTES"])
        .profile(ActionProfile::reads(FIELD_DST_IP).dropping())
        .doc(
            "LookupIP6Route(DST1/MASK1 [GW1] OUT1, DST2/MASK2 [GW2] OUT2, ...)\n\n\
             Looks up each packet's destination IPv6 annotation (DST_IP6_ANNO, as set\n\
             by GetIP6Address; an unset annotation is ::) by longest-prefix match,\n\
             sets the annotation to the route's gateway if it is not ::, and emits the\n\
             packet on the route's output. Packets with no route are dropped and\n\
             counted (`drops'). Each argument is a route: a prefix (ADDR/LEN,\n\
             ADDR/MASK with a contiguous mask, or a bare address for a /128), an\n\
             optional gateway address (:: for none) and an output port. A later\n\
             route for the same prefix replaces an earlier one.\n\n\
             The table is a Poptrie: an 18-bit direct level, then nodes of 6 bits\n\
             compressed with bitmaps, and a sparse subtree (at most two prefixes,\n\
             none past /64) kept whole in one node; a lookup reads three to four\n\
             small nodes, and the 200,000-prefix table of bench/route6_table.py\n\
             takes 7.1 MB.\n\
             Adding or removing a prefix longer than /18 rebuilds one\n\
             subtree (fast); a shorter prefix rebuilds every subtree under it.\n\n\
             Keyword ROUTES FILE (pronto extension): also reads routes from FILE, one\n\
             per line in the same syntax (`#' starts a comment); errors name\n\
             FILE:LINE.\n\n\
             Ports: 1 push input; any number of push outputs.\n\
             Handlers:\n  \
             table (read)          `# Active routes' then one `PREFIX/LEN\\tGW\\tOUT'\n                        \
             line per route, in Click's list order (freed slots reused)\n  \
             add ROUTE (write)     adds a route, replacing one for the same prefix\n  \
             remove PREFIX (write) removes the prefix's route (none: no error, as\n                        \
             in Click)\n  \
             ctrl (write)          `add ROUTE' or `remove PREFIX'\n  \
             lookup ADDR (read)    `OUT GW' (or `OUT' with no gateway, -1 with no\n                        \
             route) (pronto extension)\n  \
             drops (read)          packets dropped for want of a route (pronto)\n  \
             flush (write)         removes every route (pronto extension)\n\n\
             Differences from Click: non-contiguous masks are refused; Click's\n\
             one-entry cache of the last destination, which a route change does not\n\
             invalidate, is not reproduced (every packet is looked up in the current\n\
             table).",
        );

    /// Configures a `LookupIP6Route`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut e = LookupIP6Route {
            table: Lpm6::new(),
            routes: Vec::new(),
            free: BTreeSet::new(),
            noutputs: ctx.noutputs,
            drops: 0,
        };
        let mut parsed: Vec<Route6> = Vec::new();
        let args = pronto_lang::args::split_args(ctx.config);
        for (i, arg) in args.iter().enumerate() {
            if let Some(file) = routes_file_arg(arg) {
                let file = pronto_lang::args::unquote(file);
                let path = ctx.path(&file);
                let text = crate::files::read_to_string(&path)
                    .map_err(|e| cfg_err(format!("ROUTES: {}: {e}", path.display())))?;
                for (n, line) in text.lines().enumerate() {
                    let line = line.split_once('#').map_or(line, |(a, _)| a).trim();
                    let line = line.strip_suffix(',').unwrap_or(line).trim_end();
                    if line.is_empty() {
                        continue;
                    }
                    let words: Vec<&str> = line.split_whitespace().collect();
                    parsed.push(parse_route(&words).map_err(|err| {
                        cfg_err(format!(
                            "ROUTES {file}:{}: route {}",
                            n + 1,
                            route_err_text(err)
                        ))
                    })?);
                }
                continue;
            }
            let words = pronto_lang::args::split_words(arg);
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            parsed.push(
                parse_route(&words).map_err(|err| {
                    cfg_err(format!("argument {} {}", i + 1, route_err_text(err)))
                })?,
            );
        }
        let maxout = parsed.iter().map(|r| r.port).max();
        match maxout {
            None => eprintln!("{}: warning: no routes", ctx.name),
            Some(m) if m as usize >= ctx.noutputs => {
                return Err(cfg_err(format!("need {} or more output ports", m + 1)))
            }
            Some(_) => {}
        }
        if parsed.len() > MAX_VALUE as usize {
            return Err(cfg_err("too many routes"));
        }
        // Click's list: a later route for a prefix frees the earlier one's
        // slot and takes the first free slot.
        let mut slot_of: std::collections::BTreeMap<([u8; 16], u8), u32> =
            std::collections::BTreeMap::new();
        for r in parsed {
            if let Some(s) = slot_of.remove(&(r.addr, r.len)) {
                e.routes[s as usize] = None;
                e.free.insert(s);
            }
            let s = e.take_slot(r);
            slot_of.insert((r.addr, r.len), s);
        }
        e.table = Lpm6::build(
            slot_of
                .iter()
                .map(|(&(a, l), &s)| (u128::from_be_bytes(a), l, s + 1)),
        );
        Ok(Box::new(e))
    }

    /// Puts `r` in the first free slot of the list (or a new one).
    fn take_slot(&mut self, r: Route6) -> u32 {
        match self.free.pop_first() {
            Some(s) => {
                self.routes[s as usize] = Some(r);
                s
            }
            None => {
                self.routes.push(Some(r));
                (self.routes.len() - 1) as u32
            }
        }
    }

    /// Adds `r`, replacing the route for its prefix (Click's `del` then
    /// `add`).
    fn add_route(&mut self, r: Route6) -> Result<(), String> {
        self.remove_route(r.addr, r.len);
        if self.free.is_empty() && self.routes.len() >= MAX_VALUE as usize {
            return Err("too many routes".into());
        }
        let s = self.take_slot(r);
        self.table.insert(u128::from_be_bytes(r.addr), r.len, s + 1);
        Ok(())
    }

    /// Removes the route for `addr/len`, if any.
    fn remove_route(&mut self, addr: [u8; 16], len: u8) {
        if let Some(v) = self.table.remove(u128::from_be_bytes(addr), len) {
            let s = v - 1;
            self.routes[s as usize] = None;
            self.free.insert(s);
        }
    }

    fn add_handler(&mut self, value: &str) -> Result<(), String> {
        let words: Vec<&str> = value.split_whitespace().collect();
        let r = parse_route(&words).map_err(|e| match e {
            RouteErr::Syntax => "expected 'PREFIX [GATEWAY] PORT'".to_string(),
            RouteErr::Mask => "PREFIX: mask is not contiguous".to_string(),
        })?;
        if r.port as usize >= self.noutputs {
            return Err("output port out of range".into());
        }
        self.add_route(r)
    }

    fn remove_handler(&mut self, value: &str) -> Result<(), String> {
        let words: Vec<&str> = value.split_whitespace().collect();
        let [prefix] = words[..] else {
            return Err("expected 'PREFIX'".into());
        };
        let (addr, mask) =
            parse_ip6_prefix(prefix).map_err(|_| "PREFIX: expected IPv6 prefix".to_string())?;
        let len = mask6_len(&mask).ok_or_else(|| "PREFIX: mask is not contiguous".to_string())?;
        self.remove_route(addr, len as u8);
        Ok(())
    }

    fn table_text(&self) -> String {
        let mut s = String::new();
        if !self.routes.is_empty() {
            s.push_str("# Active routes\n");
        }
        for r in self.routes.iter().flatten() {
            s.push_str(&format!(
                "{}/{}\t{}\t{}\n",
                format_ip6(&r.addr),
                r.len,
                format_ip6(&r.gw),
                r.port
            ));
        }
        s
    }
}

/// The file named by a `ROUTES FILE` argument.
fn routes_file_arg(arg: &str) -> Option<&str> {
    let rest = arg.strip_prefix("ROUTES")?;
    rest.starts_with(char::is_whitespace)
        .then(|| rest.trim())
        .filter(|f| !f.is_empty())
}

fn route_err_text(e: RouteErr) -> &'static str {
    match e {
        RouteErr::Syntax => SYNTAX,
        RouteErr::Mask => "has a non-contiguous mask (only prefix lengths are supported)",
    }
}

/// The output for a packet whose lookup gave route key `k` (0: none): the
/// route's gateway, when it has one, set as the destination annotation; a
/// packet with no route is counted in `drops` and dropped.
#[inline(always)]
fn route_to(p: &mut Packet, k: u32, routes: &[Option<Route6>], drops: &mut u64) -> Option<usize> {
    match k.checked_sub(1).and_then(|s| routes.get(s as usize)) {
        Some(Some(r)) => {
            if r.gw != [0; 16] {
                p.set_dst_ip6_anno(r.gw);
            }
            Some(r.port as usize)
        }
        _ => {
            *drops += 1;
            None
        }
    }
}

impl Element for LookupIP6Route {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let routes = &self.routes;
        let drops = &mut self.drops;
        let n = batch.len().min(BATCH_MAX);
        // A few packets (one at a time where the runtime keeps Click's
        // order) are looked up one by one: the batch walk's lane arrays
        // cost more to set up than its overlapped reads save there.
        if n < crate::util::BATCH_WALK_MIN {
            let table = &self.table;
            push_each(batch, out, |p, _| {
                let k = table.lookup(u128::from_be_bytes(p.dst_ip6_anno()));
                route_to(p, k, routes, drops)
            });
            return;
        }
        let mut addrs = [0u128; BATCH_MAX];
        let mut keys = [0u32; BATCH_MAX];
        for (a, p) in addrs.iter_mut().zip(batch.iter()) {
            *a = u128::from_be_bytes(p.dst_ip6_anno());
        }
        self.table.lookup_many(&addrs[..n], &mut keys[..n]);
        let mut i = 0;
        push_each(batch, out, |p, _| {
            let k = keys[i];
            i += 1;
            route_to(p, k, routes, drops)
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_route", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("table"),
            HandlerInfo::read("lookup"),
            HandlerInfo::read("drops"),
            HandlerInfo::write("add"),
            HandlerInfo::write("remove"),
            HandlerInfo::write("ctrl"),
            HandlerInfo::write("flush"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "table" => return Ok(self.table_text()),
            "drops" => return Ok(self.drops.to_string()),
            _ => {}
        }
        if let Some(arg) = name.strip_prefix("lookup") {
            if arg.is_empty() || arg.starts_with(char::is_whitespace) {
                let a = parse_ip6(arg.trim())
                    .map_err(|_| HandlerError::BadValue("expected IPv6 address".into()))?;
                let k = self.table.lookup(u128::from_be_bytes(a));
                return Ok(
                    match k.checked_sub(1).and_then(|s| self.routes.get(s as usize)) {
                        Some(Some(r)) if r.gw != [0; 16] => {
                            format!("{} {}", r.port, format_ip6(&r.gw))
                        }
                        Some(Some(r)) => r.port.to_string(),
                        _ => "-1".into(),
                    },
                );
            }
        }
        Err(HandlerError::NoSuchHandler(name.into()))
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let r = match name {
            "add" => self.add_handler(value),
            "remove" => self.remove_handler(value),
            "ctrl" => {
                let v = value.trim_start();
                let (first, rest) = v.split_once(char::is_whitespace).unwrap_or((v, ""));
                match first {
                    "add" => self.add_handler(rest),
                    "remove" => self.remove_handler(rest),
                    _ => Err("bad command, should be `add' or `remove'".into()),
                }
            }
            "flush" => {
                self.table.clear();
                self.routes.clear();
                self.free.clear();
                Ok(())
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        };
        r.map_err(HandlerError::BadValue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push, push_one_by_one, read};
    use pronto_packet::Pool;

    fn a(s: &str) -> [u8; 16] {
        parse_ip6(s).expect("address")
    }

    const ROUTES: &str = "2001:db8::/32 0, 2001:db8:1::/48 fe80::1 1, 2001:db8:1:2::5 2, \
                          ::ffff:0:0/96 3, ::/0 fe80::99 1";

    fn lookup(config: &str, nout: usize) -> Box<dyn Element> {
        configure(
            LookupIP6Route::SPEC.keywords,
            LookupIP6Route::configure,
            config,
            1,
            nout,
        )
        .expect("configured")
    }

    /// Eight packets or more walk the table as a batch, fewer are looked
    /// up one at a time: both route alike (outputs, gateways, drops).
    #[test]
    fn batch_walk_and_one_at_a_time_route_alike() {
        let pool = Pool::new(256).expect("pool");
        let dsts: Vec<String> = (0..30u32)
            .map(|i| match i % 5 {
                0 => format!("2001:db8:{:x}::1", 5 + i),
                1 => format!("2001:db8:1::{:x}", i),
                2 => "2001:db8:1:2::5".to_string(),
                3 => format!("::ffff:10.0.0.{i}"),
                _ => format!("3000::{:x}", i), // no route once ::/0 is gone
            })
            .collect();
        let mk = |d: &str| {
            let mut p = pkt(&pool, &[0x60, 0, 0, 0]);
            p.set_dst_ip6_anno(a(d));
            p
        };
        let annos = |o: &[Vec<Packet>]| -> Vec<Vec<String>> {
            o.iter()
                .map(|v| v.iter().map(|p| format_ip6(&p.dst_ip6_anno())).collect())
                .collect()
        };
        let (mut whole, mut each) = (lookup(ROUTES, 4), lookup(ROUTES, 4));
        whole.write_handler("remove", "::/0").expect("removed");
        each.write_handler("remove", "::/0").expect("removed");
        let got = push(
            whole.as_mut(),
            &pool,
            dsts.iter().map(|d| mk(d)).collect(),
            4,
        );
        let one = push_one_by_one(
            each.as_mut(),
            &pool,
            dsts.iter().map(|d| mk(d)).collect(),
            4,
        );
        assert_eq!(annos(&got), annos(&one));
        assert_eq!(got.iter().map(Vec::len).collect::<Vec<_>>(), [6, 6, 6, 6]);
        assert_eq!(annos(&got)[1][0], "fe80::1");
        assert_eq!(read(whole.as_ref(), "drops"), "6");
        assert_eq!(read(each.as_ref(), "drops"), "6");
    }

    #[test]
    fn routes_by_annotation_and_sets_gateway() {
        let pool = Pool::new(64).expect("pool");
        let mut e = lookup(ROUTES, 4);
        let mk = |d: &str| {
            let mut p = pkt(&pool, &[0x60, 0, 0, 0]);
            p.set_dst_ip6_anno(a(d));
            p
        };
        let outs = push(
            e.as_mut(),
            &pool,
            vec![
                mk("2001:db8:5::1"),
                mk("2001:db8:1::7"),
                mk("2001:db8:1:2::5"),
                mk("::ffff:10.0.0.1"),
                mk("3000::1"),
                // An unset annotation is ::, which the default route covers.
                pkt(&pool, &[0x60]),
            ],
            4,
        );
        let annos: Vec<Vec<String>> = outs
            .iter()
            .map(|o| o.iter().map(|p| format_ip6(&p.dst_ip6_anno())).collect())
            .collect();
        assert_eq!(
            annos,
            vec![
                vec!["2001:db8:5::1"],
                vec!["fe80::1", "fe80::99", "fe80::99"],
                vec!["2001:db8:1:2::5"],
                vec!["::ffff:10.0.0.1"],
            ]
        );
        assert_eq!(read(e.as_ref(), "drops"), "0");
        // Without a default route, an unknown destination is dropped and
        // counted.
        e.write_handler("remove", "::/0").expect("removed");
        let outs = push(e.as_mut(), &pool, vec![mk("3000::1"), mk("2001:db8::1")], 4);
        assert_eq!(outs.iter().map(Vec::len).collect::<Vec<_>>(), [1, 0, 0, 0]);
        assert_eq!(read(e.as_ref(), "drops"), "1");
        assert_eq!(
            crate::standard::test_support::drop_counters(e.as_ref()),
            vec![("no_route", 1)]
        );
    }

    #[test]
    fn table_and_handlers_as_click() {
        let mut e = lookup(ROUTES, 4);
        assert_eq!(
            read(e.as_ref(), "table"),
            "# Active routes\n\
             2001:db8::/32\t::\t0\n\
             2001:db8:1::/48\tfe80::1\t1\n\
             2001:db8:1:2::5/128\t::\t2\n\
             ::ffff:0.0.0.0/96\t::\t3\n\
             ::/0\tfe80::99\t1\n"
        );
        assert_eq!(read(e.as_ref(), "lookup 2001:db8:1::9"), "1 fe80::1");
        assert_eq!(read(e.as_ref(), "lookup 2001:db8:9::9"), "0");
        // Removing frees a slot; the next route added takes it.
        e.write_handler("remove", "2001:db8:1::/48")
            .expect("removed");
        assert_eq!(read(e.as_ref(), "lookup 2001:db8:1::9"), "0");
        e.write_handler("add", "2001:db8:2::/48 fe80::2 3")
            .expect("added");
        // `add` replaces: the old slot is freed and the first free one
        // taken.
        e.write_handler("ctrl", "add 2001:db8::/32 2")
            .expect("ctrl add");
        assert_eq!(
            read(e.as_ref(), "table"),
            "# Active routes\n\
             2001:db8::/32\t::\t2\n\
             2001:db8:2::/48\tfe80::2\t3\n\
             2001:db8:1:2::5/128\t::\t2\n\
             ::ffff:0.0.0.0/96\t::\t3\n\
             ::/0\tfe80::99\t1\n"
        );
        assert_eq!(read(e.as_ref(), "lookup 2001:db8:2::1"), "3 fe80::2");
        // Removing a route that does not exist is not an error (Click).
        e.write_handler("remove", "2001:db8:77::/48")
            .expect("no-op");
        e.write_handler("ctrl", "remove 2001:db8:1:2::5")
            .expect("ctrl remove");
        assert_eq!(read(e.as_ref(), "lookup 2001:db8:1:2::5"), "2");
        // Errors change nothing.
        let bad = [
            ("add", "2001:db8:3::/48 4", "output port out of range"),
            ("add", "2001:db8:3::/48", "expected 'PREFIX [GATEWAY] PORT'"),
            (
                "add",
                "2001:db8:3::/48 fe80::1 1 1",
                "expected 'PREFIX [GATEWAY] PORT'",
            ),
            (
                "add",
                "2001:db8:3::/ffff:0:ffff:: 1",
                "PREFIX: mask is not contiguous",
            ),
            ("remove", "2001:db8:3::/48 1", "expected 'PREFIX'"),
            ("remove", "zz", "PREFIX: expected IPv6 prefix"),
            (
                "ctrl",
                "set ::/0 1",
                "bad command, should be `add' or `remove'",
            ),
        ];
        let before = read(e.as_ref(), "table");
        for (h, v, msg) in bad {
            assert_eq!(
                e.write_handler(h, v),
                Err(HandlerError::BadValue(msg.into())),
                "{h} {v}"
            );
        }
        assert_eq!(read(e.as_ref(), "table"), before);
        assert!(e.read_handler("lookup nope").is_err());
        e.write_handler("flush", "").expect("flush");
        assert_eq!(read(e.as_ref(), "table"), "");
        assert_eq!(read(e.as_ref(), "lookup 2001:db8::1"), "-1");
    }

    #[test]
    fn configuration_errors_and_duplicates() {
        let cfg = |c: &str, n| {
            config_err(configure(
                LookupIP6Route::SPEC.keywords,
                LookupIP6Route::configure,
                c,
                1,
                n,
            ))
        };
        assert_eq!(
            cfg("2001:db8::/32 0, 2001:db8::/48", 2),
            "argument 2 should be DADDR/MASK [GW] OUTPUT"
        );
        assert_eq!(
            cfg("2001:db8::/32 -1", 2),
            "argument 1 should be DADDR/MASK [GW] OUTPUT"
        );
        assert_eq!(
            cfg("2001:db8::/32 fe80::1 3", 2),
            "need 4 or more output ports"
        );
        assert_eq!(
            cfg("2001:db8::/ffff:0:ffff:: 0", 2),
            "argument 1 has a non-contiguous mask (only prefix lengths are supported)"
        );
        // A later route for a prefix replaces the earlier one.
        let e = lookup("2001:db8::/32 0, ::/0 1, 2001:db8::1/32 fe80::1 1", 2);
        assert_eq!(
            read(e.as_ref(), "table"),
            "# Active routes\n2001:db8::/32\tfe80::1\t1\n::/0\t::\t1\n"
        );
        assert_eq!(read(e.as_ref(), "lookup 2001:db8::9"), "1 fe80::1");
    }

    #[test]
    fn routes_file() {
        let dir = crate::app::testing::scratch("l6r");
        let f = dir.join("routes6.txt");
        std::fs::write(
            &f,
            "# comment\n2001:db8::/32 fe80::1 1,\n\n2001:db8:1::/48 0 # x\n",
        )
        .expect("write");
        let e = lookup(&format!("ROUTES {}, ::/0 0", f.display()), 2);
        assert_eq!(read(e.as_ref(), "lookup 2001:db8:1::1"), "0");
        assert_eq!(read(e.as_ref(), "lookup 2001:db8:2::1"), "1 fe80::1");
        assert_eq!(read(e.as_ref(), "lookup 2002::1"), "0");
        std::fs::write(&f, "2001:db8::/32 fe80::1\n").expect("write");
        let err = config_err(configure(
            LookupIP6Route::SPEC.keywords,
            LookupIP6Route::configure,
            &format!("ROUTES {}", f.display()),
            1,
            2,
        ));
        assert!(
            err.ends_with("routes6.txt:1: route should be DADDR/MASK [GW] OUTPUT"),
            "{err}"
        );
    }
}
