import collections,statistics,sys
d=collections.defaultdict(dict)
for l in open(sys.argv[1]):
    p=l.split()
    if len(p)<5: continue
    v,r,s,t,w=p; d[(v,int(s))][int(r)]=float(t)
vs=[]; [vs.append(k[0]) for k in d if k[0] not in vs]
for s in sorted({k[1] for k in d}):
    o=d[('omp',s)]
    out=[]
    for v in vs:
        if v=='omp': out.append(f"omp={statistics.median(o.values()):.0f}"); continue
        rs=sorted(d[(v,s)][r]/o[r] for r in d[(v,s)] if r in o)
        out.append(f"{v}={statistics.median(d[(v,s)].values()):.0f} r={statistics.median(rs):.2f}[{rs[0]:.2f}-{rs[-1]:.2f}]")
    print(s,' '.join(out))
