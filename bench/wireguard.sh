#!/usr/bin/env bash
# Throughput through a WireGuard gateway: pronto's (examples/wireguard.click)
# against wireguard-go itself in the same place, same sitting, runs
# alternating. A client namespace runs wireguard-go (MTU 1420) as the
# peer; the gateway sits in a middle namespace between the client's veth
# and a server's veth (MTU 1420 on the plain side), as in
# crates/cli/tests/wireguard.rs. Per run: iperf3 TCP for $SECS seconds, and
# iperf3 UDP with 1,392-byte payloads (1,420-byte inner IP packets) at an
# offered $UDP_RATE, receiver's rate.
#
#   bench/wireguard.sh [PRONTO_BINARY] [ROUNDS]
#
# Needs root, ip, iperf3, ethtool, wg, wireguard-go, python3. Prints one
# CSV line per run: gateway,round,tcp_mbps,udp_mbps,udp_loss_percent.
set -euo pipefail
PRONTO=${1:-target/release/pronto}
ROUNDS=${2:-3}
SECS=${SECS:-5}
UDP_RATE=${UDP_RATE:-1G}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
C=wgbc$$; M=wgbm$$; S=wgbs$$
cleanup() {
    for n in $C $M $S; do
        ip netns pids $n 2>/dev/null | xargs -r kill 2>/dev/null || true
        ip netns del $n 2>/dev/null || true
    done
    rm -rf "$TMP"
}
trap cleanup EXIT
GW_PRIV=$(wg genkey); GW_PUB=$(echo "$GW_PRIV" | wg pubkey)
CL_PRIV=$(wg genkey); CL_PUB=$(echo "$CL_PRIV" | wg pubkey)
echo "$CL_PRIV" > "$TMP/cl.key"; echo "$GW_PRIV" > "$TMP/gw.key"
printf '[Interface]\nPrivateKey = %s\nListenPort = 51820\n\n[Peer]\nPublicKey = %s\nAllowedIPs = 10.99.0.2/32\n' \
    "$GW_PRIV" "$CL_PUB" > "$TMP/gw.conf"

setup() { # $1: pronto | wireguard-go
    for n in $C $M $S; do ip netns add $n; done
    ip -n $M link add out type veth peer name c netns $C
    ip -n $M link add in type veth peer name s netns $S
    for n in $C $M $S; do ip -n $n link set lo up; done
    ip -n $M link set out up; ip -n $M link set in up
    ip -n $C link set c up; ip -n $S link set s up
    ip -n $C addr add 10.202.1.1/24 dev c
    ip -n $S addr add 10.202.2.1/24 dev s
    ip -n $S link set s mtu 1420
    ip -n $S route add 10.99.0.0/24 via 10.202.2.254
    ip netns exec $C ethtool -K c tx off >/dev/null
    ip netns exec $S ethtool -K s tx off >/dev/null
    if [ "$1" = pronto ]; then
        ip netns exec $M sysctl -qw net.ipv6.conf.out.disable_ipv6=1 net.ipv6.conf.in.disable_ipv6=1
        ip netns exec $M "$PRONTO" run "$ROOT/examples/wireguard.click" OUT=out IN=in \
            OUTMAC="$(ip -n $M -o link show out | sed 's/.*link\/ether \([^ ]*\).*/\1/')" \
            INMAC="$(ip -n $M -o link show in | sed 's/.*link\/ether \([^ ]*\).*/\1/')" \
            KEYS="$TMP/gw.conf" CTL="$TMP/ctl.sock" 2>"$TMP/pronto.log" &
    else
        ip -n $M addr add 10.202.1.254/24 dev out
        ip -n $M addr add 10.202.2.254/24 dev in
        ip netns exec $M sysctl -qw net.ipv4.ip_forward=1
        ip netns exec $M wireguard-go wgm$$ 2>/dev/null
        ip netns exec $M wg set wgm$$ private-key "$TMP/gw.key" listen-port 51820 \
            peer "$CL_PUB" allowed-ips 10.99.0.2/32
        ip -n $M link set wgm$$ up
        ip -n $M route add 10.99.0.2/32 dev wgm$$
    fi
    ip netns exec $C wireguard-go wgc$$ 2>/dev/null
    ip netns exec $C wg set wgc$$ private-key "$TMP/cl.key" peer "$GW_PUB" \
        endpoint 10.202.1.254:51820 allowed-ips 10.202.2.0/24
    ip -n $C addr add 10.99.0.2/32 dev wgc$$
    ip -n $C link set wgc$$ up
    ip -n $C route add 10.202.2.0/24 dev wgc$$
    for _ in $(seq 50); do
        ip netns exec $C ping -c 1 -W 1 10.202.2.1 >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    echo "no ping through the $1 gateway" >&2; cat "$TMP/pronto.log" >&2 || true; exit 1
}

measure() { # $1 gateway, $2 round
    ip netns exec $S iperf3 -s -D -1 >/dev/null; sleep 0.3
    tcp=$(ip netns exec $C iperf3 -c 10.202.2.1 -t "$SECS" -J | python3 -c \
        'import json,sys; print("%.0f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e6))')
    ip netns exec $S iperf3 -s -D -1 >/dev/null; sleep 0.3
    udp=$(ip netns exec $C iperf3 -c 10.202.2.1 -u -b "$UDP_RATE" -l 1392 -M 1368 -t "$SECS" -J | python3 -c \
        'import json,sys; s=json.load(sys.stdin)["end"]["sum"]; print("%.0f,%.1f" % (s["bits_per_second"]/1e6*(100-s["lost_percent"])/100, s["lost_percent"]))')
    echo "$1,$2,$tcp,$udp"
}

echo "gateway,round,tcp_mbps,udp_mbps,udp_loss_percent"
for r in $(seq "$ROUNDS"); do
    for g in pronto wireguard-go; do
        setup $g
        measure $g "$r"
        for n in $C $M $S; do
            ip netns pids $n 2>/dev/null | xargs -r kill 2>/dev/null || true
        done
        sleep 0.5
        for n in $C $M $S; do ip netns del $n; done
    done
done
