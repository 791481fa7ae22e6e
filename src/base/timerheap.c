/*
 * src/base/timerheap.c: a lock-protected binary heap of timers
 * (src/base/timerheap.h).
 */
#include <stdlib.h>

#include "base/global.h"
#include "base/spin.h"
#include "base/timerheap.h"

atom_ptr_t coexec__timerheap_note;
struct timerheap_registry coexec__timerheaps;

void coexec__timerheap_register(struct timer_heap *h)
{
    uint32_t n = atom_load_rlx_u32(&coexec__timerheaps.num);
    coexec__timerheaps.all[n] = h;
    atom_store_rel_u32(&coexec__timerheaps.num, n + 1);
}

void coexec__timerheap_forget_all(void)
{
    atom_store_rel_u32(&coexec__timerheaps.num, 0);
}

static void heap_set(struct timer_heap *h, uint32_t i, struct timer *t)
{
    h->a[i] = t;
    t->idx = i;
}

static void heap_up(struct timer_heap *h, uint32_t i)
{
    struct timer *t = h->a[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h->a[p]->deadline <= t->deadline)
            break;
        heap_set(h, i, h->a[p]);
        i = p;
    }
    heap_set(h, i, t);
}

static void heap_down(struct timer_heap *h, uint32_t i)
{
    struct timer *t = h->a[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->a[c + 1]->deadline < h->a[c]->deadline)
            c++;
        if (t->deadline <= h->a[c]->deadline)
            break;
        heap_set(h, i, h->a[c]);
        i = c;
    }
    heap_set(h, i, t);
}

static void heap_remove(struct timer_heap *h, struct timer *t)
{
    uint32_t i = t->idx;
    t->idx = TIMER_OFF;
    struct timer *last = h->a[--h->n];
    if (i == h->n)
        return;
    heap_set(h, i, last);
    heap_up(h, i);
    heap_down(h, last->idx);
}

static void heap_publish(struct timer_heap *h)
{
    atom_store_rel_u64(&h->next, h->n ? h->a[0]->deadline : UINT64_MAX);
}

int coexec__timer_add(struct timer_heap *h, struct timer *t)
{
    spin_lock(&h->lock);
    if (h->n == h->cap) {
        uint32_t cap = h->cap ? h->cap * 2 : 64;
        struct timer **a = realloc(h->a, cap * sizeof *a);
        if (!a) {
            spin_unlock(&h->lock);
            return COEXEC_ENOMEM;
        }
        h->a = a;
        h->cap = cap;
    }
    t->heap = h;
    heap_set(h, h->n++, t);
    heap_up(h, t->idx);
    heap_publish(h);
    bool first = t->idx == 0;
    spin_unlock(&h->lock);
    if (first) {
        void (*note)(uint64_t) =
            (void (*)(uint64_t))atom_load_acq_ptr(&coexec__timerheap_note);
        if (note)
            note(t->deadline);
    }
    return COEXEC_OK;
}

bool coexec__timer_cancel(struct timer *t)
{
    struct timer_heap *h = t->heap;
    spin_lock(&h->lock);
    bool in = t->idx != TIMER_OFF;
    if (in) {
        heap_remove(h, t);
        heap_publish(h);
    }
    spin_unlock(&h->lock);
    return in;
}

uint64_t coexec__timerheap_run_locked(struct timer_heap *h, uint64_t now)
{
    while (h->n && h->a[0]->deadline <= now) {
        struct timer *t = h->a[0];
        heap_remove(h, t);
        t->fire(t, false);
    }
    heap_publish(h);
    return h->n ? h->a[0]->deadline : UINT64_MAX;
}

uint64_t coexec__timerheap_run(struct timer_heap *h, uint64_t now)
{
    spin_lock(&h->lock);
    uint64_t next = coexec__timerheap_run_locked(h, now);
    spin_unlock(&h->lock);
    return next;
}

void coexec__timerheap_cancel_all(struct timer_heap *h)
{
    spin_lock(&h->lock);
    while (h->n) {
        struct timer *t = h->a[0];
        heap_remove(h, t);
        t->fire(t, true);
    }
    heap_publish(h);
    spin_unlock(&h->lock);
}

void coexec__timerheap_free(struct timer_heap *h)
{
    free(h->a);
    h->a = NULL;
    h->cap = 0;
}
