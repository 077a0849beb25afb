#!/usr/bin/env python3
"""ratio.py FILE: per size, medians over rounds of each variant's time and of its
per-round ratio to Open MPI (lines of ab.sh), with the ranges."""
import statistics, sys
t, wrong = {}, 0
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 5 and not line.startswith("#"):
        t[(f[0], int(f[1]), int(f[2]))] = float(f[3])
        wrong += int(f[4])
rounds = sorted({k[1] for k in t})
sizes = sorted({k[2] for k in t})
print("| bytes | before µs | after µs | Open MPI µs | before / Open MPI | after / Open MPI |")
print("| ---: | ---: | ---: | ---: | ---: | ---: |")
for s in sizes:
    med = lambda v: statistics.median(t[(v, r, s)] for r in rounds)
    rat = lambda v: [t[(v, r, s)] / t[("openmpi", r, s)] for r in rounds]
    rb, rn = rat("base"), rat("new")
    print(f"| {s} | {med('base'):.3f} | {med('new'):.3f} | {med('openmpi'):.3f} | "
          f"{statistics.median(rb):.2f} ({min(rb):.2f}-{max(rb):.2f}) | "
          f"{statistics.median(rn):.2f} ({min(rn):.2f}-{max(rn):.2f}) |")
print(f"\nwrong elements, every run: {wrong}")
