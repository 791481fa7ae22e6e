/*
 * src/abt/xstream.c: execution streams (ABT_xstream_*) and the stream
 * barrier.
 *
 * An ABT stream is a coexec xstream plus the rank the Argobots program
 * sees: coexec numbers its streams itself, while ABT_xstream_create_with_rank
 * and ABT_xstream_set_rank let the program choose. Two tables map coexec
 * ranks and ABT ranks to records. A revived stream is a new coexec stream
 * behind the same record and rank.
 */
#include <sched.h>
#include <stdlib.h>

#include "abt_internal.h"

/* Streams being started: their record is filled in once
 * coexec_xstream_create has returned, while their scheduler may already
 * run and ask for it. */
static atomic_int starting;

/* A stream still being started has no record yet: wait for it. */
static __attribute__((noinline)) ABT_xstream xstream_self_starting(int crank)
{
    ABT_xstream x;
    while (!(x = __atomic_load_n(&abtx_g.by_crank[crank], __ATOMIC_ACQUIRE)) &&
           atomic_load(&starting) > 0)
        sched_yield();
    return x;
}

/* The calling OS thread's stream, read inline: only in a call that has
 * not switched since it began (as abtx_self_crank_here). */
static inline ABT_xstream xstream_self_here(void)
{
    int crank = abtx_self_crank_here();
    ABT_xstream x = abtx_xstream_of_crank(crank);
    if (__builtin_expect(x != NULL, 1) || (unsigned)crank >= ABTX_MAX_XSTREAMS)
        return x;
    return xstream_self_starting(crank);
}

/* Not inlined: a caller may have switched since its last call. */
__attribute__((noinline)) ABT_xstream abtx_xstream_self(void)
{
    return xstream_self_here();
}

/* The lowest free ABT rank (under abtx_lock). */
static int free_rank(void)
{
    for (int r = 0; r < ABTX_MAX_XSTREAMS; r++)
        if (!abtx_g.by_rank[r])
            return r;
    return -1;
}

/* Starts a coexec stream running sched for x. */
static int xstream_start(ABT_xstream x, ABT_sched sched)
{
    coexec_xstream_attr_t attr;
    ABTX_IGNORE(coexec_xstream_attr_init(&attr));
    attr.sched = sched->cs;
    atomic_fetch_add(&starting, 1);
    int rc = coexec_xstream_create(&attr, &x->cx);
    if (rc) {
        atomic_fetch_sub(&starting, 1);
        return rc == COEXEC_EBUSY ? ABT_ERR_INV_SCHED
                                  : abtx_err(rc, ABT_ERR_INV_SCHED,
                                             ABT_ERR_XSTREAM);
    }
    ABTX_IGNORE(coexec_xstream_get_rank(x->cx, &x->crank));
    pthread_mutex_lock(&abtx_lock);
    __atomic_store_n(&abtx_g.by_crank[x->crank], x, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&abtx_lock);
    atomic_fetch_sub(&starting, 1);
    return ABT_SUCCESS;
}

