// FromTcpdump reading what tcpdump 4.99 prints for input.pcap (-n -tt -v,
// input.txt): each packet's IPv4 and TCP/UDP headers as captured
// (checksums zero), the IP length covering the data it does not hold.
FromTcpdump(input.txt, STOP true) -> ToDump(output_headers.pcap, ENCAP IP);
