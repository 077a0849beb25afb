/* Whether the hierarchical algorithm's order is the canonical reduction tree on a layout
 * (algo/base/reduce.h): the selector's check for the canonical reduction order. */
#include "topo/select.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A set of ranks as a sum of a mixing function of each: equal sets, equal sums; two
 * different sets of one layout collide with probability about 2^-64. */
static uint64_t tree_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The canonical tree over n leaves (leaf[i]: the set under leaf i): appends the set of
 * each of its n - 1 inner vertices to out (*nout grows); leaf[] is overwritten. */
static void tree_sets(uint64_t *leaf, int n, uint64_t *out, int *nout)
{
    int p2 = 1, rem;

    while (2 * p2 <= n)
        p2 *= 2;
    rem = n - p2;
    for (int v = 0; v < p2; v++) {
        if (v < rem) {
            leaf[v] = leaf[2 * v] + leaf[2 * v + 1];
            out[(*nout)++] = leaf[v];
        } else {
            leaf[v] = leaf[v + rem];
        }
    }
    for (int w = 1; w < p2; w *= 2)
        for (int v = 0; v + w < p2; v += 2 * w) {
            leaf[v] = leaf[v] + leaf[v + w];
            out[(*nout)++] = leaf[v];
        }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

bool topo_hier_canonical(int n, int nnodes, const int *node_ranks, const int *node_first,
                         const int *node_size)
{
    uint64_t *leaf = malloc((size_t)n * sizeof(*leaf));
    uint64_t *want = malloc((size_t)n * sizeof(*want)), *got = malloc((size_t)n * sizeof(*got));
    int nw = 0, ng = 0;
    bool same = false;

    if (!leaf || !want || !got)
        goto out;
    for (int r = 0; r < n; r++)
        leaf[r] = tree_mix((uint64_t)r);
    tree_sets(leaf, n, want, &nw);
    for (int k = 0; k < nnodes; k++) {
        uint64_t *node = leaf + node_first[k];
        for (int i = 0; i < node_size[k]; i++)
            node[i] = tree_mix((uint64_t)node_ranks[node_first[k] + i]);
        tree_sets(node, node_size[k], got, &ng);
    }
    /* each node's root, in node order, as the leaves of the nodes' tree */
    for (int k = 0; k < nnodes; k++)
        leaf[k] = leaf[node_first[k]];
    tree_sets(leaf, nnodes, got, &ng);
    if (nw != ng)
        goto out;
    qsort(want, (size_t)nw, sizeof(*want), cmp_u64);
    qsort(got, (size_t)ng, sizeof(*got), cmp_u64);
    same = !memcmp(want, got, (size_t)nw * sizeof(*want));
out:
    free(leaf);
    free(want);
    free(got);
    return same;
}
