/*
 * src/core/info.c: coexec_info_print (coexec/info.h), and the monitor
 * thread that prints it on a signal (COEXEC_DUMP_SIGNAL) or when no
 * stream makes progress (COEXEC_HANG_DUMP).
 *
 * A dump reads records other threads are changing, with no handshake:
 * every field with a relaxed load (so no value is torn), the functions
 * that do so left out of ThreadSanitizer (NO_TSAN), and a unit's wait
 * note trusted only while the unit is blocked and its id is the note's.
 * A free descriptor is recognised by its home pool (NULL) before its id,
 * which the descriptor cache reuses for its own counts, is looked at.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "arch/clock.h"
#include "arch/context.h"
#include "base/global.h"
#include "base/osthread.h"
#include "core/config.h"
#include "mem/cache.h"
#include "sched/sched.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static const char *const pool_kinds[] = {"FIFO", "LIFO", "PRIO", "DEQUE",
                                         "USER"};
static const char *const accesses[] = {"PRIV", "SPSC", "MPSC", "SPMC",
                                       "MPMC"};
static const char *const xs_states[] = {"created", "ready", "running",
                                        "terminated"};
static const char *const unit_states[] = {"ready", "running", "blocked",
                                          "terminated"};

static const char *name_of(const char *const *names, size_t n, unsigned i)
{
    return i < n ? names[i] : "?";
}
#define NAME(tab, i) name_of(tab, sizeof tab / sizeof tab[0], (unsigned)(i))

/* ---- streams --------------------------------------------------------------- */

NO_TSAN static void print_pool(FILE *f, struct coexec_pool_rec *p, int i)
{
    /* Its lock's bias (pool.h): stream records are never freed, so the
     * owner's rank can be read even if it is going. */
    void *b = atom_load_rlx_ptr(&p->bias);
    char bias[40] = "";
    if (b && b != POOL_BIAS_OFF)
        snprintf(bias, sizeof bias, ", lock biased to stream %d",
                 xs_rank_of((struct coexec_xstream_rec *)b));
    fprintf(f, "    pool %d: %s %s, %llu queued%s%s\n", i,
            NAME(pool_kinds, LD(p->kind)), NAME(accesses, LD(p->access)),
            (unsigned long long)atom_load_rlx_u64(&p->size),
            LD(p->stealable) ? ", others steal from it" : "", bias);
}

NO_TSAN static void print_stream(FILE *f, struct coexec_xstream_rec *xs)
{
    /* What the stream runs now is its own thread's to know (its record's
     * current unit is not read across threads): the units section shows
     * the running ones. Its counters say how busy it has been. */
    unsigned st = atom_load_acq_u32(&xs->state);
    fprintf(f, "stream %d: %s, cpu %d%s, %llu unit run(s) since init\n",
            xs->rank, NAME(xs_states, st), xs->cpu,
            xs->is_primary ? ", primary" : "",
            (unsigned long long)(atom_load_rlx_u64(&xs->count[XC_ULT_RUNS]) +
                                 atom_load_rlx_u64(&xs->count[XC_TASKLETS_RUN])));
    struct coexec_sched_rec *s = atom_load_acq_ptr(&xs->sched);
    if (!s || st != COEXEC_XSTREAM_RUNNING)
        return;
    fprintf(f, "  main scheduler: %s%s%s, %d pool(s)\n",
            s->has_ops ? "user" : s->name, s->steals ? ", steals" : "",
            s->parks ? ", parks when idle" : "", s->npools);
    for (int i = 0; i < s->npools; i++)
        print_pool(f, s->pools[i], i);
}

/* ---- units ----------------------------------------------------------------- */

