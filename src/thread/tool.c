/*
 * src/thread/tool.c: delivering events (thread/tool.h), the public
 * callback registration, and units' name attributes.
 */
#include <stdlib.h>
#include <string.h>

#include "base/global.h"
#include "base/self.h"
#include "base/spin.h"
#include "sched/sched.h"
#include "thread/tool.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

struct coexec__tool coexec__tool;

/* Replaced callbacks, freed at finalize. */
static struct {
    atom_u32_t lock;
    struct tool_reg *head;
} retired;

void coexec__tool_remask(void)
{
    struct tool_reg *r = atom_load_acq_ptr(&coexec__tool.user);
    unsigned m = (r ? r->mask : 0) | atom_load_rlx_u32(&coexec__tool.trace_mask);
    atom_store_rel_u32(&coexec__tool.mask, m);
}

/* The number of scheduler levels running on xs, its own thread. */
static int sched_depth(const struct coexec_xstream_rec *xs)
{
    int d = 0;
    for (const struct coexec_sched_rec *s = xs->cur_sched; s; s = s->pcur)
        d++;
    return d;
}

void coexec__tool_emit(int ev, struct coexec_xstream_rec *xs,
                       struct coexec_unit_rec *u, void *fn)
{
    coexec_tool_info_t info = {
        .event = (coexec_tool_event_t)ev,
        .rank = xs ? xs_rank_of(xs) : -1,
        .unit_id = u ? u->id : 0,
        .unit_is_tasklet = u && u->kind == UNIT_TASKLET,
        .unit_fn = u ? (u->kind == UNIT_TASKLET ? (void *)u->fn.tasklet
                                                : (void *)u->fn.thread)
                     : fn,
        .unit_name = !u                     ? NULL
                     : u->kind == UNIT_MAIN ? "main"
                                            : coexec__unit_name(u),
        .unit_arg = !u || u->kind == UNIT_MAIN || (u->flags & UF_SCHED)
                        ? NULL
                        : u->arg,
        .unit = u,
        .unit_is_main = u && u->kind == UNIT_MAIN,
        /* A tasklet is marked started after its RUN is told, a ULT's
         * context exists only once it first ran. */
        .unit_first_run = ev == COEXEC_TOOL_UNIT_RUN && u &&
                          (u->kind == UNIT_TASKLET
                               ? !(u->rflags & RF_STARTED)
                               : u->sp == NULL),
        /* These four are told by the unit's own stream. */
        .sched_depth = xs && u &&
                               (ev == COEXEC_TOOL_UNIT_RUN ||
                                ev == COEXEC_TOOL_UNIT_YIELD ||
                                ev == COEXEC_TOOL_UNIT_BLOCK ||
                                ev == COEXEC_TOOL_UNIT_FINISH)
                           ? sched_depth(xs)
                           : 0,
    };
    if (ev == COEXEC_TOOL_UNIT_RESUME && u)
        atom_fand_rlx_u32(&u->attrs, ~UA_TOOL_BLOCKED);
    unsigned bit = COEXEC_TOOL_BIT(ev);
    if (atom_load_rlx_u32(&coexec__tool.trace_mask) & bit)
        coexec__tool.trace(&info, u ? (void *)u : fn);
    struct tool_reg *r = atom_load_acq_ptr(&coexec__tool.user);
    if (r && (r->mask & bit))
        r->fn(&info, r->arg);
}

void coexec__tool_switch(struct coexec_xstream_rec *xs,
                         struct coexec_unit_rec *self, int stop,
                         struct coexec_unit_rec *to)
{
    unsigned m = atom_load_rlx_u32(&coexec__tool.mask);
    if (self && stop == COEXEC_TOOL_UNIT_BLOCK)
        atom_for_rlx_u32(&self->attrs, UA_TOOL_BLOCKED);
    if (self && stop >= 0 && (m & COEXEC_TOOL_BIT(stop)))
        coexec__tool_emit(stop, xs, self, NULL);
    if (!to)
        return;
    /* A unit run again without a wake (a joiner its in-place child comes
     * back to, a park that a wake overtook) is told resumed first. */
    if (atom_load_rlx_u32(&to->attrs) & UA_TOOL_BLOCKED) {
        atom_fand_rlx_u32(&to->attrs, ~UA_TOOL_BLOCKED);
        if (m & COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_RESUME))
            coexec__tool_emit(COEXEC_TOOL_UNIT_RESUME, xs, to, NULL);
    }
    if (m & COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_RUN))
        coexec__tool_emit(COEXEC_TOOL_UNIT_RUN, xs, to, NULL);
}