/* *out is ABT_XSTREAM_NULL on an error (as in Argobots 1.x). */
static int xstream_new(ABT_sched sched, int rank, ABT_xstream *out)
{
    if (!out)
        return ABT_ERR_INV_ARG;
    *out = ABT_XSTREAM_NULL;
    ABTX_CHECK_INIT();
    bool own_sched = false;
    if (sched == ABT_SCHED_NULL) {
        int rc = abtx_sched_new_basic(ABT_SCHED_DEFAULT, 0, NULL,
                                      ABT_SCHED_CONFIG_NULL, &sched);
        if (rc)
            return rc;
        sched->automatic = true;
        own_sched = true;
    } else if (!abtx_sched(sched)) {
        return ABT_ERR_INV_SCHED;
    } else if (abtx_sched_taken(sched)) {
        return ABT_ERR_INV_SCHED;
    }
    /* coexec refuses it while it is still stacked */
    bool was_stacked = abtx_sched_is_stacked(sched);
    ABT_xstream x = calloc(1, sizeof(*x));
    if (!x)
        return ABT_ERR_MEM;
    x->magic = ABTX_XSTREAM;
    x->sched = sched;
    pthread_mutex_lock(&abtx_lock);
    if (rank < 0)
        rank = free_rank();
    if (rank < 0 || rank >= ABTX_MAX_XSTREAMS || abtx_g.by_rank[rank]) {
        pthread_mutex_unlock(&abtx_lock);
        free(x);
        if (own_sched)
            (void)abtx_sched_release(sched);
        return ABT_ERR_INV_XSTREAM_RANK;
    }
    x->rank = rank;
    abtx_g.by_rank[rank] = x;
    pthread_mutex_unlock(&abtx_lock);
    sched->used = true;
    abtx_sched_set_stacked(sched, false);
    int rc = xstream_start(x, sched);
    pthread_mutex_lock(&abtx_lock);
    if (rc) {
        abtx_g.by_rank[rank] = NULL;
        pthread_mutex_unlock(&abtx_lock);
        sched->used = was_stacked;
        abtx_sched_set_stacked(sched, was_stacked);
        free(x);
        if (own_sched)
            (void)abtx_sched_release(sched);
        return rc;
    }
    x->next = abtx_g.xstreams;
    abtx_g.xstreams = x;
    pthread_mutex_unlock(&abtx_lock);
    *out = x;
    return ABT_SUCCESS;
}

int ABT_xstream_create(ABT_sched sched, ABT_xstream *newxstream)
{
    return xstream_new(sched, -1, newxstream);
}

int ABT_xstream_create_with_rank(ABT_sched sched, int rank,
                                 ABT_xstream *newxstream)
{
    if (rank < 0) {
        if (newxstream)
            *newxstream = ABT_XSTREAM_NULL;
        return ABT_ERR_INV_XSTREAM_RANK;
    }
    return xstream_new(sched, rank, newxstream);
}

int ABT_xstream_create_basic(ABT_sched_predef predef, int num_pools,
                             ABT_pool *pools, ABT_sched_config config,
                             ABT_xstream *newxstream)
{
    if (newxstream)
        *newxstream = ABT_XSTREAM_NULL;
    ABTX_CHECK_INIT();
    ABT_sched sched;
    int rc = abtx_sched_new_basic(predef, num_pools, pools, config, &sched);
    if (rc)
        return rc;
    sched->automatic = true;
    rc = xstream_new(sched, -1, newxstream);
    if (rc)
        (void)abtx_sched_release(sched);
    return rc;
}

/* Joins x's coexec stream; the caller's record is restored after. */
static int xstream_join(ABT_xstream x)
{
    if (x->joined)
        return ABT_SUCCESS;
    int rc;
    ABTX_WAIT(rc, ABT_SYNC_EVENT_TYPE_XSTREAM_JOIN, x,
              coexec_xstream_join(x->cx));
    if (rc == COEXEC_EDEADLK || rc == COEXEC_EPERM)
        return ABT_ERR_INV_XSTREAM;
    if (rc == COEXEC_ECONTEXT)
        return ABT_ERR_INV_THREAD;
    if (rc)
        return abtx_err(rc, ABT_ERR_INV_XSTREAM, ABT_ERR_XSTREAM);
    x->joined = true;
    return ABT_SUCCESS;
}

int ABT_xstream_join(ABT_xstream xstream)
{
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream) || xstream->primary)
        return ABT_ERR_INV_XSTREAM;
    if (xstream == abtx_xstream_self())
        return ABT_ERR_INV_XSTREAM;
    return xstream_join(xstream);
}

