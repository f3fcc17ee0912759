//! A packet handle: one pointer to its slot.
//!
//! The slot header holds the data window (offset and length inside the slot's
//! buffer), the link/network/transport header offsets, and Click's
//! annotations. A `Packet` owns its slot exclusively; dropping it returns the
//! slot to its pool. Header offsets are absolute positions in the buffer, so
//! `Strip`/`Unstrip` (which move the data window) leave them valid.

use std::ptr::NonNull;

use crate::pool::{PoolInner, BUFFER_SIZE, DEFAULT_HEADROOM, HEADER_SIZE};

/// Header offset value meaning "not set".
pub(crate) const NO_HEADER: u16 = u16::MAX;

/// Size of Click's user annotation area in bytes.
pub const ANNO_SIZE: usize = 48;
/// Offset of the destination IP annotation (4 bytes) in the annotation area.
pub const DST_IP_ANNO_OFFSET: usize = 0;
/// Offset of the destination IPv6 annotation (16 bytes; as in Click it
/// shares its first bytes with the IPv4 one and overlaps the aggregate
/// annotation).
pub const DST_IP6_ANNO_OFFSET: usize = 0;
/// Offset of the paint annotation (1 byte).
pub const PAINT_ANNO_OFFSET: usize = 16;
/// Offset of the ICMP parameter-problem pointer annotation (1 byte).
pub const ICMP_PARAMPROB_ANNO_OFFSET: usize = 17;
/// Offset of the fix-IP-source annotation (1 byte).
pub const FIX_IP_SRC_ANNO_OFFSET: usize = 18;
/// Offset of the VLAN TCI annotation (2 bytes, network order).
pub const VLAN_TCI_ANNO_OFFSET: usize = 22;
/// Offset of the aggregate annotation (4 bytes).
pub const AGGREGATE_ANNO_OFFSET: usize = 12;
/// Offset of the "extra packets" annotation (4 bytes), used by summary dumps.
pub const EXTRA_PACKETS_ANNO_OFFSET: usize = 24;
/// Offset of the "extra length" annotation (4 bytes).
pub const EXTRA_LENGTH_ANNO_OFFSET: usize = 28;
/// Offset of the first-timestamp annotation (8 bytes).
pub const FIRST_TIMESTAMP_ANNO_OFFSET: usize = 32;

/// Click's packet-type annotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum PacketType {
    /// To this host.
    #[default]
    Host = 0,
    /// Link-level broadcast.
    Broadcast = 1,
    /// Link-level multicast.
    Multicast = 2,
    /// To another host.
    OtherHost = 3,
    /// Sent by this host.
    Outgoing = 4,
    /// Loopback.
    Loopback = 5,
    /// Fast-route.
    FastRoute = 6,
}

/// Click's annotations, kept in the slot header.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Anno {
    /// Timestamp in nanoseconds since the Unix epoch; 0 means unset.
    pub timestamp_ns: i64,
    /// Packet-type annotation.
    pub packet_type: PacketType,
    _reserved: [u8; 3],
    /// pronto's trace mark (`pronto trace`): which traced packet this is,
    /// 0 for one not traced. Set by the runtime at a source while a trace
    /// is armed; copies keep it.
    pub trace: u32,
    /// Click's user annotation bytes (destination IP, paint, ...).
    pub bytes: [u8; ANNO_SIZE],
}

impl Default for Anno {
    fn default() -> Self {
        Anno {
            timestamp_ns: 0,
            packet_type: PacketType::Host,
            _reserved: [0; 3],
            trace: 0,
            bytes: [0; ANNO_SIZE],
        }
    }
}

