// HashSwitch (sum of bytes; 3 outputs: modulo, 4 outputs: (d ^ d>>4) & 3; short packets
// to output 0), RoundRobinSwitch, StaticSwitch (out-of-range output drops), Switch.
src :: FromDump(input.pcap, STOP true);
t :: Tee(6);
src -> t;
t[0] -> h3 :: HashSwitch(26, 8);
h3[0] -> ToDump(output_hash3_0.pcap);
h3[1] -> ToDump(output_hash3_1.pcap);
h3[2] -> ToDump(output_hash3_2.pcap);
t[1] -> h4 :: HashSwitch(30, 4);
h4[0] -> ToDump(output_hash4_0.pcap);
h4[1] -> ToDump(output_hash4_1.pcap);
h4[2] -> ToDump(output_hash4_2.pcap);
h4[3] -> ToDump(output_hash4_3.pcap);
t[2] -> rr :: RoundRobinSwitch;
rr[0] -> ToDump(output_rr_0.pcap);
rr[1] -> ToDump(output_rr_1.pcap);
rr[2] -> ToDump(output_rr_2.pcap);
t[3] -> ss :: StaticSwitch(1);
ss[0] -> c0 :: Counter -> Discard;
ss[1] -> ToDump(output_static_1.pcap);
ss[2] -> c2 :: Counter -> Discard;
t[4] -> ssx :: StaticSwitch(7);
ssx[0] -> c3 :: Counter -> Discard;
ssx[1] -> c4 :: Counter -> Discard;
t[5] -> sw :: Switch(2);
sw[0] -> c5 :: Counter -> Discard;
sw[1] -> c6 :: Counter -> Discard;
sw[2] -> ToDump(output_switch_2.pcap);
DriverManager(wait, print c0.count, print c2.count, print c3.count, print c4.count,
              print c5.count, print c6.count, print sw.switch);
