#!/usr/bin/env python3
"""Model of a communicator's creation time at 1k to 100k ranks, from bench/scale.sh's
measurements: the bootstrap's unit costs on this machine (unit.csv) and the exchanges
that creation makes (scale.csv).

  bench/scale_model.py [--ppn 8] [--latency-us 5] [--bandwidth-gbs 12.5]
                       [--unit OUT/unit.csv] [--plot docs/img/scale_model.png]
                       OUT/scale.csv

Constants measured here (bench/scale_setup -u on 2 ranks on 2 simulated nodes, where no
core is shared; the median of the runs in unit.csv):
  t_r  one round of the bootstrap mesh (a small message each way: CPU, kernel, loopback)
  c_b  time per byte moved through the bootstrap (sent plus received; wall time, no
       core shared)
  c0   a whole creation at 2 ranks (library and UCX set-up, its few rounds included)
Taken from the largest multi-node run of scale.csv: E, the job-wide exchanges of one
creation, and s, the bytes per rank and exchange (E and s also until the first calls
have run: +calls). Assumed, since the runs cross loopback only: L, the latency of one
message on the network, and B, the link bandwidth (100 Gb/s by default).

With n ranks, K = ceil(log2 n), N = n / ppn nodes:
  log rounds (PMIx): every exchange is K rounds of the mesh, (n - 1) s bytes each way
    T = c0 + E (K (t_r + L) + (n - 1) s (2 c_b + 1/B)) + eps (2 (t_r + L))
    eps = ceil(log2 N) + 1 UCX endpoints at creation (recursive-doubling partners and
    the ring neighbour across nodes, as measured at 4, 8 and 32 nodes), each a wire-up of
    one message each way
  log rounds, TCP rendezvous: the same plus rank 0's address book. The ranks of a node
    meet their node's leader first (a Unix socket), and rank 0 serves one connection per
    node (an accept, five messages, two proofs: c_j of CPU each) and takes the other
    ranks from their leaders' streams (c_m each); the leaders serve their members in
    parallel, at most c_j each:
      + N c_j + (n - N) c_m + ppn c_j + 4 (t_r + L)
    c_j: rank 0's CPU time per connection in the runs without leaders (direct:N:K of
    scale.sh, SYMCOLL_RENDEZVOUS_LEADERS=0), the median over those of 16 ranks and more;
    c_m: in the runs with leaders, rank 0's CPU time less c_j per connection, per rank
    it heard of through a leader (the largest such run). Over loopback both hold the
    receivers' TCP processing, which the kernel charges to the sender, and c_m a
    wake-up per member, since members trickle in here one by one (a busy rank 0 reads
    up to 64 at once): upper bounds
  star (before f621195): rank 0 takes n - 1 messages in and sends n - 1 of n s bytes per
    exchange, and every rank connects to every remote rank:
    T = c0 + E (2 L + (n - 1) t_r / 2 + n^2 s (c_b + 1/B)) + (n - ppn) 2 (t_r + L)
The model leaves out the launcher's own start-up, process start and contention in the
network; the PMIx case leaves out the launcher's fence (its own engine).
"""
import argparse
import csv
import math
import os
import statistics
import sys


def star(n, p):
    return (p["c0"] + p["E"] * (2 * p["L"] + (n - 1) * p["t_r"] / 2 +
                                n * n * p["s"] * (p["c_b"] + 1 / p["B"])) +
            max(n - p["ppn"], 0) * 2 * (p["t_r"] + p["L"]))


def eps(n, p):
    nodes = max(1, math.ceil(n / p["ppn"]))
    return math.ceil(math.log2(nodes)) + 1 if nodes > 1 else 0


def logr(n, p):
    k = math.ceil(math.log2(n)) if n > 1 else 0
    return (p["c0"] + p["E"] * (k * (p["t_r"] + p["L"]) +
                                (n - 1) * p["s"] * (2 * p["c_b"] + 1 / p["B"])) +
            eps(n, p) * 2 * (p["t_r"] + p["L"]))


