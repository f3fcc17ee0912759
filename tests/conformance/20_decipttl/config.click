// DecIPTTL: TTL <= 1 to output 1, otherwise decrement with the RFC 1624 incremental
// checksum update (bad checksums stay bad). MULTICAST false passes multicast untouched.
src :: FromDump(input.pcap, STOP true);
t :: Tee(2);
dec :: DecIPTTL;
decm :: DecIPTTL(MULTICAST false);
src -> Classifier(12/0800) -> MarkIPHeader(14) -> t;
t[0] -> dec -> ToDump(output_forward.pcap);
dec[1] -> ToDump(output_expired.pcap);
t[1] -> decm -> ToDump(output_forward_nomc.pcap);
decm[1] -> ToDump(output_expired_nomc.pcap);
DriverManager(wait, print dec.drops, print decm.drops);
