/*
 * tests/thread/test_guard.c: a stack overflow is never silent.
 *
 * Each scenario runs in a child process (this binary, re-executed with
 * "--child NAME"), so that a scenario that must die can die; the parent
 * checks how it ended and what it printed on stderr.
 *
 * Suites:
 *   overflow  a ULT that recurses too deep, on a cached stack, a stack of
 *             another size and a stack on another stream, dies on its
 *             guard with one "stack overflow in ULT N on xstream X" line;
 *             a user-given stack is caught by its canary
 *   chain     faults that are not overflows reach the application's own
 *             SIGSEGV handler, installed before init or after it, or the
 *             default action; finalize puts the previous handler back;
 *             with guard_app, faults in guards reach it too, and it may
 *             open a guard with mprotect
 *   setup     every stream thread has an alternate signal stack; guards
 *             can be turned off (COEXEC_GUARD_SIZE=0) and sized
 */
#include "harness.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define IGNORE_RESULT(x)                                                       \
    do {                                                                       \
        int ignored_ = (x);                                                    \
        (void)ignored_;                                                        \
    } while (0)

/* ======================================================================= */
/* child scenarios                                                          */
/* ======================================================================= */

/* Recurses until the stack ends (never returns normally on a guarded
 * stack); `limit` frames at most, for the canary scenario. */
static __attribute__((noinline)) long deep(long depth, long limit)
{
    volatile char pad[512];
    for (int i = 0; i < 512; i++) /* the whole frame is written */
        pad[i] = (char)depth;
    if (depth >= limit)
        return pad[0];
    return deep(depth + 1, limit) + pad[0] + pad[511];
}

static void suspend_ult(void *arg)
{
    (void)arg;
    IGNORE_RESULT(coexec_self_suspend());
}

static void overflow_ult(void *arg)
{
    (void)arg;
    deep(0, 1L << 40);
}

static int child_init(int nxs, size_t stack_size)
{
    coexec_config_t cfg;
    if (coexec_config_init(&cfg) != COEXEC_OK)
        return 3;
    cfg.num_xstreams = nxs;
    if (stack_size)
        cfg.stack_size = stack_size;
    cfg.quiet = 1;
    return coexec_init(&cfg) == COEXEC_OK ? 0 : 4;
}

/* A ULT on xstream `rank` overflows; attr may give a stack size. It is
 * pinned and not joined (a join would run it in place, on the caller's
 * stream): the caller sleeps until the process dies. */
static int run_overflow(int nxs, int rank, size_t attr_size)
{
    int rc = child_init(nxs, 0);
    if (rc)
        return rc;
    coexec_xstream_t x;
    coexec_thread_t t, idle[4];
    coexec_thread_attr_t attr;
    if (coexec_xstream_by_rank(rank, &x) != COEXEC_OK ||
        coexec_thread_attr_init(&attr) != COEXEC_OK)
        return 5;
    attr.stack_size = attr_size;
    attr.pinned = 1;
    /* Neighbours on the same slab, created first so that they run first
     * and hold their stacks (suspended) while the overflow happens. */
    for (int i = 0; i < 4; i++)
        if (coexec_thread_create_on(x, suspend_ult, NULL, NULL, &idle[i]) !=
            COEXEC_OK)
            return 6;
    if (coexec_thread_create_on(x, overflow_ult, NULL, &attr, &t) != COEXEC_OK)
        return 7;
    coexec_unit_state_t st = COEXEC_UNIT_READY;
    for (int i = 0; i < 3000 && st != COEXEC_UNIT_TERMINATED; i++) {
        IGNORE_RESULT(coexec_sleep_ns(10 * 1000 * 1000));
        IGNORE_RESULT(coexec_thread_get_state(t, &st));
    }
    /* Reaching this is the failure: the overflow went unnoticed. */
    fprintf(stderr, "overflow returned: state %d\n", (int)st);
    return 0;
}

/* A user-given stack: the ULT runs past its end into memory that is the
 * caller's (so no fault), then yields: the canary reports it. */
static void canary_ult(void *arg)
{
    long frames = (long)(intptr_t)arg;
    deep(0, frames);
    IGNORE_RESULT(coexec_yield());
}