int ABT_xstream_free(ABT_xstream *xstream)
{
    ABTX_CHECK_INIT();
    if (!xstream)
        return ABT_ERR_INV_ARG;
    ABT_xstream x = *xstream;
    if (!abtx_xstream(x) || x->primary || x == abtx_xstream_self())
        return ABT_ERR_INV_XSTREAM;
    int rc = xstream_join(x);
    if (rc)
        return rc;
    coexec_xstream_t cx = x->cx;
    rc = coexec_xstream_free(&cx);
    if (rc)
        return abtx_err(rc, ABT_ERR_INV_XSTREAM, ABT_ERR_XSTREAM);
    pthread_mutex_lock(&abtx_lock);
    abtx_g.by_rank[x->rank] = NULL;
    if (abtx_g.by_crank[x->crank] == x)
        abtx_g.by_crank[x->crank] = NULL;
    x->magic = ABTX_FREED;
    pthread_mutex_unlock(&abtx_lock);
    abtx_xstream_prune_retired(x);
    x->retired = NULL;
    ABT_sched s = x->sched;
    x->sched = NULL;
    if (abtx_sched(s)) {
        s->used = false;
        if (s->automatic)
            (void)abtx_sched_release(s);
    }
    *xstream = ABT_XSTREAM_NULL;
    return ABT_SUCCESS;
}

int ABT_xstream_revive(ABT_xstream xstream)
{
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream) || xstream->primary)
        return ABT_ERR_INV_XSTREAM;
    if (!xstream->joined)
        return ABT_ERR_INV_XSTREAM; /* not terminated: Argobots' code */
    coexec_xstream_t old = xstream->cx;
    int rc = coexec_xstream_free(&old);
    if (rc)
        return abtx_err(rc, ABT_ERR_INV_XSTREAM, ABT_ERR_XSTREAM);
    pthread_mutex_lock(&abtx_lock);
    if (abtx_g.by_crank[xstream->crank] == xstream)
        abtx_g.by_crank[xstream->crank] = NULL;
    pthread_mutex_unlock(&abtx_lock);
    rc = xstream_start(xstream, xstream->sched);
    if (!rc)
        xstream->joined = false;
    return rc;
}

int ABT_xstream_self(ABT_xstream *xstream)
{
    if (!xstream)
        return ABT_ERR_INV_ARG;
    *xstream = ABT_XSTREAM_NULL; /* Argobots 1.x: also on an error */
    ABTX_CHECK_INIT();
    *xstream = xstream_self_here();
    return *xstream ? ABT_SUCCESS : ABT_ERR_INV_XSTREAM;
}

int ABT_self_get_xstream(ABT_xstream *xstream)
{
    return ABT_xstream_self(xstream);
}

int ABT_xstream_self_rank(int *rank)
{
    ABTX_CHECK_INIT();
    if (!rank)
        return ABT_ERR_INV_ARG;
    ABT_xstream x = xstream_self_here();
    if (!x)
        return ABT_ERR_INV_XSTREAM;
    *rank = x->rank;
    return ABT_SUCCESS;
}

int ABT_self_get_xstream_rank(int *rank)
{
    return ABT_xstream_self_rank(rank);
}

int ABT_xstream_get_rank(ABT_xstream xstream, int *rank)
{
    if (!rank)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream))
        return ABT_ERR_INV_XSTREAM;
    *rank = xstream->rank;
    return ABT_SUCCESS;
}

int ABT_xstream_set_rank(ABT_xstream xstream, int rank)
{
    ABTX_CHECK_INIT();
    /* As in Argobots 1.x, the primary keeps rank 0. */
    if (!abtx_xstream(xstream) || xstream->primary)
        return ABT_ERR_INV_XSTREAM;
    if (rank < 0 || rank >= ABTX_MAX_XSTREAMS)
        return ABT_ERR_INV_XSTREAM_RANK;
    int rc = ABT_SUCCESS;
    pthread_mutex_lock(&abtx_lock);
    if (abtx_g.by_rank[rank] && abtx_g.by_rank[rank] != xstream) {
        rc = ABT_ERR_INV_XSTREAM_RANK;
    } else {
        abtx_g.by_rank[xstream->rank] = NULL;
        abtx_g.by_rank[rank] = xstream;
        xstream->rank = rank;
    }
    pthread_mutex_unlock(&abtx_lock);
    return rc;
}

