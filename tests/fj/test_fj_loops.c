/*
 * tests/fj/test_fj_loops.c: the loops suite (parallel_for covers each
 * index exactly once in chunks no larger than the grain; parallel_reduce
 * combines lower ranges into higher ones) and the spill suite (deques of
 * 64 records overflow to the heap: many spawns, deep recursion, thieves
 * stealing while the owner spills).
 */
#include "fj_test.h"

/* ======================================================================= */
/* loops                                                                    */
/* ======================================================================= */

typedef struct {
    int64_t begin, end, grain;
    atomic_uchar *hits;
    atomic_long chunks;
    atomic_long bad; /* chunks out of range, empty or over the grain */
} cover_t;

static void cover_body(int64_t lo, int64_t hi, void *arg)
{
    cover_t *c = arg;
    atomic_fetch_add(&c->chunks, 1);
    if (lo >= hi || lo < c->begin || hi > c->end ||
        (c->grain > 0 && hi - lo > c->grain)) {
        atomic_fetch_add(&c->bad, 1);
        return;
    }
    for (int64_t i = lo; i < hi; i++)
        atomic_fetch_add(&c->hits[i - c->begin], 1);
}

/* Ranges: [begin, begin + n). */
static const struct {
    int64_t begin, n;
} g_ranges[] = {
    {0, 1},      {0, 1000},         {-500, 1000},        {-1000, 997},
    {41, 4097},  {-7, 1},           {INT64_MAX - 300, 300},
    {INT64_MIN, 300},
};

static void t_pfor_cover(void)
{
    ch_init(NSTREAMS);
    long rounds = ch_iters(60, 1);
    atomic_uchar *hits = malloc(4097);
    CU_ASSERT_PTR_NOT_NULL_FATAL(hits);
    for (long r = 0; r < rounds; r++) {
        for (size_t k = 0; k < sizeof g_ranges / sizeof g_ranges[0]; k++) {
            int64_t n = g_ranges[k].n;
            int64_t grains[] = {0, 1, 7, n, n + 5};
            for (size_t g = 0; g < 5; g++) {
                cover_t c = {.begin = g_ranges[k].begin,
                             .end = g_ranges[k].begin + n,
                             .grain = grains[g],
                             .hits = hits};
                atomic_init(&c.chunks, 0);
                atomic_init(&c.bad, 0);
                memset(hits, 0, (size_t)n);
                CH_ASSERT_OK(coexec_parallel_for(c.begin, c.end, c.grain,
                                                 cover_body, &c));
                long twice = 0, missed = 0;
                for (int64_t i = 0; i < n; i++) {
                    missed += atomic_load(&hits[i]) == 0;
                    twice += atomic_load(&hits[i]) > 1;
                }
                CH_ASSERT_EQ(missed, 0);
                CH_ASSERT_EQ(twice, 0);
                CH_ASSERT_EQ(atomic_load(&c.bad), 0);
                long chunks = atomic_load(&c.chunks);
                if (c.grain >= n)
                    CH_ASSERT_EQ(chunks, 1);
                if (c.grain == 1)
                    CH_ASSERT_EQ(chunks, n);
                if (c.grain > 0)
                    CU_ASSERT(chunks >= (n + c.grain - 1) / c.grain);
            }
        }
    }
    free(hits);
    ch_finalize();
}

/* Accumulators that are intervals: the body makes [lo, hi) of a fresh
 * identity; combine checks that acc is the lower neighbour of other. */
typedef struct {
    int64_t lo, hi;
    int64_t magic; /* IV_EMPTY in the identity */
} iv_t;

#define IV_EMPTY 0x1dea

typedef struct {
    atomic_long bodies, combines, bad;
} ivstat_t;

static void iv_body(int64_t lo, int64_t hi, void *acc, void *arg)
{
    iv_t *a = acc;
    ivstat_t *s = arg;
    atomic_fetch_add(&s->bodies, 1);
    if (a->magic != IV_EMPTY || a->lo != 0 || a->hi != 0 || lo >= hi)
        atomic_fetch_add(&s->bad, 1); /* not a fresh copy of identity */
    a->lo = lo;
    a->hi = hi;
    a->magic = 1;
}

static void iv_combine(void *acc, const void *other, void *arg)
{
    iv_t *a = acc;
    const iv_t *o = other;
    ivstat_t *s = arg;
    atomic_fetch_add(&s->combines, 1);
    if (a->magic != 1 || o->magic != 1 || a->hi != o->lo) {
        atomic_fetch_add(&s->bad, 1); /* not lower-then-higher neighbours */
        return;
    }
    a->hi = o->hi;
}

