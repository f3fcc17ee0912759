//! The action profile of an NF written as a Click configuration: the union
//! of the profiles its element classes declare.
//!
//! Class profiles are worst cases: an `IPFilter` may match payload bytes,
//! a `Classifier` any byte of the packet. Two refinements look at the
//! configuration where that is cheap and certain:
//!
//! * Payload reads of `IPClassifier` and `IPFilter` count only if a
//!   pattern uses a byte offset (`ip[...]`, `tcp[...]`, `transp[...]`):
//!   no other primitive of the pattern language reaches the payload.
//! * Payload reads of `Classifier` count only if a pattern looks at a byte
//!   at offset 28 or beyond. Whether the element sees Ethernet frames or IP
//!   packets, the first 28 bytes are headers (an IPv4 header is at least
//!   20 bytes, a UDP header 8, a TCP header 20).
//!
//! And a configuration that takes Ethernet frames, strips the
//! link header to work on the IP packet and puts a link header back before
//! sending (`Strip(14)` ... `Unstrip(14)`, or `Strip(14)` ... `EtherEncap`)
//! hands its neighbours frames of the same shape it received. That is not
//! the "add/remove header" of the paper's Table 1 (a VPN's tunnel header),
//! so when a configuration has both a link-header remover and a link-header
//! adder, those elements do not count as reshaping. A configuration with
//! only one of the two (it turns frames into IP packets, or the reverse)
//! still reshapes.

use std::path::Path;

use pronto_lang::{FlatConfig, Options, SourceMap};

use crate::profile::{Field, FieldSet, Profile};

/// Classes the runtime provides beyond the element library (drivers and
/// control elements). They touch no packet.
const CONTROL_CLASSES: &[&str] = &[
    "ControlSocket",
    "DriverManager",
    "Script",
    "StaticThreadSched",
];

/// Length of an Ethernet header.
const ETHER_HEADER: &str = "14";

/// Bytes at the front of any packet that are headers whatever the framing
/// (see the module documentation).
const ALWAYS_HEADER: usize = 28;

/// One element's part in a derived profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contribution {
    /// The element's name in the flattened configuration.
    pub element: String,
    /// Its class.
    pub class: String,
    /// What it adds to the NF's profile (the class's declared profile,
    /// refined as the module documentation says).
    pub profile: Profile,
}

/// The profile derived from a Click configuration, with what each element
/// contributed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derivation {
    /// The union of the contributions.
    pub profile: Profile,
    /// Every element, in declaration order.
    pub contributions: Vec<Contribution>,
    /// Whether link-header strip/restore elements were found on both sides
    /// and so not counted as reshaping.
    pub link_framing_balanced: bool,
}

/// Which way an element changes the link-layer framing, if it only does
/// that.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Framing {
    Removes,
    Adds,
}

fn link_framing(class: &str, config: &str) -> Option<Framing> {
    let length = || {
        let c = config.trim();
        let c = c.strip_prefix("LENGTH").map_or(c, str::trim);
        c == ETHER_HEADER
    };
    match class {
        "Strip" if length() => Some(Framing::Removes),
        "StripToNetworkHeader" => Some(Framing::Removes),
        "Unstrip" if length() => Some(Framing::Adds),
        "EtherEncap" | "ARPQuerier" => Some(Framing::Adds),
        _ => None,
    }
}

/// The end (exclusive) of the bytes a `Classifier` configuration looks
/// at, or `None` if a pattern does not parse.
fn classifier_extent(config: &str) -> Option<usize> {
    let mut end = 0;
    for arg in pronto_lang::args::split_args(config) {
        for clause in arg.split_whitespace() {
            if clause == "-" {
                continue;
            }
            let clause = clause.trim_start_matches('!');
            let (offset, value) = clause.split_once('/')?;
            let offset: usize = offset.parse().ok()?;
            let value = value.split('%').next()?;
            if value.is_empty() || !value.chars().all(|c| c.is_ascii_hexdigit() || c == '?') {
                return None;
            }
            end = end.max(offset + value.len().div_ceil(2));
        }
    }
    Some(end)
}

/// Whether an element of class `class` configured with `config` may read
/// the payload, given that its class says it may.
fn may_read_payload(class: &str, config: &str) -> bool {
    match class {
        "IPClassifier" | "IPFilter" => config.contains('['),
        "Classifier" => classifier_extent(config).is_none_or(|end| end > ALWAYS_HEADER),
        _ => true,
    }
}

