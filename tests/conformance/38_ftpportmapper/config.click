// FTPPortMapper with TCPRewriter, as Click documents them: FTP control packets from the
// inside (1.0.0.0/8) pass FTPPortMapper(rw, rw, 0) and then input 0 of the rewriter
// (source NAPT to 10.0.0.1, ports 9000-14000 in order); packets to 10.0.0.1 come back on
// input 1. PORT commands are rewritten to the mapped address, the data connection's
// mapping is installed, and later sequence/acknowledgement numbers (and SACK blocks)
// of the control connection move by the length change.
src :: FromDump(input.pcap, STOP true);
IPRewriterPatterns(nat 10.0.0.1 9000-14000# - -);
rw :: TCPRewriter(pattern nat 0 1, drop);
dir :: IPClassifier(src net 1.0.0.0/8 and tcp, dst host 10.0.0.1 and tcp, -);
src -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> dir;
dir[0] -> FTPPortMapper(rw, rw, 0) -> [0]rw;
dir[1] -> [1]rw;
dir[2] -> Discard;
rw[0] -> Unstrip(14) -> ToDump(output_out.pcap);
rw[1] -> Unstrip(14) -> ToDump(output_in.pcap);
DriverManager(wait, print rw.table_size, print rw.mapping_failures, print rw.patterns);
