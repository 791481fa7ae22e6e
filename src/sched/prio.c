/*
 * src/sched/prio.c: the PRIO scheduler's choice of the next unit: its
 * pools in priority order (pool 0 first), with aging so that a waiting
 * pool is not starved.
 */
#include "sched/loop.h"

/* PRIO: the most urgent pool, unless a waiting one was passed over for
 * `aging` units: then the one passed over longest. */
struct coexec_unit_rec *coexec__sched_prio_pick(struct coexec_xstream_rec *xs,
                                               struct coexec_sched_rec *s)
{
    int n = s->npools;
    if (s->aging) {
        int best = -1;
        uint32_t most = 0;
        for (int i = 1; i < n; i++)
            if (s->passed[i] >= s->aging && s->passed[i] > most &&
                pool_size(s->pools[i])) {
                most = s->passed[i];
                best = i;
            }
        if (best >= 0) {
            struct coexec_unit_rec *u = coexec__pool_pop(s->pools[best], xs);
            s->passed[best] = 0;
            if (u)
                return u;
        }
    }
    for (int i = 0; i < n; i++) {
        struct coexec_unit_rec *u = coexec__pool_pop(s->pools[i], xs);
        if (u) {
            s->passed[i] = 0;
            for (int k = i + 1; k < n; k++)
                if (pool_size(s->pools[k]))
                    s->passed[k]++;
            return u;
        }
    }
    return NULL;
}
