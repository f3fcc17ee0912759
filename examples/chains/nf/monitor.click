// A traffic monitor as a chain NF: counts packets and bytes per protocol.
input -> c :: Counter -> Strip(14) -> MarkIPHeader
  -> p :: IPClassifier(tcp, udp, -);
p[0] -> tcp :: Counter -> j :: Unstrip(14) -> output;
p[1] -> udp :: Counter -> j;
p[2] -> other :: Counter -> j;