static int run_canary(long frames)
{
    int rc = child_init(1, 0);
    if (rc)
        return rc;
    size_t sz = 16 * 1024;
    /* The stack is the upper half: the lower half takes the overrun. */
    char *mem = aligned_alloc(4096, 2 * sz);
    if (!mem)
        return 5;
    memset(mem, 0, 2 * sz);
    coexec_thread_attr_t attr;
    coexec_pool_t pool;
    coexec_xstream_t x0;
    coexec_thread_t t;
    if (coexec_thread_attr_init(&attr) != COEXEC_OK ||
        coexec_xstream_by_rank(0, &x0) != COEXEC_OK ||
        coexec_xstream_get_main_pool(x0, &pool) != COEXEC_OK)
        return 6;
    attr.stack = mem + sz;
    attr.stack_size = sz;
    if (coexec_thread_create(pool, canary_ult, (void *)(intptr_t)frames, &attr,
                             &t) != COEXEC_OK)
        return 7;
    rc = coexec_thread_free(&t);
    if (coexec_finalize() != COEXEC_OK)
        return 8;
    free(mem);
    fprintf(stderr, "canary run returned: %s\n", coexec_err_name(rc));
    return 0;
}

/* A fault that is no overflow: a write through a bad pointer in a ULT. */
static void bad_write_ult(void *arg)
{
    volatile int *p = (volatile int *)(uintptr_t)arg;
    *p = 1;
}

static volatile sig_atomic_t app_handler_hits;
static void app_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    app_handler_hits++;
    if (sig == SIGSEGV && (uintptr_t)si->si_addr == 16)
        _exit(42);
    _exit(41);
}

static int install_app_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = app_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGSEGV, &sa, NULL);
}

static int run_bad_write(int nxs, int app_handler_when)
{
    if (app_handler_when == 1 && install_app_handler() != 0)
        return 2;
    int rc = child_init(nxs, 0);
    if (rc)
        return rc;
    if (app_handler_when == 2 && install_app_handler() != 0)
        return 2;
    coexec_xstream_t x;
    coexec_thread_t t;
    coexec_thread_attr_t a;
    /* Pinned, and waited for (not joined): else rank 0 could run it, by
     * stealing it or in place. */
    if (coexec_thread_attr_init(&a) != COEXEC_OK)
        return 5;
    a.pinned = 1;
    if (coexec_xstream_by_rank(nxs - 1, &x) != COEXEC_OK ||
        coexec_thread_create_on(x, bad_write_ult, (void *)(uintptr_t)16, &a,
                                &t) != COEXEC_OK)
        return 5;
    IGNORE_RESULT(coexec_thread_wait(t));
    fprintf(stderr, "bad write returned\n");
    return 0;
}

/* guard_app: the guard is the program's. Its handler opens the page a
 * ULT touched (mprotect; fine on Linux, if not async-signal-safe by the
 * letter), the ULT goes on, closes it again and returns; a fault anywhere
 * else in the guard (an overflow) exits 43 from the handler. */
static volatile uintptr_t guard_page;
static volatile sig_atomic_t guard_opened;

static void guard_app_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    uintptr_t a = (uintptr_t)si->si_addr;
    long pg = sysconf(_SC_PAGESIZE);
    if (sig == SIGSEGV && a >= guard_page && a < guard_page + (uintptr_t)pg &&
        mprotect((void *)guard_page, (size_t)pg, PROT_READ | PROT_WRITE) == 0) {
        guard_opened++;
        return;
    }
    _exit(sig == SIGSEGV ? 43 : 44);
}

static void guard_probe_ult(void *arg)
{
    int *res = arg;
    coexec_thread_t me;
    coexec_stack_info_t si;
    if (coexec_thread_self(&me) != COEXEC_OK ||
        coexec_thread_get_stack(me, &si) != COEXEC_OK || !si.base) {
        *res = 10;
        return;
    }
    long pg = sysconf(_SC_PAGESIZE);
    guard_page = ((uintptr_t)si.base & ~(uintptr_t)(pg - 1)) - (uintptr_t)pg;
    volatile char *g = (volatile char *)guard_page;
    char v = g[0]; /* faults: the handler opens the page */
    g[1] = v;      /* open now */
    *res = guard_opened == 1 &&
                   mprotect((void *)guard_page, (size_t)pg, PROT_NONE) == 0
               ? 0
               : 11;
}

