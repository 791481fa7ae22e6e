/*
 * src/fj/fj.c: fork-join workers, their deques (the protocol is in
 * fj.h), stealing, leapfrogging, and regions.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/global.h"
#include "base/self.h"
#include "fj/fj.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "xstream/xstream.h"

/* Workers by stream rank: written (release) by the stream's own thread
 * when it makes its worker, read by thieves; `hi` is one past the highest
 * rank that has one. Freed at finalize. */
static struct {
    atom_ptr_t w[MAX_XSTREAMS];
    atom_u32_t hi;
} reg;

#define TS(tail, split) (((uint64_t)(tail) << 32) | (uint32_t)(split))
#define TS_TAIL(ts) ((uint32_t)((ts) >> 32))
#define TS_SPLIT(ts) ((uint32_t)(ts))

static inline struct fj_worker *worker_of(coexec_fj_t *fj)
{
    return (struct fj_worker *)fj;
}

static void set_split(struct fj_worker *w, uint32_t split)
{
    w->split = split;
    if (!w->spilling)
        w->pub.split_ = w->base + split;
}

/* ---- workers -------------------------------------------------------------- */

static struct fj_worker *worker_new(int rank, int *rc)
{
    size_t slots = coexec__g.cfg.fj_slots;
    struct fj_worker *w = aligned_alloc(CACHE_LINE, sizeof *w);
    if (!w) {
        *rc = COEXEC_ENOMEM;
        return NULL;
    }
    memset(w, 0, sizeof *w);
    w->map_bytes = slots * sizeof(coexec_fj_task_t);
    void *m = mmap(NULL, w->map_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        free(w);
        *rc = COEXEC_ENOMEM;
        return NULL;
    }
    w->base = m;
    w->pub.head_ = w->base;
    w->pub.split_ = w->base;
    w->pub.end_ = w->base + slots;
    w->rng = 0x9e3779b9u ^ (uint32_t)rank * 2654435761u;
    if (!w->rng)
        w->rng = 1;
    atom_store_rlx_u64(&w->ts, 0);
    return w;
}

static void worker_free(struct fj_worker *w)
{
    for (uint32_t i = 0; i < w->nchunks; i++)
        free(w->chunks[i]);
    free(w->chunks);
    munmap(w->base, w->map_bytes);
    free(w);
}

struct fj_worker *coexec__fj_worker_of(struct coexec_xstream_rec *xs, int *rc)
{
    int rank = xs_rank_of(xs);
    struct fj_worker *w = atom_load_rlx_ptr(&reg.w[rank]);
    if (LIKELY(w != NULL))
        return w;
    if (!(w = worker_new(rank, rc)))
        return NULL;
    /* Release: a thief that finds it sees it made. */
    atom_store_rel_ptr(&reg.w[rank], w);
    uint32_t hi = atom_load_rlx_u32(&reg.hi);
    while (hi < (uint32_t)rank + 1 &&
           !atom_cas_rlx_u32(&reg.hi, &hi, (uint32_t)rank + 1))
        ;
    return w;
}

/* ---- the spill stack ------------------------------------------------------ */

static coexec_fj_task_t *spill_at(struct fj_worker *w, uint32_t i)
{
    uint32_t c = i / FJ_SPILL_CHUNK;
    return c < w->nchunks ? &w->chunks[c][i % FJ_SPILL_CHUNK] : NULL;
}

/* Makes room for spill record i; false if it cannot (then it is lost). */
static bool spill_room(struct fj_worker *w, uint32_t i)
{
    uint32_t c = i / FJ_SPILL_CHUNK;
    if (c < w->nchunks)
        return true;
    if (w->spill_failed || c >= FJ_SPILL_CHUNKS)
        goto fail;
    if (!w->chunks &&
        !(w->chunks = calloc(FJ_SPILL_CHUNKS, sizeof *w->chunks)))
        goto fail;
    w->chunks[c] = aligned_alloc(CACHE_LINE,
                                 FJ_SPILL_CHUNK * sizeof(coexec_fj_task_t));
    if (!w->chunks[c])
        goto fail;
    w->nchunks = c + 1;
    return true;
fail:
    w->spill_failed = true;
    return false;
}

/* The deque is full: the record goes to the spill stack. */
COEXEC_API coexec_fj_task_t *coexec_fj_push_slow_(coexec_fj_t *fj)
{
    struct fj_worker *w = worker_of(fj);
    if (!w->spilling) {
        w->spilling = true;
        fj->split_ = fj->end_; /* every sync takes the slow path */
    }
    uint32_t i = w->nspill++;
    if (spill_room(w, i))
        return spill_at(w, i);
    w->err = COEXEC_ENOMEM;
    return &w->trap;
}

/* Syncs the newest spilled record: runs it (it was never shared). */
static coexec_fj_task_t *spill_sync(struct fj_worker *w)
{
    uint32_t i = w->nspill - 1;
    coexec_fj_task_t *t = spill_at(w, i);
    if (t) {
        t->run_(&w->pub, t);
    } else {
        t = &w->trap;
        memset(t->data_, 0, sizeof t->data_);
    }
    w->nspill = i;
    if (i == 0) {
        w->spilling = false;
        w->pub.split_ = w->base + w->split;
    }
    return t;
}