/* Writes "module+0xoff (symbol+0xoff)" for code address pc. */
static void print_pc(FILE *f, uintptr_t pc)
{
    Dl_info di;
    if (dladdr((void *)pc, &di) && di.dli_fname) {
        const char *mod = strrchr(di.dli_fname, '/');
        fprintf(f, "%s+0x%lx", mod ? mod + 1 : di.dli_fname,
                (unsigned long)(pc - (uintptr_t)di.dli_fbase));
        if (di.dli_sname)
            fprintf(f, " (%s+0x%lx)", di.dli_sname,
                    (unsigned long)(pc - (uintptr_t)di.dli_saddr));
        fputc('\n', f);
    } else {
        fprintf(f, "0x%lx\n", (unsigned long)pc);
    }
}

/* A parked ULT's call stack, from the frame its context switch saved and
 * then the frame pointer chain, as long as it stays inside the stack. */
NO_TSAN static void print_backtrace(FILE *f, struct coexec_unit_rec *u)
{
    uintptr_t sp = (uintptr_t)LD(u->sp);
    uintptr_t lo = (uintptr_t)LD(u->stack);
    uintptr_t hi = lo + LD(u->stack_size);
    if (!(LD(u->rflags) & RF_STARTED) && LD(u->kind) != UNIT_MAIN) {
        fprintf(f, "      (not started yet)\n");
        return;
    }
    if (!sp || !lo || sp < lo || sp >= hi || LD(u->kind) == UNIT_MAIN) {
        fprintf(f, "      (no call stack to show)\n");
        return;
    }
    uintptr_t fp, pc;
    if (!coexec__ctx_frame((const void *)sp, &fp, &pc)) {
        fprintf(f, "      (call stacks are not shown with this context switch)\n");
        return;
    }
    for (int depth = 0; depth < 32 && pc; depth++) {
        fprintf(f, "      #%-2d ", depth);
        print_pc(f, pc);
        if (fp < sp || fp + 16 > hi || fp % sizeof(uintptr_t))
            break;
        sp = fp;
        pc = ((uintptr_t *)fp)[1];
        fp = ((uintptr_t *)fp)[0];
    }
}

struct unit_walk {
    FILE *f;
    unsigned flags;
    uint64_t now;
    unsigned shown, blocked;
};

NO_TSAN static void print_wait(FILE *f, struct coexec_unit_rec *u, uint64_t id,
                       uint64_t now)
{
    if (LD(u->kind) == UNIT_TASKLET) {
        struct wlist *l = atom_load_rlx_ptr(&u->tnode.who);
        if (l)
            fprintf(f, " on a wait list at %p", (void *)l);
        return;
    }
    struct unit_wait_note *n = unit_wait_note(u);
    if (!n || LD(n->id) != id || !LD(n->what)) {
        fprintf(f, " (what on is not recorded for a user stack)");
        return;
    }
    const char *what = LD(n->what);
    const void *obj = LD(n->obj);
    uint64_t arg = LD(n->arg);
    if (!strcmp(what, "join")) {
        fprintf(f, " on a join of unit %llu", (unsigned long long)arg);
        return;
    }
    fprintf(f, " on %s", what);
    if (obj)
        fprintf(f, " %p", obj);
    if (arg != UINT64_MAX && arg != 0)
        fprintf(f, ", %.1f ms left",
                arg > now ? (double)(arg - now) / 1e6 : 0.0);
}

/* Unit u's lines, read in state st; gen: its generation before that. The
 * call stack (flags COEXEC_INFO_BACKTRACE) of a ULT that is not running. */
NO_TSAN static void print_unit(FILE *f, struct coexec_unit_rec *u, uint64_t gen,
                               unsigned st, unsigned flags, uint64_t now)
{
    uint64_t id = LD(u->id);
    int kind = LD(u->kind);
    fprintf(f, "  unit %llu (%s): %s", (unsigned long long)id,
            kind == UNIT_TASKLET ? "tasklet" : kind == UNIT_MAIN ? "main ULT"
                                                                 : "ULT",
            NAME(unit_states, st));
    if (st == COEXEC_UNIT_BLOCKED)
        print_wait(f, u, id, now);
    fputc('\n', f);
    if (kind == UNIT_TASKLET || !(flags & COEXEC_INFO_BACKTRACE) ||
        st == COEXEC_UNIT_RUNNING || st == COEXEC_UNIT_TERMINATED ||
        atom_load_acq_u64(&u->gen) != gen)
        return;
    if (kind == UNIT_ULT && LD(u->stack))
        fprintf(f, "    stack %p, %zu bytes\n", LD(u->stack),
                (size_t)LD(u->stack_size));
    print_backtrace(f, u);
}

