"""Client for prontod, pronto's daemon (REST API, ``docs/openapi.yaml``).

Talks to the daemon over its unix socket (as the admin, no token needed),
over loopback TCP with an API token, or over TLS to a cluster node's
``--cluster-listen`` address from another machine, its certificate pinned
by fingerprint (``Client(url="https://10.0.0.11:7118", token=T,
fingerprint=SHA256)``; ``pronto cluster nodes`` shows each node's)::

    from pronto_client import Client

    c = Client()                                   # $PRONTO_SOCKET or the default socket
    fw = c.create("fw1", open("fw.click").read(), memory="16M",
                  interfaces=[("eth0", "02:00:00:00:00:01")])
    print(c.read("fw1", "c.count"))
    c.write("fw1", "c.reset")
    c.reconfigure("fw1", new_text)                 # a bad one raises BadRequest; the old one runs on
    c.remove("fw1")

Only the standard library is used.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import ssl
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union
from urllib.parse import quote, urlencode

__all__ = [
    "AuditEntry",
    "Client",
    "Instance",
    "Interface",
    "Tenant",
    "Port",
    "ProntoError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "TooLarge",
    "Unavailable",
    "WrongCertificate",
    "Quota",
    "default_socket",
]


class ProntoError(Exception):
    """An error answer from the daemon: HTTP status, message, and the
    request field to blame when there is one."""

    def __init__(self, status: int, message: str, field: Optional[str] = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field

    def __str__(self) -> str:
        return self.message


class BadRequest(ProntoError):
    """400: bad input, or a configuration that does not build."""


class Unauthorized(ProntoError):
    """401: no token, or a token the daemon does not know."""


class Forbidden(ProntoError):
    """403: only the admin may do this, or more than the tenant's quota
    allows (``field`` names what: memory, cpu, pids, instances,
    interfaces, or config for a control socket port outside its range)."""


class NotFound(ProntoError):
    """404: no such instance, handler, tenant or port (another tenant's
    instances look exactly like missing ones)."""


class Conflict(ProntoError):
    """409: the name is taken, or the tenant still has instances."""


class TooLarge(ProntoError):
    """413: the request body is over the endpoint's limit (8 MiB for a
    configuration, 1 MiB for a handler value)."""


class Unavailable(ProntoError):
    """503: the instance is starting or restarting; retry shortly."""


_ERRORS = {400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound,
           409: Conflict, 413: TooLarge, 503: Unavailable}


@dataclass
class Interface:
    """One interface of an instance: a port on the daemon's switch."""

    name: str
    mac: Optional[str] = None
    port: Optional[int] = None
    #: The IPv4 or IPv6 address the switch answers ARP or Neighbor
    #: Solicitations for (with ``mac``).
    ip: Optional[str] = None
    #: Whether the interface is sent broadcasts and multicasts (``None``:
    #: the daemon's default, yes).
    broadcast: Optional[bool] = None


@dataclass
class Crash:
    """How an instance's process last ended unexpectedly."""

    at_unix_ms: int
    reason: str


