#!/usr/bin/env python3
"""ratio.py FILE: per size and placement, the median over rounds of each variant's time and
of its per-round ratio to Open MPI (lines of ab.sh)."""
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 5 or f[4] == "WRONG":
        continue
    t[(f[0], int(f[1]), int(f[2]), f[3])] = float(f[4])
rounds = sorted({k[1] for k in t})
keys = sorted({(k[2], k[3]) for k in t})
print("| bytes | placement | by address µs | staged µs | Open MPI µs | by address / Open MPI | staged / Open MPI |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
for size, pl in keys:
    med = lambda v: statistics.median(t[(v, r, size, pl)] for r in rounds if (v, r, size, pl) in t)
    rat = lambda v: [t[(v, r, size, pl)] / t[("openmpi", r, size, pl)] for r in rounds
                     if (v, r, size, pl) in t and ("openmpi", r, size, pl) in t]
    ra, rs = rat("address"), rat("staged")
    print(f"| {size} | {pl} | {med('address'):.1f} | {med('staged'):.1f} | {med('openmpi'):.1f} | "
          f"{statistics.median(ra):.2f} ({min(ra):.2f}-{max(ra):.2f}) | "
          f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f}) |")
