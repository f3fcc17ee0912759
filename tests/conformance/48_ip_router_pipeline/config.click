// Click's classic two-interface IP router (conf/make-ip-conf.pl's shape, as
// examples/router.click) with inline routes: ARPResponder/ARPQuerier per
// interface, Paint, Strip, CheckIPHeader(INTERFACES), GetIPAddress(16),
// RadixIPLookup, DropBroadcasts, PaintTee -> ICMPError(redirect), IPGWOptions,
// FixIPSrc, DecIPTTL, IPFragmenter(1500), ICMP errors routed back. Packets the
// router makes get SetTimestamp. Redirects are written to their own file (Click
// emits PaintTee's copy before the original; output order across ports is not
// part of this case).
src :: FromDump(input.pcap, STOP true);
out :: Counter -> ToDump(output_out.pcap);

// Which interface received a frame: by the sender's segment.
seg :: Classifier(6/02000a0000, 6/02000a0001, -);
src -> seg;
seg[2] -> foreign :: Counter -> Discard;

redirects :: ToDump(output_redirect.pcap);

// Shared IP input path and routing table
ip :: Strip(14)
    -> chk :: CheckIPHeader(INTERFACES 10.0.0.1/24 10.0.1.1/24)
    -> ip_in :: Counter
    -> GetIPAddress(16)
    -> rt :: RadixIPLookup(10.0.0.1/32 0, 10.0.0.255/32 0, 10.0.0.0/32 0,
                           10.0.1.1/32 0, 10.0.1.255/32 0, 10.0.1.0/32 0,
                           10.0.0.0/24 1, 10.0.1.0/24 2,
                           255.255.255.255/32 0, 0.0.0.0/32 0,
                           198.51.100.0/24 10.0.0.2 1, 203.0.113.0/24 10.0.1.2 2,
                           203.0.113.128/25 10.0.0.2 1);

// Input and output paths for eth0
seg[0] -> HostEtherFilter(02:00:0a:00:00:01)
    -> c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
c0[0] -> arpq_in0 :: Counter -> ar0 :: ARPResponder(10.0.0.1 02:00:0a:00:00:01)
    -> arpa0 :: Counter -> SetTimestamp(1600000000.000000) -> out;
arpq0 :: ARPQuerier(10.0.0.1, 02:00:0a:00:00:01) -> out;
c0[1] -> arpr_in0 :: Counter -> [1]arpq0;
c0[2] -> Paint(1) -> ip;
c0[3] -> other0 :: Counter -> Discard;

// Input and output paths for eth1
seg[1] -> HostEtherFilter(02:00:0a:00:01:01)
    -> c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
c1[0] -> arpq_in1 :: Counter -> ar1 :: ARPResponder(10.0.1.1 02:00:0a:00:01:01)
    -> arpa1 :: Counter -> SetTimestamp(1600000000.000000) -> out;
arpq1 :: ARPQuerier(10.0.1.1, 02:00:0a:00:01:01) -> out;
c1[1] -> arpr_in1 :: Counter -> [1]arpq1;
c1[2] -> Paint(2) -> ip;
c1[3] -> other1 :: Counter -> Discard;

// Local delivery
rt[0] -> local :: Counter -> Discard;

// Forwarding path for eth0
rt[1] -> db0 :: DropBroadcasts
    -> cp0 :: PaintTee(1)
    -> gio0 :: IPGWOptions(10.0.0.1)
    -> FixIPSrc(10.0.0.1)
    -> dt0 :: DecIPTTL
    -> fr0 :: IPFragmenter(1500)
    -> fwd0 :: Counter
    -> [0]arpq0;
dt0[1] -> ttl0 :: Counter -> ICMPError(10.0.0.1, timeexceeded) -> SetTimestamp(1600000000.000000) -> rt;
fr0[1] -> frag0 :: Counter -> ICMPError(10.0.0.1, unreachable, needfrag, PMTU 1500) -> SetTimestamp(1600000000.000000) -> rt;
gio0[1] -> opt0 :: Counter -> ICMPError(10.0.0.1, parameterproblem) -> SetTimestamp(1600000000.000000) -> rt;
cp0[1] -> redir0 :: Counter -> ICMPError(10.0.0.1, redirect, host) -> SetTimestamp(1600000000.000000)
    -> rdr0 :: IPClassifier(dst host 10.0.0.5, dst host 10.0.0.7);
rdr0[0] -> EtherEncap(0x0800, 02:00:0a:00:00:01, 02:00:0a:00:00:05) -> redirects;
rdr0[1] -> EtherEncap(0x0800, 02:00:0a:00:00:01, 02:00:0a:00:00:07) -> redirects;

// Forwarding path for eth1
rt[2] -> db1 :: DropBroadcasts
    -> cp1 :: PaintTee(2)
    -> gio1 :: IPGWOptions(10.0.1.1)
    -> FixIPSrc(10.0.1.1)
    -> dt1 :: DecIPTTL
    -> fr1 :: IPFragmenter(1500)
    -> fwd1 :: Counter
    -> [0]arpq1;
dt1[1] -> ttl1 :: Counter -> ICMPError(10.0.1.1, timeexceeded) -> SetTimestamp(1600000000.000000) -> rt;
fr1[1] -> frag1 :: Counter -> ICMPError(10.0.1.1, unreachable, needfrag, PMTU 1500) -> SetTimestamp(1600000000.000000) -> rt;
gio1[1] -> opt1 :: Counter -> ICMPError(10.0.1.1, parameterproblem) -> SetTimestamp(1600000000.000000) -> rt;
cp1[1] -> redir1 :: Counter -> ICMPError(10.0.1.1, redirect, host) -> SetTimestamp(1600000000.000000)
    -> rdr1 :: IPClassifier(dst host 10.0.1.5, dst host 10.0.1.7);
rdr1[0] -> EtherEncap(0x0800, 02:00:0a:00:01:01, 02:00:0a:00:01:05) -> redirects;
rdr1[1] -> EtherEncap(0x0800, 02:00:0a:00:01:01, 02:00:0a:00:01:07) -> redirects;

DriverManager(wait,
  print $(src.count), print $(arpq_in0.count), print $(arpq_in1.count),
  print $(arpa0.count), print $(arpa1.count), print $(arpr_in0.count), print $(arpr_in1.count),
  print $(arpq0.queries), print $(arpq1.queries), print $(arpq0.responses), print $(arpq1.responses),
  print $(ip_in.count), print $(chk.drops), print $(local.count), print $(fwd0.count), print $(fwd1.count),
  print $(db0.drops), print $(db1.drops), print $(ttl0.count), print $(ttl1.count), print $(frag0.count),
  print $(frag1.count), print $(opt0.count), print $(opt1.count), print $(redir0.count), print $(redir1.count),
  print $(fr0.fragments), print $(fr1.fragments), print $(other0.count), print $(other1.count),
  print $(foreign.count), print $(out.count));