static int run_guard_app(bool overflow)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = guard_app_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0)
        return 2;
    int rc = child_init(2, 0);
    if (rc)
        return rc;
    coexec_xstream_t x;
    coexec_thread_t t;
    coexec_thread_attr_t a;
    if (coexec_thread_attr_init(&a) != COEXEC_OK ||
        coexec_xstream_by_rank(1, &x) != COEXEC_OK)
        return 5;
    a.pinned = 1;
    int res = -1;
    if (coexec_thread_create_on(x, overflow ? overflow_ult : guard_probe_ult,
                                &res, &a, &t) != COEXEC_OK)
        return 6;
    if (coexec_thread_wait(t) != COEXEC_OK)
        return 7;
    if (overflow) {
        fprintf(stderr, "overflow returned\n");
        return 0;
    }
    IGNORE_RESULT(coexec_thread_free(&t));
    /* The same stack again (the cache hands it back): its guard holds. */
    guard_opened = 0;
    res = -1;
    if (coexec_thread_create_on(x, guard_probe_ult, &res, &a, &t) != COEXEC_OK)
        return 8;
    if (coexec_thread_free(&t) != COEXEC_OK)
        return 9;
    if (res != 0)
        return 20 + res;
    return coexec_finalize() == COEXEC_OK ? 0 : 12;
}

/* finalize puts back the handler that was there before init. */
static int run_restore(void)
{
    if (install_app_handler() != 0)
        return 2;
    for (int round = 0; round < 2; round++) {
        int rc = child_init(2, 0);
        if (rc)
            return rc;
        struct sigaction cur;
        if (sigaction(SIGSEGV, NULL, &cur) != 0)
            return 5;
        if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == app_handler)
            return 6; /* the runtime's handler should be in place */
        if (coexec_finalize() != COEXEC_OK)
            return 7;
        if (sigaction(SIGSEGV, NULL, &cur) != 0)
            return 8;
        if (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != app_handler)
            return 9;
    }
    /* ...and a fault after finalize still reaches it. */
    volatile int *p = (volatile int *)(uintptr_t)16;
    *p = 1;
    return 10;
}

static int child_main(const char *name)
{
    if (!strcmp(name, "overflow_cached"))
        return run_overflow(1, 0, 0);
    if (!strcmp(name, "overflow_sized"))
        return run_overflow(1, 0, 64 * 1024);
    if (!strcmp(name, "overflow_secondary"))
        return run_overflow(3, 2, 0);
    if (!strcmp(name, "canary"))
        return run_canary(40); /* 40 frames of 512+ B: past 16 KiB */
    if (!strcmp(name, "canary_clean"))
        return run_canary(4);
    if (!strcmp(name, "bad_write_default"))
        return run_bad_write(2, 0);
    if (!strcmp(name, "bad_write_app_before"))
        return run_bad_write(2, 1);
    if (!strcmp(name, "bad_write_app_after"))
        return run_bad_write(2, 2);
    if (!strcmp(name, "restore"))
        return run_restore();
    if (!strcmp(name, "guard_app_open"))
        return run_guard_app(false);
    if (!strcmp(name, "guard_app_overflow"))
        return run_guard_app(true);
    return 99;
}

/* ======================================================================= */
/* the parent side                                                          */
/* ======================================================================= */

typedef struct child_result {
    int status;
    char err[4096]; /* its stderr */
} child_result_t;

/* Runs this binary as "--child name" with extra environment entries
 * (NULL-terminated "VAR=value" strings), collecting its stderr. */
