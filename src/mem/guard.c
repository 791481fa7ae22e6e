/*
 * src/mem/guard.c: guard regions, the stack-overflow fault handler, the
 * alternate signal stacks it runs on, and the canary report (guard.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/global.h"
#include "mem/cache.h"
#include "mem/guard.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/* ---- guard regions ------------------------------------------------------ */

/* 0: not known yet; 1: madvise guards work here; 2: use mprotect. */
static atom_u32_t guard_kind;

bool coexec__guard_install(void *lo, size_t len)
{
    /* guard_app: pages the program may open again with mprotect. */
    if (!coexec__g.cfg.guard_app && atom_load_rlx_u32(&guard_kind) != 2) {
        if (madvise(lo, len, MADV_GUARD_INSTALL) == 0) {
            atom_store_rlx_u32(&guard_kind, 1);
            return true;
        }
        /* EINVAL: a kernel without guard markers. Anything else (ENOMEM,
         * EAGAIN) may pass: try mprotect, which reports what is wrong. */
        if (errno == EINVAL && atom_load_rlx_u32(&guard_kind) == 0)
            atom_store_rlx_u32(&guard_kind, 2);
    }
    return mprotect(lo, len, PROT_NONE) == 0;
}

/* ---- the report ----------------------------------------------------------- */

/* Async-signal-safe formatting into a fixed buffer. */
struct line {
    char b[256];
    size_t n;
};

static void put_s(struct line *l, const char *s)
{
    while (*s && l->n < sizeof l->b - 1)
        l->b[l->n++] = *s++;
}

static void put_u(struct line *l, unsigned long long v, unsigned base)
{
    char t[24];
    int i = 0;
    do {
        t[i++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    if (base == 16)
        put_s(l, "0x");
    while (i > 0 && l->n < sizeof l->b - 1)
        l->b[l->n++] = t[--i];
}

static void put_size(struct line *l, size_t bytes)
{
    if (bytes && bytes % 1024 == 0) {
        put_u(l, bytes / 1024, 10);
        put_s(l, " KiB");
    } else {
        put_u(l, bytes, 10);
        put_s(l, " B");
    }
}

/* The whole stack of u: lowest address and bytes. */
static size_t stack_bytes(const struct coexec_unit_rec *u)
{
    if (u->flags & (UF_USER_STACK | UF_BIG_STACK))
        return u->stack_size;
    return coexec__g.stack_size; /* a cached stack: its node included */
}

/* "coexec: stack overflow in ULT 42 on xstream 1 (stack 0x...-0x...,
 * 16 KiB, guard 4 KiB)" on stderr, then abort(). A stack without a guard
 * of ours says why it was caught instead (`why`). */
static NORETURN void report(const struct coexec_unit_rec *u,
                            const struct coexec_xstream_rec *xs,
                            const char *why)
{
    struct line l = {.n = 0};
    put_s(&l, "coexec: stack overflow in ");
    if (u->flags & UF_SCHED) {
        put_s(&l, "the scheduler ULT ");
    } else {
        put_s(&l, "ULT ");
    }
    put_u(&l, u->id, 10);
    if (xs) {
        put_s(&l, " on xstream ");
        put_u(&l, (unsigned long long)xs->rank, 10);
    }
    size_t bytes = stack_bytes(u);
    put_s(&l, " (stack ");
    put_u(&l, (uintptr_t)u->stack, 16);
    put_s(&l, "-");
    put_u(&l, (uintptr_t)u->stack + bytes, 16);
    put_s(&l, ", ");
    put_size(&l, bytes);
    put_s(&l, ", ");
    if (why) {
        put_s(&l, why);
    } else {
        put_s(&l, "guard ");
        put_size(&l, coexec__g.guard_size);
    }
    put_s(&l, ")\n");
    ssize_t w = write(STDERR_FILENO, l.b, l.n);
    (void)w;
    abort();
}

NORETURN void coexec__canary_dead(struct coexec_unit_rec *u)
{
    report(u, coexec__xs_self(), "no guard: its canary was overwritten");
}

/* ---- the fault handler ------------------------------------------------------ */

static struct sigaction prev_segv, prev_bus;
static atom_u32_t handler_on;

/* Is addr in the guard of the stack u runs on (or, for a user stack, in
 * the page below it)? */
static bool in_guard_of(const struct coexec_unit_rec *u, uintptr_t addr)
{
    if (!u || u->kind != UNIT_ULT || !u->stack)
        return false;
    uintptr_t lo = (uintptr_t)u->stack;
    size_t g = (u->flags & UF_USER_STACK) ? coexec__g.page_size
                                          : coexec__g.guard_size;
    return g && addr < lo && addr >= lo - g;
}

/* Runs the handler that was there before us, as the kernel would have. */
static void chain(int sig, siginfo_t *si, void *uc)
{
    const struct sigaction *p = sig == SIGBUS ? &prev_bus : &prev_segv;
    if (p->sa_flags & SA_SIGINFO) {
        p->sa_sigaction(sig, si, uc);
        return;
    }
    if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
        p->sa_handler(sig);
        return;
    }
    /* The default action: put it back; a fault then repeats as the
     * instruction runs again and kills the process as it would have; a
     * signal sent by kill() is sent again. */
    struct sigaction d;
    memset(&d, 0, sizeof d);
    d.sa_handler = SIG_DFL;
    sigemptyset(&d.sa_mask);
    sigaction(sig, &d, NULL);
    if (si->si_code <= 0)
        raise(sig);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    struct coexec_xstream_rec *xs = coexec__tls_xs;
    uintptr_t addr = (uintptr_t)si->si_addr;
    /* guard_app: the program's handler takes guard faults too. */
    if (xs && si->si_code > 0 && !coexec__g.cfg.guard_app) {
        struct coexec_unit_rec *u = xs->cur;
        if (in_guard_of(u, addr))
            report(u, xs, (u->flags & UF_USER_STACK)
                              ? "no guard: a fault just below it"
                              : NULL);
        struct coexec_sched_rec *s = xs->cur_sched;
        if (s && in_guard_of(s->unit, addr))
            report(s->unit, xs, NULL);
        if (xs->sched_stack_own && coexec__g.guard_size &&
            addr < (uintptr_t)xs->sched_stack_own &&
            addr >= (uintptr_t)xs->sched_stack_own - coexec__g.guard_size) {
            static const char m[] =
                "coexec: stack overflow in the scheduler of xstream 0\n";
            ssize_t w = write(STDERR_FILENO, m, sizeof m - 1);
            (void)w;
            abort();
        }
    }
    chain(sig, si, uc);
    errno = saved;
}

int coexec__fault_handler_install(void)
{
    if (atom_load_rlx_u32(&handler_on))
        return COEXEC_OK;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &prev_segv) != 0)
        return COEXEC_EINVAL;
    if (sigaction(SIGBUS, &sa, &prev_bus) != 0) {
        sigaction(SIGSEGV, &prev_segv, NULL);
        return COEXEC_EINVAL;
    }
    atom_store_rlx_u32(&handler_on, 1);
    return COEXEC_OK;
}

