/*
 * 01_hello.c: the smallest complete libcoexec program.
 *
 * coexec_init makes the calling thread the primary execution stream
 * (xstream, rank 0) and starts the others: each is an OS thread pinned to
 * a core, whose scheduler runs the units (ULTs and tasklets) queued in its
 * pool. From there on main is itself a user-level thread (ULT), the
 * primary's "main ULT". Every call returns COEXEC_OK (0) or a negative
 * error code.
 *
 * One ULT goes to each stream and records where it ran. The ULTs are
 * pinned, so that no idle stream steals one, and main lets them all run
 * before it joins them: a join of a ULT that has not started runs it at
 * once, in place, on the joiner's stream.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <coexec.h>

#define CHECK(call)                                                            \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != COEXEC_OK) {                                                \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, \
                    #call, coexec_err_name(rc_), coexec_strerror(rc_));        \
            exit(EXIT_FAILURE);                                                \
        }                                                                      \
    } while (0)

#define MAX_STREAMS 64

static atomic_int ran; /* how many ULTs have run */

/* The body of every ULT. It runs on the stack the runtime gave it. */
static void hello_fn(void *arg)
{
    CHECK(coexec_xstream_self_rank(arg));
    atomic_fetch_add(&ran, 1);
}

int main(void)
{
    coexec_config_t cfg;
    CHECK(coexec_config_init(&cfg));
    cfg.num_xstreams = 2; /* COEXEC_NUM_XSTREAMS=n overrides this */
    CHECK(coexec_init(&cfg));
    int n, rank[MAX_STREAMS], ok = 1;
    CHECK(coexec_xstream_get_num(&n));
    n = n < MAX_STREAMS ? n : MAX_STREAMS;

    coexec_thread_attr_t attr;
    CHECK(coexec_thread_attr_init(&attr));
    attr.pinned = 1;
    coexec_thread_t t[MAX_STREAMS];
    for (int r = 0; r < n; r++) { /* queued: creating never switches */
        coexec_xstream_t xs;
        CHECK(coexec_xstream_by_rank(r, &xs));
        CHECK(coexec_thread_create_on(xs, hello_fn, &rank[r], &attr, &t[r]));
    }
    while (atomic_load(&ran) < n) /* the primary runs its ULT meanwhile */
        CHECK(coexec_yield());

    for (int r = 0; r < n; r++) {
        CHECK(coexec_thread_free(&t[r])); /* joins, then releases it */
        printf("ULT %d: hello from xstream %d\n", r, rank[r]);
        ok &= rank[r] == r;
    }
    CHECK(coexec_finalize());
    if (!ok) {
        printf("hello: FAILED, a ULT ran on another xstream\n");
        return EXIT_FAILURE;
    }
    printf("hello: %d ULTs ran, each on its own xstream\n", n);
    return EXIT_SUCCESS;
}
