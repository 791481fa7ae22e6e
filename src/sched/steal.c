/*
 * src/sched/steal.c: stealing: a scheduler whose pools are empty takes a
 * unit from another stream's default pool (or, RANDWS with several pools,
 * from its pools 1..), at random, nearer victims first.
 */
#include "base/topology.h"
#include "sched/loop.h"
#include "thread/tool.h"

static inline uint32_t xs_rand(struct coexec_xstream_rec *xs)
{
    /* xorshift32: the stream's own state, never shared. */
    uint32_t x = xs->rng ? xs->rng : (uint32_t)(xs->rank * 2654435761u + 1);
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    xs->rng = x;
    return x;
}

/* How far a victim pool is from xs: 0 same core ... DIST_FAR unknown. */
static unsigned victim_dist(struct coexec_xstream_rec *xs,
                            struct coexec_pool_rec *v)
{
    int cpu = (int)atom_load_rlx_u32(&v->home_cpu) - 1;
    if (cpu < 0 || xs->cpu < 0)
        return DIST_FAR;
    if ((unsigned)cpu < XS_DIST_CACHE) {
        uint8_t d = xs->dist[cpu];
        if (d == 0xff) {
            d = (uint8_t)coexec__affinity_distance(xs->cpu, cpu);
            xs->dist[cpu] = d;
        }
        return d;
    }
    return (unsigned)coexec__affinity_distance(xs->cpu, cpu);
}

/* Steals one unit for s: from s's pools 1.. (RANDWS with several pools) or
 * from the other streams' default pools, at random, nearer victims first. */
struct coexec_unit_rec *coexec__sched_steal_one(struct coexec_xstream_rec *xs,
                                               struct coexec_sched_rec *s)
{
    bool registry = s->steal_registry;
    unsigned n = registry ? atom_load_acq_u32(&coexec__steal.num)
                          : (unsigned)s->npools - 1;
    if (n == 0)
        return NULL;
    unsigned start = xs_rand(xs) % n;
    for (unsigned cls = 0; cls <= DIST_FAR; cls++) {
        bool farther = false;
        for (unsigned k = 0; k < n; k++) {
            unsigned i = (start + k) % n;
            struct coexec_pool_rec *v =
                registry ? atom_load_acq_ptr(&coexec__steal.pools[i])
                         : s->pools[1 + i];
            if (!v || pool_size(v) == 0 ||
                (registry && own_pool(s, v)))
                continue;
            unsigned d = victim_dist(xs, v);
            if (d != cls) {
                farther |= d > cls;
                continue;
            }
            struct coexec_unit_rec *u =
                coexec__pool_steal(v, xs, s->pools[0], registry);
            if (u) {
                stat_add(&xs->count[XC_STEALS], 1);
                TOOL_EVENT(COEXEC_TOOL_UNIT_STEAL, xs, u, NULL);
                atom_fadd_rlx_u64(&v->stolen, 1);
                /* A stolen unit moves: when it yields or is woken, it comes
                 * back here, not to the stream it was taken from. Release:
                 * a joiner that finds the new home (acquire) also sees the
                 * victim's unlink of u. */
                atom_store_rel_ptr(&u->pool, s->pools[0]);
                return u;
            }
        }
        if (!farther)
            break;
    }
    return NULL;
}