int ABT_xstream_get_main_sched(ABT_xstream xstream, ABT_sched *sched)
{
    if (!sched)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream))
        return ABT_ERR_INV_XSTREAM;
    *sched = xstream->sched;
    return ABT_SUCCESS;
}

int ABT_xstream_get_main_pools(ABT_xstream xstream, int max_pools,
                               ABT_pool *pools)
{
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream) || !xstream->sched)
        return ABT_ERR_INV_XSTREAM;
    if (max_pools > 0 && !pools)
        return ABT_ERR_INV_ARG;
    ABT_sched s = xstream->sched;
    for (int i = 0; i < max_pools && i < s->num_pools; i++)
        pools[i] = s->pools[i];
    return ABT_SUCCESS;
}

void abtx_xstream_prune_retired(ABT_xstream x)
{
    ABT_sched *link = &x->retired;
    while (*link) {
        ABT_sched r = *link, next = r->retired_next;
        /* A scheduler made main again elsewhere leaves the list too. */
        if (!abtx_sched(r) || r->used || !abtx_sched_release(r))
            *link = next;
        else
            link = &r->retired_next; /* still running: at the next prune */
    }
}

void abtx_xstream_restore_primary(void)
{
    ABT_xstream x = abtx_g.primary;
    ABT_sched first = abtx_g.primary_sched;
    if (!abtx_xstream(x) || !abtx_sched(first))
        return;
    /* The caller, the primary's main ULT, returns once the primary has
     * switched: what it replaced no longer runs and can be freed. */
    if (x->sched != first)
        ABTX_IGNORE(ABT_xstream_set_main_sched(x, first));
    abtx_xstream_prune_retired(x);
}

static bool sched_has_pool(ABT_sched s, ABT_pool p)
{
    for (int i = 0; i < s->num_pools; i++)
        if (s->pools[i] == p)
            return true;
    return false;
}

bool abtx_main_home_stranded(ABT_pool p)
{
    bool mine = false, other = false;
    pthread_mutex_lock(&abtx_lock);
    for (ABT_xstream x = abtx_g.xstreams; x; x = x->next) {
        if (x->magic != ABTX_XSTREAM || x->joined || !abtx_sched(x->sched) ||
            !sched_has_pool(x->sched, p))
            continue;
        if (x->primary)
            mine = true;
        else
            other = true;
    }
    pthread_mutex_unlock(&abtx_lock);
    return other && !mine;
}

/* Who may change xstream's main scheduler, as in Argobots 1.x: a ULT
 * (an external thread: ABT_ERR_INV_XSTREAM, a tasklet: ABT_ERR_INV_THREAD)
 * of that stream while it runs, or of any stream once it has terminated
 * (ABT_ERR_XSTREAM_STATE otherwise). So the stream's records (its
 * scheduler, the list of those it retired) are only ever changed by its
 * own thread while it runs. */
static int main_sched_caller_check(ABT_xstream xstream)
{
    coexec_caller_t who = coexec_self_caller();
    if (who == COEXEC_CALLER_EXTERNAL)
        return ABT_ERR_INV_XSTREAM;
    if (who == COEXEC_CALLER_TASKLET || abtx_in_tasklet())
        return ABT_ERR_INV_THREAD;
    ABT_xstream_state st;
    ABTX_IGNORE(ABT_xstream_get_state(xstream, &st));
    if (st == ABT_XSTREAM_STATE_RUNNING && xstream != abtx_xstream_self())
        return ABT_ERR_XSTREAM_STATE;
    return ABT_SUCCESS;
}

/* A terminated stream's: its records only, for its revive to start it
 * under sched. What it replaces goes as a running stream's does (its
 * coexec scheduler is freed once the old coexec stream lets go of it). */
