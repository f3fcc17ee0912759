// Route-table handlers of RadixIPLookup (r), DirectIPLookup (d),
// LinearIPLookup (l) and StaticIPLookup (st), driven by DriverManager:
// table, lookup ADDR (print and $(...)), add, set, remove, ctrl (several
// lines, all or nothing: a failing line undoes the earlier ones), flush;
// errors (route exists, not found, bad OUTPUT, bad syntax, bad command,
// bad address, StaticIPLookup's missing write handlers) go to standard
// error and change nothing. The same trace is routed three times: with the
// configured tables (output_*), after add/set/remove/ctrl, and after
// flush (StaticIPLookup never changes). StoreIPAddress(0) writes the
// next hop (destination annotation) over the first 4 bytes of each frame.
s1 :: FromDump(input.pcap, STOP true);
s2 :: FromDump(input.pcap, STOP true, ACTIVE false);
s3 :: FromDump(input.pcap, STOP true, ACTIVE false);
ip :: Strip(14) -> GetIPAddress(16) -> t :: Tee(4);
s1 -> ip; s2 -> ip; s3 -> ip;
r :: RadixIPLookup(10.0.0.0/8 0, 10.1.0.0/16 10.0.0.1 1, 10.1.2.0/24 2,
                   10.1.2.128/25 10.0.0.2 0, 192.168.0.0/16 1,
                   192.168.1.7/32 10.0.0.3 2, 0.0.0.0/0 10.0.0.254 1);
d :: DirectIPLookup(10.0.0.0/8 0, 10.1.0.0/16 10.0.0.1 1, 10.1.2.0/24 2,
                    10.1.2.128/25 10.0.0.2 0, 192.168.0.0/16 1,
                    192.168.1.7/32 10.0.0.3 2, 0.0.0.0/0 10.0.0.254 1);
l :: LinearIPLookup(10.0.0.0/8 0, 10.1.0.0/16 10.0.0.1 1, 10.1.2.0/24 2,
                    10.1.2.128/25 10.0.0.2 0, 192.168.0.0/16 1,
                    192.168.1.7/32 10.0.0.3 2, 0.0.0.0/0 10.0.0.254 1);
st :: StaticIPLookup(10.0.0.0/8 0, 10.1.0.0/16 10.0.0.1 1, 10.1.2.0/24 2,
                     10.1.2.128/25 10.0.0.2 0, 192.168.0.0/16 1,
                     192.168.1.7/32 10.0.0.3 2, 0.0.0.0/0 10.0.0.254 1);