/// Copies `src` into `dst` (same length). Packets are short and this is
/// on every packet's path: lengths up to 128 bytes are copied as two
/// fixed-size, possibly overlapping moves (head and tail), which compile to
/// a few vector loads and stores instead of a call into the C library's
/// general `memcpy`.
#[inline(always)]
pub(crate) fn copy_small(dst: &mut [u8], src: &[u8]) {
    let n = src.len().min(dst.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    fn two<const K: usize>(dst: &mut [u8], src: &[u8]) {
        let n = src.len();
        let head: [u8; K] = src[..K].try_into().unwrap_or([0; K]);
        let tail: [u8; K] = src[n - K..].try_into().unwrap_or([0; K]);
        dst[..K].copy_from_slice(&head);
        dst[n - K..].copy_from_slice(&tail);
    }
    match n {
        16..=32 => two::<16>(dst, src),
        33..=64 => two::<32>(dst, src),
        65..=128 => two::<64>(dst, src),
        _ => dst.copy_from_slice(src),
    }
}

#[repr(C, align(64))]
pub(crate) struct SlotHeader {
    pub(crate) pool: *const PoolInner,
    pub(crate) index: u32,
    pub(crate) data_off: u16,
    pub(crate) len: u16,
    pub(crate) nh_off: u16,
    pub(crate) th_off: u16,
    pub(crate) mac_off: u16,
    /// The runtime's order tag: a packet's place in the batch of the
    /// element that split it, while the runtime keeps Click's order at the
    /// points where the split paths meet again. Elements leave it alone.
    pub(crate) order: u16,
    pub(crate) anno: Anno,
}

impl SlotHeader {
    pub(crate) fn new(pool: *const PoolInner, index: u32) -> SlotHeader {
        SlotHeader {
            pool,
            index,
            data_off: DEFAULT_HEADROOM as u16,
            len: 0,
            nh_off: NO_HEADER,
            th_off: NO_HEADER,
            mac_off: NO_HEADER,
            order: 0,
            anno: Anno::default(),
        }
    }

    /// Makes the header that of a fresh packet of `len` bytes at the default
    /// headroom, timestamped, with its link header at the start.
    #[inline(always)]
    pub(crate) fn frame(&mut self, len: usize, timestamp_ns: i64) {
        self.data_off = DEFAULT_HEADROOM as u16;
        self.len = len as u16;
        self.nh_off = NO_HEADER;
        self.th_off = NO_HEADER;
        self.mac_off = DEFAULT_HEADROOM as u16;
        self.anno = Anno::default();
        self.anno.timestamp_ns = timestamp_ns;
    }

    /// Like [`SlotHeader::frame`] for a frame at `data_off` (a frame a
    /// switch wrote into a port's slot, where it lies).
    #[inline(always)]
    pub(crate) fn frame_at(&mut self, data_off: usize, len: usize, timestamp_ns: i64) {
        self.frame(len, timestamp_ns);
        self.data_off = data_off as u16;
        self.mac_off = data_off as u16;
    }

    /// Makes the header that of a fresh packet; the pool pointer and index
    /// stay.
    #[inline(always)]
    pub(crate) fn reset(&mut self) {
        self.data_off = DEFAULT_HEADROOM as u16;
        self.len = 0;
        self.nh_off = NO_HEADER;
        self.th_off = NO_HEADER;
        self.mac_off = NO_HEADER;
        self.anno = Anno::default();
    }
}

/// A packet: exclusive owner of one pool slot.
pub struct Packet {
    slot: NonNull<SlotHeader>,
}

impl Packet {
    /// # Safety
    /// `slot` must point at an initialized slot header of a live pool, owned
    /// by no other `Packet`.
    #[inline]
    pub(crate) unsafe fn from_slot(slot: NonNull<u8>) -> Packet {
        Packet { slot: slot.cast() }
    }

    #[inline]
    fn hdr(&self) -> &SlotHeader {
        // SAFETY: the slot header is initialized and exclusively ours.
        unsafe { self.slot.as_ref() }
    }

    #[inline]
    fn hdr_mut(&mut self) -> &mut SlotHeader {
        // SAFETY: the slot header is initialized and exclusively ours.
        unsafe { self.slot.as_mut() }
    }

    #[inline]
    fn buf_ptr(&self) -> *mut u8 {
        // SAFETY: the buffer follows the header inside the same slot.
        unsafe { self.slot.as_ptr().cast::<u8>().add(HEADER_SIZE) }
    }

    /// The whole buffer (headroom, data and tailroom).
    #[inline]
    fn buffer(&self) -> &[u8] {
        // SAFETY: BUFFER_SIZE bytes follow the header inside our slot.
        unsafe { std::slice::from_raw_parts(self.buf_ptr(), BUFFER_SIZE) }
    }

    #[inline]
    fn buffer_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in buffer(), and we own the slot exclusively.
        unsafe { std::slice::from_raw_parts_mut(self.buf_ptr(), BUFFER_SIZE) }
    }

    /// The runtime's order tag (see the runtime's merge-point ordering);
    /// kept while the packet moves between elements, whatever they do to
    /// its data and annotations.
    #[inline(always)]
    pub fn order_tag(&self) -> u16 {
        self.hdr().order
    }

    /// Sets the runtime's order tag.
    #[inline(always)]
    pub fn set_order_tag(&mut self, tag: u16) {
        self.hdr_mut().order = tag;
    }

    /// Index of this packet's slot in its pool.
    #[inline]
    pub fn slot_index(&self) -> u32 {
        self.hdr().index
    }

    /// The packet's bytes.
    #[inline]
    pub fn data(&self) -> &[u8] {
        let h = self.hdr();
        let (off, len) = (h.data_off as usize, h.len as usize);
        // SAFETY: data_off + len <= BUFFER_SIZE is kept by every mutator.
        unsafe { std::slice::from_raw_parts(self.buf_ptr().add(off), len) }
    }

    /// The packet's bytes, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        let h = self.hdr();
        let (off, len) = (h.data_off as usize, h.len as usize);
        // SAFETY: as in data(), and we own the slot exclusively.
        unsafe { std::slice::from_raw_parts_mut(self.buf_ptr().add(off), len) }
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.hdr().len as usize
    }

    /// True for a zero-length packet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.hdr().len == 0
    }

    /// Free bytes in front of the data.
    #[inline]
    pub fn headroom(&self) -> usize {
        self.hdr().data_off as usize
    }

    /// Free bytes after the data.
    #[inline]
    pub fn tailroom(&self) -> usize {
        let h = self.hdr();
        BUFFER_SIZE - h.data_off as usize - h.len as usize
    }

    /// Removes `n` bytes from the front (Click's `pull`); at most the length.
    #[inline]
    pub fn pull(&mut self, n: usize) {
        let h = self.hdr_mut();
        let n = n.min(h.len as usize) as u16;
        h.data_off += n;
        h.len -= n;
    }

    /// Adds `n` bytes in front (Click's `push`), returning them; the new
    /// bytes keep whatever the buffer held there (for `Unstrip`, the old
    /// header). When the headroom is too small the data is moved back inside
    /// the slot; `None` if the slot cannot hold the result.
    #[inline]
    pub fn push(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.headroom() && !self.make_headroom(n) {
            return None;
        }
        let h = self.hdr_mut();
        h.data_off -= n as u16;
        h.len += n as u16;
        let off = h.data_off as usize;
        Some(&mut self.buffer_mut()[off..off + n])
    }

    #[cold]
    fn make_headroom(&mut self, n: usize) -> bool {
        let len = self.len();
        if n + len > BUFFER_SIZE {
            return false;
        }
        let shift = n - self.headroom();
        let off = self.headroom();
        self.buffer_mut().copy_within(off..off + len, off + shift);
        let h = self.hdr_mut();
        h.data_off += shift as u16;
        for o in [&mut h.nh_off, &mut h.th_off, &mut h.mac_off] {
            if *o != NO_HEADER {
                *o = o.saturating_add(shift as u16).min(BUFFER_SIZE as u16);
            }
        }
        true
    }

    /// Appends `n` bytes at the end, returning them (contents unspecified);
    /// `None` if there is no tailroom for them.
    #[inline]
    pub fn put_uninit(&mut self, n: usize) -> &mut [u8] {
        let n = n.min(self.tailroom());
        let h = self.hdr_mut();
        let end = h.data_off as usize + h.len as usize;
        h.len += n as u16;
        &mut self.buffer_mut()[end..end + n]
    }

    /// Appends `n` zero bytes; false if the tailroom is too small.
    #[inline]
    pub fn put_zeroed(&mut self, n: usize) -> bool {
        if n > self.tailroom() {
            return false;
        }
        self.put_uninit(n).fill(0);
        true
    }

    /// Removes `n` bytes from the end (Click's `take`); at most the length.
    #[inline]
    pub fn take(&mut self, n: usize) {
        let h = self.hdr_mut();
        h.len -= n.min(h.len as usize) as u16;
    }

    /// Sets the length, growing into the tailroom with zeros or shrinking.
    pub fn set_len(&mut self, len: usize) -> bool {
        let cur = self.len();
        if len <= cur {
            self.take(cur - len);
            true
        } else {
            self.put_zeroed(len - cur)
        }
    }

    /// Copies bytes, header offsets and annotations from `other`. The
    /// headroom is copied too: a Click clone shares its buffer, so an
    /// `Unstrip` on the copy must reveal the same bytes as on the original.
    #[inline]
    pub fn copy_from(&mut self, other: &Packet) {
        self.copy_head_from(other, usize::MAX);
    }

    /// Like [`Packet::copy_from`], but only the first `n` bytes of the
    /// data (the headers, for a header-only copy of a packet whose payload
    /// nobody reads).
    #[inline]
    pub fn copy_head_from(&mut self, other: &Packet, n: usize) {
        let (so, sl) = (other.hdr().data_off as usize, other.hdr().len as usize);
        let sl = sl.min(n);
        self.buffer_mut()[..so + sl].copy_from_slice(&other.buffer()[..so + sl]);
        let o = other.hdr();
        let (nh, th, mac, anno) = (o.nh_off, o.th_off, o.mac_off, o.anno);
        let h = self.hdr_mut();
        h.data_off = so as u16;
        h.len = sl as u16;
        h.nh_off = nh;
        h.th_off = th;
        h.mac_off = mac;
        h.anno = anno;
    }

    #[inline]
    fn rel(&self, abs: u16) -> Option<isize> {
        (abs != NO_HEADER).then(|| abs as isize - self.hdr().data_off as isize)
    }

    #[inline]
    fn abs(&self, rel: isize) -> u16 {
        let a = self.hdr().data_off as isize + rel;
        if (0..BUFFER_SIZE as isize).contains(&a) {
            a as u16
        } else {
            NO_HEADER
        }
    }

    /// Offset of the network header from the data start (negative when the
    /// data window begins after it), if one was set.
    #[inline]
    pub fn network_header_offset(&self) -> Option<isize> {
        self.rel(self.hdr().nh_off)
    }

    /// Offset of the transport header from the data start, if set.
    #[inline]
    pub fn transport_header_offset(&self) -> Option<isize> {
        self.rel(self.hdr().th_off)
    }

    /// Offset of the link (MAC) header from the data start, if set.
    #[inline]
    pub fn mac_header_offset(&self) -> Option<isize> {
        self.rel(self.hdr().mac_off)
    }

    /// Bytes from the link (MAC) header to the end of the data, if a link
    /// header is marked — also when the data window begins after it (a
    /// pulled header stays in the buffer, as Click's `mac_header()`).
    #[inline]
    pub fn mac_header_data(&self) -> Option<&[u8]> {
        let m = self.hdr().mac_off;
        let end = self.hdr().data_off as usize + self.len();
        if m == NO_HEADER || usize::from(m) > end {
            return None;
        }
        self.buffer().get(usize::from(m)..end)
    }

    /// Marks the network header at `off` bytes from the data start, `len`
    /// bytes long (the transport header follows it) — Click's
    /// `set_network_header`.
    #[inline]
    pub fn set_network_header(&mut self, off: isize, len: usize) {
        let nh = self.abs(off);
        let th = if nh == NO_HEADER {
            NO_HEADER
        } else {
            self.abs(off + len as isize)
        };
        let h = self.hdr_mut();
        h.nh_off = nh;
        h.th_off = th;
    }

    /// Marks the transport header at `off` bytes from the data start.
    #[inline]
    pub fn set_transport_header(&mut self, off: isize) {
        let th = self.abs(off);
        self.hdr_mut().th_off = th;
    }

    /// Marks the link header at `off` bytes from the data start.
    #[inline]
    pub fn set_mac_header(&mut self, off: isize) {
        let m = self.abs(off);
        self.hdr_mut().mac_off = m;
    }

    /// Clears the network and transport header marks.
    #[inline]
    pub fn clear_network_header(&mut self) {
        let h = self.hdr_mut();
        h.nh_off = NO_HEADER;
        h.th_off = NO_HEADER;
    }

    /// Bytes from the network header to the end of the data, if a network
    /// header is set and lies inside the data window.
    #[inline]
    pub fn network_data(&self) -> Option<&[u8]> {
        let off = self.network_header_offset()?;
        (off >= 0 && off as usize <= self.len()).then(|| &self.data()[off as usize..])
    }

    /// As [`Packet::network_data`], writable.
    #[inline]
    pub fn network_data_mut(&mut self) -> Option<&mut [u8]> {
        let off = self.network_header_offset()?;
        if off >= 0 && off as usize <= self.len() {
            Some(&mut self.data_mut()[off as usize..])
        } else {
            None
        }
    }

    /// Length of the network header (transport offset minus network offset).
    #[inline]
    pub fn network_header_len(&self) -> Option<usize> {
        let h = self.hdr();
        (h.nh_off != NO_HEADER && h.th_off != NO_HEADER && h.th_off >= h.nh_off)
            .then(|| (h.th_off - h.nh_off) as usize)
    }

    /// The annotations.
    #[inline]
    pub fn annotations(&self) -> &Anno {
        &self.hdr().anno
    }

    /// The annotations, writable.
    #[inline]
    pub fn annotations_mut(&mut self) -> &mut Anno {
        &mut self.hdr_mut().anno
    }

    /// The destination IP annotation.
    #[inline]
    pub fn dst_ip_anno(&self) -> [u8; 4] {
        let b = &self.hdr().anno.bytes;
        [b[0], b[1], b[2], b[3]]
    }

    /// Sets the destination IP annotation.
    #[inline]
    pub fn set_dst_ip_anno(&mut self, ip: [u8; 4]) {
        self.hdr_mut().anno.bytes[DST_IP_ANNO_OFFSET..DST_IP_ANNO_OFFSET + 4].copy_from_slice(&ip);
    }

    /// The destination IPv6 annotation.
    #[inline]
    pub fn dst_ip6_anno(&self) -> [u8; 16] {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.hdr().anno.bytes[DST_IP6_ANNO_OFFSET..DST_IP6_ANNO_OFFSET + 16]);
        a
    }

    /// Sets the destination IPv6 annotation.
    #[inline]
    pub fn set_dst_ip6_anno(&mut self, ip: [u8; 16]) {
        self.hdr_mut().anno.bytes[DST_IP6_ANNO_OFFSET..DST_IP6_ANNO_OFFSET + 16]
            .copy_from_slice(&ip);
    }

    /// The paint annotation.
    #[inline]
    pub fn paint_anno(&self) -> u8 {
        self.hdr().anno.bytes[PAINT_ANNO_OFFSET]
    }

    /// Sets the paint annotation.
    #[inline]
    pub fn set_paint_anno(&mut self, c: u8) {
        self.hdr_mut().anno.bytes[PAINT_ANNO_OFFSET] = c;
    }

    /// The timestamp annotation in nanoseconds since the epoch (0: unset).
    #[inline]
    pub fn timestamp_ns(&self) -> i64 {
        self.hdr().anno.timestamp_ns
    }

    /// Sets the timestamp annotation.
    #[inline]
    pub fn set_timestamp_ns(&mut self, t: i64) {
        self.hdr_mut().anno.timestamp_ns = t;
    }

    /// The raw user annotation bytes.
    #[inline]
    pub fn anno_bytes(&self) -> &[u8; ANNO_SIZE] {
        &self.hdr().anno.bytes
    }

    /// The raw user annotation bytes, writable.
    #[inline]
    pub fn anno_bytes_mut(&mut self) -> &mut [u8; ANNO_SIZE] {
        &mut self.hdr_mut().anno.bytes
    }
}

