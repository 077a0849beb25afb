# symcoll_perf and its peers
