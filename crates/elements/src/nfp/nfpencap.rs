//! `NFPEncap` and `NFPDecap`: the NFP tag inside the frame, for chains
//! whose NFs run in separate processes (sandboxed instances on the switch),
//! where annotations do not travel.
//!
//! The shim follows the MAC addresses: EtherType 0x88B5 (IEEE 802 local
//! experimental), the packet id (4 bytes), the graph (2), the branch (1),
//! the merger (1), then the frame's own EtherType.

use pronto_packet::Batch;

use super::tag_of;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec};

/// The shim's EtherType.
pub const NFP_ETHERTYPE: u16 = 0x88b5;
/// Bytes the shim adds.
pub const SHIM_LEN: usize = 10;

/// Adds the shim (see [`NfpEncap::SPEC`]).
pub struct NfpEncap {
    branch: u8,
    encapsulated: u64,
    untagged: u64,
}

/// Removes the shim (see [`NfpDecap::SPEC`]).
pub struct NfpDecap {
    decapsulated: u64,
    plain: u64,
}

impl NfpEncap {
    /// Click-style description of the class.
    pub const SPEC: Spec = Spec::new("NFPEncap")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["BRANCH"])
        .profile(ActionProfile::NONE.reshaping())
        .doc(
            "NFPEncap([BRANCH])\n\n\
             Puts a packet's NFP tag (from NFPTag or NFPDecap) into the frame, after the\n\
             MAC addresses: EtherType 0x88B5, packet id, graph, BRANCH (default 0: the\n\
             merger input this version is for), then the frame's own EtherType; for\n\
             chains whose NFs are separate instances on the switch. Untagged packets\n\
             and frames shorter than an Ethernet header pass unchanged (counted).\n\n\
             Ports: 1 input, 1 output, agnostic.\n\
             Handlers:\n  \
             count (read)      frames that got the shim\n  \
             untagged (read)   packets passed without one",
        );

    /// Configures an `NFPEncap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let branch: u32 = a.read_p("BRANCH")?.unwrap_or(0);
        a.finish()?;
        let branch = u8::try_from(branch)
            .map_err(|_| ConfigError::new(format!("BRANCH: at most 255, found `{branch}`")))?;
        Ok(Box::new(NfpEncap {
            branch,
            encapsulated: 0,
            untagged: 0,
        }))
    }
}

impl Element for NfpEncap {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            let Some((graph, id)) = tag_of(p) else {
                self.untagged += 1;
                continue;
            };
            let merger = super::merger_of(p);
            if p.len() < 14 || p.headroom() < SHIM_LEN {
                self.untagged += 1;
                continue;
            }
            let Some(_) = p.push(SHIM_LEN) else {
                self.untagged += 1;
                continue;
            };
            let d = p.data_mut();
            d.copy_within(SHIM_LEN..SHIM_LEN + 12, 0);
            d[12..14].copy_from_slice(&NFP_ETHERTYPE.to_be_bytes());
            d[14..18].copy_from_slice(&id.to_be_bytes());
            d[18..20].copy_from_slice(&graph.to_be_bytes());
            d[20] = self.branch;
            d[21] = merger;
            // d[22..24] is the frame's own EtherType, where it was. The
            // link header now starts 10 bytes earlier.
            p.set_mac_header(0);
            self.encapsulated += 1;
        }
        out.pass(0);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.encapsulated);
        c.count("untagged", self.untagged);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("count"), HandlerInfo::read("untagged")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.encapsulated.to_string()),
            "untagged" => Ok(self.untagged.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

impl NfpDecap {
    /// Click-style description of the class.
    pub const SPEC: Spec = Spec::new("NFPDecap")
        .ports("1/1")
        .processing("a/a")
        .profile(ActionProfile::NONE.reshaping())
        .doc(
            "NFPDecap()\n\n\
             Takes the NFP shim NFPEncap put into a frame out again: the packet id and\n\
             graph become the packet's NFP tag, the branch its paint annotation (for a\n\
             PaintSwitch in front of an NFPMerge), and the frame is as it was. Frames\n\
             without a shim pass unchanged (counted).\n\n\
             Ports: 1 input, 1 output, agnostic.\n\
             Handlers:\n  \
             count (read)   frames whose shim was taken out\n  \
             plain (read)   frames without one",
        );

    /// Configures an `NFPDecap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(NfpDecap {
            decapsulated: 0,
            plain: 0,
        }))
    }
}

impl Element for NfpDecap {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            let d = p.data();
            if d.len() < 14 + SHIM_LEN || u16::from_be_bytes([d[12], d[13]]) != NFP_ETHERTYPE {
                self.plain += 1;
                continue;
            }
            let id = u32::from_be_bytes([d[14], d[15], d[16], d[17]]);
            let graph = u16::from_be_bytes([d[18], d[19]]);
            let branch = d[20];
            let merger = d[21];
            let d = p.data_mut();
            d.copy_within(0..12, SHIM_LEN);
            p.pull(SHIM_LEN);
            p.set_mac_header(0);
            super::set_tag_for(p, graph, id, merger);
            p.set_paint_anno(branch);
            self.decapsulated += 1;
        }
        out.pass(0);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.decapsulated);
        c.count("plain", self.plain);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("count"), HandlerInfo::read("plain")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.decapsulated.to_string()),
            "plain" => Ok(self.plain.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}