NO_TSAN static void unit_one(struct coexec_unit_rec *u, void *arg)
{
    struct unit_walk *w = arg;
    uint64_t gen = atom_load_acq_u64(&u->gen);
    /* A free descriptor names no home pool; a never-used one is zeros. */
    if (!atom_load_acq_ptr(&u->pool))
        return;
    if (!LD(u->id))
        return;
    unsigned st = atom_load_acq_u32(&u->state);
    bool blocked = st == COEXEC_UNIT_BLOCKED;
    if (st == COEXEC_UNIT_TERMINATED ||
        (!blocked && !(w->flags & COEXEC_INFO_UNITS)))
        return;
    w->shown++;
    w->blocked += blocked;
    print_unit(w->f, u, gen, st, w->flags, w->now);
}

COEXEC_API int coexec_info_print_unit(void *fp, coexec_unit_t unit,
                                      unsigned flags)
{
    if (flags & ~COEXEC_INFO_BACKTRACE)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(unit);
    if (rc)
        return rc;
    FILE *f = fp ? (FILE *)fp : stderr;
    unsigned st = atom_load_acq_u32(&unit.p->state);
    print_unit(f, unit.p, unit.gen, st, flags, clock_now_ns());
    fflush(f);
    return COEXEC_OK;
}

COEXEC_API int coexec_info_print(void *fp, unsigned flags)
{
    if (flags & ~(COEXEC_INFO_STREAMS | COEXEC_INFO_BLOCKED |
                  COEXEC_INFO_UNITS | COEXEC_INFO_BACKTRACE))
        return COEXEC_EINVAL;
    RT_CHECK();
    if (!flags)
        flags = COEXEC_INFO_DEFAULT;
    FILE *f = fp ? (FILE *)fp : stderr;
    fprintf(f, "coexec %s: state of the runtime (pool lock bias %s)\n",
            coexec_version_string(),
            coexec__g.pool_bias ? "available" : "unavailable");
    if (flags & COEXEC_INFO_STREAMS) {
        pthread_mutex_lock(&coexec__g.lock);
        for (int r = 0; r < MAX_XSTREAMS; r++)
            if (coexec__xsr.by_rank[r])
                print_stream(f, coexec__xsr.by_rank[r]);
        pthread_mutex_unlock(&coexec__g.lock);
    }
    if (flags & (COEXEC_INFO_BLOCKED | COEXEC_INFO_UNITS)) {
        struct unit_walk w = {f, flags, clock_now_ns(), 0, 0};
        fprintf(f, "units%s:\n",
                flags & COEXEC_INFO_UNITS ? "" : " blocked");
        coexec__cache_each_unit(unit_one, &w);
        fprintf(f, "%u unit(s) shown, %u blocked\n", w.shown, w.blocked);
    }
    fflush(f);
    return COEXEC_OK;
}

/* ---- the monitor thread ------------------------------------------------------ */

static struct {
    int pipe[2];
    pthread_t thread;
    bool running;
    int signo;
    struct sigaction old;
} mon = {.pipe = {-1, -1}};

static void on_dump_signal(int sig)
{
    int saved = errno;
    char c = (char)sig;
    ssize_t n = write(mon.pipe[1], &c, 1); /* async-signal-safe */
    (void)n;
    errno = saved;
}