/* ---- stealing ------------------------------------------------------------- */

/* Takes the oldest shared task of v, or NULL; asks busy v to share more
 * when it has none shared. */
static coexec_fj_task_t *steal_from(struct coexec_xstream_rec *xs,
                                     struct fj_worker *v)
{
    uint64_t ts = atom_load_acq_u64(&v->ts);
    for (;;) {
        uint32_t tail = TS_TAIL(ts), split = TS_SPLIT(ts);
        if (tail >= split) {
            if (atom_load_rlx_u32(&v->busy) &&
                !__atomic_load_n(&v->pub.splitreq_, __ATOMIC_RELAXED))
                __atomic_store_n(&v->pub.splitreq_, 1, __ATOMIC_RELAXED);
            return NULL;
        }
        /* Acquire: the slot's contents, written before the owner's
         * release of the split that shared it. */
        if (atom_cas_ar_u64(&v->ts, &ts, TS(tail + 1, split))) {
            stat_add(&xs->count[XC_FJ_STEALS], 1);
            atom_fadd_rlx_u64(&v->stolen, 1);
            return v->base + tail;
        }
    }
}

/* Enters (leaves) work of a region on stream xs's worker w: a region's
 * function or a stolen task, nested or not. While inside, the stream is
 * marked so that a scheduler's own steps refuse (sched/loop.c). */
static void region_enter(struct coexec_xstream_rec *xs, struct fj_worker *w)
{
    if (w->depth++ == 0) {
        atom_store_rlx_u32(&w->busy, 1);
        xs->in_fj = 1;
    }
}

static void region_leave(struct coexec_xstream_rec *xs, struct fj_worker *w)
{
    if (--w->depth == 0) {
        atom_store_rlx_u32(&w->busy, 0);
        xs->in_fj = 0;
    }
}

/* Runs task t, stolen from another worker, on w (stream xs). A spill
 * lost while it ran is the error of its owner's region: the record says
 * so (FJ_DONE_ERR) and the owner's sync takes it over. */
static void run_stolen(struct coexec_xstream_rec *xs, struct fj_worker *w,
                       coexec_fj_task_t *t)
{
    __atomic_store_n(&t->thief_, (uintptr_t)w, __ATOMIC_RELAXED);
    int err = w->err;
    w->err = COEXEC_OK;
    region_enter(xs, w);
    t->run_(&w->pub, t);
    region_leave(xs, w);
    uintptr_t done = w->err ? FJ_DONE_ERR : FJ_DONE;
    w->err = err;
    if (!w->depth)
        w->spill_failed = false;
    /* Release: the result, to the owner's acquire. */
    __atomic_store_n(&t->thief_, done, __ATOMIC_RELEASE);
}

/* Waiting without work: spin a little, then let others have the CPU
 * (streams may outnumber cores, and a thief may be descheduled). */
static inline void backoff(unsigned *spins)
{
    if (++*spins % 64 == 0)
        sched_yield();
    else
        cpu_relax();
}

/* The idle streams' hook: steals one task from a random busy worker. A
 * stream that found work wakes one more parked stream, so that thieves
 * wake as fast as there is work for them (a region wakes the first). */
static bool idle_steal(struct coexec_xstream_rec *xs)
{
    int rc;
    struct fj_worker *w = coexec__fj_worker_of(xs, &rc);
    if (!w)
        return false;
    uint32_t n = atom_load_acq_u32(&reg.hi);
    if (n < 2)
        return false;
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 17;
    w->rng ^= w->rng << 5;
    uint32_t start = w->rng % n;
    for (uint32_t i = 0; i < n; i++) {
        struct fj_worker *v = atom_load_acq_ptr(&reg.w[(start + i) % n]);
        if (!v || v == w)
            continue;
        coexec_fj_task_t *t = steal_from(xs, v);
        if (t) {
            coexec__thief_kick_one();
            run_stolen(xs, w, t);
            return true;
        }
    }
    return false;
}

/* ---- the owner's slow paths ---------------------------------------------- */

/* A thief asked for work: shares the older half of the private tasks. */
COEXEC_API void coexec_fj_grow_(coexec_fj_t *fj)
{
    struct fj_worker *w = worker_of(fj);
    uint32_t head = (uint32_t)(fj->head_ - w->base);
    uint32_t split = w->split;
    if (head <= split)
        return; /* nothing private: keep the request for the next spawn */
    __atomic_store_n(&fj->splitreq_, 0, __ATOMIC_RELAXED);
    uint32_t ns = split + (head - split + 1) / 2;
    uint64_t ts = atom_load_rlx_u64(&w->ts);
    /* Release: the slots now shared. Thieves only move tail. */
    while (!atom_cas_ar_u64(&w->ts, &ts, TS(TS_TAIL(ts), ns)))
        ;
    set_split(w, ns);
}

/* Task t, stolen, is not done: run tasks of its thief's deque (they
 * descend from t) until it is. */