static int terminated_set_main(ABT_xstream xstream, ABT_sched sched)
{
    ABT_sched old = xstream->sched;
    if (abtx_sched(old)) {
        old->used = false;
        if (old->automatic && !old->borrowed) {
            old->retired_next = xstream->retired;
            xstream->retired = old;
        }
    }
    /* One stacked before, if coexec still has it, is refused by the
     * stream's revive. */
    sched->used = true;
    abtx_sched_set_stacked(sched, false);
    xstream->sched = sched;
    abtx_xstream_prune_retired(xstream);
    return ABT_SUCCESS;
}

int ABT_xstream_set_main_sched(ABT_xstream xstream, ABT_sched sched)
{
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream))
        return ABT_ERR_INV_XSTREAM;
    int crc = main_sched_caller_check(xstream);
    if (crc)
        return crc;
    /* As in Argobots 1.x: no scheduler is a new default one; one in use
     * (the stream's own included) is refused. */
    if (sched == ABT_SCHED_NULL)
        return ABT_xstream_set_main_sched_basic(xstream, ABT_SCHED_DEFAULT,
                                                0, NULL);
    if (!abtx_sched(sched) || abtx_sched_taken(sched))
        return ABT_ERR_INV_SCHED;
    if (xstream->joined)
        return terminated_set_main(xstream, sched);
    /* coexec refuses it while it is still stacked */
    bool was_stacked = abtx_sched_is_stacked(sched);
    /* A caller of that stream resumes under the new scheduler (coexec
     * parks it until the switch): in its pool if the new scheduler takes
     * from it, else (as Argobots does for a pool of the old scheduler) in
     * the new one's first pool. Set either way, so that coexec's home of
     * it is that pool even if coexec forwarded it since. */
    ABT_sched old = xstream->sched;
    ABT_thread self = abtx_cur_get();
    bool own = xstream == abtx_xstream_self() && self && self->is_ult;
    ABT_pool self_pool = own ? self->pool : ABT_POOL_NULL;
    bool moved = false;
    ABT_pool to = ABT_POOL_NULL;
    if (own && sched->num_pools > 0) {
        to = abtx_pool(self_pool) && sched_has_pool(sched, self_pool)
                 ? self_pool
                 : sched->pools[0];
        /* The primary's main ULT: a pool the new scheduler shares with
         * another stream may be refused before the switch
         * (abtx_main_home_stranded), so its home is set once the switch
         * is made (below). */
        if (!self->is_main)
            moved = ABT_thread_set_associated_pool(self, to) == ABT_SUCCESS;
    }
    /* The records first: other units of the stream run during the wait. */
    abtx_xstream_prune_retired(xstream);
    bool retired = false;
    if (abtx_sched(old)) {
        old->used = false;
        if (old->automatic && !old->borrowed) {
            old->retired_next = xstream->retired;
            xstream->retired = old;
            retired = true;
        }
    }
    sched->used = true;
    abtx_sched_set_stacked(sched, false);
    xstream->sched = sched;
    int rc = coexec_xstream_set_main_sched(xstream->cx, sched->cs);
    if (own)
        abtx_cur_set(self);
    if (!rc) {
        if (to && self->is_main) /* switched: the caller waited for it */
            ABTX_IGNORE(ABT_thread_set_associated_pool(self, to));
        return ABT_SUCCESS;
    }
    /* Refused before anything changed: undo. */
    xstream->sched = old;
    sched->used = was_stacked;
    abtx_sched_set_stacked(sched, was_stacked);
    if (abtx_sched(old))
        old->used = true;
    if (retired)
        xstream->retired = old->retired_next;
    if (moved && abtx_pool(self_pool))
        ABTX_IGNORE(ABT_thread_set_associated_pool(self, self_pool));
    if (rc == COEXEC_EBUSY)
        return ABT_ERR_INV_SCHED;
    return abtx_err(rc, ABT_ERR_INV_XSTREAM, ABT_ERR_XSTREAM_STATE);
}