/* Units started or resumed, and fork-join tasks stolen, on every stream. */
static uint64_t progress(void)
{
    uint64_t sum = 0;
    pthread_mutex_lock(&coexec__g.lock);
    for (int i = 0; i < coexec__xsr.num_all; i++) {
        struct coexec_xstream_rec *xs = coexec__xsr.all[i];
        sum += atom_load_rlx_u64(&xs->count[XC_ULT_RUNS]) +
               atom_load_rlx_u64(&xs->count[XC_TASKLETS_RUN]) +
               atom_load_rlx_u64(&xs->count[XC_FJ_STEALS]);
    }
    pthread_mutex_unlock(&coexec__g.lock);
    return sum;
}

static void *monitor(void *arg)
{
    (void)arg;
    unsigned hang_s = coexec__g.cfg.hang_dump_s;
    int wait_ms = hang_s ? 250 : -1;
    uint64_t last = progress(), since = clock_now_ns();
    bool reported = false;
    for (;;) {
        struct pollfd p = {mon.pipe[0], POLLIN, 0};
        int n = poll(&p, 1, wait_ms);
        if (n > 0) {
            char c;
            if (read(mon.pipe[0], &c, 1) != 1 || c == 0)
                return NULL; /* finalize */
            fprintf(stderr, "coexec: signal %d: dump\n", c);
            IGNORE_RESULT(coexec_info_print(stderr, COEXEC_INFO_DEFAULT |
                                                        COEXEC_INFO_BACKTRACE));
            continue;
        }
        if (!hang_s)
            continue;
        uint64_t now = clock_now_ns(), cur = progress();
        if (cur != last) {
            last = cur;
            since = now;
            reported = false;
        } else if (!reported && now - since >= hang_s * 1000000000ull) {
            reported = true;
            fprintf(stderr,
                    "coexec: no unit started or resumed on any stream for "
                    "%u s (COEXEC_HANG_DUMP): dump\n",
                    hang_s);
            IGNORE_RESULT(coexec_info_print(stderr, COEXEC_INFO_DEFAULT |
                                                        COEXEC_INFO_BACKTRACE));
        }
    }
}

int coexec__monitor_start(void)
{
    const coexec_config_t *c = &coexec__g.cfg;
    if (!c->dump_signal && !c->hang_dump_s)
        return COEXEC_OK;
    if (pipe2(mon.pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return COEXEC_ENOMEM;
    int fl = fcntl(mon.pipe[0], F_GETFL);
    fcntl(mon.pipe[0], F_SETFL, fl & ~O_NONBLOCK);
    if (c->dump_signal) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_dump_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(c->dump_signal, &sa, &mon.old);
        mon.signo = c->dump_signal;
    }
    if (coexec__os_thread_create(&mon.thread, NULL, monitor, NULL,
                                 "coexec-mon", -1, 0) != 0) {
        coexec__monitor_stop();
        return COEXEC_EAGAIN;
    }
    mon.running = true;
    return COEXEC_OK;
}

/* fork, in the child: the monitor thread is the parent's. */
void coexec__monitor_atfork_child(void)
{
    if (mon.signo) {
        sigaction(mon.signo, &mon.old, NULL);
        mon.signo = 0;
    }
    mon.running = false;
    for (int i = 0; i < 2; i++) {
        if (mon.pipe[i] >= 0)
            close(mon.pipe[i]);
        mon.pipe[i] = -1;
    }
}

void coexec__monitor_stop(void)
{
    if (mon.signo) {
        sigaction(mon.signo, &mon.old, NULL);
        mon.signo = 0;
    }
    if (mon.running) {
        char c = 0;
        while (write(mon.pipe[1], &c, 1) < 0 && errno == EINTR)
            ;
        pthread_join(mon.thread, NULL);
        mon.running = false;
    }
    for (int i = 0; i < 2; i++) {
        if (mon.pipe[i] >= 0)
            close(mon.pipe[i]);
        mon.pipe[i] = -1;
    }
}
