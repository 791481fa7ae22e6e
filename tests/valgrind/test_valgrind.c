/*
 * tests/valgrind/test_valgrind.c: what a program needs from the runtime to
 * run clean under valgrind's memcheck (the memcheck stage of
 * scripts/test.sh runs this binary, like every test labelled memcheck,
 * under valgrind --error-exitcode=1).
 *
 * Suites:
 *   stacks      ULTs descend through deep recursion on every kind of stack
 *               the runtime switches onto (cached, mapped with their own
 *               size or with a guard page, user-given ones reused by
 *               several ULTs in turn, the main ULT's and the primary's
 *               scheduler stack), yielding at every few levels so that
 *               each stack is left and entered again in mid-descent, and
 *               check every frame's contents on the way back. Natively
 *               this checks the values; under memcheck, a stack valgrind
 *               did not know as one would make it take the switches for
 *               huge pushes and pops and report the frames' accesses.
 *   service_io  under valgrind, service_io auto takes the service threads
 *               (io_uring would stop every thread: valgrind keeps its lock
 *               across an io_uring_enter that waits) and an explicit uring
 *               warns once, naming valgrind, and takes them too; file
 *               calls from ULTs work either way.
 */
#include "harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NSTREAMS 4 /* more than the machine's 2 cores */

/* ======================================================================= */
/* stacks                                                                   */
/* ======================================================================= */

#define FRAME_BYTES 128

static unsigned char pattern(int depth, int i)
{
    return (unsigned char)(depth * 31 + i * 7 + 1);
}

/* What descend(depth, ...) returns when every frame kept its bytes. */
static long expected_sum(int depth)
{
    long s = 0;
    for (int d = 0; d <= depth; d++)
        for (int i = 0; i < FRAME_BYTES; i++)
            s += pattern(d, i);
    return s;
}

/* Fills a frame, yields every `every` levels (every 0: never), goes
 * deeper, then checks the frame and adds it up. */
static long descend(int depth, int every, int *bad)
{
    volatile unsigned char buf[FRAME_BYTES];
    for (int i = 0; i < FRAME_BYTES; i++)
        buf[i] = pattern(depth, i);
    long below = 0;
    if (depth > 0) {
        if (every && depth % every == 0)
            CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        below = descend(depth - 1, every, bad);
    }
    long s = 0;
    for (int i = 0; i < FRAME_BYTES; i++) {
        if (buf[i] != pattern(depth, i))
            (*bad)++;
        s += buf[i];
    }
    return below + s;
}

typedef struct walk {
    int depth;
    int every;
    int bad;
    long sum;
} walk_t;

static void walk_fn(void *arg)
{
    walk_t *w = arg;
    w->sum = descend(w->depth, w->every, &w->bad);
}

/* Runs n walks of the given depth as ULTs spread over the streams, each
 * with attr (which may be NULL) or with its own stack from stacks[i]. The
 * main ULT walks too meanwhile, so the primary's scheduler runs the others
 * between its yields. */
static void run_walks(int n, int depth, const coexec_thread_attr_t *attr,
                      void **stacks, size_t stack_size)
{
    int nxs = 0;
    CH_ASSERT_OK_FATAL(coexec_xstream_get_num(&nxs));
    walk_t *w = calloc((size_t)n, sizeof *w);
    coexec_thread_t *t = calloc((size_t)n, sizeof *t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (int i = 0; i < n; i++) {
        w[i].depth = depth;
        w[i].every = 1 + i % 4;
        coexec_xstream_t xs;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(i % nxs, &xs));
        coexec_thread_attr_t a;
        const coexec_thread_attr_t *ap = attr;
        if (stacks) {
            CH_ASSERT_OK_FATAL(coexec_thread_attr_init(&a));
            a.stack = stacks[i];
            a.stack_size = stack_size;
            ap = &a;
        }
        CH_ASSERT_OK_FATAL(
            coexec_thread_create_on(xs, walk_fn, &w[i], ap,
                                    &t[i]));
    }
    int bad = 0;
    long own = descend(24, 3, &bad);
    CH_ASSERT_EQ(bad, 0);
    CH_ASSERT_EQ(own, expected_sum(24));
    for (int i = 0; i < n; i++) {
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
        CH_ASSERT_EQ(w[i].bad, 0);
        CH_ASSERT_EQ(w[i].sum, expected_sum(depth));
    }
    free(t);
    free(w);
}

/* The runtime's cached stacks (16 KiB by default) */
static void t_stacks_cached(void)
{
    ch_init(NSTREAMS);
    for (int round = 0; round < 3; round++)
        run_walks(24, 24, NULL, NULL, 0);
    ch_finalize();
}

/* Stacks mapped alone: another size, then a guard page below each */
static void t_stacks_mapped(void)
{
    ch_init(NSTREAMS);
    coexec_thread_attr_t a;
    CH_ASSERT_OK_FATAL(coexec_thread_attr_init(&a));
    a.stack_size = 96 * 1024;
    for (int round = 0; round < 3; round++)
        run_walks(16, 200, &a, NULL, 0);
    ch_finalize();

    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = NSTREAMS;
    cfg.guard_size = 64 * 1024; /* a larger guard than the default */
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    for (int round = 0; round < 3; round++)
        run_walks(16, 24, NULL, NULL, 0);
    ch_finalize();
}

/* User-given stacks: big ones from malloc (glibc maps them, among the
 * runtime's own mappings), small ones carved from one block; each used by
 * several ULTs in turn, then given back to malloc */