static void leapfrog(struct fj_worker *w, coexec_fj_task_t *t)
{
    struct coexec_xstream_rec *xs = coexec__xs_self();
    unsigned spins = 0;
    for (;;) {
        /* Acquire: the result, from the thief's release of FJ_DONE. */
        uintptr_t th = __atomic_load_n(&t->thief_, __ATOMIC_ACQUIRE);
        if (th == FJ_DONE)
            return;
        if (th == FJ_DONE_ERR) {
            w->err = COEXEC_ENOMEM;
            return;
        }
        if (th) {
            coexec_fj_task_t *s = steal_from(xs, (struct fj_worker *)th);
            if (s) {
                run_stolen(xs, w, s);
                spins = 0;
                continue;
            }
        }
        backoff(&spins);
    }
}

/* The sync of slot t (head already moved down to it) found it below
 * split, or the worker spilling. Returns the record holding the result. */
COEXEC_API coexec_fj_task_t *coexec_fj_sync_slow_(coexec_fj_t *fj,
                                                  coexec_fj_task_t *t)
{
    struct fj_worker *w = worker_of(fj);
    if (w->spilling) {
        fj->head_ = t + 1; /* the deque is full; the spill is newer */
        return spill_sync(w);
    }
    uint32_t h = (uint32_t)(t - w->base); /* and w->split == h + 1 */
    uint64_t ts = atom_load_acq_u64(&w->ts);
    while (TS_TAIL(ts) <= h) {
        /* Not stolen: take it back, with the newer half of the shared
         * ones. Acquire/release: ordered against the thieves' CAS. */
        uint32_t tail = TS_TAIL(ts);
        uint32_t ns = tail + (h - tail + 1) / 2;
        if (atom_cas_ar_u64(&w->ts, &ts, TS(tail, ns))) {
            set_split(w, ns);
            t->run_(fj, t);
            return t;
        }
    }
    /* Stolen (ts is h+1, h+1): slot h stays the thief's until done. */
    fj->head_ = t + 1;
    leapfrog(w, t);
    /* Nothing is shared (ts is h+1, h+1 again): no thief CAS can match. */
    atom_store_rel_u64(&w->ts, TS(h, h));
    set_split(w, h);
    fj->head_ = t;
    return t;
}

/* ---- regions -------------------------------------------------------------- */

COEXEC_API int coexec_fj_run(void (*fn)(coexec_fj_t *coexec_fj_, void *arg),
                             void *arg)
{
    if (!fn)
        return COEXEC_EINVAL;
    if (!rt_on())
        return COEXEC_ENOTINIT;
    struct coexec_xstream_rec *xs = xs_self_entry();
    if (!xs)
        return COEXEC_ECONTEXT;
    int rc = COEXEC_OK;
    struct fj_worker *w = coexec__fj_worker_of(xs, &rc);
    if (!w)
        return rc;
    if (w->depth) { /* within a task: the region is already open */
        fn(&w->pub, arg);
        return COEXEC_OK;
    }
    struct coexec_unit_rec *u = xs->cur;
    if (!u)
        return COEXEC_ECONTEXT; /* a scheduler's own code */
    /* No unit runs here until the region closes: calls that would wait
     * or switch see a scheduler's context and refuse (COEXEC_ECONTEXT). */
    xs->cur = NULL;
    region_enter(xs, w);
    /* seq_cst: a stream parking now either sees it (sched/idle.c) or is
     * in the thieves' set for the kick. */
    atom_fadd_sc_u32(&coexec__sched_fj.open, 1);
    coexec__thief_kick_one(); /* the first thief; each wakes the next */
    fn(&w->pub, arg);
    atom_fsub_rlx_u32(&coexec__sched_fj.open, 1);
    region_leave(xs, w);
    xs->cur = u;
    rc = w->err;
    w->err = COEXEC_OK;
    w->spill_failed = false;
    return rc;
}

/* ---- the runtime's calls -------------------------------------------------- */

uint64_t coexec__fj_stolen(int rank)
{
    struct fj_worker *w = atom_load_acq_ptr(&reg.w[rank]);
    return w ? atom_load_rlx_u64(&w->stolen) : 0;
}

void coexec__fj_setup(void)
{
    coexec__sched_fj.steal = idle_steal;
}

void coexec__fj_teardown(void)
{
    uint32_t n = atom_load_acq_u32(&reg.hi);
    for (uint32_t i = 0; i < n; i++) {
        struct fj_worker *w = atom_load_rlx_ptr(&reg.w[i]);
        if (w)
            worker_free(w);
        atom_store_rlx_ptr(&reg.w[i], NULL);
    }
    atom_store_rlx_u32(&reg.hi, 0);
    atom_store_rlx_u32(&coexec__sched_fj.open, 0);
}

/* The parent's workers may be in the middle of regions: the child starts
 * without them (their memory is left, as the parent's other records). */
void coexec__fj_atfork_child(void)
{
    for (int i = 0; i < MAX_XSTREAMS; i++)
        atom_store_rlx_ptr(&reg.w[i], NULL);
    atom_store_rlx_u32(&reg.hi, 0);
    atom_store_rlx_u32(&coexec__sched_fj.open, 0);
}
