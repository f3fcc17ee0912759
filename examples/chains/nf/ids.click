// An intrusion detector as a chain NF: UDP to port 6666 is dropped and
// counted as an alert.
input -> c :: Counter -> Strip(14) -> CheckIPHeader
  -> i :: IPClassifier(udp dst port 6666, -);
i[0] -> alerts :: Counter -> Discard;
i[1] -> Unstrip(14) -> output;
