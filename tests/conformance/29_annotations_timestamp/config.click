// SetTimestamp (nanosecond values), Paint/PaintSwitch on other annotation bytes (Click's
// layout: dst IP at 0, paint at 16, extra length u32 at 28), Counter byte_count.
src :: FromDump(input.pcap, STOP true);
t :: Tee(4);
src -> all :: Counter -> t;
t[0] -> SetTimestamp(1234.5) -> ToDump(output_ts_fixed.pcap);
t[1] -> SetTimestamp(1700000000.123456789) -> Paint(5, ANNO 28) -> ToDump(output_paint_extra_len.pcap);
t[2] -> Paint(1) -> Paint(2, ANNO 40) -> ps :: PaintSwitch(ANNO 40);
ps[0] -> Discard;
ps[1] -> Discard;
ps[2] -> CheckPaint(1) -> c2 :: Counter -> ToDump(output_paint_anno.pcap);
t[3] -> Classifier(12/0800) -> GetIPAddress(30) -> Paint(99, ANNO 0) -> StoreIPAddress(26)
     -> Strip(14) -> stripped :: Counter -> Unstrip(14) -> ToDump(output_dst_anno_paint.pcap);
DriverManager(wait, print all.count, print all.byte_count, print stripped.count,
              print stripped.byte_count, print c2.count, print c2.byte_count);