int ABT_xstream_set_main_sched_basic(ABT_xstream xstream,
                                     ABT_sched_predef predef, int num_pools,
                                     ABT_pool *pools)
{
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream))
        return ABT_ERR_INV_XSTREAM;
    int rc = main_sched_caller_check(xstream);
    if (rc)
        return rc;
    ABT_sched sched;
    rc = abtx_sched_new_basic(predef, num_pools, pools,
                                  ABT_SCHED_CONFIG_NULL, &sched);
    if (rc)
        return rc;
    sched->automatic = true;
    rc = ABT_xstream_set_main_sched(xstream, sched);
    if (rc)
        (void)abtx_sched_release(sched);
    return rc;
}

int ABT_xstream_get_state(ABT_xstream xstream, ABT_xstream_state *state)
{
    if (!state)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream))
        return ABT_ERR_INV_XSTREAM;
    coexec_xstream_state_t s = COEXEC_XSTREAM_TERMINATED;
    if (!xstream->joined)
        ABTX_IGNORE(coexec_xstream_get_state(xstream->cx, &s));
    *state = s == COEXEC_XSTREAM_TERMINATED ? ABT_XSTREAM_STATE_TERMINATED
                                            : ABT_XSTREAM_STATE_RUNNING;
    return ABT_SUCCESS;
}

int ABT_xstream_equal(ABT_xstream xstream1, ABT_xstream xstream2,
                      ABT_bool *result)
{
    if (!result)
        return ABT_ERR_INV_ARG;
    *result = xstream1 == xstream2 ? ABT_TRUE : ABT_FALSE;
    return ABT_SUCCESS;
}

int ABT_xstream_get_num(int *num_xstreams)
{
    if (!num_xstreams)
        return ABT_ERR_INV_ARG;
    *num_xstreams = 0;
    ABTX_CHECK_INIT();
    int n = 0;
    pthread_mutex_lock(&abtx_lock);
    for (ABT_xstream x = abtx_g.xstreams; x; x = x->next)
        n += x->magic == ABTX_XSTREAM;
    pthread_mutex_unlock(&abtx_lock);
    *num_xstreams = n;
    return ABT_SUCCESS;
}

int ABT_xstream_is_primary(ABT_xstream xstream, ABT_bool *is_primary)
{
    if (!is_primary)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream))
        return ABT_ERR_INV_XSTREAM;
    *is_primary = xstream->primary ? ABT_TRUE : ABT_FALSE;
    return ABT_SUCCESS;
}

/* The CPUs x's thread may run on now (the kernel's affinity of it). */
static int xstream_cpus(ABT_xstream x, int max, int *cpus, int *n)
{
    ABTX_CHECK_INIT();
    if (!abtx_xstream(x))
        return ABT_ERR_INV_XSTREAM;
    if (x->joined)
        return ABT_ERR_CPUID;
    int rc = coexec_xstream_get_cpus(x->cx, cpus, max, n);
    if (rc == COEXEC_ESTATE)
        return ABT_ERR_CPUID;
    return abtx_err(rc, ABT_ERR_INV_XSTREAM, ABT_ERR_SYS);
}

int ABT_xstream_get_cpubind(ABT_xstream xstream, int *cpuid)
{
    if (!cpuid)
        return ABT_ERR_INV_ARG;
    int cpu = -1, n = 0;
    int rc = xstream_cpus(xstream, 1, &cpu, &n);
    if (rc)
        return rc;
    if (n < 1)
        return ABT_ERR_CPUID;
    *cpuid = cpu; /* bound to several: the first of them, as Argobots */
    return ABT_SUCCESS;
}

int ABT_xstream_get_affinity(ABT_xstream xstream, int max_cpuids, int *cpuids,
                             int *num_cpuids)
{
    int n = 0;
    if (max_cpuids < 0 || (max_cpuids > 0 && !cpuids))
        return ABT_ERR_INV_ARG;
    int rc = xstream_cpus(xstream, max_cpuids, cpuids, &n);
    if (rc)
        return rc;
    if (num_cpuids)
        *num_cpuids = n;
    return ABT_SUCCESS;
}