COEXEC_API int coexec_tool_set_callback(coexec_tool_fn_t fn, unsigned mask,
                                        void *arg)
{
    if (mask & ~(unsigned)COEXEC_TOOL_ALL)
        return COEXEC_EINVAL;
    if (!TOOL_ON())
        return fn && mask ? COEXEC_ENOSYS : COEXEC_OK;
    struct tool_reg *r = NULL;
    if (fn && mask) {
        /* Never freed: a call of the previous one may still be running. */
        if (!(r = malloc(sizeof *r)))
            return COEXEC_ENOMEM;
        r->fn = fn;
        r->arg = arg;
        r->mask = mask;
    }
    /* Release: an emitter that loads r (acquire) sees it filled. */
    struct tool_reg *old = atom_xchg_ar_ptr(&coexec__tool.user, r);
    coexec__tool_remask();
    if (old) {
        spin_lock(&retired.lock);
        old->retired_next = retired.head;
        retired.head = old;
        spin_unlock(&retired.lock);
    }
    return COEXEC_OK;
}

void coexec__tool_reap(void)
{
    spin_lock(&retired.lock);
    struct tool_reg *r = retired.head;
    retired.head = NULL;
    spin_unlock(&retired.lock);
    while (r) {
        struct tool_reg *n = r->retired_next;
        free(r);
        r = n;
    }
}

/* ---- names ----------------------------------------------------------------- */

/* Open addressing by unit id, under a spin lock; only named units enter. */
static struct {
    atom_u32_t lock;
    size_t cap, n;
    struct name_ent {
        uint64_t id;
        char *name;
    } *tab;
} names;

static struct name_ent *name_slot(struct name_ent *tab, size_t cap,
                                  uint64_t id)
{
    size_t i = (size_t)(id * 0x9e3779b97f4a7c15ull) & (cap - 1);
    while (tab[i].id && tab[i].id != id)
        i = (i + 1) & (cap - 1);
    return &tab[i];
}

static bool names_grow(void)
{
    size_t cap = names.cap ? names.cap * 2 : 64;
    struct name_ent *t = calloc(cap, sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < names.cap; i++)
        if (names.tab[i].id)
            *name_slot(t, cap, names.tab[i].id) = names.tab[i];
    free(names.tab);
    names.tab = t;
    names.cap = cap;
    return true;
}

int coexec__unit_name_set(struct coexec_unit_rec *u, const char *name)
{
    char *copy = strdup(name);
    if (!copy)
        return COEXEC_ENOMEM;
    spin_lock(&names.lock);
    if ((names.n + 1) * 2 > names.cap && !names_grow()) {
        spin_unlock(&names.lock);
        free(copy);
        return COEXEC_ENOMEM;
    }
    struct name_ent *e = name_slot(names.tab, names.cap, u->id);
    if (e->id)
        free(e->name);
    else
        names.n++;
    e->id = u->id;
    e->name = copy;
    spin_unlock(&names.lock);
    RLX_SET(u->flags, u->flags | UF_NAMED);
    return COEXEC_OK;
}

const char *coexec__unit_name(const struct coexec_unit_rec *u)
{
    if (!(u->flags & UF_NAMED))
        return NULL;
    spin_lock(&names.lock);
    const char *s = names.cap ? name_slot(names.tab, names.cap, u->id)->name
                              : NULL;
    spin_unlock(&names.lock);
    return s;
}

void coexec__unit_names_clear(void)
{
    spin_lock(&names.lock);
    for (size_t i = 0; i < names.cap; i++)
        free(names.tab[i].name);
    free(names.tab);
    names.tab = NULL;
    names.cap = names.n = 0;
    spin_unlock(&names.lock);
}
