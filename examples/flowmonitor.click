// A flow monitor: IPv4 and IPv6 flow records exported as IPFIX (or
// NetFlow v9) to a collector such as nfcapd.
//
//   nfcapd -p 4739 -w /tmp/flows &        # Debian's nfdump package
//   cargo run --release -- run examples/flowmonitor.click
//   kill %1; nfdump -R /tmp/flows         # the trace's flows
//
// Reads the bundled trace, keeps a record per five-tuple, and sends each
// export message to $COLLECTOR:$PORT over UDP. When the trace ends, every
// flow still in the cache is exported (`fm.flush`) before the router
// stops. `EXPORT=netflow9` switches the format.

define($TRACE examples/firewall.pcap, $COLLECTOR 127.0.0.1, $PORT 4739,
       $EXPORT ipfix);

src :: FromDump($TRACE, STOP true);
eth :: Classifier(12/0800, 12/86dd, -);
fm :: FlowMonitor(EXPORT $EXPORT, ACTIVE_TIMEOUT 60, INACTIVE_TIMEOUT 15,
                  CAPACITY 65536);

src -> eth;
eth[0] -> Strip(14) -> CheckIPHeader -> fm;
eth[1] -> Strip(14) -> CheckIP6Header -> fm;
eth[2] -> Discard;
fm[0] -> Discard;
fm[1] -> Socket(UDP, $COLLECTOR, $PORT);

// The trace's end asks the router to stop: export what is left first.
DriverManager(pause, write fm.flush, wait 0.2s);
