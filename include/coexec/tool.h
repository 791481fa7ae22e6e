/*
 * coexec/tool.h: events for profilers and tracers (TAU, HPCToolkit,
 * Score-P, your own), and the built-in Chrome trace.
 *
 * A tool registers one callback and the events it wants; the runtime calls
 * it where each event happens, on the thread where it happens. With no
 * callback and no trace the events cost one load and one untaken branch
 * each.
 *
 * The trace: COEXEC_TRACE=path.json (or coexec_trace_start) records, per
 * stream and per service thread, a span for each run of a unit (named by
 * its name attribute, else by its function's symbol), a span for each
 * offloaded call, instant events for steals and for a stream parking, and
 * a flow arrow from each wake to the run it causes. Each thread writes its
 * own bounded buffer (COEXEC_TRACE_EVENTS events, default 262,144) without
 * a lock; what does not fit is dropped, counted and said in the file and
 * on stderr. The file is written at coexec_finalize, or by
 * coexec_trace_flush; Perfetto (ui.perfetto.dev) and chrome://tracing
 * open it.
 */
#ifndef COEXEC_TOOL_H
#define COEXEC_TOOL_H

#include <stdint.h>

#include "defs.h"

/* The events a tool may ask for. */
typedef enum coexec_tool_event {
    COEXEC_TOOL_UNIT_CREATE = 0, /* made and queued (any thread) */
    COEXEC_TOOL_UNIT_RUN = 1,    /* starts or resumes on a stream */
    COEXEC_TOOL_UNIT_YIELD = 2,  /* stops running and stays ready */
    COEXEC_TOOL_UNIT_BLOCK = 3,  /* stops running to wait: it parks, a
                                    tasklet returns PENDING, or a joiner
                                    runs the unit it joins in place */
    COEXEC_TOOL_UNIT_RESUME = 4, /* made ready again by a wake (on the
                                    waker's thread) */
    COEXEC_TOOL_UNIT_FINISH = 5, /* its function returned */
    COEXEC_TOOL_UNIT_STEAL = 6,  /* taken by a stream from another's pool */
    COEXEC_TOOL_XSTREAM_START = 7, /* a stream's thread starts its loop */
    COEXEC_TOOL_XSTREAM_STOP = 8,  /* ... and leaves it */
    COEXEC_TOOL_XSTREAM_PARK = 9,  /* an idle stream sleeps in the kernel */
    COEXEC_TOOL_XSTREAM_UNPARK = 10, /* ... and wakes up */
    COEXEC_TOOL_OFFLOAD_BEGIN = 11,  /* a service thread starts a call */
    COEXEC_TOOL_OFFLOAD_END = 12,    /* ... and finishes it */
    COEXEC_TOOL_NUM_EVENTS = 13
} coexec_tool_event_t;

/* One event. A unit's events follow its life: CREATE; then RUN, and
 * after each RUN one of YIELD, BLOCK or FINISH on the same stream; a
 * BLOCK is followed by RESUME before the next RUN (whatever ended the
 * wait: a wake, or a joiner that it ran in place coming back to it). */
typedef struct coexec_tool_info {
    coexec_tool_event_t event; /* what happened */
    int rank;          /* the stream it happens on; -1: another thread
                          (a service thread, an external thread) */
    uint64_t unit_id;  /* the unit's id (coexec_thread_get_id); 0 for
                          stream and offload events */
    int unit_is_tasklet; /* 1: the unit is a tasklet; 0: a ULT */
    void *unit_fn;     /* the unit's function, or an offloaded call's */
    const char *unit_name; /* its name attribute, or NULL */
    void *unit_arg;    /* the argument its function was given (NULL for a
                          main ULT and a scheduler's unit) */
    const void *unit;  /* the unit's descriptor: the same address in
                          every event of one unit while it lives (a
                          freed unit's may serve a later one); NULL for
                          stream and offload events */
    int unit_is_main;  /* 1: a stream's main ULT */
    int unit_first_run; /* RUN: 1 when this run starts the unit (its
                           function has not begun), 0 when it resumes it;
                           0 for every other event */
    int sched_depth;    /* RUN, YIELD, BLOCK, FINISH: how many scheduler
                           levels the unit runs under on its stream (1:
                           the stream's main scheduler; 2: a scheduler
                           stacked on it, ...); 0 for every other event */
} coexec_tool_info_t;

/* A tool's callback. It runs inside the runtime's switch, wake and
 * scheduling paths, possibly under internal locks: it must be short and
 * must not call into libcoexec (reading the info and writing to memory
 * of its own is what it is for). */
typedef void (*coexec_tool_fn_t)(const coexec_tool_info_t *info, void *arg);

/* The mask bit of an event. */
#define COEXEC_TOOL_BIT(ev) (1u << (ev))
/* The mask of every event. */
#define COEXEC_TOOL_ALL ((1u << COEXEC_TOOL_NUM_EVENTS) - 1)

COEXEC_BEGIN_DECLS

/*
 * Calls fn(info, arg) for every event whose bit is in mask, from now on;
 * fn NULL or mask 0 removes the callback. Replacing one callback by
 * another is safe while events fire (each call sees one pair of fn and
 * arg); a call of the old one may still be running when this returns.
 * Works before coexec_init too, and stays set across finalize.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (a bit past COEXEC_TOOL_ALL);
 * COEXEC_ENOMEM; COEXEC_ENOSYS (the library was built with
 * -DCOEXEC_TOOLS=OFF).
 */
COEXEC_API COEXEC_NODISCARD int coexec_tool_set_callback(coexec_tool_fn_t fn,
                                                         unsigned mask,
                                                         void *arg);

/*
 * Starts recording the trace for the file at path (as COEXEC_TRACE does
 * at init); the file is written by coexec_trace_flush and at finalize.
 * Context: any thread while the runtime runs. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (path NULL or empty); COEXEC_EBUSY (a
 * trace is already recording); COEXEC_ENOTINIT; COEXEC_ENOMEM;
 * COEXEC_ENOSYS (built with -DCOEXEC_TOOLS=OFF).
 */
COEXEC_API COEXEC_NODISCARD int coexec_trace_start(const char *path);

/*
 * Writes what was recorded so far to the trace file (the whole file,
 * replacing the last one) and goes on recording. Events recorded while it
 * writes may be left out of this file but not of the next.
 * Context: any thread while the runtime runs. Switches: never.
 * Returns: COEXEC_OK; COEXEC_ESTATE (no trace is recording); COEXEC_EIO
 * (the file could not be written: the reason goes to stderr);
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_trace_flush(void);

COEXEC_END_DECLS

#endif /* COEXEC_TOOL_H */