int ABT_xstream_set_affinity(ABT_xstream xstream, int num_cpuids, int *cpuids)
{
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream))
        return ABT_ERR_INV_XSTREAM;
    if (num_cpuids <= 0 || !cpuids)
        return ABT_ERR_CPUID;
    if (xstream->joined)
        return ABT_ERR_XSTREAM_STATE;
    int rc = coexec_xstream_set_cpus(xstream->cx, cpuids, num_cpuids);
    if (rc == COEXEC_EINVAL)
        return ABT_ERR_CPUID; /* a CPU the process may not run on */
    if (rc == COEXEC_ESTATE)
        return ABT_ERR_XSTREAM_STATE;
    return abtx_err(rc, ABT_ERR_INV_XSTREAM, ABT_ERR_SYS);
}

int ABT_xstream_set_cpubind(ABT_xstream xstream, int cpuid)
{
    return ABT_xstream_set_affinity(xstream, 1, &cpuid);
}

/* Asks x to stop once it has run what is queued (coexec_xstream_stop); its
 * join or free reaps it. */
int ABT_xstream_cancel(ABT_xstream xstream)
{
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream) || xstream->primary)
        return ABT_ERR_INV_XSTREAM;
    int rc = coexec_xstream_stop(xstream->cx);
    if (rc == COEXEC_ESTATE)
        return ABT_SUCCESS; /* joined already: stopped */
    return abtx_err(rc, ABT_ERR_INV_XSTREAM, ABT_ERR_XSTREAM);
}

/* The calling ULT's stream is asked to stop, and the ULT ends (it does not
 * return when that works). */
int ABT_xstream_exit(void)
{
    ABTX_CHECK_INIT();
    ABT_xstream x = abtx_xstream_self();
    if (!x)
        return ABT_ERR_INV_XSTREAM;
    ABT_thread self = abtx_cur_get();
    if (!self || !self->is_ult || self->is_main)
        return ABT_ERR_INV_THREAD;
    if (x->primary)
        return ABT_ERR_INV_XSTREAM;
    int rc = ABT_xstream_cancel(x);
    return rc ? rc : ABT_self_exit();
}

/* ---- stream barrier ------------------------------------------------------ */

struct ABT_xstream_barrier_opaque {
    coexec_xstream_barrier_t b;
};

int ABT_xstream_barrier_create(uint32_t num_waiters,
                               ABT_xstream_barrier *newbarrier)
{
    if (!newbarrier || num_waiters == 0)
        return ABT_ERR_INV_ARG;
    ABT_xstream_barrier b = abtx_live_new(malloc(sizeof(*b)), ABTX_L_XBARRIER);
    if (!b)
        return ABT_ERR_MEM;
    int rc = coexec_xstream_barrier_init(&b->b, num_waiters);
    if (rc) {
        abtx_live_free(&b, ABTX_L_XBARRIER);
        return abtx_err(rc, ABT_ERR_INV_XSTREAM_BARRIER, ABT_ERR_OTHER);
    }
    *newbarrier = b;
    return ABT_SUCCESS;
}

int ABT_xstream_barrier_free(ABT_xstream_barrier *barrier)
{
    if (!barrier || !abtx_live_remove(*barrier, ABTX_L_XBARRIER))
        return ABT_ERR_INV_XSTREAM_BARRIER;
    ABTX_IGNORE(coexec_xstream_barrier_destroy(&(*barrier)->b));
    free(*barrier);
    *barrier = ABT_XSTREAM_BARRIER_NULL;
    return ABT_SUCCESS;
}

int ABT_xstream_barrier_wait(ABT_xstream_barrier barrier)
{
    if (!barrier)
        return ABT_ERR_INV_XSTREAM_BARRIER;
    ABT_thread self = abtx_cur_get();
    int rc = coexec_xstream_barrier_wait(&barrier->b);
    abtx_cur_set(self);
    return abtx_err(rc, ABT_ERR_INV_XSTREAM_BARRIER, ABT_ERR_XSTREAM_BARRIER);
}