static void t_reduce_order(void)
{
    ch_init(NSTREAMS);
    long rounds = ch_iters(60, 1);
    const iv_t identity = {0, 0, IV_EMPTY};
    for (long r = 0; r < rounds; r++) {
        for (size_t k = 0; k < sizeof g_ranges / sizeof g_ranges[0]; k++) {
            int64_t b = g_ranges[k].begin, n = g_ranges[k].n;
            int64_t grains[] = {0, 1, 3, n, n + 5};
            for (size_t g = 0; g < 5; g++) {
                ivstat_t s;
                atomic_init(&s.bodies, 0);
                atomic_init(&s.combines, 0);
                atomic_init(&s.bad, 0);
                iv_t out = {-1, -1, -1};
                CH_ASSERT_OK(coexec_parallel_reduce(b, b + n, grains[g], &out,
                                                    sizeof out, &identity,
                                                    iv_body, iv_combine, &s));
                CH_ASSERT_EQ(atomic_load(&s.bad), 0);
                CH_ASSERT_EQ(out.lo, b);
                CH_ASSERT_EQ(out.hi, b + n);
                CH_ASSERT_EQ(out.magic, 1);
                /* a binary tree of chunks: one combine fewer than leaves */
                CH_ASSERT_EQ(atomic_load(&s.combines),
                             atomic_load(&s.bodies) - 1);
                if (grains[g] == 1)
                    CH_ASSERT_EQ(atomic_load(&s.bodies), n);
                if (grains[g] >= n)
                    CH_ASSERT_EQ(atomic_load(&s.bodies), 1);
            }
        }
    }
    CU_ASSERT_EQUAL(identity.magic, IV_EMPTY);
    ch_finalize();
}

/* Accumulators of odd sizes, up to COEXEC_REDUCE_MAX bytes: bytes summed
 * modulo 256 at i % size; and a 16-byte integer (aligned as its type
 * needs: UBSan checks the accesses). */
typedef struct {
    size_t size;
} bytes_arg_t;

static void bytes_body(int64_t begin, int64_t end, void *acc, void *arg)
{
    const bytes_arg_t *a = arg;
    unsigned char *b = acc;
    for (int64_t i = begin; i < end; i++)
        b[(uint64_t)i % a->size] += (unsigned char)(i * 7 + 1);
}

static void bytes_combine(void *acc, const void *other, void *arg)
{
    const bytes_arg_t *a = arg;
    unsigned char *b = acc;
    const unsigned char *o = other;
    for (size_t k = 0; k < a->size; k++)
        b[k] += o[k];
}

static void i128_body(int64_t begin, int64_t end, void *acc, void *arg)
{
    __int128 *s = acc;
    for (int64_t i = begin; i < end; i++)
        *s += (__int128)i * INT64_MAX;
}

static void i128_combine(void *acc, const void *other, void *arg)
{
    *(__int128 *)acc += *(const __int128 *)other;
}

static void t_reduce_sizes(void)
{
    ch_init(NSTREAMS);
    static const size_t sizes[] = {1, 3, 7, 16, 24, 100, 255, 256};
    long rounds = ch_iters(20, 1);
    for (long r = 0; r < rounds; r++) {
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            bytes_arg_t a = {sizes[k]};
            unsigned char id[COEXEC_REDUCE_MAX], want[COEXEC_REDUCE_MAX],
                got[COEXEC_REDUCE_MAX];
            for (size_t j = 0; j < a.size; j++)
                id[j] = want[j] = got[j] = 0;
            int64_t b = -3000 + r, e = 5000 + 3 * r;
            bytes_body(b, e, want, &a);
            CH_ASSERT_OK(coexec_parallel_reduce(b, e, r % 5, got, a.size, id,
                                                bytes_body, bytes_combine,
                                                &a));
            CU_ASSERT(memcmp(got, want, a.size) == 0);
        }
        const __int128 zero = 0;
        __int128 s = -1, w = 0;
        i128_body(0, 4000 + r, &w, NULL);
        CH_ASSERT_OK(coexec_parallel_reduce(0, 4000 + r, 0, &s, sizeof s,
                                            &zero, i128_body, i128_combine,
                                            NULL));
        CU_ASSERT(s == w);
    }
    ch_finalize();
}

const ch_test_t fj_loops_tests[] = {
    {"parallel_for_every_index_once", t_pfor_cover},
    {"parallel_reduce_lower_into_higher", t_reduce_order},
    {"parallel_reduce_accumulator_sizes", t_reduce_sizes},
    {NULL, NULL}};