@dataclass
class Instance:
    """A middlebox instance as the daemon describes it."""

    name: str
    tenant: str
    state: str
    config: str
    memory: Optional[int] = None
    cpu: Optional[float] = None
    pids: Optional[int] = None
    #: The CPUs its threads run on (None: any).
    cpus: Optional[List[int]] = None
    #: Its share of the CPUs and of the switch under overload (100 unless set).
    weight: int = 100
    #: The rate limit on each interface, each way: ``{"pps": N, "bps": N}``
    #: (either may be absent), None when there is none.
    rate_limit: Optional[Dict[str, int]] = None
    #: Its switch ports' geometry: ``{"slots": N, "ring": N}`` (the
    #: daemon's default unless the instance was created with its own).
    port_geometry: Optional[Dict[str, int]] = None
    #: Microseconds its routers keep polling after packets moved before
    #: they sleep (None: they sleep at once).
    poll_window_us: Optional[int] = None
    interfaces: List[Interface] = field(default_factory=list)
    pid: Optional[int] = None
    boot_ms: Optional[float] = None
    restarts: int = 0
    last_crash: Optional[Crash] = None
    error: Optional[str] = None
    pss_bytes: Optional[int] = None
    created_unix_ms: int = 0
    #: Where the configuration's ControlSockets listen (opened by the daemon):
    #: ``"tcp 127.0.0.1:PORT"`` or ``"unix PATH"``.
    control_sockets: List[str] = field(default_factory=list)
    #: Only after ``reconfigure``: ``"ELEMENT (WHAT)"`` for each element that
    #: took over the old configuration's state (Click's hot-swap).
    took_state: List[str] = field(default_factory=list)
    #: Cluster mode only (``pronto daemon --cluster``): the node the instance
    #: is placed on (None while no node has room for it, and on a daemon
    #: that is not in a cluster).
    node: Optional[str] = None
    #: Its group (a chain's name, as ``pronto chain apply`` gives its
    #: instances), if it has one.
    group: Optional[str] = None
    #: Cluster mode: the node it is placed on first, if it names one.
    prefer_node: Optional[str] = None

    @staticmethod
    def from_json(v: Dict[str, Any]) -> "Instance":
        """Builds an Instance from the API's JSON object."""
        crash = v.get("last_crash")
        return Instance(
            name=v["name"],
            tenant=v["tenant"],
            state=v["state"],
            config=v.get("config", ""),
            memory=v.get("memory"),
            cpu=v.get("cpu"),
            pids=v.get("pids"),
            cpus=v.get("cpus"),
            weight=v.get("weight", 100),
            rate_limit=v.get("rate_limit"),
            port_geometry=v.get("port_geometry"),
            poll_window_us=v.get("poll_window_us"),
            interfaces=[Interface(i["name"], i.get("mac"), i.get("port"), i.get("ip"),
                                  i.get("broadcast"))
                        for i in v.get("interfaces", [])],
            pid=v.get("pid"),
            boot_ms=v.get("boot_ms"),
            restarts=v.get("restarts", 0),
            last_crash=Crash(crash["at_unix_ms"], crash["reason"]) if crash else None,
            error=v.get("error"),
            pss_bytes=v.get("pss_bytes"),
            created_unix_ms=v.get("created_unix_ms", 0),
            control_sockets=list(v.get("control_sockets", [])),
            took_state=list(v.get("took_state", [])),
            node=v.get("node"),
            group=v.get("group"),
            prefer_node=v.get("prefer_node"),
        )


@dataclass
class Tenant:
    """A tenant; ``token`` is only known right after creation."""

    name: str
    instances: int = 0
    token: Optional[str] = None


@dataclass
class Quota:
    """What a tenant's instances may have (``quota``) and have now
    (``usage``): both dicts with ``instances``, ``memory`` (bytes, all
    instances together), ``cpu`` (CPU shares together; an instance
    without one counts as 1), ``interfaces``; ``quota`` also ``pids``
    (per instance), ``control_ports`` (``"20000-20999"``) and
    ``control_connections``; ``usage`` the open ``control_connections``."""

    tenant: str
    quota: Dict[str, Any]
    usage: Dict[str, Any]

    @staticmethod
    def from_json(v: Dict[str, Any]) -> "Quota":
        """Builds a Quota from the API's JSON object."""
        return Quota(tenant=v["tenant"], quota=dict(v["quota"]), usage=dict(v["usage"]))


@dataclass
class Port:
    """A switch port and its counters."""

    port: int
    name: str
    rx_packets: int
    rx_bytes: int
    tx_packets: int
    tx_bytes: int
    drops: int
    #: ``drops`` by why: ``bad_desc``, ``bad_ring``, ``bad_fill``,
    #: ``no_route``, ``no_buffer``, ``ring_full``, ``rate_limit_from_port``,
    #: ``rate_limit_to_port``.
    drops_by_reason: Dict[str, int] = field(default_factory=dict)
    #: Its share of its switching thread (its instance's weight; 100 unless set).
    weight: int = 100
    #: Its rate limit (its instance's), ``{"pps": N, "bps": N}``, or None.
    rate_limit: Optional[Dict[str, int]] = None
    #: Its pool's slots and its rings' size, ``{"slots": N, "ring": N}``
    #: (its instance's ``port_geometry``), None once detached.
    port_geometry: Optional[Dict[str, int]] = None

    @staticmethod
    def from_json(v: Dict[str, Any]) -> "Port":
        """Builds a Port from the API's JSON object (fields a newer daemon
        adds are ignored)."""
        known = {f.name for f in fields(Port)}
        return Port(**{k: x for k, x in v.items() if k in known})


