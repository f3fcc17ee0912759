//! The element registry: every class pronto knows, in one sorted list.

use crate::ClassEntry;

macro_rules! classes {
    ($($path:path),* $(,)?) => {
        /// Every element class, sorted by Click name.
        pub fn all() -> &'static [ClassEntry] {
            static ALL: std::sync::OnceLock<Vec<ClassEntry>> = std::sync::OnceLock::new();
            ALL.get_or_init(|| {
                let mut v = vec![$({ use $path as E; ClassEntry { spec: &E::SPEC, factory: E::configure } }),*];
                v.sort_by_key(|e| e.spec.name);
                v
            })
        }
    };
}

classes!(
    // nfp/
    crate::nfp::nfptag::NfpTag,
    crate::nfp::nfpcopy::NfpCopy,
    crate::nfp::nfpencap::NfpEncap,
    crate::nfp::nfpencap::NfpDecap,
    crate::nfp::nfpmerge::NfpMerge,
    crate::nfp::nfpmergerswitch::NfpMergerSwitch,
    // standard/ (one line per element; keep each family's lines together)
    crate::standard::discard::Discard,
    crate::standard::averagecounter::AverageCounter,
    crate::standard::checkpaint::CheckPaint,
    crate::standard::classifier::Classifier,
    crate::standard::counter::Counter,
    crate::standard::hashswitch::HashSwitch,
    crate::standard::idle::Idle,
    crate::standard::infinitesource::InfiniteSource,
    crate::standard::null::Null,
    crate::standard::paint::Paint,
    crate::standard::paintswitch::PaintSwitch,
    crate::standard::painttee::PaintTee,
    crate::standard::print::Print,
    crate::standard::queue::Queue,
    crate::standard::randomswitch::RandomSwitch,
    crate::standard::ratedsource::RatedSource,
    crate::standard::ratedunqueue::RatedUnqueue,
    crate::standard::roundrobinswitch::RoundRobinSwitch,
    crate::standard::settimestamp::SetTimestamp,
    crate::standard::simplequeue::SimpleQueue,
    crate::standard::staticswitch::StaticSwitch,
    crate::standard::strip::Strip,
    crate::standard::striptonet::StripToNetworkHeader,
    crate::standard::switch::Switch,
    crate::standard::tee::PullTee,
    crate::standard::tee::Tee,
    crate::standard::timedsource::TimedSource,
    crate::standard::truncate::Truncate,
    crate::standard::unqueue::Unqueue,
    crate::standard::unstrip::Unstrip,
    crate::standard::workpackage::WorkPackage,
    crate::standard::bandwidthmeter::BandwidthMeter,
    crate::standard::bandwidthratedsplitter::BandwidthRatedSplitter,
    crate::standard::bandwidthratedunqueue::BandwidthRatedUnqueue,
    crate::standard::bandwidthshaper::BandwidthShaper,
    crate::standard::drrsched::DRRSched,
    crate::standard::meter::Meter,
    crate::standard::priosched::PrioSched,
    crate::standard::ratedsplitter::RatedSplitter,
    crate::standard::rrsched::RoundRobinSched,
    crate::standard::shaper::Shaper,
    crate::standard::flowpolicer::FlowPolicer,
    crate::standard::packetgen::PacketGen,
    crate::standard::packetsink::PacketSink,
    crate::standard::frontdropqueue::FrontDropQueue,
    crate::standard::fullnotequeue::FullNoteQueue,
    crate::standard::mixedqueue::MixedQueue,
    crate::standard::msqueue::MSQueue,
    crate::standard::notifierqueue::NotifierQueue,
    crate::standard::quicknotequeue::QuickNoteQueue,
    crate::standard::threadsafequeue::ThreadSafeQueue,
    crate::standard::null1::Null1,
    crate::standard::null2::Null2,
    crate::standard::null3::Null3,
    crate::standard::null4::Null4,
    crate::standard::null5::Null5,
    crate::standard::null6::Null6,
    crate::standard::null7::Null7,
    crate::standard::null8::Null8,
    crate::standard::pullnull::PullNull,
    crate::standard::pushnull::PushNull,
    crate::standard::align::Align,
    crate::standard::alignmentinfo::AlignmentInfo,
    crate::standard::annotationinfo::AnnotationInfo,
    crate::standard::bypass::Bypass,
    crate::standard::clickyinfo::ClickyInfo,
    crate::standard::devirtualizeinfo::DevirtualizeInfo,
    crate::standard::errorelement::ErrorElement,
    crate::standard::hub::Hub,
    crate::standard::inputswitch::InputSwitch,
    crate::standard::markmacheader::MarkMACHeader,
    crate::standard::messageelement::MessageElement,
    crate::standard::pad::Pad,
    crate::standard::portinfo::PortInfo,
    crate::standard::resize::Resize,
    crate::standard::scheduleinfo::ScheduleInfo,
    crate::standard::pullswitch::PullSwitch,
    crate::simple::simplepullswitch::SimplePullSwitch,
    crate::standard::staticpullswitch::StaticPullSwitch,
    crate::standard::stridesched::StrideSched,
    crate::standard::strideswitch::StrideSwitch,
    crate::standard::timedsink::TimedSink,
    crate::simple::simpleidle::SimpleIdle,
    crate::simple::simplepriosched::SimplePrioSched,
    crate::simple::simplerrsched::SimpleRoundRobinSched,
    crate::standard::clipboard::Clipboard,
    crate::standard::delayshaper::DelayShaper,
    crate::standard::delayunqueue::DelayUnqueue,
    crate::standard::linkunqueue::LinkUnqueue,
    crate::standard::timedunqueue::TimedUnqueue,
    crate::standard::unqueue2::Unqueue2,
    crate::standard::block::Block,
    crate::standard::burster::Burster,
    crate::standard::checkcrc32::CheckCRC32,
    crate::standard::checklength::CheckLength,
    crate::standard::compblock::CompareBlock,
    crate::standard::randombiterrors::RandomBitErrors,
    crate::standard::randomsample::RandomSample,
    crate::standard::randomsource::RandomSource,
    crate::standard::setcrc32::SetCRC32,
    crate::test::randomseed::RandomSeed,
    crate::standard::cpuqueue::CPUQueue,
    crate::standard::cpuswitch::CPUSwitch,
    crate::standard::discardnofree::DiscardNoFree,
    crate::standard::flowinfo::FlowInfo,
    crate::standard::setannobyte::SetAnnoByte,
    crate::standard::setpackettype::SetPacketType,
    crate::standard::storedata::StoreData,
    crate::standard::suppressor::Suppressor,
    crate::threads::spinlockacquire::SpinlockAcquire,
    crate::threads::spinlockinfo::SpinlockInfo,
    crate::threads::spinlockpush::SpinlockPush,
    crate::threads::spinlockrelease::SpinlockRelease,
    // end standard
    // ip/
    crate::ip::addressinfo::AddressInfo,
    crate::ip::checkipheader::CheckIPHeader,
    crate::ip::checkipheader2::CheckIPHeader2,
    crate::ip::decipttl::DecIPTTL,
    crate::ip::directiplookup::DirectIPLookup,
    crate::ip::dropbroadcasts::DropBroadcasts,
    crate::ip::getipaddress::GetIPAddress,
    crate::ip::icmppingresponder::ICMPPingResponder,
    crate::ip::ipclassifier::IPClassifier,
    crate::ip::ipencap::IPEncap,
    crate::ip::ipfilter::IPFilter,
    crate::ip::ipprint::IPPrint,
    crate::ip::lineariplookup::LinearIPLookup,
    crate::ip::markipheader::MarkIPHeader,
    crate::ip::radixiplookup::RadixIPLookup,
    crate::ip::linuxiplookup::LinuxIPLookup,
    crate::ip::ipratemon::IPRateMonitor,
    crate::ip::setipaddress::SetIPAddress,
    crate::ip::setipchecksum::SetIPChecksum,
    crate::ip::staticiplookup::StaticIPLookup,
    crate::ip::storeipaddress::StoreIPAddress,
    crate::ip::stripipheader::StripIPHeader,
    crate::ip::unstripipheader::UnstripIPHeader,
    crate::ip::fixipsrc::FixIPSrc,
    crate::ip::ipfragmenter::IPFragmenter,
    crate::ip::ipgwoptions::IPGWOptions,
    crate::ip::ipmirror::IPMirror,
    crate::ip::ipreassembler::IPReassembler,
    crate::ip::markipce::MarkIPCE,
    crate::ip::setipdscp::SetIPDSCP,
    crate::ip::setipecn::SetIPECN,
    crate::ip::rangeiplookup::RangeIPLookup,
    crate::ip::sortediplookup::SortedIPLookup,
    crate::ip::ipfieldinfo::IPFieldInfo,
    crate::ip::ipinputcombo::IPInputCombo,
    crate::ip::ipnameinfo::IPNameInfo,
    crate::ip::ipoutputcombo::IPOutputCombo,
    crate::ip::lookupiproutemp::LookupIPRouteMP,
    crate::ip::ripsend::RIPSend,
    crate::ip::rfc2507comp::RFC2507Comp,
    crate::ip::rfc2507decomp::RFC2507Decomp,
    crate::ip::setrandipaddress::SetRandIPAddress,
    crate::ip::truncateippayload::TruncateIPPayload,
    // ip6/
    crate::ip6::checkip6header::CheckIP6Header,
    crate::ip6::decip6hlim::DecIP6HLIM,
    crate::ip6::getip6address::GetIP6Address,
    crate::ip6::icmp6error::ICMP6Error,
    crate::ip6::ip6drop::IP6Drop,
    crate::ip6::ip6encap::IP6Encap,
    crate::ip6::ip6fragmenter::IP6Fragmenter,
    crate::ip6::ip6mirror::IP6Mirror,
    crate::ip6::ip6print::IP6Print,
    crate::ip6::markip6header::MarkIP6Header,
    crate::ip6::setip6address::SetIP6Address,
    crate::ip6::setip6dscp::SetIP6DSCP,
    // end ip
    // ip6/ route lookup and ethernet/ neighbor discovery
    crate::ip6::lookupip6route::LookupIP6Route,
    crate::ethernet::ip6ndadvertiser::IP6NDAdvertiser,
    crate::ethernet::ip6ndsolicitor::IP6NDSolicitor,
    // end ip6 route lookup and neighbor discovery
    // tcpudp/
    crate::tcpudp::checkicmpheader::CheckICMPHeader,
    crate::tcpudp::checktcpheader::CheckTCPHeader,
    crate::tcpudp::checkudpheader::CheckUDPHeader,
    crate::tcpudp::iprewriter::IPRewriter,
    crate::tcpudp::iprewriterpatterns::IPRewriterPatterns,
    crate::tcpudp::settcpchecksum::SetTCPChecksum,
    crate::tcpudp::setudpchecksum::SetUDPChecksum,
    crate::tcpudp::tcprewriter::TCPRewriter,
    crate::tcpudp::udpipencap::UDPIPEncap,
    crate::tcpudp::udprewriter::UDPRewriter,
    crate::tcpudp::ipaddrrewriter::IPAddrRewriter,
    crate::tcpudp::ipaddrpairrewriter::IPAddrPairRewriter,
    crate::tcpudp::rripmapper::RoundRobinIPMapper,
    crate::tcpudp::sourceiphashmapper::SourceIPHashMapper,
    crate::tcpudp::maglevipmapper::MaglevIPMapper,
    crate::tcpudp::ftpportmapper::FTPPortMapper,
    crate::tcpudp::dynudpipencap::DynamicUDPIPEncap,
    crate::tcpudp::fasttcpflows::FastTCPFlows,
    crate::tcpudp::fastudpflows::FastUDPFlows,
    crate::tcpudp::fastudpsrcip6::FastUDPSourceIP6,
    crate::tcpudp::udpip6encap::UDPIP6Encap,
    crate::tcpudp::tcpfragmenter::TCPFragmenter,
    crate::tcpudp::tcpipsend::TCPIPSend,
    // end tcpudp
    // ethernet/
    crate::ethernet::arpprint::ArpPrint,
    crate::ethernet::arpquerier::ArpQuerier,
    crate::ethernet::arpresponder::ArpResponder,
    crate::ethernet::etherencap::EtherEncap,
    crate::ethernet::ethermirror::EtherMirror,
    crate::ethernet::etherrewrite::EtherRewrite,
    crate::ethernet::hostetherfilter::HostEtherFilter,
    crate::ethernet::vlanencap::VLANEncap,
    crate::ethernet::vlandecap::VLANDecap,
    crate::ethernet::ethervlanencap::EtherVLANEncap,
    crate::ethernet::stripethervlanheader::StripEtherVLANHeader,
    crate::ethernet::setvlananno::SetVLANAnno,
    crate::ethernet::arptable::ARPTable,
    crate::ethernet::arpfaker::ARPFaker,
    crate::ethernet::etherpausesource::EtherPauseSource,
    crate::ethernet::checkarpheader::CheckARPHeader,
    crate::ethernet::ensureether::EnsureEther,
    crate::ethernet::getetheraddress::GetEtherAddress,
    crate::ethernet::setetheraddress::SetEtherAddress,
    crate::ethernet::storeetheraddress::StoreEtherAddress,
    // end ethernet
    // analysis/
    crate::analysis::adjusttimestamp::AdjustTimestamp,
    crate::analysis::aggregatecounter::AggregateCounter,
    crate::analysis::aggregateipflows::AggregateIPFlows,
    crate::analysis::aggregatefilter::AggregateFilter,
    crate::analysis::aggregatefirst::AggregateFirst,
    crate::analysis::aggregateip::AggregateIP,
    crate::analysis::aggregateipaddrpair::AggregateIPAddrPair,
    crate::analysis::aggregatelast::AggregateLast,
    crate::analysis::aggregatelength::AggregateLength,
    crate::analysis::aggregatepacketcounter::AggregatePacketCounter,
    crate::analysis::aggregatepaint::AggregatePaint,
    crate::analysis::anonymizeipaddr::AnonymizeIPAddr,
    crate::analysis::eraseippayload::EraseIPPayload,
    crate::analysis::storeudptimeseqrecord::StoreUDPTimeSeqRecord,
    crate::analysis::settimestampdelta::SetTimestampDelta,
    crate::analysis::storetimestamp::StoreTimestamp,
    crate::analysis::timefilter::TimeFilter,
    crate::analysis::timerange::TimeRange,
    crate::analysis::timesortedsched::TimeSortedSched,
    crate::analysis::timestampaccum::TimestampAccum,
    // end analysis
    // app/
    crate::app::fromcapdump::FromCapDump,
    crate::app::fromdagdump::FromDAGDump,
    crate::app::fromdump::FromDump,
    crate::app::fromipsummarydump::FromIPSummaryDump,
    crate::app::fromnetflowsumdump::FromNetFlowSummaryDump,
    crate::app::fromnlanrdump::FromNLANRDump,
    crate::app::fromtcpdump::FromTcpdump,
    crate::app::todump::ToDump,
    crate::app::toipflowdumps::ToIPFlowDumps,
    crate::app::toipsummarydump::ToIPSummaryDump,
    // end app
    // icmp/
    crate::icmp::icmppingrewriter::ICMPPingRewriter,
    crate::icmp::icmprewriter::ICMPRewriter,
    crate::icmp::icmperror::ICMPError,
    crate::icmp::icmpipencap::ICMPIPEncap,
    crate::icmp::icmppingencap::ICMPPingEncap,
    crate::icmp::icmppingsource::ICMPPingSource,
    // end icmp
    // aqm/
    crate::aqm::red::RED,
    crate::aqm::adaptivered::AdaptiveRED,
    crate::aqm::codel::CoDel,
    // end aqm
    // ids/
    crate::ids::idsmatcher::IDSMatcher,
    // end ids
    // bras/
    crate::bras::pppoeserver::PPPoEServer,
    // end bras
    // stateful/
    crate::stateful::cgnat::Cgnat,
    crate::stateful::flowmonitor::FlowMonitor,
    crate::stateful::nat64::Nat64,
    crate::stateful::statefulfirewall::StatefulFirewall,
    // end stateful
    // vpn/
    crate::vpn::wireguard::WireGuard,
    // end vpn
    // userlevel/
    crate::userlevel::chattersocket::ChatterSocket,
    crate::userlevel::fastudpsrc::FastUDPSource,
    crate::userlevel::fromdevice::FromDevice,
    crate::userlevel::fromhost::FromHost,
    crate::userlevel::fromrawsocket::FromRawSocket,
    crate::userlevel::fromsocket::FromSocket,
    crate::userlevel::ipflowrawsockets::IPFlowRawSockets,
    crate::userlevel::kerneltap::KernelTap,
    crate::userlevel::kerneltun::KernelTun,
    crate::userlevel::mcastsocket::McastSocket,
    crate::userlevel::rawsocket::RawSocket,
    crate::userlevel::socket::Socket,
    crate::userlevel::todevice::ToDevice,
    crate::userlevel::tohost::ToHost,
    crate::userlevel::torawsocket::ToRawSocket,
    crate::userlevel::tosocket::ToSocket,
    crate::userlevel::umlswitch::UMLSwitch,
    // end userlevel
    // ip6/: translation and segment routing
    crate::ip6::addresstranslator::AddressTranslator,
    crate::ip6::ip6srdecap::IP6SRDecap,
    crate::ip6::ip6srencap::IP6SREncap,
    crate::ip6::ip6srprocess::IP6SRProcess,
    crate::ip6::nptv6::NPTv6,
    crate::ip6::protocoltranslator46::ProtocolTranslator46,
    crate::ip6::protocoltranslator64::ProtocolTranslator64,
    // end ip6 translation and segment routing
);

