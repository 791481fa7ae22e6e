/*
 * src/fj/fj.h: the fork-join tier's workers (one per stream that opens a
 * region or steals a task) and what the rest of the runtime calls.
 *
 * The deque (after Lace's split deque). Slots [0, head) of a worker's
 * mapped array hold the tasks spawned and not yet synced, oldest first.
 * Slots [tail, split) are shared: thieves take the one at tail with a CAS
 * of the word ts = tail << 32 | split. Slots [split, head) are private:
 * the owner spawns and syncs them with plain loads and stores, no fence
 * and no atomic. A thief that finds nothing shared at a busy worker sets
 * its splitreq_; the owner's next spawn moves split up, sharing the older
 * half of its private tasks (a CAS). A sync whose slot is below split
 * takes the slot (and half the shared ones) back with a CAS, unless a
 * thief's tail passed it: then the task was stolen, and the owner runs
 * tasks of the thief's deque until the thief marks the record done
 * (leapfrogging). Only the owner writes split and lowers tail.
 *
 * A spawn that finds the deque full puts the record in a spill stack on
 * the heap instead (never stolen, run by its sync); while anything is
 * spilled split_ reads as end_, so every sync takes the slow path.
 */
#ifndef COEXEC_FJ_FJ_H
#define COEXEC_FJ_FJ_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/atomic.h"
#include "arch/compiler.h"
#include "coexec.h"
#include "coexec/fj.h"

/* The value of a task record's thief_ once its thief finished it; _ERR:
 * and a spill was lost while it ran (the region's result is not to be
 * used). Thieves' worker addresses are 64-byte aligned, never these. */
#define FJ_DONE ((uintptr_t)1)
#define FJ_DONE_ERR ((uintptr_t)2)

/* Spill records per chunk, and chunks at most. */
#define FJ_SPILL_CHUNK 256u
#define FJ_SPILL_CHUNKS 4096u

struct fj_worker {
    coexec_fj_t pub; /* first: the macros' coexec_fj_t * is the worker */
    /* Owner-only. */
    coexec_fj_task_t *base; /* the mapped slots */
    size_t map_bytes;
    uint32_t split;    /* the split index (split_ reads end_ while spilling) */
    uint32_t depth;    /* regions and stolen tasks running here, nested */
    int err;           /* COEXEC_ENOMEM: a spill was lost in this region */
    bool spilling;
    bool spill_failed; /* a chunk allocation failed: no more tries */
    uint32_t nspill;   /* records in the spill stack */
    uint32_t nchunks;  /* chunks allocated */
    uint32_t rng;      /* victim choice */
    coexec_fj_task_t **chunks;
    coexec_fj_task_t trap; /* a lost spill's record */
    /* Read and written by thieves. */
    atom_u64_t ts CACHE_ALIGNED; /* tail << 32 | split */
    atom_u32_t busy;             /* depth > 0: a thief may ask for a split */
    atom_u64_t stolen;           /* tasks thieves took from here (stats) */
};

/* Sets the idle streams' hook (core's init). */
void coexec__fj_setup(void);
/* Frees every worker; no stream runs (core's finalize). */
void coexec__fj_teardown(void);
/* Tasks thieves took from the worker of rank `rank` (0: it has none). */
uint64_t coexec__fj_stolen(int rank);
/* fork, in the child: no region is open there. */
void coexec__fj_atfork_child(void);

struct coexec_xstream_rec;
/* Stream xs's worker (xs: the calling thread's stream), made on first
 * use; NULL with *rc (COEXEC_ENOMEM). */
struct fj_worker *coexec__fj_worker_of(struct coexec_xstream_rec *xs, int *rc);

#endif /* COEXEC_FJ_FJ_H */
