// FromDAGDump reading ERF Ethernet and HDLC/PoS records (one captured short,
// the last one cut), FromNLANRDump reading TSH records: IP headers without
// options split by the interface number (paint), the one with options on
// output 1.
d :: FromDAGDump(input.erf, STOP true) -> ToDump(output_erf.pcap);
n :: FromNLANRDump(input.tsh, STOP true) -> ps :: PaintSwitch;
ps[0] -> ToDump(output_tsh0.pcap, ENCAP IP);
ps[1] -> ToDump(output_tsh1.pcap, ENCAP IP);
n[1] -> ToDump(output_tsh_options.pcap, ENCAP IP);
DriverManager(wait, wait, print d.encap, print n.encap, print n.filepos);