@dataclass
class AuditEntry:
    """One change asked of the daemon, from its audit log: when, who
    (``"admin"``, a tenant's name, or ``"unknown"`` when authentication
    failed) with which token (the first 12 hex digits of its SHA-256,
    ``"unix-socket"`` or ``"-"``), the tenant it concerns, what (method,
    path, a summary of the body: a configuration by size and hash) and the
    result (HTTP status, the first line of the error)."""

    seq: int
    time: str
    unix_ms: int
    who: str
    token: str
    method: str
    path: str
    status: int
    summary: str = ""
    tenant: Optional[str] = None
    error: Optional[str] = None

    @staticmethod
    def from_json(v: Dict[str, Any]) -> "AuditEntry":
        """Builds an AuditEntry from the API's JSON object (fields a newer
        daemon adds are ignored)."""
        known = {f.name for f in fields(AuditEntry)}
        return AuditEntry(**{k: x for k, x in v.items() if k in known})


def default_socket() -> str:
    """The daemon's socket: ``$PRONTO_SOCKET``, else the daemon's default
    (``/run/pronto/prontod.sock`` as root, ``/tmp/prontod-UID.sock``)."""
    env = os.environ.get("PRONTO_SOCKET")
    if env:
        return env
    if os.geteuid() == 0:
        return "/run/pronto/prontod.sock"
    return os.path.join(os.environ.get("TMPDIR", "/tmp"), "prontod-%d.sock" % os.geteuid())


class WrongCertificate(Exception):
    """The node's TLS certificate is not the one ``fingerprint`` names
    (nothing was sent to it)."""


class _PinnedConnection(http.client.HTTPSConnection):
    """TLS to a node, accepting exactly the certificate whose SHA-256 is
    ``fingerprint`` (nodes' certificates are self-signed: pinned, not
    checked against a certificate authority)."""

    def __init__(self, host: str, port: int, fingerprint: str, timeout: float) -> None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        super().__init__(host, port, timeout=timeout, context=ctx)
        self._fingerprint = fingerprint

    def connect(self) -> None:
        super().connect()
        der = self.sock.getpeercert(binary_form=True) or b""
        got = hashlib.sha256(der).hexdigest()
        if got != self._fingerprint:
            self.sock.close()
            self.sock = None
            raise WrongCertificate(
                "the node's certificate (SHA-256 %s) is not the one fingerprint names (%s): "
                "check the address, and the node's fingerprint (`pronto cluster nodes`)"
                % (got, self._fingerprint))


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


InterfaceSpec = Union[str, Tuple[str, Optional[str]], Tuple[str, Optional[str], Optional[str]],
                      Interface]


