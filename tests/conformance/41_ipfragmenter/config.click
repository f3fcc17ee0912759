// IPFragmenter: packets over the MTU split at multiples of 8 data bytes, first
// fragment first; later fragments carry only the options with the copy bit (NOPs
// dropped, EOL padding); fragments of fragments keep MF and offsets; DF packets
// go to output 1; fragments and drops handlers. Fragments keep the input timestamp.
src :: FromDump(input.pcap, STOP true);
t :: Tee(2);
src -> Classifier(12/0800) -> Strip(14) -> MarkIPHeader -> t;
t[0] -> f1 :: IPFragmenter(576)
     -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02) -> ToDump(output_576.pcap);
f1[1] -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:03) -> ToDump(output_df576.pcap);
t[1] -> f2 :: IPFragmenter(100, HONOR_DF true, HEADROOM 64)
     -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:02) -> ToDump(output_100.pcap);
f2[1] -> EtherEncap(0x0800, 00:00:00:00:00:01, 00:00:00:00:00:03) -> ToDump(output_df100.pcap);
DriverManager(wait, print f1.fragments, print f1.drops, print f2.fragments, print f2.drops);
