/*
 * src/thread/tool.h: the runtime's events (coexec/tool.h) where they
 * happen. `coexec__tool.mask` is the union of what the user's callback
 * and the trace (core/trace.c, which sets `trace`: an upward signal) want;
 * an event site costs one load and an untaken branch while it is 0.
 */
#ifndef COEXEC_THREAD_TOOL_H
#define COEXEC_THREAD_TOOL_H

#include "arch/atomic.h"
#include "arch/compiler.h"
#include "coexec/tool.h"

struct coexec_unit_rec;
struct coexec_xstream_rec;

/* A registered callback. A replaced one is kept on a list until
 * finalize (coexec__tool_reap), as an event in flight may still hold it. */
struct tool_reg {
    coexec_tool_fn_t fn;
    void *arg;
    unsigned mask;
    struct tool_reg *retired_next;
};

struct coexec__tool {
    atom_u32_t mask;   /* the events anyone wants */
    atom_ptr_t user;   /* struct tool_reg *, or NULL */
    /* The trace's recorder, and the events it wants (core/trace.c). */
    void (*trace)(const coexec_tool_info_t *info, void *fn_or_obj);
    atom_u32_t trace_mask;
};
extern struct coexec__tool coexec__tool;

/* Delivers event ev about unit u (may be NULL) on stream xs (may be
 * NULL: another thread); fn: an offloaded call's function. */
void coexec__tool_emit(int ev, struct coexec_xstream_rec *xs,
                       struct coexec_unit_rec *u, void *fn);

#ifdef COEXEC_NO_TOOLS
/* Built without tool events (-DCOEXEC_TOOLS=OFF): the sites vanish. */
#define TOOL_ON() 0
#else
#define TOOL_ON() 1
#endif

#define TOOL_EVENT(ev, xs, u, fn)                                              \
    do {                                                                       \
        if (TOOL_ON() && UNLIKELY(atom_load_rlx_u32(&coexec__tool.mask) &      \
                                  COEXEC_TOOL_BIT(ev)))                        \
            coexec__tool_emit((ev), (xs), (u), (fn));                          \
    } while (0)

/* A switch on stream xs: `self` stops (event stop, or -1: no event) and
 * `to` runs (NULL: the scheduler). One check for both. */
void coexec__tool_switch(struct coexec_xstream_rec *xs,
                         struct coexec_unit_rec *self, int stop,
                         struct coexec_unit_rec *to);
#define TOOL_SWITCH(xs, self, stop, to)                                        \
    do {                                                                       \
        if (TOOL_ON() && UNLIKELY(atom_load_rlx_u32(&coexec__tool.mask) != 0)) \
            coexec__tool_switch((xs), (self), (stop), (to));                   \
    } while (0)

/* Frees the replaced callbacks: finalize, once no stream runs. */
void coexec__tool_reap(void);

/* Recomputes coexec__tool.mask from the user's and the trace's. */
void coexec__tool_remask(void);

/* A unit's name attribute: kept for named units (UF_NAMED) until
 * finalize, by unit id. */
int coexec__unit_name_set(struct coexec_unit_rec *u, const char *name);
const char *coexec__unit_name(const struct coexec_unit_rec *u);
void coexec__unit_names_clear(void);

#endif /* COEXEC_THREAD_TOOL_H */