class Client:
    """A connection to prontod.

    ``socket``: the unix socket (default: :func:`default_socket`);
    ``url``: ``http://127.0.0.1:7117`` to use TCP instead (then a
    ``token`` is needed; default ``$PRONTO_URL`` / ``$PRONTO_TOKEN``), or
    ``https://HOST:PORT``, a cluster node's ``--cluster-listen`` address,
    with ``fingerprint``, its certificate's SHA-256 (default
    ``$PRONTO_FINGERPRINT``);
    ``tenant``: as the admin, address this tenant's instances.
    """

    def __init__(self, socket: Optional[str] = None, url: Optional[str] = None,
                 token: Optional[str] = None, tenant: Optional[str] = None,
                 timeout: float = 60.0, fingerprint: Optional[str] = None) -> None:
        self.url = url if url is not None else (None if socket else os.environ.get("PRONTO_URL"))
        self.socket = socket or default_socket()
        self.token = token if token is not None else os.environ.get("PRONTO_TOKEN")
        self.tenant = tenant
        self.timeout = timeout
        self.fingerprint = None
        if self.url and self.url.startswith("https://"):
            f = fingerprint if fingerprint is not None else os.environ.get("PRONTO_FINGERPRINT")
            if not f:
                raise ValueError(
                    "url %s: give the node's certificate fingerprint (fingerprint=SHA256 or "
                    "PRONTO_FINGERPRINT; `pronto cluster nodes` shows it)" % self.url)
            f = f.replace(":", "").lower()
            if len(f) != 64 or any(ch not in "0123456789abcdef" for ch in f):
                raise ValueError(
                    "fingerprint: expected the certificate's SHA-256 as 64 hex digits, found %r"
                    % f)
            self.fingerprint = f

    # ---- transport ------------------------------------------------------

    def _conn(self) -> http.client.HTTPConnection:
        if self.url:
            u = self.url
            for p in ("http://", "https://"):
                if u.startswith(p):
                    u = u[len(p):]
            u = u.rstrip("/")
            host, _, port = u.rpartition(":")
            if not host:
                host, port = port, ""
            host = host.strip("[]")
            if self.fingerprint:
                return _PinnedConnection(host, int(port or 443), self.fingerprint, self.timeout)
            return http.client.HTTPConnection(host, int(port or 80), timeout=self.timeout)
        return _UnixConnection(self.socket, self.timeout)

    def _path(self, path: str) -> str:
        if self.tenant:
            return path + ("&" if "?" in path else "?") + "tenant=" + quote(self.tenant)
        return path

    def _request(self, method: str, path: str, body: Optional[bytes] = None,
                 ctype: str = "application/json") -> Tuple[int, bytes]:
        headers = {}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if body is not None:
            headers["Content-Type"] = ctype
        c = self._conn()
        try:
            c.request(method, path, body=body, headers=headers)
            r = c.getresponse()
            data = r.read()
            status = r.status
        finally:
            c.close()
        if status >= 400:
            message, fld = data.decode("utf-8", "replace"), None
            try:
                v = json.loads(data)
                message, fld = v.get("error", message), v.get("field")
            except ValueError:
                pass
            raise _ERRORS.get(status, ProntoError)(status, message, fld)
        return status, data

    def _json(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Any:
        raw = json.dumps(body).encode() if body is not None else None
        _, data = self._request(method, path, raw)
        return json.loads(data) if data else None

    # ---- daemon ---------------------------------------------------------

    def health(self) -> Dict[str, Any]:
        """``{"status": "ok", "version": ..., "instances": N}``."""
        return self._json("GET", "/v1/health")

    def stats(self, name: Optional[str] = None) -> Dict[str, Any]:
        """Daemon totals, or one instance's per-element counters."""
        if name is None:
            return self._json("GET", "/v1/stats")
        return self._json("GET", self._path("/v1/instances/%s/stats" % quote(name)))

    def counters(self, name: str) -> List[Dict[str, Any]]:
        """Every element of a running instance with its counters: ``in``,
        ``out``, per-port ``inputs``/``outputs``, ``held``, ``drops`` by
        reason and the element's own ``counters`` (one round trip)."""
        v = self._json("GET", self._path("/v1/instances/%s/counters" % quote(name)))
        return v["elements"]

    def capture(
        self,
        port: int,
        count: int = 100,
        seconds: float = 10.0,
        filter: Optional[str] = None,
        snaplen: Optional[int] = None,
        direction: Optional[str] = None,
    ) -> bytes:
        """What switch port ``port`` sees, as pcapng bytes: until ``count``
        frames or ``seconds``; ``filter`` is an IPClassifier expression
        (``"tcp port 80"``), ``direction`` ``"in"``, ``"out"`` or
        ``"both"``. A tenant may capture only its own instances' ports."""
        q = {"count": count, "seconds": seconds}
        if filter is not None:
            q["filter"] = filter
        if snaplen is not None:
            q["snaplen"] = snaplen
        if direction is not None:
            q["direction"] = direction
        path = "/v1/switch/ports/%d/capture?%s" % (port, urlencode(q))
        return self._request("GET", path)[1]

    def metrics(self) -> str:
        """The Prometheus exposition (admin)."""
        return self._request("GET", "/metrics")[1].decode()

    # ---- instances ------------------------------------------------------

    def create(self, name: str, config: str, *, memory: Union[int, str, None] = None,
               cpu: Optional[float] = None, pids: Optional[int] = None,
               cpus: Optional[Sequence[int]] = None,
               interfaces: Optional[Sequence[InterfaceSpec]] = None,
               tenant: Optional[str] = None,
               weight: Optional[int] = None,
               rate_limit: Union[str, Dict[str, int], None] = None,
               port_slots: Optional[int] = None,
               port_ring: Optional[int] = None,
               poll_window_us: Optional[int] = None,
               node: Optional[str] = None,
               group: Optional[str] = None,
               prefer_node: Optional[str] = None,
               files: Optional[Dict[str, str]] = None) -> Instance:
        """Creates and starts an instance; raises BadRequest (field
        ``config``, message with line:column) if its configuration does
        not build, and nothing is created. ``weight`` (1 to 10,000, 100
        by default) is its share of the CPUs and of the switch under
        overload; ``rate_limit`` (``"100kpps"``, ``"1Gbps,200kpps"`` or
        ``{"pps": 100000}``) caps each interface, each way;
        ``port_slots`` and ``port_ring`` (both or neither) size its switch
        ports' pools and rings (the daemon's defaults otherwise; the ports
        must fit in its memory); ``poll_window_us`` (0 to 1,000,000)
        keeps its routers polling that long after packets moved before
        they sleep (for an instance with ``cpus`` of its own); ``node`` (cluster mode) pins it to that
        node: placed there or nowhere; ``group`` (a chain's name, named as
        an instance is) makes it a member of that group, whose members a
        cluster's scheduler keeps on one node where they fit;
        ``prefer_node`` (cluster mode) places it on that node first, while
        that node is live and has room (unlike ``node``, it moves when that
        node dies); ``files`` maps the paths its configuration reads (IDS
        rules, routes, subscribers, keys) to their text, handed to its
        sandbox, which sees no file of the host (64 files, 1 MiB in
        all)."""
        body: Dict[str, Any] = {"name": name, "config": config}
        if files is not None:
            body["files"] = dict(files)
        if node is not None:
            body["node"] = node
        if group is not None:
            body["group"] = group
        if prefer_node is not None:
            body["prefer_node"] = prefer_node
        if memory is not None:
            body["memory"] = memory
        if cpu is not None:
            body["cpu"] = cpu
        if pids is not None:
            body["pids"] = pids
        if cpus is not None:
            body["cpus"] = list(cpus)
        if weight is not None:
            body["weight"] = weight
        if rate_limit is not None:
            body["rate_limit"] = rate_limit
        if (port_slots is None) != (port_ring is None):
            raise ValueError("port_slots and port_ring go together")
        if port_slots is not None:
            body["port_geometry"] = {"slots": port_slots, "ring": port_ring}
        if poll_window_us is not None:
            body["poll_window_us"] = poll_window_us
        if interfaces:
            ifs = []
            for i in interfaces:
                if isinstance(i, str):
                    ifs.append({"name": i})
                elif isinstance(i, Interface):
                    d = {"name": i.name, "mac": i.mac}
                    if i.ip is not None:
                        d["ip"] = i.ip
                    if i.broadcast is not None:
                        d["broadcast"] = i.broadcast
                    ifs.append(d)
                else:
                    d = {"name": i[0], "mac": i[1]}
                    if len(i) > 2 and i[2] is not None:
                        d["ip"] = i[2]
                    ifs.append(d)
            body["interfaces"] = ifs
        t = tenant or self.tenant
        if t:
            body["tenant"] = t
        return Instance.from_json(self._json("POST", "/v1/instances", body))

    def list(self) -> List[Instance]:
        """Instances (a tenant's own; the admin's: all, or ``tenant``'s)."""
        return [Instance.from_json(v) for v in self._json("GET", self._path("/v1/instances"))]

    def show(self, name: str) -> Instance:
        """One instance, with its memory (PSS)."""
        return Instance.from_json(self._json("GET", self._path("/v1/instances/" + quote(name))))

    def remove(self, name: str) -> None:
        """Destroys an instance."""
        self._request("DELETE", self._path("/v1/instances/" + quote(name)))

    def reconfigure(self, name: str, config: str) -> Instance:
        """Replaces a running instance's configuration; a bad one raises
        BadRequest and the old one keeps running."""
        return Instance.from_json(self._json(
            "PUT", self._path("/v1/instances/%s/config" % quote(name)), {"config": config}))

    def set_rate_limit(self, name: str,
                       rate_limit: Union[str, Dict[str, int], None]) -> Instance:
        """Sets (or, with None or ``"none"``, lifts) an instance's rate
        limit, each interface each way (admin only)."""
        return Instance.from_json(self._json(
            "PUT", self._path("/v1/instances/%s/rate_limit" % quote(name)),
            {"rate_limit": rate_limit}))

    def set_weight(self, name: str, weight: int) -> Instance:
        """Changes an instance's share under overload while it runs (its
        sandbox's CPU weight and its ports' weight on the switch), 1 to
        10,000; a tenant may set its own instances' up to 100, the
        default."""
        return Instance.from_json(self._json(
            "PUT", self._path("/v1/instances/%s/weight" % quote(name)), {"weight": weight}))

    def read(self, name: str, handler: str) -> str:
        """Calls read handler ``element.handler``."""
        return self._request(
            "GET", self._path("/v1/instances/%s/handlers/%s" % (quote(name), quote(handler, safe=''))))[1].decode()

    def write(self, name: str, handler: str, value: str = "") -> None:
        """Calls write handler ``element.handler`` with ``value``."""
        self._request("PUT",
                      self._path("/v1/instances/%s/handlers/%s" % (quote(name), quote(handler, safe=''))),
                      value.encode(), "text/plain")

    # ---- switch ---------------------------------------------------------

    def ports(self) -> List[Port]:
        """Switch ports (a tenant's own) and their counters."""
        return [Port.from_json(p) for p in self._json("GET", "/v1/switch/ports")]

    def switch_threads(self) -> List[Dict[str, Any]]:
        """The switch's switching threads (admin): ports, alive, restarts,
        rounds."""
        return self._json("GET", "/v1/switch/threads")

    def restart_switch_thread(self, thread: int) -> Dict[str, Any]:
        """Stops switching thread ``thread`` and starts a new one on its
        ports (admin)."""
        return self._json("POST", "/v1/switch/threads/%d/restart" % thread)

    def macs(self) -> List[Dict[str, Any]]:
        """Static MAC entries (admin)."""
        return self._json("GET", "/v1/switch/macs")

    def set_mac(self, mac: str, port: int) -> None:
        """Routes ``mac`` to switch port ``port`` (admin; kept across
        restarts, following the port's name)."""
        self._json("PUT", "/v1/switch/macs/" + quote(mac), {"port": port})

    def delete_mac(self, mac: str) -> None:
        """Forgets a static MAC entry (admin)."""
        self._request("DELETE", "/v1/switch/macs/" + quote(mac))

    # ---- tenants --------------------------------------------------------

    def create_tenant(self, name: str) -> Tenant:
        """Creates a tenant (admin); the result carries its token, shown once."""
        v = self._json("POST", "/v1/tenants", {"name": name})
        return Tenant(name=v["name"], token=v["token"])

    def tenants(self) -> List[Tenant]:
        """Tenants and their instance counts (admin)."""
        return [Tenant(name=t["name"], instances=t["instances"])
                for t in self._json("GET", "/v1/tenants")]

    def delete_tenant(self, name: str) -> None:
        """Deletes a tenant without instances (admin)."""
        self._request("DELETE", "/v1/tenants/" + quote(name))

    def quota(self, tenant: str) -> Quota:
        """A tenant's quota and usage (the admin: any tenant's; a tenant:
        its own)."""
        return Quota.from_json(self._json("GET", "/v1/tenants/%s/quota" % quote(tenant)))

    def set_quota(self, tenant: str, *, instances: Optional[int] = None,
                  memory: Union[int, str, None] = None, cpu: Optional[float] = None,
                  pids: Optional[int] = None, interfaces: Optional[int] = None,
                  control_ports: Optional[str] = None,
                  control_connections: Optional[int] = None) -> Quota:
        """Changes a tenant's quota (admin); what is left out keeps its
        value. Raises BadRequest naming the field of a bad value."""
        fields = {"instances": instances, "memory": memory, "cpu": cpu, "pids": pids,
                  "interfaces": interfaces, "control_ports": control_ports,
                  "control_connections": control_connections}
        body = {k: v for k, v in fields.items() if v is not None}
        return Quota.from_json(
            self._json("PUT", "/v1/tenants/%s/quota" % quote(tenant), body))

    # ---- audit log ------------------------------------------------------

    def audit(self, limit: Optional[int] = None, since: Optional[str] = None,
              tenant: Optional[str] = None) -> List[AuditEntry]:
        """The audit log's newest ``limit`` entries (1 to 10000, default
        100), oldest first; ``since``: only those at or after this RFC 3339
        time (``"2026-11-27T18:00:00Z"``); ``tenant`` (admin): only those
        that concern it. A tenant sees only the entries that concern it."""
        q = []
        if limit is not None:
            q.append("limit=%d" % limit)
        if since is not None:
            q.append("since=" + quote(since))
        if tenant is not None:
            q.append("tenant=" + quote(tenant))
        path = "/v1/audit" + ("?" + "&".join(q) if q else "")
        return [AuditEntry.from_json(e) for e in self._json("GET", path)]
