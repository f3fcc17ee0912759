#!/usr/bin/env python3
"""Write conf/e_route_RadixIPLookup.click and conf/e_route_DirectIPLookup.click from routes.txt
(170,000 prefixes made by gen_bench.py). Run from this folder after gen_bench.py."""
routes = [line.split() for line in open('routes.txt')]
body = ',\n'.join(f'{prefix} {port}' for prefix, port in routes) + ',\n0.0.0.0/0 0'
for cls in ('RadixIPLookup', 'DirectIPLookup'):
    with open(f"conf/e_route_{cls}.click", 'w') as f:
        f.write('c :: FromDump(route.pcap, STOP true) -> Strip(14) -> CheckIPHeader -> GetIPAddress(16) -> '
                f'rt :: {cls}(\n{body});\n'
                'rt[0] -> Discard; rt[1] -> Discard; rt[2] -> Discard; rt[3] -> Discard;\n'
                'DriverManager(set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a));\n')