static void run_child(const char *name, const char *const *env_extra,
                      child_result_t *r)
{
    memset(r, 0, sizeof *r);
    int fd[2];
    CU_ASSERT_FATAL(pipe(fd) == 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    char *argv[] = {"test_guard", "--child", (char *)name, NULL};
    char *envp[256];
    int n = 0;
    for (char **e = environ; *e && n < 200; e++)
        envp[n++] = *e;
    for (const char *const *e = env_extra; e && *e && n < 250; e++)
        envp[n++] = (char *)*e;
    envp[n] = NULL;
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    CU_ASSERT_FATAL(rc == 0);
    size_t got = 0;
    for (;;) {
        ssize_t k = read(fd[0], r->err + got, sizeof r->err - 1 - got);
        if (k > 0 && got + (size_t)k < sizeof r->err - 1) {
            got += (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k; /* full: keep draining into the last bytes */
        got = sizeof r->err - 1 - 1;
    }
    r->err[got] = '\0';
    close(fd[0]);
    CU_ASSERT_FATAL(waitpid(pid, &r->status, 0) == pid);
}

static bool died_of(const child_result_t *r, int sig)
{
    return WIFSIGNALED(r->status) && WTERMSIG(r->status) == sig;
}

static void show(const char *name, const child_result_t *r)
{
    if (WIFEXITED(r->status))
        printf("\n    [%s: exit %d] %s", name, WEXITSTATUS(r->status), r->err);
    else
        printf("\n    [%s: signal %d] %s", name, WTERMSIG(r->status), r->err);
}

/* The report line of an overflow, checked field by field. */
static void expect_overflow(const char *name, const char *xstream,
                            const char *size, const char *tail)
{
    child_result_t r;
    run_child(name, NULL, &r);
    show(name, &r);
    CU_ASSERT(died_of(&r, SIGABRT));
    const char *line = strstr(r.err, "coexec: stack overflow in ULT ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, xstream));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "(stack 0x"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, size));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, tail));
    CU_ASSERT_PTR_NULL(strstr(r.err, "returned"));
}

static void t_overflow_cached(void)
{
    expect_overflow("overflow_cached", " on xstream 0 ", "16 KiB",
                    "guard 4 KiB)");
}

static void t_overflow_sized(void)
{
    expect_overflow("overflow_sized", " on xstream 0 ", "64 KiB", "guard 4 KiB)");
}

static void t_overflow_secondary(void)
{
    expect_overflow("overflow_secondary", " on xstream 2 ", "16 KiB",
                    "guard 4 KiB)");
}

static void t_overflow_guard_size(void)
{
    /* A larger guard is reported as the report's own line says. */
    static const char *const env[] = {"COEXEC_GUARD_SIZE=64K", NULL};
    child_result_t r;
    run_child("overflow_cached", env, &r);
    show("overflow_cached, 64K guard", &r);
    CU_ASSERT(died_of(&r, SIGABRT));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "coexec: stack overflow in ULT "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, ", 16 KiB, guard 64 KiB)"));
}

static void t_canary(void)
{
    expect_overflow("canary", " on xstream 0 ", "16 KiB", "no guard: its canary was overwritten)");
}

static void t_canary_clean(void)
{
    /* A user stack used within its bounds is no overflow. */
    child_result_t r;
    run_child("canary_clean", NULL, &r);
    show("canary_clean", &r);
    CU_ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "canary run returned: OK"));
    CU_ASSERT_PTR_NULL(strstr(r.err, "stack overflow"));
}

static const ch_test_t overflow_tests[] = {
    {"cached_stack", t_overflow_cached},
    {"sized_stack", t_overflow_sized},
    {"secondary_stream", t_overflow_secondary},
    {"guard_size", t_overflow_guard_size},
    {"user_stack_canary", t_canary},
    {"user_stack_in_bounds", t_canary_clean},
    {NULL, NULL}};

/* ---- chain ------------------------------------------------------------- */

static void t_chain_default(void)
{
    child_result_t r;
    run_child("bad_write_default", NULL, &r);
    show("bad_write_default", &r);
    if (!CH_SANITIZER) /* sanitizers report the fault themselves */
        CU_ASSERT(died_of(&r, SIGSEGV));
    CU_ASSERT(!(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0));
    CU_ASSERT_PTR_NULL(strstr(r.err, "stack overflow"));
}

static void t_chain_app_before(void)
{
    child_result_t r;
    run_child("bad_write_app_before", NULL, &r);
    show("bad_write_app_before", &r);
    CU_ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 42);
    CU_ASSERT_PTR_NULL(strstr(r.err, "stack overflow"));
}

static void t_chain_app_after(void)
{
    child_result_t r;
    run_child("bad_write_app_after", NULL, &r);
    show("bad_write_app_after", &r);
    CU_ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 42);
}

static void t_chain_restore(void)
{
    child_result_t r;
    run_child("restore", NULL, &r);
    show("restore", &r);
    CU_ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 42);
}

/* COEXEC_GUARD_APP=1: a ULT touches its guard, the program's handler opens
 * it, the ULT goes on; an overflow reaches that handler too, unreported. */
static void t_chain_guard_app(void)
{
    static const char *const env[] = {"COEXEC_GUARD_APP=1", NULL};
    child_result_t r;
    run_child("guard_app_open", env, &r);
    show("guard_app_open", &r);
    CU_ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    CU_ASSERT_PTR_NULL(strstr(r.err, "stack overflow"));
    run_child("guard_app_overflow", env, &r);
    show("guard_app_overflow", &r);
    CU_ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 43);
    CU_ASSERT_PTR_NULL(strstr(r.err, "stack overflow"));
    CU_ASSERT_PTR_NULL(strstr(r.err, "returned"));
}

static const ch_test_t chain_tests[] = {
    {"guard_app", t_chain_guard_app},
    {"default_action", t_chain_default},
    {"app_handler_before_init", t_chain_app_before},
    {"app_handler_after_init", t_chain_app_after},
    {"finalize_restores", t_chain_restore},
    {NULL, NULL}};

