//! The element registry is complete and every class documents itself:
//! every element file's `Spec` is registered, the registry is sorted and
//! free of duplicates, each doc string opens with the usage line and
//! describes the ports (and the handlers, where the element can be
//! configured without arguments), and classes that plainly read packet
//! fields say so in their action profile.

use std::path::Path;

use pronto_elements::registry;
use pronto_elements::{ConfigCtx, Spec};

const FAMILIES: &[&str] = &[
    "standard",
    "simple",
    "threads",
    "test",
    "nfp",
    "ip",
    "ip6",
    "tcpudp",
    "ethernet",
    "app",
    "icmp",
    "aqm",
    "analysis",
    "ids",
    "stateful",
    "bras",
    "userlevel",
    "vpn",
];

/// Every `Spec::new("Name")` in the element files that declare a `SPEC`,
/// with the file it is in.
fn declared_classes() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for fam in FAMILIES {
        let dir = src.join(fam);
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("directory entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .collect();
        entries.sort();
        for path in entries {
            let text = std::fs::read_to_string(&path).expect("readable source");
            if !text.contains("pub const SPEC") {
                continue;
            }
            let file = format!(
                "{fam}/{}",
                path.file_name().expect("name").to_string_lossy()
            );
            let mut rest = text.as_str();
            while let Some(i) = rest.find("Spec::new(\"") {
                rest = &rest[i + "Spec::new(\"".len()..];
                let end = rest.find('"').expect("closing quote");
                found.push((rest[..end].to_string(), file.clone()));
                rest = &rest[end..];
            }
        }
    }
    found
}

#[test]
fn every_element_file_is_registered() {
    let declared = declared_classes();
    assert!(
        declared.len() >= registry::all().len(),
        "found only {} classes in the sources",
        declared.len()
    );
    let missing: Vec<String> = declared
        .iter()
        .filter(|(name, _)| registry::lookup(name).is_none())
        .map(|(name, file)| format!("{name} ({file})"))
        .collect();
    assert!(missing.is_empty(), "not registered: {missing:?}");
    // And nothing is registered that no file declares.
    for e in registry::all() {
        assert!(
            declared.iter().any(|(n, _)| n == e.spec.name),
            "{} is registered but no element file declares it",
            e.spec.name
        );
    }
}

#[test]
fn registry_is_sorted_without_duplicates() {
    let all = registry::all();
    assert!(!all.is_empty());
    for w in all.windows(2) {
        assert!(
            w[0].spec.name < w[1].spec.name,
            "registry out of order or duplicated: {} then {}",
            w[0].spec.name,
            w[1].spec.name
        );
    }
    for e in all {
        let found = registry::lookup(e.spec.name).expect("lookup finds every class");
        assert_eq!(found.spec.name, e.spec.name);
    }
    assert!(registry::lookup("NoSuchElement").is_none());
    // The classes pronto lacks are sorted, and lacking.
    for w in registry::NOT_IN_PRONTO.windows(2) {
        assert!(w[0].0 < w[1].0, "out of order: {} then {}", w[0].0, w[1].0);
    }
    for (name, _) in registry::NOT_IN_PRONTO {
        assert!(registry::lookup(name).is_none(), "{name} is registered");
    }
    // Click's aliases name registered classes, and are sorted.
    for w in registry::ALIASES.windows(2) {
        assert!(
            w[0].0 < w[1].0,
            "aliases out of order: {} then {}",
            w[0].0,
            w[1].0
        );
    }
    for (alias, class) in registry::ALIASES {
        assert!(registry::lookup(alias).is_some(), "{alias}");
        assert_eq!(
            registry::lookup(alias).map(|e| e.spec.name),
            Some(*class),
            "{alias}"
        );
    }
}

fn starts_with_usage(spec: &Spec) -> bool {
    let first = spec.doc.lines().next().unwrap_or("");
    first == spec.name || first.starts_with(&format!("{}(", spec.name))
}

