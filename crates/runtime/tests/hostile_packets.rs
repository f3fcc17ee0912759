//! Robustness: every element class survives hostile packets.
//!
//! pronto's rule is that a malformed packet is counted and dropped (or sent
//! to an error output), never a panic and never an out-of-bounds access.
//! This test feeds every class of the element registry thousands of
//! deterministic pseudo-random hostile frames: random bytes; Ethernet, IPv4,
//! TCP, UDP and ICMP headers with one or two fields corrupted (header length
//! 0..15, total length beyond or short of the frame, fragment offsets and
//! flags, IP and TCP options with bad lengths, TCP data offset 0..15, UDP
//! length, truncation at every length up to 80 bytes); ICMP errors quoting
//! truncated or corrupted headers of real flows; fragment series with
//! overlapping, huge and odd offsets; ARP with bad hardware/protocol lengths;
//! 802.1Q tags; FTP PORT commands with garbage numbers; IPv6 packets with
//! extension-header chains of every length (hop-by-hop not first,
//! destination options, type 0 and segment routing headers with bad
//! segment counts, fragments of extension headers, authentication headers),
//! jumbograms, Neighbor Discovery with bad options, and truncation at every
//! length; and valid packets of a few flows and their replies, so that
//! stateful elements reach their reply paths.
//!
//! Each class has one or more rows in [`ROWS`]: a small Click graph around
//! the element, reading packets from the element `in`. Every row runs under
//! each of four feeds (see [`FEEDS`]): the raw Ethernet frames; the frames
//! stripped to the IP header and marked with `MarkIPHeader` (which checks
//! nothing, so header lengths are hostile too) with the destination address
//! annotation set; frames that passed `CheckIPHeader(CHECKSUM false)` (valid
//! IP headers, hostile transport headers); Ethernet frames with the IP
//! header marked 14 bytes in; and frames that passed `CheckIP6Header` with
//! the IPv6 destination annotation set (valid fixed IPv6 headers, hostile
//! extension headers and upper layers). Sources (`FromDump`, `FromIPSummaryDump`,
//! `InfiniteSource`, ...) get rows of their own: `FromDump` reads corrupted
//! pcap files, `FromIPSummaryDump` a dump full of garbage lines.
//!
//! Each class runs in a child process (this test binary again, running
//! [`hostile_child`] with `PRONTO_HOSTILE_CLASS` set), so a panic, an abort
//! or a hang in one class is caught and named while the others still run.
//! The test fails with the list of classes (row and feed) that panicked,
//! with each panic message. After each run the child also checks that
//! every packet is accounted for (conservation) and that every element
//! with a drop handler (`drops`, `*_drops`) reports its drops by reason
//! through `Element::counters`, adding up to what the handlers say (see
//! [`drops_reported`]).
//!
//! Classes with no packet path are excluded (see [`EXCLUDED`]): AddressInfo
//! (names only), and the runtime's Script and DriverManager (not in the
//! element registry). FromDevice, ToDevice, FromHost, ToHost, KernelTun
//! and KernelTap are excluded too: they need a real network interface (or
//! TUN/TAP device) and the rights to open it, and the last four would hand
//! the hostile packets to this host's own network stack (their tests, in
//! their files and in `crates/cli/tests/host.rs`, feed them refused
//! packets of each kind); so are RawSocket, FromRawSocket and ToRawSocket
//! (raw IP sockets: CAP_NET_RAW, and hostile packets would leave for the
//! hosts their headers name; IPFlowRawSockets, which does the same, runs
//! in a fresh network namespace instead, see [`IN_NETNS`]), and UMLSwitch (it needs a running
//! uml_switch). IPRewriterPatterns and the mappers
//! (RoundRobinIPMapper, SourceIPHashMapper, MaglevIPMapper) have no ports,
//! but each serves a rewriter's new flows, so rows here run them behind a
//! rewriter. A class added to the registry without a row here fails the
//! test: add a row for it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Frames in the hostile trace (`PRONTO_HOSTILE_PACKETS` overrides it,
/// for a longer run by hand).
const PACKETS: usize = 4000;

fn packets() -> usize {
    std::env::var("PRONTO_HOSTILE_PACKETS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(PACKETS)
}

/// Classes without a packet path, and the device I/O classes, which need a
/// real network interface (and the rights to open a packet socket).
const EXCLUDED: &[&str] = &[
    "AddressInfo",
    // Never configures, by design: no configuration holding it runs.
    "ErrorElement",
    "IPFieldInfo",
    "IPNameInfo",
    "FromDevice",
    "ToDevice",
    "FromHost",
    "ToHost",
    "KernelTap",
    "KernelTun",
    // Raw IP sockets need CAP_NET_RAW, and a hostile packet sent through
    // one goes to whatever host its header names; their own tests send
    // and receive on loopback (userlevel/rawsocket.rs).
    "RawSocket",
    "FromRawSocket",
    "ToRawSocket",
    // Configures only against a running uml_switch (its own test brings a
    // stand-in); its data path is Socket's UNIX_DGRAM client, which has
    // rows here.
    "UMLSwitch",
];

/// Classes whose rows run in a fresh network namespace (`unshare --net`:
/// only a loopback interface, down), because they send what they are given
/// to the hosts its headers name: there every send finds no route, and the
/// hostile packets go nowhere. Without namespaces these classes are
/// skipped, loudly.
const IN_NETNS: &[&str] = &["IPFlowRawSockets"];

/// Whether this process is in a network namespace with no interface but
/// loopback (`/proc/net/dev`: two header lines, then one per interface).
fn alone_in_netns() -> bool {
    std::fs::read_to_string("/proc/net/dev").is_ok_and(|s| {
        let ifs: Vec<&str> = s
            .lines()
            .skip(2)
            .filter_map(|l| l.split(':').next())
            .map(str::trim)
            .collect();
        ifs == ["lo"]
    })
}

/// Whether `unshare --net` works here (root and the `unshare` tool).
fn netns_available() -> Result<(), String> {
    match Command::new("unshare").args(["--net", "true"]).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
        Err(e) => Err(format!("unshare: {e}")),
    }
}

/// Feeds: the text that ends in the element `in`, which a row reads from.
/// `$TRACE` is the hostile pcap.
const FEEDS: &[(&str, &str)] = &[
    ("ether", "hsrc :: FromDump($TRACE, STOP true) -> in :: Null;"),
    (
        "marked-ip",
        "hsrc :: FromDump($TRACE, STOP true) -> Strip(14) -> MarkIPHeader -> GetIPAddress(16) -> in :: Null;",
    ),
    (
        "checked-ip",
        "hsrc :: FromDump($TRACE, STOP true) -> Strip(14) -> chk :: CheckIPHeader(CHECKSUM false) -> in :: Null; chk[1] -> Discard;",
    ),
    (
        "ether-marked",
        "hsrc :: FromDump($TRACE, STOP true) -> MarkIPHeader(14) -> GetIPAddress(30) -> in :: Null;",
    ),
    (
        "checked-ip6",
        "hsrc :: FromDump($TRACE, STOP true) -> Strip(14) -> chk :: CheckIP6Header -> GetIP6Address(24) -> in :: Null; chk[1] -> Discard;",
    ),
];

/// How a row is fed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Feed {
    /// Under every feed of [`FEEDS`].
    All,
    /// A source: the row's text stands alone.
    None,
    /// A source reading a corrupted file: configuration may be refused.
    NoneMayFail,
}

/// One graph around a class. `$D` is the scratch directory.
struct Row {
    class: &'static str,
    feed: Feed,
    text: &'static str,
}

const fn r(class: &'static str, text: &'static str) -> Row {
    Row {
        class,
        feed: Feed::All,
        text,
    }
}

const fn src(class: &'static str, text: &'static str) -> Row {
    Row {
        class,
        feed: Feed::None,
        text,
    }
}

const fn bad_file(class: &'static str, text: &'static str) -> Row {
    Row {
        class,
        feed: Feed::NoneMayFail,
        text,
    }
}

/// Outputs of a 2-output element `x` to Discard.
macro_rules! two {
    ($head:literal) => {
        concat!($head, " x[0] -> Discard; x[1] -> Discard;")
    };
}

/// Outputs of a 3-output element `x` to Discard.
macro_rules! three {
    ($head:literal) => {
        concat!($head, " x[0] -> Discard; x[1] -> Discard; x[2] -> Discard;")
    };
}