def rendezvous(n, p):
    if p["c_j"] is None or p["c_m"] is None:
        return float("nan")
    nodes = max(1, math.ceil(n / p["ppn"]))
    return (nodes * p["c_j"] + (n - nodes) * p["c_m"] + min(p["ppn"], n) * p["c_j"] +
            4 * (p["t_r"] + p["L"]))


def read_csv(path, first):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r.get(first)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="scale.csv written by bench/scale.sh")
    ap.add_argument("--unit", help="unit.csv of bench/scale.sh's unit case "
                    "(default: unit.csv next to scale.csv)")
    ap.add_argument("--ppn", type=int, default=8, help="ranks per node (default 8)")
    ap.add_argument("--latency-us", type=float, default=5.0,
                    help="network latency of one message, us (default 5)")
    ap.add_argument("--bandwidth-gbs", type=float, default=12.5,
                    help="link bandwidth, GB/s (default 12.5: 100 Gb/s)")
    ap.add_argument("--plot", help="write a plot of measured and modelled times (matplotlib)")
    args = ap.parse_args()

    unit_path = args.unit or os.path.join(os.path.dirname(args.csv) or ".", "unit.csv")
    runs = read_csv(args.csv, "n")
    if not runs:
        sys.exit("scale_model.py: no runs in " + args.csv)
    if not os.path.exists(unit_path):
        sys.exit("scale_model.py: no %s: run bench/scale.sh ... unit first" % unit_path)
    units = read_csv(unit_path, "round_us")
    if not units:
        sys.exit("scale_model.py: no unit costs in " + unit_path)
    num = lambda r, k: float(r[k])
    med = lambda k: statistics.median(num(u, k) for u in units)

    # exchanges per creation and bytes per rank and exchange, from the largest
    # multi-node run (the one nearest to the modelled shape), else the largest
    big = max(runs, key=lambda r: (num(r, "nodes") > 1, num(r, "n"), num(r, "nodes")))
    n_big, e_big = num(big, "n"), max(num(big, "exchanges"), 1)
    s = num(big, "bytes_med") / (2 * e_big * (n_big - 1))
    p = dict(t_r=med("round_us") * 1e-6, c_b=med("byte_ns") * 1e-9, c0=med("create_s"),
             s=s, E=e_big, L=args.latency_us * 1e-6, B=args.bandwidth_gbs * 1e9,
             ppn=args.ppn)
    tcp = [r for r in runs if float(r.get("rendezvous_cpu_s") or 0) > 0 and num(r, "n") > 1]
    members = lambda r: float(r.get("rendezvous_members") or 0)
    conns = lambda r: float(r.get("rendezvous_conns") or 0) or num(r, "n") - 1
    direct = [r for r in tcp if members(r) == 0]
    # runs of 16 ranks and more where there are some: in smaller ones the fixed part of
    # rank 0's work weighs on each rank it served
    direct = [r for r in direct if num(r, "n") >= 16] or direct
    served = [num(r, "rendezvous_cpu_s") / conns(r) for r in direct]
    # without a run of the TCP bootstrap its rendezvous is not modelled (None)
    p["c_j"] = statistics.median(served) if served else None
    led = [r for r in tcp if members(r) > 0]
    p["c_m"] = None
    if led and served:
        r = max(led, key=members)
        p["c_m"] = max(num(r, "rendezvous_cpu_s") - conns(r) * p["c_j"], 0) / members(r)
    e_calls = max(num(big, "exchanges_calls"), e_big)
    p_calls = dict(p, E=e_calls,
                   s=num(big, "bytes_calls_med") / (2 * e_calls * (n_big - 1)))

    print("# assumed: latency L %.1f us, bandwidth B %.1f GB/s; %d ranks per node"
          % (args.latency_us, args.bandwidth_gbs, args.ppn))
    print("# measured here (median of %d unit runs, 2 ranks on 2 simulated nodes): "
          "round t_r %.1f us, c_b %.3f ns/byte, creation c0 %.1f ms"
          % (len(units), p["t_r"] * 1e6, p["c_b"] * 1e9, p["c0"] * 1e3))
    if served and p["c_m"] is not None:
        print("# rank 0 of the TCP rendezvous: c_j %.1f us of CPU per connection (median of "
              "%d runs without leaders), c_m %.1f us per rank heard of through a leader (the "
              "%d-rank run)" % (p["c_j"] * 1e6, len(served), p["c_m"] * 1e6,
                                num(max(led, key=members), "n")))
    else:
        print("# no runs of the TCP bootstrap with and without host leaders: its rendezvous "
              "is not modelled (nan)")
    print("# from the %d-rank %d-node run: E %d exchanges per creation, s %.0f bytes per "
          "rank and exchange; until the first calls (+calls) %d and %.0f"
          % (n_big, num(big, "nodes"), e_big, s, e_calls, p_calls["s"]))
    print("# the runs (wall time of the slowest rank; they share 2 cores, the model "
          "does not):")
    print("#   %-18s %6s %5s %12s %12s" % ("launcher", "n", "nodes", "measured s",
                                          "model s"))
    for r in runs:
        n = int(num(r, "n"))
        pr = dict(p, ppn=max(1, n // int(num(r, "nodes"))))
        if r["label"] == "mpirun":
            model = logr(n, pr)
        elif members(r) == 0:  # every rank dialled rank 0
            model = logr(n, pr) + (n - 1) * (p["c_j"] or float("nan")) + 2 * (p["t_r"] + p["L"])
        else:
            model = logr(n, pr) + rendezvous(n, pr)
        print("#   %-18s %6d %5d %12.3f %12.3f" % (r["label"], n, num(r, "nodes"),
                                                   num(r, "create_max_s"), model))
    print("%8s %7s %10s %12s %10s %12s %10s %12s %12s %8s" % (
        "ranks", "nodes", "star_s", "star+calls_s", "pmix_s", "pmix+calls_s", "tcp_s",
        "tcp+calls_s", "bytes/rank", "eps"))
    for n in (1000, 10000, 100000):
        print("%8d %7d %10.1f %12.1f %10.4f %12.4f %10.3f %12.3f %12.3g %8d" % (
            n, math.ceil(n / args.ppn), star(n, p), star(n, p_calls), logr(n, p),
            logr(n, p_calls), logr(n, p) + rendezvous(n, p),
            logr(n, p_calls) + rendezvous(n, p), p["E"] * 2 * (n - 1) * p["s"], eps(n, p)))

    if args.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("# no matplotlib: no plot", file=sys.stderr)
            return
        ns = [2 ** k for k in range(3, 18)]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.loglog(ns, [star(n, p) for n in ns], label="star (before), model")
        ax.loglog(ns, [logr(n, p) + rendezvous(n, p) for n in ns],
                  label="mesh, TCP rendezvous with host leaders, model")
        if p["c_j"] is not None:
            ax.loglog(ns, [logr(n, p) + (n - 1) * p["c_j"] for n in ns], ":",
                      label="mesh, every rank dials rank 0, model")
        ax.loglog(ns, [logr(n, p) for n in ns], label="mesh, PMIx, model")
        ax.loglog(ns, [logr(n, p_calls) for n in ns], "--",
                  label="mesh, PMIx, until the first calls, model")
        for lab, mark in (("symcoll_run", "x"), ("symcoll_run-direct", "1"), ("mpirun", "+")):
            pts = [(num(r, "n"), num(r, "create_max_s")) for r in runs if r["label"] == lab]
            if pts:
                ax.loglog(*zip(*pts), mark, label="measured, %s, on 2 shared cores" % lab)
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.axhline(3.0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("ranks (%d per node in the model)" % args.ppn)
        ax.set_ylabel("communicator creation, s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print("# plot: " + args.plot)


if __name__ == "__main__":
    main()