impl Packet {
    /// The pool the packet's slot belongs to.
    #[inline]
    pub(crate) fn pool_ptr(&self) -> *const PoolInner {
        self.hdr().pool
    }

    /// The slot's pool and index, giving up ownership without freeing.
    #[inline]
    pub(crate) fn into_slot(self) -> (*const PoolInner, u32) {
        let h = self.hdr();
        let r = (h.pool, h.index);
        std::mem::forget(self);
        r
    }

    /// Frees slot `index` of `pool`.
    ///
    /// # Safety
    /// The pair must come from [`Packet::into_slot`] and be freed once.
    #[inline]
    pub(crate) unsafe fn free_slots(pool: *const PoolInner, idx: &[u32]) {
        // SAFETY: the caller guarantees the pool outlives its packets.
        unsafe { (*pool).push_many(idx) }
    }
}

impl Drop for Packet {
    #[inline]
    fn drop(&mut self) {
        let h = self.hdr();
        // SAFETY: a pool outlives its packets (Pool::drop leaks the region
        // while any packet is alive), so the pool pointer is valid.
        unsafe { (*h.pool).push(h.index) }
    }
}

impl std::fmt::Debug for Packet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packet")
            .field("slot", &self.slot_index())
            .field("len", &self.len())
            .field("headroom", &self.headroom())
            .finish()
    }
}
