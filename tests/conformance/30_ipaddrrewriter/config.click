// Basic NAT: IPAddrRewriter maps inside sources 192.168.0.0/16 to 10.0.0.1-10.0.0.3
// (sequential), any protocol; packets to a mapped address come back on output 1.
// Other outside packets pass unchanged on output 2.
src :: FromDump(input.pcap, STOP true);
dir :: IPClassifier(src net 192.168.0.0/16, -);
rw :: IPAddrRewriter(pattern 10.0.0.1-10.0.0.3# - 0 1, pass 2, GUARANTEE 0, TIMEOUT 600);
src -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> dir;
dir[0] -> [0]rw;
dir[1] -> [1]rw;
rw[0] -> Unstrip(14) -> ToDump(output_out.pcap);
rw[1] -> Unstrip(14) -> ToDump(output_in.pcap);
rw[2] -> Unstrip(14) -> ToDump(output_pass.pcap);
DriverManager(wait, print rw.table_size, print rw.size, print rw.mapping_failures,
              print rw.patterns, print rw.table);
