/*
 * coexec/stats.h: per-stream counters, always on.
 *
 * Each stream counts what it does in its own record, with plain
 * increments its own thread makes (no atomic read-modify-write, no shared
 * cache line), so counting costs nothing measurable. Any thread may read
 * them at any time; a figure read while the stream runs is a moment's
 * value. COEXEC_STATS=1 (or coexec_config_t.stats) prints a table of them
 * on stderr at coexec_finalize, one row per stream, totals, and the
 * service stream's own figures, and also measures idle time.
 */
#ifndef COEXEC_STATS_H
#define COEXEC_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "defs.h"
#include "types.h"

/* What one stream did since coexec_init or the last coexec_stats_reset.
 * Versioned: the caller sets `size` to sizeof(coexec_xstream_stats_t);
 * fields past an older caller's size are not written. */
typedef struct coexec_xstream_stats {
    size_t size;           /* sizeof(coexec_xstream_stats_t), set by the
                              caller */
    int rank;              /* the stream's rank */
    uint64_t units_run;    /* every start or resume of a unit on this
                              stream: a ULT switched to (by its
                              scheduler, a joiner running it in place, a
                              direct hand-off) or a tasklet run or polled */
    uint64_t tasklets_run; /* of units_run, tasklet runs and polls */
    uint64_t switches;     /* context switches made by the stream's thread
                              (into a ULT, or back to its scheduler) */
    uint64_t yields;       /* coexec_yield and coexec_yield_to calls */
    uint64_t parks;        /* units that blocked here (parked until woken) */
    uint64_t wakes_local;  /* wakes made here that queued the unit here or
                              in a shared pool, or found it still running
                              (its park then returns at once) */
    uint64_t wakes_remote; /* wakes made here of units whose home is
                              private to another stream (through that
                              stream's mailbox) */
    uint64_t steals;       /* units this stream took from other pools */
    uint64_t stolen;       /* units other streams took from the pools of
                              this stream's main scheduler */
    uint64_t fj_steals;    /* fork-join tasks this stream stole */
    uint64_t fj_stolen;    /* fork-join tasks stolen from this stream */
    uint64_t offloads;     /* service calls submitted from this stream
                              (offloads, requests, offloaded wrappers) */
    uint64_t busy_ns;      /* wall time not idle and not parked */
    uint64_t idle_ns;      /* time the scheduler found nothing to run and
                              did not sleep (measured only with
                              COEXEC_STATS=1: otherwise 0, and counted in
                              busy_ns) */
    uint64_t parked_ns;    /* time asleep in the kernel, waiting for work */
} coexec_xstream_stats_t;

COEXEC_BEGIN_DECLS

/*
 * Fills *st with stream xs's counters (set st->size first).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (st NULL, st->size 0); COEXEC_EHANDLE
 * (xs freed or foreign); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_xstream_get_stats(coexec_xstream_t xs, coexec_xstream_stats_t *st);

/*
 * Starts every stream's counters (and times) from zero again: later
 * coexec_xstream_get_stats calls report what happened since.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_stats_reset(void);

/*
 * Prints the table COEXEC_STATS=1 prints at finalize to fp (a FILE *;
 * NULL: stderr): one row per stream that ran since init, starting with its
 * rank, the totals, and the service stream's figures.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_stats_print(void *fp);

COEXEC_END_DECLS

#endif /* COEXEC_STATS_H */