/// Whether a classifier configured with `config` may drop: only when its
/// last pattern is no catch-all (`-`) — a packet no pattern matches is
/// dropped; every output is connected (pronto refuses to build a
/// configuration with an unconnected one).
fn classifier_may_drop(config: &str) -> bool {
    pronto_lang::args::split_args(config)
        .last()
        .is_none_or(|last| last.trim() != "-")
}

pub(crate) fn is_known_class(class: &str) -> bool {
    CONTROL_CLASSES.contains(&class) || pronto_elements::registry::lookup(class).is_some()
}

fn class_profile(class: &str) -> Profile {
    pronto_elements::registry::lookup(class)
        .map(|e| Profile::from(e.spec.profile))
        .unwrap_or(Profile::NONE)
}

/// Derives the profile of a flattened configuration.
pub fn derive_flat(flat: &FlatConfig) -> Derivation {
    let framing: Vec<Option<Framing>> = flat
        .elements
        .iter()
        .map(|e| link_framing(&e.class, &e.config))
        .collect();
    let balanced =
        framing.contains(&Some(Framing::Removes)) && framing.contains(&Some(Framing::Adds));
    let contributions: Vec<Contribution> = flat
        .elements
        .iter()
        .zip(&framing)
        .map(|(e, fr)| {
            let mut profile = class_profile(&e.class);
            if balanced && fr.is_some() {
                profile.reshapes = false;
            }
            if matches!(e.class.as_str(), "Classifier" | "IPClassifier")
                && profile.drops
                && !classifier_may_drop(&e.config)
            {
                profile.drops = false;
            }
            if profile.reads.contains(Field::Payload) && !may_read_payload(&e.class, &e.config) {
                profile.reads = FieldSet::from_bits(profile.reads.bits() & !Field::Payload.bit());
            }
            Contribution {
                element: e.name.clone(),
                class: e.class.clone(),
                profile,
            }
        })
        .collect();
    let profile = contributions
        .iter()
        .fold(Profile::NONE, |acc, c| acc.union(&c.profile));
    Derivation {
        profile,
        contributions,
        link_framing_balanced: balanced,
    }
}

/// Parses the Click configuration `text` (named `name` in messages) and
/// derives its profile. The error is the rendered parse diagnostics.
pub fn derive_click_text(name: &str, text: &str) -> Result<Derivation, String> {
    let mut sm = SourceMap::new();
    let file = sm.add(name, text);
    let opts = Options {
        defines: &[],
        is_primitive: &is_known_class,
    };
    match pronto_lang::parse_flat(&sm, file, &opts) {
        Ok((flat, _warnings)) => Ok(derive_flat(&flat)),
        Err(diags)
            if diags.iter().any(|d| {
                d.message == "undeclared element 'input'"
                    || d.message == "undeclared element 'output'"
            }) =>
        {
            // A compound element body (`input -> ... -> output`), as a
            // chain's NF is written: derive it as the body of a class.
            // The prefix has no newline, so line numbers stay right.
            let mut sm = SourceMap::new();
            let wrapped = format!("elementclass NF {{ {text}\n}} Idle -> NF -> Discard;\n");
            let file = sm.add(name, &wrapped);
            match pronto_lang::parse_flat(&sm, file, &opts) {
                Ok((flat, _warnings)) => {
                    let mut d = derive_flat(&flat);
                    // The wrapper's own Idle and Discard go; the body's
                    // elements lose the wrapper's name.
                    d.contributions.retain(|c| c.element.contains('/'));
                    for c in &mut d.contributions {
                        if let Some((_, rest)) = c.element.split_once('/') {
                            c.element = rest.to_string();
                        }
                    }
                    d.profile = d
                        .contributions
                        .iter()
                        .fold(Profile::NONE, |acc, c| acc.union(&c.profile));
                    Ok(d)
                }
                Err(diags) => Err(diags
                    .iter()
                    .map(|d| d.render(&sm))
                    .collect::<Vec<_>>()
                    .join("\n")),
            }
        }
        Err(diags) => Err(diags
            .iter()
            .map(|d| d.render(&sm))
            .collect::<Vec<_>>()
            .join("\n")),
    }
}

