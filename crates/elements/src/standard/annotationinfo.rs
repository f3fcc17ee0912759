//! `AnnotationInfo`: names packet annotations.

use pronto_lang::names::{define_value, NameKind};

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Annotation names every configuration has (they may not be redefined):
/// name, offset, size.
pub const BUILTIN_ANNOTATIONS: &[(&str, usize, usize)] = &[
    ("DST_IP", pronto_packet::DST_IP_ANNO_OFFSET, 4),
    ("PAINT", pronto_packet::PAINT_ANNO_OFFSET, 1),
    (
        "ICMP_PARAMPROB",
        pronto_packet::ICMP_PARAMPROB_ANNO_OFFSET,
        1,
    ),
    ("FIX_IP_SRC", pronto_packet::FIX_IP_SRC_ANNO_OFFSET, 1),
    ("VLAN_TCI", pronto_packet::VLAN_TCI_ANNO_OFFSET, 2),
    ("AGGREGATE", pronto_packet::AGGREGATE_ANNO_OFFSET, 4),
    ("EXTRA_PACKETS", pronto_packet::EXTRA_PACKETS_ANNO_OFFSET, 4),
    ("EXTRA_LENGTH", pronto_packet::EXTRA_LENGTH_ANNO_OFFSET, 4),
    (
        "FIRST_TIMESTAMP",
        pronto_packet::FIRST_TIMESTAMP_ANNO_OFFSET,
        8,
    ),
];

/// Defines annotation names, visible in its compound and below.
pub struct AnnotationInfo;

impl AnnotationInfo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AnnotationInfo")
        .ports("0/0")
        .processing("a/a")
        .phase(0)
        .keywords(&["CHECK_OVERLAP"])
        .profile(ActionProfile::NONE)
        .doc(
            "AnnotationInfo(NAME OFFSET [SIZE], ... [CHECK_OVERLAP NAME...])\n\n\
             Defines names for packet annotations: NAME stands for the annotation\n\
             at byte OFFSET (a number or another annotation's name) of SIZE bytes.\n\
             Built-in names (PAINT, DST_IP, ...) may not be redefined. With\n\
             CHECK_OVERLAP, the named annotations must not overlap.\n\n\
             Ports: none.",
        );

    /// Configures an `AnnotationInfo`, defining its names.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut defined: Vec<(String, usize, usize)> = Vec::new();
        let mut check: Vec<String> = Vec::new();
        for arg in pronto_lang::args::split_args(ctx.config) {
            let words = pronto_lang::args::split_words(&arg);
            let Some(name) = words.first() else { continue };
            if name.starts_with('#') {
                continue;
            }
            if name == "CHECK_OVERLAP" {
                check.extend(words[1..].iter().cloned());
                continue;
            }
            let word = name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
            if !word || anno(name, &defined).is_some() {
                return Err(ConfigError::new(format!("bad NAME '{name}'")));
            }
            let bad = || ConfigError::new(format!("bad entry for '{name}'"));
            let (offset, known_size) = words
                .get(1)
                .and_then(|o| anno(o, &defined))
                .ok_or_else(bad)?;
            let size = match words.get(2) {
                Some(s) => s.parse::<usize>().map_err(|_| bad())?,
                None => 0,
            };
            if words.len() > 3
                || offset + size > pronto_packet::ANNO_SIZE
                || (size > 0 && known_size > 0 && size != known_size)
            {
                return Err(bad());
            }
            let size = if size == 0 { known_size } else { size };
            define_value(
                NameKind::Annotation,
                ctx.name,
                name,
                (offset as u32) | ((size as u32) << 16),
            );
            defined.push((name.clone(), offset, size));
        }
        for (i, a) in check.iter().enumerate() {
            let (ao, asz) = anno(a, &defined)
                .ok_or_else(|| ConfigError::new(format!("CHECK_OVERLAP: bad annotation '{a}'")))?;
            for b in &check[i + 1..] {
                let (bo, bsz) = anno(b, &defined).ok_or_else(|| {
                    ConfigError::new(format!("CHECK_OVERLAP: bad annotation '{b}'"))
                })?;
                if ao < bo + bsz.max(1) && bo < ao + asz.max(1) {
                    return Err(ConfigError::new(format!(
                        "CHECK_OVERLAP: annotations '{a}' and '{b}' overlap"
                    )));
                }
            }
        }
        Ok(Box::new(AnnotationInfo))
    }
}

/// The offset and size (0: unknown) of an annotation given by number,
/// built-in name or a name defined here.
fn anno(s: &str, defined: &[(String, usize, usize)]) -> Option<(usize, usize)> {
    let name = s.strip_suffix("_ANNO").unwrap_or(s);
    if let Some(&(_, o, z)) = BUILTIN_ANNOTATIONS.iter().find(|(n, _, _)| *n == name) {
        return Some((o, z));
    }
    if let Some((_, o, z)) = defined.iter().find(|(n, _, _)| n == s) {
        return Some((*o, *z));
    }
    if let Some(v) = pronto_lang::names::value(NameKind::Annotation, s) {
        return Some(((v & 0xffff) as usize, (v >> 16) as usize));
    }
    match s.parse::<usize>() {
        Ok(o) if o < pronto_packet::ANNO_SIZE => Some((o, 0)),
        _ => None,
    }
}

impl Element for AnnotationInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_lang::names;

    #[test]
    fn defines_annotation_names() {
        names::clear();
        t::configure(
            AnnotationInfo::SPEC.keywords,
            AnnotationInfo::configure,
            "MY_COLOR 40 1, MY_PAIR 41 2, CHECK_OVERLAP MY_COLOR MY_PAIR PAINT",
            0,
            0,
        )
        .expect("configures");
        names::set_current("x");
        assert_eq!(
            names::value(NameKind::Annotation, "MY_PAIR"),
            Some(41 | (2 << 16))
        );
        let err = |cfg: &str| {
            t::config_err(t::configure(
                AnnotationInfo::SPEC.keywords,
                AnnotationInfo::configure,
                cfg,
                0,
                0,
            ))
        };
        assert_eq!(err("PAINT 3 1"), "bad NAME 'PAINT'");
        assert_eq!(err("X 47 2"), "bad entry for 'X'");
        assert_eq!(
            err("A 40 2, B 41 1, CHECK_OVERLAP A B"),
            "CHECK_OVERLAP: annotations 'A' and 'B' overlap"
        );
        names::clear();
    }
}
