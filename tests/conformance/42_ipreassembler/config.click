// IPReassembler: in-order, reversed and interleaved fragments; overlapping and
// duplicate fragments (later bytes win); the link header of the offset-0
// fragment; Ethernet padding trimmed; bad fragments dropped; fragments past a
// completed end ignored; the dump handler with packets left incomplete. A second
// reassembler with HIMEM 1500 gives packets up (to a Counter) to stay under 3/4 of it.
src :: FromDump(input.pcap, STOP true);
t :: Tee(2);
src -> Classifier(12/0800) -> MarkIPHeader(14) -> t;
t[0] -> r :: IPReassembler -> ToDump(output_reassembled.pcap);
r[1] -> Discard;
t[1] -> r2 :: IPReassembler(HIMEM 1500) -> ToDump(output_himem.pcap);
r2[1] -> gaveup :: Counter -> Discard;
DriverManager(wait, print r.dump, print r2.dump, print gaveup.count);
