//! A running instance made a chain NF (`pronto chain apply` with an
//! `instance("NAME")` NF): its own configuration, with every element kept,
//! gets the chain's elements spliced in around its device. Frames from
//! `FromDevice(IFACE)` first lose the NFP tag (`NFPDecap`); frames into
//! `ToDevice(IFACE)` first get the tag back and the next hop's address.
//! Applied as a reconfiguration, the instance's elements keep their state
//! (the daemon's hot swap), so a stateful NF joins a chain without losing
//! its flows.

use pronto_lang::{FlatConfig, FlatConnection, FlatElement, Options, SourceMap};

/// An element to splice in: its class and configuration string.
pub type Splice = (&'static str, String);

/// The first positional argument of a device element's configuration
/// (`FromDevice(eth0, SNIFFER false)` -> `eth0`), or its `DEVNAME`.
fn device_of(config: &str) -> &str {
    for (i, arg) in config.split(',').map(str::trim).enumerate() {
        if let Some(rest) = arg.strip_prefix("DEVNAME") {
            if rest.starts_with(char::is_whitespace) {
                return rest.trim();
            }
        }
        if i == 0 && !arg.contains(char::is_whitespace) {
            return arg;
        }
    }
    ""
}

/// A name not yet used in `flat`, from `base`.
fn fresh(flat: &FlatConfig, base: &str) -> String {
    let used = |n: &str| flat.elements.iter().any(|e| e.name == n);
    if !used(base) {
        return base.to_string();
    }
    (1..)
        .map(|k| format!("{base}{k}"))
        .find(|n| !used(n))
        .expect("some name is free")
}

/// Adds the chain `splice` to `flat`, returning the first and last new
/// elements' indices (`None` for an empty splice).
fn add(flat: &mut FlatConfig, at: &FlatElement, splice: &[Splice]) -> Option<(usize, usize)> {
    let mut first = None;
    let mut prev: Option<usize> = None;
    for (class, config) in splice {
        let lower = class.to_ascii_lowercase();
        let name = fresh(
            flat,
            &format!("nfp_{}", lower.strip_prefix("nfp").unwrap_or(&lower)),
        );
        flat.elements.push(FlatElement {
            name,
            class: class.to_string(),
            config: config.clone(),
            ..at.clone()
        });
        let i = flat.elements.len() - 1;
        if let Some(p) = prev {
            flat.connections.push(FlatConnection {
                from: p,
                from_port: 0,
                to: i,
                to_port: 0,
                span: at.span,
            });
        }
        first.get_or_insert(i);
        prev = Some(i);
    }
    first.zip(prev)
}

/// `config` (the configuration of instance `name`) with `ingress` after
/// every `FromDevice(iface)` and `egress` before every `ToDevice(iface)`,
/// written back in the configuration language.
pub fn rewire(
    name: &str,
    config: &str,
    iface: &str,
    ingress: &[Splice],
    egress: &[Splice],
) -> Result<String, String> {
    let mut sm = SourceMap::new();
    let file = sm.add(name, config);
    let opts = Options {
        defines: &[],
        is_primitive: &crate::click::is_known_class,
    };
    let (mut flat, _) = pronto_lang::parse_flat(&sm, file, &opts).map_err(|d| {
        d.iter()
            .map(|d| d.render(&sm))
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    if let Some(e) = flat.elements.iter().find(|e| e.class.starts_with("NFP")) {
        return Err(format!(
            "instance {name} is already part of a chain (its configuration has {} `{}`); \
             give it its own configuration first (`pronto config {name} FILE`)",
            e.class, e.name
        ));
    }
    let on = |e: &FlatElement, class: &str| e.class == class && device_of(&e.config) == iface;
    let sources: Vec<usize> = (0..flat.elements.len())
        .filter(|&i| on(&flat.elements[i], "FromDevice"))
        .collect();
    let sinks: Vec<usize> = (0..flat.elements.len())
        .filter(|&i| on(&flat.elements[i], "ToDevice"))
        .collect();
    if sources.is_empty() || sinks.is_empty() {
        return Err(format!(
            "instance {name}: a chain NF receives with FromDevice({iface}) and sends with \
             ToDevice({iface}); its configuration has {} FromDevice({iface}) and {} \
             ToDevice({iface})",
            sources.len(),
            sinks.len()
        ));
    }
    for s in sources {
        let at = flat.elements[s].clone();
        let before = flat.connections.len();
        if let Some((first, last)) = add(&mut flat, &at, ingress) {
            for c in &mut flat.connections[..before] {
                if c.from == s {
                    c.from = last;
                }
            }
            flat.connections.push(FlatConnection {
                from: s,
                from_port: 0,
                to: first,
                to_port: 0,
                span: at.span,
            });
        }
    }
    for t in sinks {
        let at = flat.elements[t].clone();
        let before = flat.connections.len();
        if let Some((first, last)) = add(&mut flat, &at, egress) {
            for c in &mut flat.connections[..before] {
                if c.to == t {
                    c.to = first;
                    c.to_port = 0;
                }
            }
            flat.connections.push(FlatConnection {
                from: last,
                from_port: 0,
                to: t,
                to_port: 0,
                span: at.span,
            });
        }
    }
    Ok(flat.to_click())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_elements_go_around_the_device() {
        let cfg = "// a firewall\n\
                   FromDevice(eth0) -> c :: Counter -> f :: IPFilter(allow udp, deny all);\n\
                   f -> q :: Queue -> ToDevice(eth0);\n";
        let out = rewire(
            "fw1",
            cfg,
            "eth0",
            &[("NFPDecap", String::new())],
            &[
                ("NFPEncap", "BRANCH 1".into()),
                (
                    "EtherRewrite",
                    "SRC 02:00:00:00:00:01, DST 02:00:00:00:00:02".into(),
                ),
            ],
        )
        .expect("rewires");
        // The result parses, and frames go FromDevice -> NFPDecap -> c,
        // q -> NFPEncap -> EtherRewrite -> ToDevice.
        let mut sm = SourceMap::new();
        let file = sm.add("out", &out);
        let opts = Options {
            defines: &[],
            is_primitive: &crate::click::is_known_class,
        };
        let (flat, _) = pronto_lang::parse_flat(&sm, file, &opts).expect("parses back");
        let idx = |class: &str| {
            flat.elements
                .iter()
                .position(|e| e.class == class)
                .unwrap_or_else(|| panic!("{class} in\n{out}"))
        };
        let next = |i: usize| -> Vec<&str> {
            flat.connections
                .iter()
                .filter(|c| c.from == i)
                .map(|c| flat.elements[c.to].class.as_str())
                .collect()
        };
        assert_eq!(next(idx("FromDevice")), ["NFPDecap"], "{out}");
        assert_eq!(next(idx("NFPDecap")), ["Counter"], "{out}");
        assert_eq!(next(idx("Queue")), ["NFPEncap"], "{out}");
        assert_eq!(next(idx("NFPEncap")), ["EtherRewrite"], "{out}");
        assert_eq!(next(idx("EtherRewrite")), ["ToDevice"], "{out}");
        assert_eq!(flat.elements[idx("NFPEncap")].config, "BRANCH 1");
        // Element names stay, so a hot swap keeps their state.
        assert!(flat.elements.iter().any(|e| e.name == "c"), "{out}");
        assert!(flat.elements.iter().any(|e| e.name == "q"), "{out}");
    }

    #[test]
    fn an_instance_without_the_device_is_refused() {
        let e = rewire(
            "x",
            "FromDevice(eth1) -> Discard;",
            "eth0",
            &[("NFPDecap", String::new())],
            &[],
        )
        .expect_err("refused");
        assert_eq!(
            e,
            "instance x: a chain NF receives with FromDevice(eth0) and sends with ToDevice(eth0); \
             its configuration has 0 FromDevice(eth0) and 0 ToDevice(eth0)"
        );
        // Rewiring what is already rewired would stack a second tag.
        let once = rewire(
            "y",
            "FromDevice(eth0) -> Queue -> ToDevice(eth0);",
            "eth0",
            &[("NFPDecap", String::new())],
            &[],
        )
        .expect("rewires");
        let e =
            rewire("y", &once, "eth0", &[("NFPDecap", String::new())], &[]).expect_err("refused");
        assert_eq!(
            e,
            "instance y is already part of a chain (its configuration has NFPDecap `nfp_decap`); \
             give it its own configuration first (`pronto config y FILE`)"
        );
        assert_eq!(device_of("eth0, SNIFFER false"), "eth0");
        assert_eq!(device_of("DEVNAME eth2, BURST 8"), "eth2");
    }
}