#[test]
fn every_class_is_documented() {
    let mut problems = Vec::new();
    for e in registry::all() {
        let s = e.spec;
        if s.doc.trim().is_empty() {
            problems.push(format!("{}: no doc", s.name));
            continue;
        }
        if !starts_with_usage(s) {
            problems.push(format!(
                "{}: doc does not open with its usage line (`{}(...)` or `{}`): {:?}",
                s.name,
                s.name,
                s.name,
                s.doc.lines().next()
            ));
        }
        if !s.doc.contains("Ports:") {
            problems.push(format!("{}: doc does not describe its ports", s.name));
        }
        // Usage line, a blank line, a description.
        let body: Vec<&str> = s.doc.lines().skip(1).collect();
        if body.iter().filter(|l| !l.trim().is_empty()).count() < 2 {
            problems.push(format!("{}: doc has no description", s.name));
        }
        // Every keyword the class declares is explained.
        for kw in s.keywords {
            if !s.doc.contains(kw) {
                problems.push(format!("{}: keyword {kw} not in doc", s.name));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Configures `spec`'s class with no arguments and the fewest ports it
/// allows (at least one where it accepts one), if that works.
fn configure_plain(e: &pronto_elements::ClassEntry) -> Option<Box<dyn pronto_elements::Element>> {
    let (imin, imax) = e.spec.port_range(false);
    let (omin, omax) = e.spec.port_range(true);
    let nin = imin.max(1.min(imax));
    let nout = omin.max(1.min(omax));
    let input_push = vec![true; nin];
    let output_push: Vec<bool> = (0..nout)
        .map(|p| e.spec.port_processing(true, p) != pronto_elements::Processing::Pull)
        .collect();
    let dir = std::env::temp_dir();
    let ctx = ConfigCtx {
        name: "e",
        config: "",
        ninputs: nin,
        noutputs: nout,
        base_dir: &dir,
        keywords: e.spec.keywords,
        output_push: &output_push,
        input_push: &input_push,
        peers: &pronto_elements::NoPeers,
    };
    (e.factory)(&ctx).ok()
}

#[test]
fn handlers_are_documented() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for e in registry::all() {
        let Some(el) = configure_plain(e) else {
            continue;
        };
        checked += 1;
        for h in el.handlers() {
            if !e.spec.doc.contains(h.name) {
                problems.push(format!("{}: handler `{}` not in doc", e.spec.name, h.name));
            }
        }
    }
    assert!(
        checked > 10,
        "only {checked} classes configured without arguments"
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn field_readers_declare_their_reads() {
    // Classes that plainly look at packet header fields or contents.
    const READERS: &[&str] = &[
        "ARPPrint",
        "ARPResponder",
        "CheckICMPHeader",
        "CheckIPHeader",
        "CheckIPHeader2",
        "CheckTCPHeader",
        "CheckUDPHeader",
        "Classifier",
        "DecIPTTL",
        "DirectIPLookup",
        "EtherMirror",
        "GetIPAddress",
        "HashSwitch",
        "HostEtherFilter",
        "ICMPPingResponder",
        "IPClassifier",
        "IPFilter",
        "IPPrint",
        "IPRewriter",
        "LinearIPLookup",
        "Print",
        "RadixIPLookup",
        "SetIPChecksum",
        "SetTCPChecksum",
        "SetUDPChecksum",
        "StaticIPLookup",
        "TCPRewriter",
        "ToIPSummaryDump",
        "UDPRewriter",
    ];
    let mut problems = Vec::new();
    for name in READERS {
        match registry::lookup(name) {
            None => problems.push(format!("{name}: not registered")),
            Some(e) if e.spec.profile.reads == 0 => {
                problems.push(format!("{name}: action profile reads nothing"))
            }
            Some(_) => {}
        }
    }
    // Checksum setters and rewriters write what they read.
    for name in [
        "DecIPTTL",
        "SetIPChecksum",
        "SetTCPChecksum",
        "SetUDPChecksum",
        "IPRewriter",
        "TCPRewriter",
        "UDPRewriter",
        "EtherMirror",
    ] {
        if let Some(e) = registry::lookup(name) {
            if e.spec.profile.writes == 0 {
                problems.push(format!("{name}: action profile writes nothing"));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