/* ======================================================================= */
/* spill                                                                    */
/* ======================================================================= */

#define SPILL_SLOTS 64
#define SPILL_TASKS 10000

typedef struct {
    int owner;
    atomic_int stolen; /* a task ran on another stream */
    bool wait_steal;   /* spawn on until one has */
} spill_t;

COEXEC_FJ_TASK_2(uint64_t, spilled, spill_t *, s, int, i)
{
    if (ch_self_rank() != s->owner)
        atomic_store(&s->stolen, 1);
    return ch_mix64((uint64_t)i);
}

/* Spawns SPILL_TASKS in a row (all but the first 64 go to the spill
 * stack), then, when asked, keeps spawning until a thief took one of the
 * 64 in the deque, and syncs them all in reverse. */
static void spill_region(coexec_fj_t *coexec_fj_, void *arg)
{
    spill_t *s = arg;
    s->owner = ch_self_rank();
    for (int i = 0; i < SPILL_TASKS; i++)
        COEXEC_FJ_SPAWN(spilled, s, i);
    if (s->wait_steal)
        fj_spawn_until(coexec_fj_, &s->stolen);
    for (int i = SPILL_TASKS - 1; i >= 0; i--) {
        uint64_t r = COEXEC_FJ_SYNC(spilled);
        if (r != ch_mix64((uint64_t)i)) {
            ch_fail_at(__FILE__, __LINE__, "sync %d: %llu", i,
                       (unsigned long long)r);
            break; /* the rest would fail the same way */
        }
    }
}

static void spill_rounds(int nstreams, bool wait_steal)
{
    fj_init(nstreams, SPILL_SLOTS);
    long rounds = ch_iters(40, 2);
    for (long r = 0; r < rounds; r++) {
        spill_t s = {.owner = -1, .wait_steal = wait_steal};
        atomic_init(&s.stolen, 0);
        CH_ASSERT_OK(coexec_fj_run(spill_region, &s));
        if (wait_steal)
            CH_ASSERT_EQ(atomic_load(&s.stolen), 1);
        long f = -1;
        CH_ASSERT_OK(COEXEC_FJ_RUN(fib, &f, 20));
        CH_ASSERT_EQ(f, ch_fib(20));
    }
    CH_ASSERT_EQ(ch_remote_failures(), 0);
    ch_finalize();
}

static void t_spawn_10000_one_stream(void) { spill_rounds(1, false); }

static void t_spawn_10000_four_streams(void) { spill_rounds(NSTREAMS, false); }

/* Thieves take tasks of the deque while the owner spills. */
static void t_steal_while_spilling(void) { spill_rounds(NSTREAMS, true); }

/* Recursion deeper than the deque: each level holds two records (a leaf
 * and the next level) until it syncs them. */
COEXEC_FJ_TASK_1(long, leaf, int, d)
{
    return d;
}

COEXEC_FJ_TASK_1(long, chain, int, d)
{
    if (d == 0)
        return 0;
    COEXEC_FJ_SPAWN(leaf, d);
    COEXEC_FJ_SPAWN(chain, d - 1);
    long c = COEXEC_FJ_SYNC(chain);
    long l = COEXEC_FJ_SYNC(leaf);
    return c + l;
}

#define DEEP 300

static void deep_rounds(int nstreams)
{
    fj_init(nstreams, SPILL_SLOTS);
    long rounds = ch_iters(300, 3);
    for (long r = 0; r < rounds; r++) {
        int d = DEEP - (int)(r % 7);
        long v = -1;
        CH_ASSERT_OK(COEXEC_FJ_RUN(chain, &v, d));
        CH_ASSERT_EQ(v, (long)d * (d + 1) / 2);
        /* and a wide tree under the deep one */
        CH_ASSERT_OK(COEXEC_FJ_RUN(fib, &v, 22));
        CH_ASSERT_EQ(v, ch_fib(22));
    }
    ch_finalize();
}

static void t_deep_one_stream(void) { deep_rounds(1); }

static void t_deep_four_streams(void) { deep_rounds(NSTREAMS); }

const ch_test_t fj_spill_tests[] = {
    {"spawn_10000_one_stream", t_spawn_10000_one_stream},
    {"spawn_10000_four_streams", t_spawn_10000_four_streams},
    {"steal_while_spilling", t_steal_while_spilling},
    {"deep_recursion_one_stream", t_deep_one_stream},
    {"deep_recursion_four_streams", t_deep_four_streams},
    {NULL, NULL}};