/* ---- setup ------------------------------------------------------------- */

static atomic_int g_alt_ok, g_alt_seen;

static void altstack_ult(void *arg)
{
    (void)arg;
    stack_t ss;
    if (sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE) &&
        ss.ss_size >= 16 * 1024)
        atomic_fetch_add(&g_alt_ok, 1);
    atomic_fetch_add(&g_alt_seen, 1);
}

static void t_setup_altstack(void)
{
    /* Every stream's thread, the primary's included, can take a signal
     * on a stack of its own. */
    enum { NXS = 4 };
    ch_init(NXS);
    atomic_store(&g_alt_ok, 0);
    atomic_store(&g_alt_seen, 0);
    for (int r = 0; r < NXS; r++) {
        coexec_xstream_t x;
        coexec_thread_t t;
        CH_ASSERT_OK(coexec_xstream_by_rank(r, &x));
        coexec_thread_attr_t a;
        CH_ASSERT_OK(coexec_thread_attr_init(&a));
        a.pinned = 1;
        CH_ASSERT_OK(coexec_thread_create_on(x, altstack_ult, NULL, &a, &t));
        /* wait: a free alone could run it here, in place, on rank 0. */
        CH_ASSERT_OK(coexec_thread_wait(t));
        int ran_on = -1;
        CH_ASSERT_OK(coexec_unit_get_last_rank(coexec_thread_unit(t), &ran_on));
        CH_ASSERT_EQ(ran_on, r);
        CH_ASSERT_OK(coexec_thread_free(&t));
    }
    CH_ASSERT_EQ(atomic_load(&g_alt_seen), NXS);
    CH_ASSERT_EQ(atomic_load(&g_alt_ok), NXS);
    ch_finalize();
}

static void nop_ult(void *arg) { atomic_fetch_add((atomic_int *)arg, 1); }

static void t_setup_guard_off(void)
{
    /* Guards off (unsafe, but allowed): ULTs of both kinds of stack run. */
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    CH_ASSERT_EQ(cfg.guard_size, 4096);
    cfg.guard_size = 0;
    cfg.num_xstreams = 2;
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    coexec_config_t got;
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.guard_size, 0);
    atomic_int ran = 0;
    coexec_xstream_t x;
    CH_ASSERT_OK(coexec_xstream_by_rank(1, &x));
    coexec_thread_attr_t a;
    CH_ASSERT_OK(coexec_thread_attr_init(&a));
    a.stack_size = 40 * 1024;
    coexec_thread_t t[40];
    for (int i = 0; i < 40; i++)
        CH_ASSERT_OK(coexec_thread_create_on(x, nop_ult, &ran,
                                             (i & 1) ? &a : NULL, &t[i]));
    for (int i = 0; i < 40; i++)
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
    CH_ASSERT_EQ(atomic_load(&ran), 40);
    ch_finalize();
    /* Out of range. */
    cfg.guard_size = (size_t)65 << 20;
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
}

static void t_setup_many_guarded(void)
{
    /* Thousands of guarded stacks alive at once (each ULT parked): on a
     * kernel with guard markers this costs no kernel mapping per stack. */
    long n = ch_iters(5000, 500);
    ch_init(2);
    coexec_thread_t *t = calloc((size_t)n, sizeof *t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    coexec_xstream_t x;
    CH_ASSERT_OK(coexec_xstream_by_rank(1, &x));
    for (long i = 0; i < n; i++)
        CH_ASSERT_OK(coexec_thread_create_on(
            x, suspend_ult, NULL, NULL, &t[i]));
    for (long i = 0; i < n; i++) {
        coexec_unit_state_t st = COEXEC_UNIT_READY;
        CH_WAIT(coexec_thread_get_state(t[i], &st) == COEXEC_OK &&
                st == COEXEC_UNIT_BLOCKED);
    }
    for (long i = 0; i < n; i++)
        CH_ASSERT_OK(coexec_thread_resume(t[i]));
    for (long i = 0; i < n; i++)
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
    free(t);
    ch_finalize();
}

static const ch_test_t setup_tests[] = {
    {"altstack_on_every_stream", t_setup_altstack},
    {"guard_off_and_bounds", t_setup_guard_off},
    {"many_guarded_stacks", t_setup_many_guarded},
    {NULL, NULL}};

static const ch_suite_t suites[] = {{"overflow", overflow_tests},
                                    {"chain", chain_tests},
                                    {"setup", setup_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--child"))
        return child_main(argv[2]);
    return ch_main(argc, argv, suites);
}