static void t_stacks_user(void)
{
    enum { NBIG = 6, NSMALL = 12, BIG = 256 * 1024, SMALL = 24 * 1024 };
    void *big[NBIG];
    for (int i = 0; i < NBIG; i++) {
        big[i] = aligned_alloc(64, BIG);
        CU_ASSERT_PTR_NOT_NULL_FATAL(big[i]);
    }
    char *block = aligned_alloc(64, (size_t)NSMALL * SMALL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(block);
    void *small[NSMALL];
    for (int i = 0; i < NSMALL; i++)
        small[i] = block + (size_t)i * SMALL;

    ch_init(NSTREAMS);
    for (int round = 0; round < 3; round++) {
        run_walks(NBIG, 600, NULL, big, BIG);
        run_walks(NSMALL, 40, NULL, small, SMALL);
    }
    ch_finalize();
    /* The memory is the program's again: use it as plain data. */
    for (int i = 0; i < NBIG; i++) {
        memset(big[i], 0x5a, BIG);
        CU_ASSERT_EQUAL(((unsigned char *)big[i])[BIG / 2], 0x5a);
        free(big[i]);
    }
    memset(block, 0xa5, (size_t)NSMALL * SMALL);
    CU_ASSERT_EQUAL((unsigned char)block[SMALL], 0xa5);
    free(block);
}

static const ch_test_t stacks_tests[] = {
    {"cached", t_stacks_cached},
    {"mapped", t_stacks_mapped},
    {"user", t_stacks_user},
    {NULL, NULL}};

/* ======================================================================= */
/* service_io                                                               */
/* ======================================================================= */

typedef struct fileio {
    char path[64];
    int ok;
} fileio_t;

/* Writes, reads back and checks a file through the wrappers (a ULT). */
static void fileio_fn(void *arg)
{
    fileio_t *f = arg;
    char out[256], in[256];
    for (size_t i = 0; i < sizeof out; i++)
        out[i] = (char)(i * 13 + 5);
    int fd = coexec_open(f->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CH_CHECK(fd >= 0);
    if (fd < 0)
        return;
    CH_CHECK_EQ(coexec_write(fd, out, sizeof out), (long)sizeof out);
    CH_CHECK_EQ(coexec_pwrite(fd, "xyz", 3, 100), 3);
    memset(in, 0, sizeof in);
    CH_CHECK_EQ(coexec_pread(fd, in, sizeof in, 0), (long)sizeof in);
    memcpy(out + 100, "xyz", 3);
    CH_CHECK(memcmp(in, out, sizeof in) == 0);
    CH_CHECK_EQ(coexec_close(fd), 0);
    CH_CHECK_EQ(coexec_unlink(f->path), 0);
    f->ok = 1;
}

/* Starts the runtime with service_io io (stderr captured into warn),
 * runs fileio_fn on a secondary stream, and returns the io_path. */
static const char *io_run(coexec_service_io_t io, char *warn, size_t wsize)
{
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = 2;
    cfg.service_io = io;
    ch_stderr_begin();
    int rc = coexec_init(&cfg);
    /* The service, and its ring or the warning, start on this first use. */
    coexec_service_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    int irc = rc == COEXEC_OK ? coexec_service_get_info(&info) : rc;
    ch_stderr_end(warn, wsize);
    CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
    CH_ASSERT_OK(irc);
    const char *path = info.io_path;
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);

    fileio_t f = {.ok = 0};
    snprintf(f.path, sizeof f.path, "/tmp/coexec-vg-%d", (int)getpid());
    coexec_xstream_t xs;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &xs));
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create_on(
        xs, fileio_fn, &f, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(f.ok, 1);
    ch_finalize();
    return path; /* a static string */
}

/* auto: the service threads under valgrind, silently */
static void t_io_auto(void)
{
    char warn[1024];
    const char *path = io_run(COEXEC_SERVICE_IO_AUTO, warn, sizeof warn);
    CH_ASSERT_EQ(ch_count_lines(warn, "service_io"), 0);
    if (ch_on_valgrind())
        CU_ASSERT_STRING_EQUAL(path, "threads");
}

/* uring: under valgrind, one warning naming it, and the service threads */
static void t_io_uring(void)
{
    char warn[1024];
    const char *path = io_run(COEXEC_SERVICE_IO_URING, warn, sizeof warn);
    if (ch_on_valgrind()) {
        CU_ASSERT_STRING_EQUAL(path, "threads");
        CH_ASSERT_EQ(ch_count_lines(warn, "service_io is uring"), 1);
        CH_ASSERT_EQ(ch_count_lines(warn, "valgrind"), 1);
        CH_ASSERT_EQ(ch_count_lines(warn, "COEXEC_ENOSYS"), 1);
    } else {
        /* Natively the ring runs where the kernel allows it; a fallback
         * says why, once. */
        CH_ASSERT_EQ(ch_count_lines(warn, "service_io is uring"),
                     strcmp(path, "threads") == 0 ? 1 : 0);
        CH_ASSERT_EQ(ch_count_lines(warn, "valgrind"), 0);
    }
}

static const ch_test_t io_tests[] = {
    {"auto", t_io_auto},
    {"uring", t_io_uring},
    {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"stacks", stacks_tests},
    {"service_io", io_tests},
    {NULL, NULL}};

int main(int argc, char **argv)
{
    return ch_main(argc, argv, suites);
}
