import collections,sys
d={}
vs=[]
for l in open(sys.argv[1]):
    f=l.split()
    if len(f)<4: continue
    d[(int(f[2]),f[0],int(f[1]))]=float(f[3])
    if f[0] not in vs: vs.append(f[0])
for s in sorted(set(k[0] for k in d)):
    row=[]
    for v in vs:
        if v=='omp': continue
        rs=[d[(s,v,r)]/d[(s,'omp',r)] for r in range(1,9) if (s,v,r) in d and (s,'omp',r) in d]
        med=sorted(d[(s,v,r)] for r in range(1,9) if (s,v,r) in d)
        row.append(f"{v} {med[len(med)//2]:.1f}us {min(rs):.2f}-{max(rs):.2f}")
    om=sorted(d[(s,'omp',r)] for r in range(1,9) if (s,'omp',r) in d)
    print(s, ' | '.join(row), '| omp', om[len(om)//2])