/* Puts back what was there before init, for each signal whose handler is
 * still ours: one the application installed since stays. */
static void put_back(int sig, const struct sigaction *prev)
{
    struct sigaction cur;
    if (sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == on_fault)
        sigaction(sig, prev, NULL);
}

void coexec__fault_handler_remove(void)
{
    if (!atom_load_rlx_u32(&handler_on))
        return;
    put_back(SIGSEGV, &prev_segv);
    put_back(SIGBUS, &prev_bus);
    atom_store_rlx_u32(&handler_on, 0);
}

/* ---- alternate signal stacks -------------------------------------------------- */

void coexec__altstack_enter(struct coexec_altstack *own)
{
    own->mem = NULL;
    own->bytes = 0;
    stack_t cur;
    if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE))
        return; /* the thread has one (the application's, or a sanitizer's) */
    size_t page = coexec__g.page_size;
    long min = sysconf(_SC_SIGSTKSZ);
    size_t bytes = 64 * 1024;
    if (min > 0 && (size_t)min * 4 > bytes)
        bytes = ((size_t)min * 4 + page - 1) & ~(page - 1);
    /* A guard below it too: an overflow of the handler itself is caught. */
    char *m = mmap(NULL, bytes + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (m == MAP_FAILED)
        return; /* overflows are then reported by the default action only */
    if (!coexec__guard_install(m, page)) {
        munmap(m, bytes + page);
        return;
    }
    stack_t ss = {.ss_sp = m + page, .ss_size = bytes, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(m, bytes + page);
        return;
    }
    own->mem = m;
    own->bytes = bytes + page;
}

void coexec__altstack_leave(struct coexec_altstack *own)
{
    if (!own->mem)
        return;
    stack_t cur;
    /* Only ours is taken down; a handler running on it keeps it. */
    if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == (char *)own->mem +
                                                         coexec__g.page_size &&
        !(cur.ss_flags & SS_ONSTACK)) {
        stack_t off = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
        sigaltstack(&off, NULL);
    }
    munmap(own->mem, own->bytes);
    own->mem = NULL;
    own->bytes = 0;
}
