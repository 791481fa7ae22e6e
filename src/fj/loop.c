/*
 * src/fj/loop.c: coexec_parallel_for and coexec_parallel_reduce, written
 * with the public task macros: a range splits in halves, the upper half
 * spawned (an idle stream may take it), the lower kept, down to the grain.
 */
#include <string.h>

#include "base/global.h"
#include "fj/fj.h"
#include "xstream/xstream.h"

struct pfor {
    coexec_range_fn body;
    void *arg;
    int64_t grain;
};

COEXEC_FJ_VOID_TASK_3(pfor_range, int64_t, lo, int64_t, hi,
                      const struct pfor *, c)
{
    int spawned = 0;
    while (hi - lo > c->grain) {
        int64_t mid = lo + (hi - lo) / 2;
        COEXEC_FJ_SPAWN(pfor_range, mid, hi, c);
        spawned++;
        hi = mid;
    }
    c->body(lo, hi, c->arg);
    while (spawned--)
        COEXEC_FJ_SYNC(pfor_range);
}

/* The grain for n indices when the caller gave none: about eight chunks
 * per stream, so that a stream slowed down leaves some to the others. */
static int64_t auto_grain(int64_t n)
{
    int64_t parts = 8 * (int64_t)(coexec__xsr.num > 0 ? coexec__xsr.num : 1);
    int64_t g = n / parts;
    return g > 0 ? g : 1;
}

static int range_check(int64_t begin, int64_t end, int64_t grain)
{
    int64_t n;
    if (end < begin || grain < 0)
        return COEXEC_EINVAL;
    return __builtin_sub_overflow(end, begin, &n) ? COEXEC_ERANGE : COEXEC_OK;
}

COEXEC_API int coexec_parallel_for(int64_t begin, int64_t end, int64_t grain,
                                   coexec_range_fn body, void *arg)
{
    int rc = range_check(begin, end, grain);
    if (!body)
        return COEXEC_EINVAL;
    if (rc != COEXEC_OK)
        return rc;
    if (begin == end)
        return rt_on() ? COEXEC_OK : COEXEC_ENOTINIT;
    struct pfor c = {body, arg, grain ? grain : auto_grain(end - begin)};
    return COEXEC_FJ_RUN(pfor_range, begin, end, &c);
}

struct preduce {
    coexec_reduce_fn body;
    coexec_combine_fn combine;
    void *arg;
    const void *identity;
    size_t size;
    int64_t grain;
};

/* Folds [lo, hi) into out: a copy of the identity, then the body, or the
 * lower half into out and the upper half into a buffer on this frame,
 * combined in order. */
COEXEC_FJ_VOID_TASK_4(preduce_range, int64_t, lo, int64_t, hi, void *, out,
                      const struct preduce *, c)
{
    if (hi - lo <= c->grain) {
        memcpy(out, c->identity, c->size);
        c->body(lo, hi, out, c->arg);
        return;
    }
    int64_t mid = lo + (hi - lo) / 2;
    unsigned char upper[c->size] __attribute__((aligned(16)));
    COEXEC_FJ_SPAWN(preduce_range, mid, hi, upper, c);
    COEXEC_FJ_CALL(preduce_range, lo, mid, out, c);
    COEXEC_FJ_SYNC(preduce_range);
    c->combine(out, upper, c->arg);
}

COEXEC_API int coexec_parallel_reduce(int64_t begin, int64_t end,
                                      int64_t grain, void *result, size_t size,
                                      const void *identity,
                                      coexec_reduce_fn body,
                                      coexec_combine_fn combine, void *arg)
{
    int rc = range_check(begin, end, grain);
    if (!result || !identity || !body || !combine || size == 0 ||
        size > COEXEC_REDUCE_MAX)
        return COEXEC_EINVAL;
    if (rc != COEXEC_OK)
        return rc;
    if (!rt_on())
        return COEXEC_ENOTINIT;
    if (begin == end) {
        memmove(result, identity, size);
        return COEXEC_OK;
    }
    /* The result is built in a buffer, so that it may alias identity. */
    unsigned char acc[COEXEC_REDUCE_MAX] __attribute__((aligned(16)));
    struct preduce c = {body, combine, arg, identity, size,
                        grain ? grain : auto_grain(end - begin)};
    rc = COEXEC_FJ_RUN(preduce_range, begin, end, acc, &c);
    if (rc == COEXEC_OK)
        memcpy(result, acc, size);
    return rc;
}
