#!/usr/bin/env python3
"""Model of a communicator's creation time at 1k to 100k ranks, from bench/scale.sh's
measurements (scale.csv): the star bootstrap of today against a log-round one.

  bench/scale_model.py [--ppn 8] [--latency-us 5] [--bandwidth-gbs 12.5]
                       [--plot docs/img/scale_model.png] scale.csv

What a rank's creation costs is taken from the runs: the CPU time of the busiest rank
(rank 0 of the star) in symcoll_comm_create is fitted, by non-negative least squares, as

  cpu = c0 + c_msg * messages sent + c_byte * bytes sent and received + c_ep * UCX endpoints

(per-message, per-byte and per-endpoint CPU costs of this machine's code; CPU time rather
than wall time because the runs oversubscribe the cores, so their wall times measure the
scheduler). The per-rank payload of one exchange, s, and the exchanges per creation, E, come
from the largest multi-node run (a non-root rank of the star sends s and receives n*s per
exchange). Then, with L the network latency of one message and B the link bandwidth:

  star (today): rank 0 takes n-1 messages and sends n-1 of n*s bytes per exchange, and
  every rank connects UCX endpoints to all n - ppn remote ranks:
    T = c0 + E * (2L + (n-1) c_msg + n^2 s (c_byte + 1/B)) + (n - ppn) c_ep
  log rounds (Bruck allgather, endpoints connected on need): ceil(log2 n) rounds of one
  message each way, (n-1) s bytes each way per rank, and ceil(log2 n) + 2 endpoints
  (recursive-doubling partners and ring neighbours):
    T = c0 + E * (ceil(log2 n) (L + c_msg) + (n-1) s (2 c_byte + 1/B)) + (ceil(log2 n) + 2) c_ep

Wire latency and bandwidth are assumed (a 100 Gb/s network by default), not measured: the
runs here cross loopback only. The model leaves out what the runs cannot show: the
launcher's own start-up and contention in the network.
"""
import argparse
import csv
import math
import sys


def lstsq_nonneg(rows, y):
    """Least squares with coefficients >= 0: drop the most negative and refit."""
    active = list(range(len(rows[0])))
    while True:
        k = len(active)
        a = [[sum(r[active[i]] * r[active[j]] for r in rows) for j in range(k)] for i in range(k)]
        b = [sum(r[active[i]] * yy for r, yy in zip(rows, y)) for i in range(k)]
        # Gauss-Jordan with partial pivoting; a singular column gets 0
        m = [a[i] + [b[i]] for i in range(k)]
        for c in range(k):
            p = max(range(c, k), key=lambda i: abs(m[i][c]))
            m[c], m[p] = m[p], m[c]
            if abs(m[c][c]) < 1e-30:
                continue
            for i in range(k):
                if i != c:
                    f = m[i][c] / m[c][c]
                    m[i] = [x - f * z for x, z in zip(m[i], m[c])]
        sol = [m[i][k] / m[i][i] if abs(m[i][i]) > 1e-30 else 0.0 for i in range(k)]
        worst = min(range(k), key=lambda i: sol[i]) if k else None
        if k == 0 or sol[worst] >= 0:
            coef = [0.0] * len(rows[0])
            for i, c in enumerate(active):
                coef[c] = sol[i]
            return coef
        del active[worst]


def star(n, p, ppn):
    return (p["c0"] + p["E"] * (2 * p["L"] + (n - 1) * p["c_msg"] +
                                n * n * p["s"] * (p["c_byte"] + 1 / p["B"])) +
            max(n - ppn, 0) * p["c_ep"])