/// Click's other names for classes (`EXPORT_ELEMENT(Class Class-Alias)`):
/// `(alias, class)`, sorted by alias. A configuration may use either.
pub const ALIASES: &[(&str, &str)] = &[
    ("EtherVlanEncap", "EtherVLANEncap"),
    ("ICMPSendPings", "ICMPPingSource"),
    ("SetVlanAnno", "SetVLANAnno"),
    ("StripEtherVlanHeader", "StripEtherVLANHeader"),
];

/// Click classes pronto does not have, with the reason: what `pronto check`
/// says after "unknown element class". Sorted by name. The userlevel ones
/// are listed with the same reasons in docs/compatibility.md.
pub const NOT_IN_PRONTO: &[(&str, &str)] = &[
    ("ChangeUID", "instances already run as an unprivileged user in their sandbox"),
    ("CycleCountAccum", KERNEL),
    ("FromUserDevice", KERNEL),
    ("KernelFilter", "it rewrites the host's iptables rules, which a tenant's middlebox must never touch; FromDevice takes frames with AF_XDP or AF_PACKET"),
    ("KernelHandlerProxy", KERNEL),
    ("PerfCountAccum", KERNEL),
    ("PerfCountInfo", KERNEL),
    ("PollDevice", "a Click kernel-module element; at user level FromDevice polls (METHOD RING, SOCKET or XDP)"),
    ("RoundTripCycleCount", KERNEL),
    ("ScheduleLinux", KERNEL),
    ("SetCycleCount", KERNEL),
    ("SetPerfCount", KERNEL),
    ("ThreadMonitor", KERNEL),
    ("ToHostSniffers", "a Click kernel-module element; ToHost hands packets to the host stack"),
    ("ToUserDevice", KERNEL),
];

const KERNEL: &str =
    "a Click kernel-module element: pronto runs at user level and has no kernel module";

/// Why pronto has no class of this Click name, when it knows.
pub fn why_not(name: &str) -> Option<&'static str> {
    NOT_IN_PRONTO
        .binary_search_by_key(&name, |a| a.0)
        .ok()
        .map(|i| NOT_IN_PRONTO[i].1)
}

/// Looks up a class by its Click name (or one of Click's aliases).
pub fn lookup(name: &str) -> Option<ClassEntry> {
    let all = all();
    let name = ALIASES
        .binary_search_by_key(&name, |a| a.0)
        .map_or(name, |i| ALIASES[i].1);
    all.binary_search_by_key(&name, |e| e.spec.name)
        .ok()
        .map(|i| all[i])
}
