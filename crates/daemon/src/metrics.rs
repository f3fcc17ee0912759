//! The Prometheus exposition (text format 0.0.4) of `GET /metrics`.

use std::fmt::Write as _;

use crate::manager::{Manager, State};

/// Escapes a label value (backslash, double quote, newline).
fn esc(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Renders every metric of the daemon.
pub fn render(m: &Manager) -> String {
    let mut out = String::new();
    let list = m.list(None);
    head(
        &mut out,
        "pronto_instances",
        "gauge",
        "Instances by lifecycle state.",
    );
    for (state, label) in [
        (State::Starting, "starting"),
        (State::Running, "running"),
        (State::Crashed, "crashed"),
        (State::Stopped, "stopped"),
        (State::Failed, "failed"),
    ] {
        let n = list.iter().filter(|i| i.state == state).count();
        let _ = writeln!(out, "pronto_instances{{state=\"{label}\"}} {n}");
    }
    head(
        &mut out,
        "pronto_instance_up",
        "gauge",
        "1 if the instance is running its configuration, else 0.",
    );
    for i in &list {
        let _ = writeln!(
            out,
            "pronto_instance_up{{tenant=\"{}\",instance=\"{}\"}} {}",
            esc(&i.tenant),
            esc(&i.name),
            u8::from(i.state == State::Running)
        );
    }
    head(
        &mut out,
        "pronto_instance_restarts_total",
        "counter",
        "Restarts of the instance after its process ended unexpectedly.",
    );
    for i in &list {
        let _ = writeln!(
            out,
            "pronto_instance_restarts_total{{tenant=\"{}\",instance=\"{}\"}} {}",
            esc(&i.tenant),
            esc(&i.name),
            i.restarts
        );
    }
    head(
        &mut out,
        "pronto_instance_boot_seconds",
        "gauge",
        "Time from starting the sandbox to the configuration running, last start.",
    );
    for i in &list {
        if let Some(b) = i.boot_ms {
            let _ = writeln!(
                out,
                "pronto_instance_boot_seconds{{tenant=\"{}\",instance=\"{}\"}} {:.6}",
                esc(&i.tenant),
                esc(&i.name),
                b / 1e3
            );
        }
    }
    head(
        &mut out,
        "pronto_instance_weight",
        "gauge",
        "The instance's share under overload: its CPU weight and its ports' weight on the \
         switch (100 unless set).",
    );
    for i in &list {
        let _ = writeln!(
            out,
            "pronto_instance_weight{{tenant=\"{}\",instance=\"{}\"}} {}",
            esc(&i.tenant),
            esc(&i.name),
            i.weight
        );
    }
    head(
        &mut out,
        "pronto_instance_rate_limit",
        "gauge",
        "The instance's rate limit on each of its interfaces, each way, by unit (frames or \
         bits per second); absent when it has none.",
    );
    for i in &list {
        let Some(r) = &i.rate_limit else { continue };
        for (unit, v) in [("pps", r.pps), ("bps", r.bps)] {
            if let Some(v) = v {
                let _ = writeln!(
                    out,
                    "pronto_instance_rate_limit{{tenant=\"{}\",instance=\"{}\",unit=\"{unit}\"}} {v}",
                    esc(&i.tenant),
                    esc(&i.name),
                );
            }
        }
    }
    elements(&mut out, m, &list);
    let ports = m.ports(None);
    type Get = fn(&pronto_switch::PortCounters) -> u64;
    let series: [(&str, &str, Get); 5] = [
        (
            "pronto_switch_port_rx_packets_total",
            "Frames the switch took from the port.",
            |c| c.rx_packets,
        ),
        (
            "pronto_switch_port_rx_bytes_total",
            "Bytes of those frames.",
            |c| c.rx_bytes,
        ),
        (
            "pronto_switch_port_tx_packets_total",
            "Frames the switch delivered to the port.",
            |c| c.tx_packets,
        ),
        (
            "pronto_switch_port_tx_bytes_total",
            "Bytes of those frames.",
            |c| c.tx_bytes,
        ),
        (
            "pronto_switch_port_drops_total",
            "Frames from or to the port dropped, for any reason.",
            |c| c.drops(),
        ),
    ];
    for (name, help, get) in series {
        head(&mut out, name, "counter", help);
        for (id, pname, c) in &ports {
            let _ = writeln!(
                out,
                "{name}{{port=\"{id}\",name=\"{}\"}} {}",
                esc(pname),
                get(c)
            );
        }
    }
    head(
        &mut out,
        "pronto_switch_port_rate_limited_total",
        "counter",
        "Frames over the port's rate limit, dropped at the switch, by direction (from the \
         port into the switch, or to the port).",
    );
    for (id, pname, c) in &ports {
        for (dir, n) in [
            ("from_port", c.drop_rate_limit_rx),
            ("to_port", c.drop_rate_limit_tx),
        ] {
            let _ = writeln!(
                out,
                "pronto_switch_port_rate_limited_total{{port=\"{id}\",name=\"{}\",direction=\"{dir}\"}} {n}",
                esc(pname),
            );
        }
    }
    head(
        &mut out,
        "pronto_switch_ports",
        "gauge",
        "Ports attached to the switch.",
    );
    let _ = writeln!(out, "pronto_switch_ports {}", ports.len());
    let uplinks = m.uplinks();
    if !uplinks.is_empty() {
        head(
            &mut out,
            "pronto_uplink_frames_total",
            "counter",
            "Frames an uplink moved, by direction (to_switch: from its interface).",
        );
        for u in &uplinks {
            for (dir, n) in [("to_switch", u.to_switch), ("to_iface", u.to_iface)] {
                let _ = writeln!(
                    out,
                    "pronto_uplink_frames_total{{uplink=\"{}\",direction=\"{dir}\"}} {n}",
                    esc(&u.iface)
                );
            }
        }
        head(
            &mut out,
            "pronto_uplink_dropped_total",
            "counter",
            "Frames an uplink dropped, by reason.",
        );
        for u in &uplinks {
            for (why, n) in [
                ("switch_port_full", u.to_switch_dropped),
                ("iface_refused", u.to_iface_dropped),
                ("receive", u.rx_dropped),
            ] {
                let _ = writeln!(
                    out,
                    "pronto_uplink_dropped_total{{uplink=\"{}\",reason=\"{why}\"}} {n}",
                    esc(&u.iface)
                );
            }
        }
    }
    if let Some(v) = m.vxlan() {
        head(
            &mut out,
            "pronto_vxlan_frames_total",
            "counter",
            "Frames the VXLAN uplink moved, by direction (to_switch: from VTEPs; to_vteps: datagrams sent, flooded copies included).",
        );
        for (dir, n) in [("to_switch", v.to_switch), ("to_vteps", v.to_vteps)] {
            let _ = writeln!(
                out,
                "pronto_vxlan_frames_total{{vxlan=\"{}\",direction=\"{dir}\"}} {n}",
                v.vni
            );
        }
        head(
            &mut out,
            "pronto_vxlan_flooded_total",
            "counter",
            "Datagrams the VXLAN uplink sent to the flood list (head-end replication).",
        );
        let _ = writeln!(
            out,
            "pronto_vxlan_flooded_total{{vxlan=\"{}\"}} {}",
            v.vni, v.flooded
        );
        head(
            &mut out,
            "pronto_vxlan_dropped_total",
            "counter",
            "Frames the VXLAN uplink dropped, by reason.",
        );
        for (why, n) in &v.dropped {
            let _ = writeln!(
                out,
                "pronto_vxlan_dropped_total{{vxlan=\"{}\",reason=\"{why}\"}} {n}",
                v.vni
            );
        }
    }
    crate::audit::metrics(&mut out, m.store());
    out
}

/// The most elements of one instance exported: a bound on the series an
/// instance adds (documented in docs/operations.md), whatever its tenant
/// configures. The rest are counted in `pronto_element_series_omitted`.
pub const MAX_ELEMENTS_PER_INSTANCE: usize = 256;

/// Per-element series of every running instance: packets in and out,
/// packets held, drops by reason, and the elements' own counters; one
/// round trip to each instance.
fn elements(out: &mut String, m: &Manager, list: &[crate::manager::InstanceView]) {
    let mut all = Vec::new();
    let mut omitted = 0usize;
    for i in list.iter().filter(|i| i.state == State::Running) {
        // An instance that stops between the list and the read has no
        // counters this time.
        if let Ok(mut els) = m.element_stats(&i.tenant, &i.name) {
            if els.len() > MAX_ELEMENTS_PER_INSTANCE {
                omitted += els.len() - MAX_ELEMENTS_PER_INSTANCE;
                els.truncate(MAX_ELEMENTS_PER_INSTANCE);
            }
            all.push((i, els));
        }
    }
    let labels = |i: &crate::manager::InstanceView, e: &crate::manager::ElementStats| {
        format!(
            "tenant=\"{}\",instance=\"{}\",element=\"{}\",class=\"{}\"",
            esc(&i.tenant),
            esc(&i.name),
            esc(&e.name),
            esc(&e.class)
        )
    };
    head(
        out,
        "pronto_element_packets_total",
        "counter",
        "Packets into (direction=\"in\") and out of each element of a running instance.",
    );
    for (i, els) in &all {
        for e in els {
            let l = labels(i, e);
            let _ = writeln!(
                out,
                "pronto_element_packets_total{{{l},direction=\"in\"}} {}",
                e.packets_in
            );
            let _ = writeln!(
                out,
                "pronto_element_packets_total{{{l},direction=\"out\"}} {}",
                e.packets_out
            );
        }
    }
    head(
        out,
        "pronto_element_drops_total",
        "counter",
        "Packets an element dropped, by reason (the reasons are fixed by its class).",
    );
    for (i, els) in &all {
        for e in els {
            let l = labels(i, e);
            for (reason, n) in &e.drops {
                let _ = writeln!(
                    out,
                    "pronto_element_drops_total{{{l},reason=\"{}\"}} {n}",
                    esc(reason)
                );
            }
        }
    }
    head(
        out,
        "pronto_element_held",
        "gauge",
        "Packets an element holds now (queues, reassembly, ARP, merges).",
    );
    for (i, els) in &all {
        for e in els {
            let _ = writeln!(out, "pronto_element_held{{{}}} {}", labels(i, e), e.held);
        }
    }
    head(
        out,
        "pronto_element_stat",
        "gauge",
        "An element's own counters (Counter's count and byte_count, a queue's \
         highwater_length, a NAT's mappings), by name.",
    );
    for (i, els) in &all {
        for e in els {
            let l = labels(i, e);
            for (stat, n) in &e.counters {
                let _ = writeln!(out, "pronto_element_stat{{{l},stat=\"{}\"}} {n}", esc(stat));
            }
        }
    }
    head(
        out,
        "pronto_element_series_omitted",
        "gauge",
        "Elements left out of the per-element series: beyond the first 256 of an instance.",
    );
    let _ = writeln!(out, "pronto_element_series_omitted {omitted}");
}

#[cfg(test)]
mod tests {
    #[test]
    fn label_values_are_escaped() {
        assert_eq!(super::esc("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
