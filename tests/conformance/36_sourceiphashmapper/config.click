// SourceIPHashMapper: destination NAT of clients to three servers chosen by a
// consistent hash of the client's source address (8 nodes per server, seed 12345;
// server IDs 5, 0, 2 given out of order, so the ID order and the pattern order
// differ); the same client always reaches the same server. Replies from the
// servers come back on input 1, with the VIP restored.
src :: FromDump(input.pcap, STOP true);
dir :: IPClassifier(dst host 192.0.2.10, -);
sh :: SourceIPHashMapper(8 12345,
                         - - 10.1.0.1 80 0 1 5,
                         - - 10.1.0.2 80 0 1 0,
                         - - 10.1.0.3 8080 0 1 2);
rw :: IPRewriter(sh, drop);
src -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> dir;
dir[0] -> [0]rw;
dir[1] -> [1]rw;
rw[0] -> Unstrip(14) -> ToDump(output_servers.pcap);
rw[1] -> Unstrip(14) -> ToDump(output_clients.pcap);
DriverManager(wait, print rw.nmappings, print rw.mapping_failures);
