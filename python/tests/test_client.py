"""The Python client against a real prontod (started by
crates/cli/tests/python_client.rs, which sets PRONTO_SOCKET, PRONTO_URL and
PRONTO_ADMIN_TOKEN)."""

import os
import time
import unittest

from pronto_client import BadRequest, Client, Forbidden, NotFound, TooLarge, Unauthorized

COUNTING = "c :: Counter; TimedSource(0.005s) -> c -> Discard;\n"


def wait_until(what, f, timeout=20.0):
    t0 = time.time()
    while not f():
        if time.time() - t0 > timeout:
            raise AssertionError("timed out: " + what)
        time.sleep(0.02)


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sock = os.environ["PRONTO_SOCKET"]
        cls.url = os.environ["PRONTO_URL"]
        cls.admin = Client(socket=cls.sock)

    def test_health_and_metrics(self):
        h = self.admin.health()
        self.assertEqual(h["status"], "ok")
        self.assertIn("pronto_instances{state=\"running\"}", self.admin.metrics())
        # Over TCP the admin token works, and nothing works without one.
        tcp = Client(url=self.url, token=os.environ["PRONTO_ADMIN_TOKEN"])
        self.assertEqual(tcp.health()["status"], "ok")
        with self.assertRaises(Unauthorized) as e:
            Client(url=self.url, token="").health()
        self.assertIn("a token is needed", str(e.exception))

    def test_instance_lifecycle(self):
        c = self.admin
        with self.assertRaises(BadRequest) as e:
            c.create("py-bad", "c :: Counter; Nope -> c;\n")
        self.assertEqual(e.exception.field, "config")
        self.assertIn("config:1:15", e.exception.message)
        self.assertIn("unknown element class 'Nope'", e.exception.message)
        self.assertNotIn("py-bad", [i.name for i in c.list()])

        with self.assertRaises(BadRequest) as e:
            c.create("py-far", COUNTING, cpus=[4095])
        self.assertEqual(e.exception.field, "cpus")
        self.assertIn("CPU 4095 is not one this daemon runs on", e.exception.message)

        with self.assertRaises(BadRequest) as e:
            c.create("py-heavy", COUNTING, weight=20000)
        self.assertEqual(e.exception.field, "weight")

        with self.assertRaises(BadRequest) as e:
            c.create("py-slow", COUNTING, rate_limit="10 mbit")
        self.assertEqual(e.exception.field, "rate_limit")
        self.assertIn("`10 mbit` is not a rate", e.exception.message)

        with self.assertRaises(BadRequest) as e:
            c.create("py-grouped", COUNTING, group="-chain")
        self.assertEqual(e.exception.field, "group")

        with self.assertRaises(BadRequest) as e:
            c.create("py-far-node", COUNTING, prefer_node="n2")
        self.assertEqual(e.exception.field, "prefer_node")

        with self.assertRaises(BadRequest) as e:
            c.create("py-spinning", COUNTING, poll_window_us=2_000_000)
        self.assertEqual(e.exception.field, "poll_window_us")

        with self.assertRaises(BadRequest) as e:
            c.create("py-nosy", COUNTING, files={"../etc/shadow": "x"})
        self.assertEqual(e.exception.field, "files")
        self.assertIn("has a `..` component", e.exception.message)

        # A file its configuration reads, given with it.
        routes = "10.0.0.0/8 1\n"
        r = c.create("py-routes", "rt :: RadixIPLookup(ROUTES conf/routes.txt, 0.0.0.0/0 0);\n"
                     "Idle -> rt; rt[0] -> Discard; rt[1] -> Discard;\n",
                     files={"conf/routes.txt": routes})
        try:
            self.assertEqual(r.state, "running")
            self.assertIn("10.0.0.0/8", c.read("py-routes", "rt.table"))
        finally:
            c.remove("py-routes")

        i = c.create("py-fw", COUNTING, memory="16M", cpus=[0], weight=250,
                     rate_limit="1Gbps,100kpps", port_slots=512, port_ring=256,
                     poll_window_us=150, interfaces=[("eth0", "02:00:00:00:0a:01")], group="py-chain")
        try:
            self.assertEqual(i.state, "running")
            self.assertEqual(i.group, "py-chain")
            self.assertIsNone(i.prefer_node)
            self.assertEqual(i.memory, 16 << 20)
            self.assertEqual(i.cpus, [0])
            self.assertEqual(i.weight, 250)
            self.assertEqual(i.rate_limit, {"pps": 100000, "bps": 1000000000})
            self.assertEqual(i.port_geometry, {"slots": 512, "ring": 256})
            self.assertEqual(i.poll_window_us, 150)
            self.assertTrue(c.read("py-fw", "idle").startswith("poll_window_ns 150000\n"))
            self.assertEqual(i.interfaces[0].name, "eth0")
            self.assertIsNotNone(i.interfaces[0].port)
            self.assertIn("py-fw", [x.name for x in c.list()])
            shown = c.show("py-fw")
            self.assertGreater(shown.pss_bytes or 0, 0)
            wait_until("the counter counts", lambda: int(c.read("py-fw", "c.count")) > 3)
            c.write("py-fw", "c.reset")
            self.assertLess(int(c.read("py-fw", "c.count")), 50)
            with self.assertRaises(NotFound) as e:
                c.read("py-fw", "c.nope")
            self.assertEqual(str(e.exception), "element `c` has no read handler `nope`")
            # A bad reconfiguration is refused; the old one keeps running.
            with self.assertRaises(BadRequest):
                c.reconfigure("py-fw", "c :: Counter; Nope -> c;\n")
            before = int(c.read("py-fw", "c.count"))
            wait_until("still counting", lambda: int(c.read("py-fw", "c.count")) > before)
            c.reconfigure("py-fw", "d :: Counter; TimedSource(0.005s) -> d -> Discard;\n")
            wait_until("the new one counts", lambda: int(c.read("py-fw", "d.count")) > 0)
            st = c.stats("py-fw")
            self.assertIn("d", [e["name"] for e in st["elements"]])
            els = {e["name"]: e for e in c.counters("py-fw")}
            self.assertEqual(els["d"]["class"], "Counter")
            self.assertEqual(els["d"]["in"], els["d"]["out"])
            self.assertGreater(els["d"]["counters"]["count"], 0)
            sink = [e for e in els.values() if e["class"] == "Discard"][0]
            self.assertEqual(list(sink["drops"]), ["discarded"])
            ports = c.ports()
            self.assertIn("py", "".join(p.name for p in ports))
            for p in ports:
                self.assertEqual(p.drops, sum(p.drops_by_reason.values()))
                self.assertIn("no_route", p.drops_by_reason)
            self.assertEqual([p.weight for p in ports if p.name.endswith("/py-fw/eth0")], [250])
            self.assertEqual([p.rate_limit for p in ports if p.name.endswith("/py-fw/eth0")],
                             [{"pps": 100000, "bps": 1000000000}])
            self.assertIn("rate_limit_to_port", ports[0].drops_by_reason)
            self.assertEqual(c.set_rate_limit("py-fw", {"pps": 5000}).rate_limit, {"pps": 5000})
            self.assertEqual(c.show("py-fw").rate_limit, {"pps": 5000})
            self.assertIn('pronto_instance_rate_limit{tenant="default",instance="py-fw",'
                          'unit="pps"} 5000', c.metrics())
            self.assertIsNone(c.set_rate_limit("py-fw", None).rate_limit)
            self.assertEqual([p.port_geometry for p in ports if p.name.endswith("/py-fw/eth0")],
                             [{"slots": 512, "ring": 256}])
            self.assertEqual(c.set_weight("py-fw", 60).weight, 60)
            self.assertEqual([p.weight for p in c.ports() if p.name.endswith("/py-fw/eth0")],
                             [60])
            with self.assertRaises(BadRequest) as e:
                c.set_weight("py-fw", 0)
            self.assertEqual(e.exception.field, "weight")
            port = [p.port for p in ports if p.name.endswith("/py-fw/eth0")][0]
            pcap = c.capture(port, count=1, seconds=0.3, filter="udp")
            # A pcapng section header, then the interface named after the port.
            self.assertEqual(pcap[:4], b"\x0a\x0d\x0d\x0a")
            self.assertIn(b"/py-fw/eth0", pcap)
            with self.assertRaises(BadRequest):
                c.capture(port, filter="udp prot 1")
        finally:
            c.remove("py-fw")
        with self.assertRaises(NotFound):
            c.show("py-fw")

    def test_tenants_are_kept_apart(self):
        a = self.admin.create_tenant("py-a")
        b = self.admin.create_tenant("py-b")
        try:
            ca = Client(url=self.url, token=a.token)
            cb = Client(url=self.url, token=b.token)
            i = ca.create("svc", COUNTING)
            self.assertEqual(i.tenant, "py-a")
            try:
                self.assertEqual(cb.list(), [])
                for call in (lambda: cb.show("svc"), lambda: cb.read("svc", "c.count"),
                             lambda: cb.remove("svc")):
                    with self.assertRaises(NotFound):
                        call()
                # b's instance of the same name is its own.
                cb.create("svc", COUNTING)
                self.assertEqual([x.tenant for x in cb.list()], ["py-b"])
                cb.remove("svc")
                self.assertEqual(ca.show("svc").state, "running")
            finally:
                ca.remove("svc")
        finally:
            self.admin.delete_tenant("py-a")
            self.admin.delete_tenant("py-b")
        self.assertNotIn("py-a", [t.name for t in self.admin.tenants()])

    def test_quotas_bound_what_a_tenant_asks_for(self):
        t = self.admin.create_tenant("py-q")
        try:
            q = self.admin.quota("py-q")
            self.assertEqual(q.quota["instances"], 64)
            self.assertEqual(q.usage["instances"], 0)
            q = self.admin.set_quota("py-q", instances=1, memory="64M",
                                     control_ports="20500-20509")
            self.assertEqual((q.quota["instances"], q.quota["memory"]), (1, 64 << 20))
            with self.assertRaises(BadRequest) as e:
                self.admin.set_quota("py-q", control_ports="22-80")
            self.assertEqual(e.exception.field, "control_ports")
            c = Client(url=self.url, token=t.token)
            self.assertEqual(c.quota("py-q").quota["control_ports"], "20500-20509")
            with self.assertRaises(Forbidden):
                c.set_quota("py-q", instances=9)
            with self.assertRaises(Forbidden) as e:
                c.create("big", COUNTING, memory=1 << 40)
            self.assertEqual(e.exception.field, "memory")
            with self.assertRaises(Forbidden) as e:
                c.create("ssh", COUNTING + "ControlSocket(TCP, 22);")
            self.assertEqual(e.exception.field, "config")
            self.assertIn("20500-20509", e.exception.message)
            i = c.create("one", COUNTING + "ControlSocket(TCP, 0);")
            try:
                self.assertTrue(i.control_sockets[0].startswith("tcp 127.0.0.1:205"))
                with self.assertRaises(Forbidden) as e:
                    c.create("two", COUNTING)
                self.assertEqual(e.exception.field, "instances")
                with self.assertRaises(TooLarge):
                    c.write("one", "c.reset", "x" * (2 << 20))
            finally:
                c.remove("one")
        finally:
            self.admin.delete_tenant("py-q")

    def test_audit_log(self):
        c = self.admin
        t = c.create_tenant("py-audited")
        try:
            tc = Client(url=self.url, token=t.token)
            with self.assertRaises(NotFound):
                tc.remove("py-nothing")
            mine = tc.audit()
            self.assertEqual([(e.method, e.path, e.who, e.status) for e in mine],
                             [("POST", "/v1/tenants", "admin", 201),
                              ("DELETE", "/v1/instances/py-nothing", "py-audited", 404)])
            self.assertEqual(mine[1].error, "no instance `py-nothing`")
            self.assertEqual(mine[1].tenant, "py-audited")
            self.assertEqual(len(mine[1].token), 12)
            self.assertNotIn(t.token, repr(mine))
            # The admin sees the same two with the tenant filter, and the
            # newest one alone with limit=1.
            self.assertEqual(c.audit(tenant="py-audited"), mine)
            self.assertEqual(c.audit(limit=1, tenant="py-audited"), mine[1:])
            self.assertEqual(c.audit(since=mine[1].time, tenant="py-audited")[-1], mine[1])
            with self.assertRaises(Forbidden):
                tc.audit(tenant="default")
            with self.assertRaises(BadRequest) as e:
                c.audit(since="yesterday")
            self.assertEqual(e.exception.field, "since")
        finally:
            c.delete_tenant("py-audited")


if __name__ == "__main__":
    unittest.main()
