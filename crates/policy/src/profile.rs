//! Action profiles: what a network function reads and writes of a packet.
//!
//! NFP describes every NF by its actions on five packet fields (source and
//! destination IP address, source and destination port, payload), plus
//! whether it adds or removes headers and whether it may drop packets. The
//! element library declares the same facts per element class
//! ([`pronto_elements::ActionProfile`], the same bit values); this module
//! holds the NF-level value and its text form.
//!
//! The element library also tracks [`Field::Other`] (TTL, checksums, link
//! header, ...). It is kept in profiles so that an operator sees it, but the
//! dependency analysis looks only at the five fields of the paper
//! ([`Field::ANALYSED`]): the merger rewrites checksums itself, and the
//! paper's Table 1 says nothing about the other header fields.

use std::fmt;

use pronto_elements::{
    ActionProfile, FIELD_DST_IP, FIELD_DST_PORT, FIELD_OTHER, FIELD_PAYLOAD, FIELD_SRC_IP,
    FIELD_SRC_PORT,
};

/// A packet field an NF may read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// Source IP address.
    SrcIp,
    /// Destination IP address.
    DstIp,
    /// Source port.
    SrcPort,
    /// Destination port.
    DstPort,
    /// The payload (everything after the transport header).
    Payload,
    /// Any other header field (TTL, checksums, link header, ...); tracked,
    /// not analysed.
    Other,
}

impl Field {
    /// Every field, in display order.
    pub const ALL: [Field; 6] = [
        Field::SrcIp,
        Field::DstIp,
        Field::SrcPort,
        Field::DstPort,
        Field::Payload,
        Field::Other,
    ];

    /// The fields the dependency analysis looks at (the paper's five).
    pub const ANALYSED: [Field; 5] = [
        Field::SrcIp,
        Field::DstIp,
        Field::SrcPort,
        Field::DstPort,
        Field::Payload,
    ];

    /// The field's name in `.nfp` files and in rendered output.
    pub const fn name(self) -> &'static str {
        match self {
            Field::SrcIp => "src_ip",
            Field::DstIp => "dst_ip",
            Field::SrcPort => "src_port",
            Field::DstPort => "dst_port",
            Field::Payload => "payload",
            Field::Other => "other",
        }
    }

    /// The field named `name` (as [`Field::name`] writes it).
    pub fn from_name(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The field's bit, equal to the element library's `FIELD_*` constant.
    pub const fn bit(self) -> u8 {
        match self {
            Field::SrcIp => FIELD_SRC_IP,
            Field::DstIp => FIELD_DST_IP,
            Field::SrcPort => FIELD_SRC_PORT,
            Field::DstPort => FIELD_DST_PORT,
            Field::Payload => FIELD_PAYLOAD,
            Field::Other => FIELD_OTHER,
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`Field`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldSet(u8);

impl FieldSet {
    /// No field.
    pub const EMPTY: FieldSet = FieldSet(0);
    /// The four header fields of the five-tuple the paper names.
    pub const FIVE_TUPLE: FieldSet =
        FieldSet(FIELD_SRC_IP | FIELD_DST_IP | FIELD_SRC_PORT | FIELD_DST_PORT);
    const ANALYSED_BITS: u8 =
        FIELD_SRC_IP | FIELD_DST_IP | FIELD_SRC_PORT | FIELD_DST_PORT | FIELD_PAYLOAD;
    const ALL_BITS: u8 = FieldSet::ANALYSED_BITS | FIELD_OTHER;

    /// The set with the element library's bits `bits` (unknown bits are
    /// ignored).
    pub const fn from_bits(bits: u8) -> FieldSet {
        FieldSet(bits & FieldSet::ALL_BITS)
    }

    /// The element library's bits of this set.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// The set of `fields`.
    pub fn of(fields: &[Field]) -> FieldSet {
        FieldSet(fields.iter().fold(0, |b, f| b | f.bit()))
    }

    /// This set plus `field`.
    pub const fn with(self, field: Field) -> FieldSet {
        FieldSet(self.0 | field.bit())
    }

    /// Whether `field` is in the set.
    pub const fn contains(self, field: Field) -> bool {
        self.0 & field.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Fields in either set.
    pub const fn union(self, other: FieldSet) -> FieldSet {
        FieldSet(self.0 | other.0)
    }

    /// Fields in both sets.
    pub const fn intersection(self, other: FieldSet) -> FieldSet {
        FieldSet(self.0 & other.0)
    }

    /// The set without [`Field::Other`].
    pub const fn analysed(self) -> FieldSet {
        FieldSet(self.0 & FieldSet::ANALYSED_BITS)
    }

    /// The fields of the set, in [`Field::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Field> {
        Field::ALL.into_iter().filter(move |f| self.contains(*f))
    }
}

impl fmt::Display for FieldSet {
    /// Field names separated by spaces, or `-` for the empty set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("-");
        }
        for (i, field) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(field.name())?;
        }
        Ok(())
    }
}

/// How an NF accesses one field. A field both read and written is
/// [`Access::ReadWrite`] (the paper's `R/W`), which the analysis counts as
/// both a read and a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Not touched.
    None,
    /// Read only (`R`).
    Read,
    /// Written without being read (`W`).
    Write,
    /// Read and written (`R/W`).
    ReadWrite,
}

impl Access {
    /// Whether the field is read.
    pub const fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }

    /// Whether the field is written.
    pub const fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }
}

/// What an NF does to packets: the fields it reads and writes, whether it
/// may drop packets and whether it adds or removes headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Profile {
    /// Fields read.
    pub reads: FieldSet,
    /// Fields written.
    pub writes: FieldSet,
    /// May drop packets (the paper's `T` in the drop column).
    pub drops: bool,
    /// Adds or removes headers (the paper's add/remove column).
    pub reshapes: bool,
}

