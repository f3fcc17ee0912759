// ICMPError: time exceeded, needfrag with PMTU and a small MTU, redirect (gateway
// from the destination annotation), parameter problem (pointer annotation 0),
// port unreachable with BADADDRS; no answers to ICMP errors, later fragments,
// broadcast/multicast destinations, bad sources; reversed source routes; quoting
// up to MTU (Ethernet padding included); one IP ID counter for all ICMPErrors;
// FixIPSrc after ICMPError (SET_FIX_ANNO false leaves the source alone).
// The IP frames come five times, in blocks of TOS 0/4/8/12/16, the TOS selecting
// the ICMPError: the ID counter they share counts in trace order however packets
// are batched.
src :: FromDump(input.pcap, STOP true);
t :: Classifier(15/00, 15/04, 15/08, 15/0c, 15/10);
src -> Classifier(12/0800) -> t;
t[0] -> Strip(14) -> MarkIPHeader -> t0 :: Null;
t[1] -> Strip(14) -> MarkIPHeader -> t1 :: Null;
t[2] -> Strip(14) -> MarkIPHeader -> t2 :: Null;
t[3] -> Strip(14) -> MarkIPHeader -> t3 :: Null;
t[4] -> Strip(14) -> MarkIPHeader -> t4 :: Null;
enc :: { input -> SetTimestamp(1600000000.000000)
         -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02) -> output };
t0 -> ICMPError(18.26.4.24, timeexceeded) -> enc -> ToDump(output_timeexceeded.pcap);
t1 -> ICMPError(18.26.4.24, unreachable, needfrag, PMTU 1400, MTU 100)
     -> FixIPSrc(9.9.9.9) -> enc2 :: { input -> SetTimestamp(1600000000.000000)
         -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02) -> output }
     -> ToDump(output_needfrag.pcap);
t2 -> SetIPAddress(10.0.0.254) -> ICMPError(1.2.3.4, redirect, host)
     -> enc3 :: { input -> SetTimestamp(1600000000.000000)
         -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02) -> output }
     -> ToDump(output_redirect.pcap);
t3 -> ICMPError(1.2.3.4, parameterproblem, SET_FIX_ANNO false) -> FixIPSrc(9.9.9.9)
     -> enc4 :: { input -> SetTimestamp(1600000000.000000)
         -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02) -> output }
     -> ToDump(output_paramprob.pcap);
t4 -> ICMPError(1.2.3.4, 3, 3, 10.0.0.255 10.1.255.255, MTU 1500)
     -> enc5 :: { input -> SetTimestamp(1600000000.000000)
         -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02) -> output }
     -> ToDump(output_port.pcap);
