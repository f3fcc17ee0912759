// SetIPAddress / GetIPAddress / StoreIPAddress: the destination-address annotation written
// into the IP header (src/dst forms update the IP, TCP and nonzero UDP checksums
// incrementally), an explicit address, and raw byte offsets (no checksum update).
src :: FromDump(input.pcap, STOP true);
t :: Tee(5);
src -> Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> t;
t[0] -> SetIPAddress(10.99.0.1) -> StoreIPAddress(src) -> Unstrip(14) -> ToDump(output_set_src.pcap);
t[1] -> GetIPAddress(IP src) -> StoreIPAddress(dst) -> Unstrip(14) -> ToDump(output_src_to_dst.pcap);
t[2] -> StoreIPAddress(192.0.2.77, dst) -> Unstrip(14) -> ToDump(output_store_dst.pcap);
t[3] -> GetIPAddress(12) -> Unstrip(14) -> StoreIPAddress(6) -> ToDump(output_store_offset.pcap);
t[4] -> Unstrip(14) -> StoreIPAddress(255.1.2.3, 0) -> StoreIPAddress(254.4.5.6, 26)
     -> ToDump(output_store_addr_offset.pcap);