/// Reads the Click configuration at `path` and derives its profile.
pub fn derive_click(path: &Path) -> Result<Derivation, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    derive_click_text(&path.display().to_string(), &text)
}

/// The profile of the NF the Click configuration at `path` describes.
pub fn profile_of_click(path: &Path) -> Result<Profile, String> {
    derive_click(path).map(|d| d.profile)
}

/// The profile of the NF the Click configuration `text` describes (`name`
/// is used in error messages).
pub fn profile_of_click_text(name: &str, text: &str) -> Result<Profile, String> {
    derive_click_text(name, text).map(|d| d.profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unions_element_profiles() {
        let d = derive_click_text(
            "t.click",
            "FromDump(x.pcap) -> Strip(14) -> CheckIPHeader -> IPFilter(allow tcp, deny all) \
             -> Unstrip(14) -> ToDump(y.pcap); DriverManager(wait);",
        )
        .expect("parses");
        assert!(d.link_framing_balanced);
        assert!(!d.profile.reshapes);
        assert!(d.profile.drops);
        assert!(d.profile.reads.contains(Field::DstPort));
        assert!(d.profile.writes.analysed().is_empty());
        assert_eq!(d.contributions.len(), 7);
    }

    #[test]
    fn unbalanced_framing_reshapes() {
        let p = profile_of_click_text(
            "t.click",
            "FromDump(x.pcap) -> Strip(14) -> ToDump(y.pcap);",
        )
        .expect("parses");
        assert!(p.reshapes);
        let p = profile_of_click_text(
            "t.click",
            "FromDump(x.pcap) -> Strip(14) -> IPEncap(4, 1.0.0.1, 2.0.0.2) -> Unstrip(14) -> ToDump(y.pcap);",
        )
        .expect("parses");
        assert!(p.reshapes, "the tunnel header stays a reshape");
        let p = profile_of_click_text(
            "t.click",
            "FromDump(x.pcap) -> Strip(LENGTH 14) -> Unstrip(14) -> ToDump(y.pcap);",
        )
        .expect("parses");
        assert!(!p.reshapes);
        let p = profile_of_click_text(
            "t.click",
            "FromDump(x.pcap) -> Strip(20) -> Unstrip(14) -> ToDump(y.pcap);",
        )
        .expect("parses");
        assert!(p.reshapes, "only a 14-byte strip is a link header");
    }

    #[test]
    fn payload_reads_follow_the_patterns() {
        let reads_payload = |config: &str| {
            profile_of_click_text("t.click", config)
                .expect("parses")
                .reads
                .contains(Field::Payload)
        };
        assert!(!reads_payload(
            "FromDump(x) -> IPFilter(allow tcp dst port 80, deny all) -> Discard;"
        ));
        assert!(reads_payload(
            "FromDump(x) -> IPFilter(allow ip[40:2] = 5, deny all) -> Discard;"
        ));
        assert!(!reads_payload(
            "FromDump(x) -> IPClassifier(udp, -) -> Discard;"
        ));
        assert!(!reads_payload(
            "FromDump(x) -> Classifier(12/0800, -) -> Discard;"
        ));
        assert!(!reads_payload(
            "FromDump(x) -> Classifier(12/0800 !26/0a??%ff00, -) -> Discard;"
        ));
        assert!(reads_payload(
            "FromDump(x) -> Classifier(12/0800 54/deadbeef, -) -> Discard;"
        ));
        assert!(reads_payload(
            "FromDump(x) -> Classifier(27/0102, -) -> Discard;"
        ));
        assert_eq!(classifier_extent("12/0800, -"), Some(14));
        assert_eq!(classifier_extent("0/020000000001 12/0800, -"), Some(14));
        assert_eq!(classifier_extent("12/08?, -"), Some(14));
        assert_eq!(classifier_extent("x/08"), None);
        assert_eq!(classifier_extent("12/zz"), None);
    }

    #[test]
    fn errors_are_rendered() {
        let e = derive_click_text("bad.click", "FromDump(x) -> Nope -> Discard;")
            .expect_err("unknown class");
        assert!(e.contains("bad.click"), "{e}");
        let e = profile_of_click(Path::new("/nonexistent/x.click")).expect_err("no file");
        assert!(e.starts_with("cannot read /nonexistent/x.click"), "{e}");
    }
}