def logr(n, p, ppn):
    r = math.ceil(math.log2(n)) if n > 1 else 0
    eps = min(r + 2, max(n - ppn, 0))
    return (p["c0"] + p["E"] * (r * (p["L"] + p["c_msg"]) +
                                (n - 1) * p["s"] * (2 * p["c_byte"] + 1 / p["B"])) +
            eps * p["c_ep"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="scale.csv written by bench/scale.sh")
    ap.add_argument("--ppn", type=int, default=8, help="ranks per node (default 8)")
    ap.add_argument("--latency-us", type=float, default=5.0,
                    help="network latency of one message, us (default 5)")
    ap.add_argument("--bandwidth-gbs", type=float, default=12.5,
                    help="link bandwidth, GB/s (default 12.5: 100 Gb/s)")
    ap.add_argument("--plot", help="write a plot of measured and modelled times (matplotlib)")
    args = ap.parse_args()

    with open(args.csv, newline="") as f:
        runs = [r for r in csv.DictReader(f) if r.get("n")]
    if not runs:
        sys.exit("scale_model.py: no runs in " + args.csv)
    num = lambda r, k: float(r[k])

    # the fit: busiest rank's CPU time against what it handled
    feats = [[1.0, num(r, "msgs_max"), num(r, "bytes_max"), num(r, "eps_max")] for r in runs]
    cpu = [num(r, "cpu_max_s") for r in runs]
    c0, c_msg, c_byte, c_ep = lstsq_nonneg(feats, cpu)
    # payload per rank and exchange, and exchanges per creation, from the largest
    # multi-node run (the one nearest to the modelled shape), else the largest
    big = max(runs, key=lambda r: (num(r, "nodes") > 1, num(r, "n"), num(r, "nodes")))
    n_big, e_big = num(big, "n"), max(num(big, "exchanges"), 1)
    s = num(big, "bytes_med") / (e_big * (n_big + 1))
    p = dict(c0=c0, c_msg=c_msg, c_byte=c_byte, c_ep=c_ep, s=s, E=e_big,
             L=args.latency_us * 1e-6, B=args.bandwidth_gbs * 1e9)
    # until the first calls have run: the exchanges they add (pool segments, keys) too
    e_calls = max(num(big, "exchanges_calls"), e_big)
    s_calls = num(big, "bytes_calls_med") / (e_calls * (n_big + 1))
    p_calls = dict(p, E=e_calls, s=s_calls)

    print("# constants: latency %.1f us, bandwidth %.1f GB/s (assumed); %d ranks per node"
          % (args.latency_us, args.bandwidth_gbs, args.ppn))
    print("# measured here (fit of the busiest rank's CPU time over %d runs): c0 %.2f ms, "
          "c_msg %.2f us/message, c_byte %.3f ns/byte, c_ep %.1f us/endpoint"
          % (len(runs), c0 * 1e3, c_msg * 1e6, c_byte * 1e9, c_ep * 1e6))
    print("# from the %d-rank %d-node run: %d exchanges per creation, %.0f bytes per rank "
          "and exchange; %d and %.0f until the first calls have run (+calls)"
          % (n_big, num(big, "nodes"), e_big, s, e_calls, s_calls))
    print("# fit against the runs (CPU time of the busiest rank, ms):")
    print("#   %-12s %6s %5s %10s %10s %10s" % ("launcher", "n", "nodes", "measured",
                                               "fitted", "wall max"))
    for r, f in zip(runs, feats):
        fit = sum(a * b for a, b in zip(f, (c0, c_msg, c_byte, c_ep)))
        print("#   %-12s %6d %5d %10.2f %10.2f %10.1f" % (
            r["label"], num(r, "n"), num(r, "nodes"), num(r, "cpu_max_s") * 1e3, fit * 1e3,
            num(r, "create_max_s") * 1e3))
    print("%8s %7s %10s %12s %14s %9s %10s %12s %12s %8s" % (
        "ranks", "nodes", "star_s", "star+calls_s", "star_r0_bytes", "star_eps", "log_s",
        "log+calls_s", "log_bytes", "log_eps"))
    for n in (1000, 10000, 100000):
        r = math.ceil(math.log2(n))
        print("%8d %7d %10.3f %12.3f %14.3g %9d %10.4f %12.4f %12.3g %8d" % (
            n, math.ceil(n / args.ppn), star(n, p, args.ppn), star(n, p_calls, args.ppn),
            e_big * n * n * s, n - args.ppn, logr(n, p, args.ppn),
            logr(n, p_calls, args.ppn), e_big * 2 * (n - 1) * s, r + 2))

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
        ax.loglog(ns, [star(n, p, args.ppn) for n in ns], label="star (today), model")
        ax.loglog(ns, [star(n, p_calls, args.ppn) for n in ns], "--",
                  label="star, until the first calls have run")
        ax.loglog(ns, [logr(n, p, args.ppn) for n in ns], label="log rounds, model")
        ax.loglog([num(r, "n") for r in runs], cpu, "o", label="measured: CPU of busiest rank")
        ax.loglog([num(r, "n") for r in runs], [num(r, "create_max_s") for r in runs], "x",
                  label="measured: wall (oversubscribed)")
        ax.set_xlabel("ranks (%d per node)" % args.ppn)
        ax.set_ylabel("communicator creation, s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print("# plot: " + args.plot)


if __name__ == "__main__":
    main()