const ROWS: &[Row] = &[
    // pronto's packet generator and sink
    src(
        "PacketGen",
        "PacketGen(LIMIT 300, BURST 7, FLOWS 5, LENGTH 100, STOP true) -> PacketSink -> Strip(14) -> CheckIPHeader -> Discard;",
    ),
    src("PacketGen", "PacketGen(RATE 100000, LIMIT 100, LENGTH 1514, STOP true) -> Discard;"),
    r("PacketSink", "in -> PacketSink -> Discard;"),
    r("PacketSink", "in -> PacketSink(OFFSET 0);"),
    // ethernet/
    r("ARPPrint", "in -> ARPPrint(hostile, OUTFILE $D/arpprint.txt) -> Discard;"),
    r("ARPPrint", "in -> ARPPrint(ETHER true, TIMESTAMP true, OUTFILE $D/arpprint2.txt) -> Discard;"),
    r(
        "ARPQuerier",
        two!("x :: ARPQuerier(10.0.0.1, 02:00:00:00:00:01); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "ARPQuerier",
        "x :: ARPQuerier(10.0.0.1/24, 02:00:00:00:00:01, CAPACITY 4, ENTRY_CAPACITY 8); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x; x -> Discard;",
    ),
    r("ARPResponder", two!("in -> x :: ARPResponder(10.0.0.0/24 02:00:00:00:00:01, 192.168.1.1 02:00:00:00:00:02);")),
    r("EtherEncap", "in -> EtherEncap(0x0800, 00:01:02:03:04:05, 00:01:02:03:04:06) -> Discard;"),
    r("EtherMirror", "in -> EtherMirror -> Discard;"),
    r("EtherRewrite", "in -> EtherRewrite(00:01:02:03:04:05, 00:01:02:03:04:06) -> Discard;"),
    r("HostEtherFilter", two!("in -> x :: HostEtherFilter(00:01:02:03:04:05, DROP_OWN true);")),
    r("HostEtherFilter", "in -> HostEtherFilter(00:01:02:03:04:05, OFFSET 2) -> Discard;"),
    r("CheckARPHeader", two!("in -> x :: CheckARPHeader(14, VERBOSE true, DETAILS true);")),
    r("CheckARPHeader", "in -> CheckARPHeader(1000) -> Discard;"),
    r("EnsureEther", "in -> EnsureEther -> Strip(14) -> EnsureEther(0x86dd, 1:2:3:4:5:6, 6:5:4:3:2:1) -> Discard;"),
    r("GetEtherAddress", two!("in -> x :: GetEtherAddress(24, src);")),
    r("GetEtherAddress", "in -> GetEtherAddress(24, 1900) -> Discard;"),
    r("SetEtherAddress", "in -> SetEtherAddress(1:2:3:4:5:6, 24) -> StoreEtherAddress(OFFSET dst, ANNO 24) -> Discard;"),
    r("StoreEtherAddress", two!("in -> x :: StoreEtherAddress(1:2:3:4:5:6, 50);")),
    r("StoreEtherAddress", "in -> StoreEtherAddress(1:2:3:4:5:6, src) -> Discard;"),
    r(
        "ARPTable",
        "t :: ARPTable(CAPACITY 8, ENTRY_CAPACITY 4); x :: ARPQuerier(10.0.0.1, 02:00:00:00:00:01, TABLE t); y :: ARPQuerier(10.0.0.2, 02:00:00:00:00:02, TABLE t); \
         in -> s :: Tee(4); s[0] -> [0]x; s[1] -> [1]x; s[2] -> [0]y; s[3] -> [1]y; x -> Discard; y -> Discard;",
    ),
    src("ARPFaker", "ARPFaker(10.0.0.1, 0:1:2:3:4:5, 10.0.0.2, 0:1:2:3:4:6) -> CheckARPHeader(14) -> Discard; DriverManager(wait 0.01);"),
    src("EtherPauseSource", "EtherPauseSource(0:1:2:3:4:5, 390, LIMIT 3, INTERVAL 0.001) -> Discard; DriverManager(wait 0.01);"),
    src("EtherPauseSource", "EtherPauseSource(0:1:2:3:4:5, 1, LIMIT 5) -> Unqueue -> Discard; DriverManager(wait 0.01);"),
    r("VLANEncap", "in -> VLANEncap(1) -> VLANEncap(ANNO, NATIVE_VLAN -1, ETHERTYPE 0x88a8) -> Discard;"),
    r("VLANDecap", "in -> VLANDecap -> VLANDecap(ETHERTYPE 0x88a8) -> VLANEncap(ANNO) -> Discard;"),
    r("EtherVLANEncap", "in -> EtherVLANEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, ANNO, NATIVE_VLAN 1) -> Discard;"),
    r("StripEtherVLANHeader", two!("in -> x :: StripEtherVLANHeader(-1);")),
    r("StripEtherVLANHeader", "in -> StripEtherVLANHeader -> StripEtherVLANHeader(5) -> Discard;"),
    r("SetVLANAnno", "in -> SetVLANAnno(VLAN_ID 7, VLAN_PCP 3) -> VLANEncap(ANNO) -> Discard;"),
    // standard/
    r("AverageCounter", "in -> AverageCounter -> Discard;"),
    r("BandwidthMeter", three!("in -> x :: BandwidthMeter(1000, 20000);")),
    r("BandwidthRatedSplitter", two!("in -> x :: BandwidthRatedSplitter(10kBps);")),
    r("BandwidthRatedUnqueue", "in -> Queue(64) -> BandwidthRatedUnqueue(100kBps) -> Discard;"),
    r("BandwidthShaper", two!("in -> Queue(64) -> x :: BandwidthShaper(100kBps);")),
    r("CheckPaint", two!("in -> x :: CheckPaint(0);")),
    r("Classifier", three!("in -> x :: Classifier(12/0800 23/06, 12/0806 20/0001, -);")),
    r("Classifier", two!("in -> x :: Classifier(12/8100 16/0800 !30/ff??%f0f0, 40/00);")),
    r("Counter", "in -> Counter -> Discard;"),
    r("DRRSched", "in -> t :: Tee(2); t[0] -> Queue(32) -> [0]x :: DRRSched; t[1] -> Queue(32) -> [1]x; x -> Discard;"),
    r("Discard", "in -> Discard;"),
    r("FlowPolicer", two!("in -> x :: FlowPolicer(100, CAPACITY 64);")),
    r("FlowPolicer", two!("in -> x :: FlowPolicer(10kBps, 3000);")),
    r("HashSwitch", three!("in -> x :: HashSwitch(26, 8);")),
    r("Idle", "in -> Idle;"),
    src("InfiniteSource", "x :: InfiniteSource(LIMIT 300, BURST 7, STOP true) -> Strip(14) -> MarkIPHeader -> Discard;"),
    src("InfiniteSource", "InfiniteSource(DATA \"\", LIMIT 100, STOP true) -> MarkIPHeader -> IPPrint(OUTFILE $D/empty.txt) -> Discard;"),
    src("InfiniteSource", "InfiniteSource(LENGTH 1600, LIMIT 100, STOP true) -> Discard;"),
    r("Meter", three!("in -> x :: Meter(1000, 20000);")),
    r("Null", "in -> Null -> Discard;"),
    r("Paint", "in -> Paint(7) -> Discard;"),
    r("WorkPackage", "in -> WorkPackage(W 10, N 20, R 50, PAYLOAD true, S 1) -> Discard;"),
    r("WorkPackage", "in -> WorkPackage(N 8, R 100) -> Discard;"),
    r("PaintSwitch", three!("in -> Paint(1) -> x :: PaintSwitch;")),
    r("PaintSwitch", two!("in -> Paint(255) -> x :: PaintSwitch;")),
    r("PaintSwitch", "in -> Paint(9) -> x :: PaintSwitch -> Discard;"),
    r("PaintTee", two!("in -> x :: PaintTee(0);")),
    r("Print", "in -> Print(hostile, -1, CONTENTS ASCII, TIMESTAMP true) -> Discard;"),
    r("Print", "in -> Print(h, 40) -> Discard;"),
    r("PrioSched", "in -> t :: Tee(2); t[0] -> Queue(32) -> [0]x :: PrioSched; t[1] -> Queue(32) -> [1]x; x -> Discard;"),
    r("PullTee", two!("in -> Queue(64) -> x :: PullTee(2);")),
    r("Queue", two!("in -> x :: Queue(16);")),
    r("RandomSwitch", three!("in -> x :: RandomSwitch;")),
    src("RatedSource", "RatedSource(RATE 1000, LIMIT 50, STOP true) -> Strip(14) -> CheckIPHeader -> Discard;"),
    r("RatedSplitter", two!("in -> x :: RatedSplitter(100);")),
    r("RatedUnqueue", "in -> Queue(64) -> RatedUnqueue(1000) -> Discard;"),
    r("RoundRobinSched", "in -> t :: Tee(2); t[0] -> Queue(32) -> [0]x :: RoundRobinSched; t[1] -> Queue(32) -> [1]x; x -> Discard;"),
    r("RoundRobinSwitch", three!("in -> x :: RoundRobinSwitch;")),
    r("SetTimestamp", "in -> SetTimestamp -> SetTimestamp(FIRST true) -> Discard;"),
    r("Shaper", two!("in -> Queue(64) -> x :: Shaper(100);")),
    r("SimpleQueue", two!("in -> x :: SimpleQueue(16);")),
    r("StaticSwitch", two!("in -> x :: StaticSwitch(1);")),
    r("Strip", "in -> Strip(14) -> Strip(30) -> Discard;"),
    r("StripToNetworkHeader", "in -> StripToNetworkHeader -> Discard;"),
    r("Switch", two!("in -> x :: Switch(1);")),
    r("Tee", three!("in -> x :: Tee(3);")),
    src("TimedSource", "TimedSource(0.001, LIMIT 20, STOP true) -> MarkIPHeader -> Discard;"),
    r("Truncate", "in -> Truncate(30) -> MarkIPHeader -> GetIPAddress(16) -> Discard;"),
    r("Unqueue", "in -> Queue(64) -> Unqueue(BURST -1) -> Discard;"),
    r("Unstrip", "in -> Strip(20) -> Unstrip(34) -> Discard;"),
    // standard/: queue classes, notifiers and the rest of Click's family
    r("FrontDropQueue", two!("in -> x :: FrontDropQueue(16);")),
    r("FullNoteQueue", two!("in -> x :: FullNoteQueue(16);")),
    r("MixedQueue", two!("in -> t :: Tee(2); t[0] -> [0]x :: MixedQueue(16); t[1] -> [1]x;")),
    r("MSQueue", two!("in -> x :: MSQueue(16);")),
    r("NotifierQueue", two!("in -> x :: NotifierQueue(16);")),
    r("QuickNoteQueue", "in -> QuickNoteQueue(16) -> Unqueue -> Discard;"),
    r("ThreadSafeQueue", two!("in -> x :: ThreadSafeQueue(16);")),
    r("Null1", "in -> Null1 -> Null2 -> Null3 -> Null4 -> Discard;"),
    r("Null2", "in -> Null2 -> Discard;"),
    r("Null3", "in -> Null3 -> Discard;"),
    r("Null4", "in -> Null4 -> Discard;"),
    r("Null5", "in -> Null5 -> Null6 -> Null7 -> Null8 -> Discard;"),
    r("Null6", "in -> Null6 -> Discard;"),
    r("Null7", "in -> Null7 -> Discard;"),
    r("Null8", "in -> Null8 -> Discard;"),
    r("PushNull", "in -> PushNull -> Discard;"),
    r("PullNull", "in -> Queue(16) -> PullNull -> Unqueue -> Discard;"),
    r("Align", "in -> Align(4, 2) -> Align(8, 0) -> Discard;"),
    r("Block", two!("in -> x :: Block(100);")),
    r("Burster", "in -> Queue(64) -> Burster(0.001) -> Discard;"),
    r("CheckCRC32", "in -> SetCRC32 -> CheckCRC32 -> Strip(1) -> CheckCRC32 -> Discard;"),
    r("CheckLength", two!("in -> x :: CheckLength(60);")),
    r("CompareBlock", two!("in -> x :: CompareBlock(1, 2, 10);")),
    r("CPUQueue", "in -> CPUQueue(16) -> Discard;"),
    r("CPUSwitch", two!("in -> x :: CPUSwitch;")),
    r("DiscardNoFree", "in -> DiscardNoFree;"),
    r("RandomBitErrors", "in -> RandomBitErrors(0.01) -> RandomBitErrors(1, clear) -> Discard;"),
    r("RandomSample", two!("in -> x :: RandomSample(0.5);")),
    r("SetAnnoByte", "in -> SetAnnoByte(PAINT, 3) -> Discard;"),
    r("SetCRC32", "in -> SetCRC32 -> Discard;"),
    r("SetPacketType", "in -> SetPacketType(OTHERHOST) -> Discard;"),
    r("StoreData", "in -> StoreData(30, \\<ffffffffffffffff>) -> StoreData(5000, x) -> Discard;"),
    r("Suppressor", "in -> t :: Tee(2); t[0] -> [0]s :: Suppressor; t[1] -> [1]s; s[0] -> Discard; s[1] -> Discard;"),
    r("SpinlockAcquire", "SpinlockInfo(l); in -> SpinlockAcquire(l) -> SpinlockPush(l) -> SpinlockRelease(l) -> Discard;"),
    r("SpinlockPush", "SpinlockInfo(l); in -> SpinlockPush(l) -> Discard;"),
    r("SpinlockRelease", "SpinlockInfo(l); in -> SpinlockRelease(l) -> Discard;"),
    src("SpinlockInfo", "SpinlockInfo(a, b); Idle -> Discard;"),
    src("FlowInfo", "i :: Idle -> d :: Discard; FlowInfo(i x/x);"),
    src("RandomSeed", "RandomSeed(9); RandomSource(64, 50, STOP true) -> Discard;"),
    src("RandomSource", "RandomSource(1500, 100, 4, STOP true) -> CheckIPHeader -> Discard;"),
    r("Clipboard", "in -> t :: Tee(2); t[0] -> [0]c :: Clipboard(0/2, 12/4, 40/8); t[1] -> [1]c; c[0] -> Discard; c[1] -> Discard;"),
    r("DelayShaper", "in -> Queue(64) -> DelayShaper(0.0001) -> Discard;"),
    r("DelayUnqueue", "in -> Queue(64) -> DelayUnqueue(0.0001) -> Discard;"),
    r("LinkUnqueue", "in -> Queue(64) -> LinkUnqueue(0.0001, 1GBps) -> Discard;"),
    r("TimedUnqueue", "in -> Queue(64) -> TimedUnqueue(0.001, 8) -> Discard;"),
    r("Unqueue2", "in -> q :: Queue(64) -> Unqueue2(4, QUIET true) -> q2 :: Queue(8) -> Unqueue2(0, QUEUES q2, QUIET true) -> Discard;"),
    r("StrideSched", "in -> t :: Tee(2); t[0] -> Queue(32) -> [0]x :: StrideSched(3, 1); t[1] -> Queue(32) -> [1]x; x -> Discard;"),
    r("StrideSwitch", three!("in -> x :: StrideSwitch(1, 2, 0);")),
    r("TimedSink", "in -> Queue(64) -> TimedSink(0.0001);"),
    r("SimpleIdle", "in -> SimpleIdle;"),
    r("SimplePrioSched", "in -> t :: Tee(2); t[0] -> Queue(32) -> [0]x :: SimplePrioSched; t[1] -> Queue(32) -> [1]x; x -> Discard;"),
    r("SimpleRoundRobinSched", "in -> t :: Tee(2); t[0] -> Queue(32) -> [0]x :: SimpleRoundRobinSched; t[1] -> Queue(32) -> [1]x; x -> Discard;"),
    r("PullSwitch", "in -> Queue(16) -> [1]s :: PullSwitch(1) -> Discard; Idle -> [0]s;"),
    r("SimplePullSwitch", "in -> Queue(16) -> s :: SimplePullSwitch -> Discard;"),
    r("StaticPullSwitch", "in -> Queue(16) -> [1]s :: StaticPullSwitch(1) -> Discard; Idle -> [0]s;"),
    r("Bypass", two!("in -> x :: Bypass(true);")),
    r("Bypass", "in -> b :: Bypass; b[1] -> Strip(4) -> [1]b; b -> Discard;"),
    r("Hub", "in -> t :: Tee(2); t[0] -> [0]h :: Hub; t[1] -> [1]h; h[0] -> Discard; h[1] -> Discard;"),
    r("InputSwitch", "in -> t :: Tee(2); t[0] -> [0]s :: InputSwitch(1); t[1] -> [1]s; s -> Discard;"),
    r("MarkMACHeader", "in -> MarkMACHeader(2, 14) -> StripToNetworkHeader -> Discard;"),
    r("Pad", "in -> Pad(1600) -> Pad -> Discard;"),
    r("Resize", "in -> Resize(-20, 30) -> Resize(HEAD 100, TAIL -2000) -> Discard;"),
    src("AlignmentInfo", "AlignmentInfo(x 4 2); x :: Idle -> Discard;"),
    src("AnnotationInfo", "AnnotationInfo(MINE 40 1); InfiniteSource(LIMIT 5, STOP true) -> Paint(3, ANNO MINE) -> Discard;"),
    src("ClickyInfo", "ClickyInfo(style); Idle -> Discard;"),
    src("DevirtualizeInfo", "DevirtualizeInfo(x); Idle -> Discard;"),
    src("Message", "Message(hello); Idle -> Discard;"),
    src("PortInfo", "PortInfo(web 80/tcp); Idle -> Discard;"),
    src("ScheduleInfo", "ScheduleInfo(s 2); s :: InfiniteSource(LIMIT 5, STOP true) -> Discard;"),
    // ip6/: translation and segment routing (IPv6 made from the hostile IPv4 by ProtocolTranslator46)
    r("ProtocolTranslator46", "in -> ProtocolTranslator46 -> ProtocolTranslator64 -> Discard;"),
    r("ProtocolTranslator46", "in -> ProtocolTranslator46(PREFIX 2001:db8:100::/40) -> Discard;"),
    r("ProtocolTranslator64", "in -> ProtocolTranslator64 -> Discard;"),
    r(
        "NPTv6",
        "x :: NPTv6(INTERNAL ::/64, EXTERNAL 2001:db8::/32); in -> ProtocolTranslator46 -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x; x[0] -> [1]x; x[1] -> Discard;",
    ),
    r(
        "NPTv6",
        "x :: NPTv6(INTERNAL ::/16, EXTERNAL 2001:db8:1:2300::/56); in -> ProtocolTranslator46 -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x; x[0] -> Discard; x[1] -> Discard; x[2] -> Discard;",
    ),
    r("ProtocolTranslator64", "in -> ProtocolTranslator46(PREFIX 64:ff9b::/96) -> ProtocolTranslator64(PREFIX 64:ff9b::/96) -> ProtocolTranslator46 -> Discard;"),
    r(
        "AddressTranslator",
        two!("x :: AddressTranslator(0, true, true, false, ::ffff:10.0.0.9 5000 5003); in -> ProtocolTranslator46 -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "AddressTranslator",
        two!("x :: AddressTranslator(1, true, ::ffff:10.0.0.1 22 ::ffff:1.1.1.1 2222, true, false, true, ::ffff:1.0.0.1); in -> ProtocolTranslator46 -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "AddressTranslator",
        two!("x :: AddressTranslator(0, true, false, false, ::ffff:1.0.0.1, ::ffff:1.0.0.2); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r("IP6SREncap", "in -> IP6SREncap(2001:db8::1, 2001:db8::2) -> Discard;"),
    r("IP6SREncap", "in -> ProtocolTranslator46 -> IP6SREncap(2001:db8::1, ENCAP_DST false) -> IP6SREncap(::1, SRC ::2) -> Discard;"),
    r("IP6SRProcess", two!("in -> ProtocolTranslator46 -> IP6SREncap(2001:db8::1, 2001:db8::2) -> x :: IP6SRProcess;")),
    r("IP6SRProcess", "in -> IP6SRProcess(2001:db8::1) -> Discard;"),
    r("IP6SRDecap", "in -> ProtocolTranslator46 -> IP6SREncap(2001:db8::1, 2001:db8::2) -> IP6SRProcess -> IP6SRDecap -> ProtocolTranslator64 -> Discard;"),
    r("IP6SRDecap", "in -> IP6SREncap(::1, SRC ::2) -> IP6SRDecap(FORCE_DECAP true) -> Discard;"),
    r("IP6SRDecap", "in -> IP6SRDecap -> Discard;"),
    // ip/
    r("CheckIPHeader", two!("in -> x :: CheckIPHeader(VERBOSE true, DETAILS true);")),
    r("CheckIPHeader", two!("in -> x :: CheckIPHeader(14, INTERFACES 10.0.0.1/24, BADSRC 1.2.3.4);")),
    r("CheckIPHeader2", two!("in -> x :: CheckIPHeader2(DETAILS true);")),
    r("DecIPTTL", two!("in -> x :: DecIPTTL(MULTICAST true);")),
    r("DirectIPLookup", three!("in -> x :: DirectIPLookup(10.0.0.0/8 0, 192.168.1.0/26 10.0.0.2 1, 0.0.0.0/0 2);")),
    r("DropBroadcasts", two!("in -> HostEtherFilter(00:01:02:03:04:05, DROP_OTHER false) -> x :: DropBroadcasts;")),
    r("FixIPSrc", "in -> Paint(1, 18) -> FixIPSrc(10.0.0.1) -> Discard;"),
    r("GetIPAddress", "in -> GetIPAddress(IP src) -> GetIPAddress(60) -> GetIPAddress(IP dst) -> Discard;"),
    r("ICMPError", "in -> ICMPError(10.0.0.1, unreachable, host) -> CheckIPHeader -> CheckICMPHeader -> Discard;"),
    r("ICMPError", "in -> ICMPError(10.0.0.1, unreachable, needfrag, MTU 576) -> Discard;"),
    r("ICMPError", "in -> ICMPError(10.0.0.1, parameterproblem) -> Discard;"),
    r("ICMPError", "in -> ICMPError(10.0.0.1, redirect, host) -> Discard;"),
    r("ICMPError", "in -> ICMPError(10.0.0.1, timeexceeded, SET_FIX_ANNO true, BADADDRS 10.0.0.255) -> FixIPSrc(10.9.9.9) -> Discard;"),
    r("ICMPPingResponder", two!("in -> x :: ICMPPingResponder;")),
    r("IPClassifier", three!("in -> x :: IPClassifier(tcp syn and dst port 80, udp port 53 or icmp type echo, -);")),
    r("IPClassifier", three!("in -> x :: IPClassifier(ip frag, tcp opt ack and not tcp opt syn, src net 100.64.0.0/10 and ip[9] = 6);")),
    r("IPEncap", "in -> IPEncap(4, 1.0.0.1, 2.0.0.2) -> CheckIPHeader -> Discard;"),
    r("IPEncap", "in -> IPEncap(gre, 1.0.0.1, DST_ANNO, DF true, ECT true) -> Discard;"),
    r("IPFilter", two!("in -> x :: IPFilter(allow tcp dst port 80, 1 udp, deny icmp type echo, allow ip frag, 1 all);")),
    r("IPFilter", two!("in -> x :: IPFilter(deny src net 2001:db8:bad::/48, allow tcp dst port 22 and (src net 10.0.0.0/8 or src net 2001:db8::/32), 1 icmp6 type neighbor-solicit or ip6 frag, 1 ip6 hlim < 2 and udp src port 53, allow ip6 nxt 0 and not transp[0:2] > 1024, deny all);")),
    r("IPFragmenter", two!("in -> x :: IPFragmenter(576);")),
    r("IPFragmenter", "in -> x :: IPFragmenter(68, HONOR_DF false) -> CheckIPHeader -> IPReassembler -> Discard;"),
    r("IPGWOptions", two!("in -> x :: IPGWOptions(10.0.0.1, 10.0.0.2 192.168.1.1);")),
    r("IPMirror", "in -> IPMirror -> Discard;"),
    r("IPPrint", "in -> IPPrint(hostile, CONTENTS HEX, ID true, TTL true, TOS true, LENGTH true, PAINT true, AGGREGATE true, OUTFILE $D/ipprint.txt) -> Discard;"),
    r("IPPrint", "in -> IPPrint(PAYLOAD ASCII, SWAP false, MAXLENGTH 7, OUTFILE $D/ipprint2.txt) -> Discard;"),
    r("IPReassembler", two!("in -> x :: IPReassembler;")),
    r("IPReassembler", two!("in -> x :: IPReassembler(HIMEM 3000);")),
    // ip6/ (the feeds are mostly IPv4: `Strip(14) -> MarkIP6Header` rows
    // make every frame an "IPv6 header", whatever its bytes)
    r("CheckIP6Header", two!("in -> x :: CheckIP6Header;")),
    r("CheckIP6Header", two!("in -> x :: CheckIP6Header(\"::1 2001:db8::1\", 14, PROCESS_EH true);")),
    r("DecIP6HLIM", two!("in -> x :: DecIP6HLIM;")),
    r("DecIP6HLIM", "in -> Strip(14) -> MarkIP6Header -> DecIP6HLIM -> Discard;"),
    r("GetIP6Address", "in -> GetIP6Address(24) -> IP6Encap(41, ::1, DST_ANNO) -> Discard;"),
    r("GetIP6Address", "in -> GetIP6Address(1900) -> Discard;"),
    r("IP6Drop", "in -> IP6Drop(P 0.3, R 0.4, H 0.5, K 0.9, SEED 7) -> IP6Drop(UNIFORM true) -> IP6Drop(DETERMINISTIC true, UDROPRATE 0.5) -> Discard;"),
    r("IP6Encap", "in -> IP6Encap(ipip, 2001:db8::1, 2001:db8::2, HLIM 1, CLASS 255) -> CheckIP6Header -> DecIP6HLIM -> Discard;"),
    r("ICMP6Error", "in -> ICMP6Error(2001:db8::ff, 3, 0) -> CheckIP6Header -> Discard;"),
    r("ICMP6Error", "in -> Strip(14) -> MarkIP6Header -> ICMP6Error(2001:db8::ff, 137, 0) -> Discard;"),
    r("ICMP6Error", "in -> Strip(14) -> MarkIP6Header -> ICMP6Error(2001:db8::ff, 2, 0, PMTU 1280) -> IP6Print(e, CONTENTS true) -> Discard;"),
    r("IP6Fragmenter", two!("in -> x :: IP6Fragmenter(1280);")),
    r("IP6Fragmenter", "in -> Strip(14) -> MarkIP6Header -> x :: IP6Fragmenter(60) -> CheckIP6Header(PROCESS_EH true) -> Discard; x[1] -> ICMP6Error(2001:db8::ff, 2, 0) -> Discard;"),
    r("IP6Fragmenter", "in -> MarkIP6Header(14) -> IP6Fragmenter(57) -> Discard;"),
    r("IP6Print", "in -> IP6Print(h, CONTENTS true, NBYTES 30) -> Discard;"),
    r("IP6Print", "in -> Strip(14) -> MarkIP6Header -> IP6Print -> Discard;"),
    r("IP6Mirror", "in -> IP6Mirror -> Discard;"),
    r("IP6Mirror", "in -> MarkIP6Header(14) -> IP6Mirror -> Discard;"),
    r("MarkIP6Header", "in -> MarkIP6Header(60) -> SetIP6DSCP(1) -> IP6Mirror -> Discard;"),
    r("SetIP6Address", "in -> SetIP6Address(2001:db8::9) -> IP6Encap(udp, ::1, DST_ANNO) -> Discard;"),
    r("SetIP6DSCP", "in -> SetIP6DSCP(63) -> Discard;"),
    r("SetIP6DSCP", "in -> Strip(14) -> MarkIP6Header -> SetIP6DSCP(0) -> Discard;"),
    r("LinearIPLookup", three!("in -> x :: LinearIPLookup(10.0.0.0/8 0, 192.168.1.0/26 10.0.0.2 1, 0.0.0.0/0 2);")),
    r("MarkIPHeader", "in -> MarkIPHeader(14) -> MarkIPHeader(60) -> IPPrint(OUTFILE $D/mark.txt) -> Discard;"),
    r("IPInputCombo", "in -> IPInputCombo(2, INTERFACES 10.0.0.1/24) -> Discard;"),
    r("IPInputCombo", "in -> Unstrip(14) -> IPInputCombo(0, 1.2.3.4 0.0.0.0, GOODDST 10.0.0.1) -> Discard;"),
    r(
        "IPOutputCombo",
        "in -> Paint(1) -> x :: IPOutputCombo(1, 10.0.0.1, 200); x[0] -> Discard; x[1] -> Discard; x[2] -> Discard; x[3] -> Discard; x[4] -> Discard;",
    ),
    r("LookupIPRouteMP", three!("in -> x :: LookupIPRouteMP(10.0.0.0/8 0, 192.168.1.0/26 10.0.0.2 1, 0.0.0.0/0 2);")),
    src("RIPSend", "RIPSend(1.0.0.1, 1.0.0.255, 10.0.0.0/8, 3) -> CheckIPHeader -> CheckUDPHeader -> Discard; DriverManager(wait 0.01);"),
    r("SetRandIPAddress", "in -> SetRandIPAddress(10.0.0.0/8) -> SetRandIPAddress(1.0.0.0/24, 5) -> Discard;"),
    r("TruncateIPPayload", "in -> TruncateIPPayload(3) -> TruncateIPPayload(0, false, EXTRA_LENGTH false) -> Discard;"),
    r("MarkIPCE", "in -> MarkIPCE -> MarkIPCE(FORCE true) -> Discard;"),
    r("SetIPDSCP", "in -> SetIPDSCP(63) -> SetIPECN(ce) -> Discard;"),
    r("SetIPECN", "in -> SetIPECN(ECT(1)) -> MarkIPCE -> Discard;"),
    r("RangeIPLookup", three!("in -> x :: RangeIPLookup(10.0.0.0/8 0, 192.168.1.0/26 10.0.0.2 1, 0.0.0.0/0 2);")),
    r("SortedIPLookup", three!("in -> x :: SortedIPLookup(10.0.0.0/8 0, 0.0.0.0/0 2, 192.168.1.0/26 10.0.0.2 1, 10.1.0.0/16 1);")),
    r("IPRateMonitor", "in -> IPRateMonitor(PACKETS, 1, 1, 100) -> Discard;"),
    r("IPRateMonitor", "in -> t :: Tee(2); m :: IPRateMonitor(BYTES, 0.5, 10); t[0] -> [0]m[0] -> Discard; t[1] -> [1]m[1] -> Discard;"),
    r("LinuxIPLookup", three!("in -> x :: LinuxIPLookup(lo, eth0);")),
    r("LinuxIPLookup", "in -> x :: LinuxIPLookup(lo, eth0); x[0] -> Discard; x[1] -> Discard;"),
    r("RadixIPLookup", three!("in -> x :: RadixIPLookup(10.0.0.0/8 0, 192.168.1.0/26 10.0.0.2 1, 0.0.0.0/0 2);")),
    r("RFC2507Comp", "in -> RFC2507Comp -> Discard;"),
    r("RFC2507Decomp", "in -> RFC2507Comp -> RFC2507Decomp -> Discard;"),
    r("RFC2507Decomp", "in -> RFC2507Decomp -> Discard;"),
    r("SetIPAddress", "in -> SetIPAddress(1.2.3.4) -> Discard;"),
    r("SetIPChecksum", "in -> SetIPChecksum -> Discard;"),
    r("StaticIPLookup", three!("in -> x :: StaticIPLookup(10.0.0.0/8 0, 192.168.1.0/26 10.0.0.2 1, 0.0.0.0/0 2);")),
    r("StoreIPAddress", "in -> StoreIPAddress(src) -> StoreIPAddress(9.9.9.9, dst) -> Discard;"),
    r("StoreIPAddress", two!("in -> x :: StoreIPAddress(60);")),
    r("StoreIPAddress", "in -> StoreIPAddress(1.2.3.4, 12) -> Discard;"),
    r("StripIPHeader", "in -> StripIPHeader -> Discard;"),
    r("UnstripIPHeader", "in -> StripIPHeader -> Strip(4) -> UnstripIPHeader -> Discard;"),
    // nfp/
    r(
        "NFPTag",
        "in -> NFPTag(3) -> c :: NFPCopy(orig, full, header); \
         m :: NFPMerge(orig src_ip, full payload dst_ip, header src_port dst_port, WINDOW 64) -> Discard; \
         c[0] -> [0]m; c[1] -> Strip(3) -> Unstrip(3) -> [1]m; c[2] -> [2]m;",
    ),
    r(
        "NFPCopy",
        "in -> NFPTag -> c :: NFPCopy(header, orig); \
         m :: NFPMerge(header dst_ip, orig, PRIORITY 1 0, WINDOW 2) -> Discard; \
         c[0] -> Strip(20) -> [0]m; c[1] -> [1]m;",
    ),
    r("NFPMerge", "in -> NFPMerge(orig src_ip dst_port) -> Discard;"),
    r("NFPEncap", "in -> NFPTag -> NFPEncap(2) -> NFPDecap -> NFPEncap -> Discard;"),
    r("NFPDecap", "in -> NFPDecap -> Discard;"),
    r(
        "NFPMergerSwitch",
        "in -> NFPTag(MERGERS 3) -> s :: NFPMergerSwitch; s[0] -> Discard; s[1] -> Discard;",
    ),
    // tcpudp/
    r("CheckICMPHeader", two!("in -> x :: CheckICMPHeader(VERBOSE true, DETAILS true);")),
    r("CheckTCPHeader", two!("in -> x :: CheckTCPHeader(VERBOSE true, DETAILS true);")),
    r("CheckUDPHeader", two!("in -> x :: CheckUDPHeader(VERBOSE true, DETAILS true);")),
    r(
        "IPRewriter",
        two!("x :: IPRewriter(pattern 10.0.0.1 1024-65535# - - 0 1, keep 0 1, CAPACITY 64); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "IPRewriter",
        three!("x :: IPRewriter(pass 2, drop, pattern - - 10.0.0.9 80 0 1, MAPPING_CAPACITY 16); in -> t :: Tee(3); t[0] -> [0]x; t[1] -> [1]x; t[2] -> [2]x;"),
    ),
    r(
        "IPRewriter",
        three!("x :: IPRewriter(pattern 2001:db8::1 1024-1030# - - 0 1, pattern - - 2001:db8::9 80 0 1, pass 2, CAPACITY 8); in -> t :: Tee(3); t[0] -> [0]x; t[1] -> [1]x; t[2] -> [2]x;"),
    ),
    r(
        "IPRewriterPatterns",
        two!("IPRewriterPatterns(nat 10.0.0.1 1024-1030 - -); x :: UDPRewriter(pattern nat 0 1, keep 0 1); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "RoundRobinIPMapper",
        two!("m :: RoundRobinIPMapper(10.0.0.1 - - - 0 1, 10.0.0.2 1024-1030 - - 0 1); x :: IPRewriter(m, keep 0 1); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "SourceIPHashMapper",
        two!("m :: SourceIPHashMapper(5 1, - - 10.0.0.1 80 0 1 1, - - 10.0.0.2 80 0 1 2); x :: TCPRewriter(m, keep 0 1); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "MaglevIPMapper",
        two!("m :: MaglevIPMapper(- - 10.1.0.1 80 0 1, b2 - - 10.1.0.2 80 0 1, TABLE_SIZE 251); x :: IPRewriter(m, keep 0 1); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "MaglevIPMapper",
        two!("m :: MaglevIPMapper(b1 - - 10.1.0.1 80 0 1, b6 - - 2001:db8:1::1 80 0 1, b7 - - 2001:db8:1::2 8080 0 1, TABLE_SIZE 251); x :: IPRewriter(m, keep 0 1); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "SourceIPHashMapper",
        two!("m :: SourceIPHashMapper(5 1, - - 2001:db8::1 80 0 1 1, - - 2001:db8::2 80 0 1 2); x :: UDPRewriter(m, keep 0 1); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r("SetTCPChecksum", "in -> SetTCPChecksum -> Discard;"),
    r("SetTCPChecksum", "in -> SetTCPChecksum(FIXOFF true) -> CheckTCPHeader -> Discard;"),
    r("SetUDPChecksum", two!("in -> x :: SetUDPChecksum;")),
    r(
        "TCPRewriter",
        two!("x :: TCPRewriter(pattern 10.0.0.1 1024-65535# - - 0 1, keep 0 1); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "TCPRewriter",
        two!("x :: TCPRewriter(pattern 2001:db8::1 1024-65535# - - 0 1, keep 0 1); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r("DynamicUDPIPEncap", "in -> DynamicUDPIPEncap(1.0.0.1, 1234, 2.0.0.2, 5678, true, 3) -> CheckIPHeader -> CheckUDPHeader -> Discard;"),
    r("TCPFragmenter", "in -> TCPFragmenter(MTU 60) -> Discard;"),
    r("TCPFragmenter", "in -> Paint(30, 40) -> TCPFragmenter(MTU 1500, MTU_ANNO 40) -> CheckIPHeader -> Discard;"),
    src("TCPIPSend", "x :: TCPIPSend -> CheckIPHeader -> CheckTCPHeader -> Discard; DriverManager(write x.send 1.0.0.1 20 2.0.0.2 80 1 2 18 300, write x.send 1.0.0.1 20 2.0.0.2 80 1 2 2 1 true);"),
    src("FastUDPSource", "FastUDPSource(0, 300, 100, 0:0:0:0:0:1, 1.0.0.1, 1234, 0:0:0:0:0:2, 2.0.0.2, 5678, true, 7) -> Unqueue -> Strip(14) -> CheckIPHeader -> CheckUDPHeader -> Discard; DriverManager(wait 0.02);"),
    src("FastUDPSourceIP6", "FastUDPSourceIP6(0, 300, 100, 0:0:0:0:0:1, ::1, 1234, 0:0:0:0:0:2, ::2, 5678, true, 7) -> Unqueue -> Strip(14) -> CheckIP6Header -> Discard; DriverManager(wait 0.02);"),
    src("FastUDPFlows", "FastUDPFlows(0, 300, 100, 0:0:0:0:0:1, 1.0.0.1, 0:0:0:0:0:2, 2.0.0.2, 10, 5) -> Unqueue -> Strip(14) -> CheckIPHeader -> CheckUDPHeader -> Discard; DriverManager(wait 0.02);"),
    src("FastTCPFlows", "FastTCPFlows(0, 300, 100, 0:0:0:0:0:1, 1.0.0.1, 0:0:0:0:0:2, 2.0.0.2, 10, 5) -> Unqueue -> Strip(14) -> CheckIPHeader -> CheckTCPHeader -> Discard; DriverManager(wait 0.02);"),
    r("UDPIPEncap", "in -> UDPIPEncap(1.0.0.1, 1234, 2.0.0.2, 5678) -> CheckUDPHeader -> Discard;"),
    r("UDPIPEncap", "in -> UDPIPEncap(1.0.0.1, 1234, DST_ANNO, 5678, false) -> Discard;"),
    r("UDPIP6Encap", "in -> UDPIP6Encap(2001:db8::1, 1234, 2001:db8::2, 5678) -> CheckIP6Header -> Discard;"),
    r("UDPIP6Encap", "in -> UDPIP6Encap(2001:db8::1, 1234, DST_ANNO, 5678) -> Discard;"),
    r(
        "UDPRewriter",
        two!("x :: UDPRewriter(pattern 10.0.0.1 1024-65535# - - 0 1, keep 0 1); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "UDPRewriter",
        two!("x :: UDPRewriter(pattern 2001:db8::1 1024-65535# - - 0 1, keep 0 1); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "IPAddrRewriter",
        two!("x :: IPAddrRewriter(pattern 10.0.0.1-10.0.0.2# - 0 1, keep 0 1); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "IPAddrPairRewriter",
        three!("x :: IPAddrPairRewriter(pattern 10.0.0.1-10.0.0.2# - 0 1, pass 2, keep 0 1); in -> t :: Tee(3); t[0] -> [0]x; t[1] -> [1]x; t[2] -> [2]x;"),
    ),
    r(
        "IPAddrRewriter",
        two!("x :: IPAddrRewriter(pattern 2001:db8::9 - 0 1, pass 1, CAPACITY 3); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "IPAddrPairRewriter",
        two!("x :: IPAddrPairRewriter(pattern 2001:db8::9 2001:db8::1 0 1, keep 0 1, CAPACITY 3); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "FTPPortMapper",
        two!("x :: TCPRewriter(pattern 10.0.0.1 9000-14000# - - 0 1, keep 0 1); in -> t :: Tee(2); t[0] -> FTPPortMapper(x, x, 0) -> [0]x; t[1] -> [1]x;"),
    ),
    // analysis/
    r("AggregateCounter", two!("in -> x :: AggregateCounter(AGGREGATE_FREEZE 3, BYTES true, IP_BYTES true);")),
    r("AggregateCounter", "in -> AggregateIPFlows -> AggregateCounter(COUNT_FREEZE 100) -> Discard;"),
    r("AggregateIPFlows", two!("in -> x :: AggregateIPFlows(ICMP true, UDP_TIMEOUT 0.001, TCP_TIMEOUT 0.002, FRAGMENT_TIMEOUT 0, REAP 0);")),
    r("AggregateIPFlows", "in -> AggregateIPFlows(TRACEINFO $D/flows.xml) -> Discard;"),
    r("AggregateFilter", three!("in -> AggregateIPFlows -> x :: AggregateFilter(1 1-5, drop 6, allow 7 9, 2 all);")),
    r("AggregateFirst", two!("in -> AggregateIPFlows -> x :: AggregateFirst;")),
    r("AggregateIP", two!("in -> x :: AggregateIP(ip src/8, INCREMENTAL true);")),
    r("AggregateIP", "in -> AggregateIP(tcp flags) -> AggregateIP(data[0:4]) -> AggregateIP(icmp type, UNSHIFT_IP_ADDR true) -> Discard;"),
    r("AggregateIPAddrPair", two!("in -> x :: AggregateIPAddrPair(TIMEOUT 0.001, REAP 0);")),
    r("AggregateLast", "in -> AggregateIPAddrPair -> x :: AggregateLast -> Discard; x[1] -> Discard; DriverManager(wait, write x.clear);"),
    r("AggregateLength", two!("in -> x :: AggregateLength(IP true);")),
    r("AggregatePacketCounter", "in -> AggregateIPFlows -> Paint(0xFF, 40) -> AggregatePacketCounter -> Discard;"),
    r("AggregatePacketCounter", "in -> t :: Tee(2); t[0] -> AggregateLength -> [0]x :: AggregatePacketCounter(ANNO 12); t[1] -> [1]x; x[0] -> Discard; x[1] -> Discard;"),
    r("AggregatePaint", "in -> AggregatePaint(3, INCREMENTAL true) -> AggregatePaint -> Discard;"),
    r("AnonymizeIPAddr", two!("in -> x :: AnonymizeIPAddr(CLASS 4, PRESERVE_8 10 18);")),
    r("EraseIPPayload", "in -> EraseIPPayload -> Discard;"),
    r("StoreUDPTimeSeqRecord", "in -> StoreUDPTimeSeqRecord(14) -> StoreUDPTimeSeqRecord(14, DELTA true) -> Discard;"),
    r("StoreUDPTimeSeqRecord", "in -> StoreUDPTimeSeqRecord(0) -> Discard;"),
    r("AdjustTimestamp", "in -> AdjustTimestamp(-1.5) -> AdjustTimestamp(0.25, FIRST true, ALL true) -> Discard;"),
    r("SetTimestampDelta", "in -> SetTimestampDelta -> SetTimestampDelta(TYPE NOW) -> SetTimestampDelta(TYPE FIRST) -> Discard;"),
    r("StoreTimestamp", "in -> StoreTimestamp(TAIL true) -> StoreTimestamp(OFFSET 1900) -> StoreTimestamp(3) -> Discard;"),
    r("TimeFilter", two!("in -> x :: TimeFilter(START_AFTER 0.001, INTERVAL 0.002);")),
    r("TimeFilter", "in -> TimeFilter(END_AFTER 0.003) -> Discard;"),
    r("TimeRange", "in -> TimeRange -> TimeRange(SIMPLE true) -> Discard;"),
    r(
        "TimeSortedSched",
        "in -> t :: Tee(2); t[0] -> AdjustTimestamp(0.5) -> Queue(64) -> [0]x :: TimeSortedSched(BUFFER 4); t[1] -> Queue(64) -> [1]x; x -> Discard;",
    ),
    r("TimestampAccum", "in -> TimestampAccum -> Discard;"),
    // userlevel/ sockets: loopback and scratch files only (hostile
    // destination annotations must not reach the network)
    r("Socket", "in -> Socket(UDP, 127.0.0.1, 9, CLIENT true);"),
    r("Socket", "in -> Queue(64) -> Socket(UDP, 127.0.0.1, 9, BURST 8, SNDBUF 4096);"),
    r("Socket", "in -> Socket(UNIX_DGRAM, $D/nobody.sock, CLIENT true);"),
    r("Socket", "in -> Socket(TCP, 127.0.0.1, 0, VERBOSE true) -> Discard;"),
    r("FromSocket", "in -> FromSocket(UDP, 127.0.0.1, 0) -> Discard;"),
    r("ToSocket", "in -> Queue(64) -> ToSocket(UDP, 127.0.0.1, 9);"),
    r("ChatterSocket", "ChatterSocket(UNIX, $D/chat.sock); in -> Print(hostile, 64) -> IPPrint(h) -> Discard;"),
    // Run in a fresh network namespace (see IN_NETNS): every send fails
    // with no route, nothing leaves. The first row opens flows for the
    // valid TCP/UDP packets; the second gives hostile headers aggregates
    // (the source address), with userspace reply matching.
    r("IPFlowRawSockets", "in -> af :: AggregateIPFlows -> IPFlowRawSockets(NOTIFIER af, MAX_FLOWS 16, BURST 8) -> Discard;"),
    r("IPFlowRawSockets", "in -> AggregateIP(ip src) -> Queue(64) -> IPFlowRawSockets(PCAP false, MAX_FLOWS 4, TIMEOUT 0.001) -> Discard;"),
    r("McastSocket", "in -> McastSocket(239.255.91.1, 9, 127.0.0.1, LOOP false) -> Discard;"),
    r("McastSocket", "in -> Queue(64) -> McastSocket(239.255.91.2, 9, 127.0.0.1, BURST 4);"),
    // app/
    r("ToDump", "in -> ToDump($D/out.pcap);"),
    r("ToDump", "in -> t :: ToDump($D/out2.pcap, SNAPLEN 40, ENCAP IP, NANO true) -> Discard;"),
    r(
        "ToIPSummaryDump",
        "in -> ToIPSummaryDump($D/sum.txt, FIELDS timestamp ntimestamp ts_sec ts_usec ts_usec1 first_timestamp count link paint direction aggregate wire_len ip_src ip_dst ip_tos ip_dscp ip_ecn ip_ttl ip_frag ip_fragoff ip_id ip_sum ip_proto ip_hl ip_len ip_capture_len sport dport tcp_seq tcp_ack tcp_off tcp_flags tcp_window tcp_urp udp_len eth_src eth_dst eth_type icmp_type icmp_code icmp_type_name icmp_code_name icmp_flowid icmp_seq icmp_nextmtu payload_len payload ip_opt tcp_opt tcp_ntopt tcp_sack payload_md5 payload_md5_hex);",
    ),
    r(
        "ToIPSummaryDump",
        "in -> ToIPSummaryDump($D/sum.bin, BINARY true, FIELDS ip_src ip_dst sport dport ip_proto tcp_flags ip_len payload_len icmp_type icmp_code tcp_seq ip_opt tcp_opt payload_md5) -> Discard;",
    ),
    src(
        "FromIPSummaryDump",
        "FromIPSummaryDump($D/hostile.ipsum, STOP true) -> CheckIPHeader -> CheckTCPHeader -> Discard;",
    ),
    src(
        "FromIPSummaryDump",
        "FromIPSummaryDump($D/hostile.ipsum, STOP true, CHECKSUM true, MULTIPACKET true) -> IPPrint(OUTFILE $D/fromsum.txt) -> Discard;",
    ),
    r(
        "ToIPFlowDumps",
        "in -> AggregateIPFlows(ICMP true) -> ToIPFlowDumps($D/flows/%n-%p-%S.txt, TCP_OPT true, IP_ID true, TCP_WINDOW true) -> Discard;",
    ),
    r(
        "ToIPFlowDumps",
        "in -> agg :: AggregateIPFlows(UDP_TIMEOUT 0.001, TCP_TIMEOUT 0.002, REAP 0) -> ToIPFlowDumps($D/flownote/%n, NOTIFIER agg, MINCOUNT 2) -> Discard;",
    ),
    r(
        "ToIPFlowDumps",
        "in -> AggregateIPFlows -> Paint(1) -> ToIPFlowDumps($D/flowbin/%04x.%.0s, BINARY true, ALL_TCP_OPT true, ABSOLUTE_SEQ true, MINCOUNT 2);",
    ),
    src("FromCapDump", "FromCapDump($D/hostile.cap, STOP true) -> CheckIPHeader -> CheckTCPHeader -> Discard;"),
    src(
        "FromCapDump",
        "FromCapDump($D/hostile.cap, STOP true, CHECKSUM true, SAMPLE 0.5) -> IPPrint(OUTFILE $D/cap.txt) -> Discard;",
    ),
    src("FromNetFlowSummaryDump", "FromNetFlowSummaryDump($D/hostile.netflow, STOP true) -> CheckIPHeader -> Discard;"),
    src(
        "FromNetFlowSummaryDump",
        "FromNetFlowSummaryDump($D/small.netflow, STOP true, MULTIPACKET true, LINK both) -> IPPrint(OUTFILE $D/netflow.txt) -> Discard;",
    ),
    src(
        "FromNetFlowSummaryDump",
        "FromNetFlowSummaryDump($D/hostile.netflow, STOP true) -> Queue(8) -> Discard;",
    ),
    src("FromTcpdump", "FromTcpdump($D/hostile.tcpdump, STOP true) -> CheckIPHeader -> Discard;"),
    src(
        "FromTcpdump",
        "FromTcpdump($D/hostile.tcpdump, STOP true, CHECKSUM true) -> IPPrint(OUTFILE $D/fromtcpdump.txt) -> Discard;",
    ),
    bad_file("FromDump", "FromDump($D/bad0.pcap, STOP true) -> Discard;"),
    bad_file("FromDump", "FromDump($D/bad1.pcap, STOP true) -> Discard;"),
    bad_file("FromDump", "FromDump($D/bad2.pcap, STOP true) -> Discard;"),
    bad_file("FromDump", "FromDump($D/bad3.pcap, STOP true) -> Discard;"),
    bad_file("FromDump", "FromDump($D/bad4.pcap, STOP true, FORCE_IP true) -> Discard;"),
    bad_file("FromDump", "FromDump($D/bad5.pcap, STOP true) -> Discard;"),
    bad_file("FromDump", "FromDump($D/bad6.pcap, STOP true, MMAP false) -> Discard;"),
    bad_file("FromDump", "FromDump($D/bad7.pcap, STOP true) -> Discard;"),
    src("FromDAGDump", "FromDAGDump($D/hostile.erf, STOP true) -> Strip(14) -> CheckIPHeader -> Discard;"),
    src(
        "FromDAGDump",
        "x :: FromDAGDump($D/hostile.erf, STOP true, FORCE_IP true, SAMPLE 0.5) -> CheckIPHeader -> Discard; x[1] -> Discard;",
    ),
    src("FromDAGDump", "FromDAGDump($D/hostile.erf, STOP true, ENCAP ETHER) -> Queue(8) -> Discard;"),
    src("FromDAGDump", "FromDAGDump($D/hostile.dag, STOP true, ENCAP SUNATM) -> Discard;"),
    src(
        "FromNLANRDump",
        "x :: FromNLANRDump($D/hostile.tsh, STOP true) -> CheckIPHeader -> CheckTCPHeader -> Discard; x[1] -> Discard;",
    ),
    src(
        "FromNLANRDump",
        "FromNLANRDump($D/hostile.tsh, STOP true, FORMAT fr+, SAMPLE 0.5) -> IPPrint(OUTFILE $D/tsh.txt) -> Discard;",
    ),
    src("FromNLANRDump", "FromNLANRDump($D/hostile.tsh, STOP true, FORMAT fr) -> Discard;"),
    // icmp/
    r(
        "ICMPPingRewriter",
        two!("x :: ICMPPingRewriter(pattern 10.0.0.3 1024-65535# - - 0 1, drop); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "ICMPPingRewriter",
        two!("x :: ICMPPingRewriter(pattern 2001:db8::9 1-3# - - 0 1, pass 1, CAPACITY 4); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "ICMPRewriter",
        "rw :: IPRewriter(keep 0 1, keep 0 1); pr :: ICMPPingRewriter(keep 0 1); ar :: IPAddrRewriter(keep 0 1); \
         in -> t :: Tee(5); t[0] -> [0]rw; t[1] -> [1]rw; t[2] -> pr; t[3] -> ar; t[4] -> x :: ICMPRewriter(rw pr ar); \
         rw[0] -> Discard; rw[1] -> Discard; pr[0] -> Discard; pr[1] -> Discard; ar[0] -> Discard; ar[1] -> Discard; \
         x[0] -> Discard; x[1] -> Discard;",
    ),
    r(
        "ICMPRewriter",
        "rw :: IPRewriter(pattern 2001:db8::9 1-4# - - 0 1, keep 0 1); pr :: ICMPPingRewriter(pattern 2001:db8::9 1-4# - - 0 1); \
         ar :: IPAddrRewriter(keep 0 1); ap :: IPAddrPairRewriter(pattern 2001:db8::9 - 0 1); \
         in -> t :: Tee(6); t[0] -> [0]rw; t[1] -> [1]rw; t[2] -> pr; t[4] -> ar; t[5] -> ap; \
         t[3] -> x :: ICMPRewriter(rw:0 pr ap ar, DST_ANNO true, REPLY_ANNO 3); \
         rw[0] -> Discard; rw[1] -> Discard; pr[0] -> Discard; pr[1] -> Discard; ar[0] -> Discard; ar[1] -> Discard; \
         ap[0] -> Discard; ap[1] -> Discard; x[0] -> Discard; x[1] -> Discard;",
    ),
    r("ICMPIPEncap", "in -> ICMPIPEncap(1.0.0.1, 2.0.0.2, timestamp) -> CheckIPHeader -> CheckICMPHeader -> Discard;"),
    r("ICMPIPEncap", "in -> ICMPIPEncap(1.0.0.1, 2.0.0.2, unreachable, host) -> Discard;"),
    r("ICMPPingSource", "in -> x :: ICMPPingSource(1.0.0.1, 2.0.0.2, INTERVAL 0.001, LIMIT 5, VERBOSE false, MIRROR true) -> Discard;"),
    src("ICMPPingSource", "ICMPPingSource(1.0.0.1, 2.0.0.2, DATA \"xyz\", LIMIT 5, STOP true) -> Unqueue -> CheckIPHeader -> CheckICMPHeader -> Discard;"),
    r("ICMPPingEncap", "in -> ICMPPingEncap(1.0.0.1, 2.0.0.2, IDENTIFIER 9) -> ICMPPingResponder -> Discard;"),
    // aqm/
    r("RED", "in -> x :: RED(5, 50, 0.02) -> Queue(100) -> Discard; x[1] -> Discard;"),
    r("AdaptiveRED", "in -> x :: AdaptiveRED(20, 0.1) -> Queue(100) -> Discard; x[1] -> Discard;"),
    r("CoDel", "in -> SetTimestamp(FIRST true) -> Queue(100) -> CoDel(0.000001, 0.00001) -> Discard;"),

    // ids/
    r("IDSMatcher", two!("in -> x :: IDSMatcher($D/ids.rules, LOG $D/ids.log);")),
    // stateful/
    r(
        "CGNAT",
        three!("x :: CGNAT(EXTERNAL 198.51.100.4/30, INTERNAL 100.64.0.0/24, PORTS 1024-1087, BLOCK_SIZE 16, BLOCKS_PER_SUBSCRIBER 2, HAIRPIN true, LOG $D/cgnat.log); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "NAT64",
        three!("x :: NAT64(POOL 198.51.100.4/30, PORTS 1024-1087, BLOCK_SIZE 16, BLOCKS_PER_SUBSCRIBER 2, FILTERING address, LOG $D/nat64.log); in -> t :: Tee(3); t[0] -> ProtocolTranslator46(PREFIX 64:ff9b::/96) -> [0]x; t[1] -> [1]x; t[2] -> [0]x;"),
    ),
    r(
        "NAT64",
        "x :: NAT64(198.51.100.1-198.51.100.2, PREFIX 2001:db8:64::/64, CAPACITY 8); in -> t :: Tee(2); t[0] -> ProtocolTranslator46(PREFIX 2001:db8:64::/64) -> [0]x; t[1] -> [1]x; x[0] -> Discard; x[1] -> Discard;",
    ),
    r(
        "FlowMonitor",
        two!("in -> x :: FlowMonitor(CAPACITY 8, INACTIVE_TIMEOUT 0.001, ACTIVE_TIMEOUT 0.002);"),
    ),
    // vpn/: the receive side on the trace's UDP flows (ports 53 and 4500),
    // the send side on everything.
    r(
        "WireGuard",
        two!("x :: WireGuard(CONFIG $D/wg.conf, ADDRESS 192.0.2.1, PORT 53); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r(
        "WireGuard",
        two!("x :: WireGuard(CONFIG $D/wg.conf, ADDRESS 192.0.2.1, PORT 4500, MTU 576); in -> t :: Tee(2); t[0] -> [1]x; t[1] -> [0]x;"),
    ),
    r(
        "PPPoEServer",
        "x :: PPPoEServer(MAC 02:00:00:00:00:aa, SUBSCRIBERS $D/bras.subs, POOL 10.64.0.0/24, LOCAL 10.64.0.1, CAPACITY 8, ACCOUNTING $D/bras.acct); \
         in -> t :: Tee(4); t[0] -> [0]x; t[1] -> StoreData(12, \\<88631109>) -> [0]x; \
         t[2] -> StoreData(12, \\<88641100 0001>) -> [0]x; t[3] -> [1]x; x[0] -> Discard; x[1] -> Discard;",
    ),
    r(
        "StatefulFirewall",
        three!("x :: StatefulFirewall(CAPACITY 64); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    // ip6/ route lookup and ethernet/ neighbor discovery
    r(
        "LookupIP6Route",
        three!("in -> x :: LookupIP6Route(::/0 0, 2001:db8::/32 fe80::1 1, ::ffff:0:0/96 2, a00::/8 fe80::2 1, 2001:db8::1 2);"),
    ),
    r(
        "IP6NDSolicitor",
        two!("x :: IP6NDSolicitor(2001:db8::1, 02:00:00:00:00:01, CAPACITY 8); in -> t :: Tee(2); t[0] -> [0]x; t[1] -> [1]x;"),
    ),
    r("IP6NDAdvertiser", "in -> IP6NDAdvertiser(::/0 02:00:00:00:00:01, 2001:db8::1 02:00:00:00:00:02) -> Discard;"),
    // end ip6 route lookup and neighbor discovery
];

// ---------------------------------------------------------------------------
// The hostile trace.

/// xorshift64*: deterministic, no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn fill(&mut self, v: &mut [u8]) {
        for b in v {
            *b = self.byte();
        }
    }
}

fn csum(data: &[u8], init: u32) -> u16 {
    let mut s = init;
    let mut i = 0;
    while i + 1 < data.len() {
        s += u32::from(u16::from_be_bytes([data[i], data[i + 1]]));
        i += 2;
    }
    if i < data.len() {
        s += u32::from(data[i]) << 8;
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// A flow of the trace: (proto, src, sport, dst, dport).
type Flow = (u8, [u8; 4], u16, [u8; 4], u16);

const FLOWS: &[Flow] = &[
    (17, [192, 168, 1, 10], 1234, [8, 8, 8, 8], 53),
    (6, [192, 168, 1, 11], 40000, [93, 184, 216, 34], 80),
    (6, [100, 64, 0, 5], 5555, [198, 51, 100, 100], 443),
    (17, [100, 64, 0, 6], 6000, [203, 0, 113, 9], 4500),
    (6, [10, 0, 0, 7], 2121, [1, 2, 3, 4], 21),
    (1, [100, 64, 0, 7], 77, [8, 8, 4, 4], 77),
    (1, [192, 168, 1, 12], 99, [10, 0, 0, 3], 99),
    (6, [10, 0, 0, 1], 1024, [192, 168, 1, 11], 40000),
];

const ETH_DST: [u8; 6] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05];
const ETH_SRC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];

fn ether(out: &mut Vec<u8>, ty: u16, rng: &mut Rng) {
    let dst: [u8; 6] = match rng.below(10) {
        0 => [0xff; 6],
        1 => [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01],
        2 => ETH_SRC,
        3 => [0x02, 0x55, 0x55, 0x55, 0x55, 0x55],
        _ => ETH_DST,
    };
    out.extend_from_slice(&dst);
    out.extend_from_slice(&ETH_SRC);
    out.extend_from_slice(&ty.to_be_bytes());
}

/// Transport bytes of `flow` (header and payload), checksum left to fix.
fn transport(flow: &Flow, reply: bool, rng: &mut Rng, payload: &[u8]) -> Vec<u8> {
    let (proto, _, sport, _, dport) = *flow;
    let (sp, dp) = if reply {
        (dport, sport)
    } else {
        (sport, dport)
    };
    let mut t = Vec::with_capacity(64 + payload.len());
    match proto {
        6 => {
            t.extend_from_slice(&sp.to_be_bytes());
            t.extend_from_slice(&dp.to_be_bytes());
            t.extend_from_slice(&(rng.next() as u32).to_be_bytes());
            t.extend_from_slice(&(rng.next() as u32).to_be_bytes());
            let flags = [0x02u8, 0x12, 0x10, 0x18, 0x11, 0x04, 0x01, 0x3f][rng.below(8)];
            let opts = rng.chance(30);
            let doff = if opts { 8u8 } else { 5 };
            t.push(doff << 4);
            t.push(flags);
            t.extend_from_slice(&[0x20, 0x00, 0, 0, 0, 0]);
            if opts {
                // MSS, SACK, timestamp: often with bad lengths.
                let mut o = [0u8; 12];
                match rng.below(4) {
                    0 => o.copy_from_slice(&[2, 4, 5, 0xb4, 1, 1, 4, 2, 8, 10, 0, 0]),
                    1 => o.copy_from_slice(&[5, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
                    2 => o.copy_from_slice(&[8, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
                    _ => rng.fill(&mut o),
                }
                t.extend_from_slice(&o);
            }
        }
        17 => {
            t.extend_from_slice(&sp.to_be_bytes());
            t.extend_from_slice(&dp.to_be_bytes());
            t.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
            t.extend_from_slice(&[0, 0]);
        }
        _ => {
            // ICMP echo (request, or reply for replies); sport is the ID.
            t.push(if reply { 0 } else { 8 });
            t.push(0);
            t.extend_from_slice(&[0, 0]);
            t.extend_from_slice(&sport.to_be_bytes());
            t.extend_from_slice(&(rng.below(5) as u16).to_be_bytes());
        }
    }
    t.extend_from_slice(payload);
    t
}

/// An IPv4 header (with options) plus `l4`, checksums set.
fn ipv4(
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
    options: &[u8],
    l4: &[u8],
    rng: &mut Rng,
) -> Vec<u8> {
    let hl = 20 + options.len();
    let total = hl + l4.len();
    let mut v = Vec::with_capacity(total);
    v.push(0x40 | (hl / 4) as u8);
    v.push(0);
    v.extend_from_slice(&(total as u16).to_be_bytes());
    v.extend_from_slice(&(rng.below(4) as u16).to_be_bytes());
    v.extend_from_slice(&[0, 0]);
    v.push(64);
    v.push(proto);
    v.extend_from_slice(&[0, 0]);
    v.extend_from_slice(&src);
    v.extend_from_slice(&dst);
    v.extend_from_slice(options);
    let s = csum(&v, 0);
    v[10..12].copy_from_slice(&s.to_be_bytes());
    let mut l4 = l4.to_vec();
    let off = match proto {
        6 => Some(16),
        17 => Some(6),
        1 => Some(2),
        _ => None,
    };
    if let Some(off) = off {
        if l4.len() >= off + 2 {
            let mut pseudo = 0u32;
            if proto != 1 {
                for w in [&src[..2], &src[2..], &dst[..2], &dst[2..]] {
                    pseudo += u32::from(u16::from_be_bytes([w[0], w[1]]));
                }
                pseudo += u32::from(proto) + l4.len() as u32;
            }
            let s = csum(&l4, pseudo);
            l4[off..off + 2].copy_from_slice(&s.to_be_bytes());
        }
    }
    v.extend_from_slice(&l4);
    v
}

/// IP options, usually with something wrong.
fn options(rng: &mut Rng) -> Vec<u8> {
    let n = 4 * rng.below(11);
    let mut o = vec![0u8; n];
    let mut i = 0;
    while i < n {
        let kind = [0u8, 1, 7, 68, 130, 131, 137, 148, 25, rng.byte()][rng.below(10)];
        o[i] = kind;
        if i + 1 < n {
            o[i + 1] = match rng.below(5) {
                0 => 0,
                1 => 1,
                2 => 255,
                3 => (n - i) as u8,
                _ => rng.byte(),
            };
        }
        if i + 2 < n {
            o[i + 2] = [4u8, 5, 0, 255, rng.byte()][rng.below(5)];
        }
        if i + 3 < n {
            o[i + 3] = rng.byte();
        }
        i += 4 + rng.below(4);
    }
    o
}

/// A packet of one of the flows (maybe the reply), maybe corrupted.
fn flow_packet(rng: &mut Rng, frame: &mut Vec<u8>) {
    let flow = FLOWS[rng.below(FLOWS.len())];
    let reply = rng.chance(35);
    let (src, dst) = if reply {
        (flow.3, flow.1)
    } else {
        (flow.1, flow.3)
    };
    let plen = [0usize, 1, 8, 20, 100][rng.below(5)];
    let mut payload = vec![0u8; plen];
    rng.fill(&mut payload);
    if flow.4 == 21 && !reply {
        let port = format!(
            "PORT {},{},{},{},{},{}\r\n",
            rng.below(300),
            rng.below(300),
            [0, 1, 999999999][rng.below(3)],
            rng.below(256),
            rng.below(70000),
            ["1", "", "-1", "x", "99999999999"][rng.below(5)]
        );
        payload = port.into_bytes();
        if rng.chance(30) {
            let cut = rng.below(payload.len() + 1);
            payload.truncate(cut);
        }
    }
    let l4 = transport(&flow, reply, rng, &payload);
    let opts = if rng.chance(15) {
        options(rng)
    } else {
        Vec::new()
    };
    let mut ip = ipv4(flow.0, src, dst, &opts, &l4, rng);
    let l4off = 20 + opts.len();
    // Corrupt one or two fields (or none); truncation comes last.
    let mut cut = None;
    for _ in 0..rng.below(3) {
        match rng.below(13) {
            0 => ip[0] = (ip[0] & 0xf0) | rng.below(16) as u8,
            1 => {
                let tl = [
                    0u16,
                    1,
                    19,
                    20,
                    ip.len() as u16 + 1,
                    65535,
                    rng.next() as u16,
                ][rng.below(7)];
                ip[2..4].copy_from_slice(&tl.to_be_bytes());
            }
            2 => {
                let f = rng.next() as u16 & if rng.chance(50) { 0x3fff } else { 0xffff };
                ip[6..8].copy_from_slice(&f.to_be_bytes());
            }
            3 if flow.0 == 6 && ip.len() > l4off + 12 => {
                ip[l4off + 12] = (rng.below(16) as u8) << 4;
            }
            4 if flow.0 == 17 && ip.len() > l4off + 5 => {
                let ul = [0u16, 7, 8, 9, 65535, rng.next() as u16][rng.below(6)];
                ip[l4off + 4..l4off + 6].copy_from_slice(&ul.to_be_bytes());
            }
            5 => ip[0] = (rng.below(16) as u8) << 4 | (ip[0] & 0x0f),
            6 => ip[9] = rng.byte(),
            7 => ip[8] = rng.below(3) as u8,
            8 => {
                let i = rng.below(ip.len());
                ip[i] = rng.byte();
            }
            9 => cut = Some(rng.below(81)),
            10 => ip[16..20].copy_from_slice(
                &[[255, 255, 255, 255], [224, 0, 0, 1], [0, 0, 0, 0]][rng.below(3)],
            ),
            11 if flow.0 == 1 && ip.len() > l4off + 1 => {
                ip[l4off] = rng.below(20) as u8;
                ip[l4off + 1] = rng.below(6) as u8;
            }
            _ => {
                let extra = rng.below(40);
                for _ in 0..extra {
                    ip.push(rng.byte());
                }
            }
        }
    }
    if let Some(n) = cut {
        ip.truncate(n);
    }
    ether(frame, 0x0800, rng);
    frame.extend_from_slice(&ip);
}

/// An ICMP error quoting a (forward or rewritten) packet of a flow,
/// truncated or corrupted.
fn icmp_error(rng: &mut Rng, frame: &mut Vec<u8>) {
    let flow = FLOWS[rng.below(FLOWS.len())];
    let inner_l4 = transport(&flow, false, rng, &[1, 2, 3, 4]);
    let mut inner = ipv4(flow.0, flow.1, flow.3, &[], &inner_l4, rng);
    match rng.below(6) {
        0 => inner[0] = 0x40 | rng.below(16) as u8,
        1 => inner[2..4].copy_from_slice(&(rng.next() as u16).to_be_bytes()),
        2 => inner[6..8].copy_from_slice(&(rng.next() as u16 & 0x3fff).to_be_bytes()),
        _ => {}
    }
    let keep = [0usize, 1, 8, 19, 20, 21, 24, 27, 28, 30, 36, inner.len()][rng.below(12)];
    inner.truncate(keep.min(inner.len()));
    let (ty, code) = [
        (3u8, 3u8),
        (3, 4),
        (3, 1),
        (11, 0),
        (12, 0),
        (4, 0),
        (5, 1),
        (3, 200),
        (0, 0),
        (8, 0),
    ][rng.below(10)];
    let mut icmp = vec![ty, code, 0, 0, 0, 0, 0, 0];
    if ty == 3 && code == 4 {
        icmp[6..8].copy_from_slice(&[0x02, 0x40]);
    }
    if ty == 12 {
        icmp[4] = rng.byte();
    }
    if ty == 5 {
        icmp[4..8].copy_from_slice(&[10, 0, 0, 254]);
    }
    icmp.extend_from_slice(&inner);
    if rng.chance(10) {
        let n = rng.below(icmp.len() + 1);
        icmp.truncate(n);
    }
    let ip = ipv4(1, flow.3, flow.1, &[], &icmp, rng);
    ether(frame, 0x0800, rng);
    frame.extend_from_slice(&ip);
}

fn arp(rng: &mut Rng, frame: &mut Vec<u8>) {
    ether(frame, 0x0806, rng);
    let op: u16 = [1, 2, 2, 3, rng.next() as u16][rng.below(5)];
    let mut a = vec![0, 1, 8, 0, 6, 4];
    a.extend_from_slice(&op.to_be_bytes());
    a.extend_from_slice(&[0x02, 0x00, 0x00, 0x00, 0x00, 0x09]);
    a.extend_from_slice(&[10, 0, 0, rng.below(4) as u8]);
    a.extend_from_slice(&ETH_DST);
    a.extend_from_slice(
        &[[10, 0, 0, 1], [10, 0, 0, 2], [192, 168, 1, 1], [0, 0, 0, 0]][rng.below(4)],
    );
    match rng.below(5) {
        0 => a[4] = rng.byte(),
        1 => a[5] = rng.byte(),
        2 => a[0..4].copy_from_slice(&[rng.byte(), rng.byte(), rng.byte(), rng.byte()]),
        3 => {
            let n = rng.below(a.len() + 1);
            a.truncate(n);
        }
        _ => {}
    }
    frame.extend_from_slice(&a);
}

fn fragment(rng: &mut Rng, frame: &mut Vec<u8>, id: u16) {
    let flow = FLOWS[rng.below(3)];
    let len = [0usize, 1, 7, 8, 9, 16, 24, 100, 1400][rng.below(9)];
    let mut data = vec![0u8; len];
    rng.fill(&mut data);
    let mut ip = ipv4(flow.0, flow.1, flow.3, &[], &data, rng);
    let off: u16 = [
        0u16,
        1,
        2,
        3,
        8,
        100,
        0x1fff,
        0x1ffe,
        rng.next() as u16 & 0x1fff,
    ][rng.below(9)];
    let mf: u16 = if rng.chance(60) { 0x2000 } else { 0 };
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ip[6..8].copy_from_slice(&(off | mf).to_be_bytes());
    if rng.chance(20) {
        ip[2..4].copy_from_slice(&(rng.next() as u16).to_be_bytes());
    }
    ip[10..12].copy_from_slice(&[0, 0]);
    let s = csum(&ip[..20], 0);
    ip[10..12].copy_from_slice(&s.to_be_bytes());
    ether(frame, 0x0800, rng);
    frame.extend_from_slice(&ip);
}

/// The hostile frames, deterministic.
fn hostile_frames(n: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut frames = Vec::with_capacity(n);
    while frames.len() < n {
        let mut f = Vec::new();
        match rng.below(20) {
            0 | 1 => {
                let len = if rng.chance(80) {
                    rng.below(100)
                } else {
                    rng.below(1600)
                };
                f.resize(len, 0);
                rng.fill(&mut f);
            }
            2 => {
                // Every truncation of a valid packet.
                let mut whole = Vec::new();
                flow_packet(&mut rng, &mut whole);
                for cut in 0..whole.len().min(81) {
                    frames.push(whole[..cut].to_vec());
                }
                continue;
            }
            3 | 4 => icmp_error(&mut rng, &mut f),
            5 => arp(&mut rng, &mut f),
            6 => {
                // 802.1Q (sometimes twice) around an IP packet.
                let mut inner = Vec::new();
                flow_packet(&mut rng, &mut inner);
                f.extend_from_slice(&inner[..12]);
                for _ in 0..1 + rng.below(2) {
                    f.extend_from_slice(&[0x81, 0x00, rng.byte() & 0x0f, rng.byte()]);
                }
                f.extend_from_slice(&inner[12..]);
                if rng.chance(20) {
                    let n = rng.below(f.len() + 1);
                    f.truncate(n);
                }
            }
            7 | 8 => {
                let id = 0x4000 + rng.below(4) as u16;
                for _ in 0..1 + rng.below(5) {
                    let mut g = Vec::new();
                    fragment(&mut rng, &mut g, id);
                    frames.push(g);
                }
                continue;
            }
            9 => {
                // Big packets, DF or not, for fragmenters.
                let flow = FLOWS[rng.below(FLOWS.len())];
                let mut payload = vec![0u8; 600 + rng.below(900)];
                rng.fill(&mut payload);
                let l4 = transport(&flow, false, &mut rng, &payload);
                let opts = if rng.chance(30) {
                    vec![7, 7, 4, 0, 0, 0, 0, 0]
                } else {
                    Vec::new()
                };
                let mut ip = ipv4(flow.0, flow.1, flow.3, &opts, &l4, &mut rng);
                if rng.chance(40) {
                    ip[6] |= 0x40;
                }
                ether(&mut f, 0x0800, &mut rng);
                f.extend_from_slice(&ip);
            }
            10..=13 => ipv6(&mut rng, &mut f),
            14 => {
                // Truncations of an IPv6 packet with extension headers,
                // at a random step through its first 120 bytes.
                let mut whole = Vec::new();
                ipv6(&mut rng, &mut whole);
                let mut cut = rng.below(8);
                while cut < whole.len().min(121) {
                    frames.push(whole[..cut].to_vec());
                    cut += 1 + rng.below(8);
                }
                continue;
            }
            _ => flow_packet(&mut rng, &mut f),
        }
        frames.push(f);
    }
    frames.truncate(n);
    frames
}

/// IPv6 addresses the hostile IPv6 packets use: documentation ones, a
/// link-local, multicast (all-nodes, solicited-node), loopback,
/// unspecified, IPv4-mapped.
const ADDRS6: &[[u8; 16]] = &[
    [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
    [
        0x20, 0x01, 0x0d, 0xb8, 0x0b, 0xad, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9,
    ],
    [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5],
    [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 2],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0; 16],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1],
    [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8],
];

/// One hostile IPv6 packet in an Ethernet frame: a fixed header with a
/// random (sometimes wrong) payload length and hop limit, a chain of 0 to
/// 24 extension headers (hop-by-hop anywhere, destination options, routing
/// type 0 or 4 with random segment counts, fragment headers with random
/// offsets, authentication headers, a jumbo payload option), then TCP, UDP,
/// ICMPv6 (echo, errors, Neighbor Discovery with random options) or
/// nothing; sometimes cut short.
fn ipv6(rng: &mut Rng, f: &mut Vec<u8>) {
    ether(f, 0x86dd, rng);
    let src = ADDRS6[rng.below(ADDRS6.len())];
    let dst = ADDRS6[rng.below(ADDRS6.len())];
    let mut body = Vec::new();
    let nexts = [0u8, 60, 43, 44, 51, 135, 50, 59];
    let chain = if rng.chance(50) {
        rng.below(4)
    } else {
        rng.below(25)
    };
    let mut kinds = Vec::new();
    for _ in 0..chain {
        kinds.push(nexts[rng.below(nexts.len())]);
    }
    if rng.chance(15) {
        // A clean chain of destination options around the walk's limit.
        kinds = vec![60; 14 + rng.below(11)];
    }
    let upper = [6u8, 17, 58, 58, 58, 59, 41, 4][rng.below(8)];
    let jumbo = rng.chance(15);
    if jumbo {
        kinds.insert(0, 0);
    }
    for (i, &k) in kinds.iter().enumerate() {
        let next = kinds.get(i + 1).copied().unwrap_or(upper);
        match k {
            44 => {
                let off = (rng.below(8192) as u16) << 3 | u16::from(rng.chance(50));
                let off = if rng.chance(50) { off & 1 } else { off };
                body.extend_from_slice(&[next, 0]);
                body.extend_from_slice(&off.to_be_bytes());
                body.extend_from_slice(&(rng.next() as u32).to_be_bytes());
            }
            51 => {
                let len = rng.below(4);
                body.extend_from_slice(&[next, len as u8 + 1, 0, 0]);
                body.extend(std::iter::repeat_n(0u8, 4 + len * 4));
            }
            43 => {
                let segs = rng.below(4);
                let typ = if rng.chance(50) { 0 } else { 4 };
                let left = rng.below(segs + 2) as u8;
                let hlen = if rng.chance(80) {
                    segs * 2
                } else {
                    rng.below(8)
                };
                body.extend_from_slice(&[next, hlen as u8, typ, left, segs as u8, 0, 0, 0]);
                for _ in 0..hlen {
                    let mut w = [0u8; 8];
                    rng.fill(&mut w);
                    body.extend_from_slice(&w);
                }
            }
            _ if jumbo && i == 0 => {
                // Hop-by-hop with a jumbo payload option (type 0xc2).
                body.extend_from_slice(&[next, 0, 0xc2, 4]);
                body.extend_from_slice(&(rng.next() as u32 | 65536).to_be_bytes());
            }
            _ => {
                let len = if kinds.len() > 8 || rng.chance(90) {
                    rng.below(3)
                } else {
                    rng.below(256)
                };
                body.extend_from_slice(&[next, len as u8, 1, 4, 0, 0, 0, 0]);
                for _ in 0..len.min(3) {
                    body.extend_from_slice(&[1, 6, 0, 0, 0, 0, 0, 0]);
                }
            }
        }
    }
    match upper {
        6 | 17 => {
            let mut l4 = vec![0u8; if upper == 6 { 20 } else { 8 }];
            rng.fill(&mut l4);
            if upper == 6 {
                l4[12] = if rng.chance(70) {
                    0x50
                } else {
                    rng.byte() & 0xf0
                };
            }
            body.extend_from_slice(&l4);
        }
        58 => {
            let t = [128u8, 129, 135, 136, 133, 134, 137, 1, 2, 3, 4][rng.below(11)];
            body.extend_from_slice(&[t, rng.byte() & 1, 0, 0, 0, 0, 0, 0]);
            if matches!(t, 135..=137) {
                body.extend_from_slice(&ADDRS6[rng.below(ADDRS6.len())]);
                for _ in 0..rng.below(4) {
                    let len = if rng.chance(80) { 1 } else { rng.below(4) };
                    body.extend_from_slice(&[1 + rng.below(5) as u8, len as u8]);
                    body.extend(std::iter::repeat_n(0x11u8, (len * 8).saturating_sub(2)));
                }
            } else if t < 128 {
                // An error quoting an IPv6 header.
                body.extend_from_slice(&[0x60, 0, 0, 0, 0, 8, 17, 64]);
                body.extend_from_slice(&dst);
                body.extend_from_slice(&src);
                body.extend_from_slice(&[0, 53, 0x30, 0x39, 0, 8, 0, 0]);
            }
        }
        _ => {}
    }
    let mut payload = vec![0u8; rng.below(40)];
    rng.fill(&mut payload);
    body.extend_from_slice(&payload);
    let plen = if jumbo {
        0
    } else if rng.chance(85) {
        body.len() as u16
    } else {
        rng.next() as u16
    };
    let vtf = (6u32 << 28) | (rng.next() as u32 & 0x0fff_ffff);
    f.extend_from_slice(&vtf.to_be_bytes());
    f.extend_from_slice(&plen.to_be_bytes());
    f.push(kinds.first().copied().unwrap_or(upper));
    f.push([0u8, 1, 2, 64, 255][rng.below(5)]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&body);
    if rng.chance(10) {
        let n = 14 + rng.below(f.len() - 13);
        f.truncate(n);
    }
}

/// A pcap file (microseconds, Ethernet) of `frames`.
fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        out.extend_from_slice(&(1_600_000_000 + (i / 1000) as u32).to_le_bytes());
        out.extend_from_slice(&((i % 1000) as u32 * 1000).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        // Some records claim a longer wire length (a short capture).
        let wire = if i % 7 == 0 { f.len() + 40 } else { f.len() };
        out.extend_from_slice(&(wire as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    out
}

/// Corrupted pcap files for FromDump's own rows.
fn bad_pcaps(good: &[u8]) -> Vec<Vec<u8>> {
    let mut rng = Rng(42);
    let body = &good[24..];
    let mut files = Vec::new();
    // 0: cut in the middle of a record.
    files.push(good[..good.len().min(24 + 16 + 30 + 16 + 7)].to_vec());
    // 1: a record whose caplen is huge.
    let mut f = good[..24].to_vec();
    f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&0xffff_fff0u32.to_le_bytes());
    f.extend_from_slice(&60u32.to_le_bytes());
    f.extend_from_slice(&[0u8; 60]);
    files.push(f);
    // 2: caplen larger than the packet buffer, then good records.
    let mut f = good[..24].to_vec();
    f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&70000u32.to_le_bytes());
    f.extend_from_slice(&70000u32.to_le_bytes());
    f.extend(std::iter::repeat_n(0xabu8, 70000));
    f.extend_from_slice(&body[..body.len().min(5000)]);
    files.push(f);
    // 3: random bytes after a valid file header.
    let mut f = good[..24].to_vec();
    let mut junk = vec![0u8; 4000];
    rng.fill(&mut junk);
    f.extend_from_slice(&junk);
    files.push(f);
    // 4: big-endian header, records left little-endian (garbage lengths).
    let mut f = good[..good.len().min(20000)].to_vec();
    f[..4].copy_from_slice(&0xa1b2_c3d4u32.to_be_bytes());
    files.push(f);
    // 5: nanosecond magic, caplen 0 records and caplen > len.
    let mut f = good[..24].to_vec();
    f[..4].copy_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    for i in 0..50u32 {
        f.extend_from_slice(&i.to_le_bytes());
        f.extend_from_slice(&2_000_000_000u32.to_le_bytes());
        let cap: u32 = if i % 2 == 0 { 0 } else { 30 };
        f.extend_from_slice(&cap.to_le_bytes());
        f.extend_from_slice(&(if i % 3 == 0 { 10u32 } else { 0 }).to_le_bytes());
        f.extend(std::iter::repeat_n(0x45u8, cap as usize));
    }
    files.push(f);
    // 6: only part of the file header.
    files.push(good[..10].to_vec());
    // 7: a header with an odd link type and snaplen 0, then records.
    let mut f = good[..good.len().min(30000)].to_vec();
    f[16..20].copy_from_slice(&0u32.to_le_bytes());
    f[20..24].copy_from_slice(&12345u32.to_le_bytes());
    files.push(f);
    files
}

/// An IP summary dump full of bad lines.
fn hostile_ipsum() -> String {
    let mut rng = Rng(7);
    let mut s = String::from("!IPSummaryDump 1.3\n");
    let tokens = [
        "-",
        "0",
        "1",
        "-1",
        "65535",
        "65536",
        "4294967296",
        "999999999999999999999",
        "1.2.3.4",
        "1.2.3",
        "300.1.1.1",
        "x",
        "",
        "SA",
        "FSRPAUEW",
        "0x10",
        "1600000000.5",
        "-5.5",
        "\"",
        "\"abc\\x00\"",
        "\"\\",
        "T",
        "U",
        "I",
        "255",
        "ab:cd",
        "ssrr{1.2.3.4,^5.6.7.8}",
        "rr{}+70",
        "ts.preip{^1.2.3.4=?,5.6.7.8}+3++15",
        "ts.15{1.2.3.4=!5}",
        "ts{1.",
        "lsrr{1.2.3.4^",
        "mss99999;sack1-2,sack3:4;ts1:;30=300",
        "sack1-2,sack",
        "nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;nop;wscale3",
        "7=1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18:19:20:21:22:23:24:25:26:27:28:29:30:31:32:33:34:35:36:37:38:39:40",
    ];
    let datas = [
        "!data timestamp ip_src ip_dst ip_proto sport dport ip_len payload_len tcp_flags",
        "!data ip_src sport ip_dst dport ip_len tcp_seq tcp_ack tcp_window tcp_urp ip_frag ip_fragoff",
        "!data ip_src ip_dst icmp_type icmp_code payload",
        "!data count ip_len ip_hl ip_tos ip_ttl ip_id udp_len tcp_off",
        "!data payload",
        "!data ip_src ip_opt tcp_opt tcp_sack tcp_ntopt payload",
        "!data bogus_field ip_src",
    ];
    for i in 0..400 {
        if i % 50 == 0 {
            s.push_str(datas[rng.below(datas.len())]);
            s.push('\n');
        }
        match rng.below(12) {
            0 => s.push_str("!flowid 1.2.3.4 5 6.7.8.9 10 T\n"),
            1 => s.push_str("!proto 300\n"),
            2 => s.push_str("!aggregate x\n"),
            3 => s.push_str("# comment\n"),
            _ => {
                for _ in 0..rng.below(14) {
                    s.push_str(tokens[rng.below(tokens.len())]);
                    s.push(' ');
                }
                s.push('\n');
            }
        }
    }
    s
}

/// `cap` output lines cut up and mixed with junk.
fn hostile_cap() -> String {
    let mut rng = Rng(17);
    let words = [
        "SYN",
        "DAT",
        "ACK",
        "RCV",
        "SND",
        "INF",
        ">",
        "<",
        "?",
        "1046102982.856142",
        "1.",
        ".5",
        "0",
        "1",
        "2",
        "1460",
        "4194302",
        "4194303",
        "16777214",
        "16777215",
        "4294967295",
        "99999999999",
        "FIN",
        "FR",
        "RTO",
        "TIM",
        "SACK_NEW",
        "SACK_REXMT",
        "DSACK:",
        "DSACK:3",
        "DSACK:16777215",
        "SACK:",
        "SACK:1-2",
        "SACK:1-2:3-4:5-6:7-8:9-10:11-12",
        "SACK:5-",
        "SACK:-",
        "SACK:4294967295-1",
    ];
    // Well-formed lines first: options past 40 bytes, gaps, a FIN.
    let mut s = String::from(
        "SND 0\nSYN > 1.5 0 0 40 0\nDAT > 2.0 1 100000 1500 1460 DSACK:3 DSACK:4 DSACK:5 DSACK:6 FIN\n\
         RCV 0\nACK < 3 2 1 40 0 SACK:1-2:3-4:5-6:7-8:9-10 DSACK:7 RTO TIM\nDAT > 4 3 1 1 99999 FR SACK:\n",
    );
    for _ in 0..600 {
        for _ in 0..rng.below(12) {
            s.push_str(words[rng.below(words.len())]);
            s.push(if rng.below(5) == 0 { '\t' } else { ' ' });
        }
        s.push('\n');
    }
    s
}

/// NetFlow summary lines with fields out of range, missing or junk.
/// With `small_counts`, packet counts stay small (MULTIPACKET emits that
/// many packets per line).
fn hostile_netflow(small_counts: bool) -> String {
    let mut rng = Rng(13);
    let fields = [
        "",
        "0",
        "1",
        "5",
        "255",
        "256",
        "65535",
        "65536",
        "4294967295",
        "4294967296",
        "-1",
        "0x10",
        "010",
        "1.2.3.4",
        "300.1.1.1",
        "x",
        "998006999",
        "17",
        "6",
    ];
    let mut s = String::from("! hostile\n");
    for _ in 0..500 {
        let n = 12 + rng.below(6);
        for k in 0..n {
            if k > 0 {
                s.push('|');
            }
            if small_counts && k == 5 {
                s.push_str(["0", "1", "3", "x", ""][rng.below(5)]);
            } else {
                s.push_str(fields[rng.below(fields.len())]);
            }
        }
        s.push('\n');
    }
    s
}

/// tcpdump text output, well-formed lines cut up and shuffled with junk.
fn hostile_tcpdump() -> String {
    let mut rng = Rng(11);
    let pieces = [
        "1000000000.000007",
        "99999999999999999999.5",
        "01:46:40.000007",
        "25:99:99.1",
        "IP",
        "IP (tos 0x0, ttl 64, id 11, offset 0, flags [DF], proto TCP (6), length 60)",
        "IP (tos 0xfff, ttl 999, id 99999, offset 65535, flags [+], proto UDP (17), length 70000)",
        "IP (proto (",
        "IP (options (((",
        "10.0.0.1.40000",
        "10.0.0.2.80:",
        "10.0.0.2:",
        "1.2.3.4.http",
        "300.1.1.1.5",
        ">",
        ":",
        "Flags [S.],",
        "Flags [",
        "seq 1:19,",
        "seq 4294967295:7,",
        "ack 1,",
        "win 99999999,",
        "urg 5,",
        "options [mss 1460,nop,wscale 7,sackOK,TS val 1000 ecr 0],",
        "options [sack 99 {1:2}{3:4}{5:6}{7:8}{9:10},sack 1 {,TS val 1,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,nop,eol]",
        "options [",
        "length 18",
        "length 99999",
        "UDP, length 8",
        "ICMP echo request, id 1, seq 1, length 64",
        "S 100:100(0)",
        "P 1:49(48)",
        ". ack 1",
        "[tcp sum ok]",
        "[bad tcp cksum 1234!]",
        "[bad hdr length 3 - too short, < 20]",
        "<mss 1460,sackOK,timestamp 533430 0,nop,wscale 0>",
        "<sack sack 3 {1:2}{3:",
        "<timestamp 5>",
        "<",
        "udp 20",
        "udp 4294967295",
        "icmp: echo request",
        "(DF)",
        "[tos 0xc0]",
        "(ttl 64, id 5, len 88)",
        "(len 10)",
        "(len 1000)",
        "(frag 1:2@3+)",
        "(frag 1:",
        "(ECT(0), CE)",
        "(",
        ")",
        "]",
        "#",
        "    ",
        "\t0x0000:  4500 003c",
    ];
    let mut s = String::new();
    for _ in 0..600 {
        for _ in 0..rng.below(12) {
            s.push_str(pieces[rng.below(pieces.len())]);
            s.push(' ');
        }
        if rng.below(4) == 0 {
            s.pop();
        }
        s.push(if rng.below(9) == 0 { '\r' } else { '\n' });
    }
    s
}

/// DAG (ERF) records of the hostile frames, of every type FromDAGDump
/// reads, with random record and wire lengths now and then, an odd
/// record type halfway (the rest reads as legacy cells), and a cut last
/// record.
fn hostile_erf(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut rng = Rng(0xda6);
    let mut out = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let ty = [2u8, 1, 3, 4][i % 4];
        let mut body = Vec::new();
        if ty == 2 {
            body.extend_from_slice(&[0, 0]);
        }
        body.extend_from_slice(&f[..f.len().min(9000)]);
        let mut rlen = (16 + body.len()).min(65535) as u16;
        let mut wlen = rlen.wrapping_add(4);
        if rng.below(20) == 0 {
            rlen = 16 + rng.below(80) as u16;
            wlen = rng.below(70000) as u16;
        }
        let stamp = ((i as u64 / 3) << 32) | rng.below(1 << 32) as u64;
        out.extend_from_slice(&stamp.to_le_bytes());
        out.push(if i == frames.len() / 2 { 200 } else { ty });
        out.push(0);
        out.extend_from_slice(&rlen.to_be_bytes());
        out.extend_from_slice(&0u16.to_be_bytes());
        out.extend_from_slice(&wlen.to_be_bytes());
        out.extend_from_slice(&body[..body.len().min(rlen.saturating_sub(16) as usize)]);
    }
    out.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 2, 0, 1]);
    out
}

/// NLANR TSH records holding the start of the hostile frames' network
/// layer (IP or not, with or without options), then a cut record.
fn hostile_tsh(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut rng = Rng(0x75);
    let mut out = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        out.extend_from_slice(&(i as u32 / 2).to_be_bytes());
        out.extend_from_slice(&(rng.below(1 << 32) as u32).to_be_bytes());
        let mut cell = [0u8; 36];
        let ip = f.get(14..).unwrap_or(&[]);
        let n = ip.len().min(36);
        cell[..n].copy_from_slice(&ip[..n]);
        out.extend_from_slice(&cell);
    }
    out.extend_from_slice(&[0, 0, 0, 9, 0, 0]);
    out
}

// ---------------------------------------------------------------------------
// Running.

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pronto-hostile-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// Writes every input file the rows read into `dir`; returns the trace.
fn write_inputs(dir: &Path) -> PathBuf {
    let trace = pcap(&hostile_frames(packets()));
    let path = dir.join("hostile.pcap");
    std::fs::write(&path, &trace).expect("write trace");
    for (i, f) in bad_pcaps(&trace).iter().enumerate() {
        std::fs::write(dir.join(format!("bad{i}.pcap")), f).expect("write bad pcap");
    }
    std::fs::write(dir.join("hostile.ipsum"), hostile_ipsum()).expect("write ipsum");
    std::fs::write(dir.join("hostile.tcpdump"), hostile_tcpdump()).expect("write tcpdump");
    std::fs::write(dir.join("hostile.netflow"), hostile_netflow(false)).expect("write netflow");
    std::fs::write(dir.join("hostile.cap"), hostile_cap()).expect("write cap");
    let frames = hostile_frames(packets());
    std::fs::write(dir.join("hostile.erf"), hostile_erf(&frames)).expect("write erf");
    std::fs::write(dir.join("hostile.tsh"), hostile_tsh(&frames)).expect("write tsh");
    // Legacy cells: the pcap trace cut into 64-byte pieces.
    std::fs::write(dir.join("hostile.dag"), &trace[..trace.len() / 64 * 64]).expect("write dag");
    std::fs::write(dir.join("small.netflow"), hostile_netflow(true)).expect("write netflow");
    // WireGuard's keys: a peer for every address, another for 8.8.0.0/16.
    std::fs::write(
        dir.join("wg.conf"),
        "[Interface]\nPrivateKey = 6IXHHUScemhF1OwjsXchXtU8clcp2u2vYJqQvzcabGI=\n\
         [Peer]\nPublicKey = NwiU7ZZoNw2a5RaiLhQ/5kmQvkOKOB4TptVJz//gK0k=\n\
         AllowedIPs = 0.0.0.0/0, ::/0\nEndpoint = 192.0.2.2:51820\n\
         [Peer]\nPublicKey = nwk/DTIo5UT67KM/MWr+A9hcGFHpnbAj6yTJ2XDgEH4=\n\
         AllowedIPs = 8.8.0.0/16\n",
    )
    .expect("write wg.conf");
    let rules = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/ids.rules"
    ))
    .expect("examples/ids.rules");
    std::fs::write(dir.join("ids.rules"), rules).expect("write rules");
    std::fs::write(dir.join("bras.subs"), "alice s3cret\nbob pw 10.64.0.9\n")
        .expect("write subscribers");
    path
}

fn build(text: &str) -> Result<pronto_runtime::Router, String> {
    let mut sm = pronto_lang::SourceMap::new();
    let file = sm.add("hostile.click", text);
    let opts = pronto_lang::Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    let render = |sm: &pronto_lang::SourceMap, e: &[pronto_lang::Diagnostic]| {
        e.iter()
            .map(|d| d.render(sm))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let flat = match pronto_lang::parse_flat(&sm, file, &opts) {
        Ok((flat, _)) => flat,
        Err(e) => return Err(render(&sm, &e)),
    };
    let ropts = pronto_runtime::RouterOptions {
        clock: pronto_runtime::Clock::Simulated(1_600_000_000_000_000_000),
        pool_slots: 4096,
        ..Default::default()
    };
    pronto_runtime::Router::build(&flat, &sm, &ropts).map_err(|e| render(&sm, &e))
}

/// The configurations of one row: (feed name, text).
fn configs(row: &Row, dir: &Path, trace: &Path) -> Vec<(&'static str, String)> {
    let body = row.text.replace("$D", &dir.display().to_string());
    match row.feed {
        Feed::All => FEEDS
            .iter()
            .map(|(name, feed)| {
                let feed = feed.replace("$TRACE", &trace.display().to_string());
                (*name, format!("{feed}\n{body}\n"))
            })
            .collect(),
        Feed::None | Feed::NoneMayFail => vec![("none", body)],
    }
}

/// Drop reasons an element reports on top of what its `drops` handler
/// counts, by design: (class, reason, why). Everything else an element
/// reports as dropped must add up to its drop handlers exactly.
const DROPS_BEYOND_HANDLERS: &[(&str, &str, &str)] = &[
    (
        "ARPQuerier",
        "unresolved",
        "packets that waited in its own ARP table and timed out or overflowed it; \
         its `drops` (Click's) counts only what the querier itself refused",
    ),
    (
        "IP6NDAdvertiser",
        "bad_solicitation",
        "invalid solicitations are counted in `bad`, not `drops` (Click's split)",
    ),
    (
        "IP6NDSolicitor",
        "bad_advertisement",
        "invalid advertisements are counted in `bad`, not `drops` (Click's split)",
    ),
    (
        "DecIPTTL",
        "malformed",
        "packets without an IP header; its `drops` (Click's) counts expired ones only",
    ),
    (
        "FromDevice",
        "socket_full",
        "frames the kernel dropped before the element saw them (`kernel_drops`, \
         not part of `drops`)",
    ),
];

/// Checks that every element's drop handlers and its
/// [`Element::counters`](pronto_elements::Element::counters) agree: an
/// element with a readable handler named `drops` or ending in `_drops`
/// (whose value is a plain integer) reports at least one drop reason, and
/// its reasons add up to what the handlers say. Where an element has both
/// a `drops` handler and `*_drops` handlers, `drops` is the total and the
/// others are its parts (CGNAT, NAT64, NPTv6, StatefulFirewall), so the
/// reasons must add up to `drops`, not to the sum of every handler
/// (which counts each drop twice). The runtime's own reasons
/// (`unconnected`, `alloc_refused`) are not the element's and are left out,
/// and so are the reasons in [`DROPS_BEYOND_HANDLERS`].
fn drops_reported(router: &mut pronto_runtime::Router) -> Result<(), String> {
    let mut problems = String::new();
    let list = router.counters();
    for ec in &list {
        let handlers = router
            .read_handler(&format!("{}.handlers", ec.name), "")
            .map_err(|e| format!("{}.handlers: {e}", ec.name))?;
        let names: Vec<&str> = handlers
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .filter(|(n, mode)| mode.contains('r') && (*n == "drops" || n.ends_with("_drops")))
            .map(|(n, _)| n)
            .collect();
        let mut total = None;
        let mut parts = None;
        for n in &names {
            let text = router
                .read_handler(&format!("{}.{n}", ec.name), "")
                .map_err(|e| format!("{}.{n}: {e}", ec.name))?;
            let Ok(v) = text.trim().parse::<u64>() else {
                continue;
            };
            if *n == "drops" {
                total = Some(v);
            } else {
                *parts.get_or_insert(0) += v;
            }
        }
        let Some(expected) = total.or(parts) else {
            continue;
        };
        let own: Vec<(&str, u64)> = ec
            .counters
            .iter()
            .filter(|c| c.1 == pronto_elements::CounterKind::Drop)
            .map(|c| (c.0, c.2))
            .collect();
        let sum: u64 = own
            .iter()
            .filter(|d| {
                !DROPS_BEYOND_HANDLERS
                    .iter()
                    .any(|(class, reason, _)| *class == ec.class && *reason == d.0)
            })
            .map(|d| d.1)
            .sum();
        if own.is_empty() {
            let _ = writeln!(
                problems,
                "{} ({}): has {names:?} but reports no drop counter",
                ec.name, ec.class
            );
        } else if sum != expected {
            let _ = writeln!(
                problems,
                "{} ({}): {names:?} say {expected}, its drop counters {own:?} add up to {sum}",
                ec.name, ec.class
            );
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Runs every row of `class`: the child's side. Marks each run on
/// standard error so the parent can name the one that panicked.
fn run_class(class: &str) {
    /// Removes the scratch directory, also when a run panics.
    struct Cleanup(PathBuf);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    assert!(
        !IN_NETNS.contains(&class) || alone_in_netns(),
        "{class} sends its hostile input to real hosts: run it only in a fresh network namespace"
    );
    let dir = scratch(class);
    let _cleanup = Cleanup(dir.clone());
    let trace = write_inputs(&dir);
    for (i, row) in ROWS.iter().enumerate().filter(|(_, r)| r.class == class) {
        for (feed, text) in configs(row, &dir, &trace) {
            eprintln!("@@RUN row {i} feed {feed}");
            let mut router = match build(&text) {
                Ok(r) => r,
                Err(e) if row.feed == Feed::NoneMayFail => {
                    eprintln!("@@REFUSED {e}");
                    continue;
                }
                Err(e) => panic!("@@CONFIG row {i} feed {feed}: the test's configuration is refused:\n{e}\n{text}"),
            };
            if let Err(e) = router.run() {
                if row.feed != Feed::NoneMayFail {
                    panic!("@@CONFIG row {i} feed {feed}: run failed: {e}");
                }
            }
            // Every packet that entered an element left it, is held by it
            // or was freed by it (and counted): see ARCHITECTURE.md,
            // "Conservation".
            if let Err(e) = router.check_conservation() {
                panic!("@@CONSERVATION row {i} feed {feed}: packets unaccounted for:\n{e}");
            }
            if let Err(e) = drops_reported(&mut router) {
                panic!("@@COUNTERS row {i} feed {feed}: drop handlers and counters disagree:\n{e}");
            }
            if row.feed == Feed::All {
                // The whole trace went in.
                let n = router.read_handler("hsrc.count", "").expect("hsrc.count");
                assert_eq!(
                    n.trim(),
                    packets().to_string(),
                    "@@CONFIG row {i} feed {feed}: frames read"
                );
            }
        }
    }
    eprintln!("@@DONE");
}

/// The child: runs one class when `PRONTO_HOSTILE_CLASS` is set (by
/// [`every_class_survives_hostile_packets`]); otherwise does nothing.
#[test]
fn hostile_child() {
    if let Ok(class) = std::env::var("PRONTO_HOSTILE_CLASS") {
        run_class(&class);
    }
}

/// What went wrong in a child, from its standard error.
fn failure_text(class: &str, stderr: &str, status: &str) -> String {
    let mut last_run = "before the first run";
    let mut panic_lines = Vec::new();
    let lines: Vec<&str> = stderr.lines().collect();
    for (k, line) in lines.iter().enumerate() {
        if let Some(run) = line.strip_prefix("@@RUN ") {
            last_run = run;
        }
        if line.contains("panicked at") {
            panic_lines.extend(
                lines[k..(k + 3).min(lines.len())]
                    .iter()
                    .map(|l| l.to_string()),
            );
            break;
        }
    }
    let row_text = last_run
        .strip_prefix("row ")
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok())
        .map(|i| ROWS[i].text)
        .unwrap_or("");
    let mut s = format!("{class} ({last_run}; {status}): {row_text}\n");
    for l in panic_lines {
        let _ = writeln!(s, "    {l}");
    }
    s
}

#[test]
fn every_class_survives_hostile_packets() {
    if std::env::var("PRONTO_HOSTILE_CLASS").is_ok() {
        return;
    }
    // Every registered class has a row (or is excluded), every row names a
    // registered class.
    let registered: Vec<&str> = pronto_elements::registry::all()
        .iter()
        .map(|e| e.spec.name)
        .collect();
    let missing: Vec<&str> = registered
        .iter()
        .copied()
        .filter(|c| !EXCLUDED.contains(c) && !ROWS.iter().any(|r| r.class == *c))
        .collect();
    let unknown: Vec<&str> = ROWS
        .iter()
        .map(|r| r.class)
        .filter(|c| !registered.contains(c))
        .collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "classes without a row in hostile_packets.rs: {missing:?}; rows for unknown classes: {unknown:?}"
    );
    let mut classes: Vec<&str> = ROWS.iter().map(|r| r.class).collect();
    classes.sort_unstable();
    classes.dedup();
    if let Err(why) = netns_available() {
        eprintln!("SKIPPED: {IN_NETNS:?}: no network namespace for them ({why})");
        classes.retain(|c| !IN_NETNS.contains(c));
    }
    let exe = std::env::current_exe().expect("test binary");
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(class) = classes.get(k) else { break };
                let mut cmd = if IN_NETNS.contains(class) {
                    let mut c = Command::new("unshare");
                    c.arg("--net").arg(&exe);
                    c
                } else {
                    Command::new(&exe)
                };
                let mut child = cmd
                    .args([
                        "hostile_child",
                        "--exact",
                        "--nocapture",
                        "--test-threads=1",
                    ])
                    .env("PRONTO_HOSTILE_CLASS", class)
                    .env("RUST_BACKTRACE", "0")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn the child test");
                let mut stderr = child.stderr.take().expect("piped stderr");
                let reader = std::thread::spawn(move || {
                    let mut s = String::new();
                    let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
                    s
                });
                let deadline = Instant::now() + Duration::from_secs(120);
                let status = loop {
                    if let Some(st) = child.try_wait().expect("wait for the child") {
                        break Some(st);
                    }
                    if Instant::now() > deadline {
                        let _ = child.kill();
                        let _ = child.wait();
                        break None;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                };
                let err = reader.join().expect("stderr reader");
                let ok = status.is_some_and(|s| s.success()) && err.contains("@@DONE");
                if !ok {
                    let st = match status {
                        None => "hung: killed after 120 s".to_string(),
                        Some(s) => format!("exit {s}"),
                    };
                    failures
                        .lock()
                        .expect("failures")
                        .push(failure_text(class, &err, &st));
                }
            });
        }
    });
    let failures = failures.into_inner().expect("failures");
    eprintln!(
        "hostile packets: {} classes, {} rows, {:.1} s",
        classes.len(),
        ROWS.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {} classes failed on hostile packets:\n{}",
        failures.len(),
        classes.len(),
        failures.join("")
    );
}

#[test]
fn the_hostile_trace_holds_ipv6_of_every_kind() {
    let frames = hostile_frames(PACKETS);
    let v6: Vec<&Vec<u8>> = frames
        .iter()
        .filter(|f| f.len() >= 14 && f[12..14] == [0x86, 0xdd])
        .collect();
    assert!(v6.len() > PACKETS / 10, "{} IPv6 frames", v6.len());
    // Long chains (over the 16 a walk follows), jumbograms (payload
    // length 0 with a hop-by-hop header), and fragments.
    let long = v6
        .iter()
        .filter(|f| {
            f.len() >= 54
                && pronto_packet::wire::ipv6::walk(&f[14..], 16)
                    == Err(pronto_packet::wire::WireError::TooManyHeaders)
        })
        .count();
    let jumbo = v6
        .iter()
        .filter(|f| f.len() >= 54 && f[18..20] == [0, 0] && f[20] == 0)
        .count();
    let frag = v6
        .iter()
        .filter(|f| {
            f.len() >= 54
                && pronto_packet::wire::ipv6::walk(&f[14..], 32).is_ok_and(|w| w.fragment.is_some())
        })
        .count();
    assert!(
        long > 10 && jumbo > 5 && frag > 50,
        "long {long}, jumbo {jumbo}, fragments {frag}"
    );
}
