// ICMPRewriter: ICMP errors about flows of an IPAddrRewriter (basic NAT) and an
// ICMPPingRewriter are rewritten back to the inside host (embedded header, ports or echo
// identifier, inner and outer checksums); errors about unknown flows, non-error ICMP and
// non-ICMP packets are dropped.
src :: FromDump(input.pcap, STOP true);
dir :: IPClassifier(src net 192.168.0.0/16 and icmp type echo, src net 192.168.0.0/16,
                    icmp type echo-reply, -);
rw :: IPAddrRewriter(pattern 10.0.0.1-10.0.0.2# - 0 1);
pr :: ICMPPingRewriter(pattern 10.0.0.3 1024-65535# - - 0 1, drop);
ir :: ICMPRewriter(rw pr);
out :: ToDump(output_out.pcap);
src -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> dir;
dir[0] -> [0]pr;
dir[1] -> [0]rw;
dir[2] -> [1]pr;
dir[3] -> ir;
rw[0] -> Unstrip(14) -> out;
pr[0] -> Unstrip(14) -> out;
rw[1] -> Unstrip(14) -> Discard;
pr[1] -> Unstrip(14) -> Discard;
ir -> Unstrip(14) -> ToDump(output_icmp.pcap);