impl Profile {
    /// Touches nothing, never drops (Table 1's traffic shaper).
    pub const NONE: Profile = Profile {
        reads: FieldSet::EMPTY,
        writes: FieldSet::EMPTY,
        drops: false,
        reshapes: false,
    };

    /// Reads `fields`.
    pub fn reading(fields: &[Field]) -> Profile {
        Profile {
            reads: FieldSet::of(fields),
            ..Profile::NONE
        }
    }

    /// Also writes `fields`.
    pub fn writing(mut self, fields: &[Field]) -> Profile {
        self.writes = self.writes.union(FieldSet::of(fields));
        self
    }

    /// Also reads and writes `fields` (`R/W`).
    pub fn read_writing(mut self, fields: &[Field]) -> Profile {
        self.reads = self.reads.union(FieldSet::of(fields));
        self.writes = self.writes.union(FieldSet::of(fields));
        self
    }

    /// May drop packets.
    pub fn dropping(mut self) -> Profile {
        self.drops = true;
        self
    }

    /// Adds or removes headers.
    pub fn reshaping(mut self) -> Profile {
        self.reshapes = true;
        self
    }

    /// How `field` is accessed.
    pub fn access(&self, field: Field) -> Access {
        match (self.reads.contains(field), self.writes.contains(field)) {
            (false, false) => Access::None,
            (true, false) => Access::Read,
            (false, true) => Access::Write,
            (true, true) => Access::ReadWrite,
        }
    }

    /// Sets how `field` is accessed.
    pub fn set_access(&mut self, field: Field, access: Access) {
        let bit = field.bit();
        let (r, w) = (access.reads(), access.writes());
        self.reads = FieldSet::from_bits((self.reads.bits() & !bit) | if r { bit } else { 0 });
        self.writes = FieldSet::from_bits((self.writes.bits() & !bit) | if w { bit } else { 0 });
    }

    /// Analysed fields read or written.
    pub fn touched(&self) -> FieldSet {
        self.reads.union(self.writes).analysed()
    }

    /// Whether the NF reads or writes the payload.
    pub fn touches_payload(&self) -> bool {
        self.reads.contains(Field::Payload) || self.writes.contains(Field::Payload)
    }

    /// The profile of an NF that does everything `self` and `other` do.
    pub fn union(&self, other: &Profile) -> Profile {
        Profile {
            reads: self.reads.union(other.reads),
            writes: self.writes.union(other.writes),
            drops: self.drops || other.drops,
            reshapes: self.reshapes || other.reshapes,
        }
    }

    /// The profile without [`Field::Other`], which the analysis ignores.
    pub fn analysed(&self) -> Profile {
        Profile {
            reads: self.reads.analysed(),
            writes: self.writes.analysed(),
            ..*self
        }
    }
}

impl From<ActionProfile> for Profile {
    fn from(p: ActionProfile) -> Profile {
        Profile {
            reads: FieldSet::from_bits(p.reads),
            writes: FieldSet::from_bits(p.writes),
            drops: p.drops,
            reshapes: p.reshapes,
        }
    }
}

impl From<Profile> for ActionProfile {
    fn from(p: Profile) -> ActionProfile {
        ActionProfile {
            reads: p.reads.bits(),
            writes: p.writes.bits(),
            drops: p.drops,
            reshapes: p.reshapes,
        }
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

impl fmt::Display for Profile {
    /// `reads: src_ip dst_ip; writes: -; drops: yes; adds/removes headers: no`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "reads: {}; writes: {}; drops: {}; adds/removes headers: {}",
            self.reads,
            self.writes,
            yes_no(self.drops),
            yes_no(self.reshapes)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_bits_match_the_element_library() {
        assert_eq!(Field::SrcIp.bit(), pronto_elements::FIELD_SRC_IP);
        assert_eq!(Field::Payload.bit(), pronto_elements::FIELD_PAYLOAD);
        assert_eq!(FieldSet::FIVE_TUPLE.bits(), pronto_elements::FIELDS_5TUPLE);
        for f in Field::ALL {
            assert_eq!(Field::from_name(f.name()), Some(f));
        }
        assert_eq!(Field::from_name("ttl"), None);
    }

    #[test]
    fn display() {
        let p = Profile::reading(&[
            Field::SrcIp,
            Field::DstIp,
            Field::SrcPort,
            Field::DstPort,
            Field::Payload,
        ])
        .dropping();
        assert_eq!(
            p.to_string(),
            "reads: src_ip dst_ip src_port dst_port payload; writes: -; drops: yes; \
             adds/removes headers: no"
        );
        let q = Profile::NONE
            .read_writing(&[Field::Payload])
            .writing(&[Field::Other])
            .reshaping();
        assert_eq!(
            q.to_string(),
            "reads: payload; writes: payload other; drops: no; adds/removes headers: yes"
        );
    }

    #[test]
    fn access_round_trips() {
        let mut p = Profile::NONE;
        for a in [Access::Read, Access::Write, Access::ReadWrite, Access::None] {
            p.set_access(Field::DstPort, a);
            assert_eq!(p.access(Field::DstPort), a);
            assert_eq!(p.access(Field::SrcPort), Access::None);
        }
    }

    #[test]
    fn converts_to_and_from_action_profiles() {
        let a = ActionProfile::reads(pronto_elements::FIELDS_5TUPLE | FIELD_OTHER)
            .writes(FIELD_SRC_IP)
            .dropping();
        let p = Profile::from(a);
        assert!(p.reads.contains(Field::Other));
        assert_eq!(p.analysed().reads, FieldSet::FIVE_TUPLE);
        assert_eq!(ActionProfile::from(p), a);
    }
}
