// HostEtherFilter sets the packet-type annotation (HOST, BROADCAST, MULTICAST, OTHERHOST);
// DropBroadcasts drops BROADCAST/MULTICAST by annotation only (FromDump leaves it HOST).
src :: FromDump(input.pcap, STOP true);
t :: Tee(3);
src -> t;
t[0] -> hf :: HostEtherFilter(02:00:00:00:00:02, DROP_OWN true) -> db :: DropBroadcasts
     -> ToDump(output_host.pcap);
hf[1] -> ToDump(output_own_or_other.pcap);
db[1] -> ToDump(output_bcast_mcast.pcap);
t[1] -> hf2 :: HostEtherFilter(02:00:00:00:00:02, false, false) -> db2 :: DropBroadcasts
     -> ToDump(output_keep_other.pcap);
t[2] -> db3 :: DropBroadcasts -> ToDump(output_no_anno.pcap);
DriverManager(wait, print db.drops, print db2.drops, print db3.drops);