t[0] -> r; t[1] -> d; t[2] -> l; t[3] -> st;
r[0] -> Unstrip(14) -> StoreIPAddress(0) -> ToDump(output_r0.pcap);
r[1] -> Unstrip(14) -> StoreIPAddress(0) -> ToDump(output_r1.pcap);
r[2] -> Unstrip(14) -> StoreIPAddress(0) -> ToDump(output_r2.pcap);
d[0] -> Unstrip(14) -> StoreIPAddress(0) -> ToDump(output_d0.pcap);
d[1] -> Unstrip(14) -> StoreIPAddress(0) -> ToDump(output_d1.pcap);
d[2] -> Unstrip(14) -> StoreIPAddress(0) -> ToDump(output_d2.pcap);
l[0] -> Unstrip(14) -> StoreIPAddress(0) -> ToDump(output_l0.pcap);
l[1] -> Unstrip(14) -> StoreIPAddress(0) -> ToDump(output_l1.pcap);
l[2] -> Unstrip(14) -> StoreIPAddress(0) -> ToDump(output_l2.pcap);
st[0] -> Unstrip(14) -> StoreIPAddress(0) -> ToDump(output_st0.pcap);
st[1] -> Unstrip(14) -> StoreIPAddress(0) -> ToDump(output_st1.pcap);
st[2] -> Unstrip(14) -> StoreIPAddress(0) -> ToDump(output_st2.pcap);
DriverManager(wait,
  print r.table, print d.table, print l.table, print st.table,
  print r.lookup 10.1.2.200, print d.lookup 10.1.2.3, print l.lookup 8.8.8.8,
  print st.lookup 192.168.1.7, print "r $(r.lookup 10.5.5.5) d $(d.lookup 10.1.9.9)",
  print r.lookup 1.2.3, print l.lookup,
  // errors: route exists, not found, wrong gateway/output, bad OUTPUT, syntax
  write r.add 10.1.0.0/16 2, write d.add 10.1.0.0/16 2, write l.add 10.1.0.0/16 2,
  write r.remove 10.9.0.0/16, write d.remove 10.9.0.0/16, write l.remove 10.9.0.0/16,
  write r.remove 10.1.0.0/16 10.0.0.9 1, write d.remove 10.1.0.0/16 - 1,
  write l.remove 10.1.0.0/16 10.0.0.1 2,
  write r.add 10.9.0.0/16 3, write d.set 10.9.0.0/16 -1, write l.remove 10.1.0.0/16 7,
  write r.add 10.9.0.0/16, write d.add 10.9.0.0/16 1 2, write l.set 10.9.0.0/33 1,
  write st.add 10.9.0.0/16 1, write st.remove 10.0.0.0/8,
  print r.table, print d.table, print l.table,
  // changes
  write r.add 10.9.0.0/16 10.0.0.5 2, write d.add 10.9.0.0/16 10.0.0.5 2,
  write l.add 10.9.0.0/16 10.0.0.5 2,
  write r.set 10.1.0.0/16 0, write d.set 10.1.0.0/16 0, write l.set 10.1.0.0/16 0,
  write r.set 172.16.0.0/12 2, write d.set 172.16.0.0/12 2, write l.set 172.16.0.0/12 2,
  write r.remove 10.1.2.128/25, write d.remove 10.1.2.128/25, write l.remove 10.1.2.128/25,
  write r.remove 192.168.1.7/32 10.0.0.3 2, write d.remove 192.168.1.7 10.0.0.3 2,
  write l.remove 192.168.1.7/32 10.0.0.3 2,
  write r.remove 0/0, write l.remove 0.0.0.0/0 10.0.0.254 1,
  print r.table, print d.table, print l.table,
  print r.lookup 10.1.2.200, print d.lookup 10.1.2.200, print l.lookup 10.1.2.200,
  print r.lookup 8.8.8.8, print d.lookup 8.8.8.8, print l.lookup 8.8.8.8,
  write s2.active true, wait,
  // ctrl: the last line fails, the earlier ones are undone
  writeq r.ctrl "add 8.0.0.0/8 1\nset 10.0.0.0/8 10.0.0.6 2\nremove 192.168.0.0/16\nadd 10.9.0.0/16 1",
  writeq d.ctrl "add 8.0.0.0/8 1\nset 10.0.0.0/8 10.0.0.6 2\nremove 192.168.0.0/16\nremove 10.8.0.0/16",
  writeq l.ctrl "add 8.0.0.0/8 1\nset 10.0.0.0/8 10.0.0.6 2\nremove 192.168.0.0/16\nadd 10.8.0.0/16 3",
  writeq r.ctrl "add 8.0.0.0/8 1\nflush",
  print r.table, print d.table, print l.table,
  writeq r.ctrl "add 8.0.0.0/8 1\n  set 10.0.0.0/8 10.0.0.6 2\nremove 192.168.0.0/16 - 1\nadd 0/0 2",
  writeq d.ctrl "add 8.0.0.0/8 1\n  set 10.0.0.0/8 10.0.0.6 2\nremove 192.168.0.0/16 - 1\nset 0/0 10.0.0.253 0",
  writeq l.ctrl "add 8.0.0.0/8 1\n  set 10.0.0.0/8 10.0.0.6 2\nremove 192.168.0.0/16 - 1\nadd 0/0 2",
  print r.table, print d.table, print l.table,
  print r.lookup 8.8.8.8, print d.lookup 8.8.8.8, print l.lookup 192.168.3.3,
  write r.flush, write d.flush,
  print r.table, print d.table, print r.lookup 10.5.5.5, print d.lookup 10.5.5.5,
  write r.add 10.0.0.0/8 10.0.0.7 1, write d.add 10.0.0.0/8 10.0.0.7 1,
  write l.remove 10.0.0.0/8, write l.add 10.0.0.0/8 10.0.0.7 1,
  write s3.active true, wait,
  print r.table, print d.table, print l.table, print st.table);
