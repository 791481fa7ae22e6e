/*
 * tests/service/test_io.c: the io suite: the io_uring path of the file
 * calls (where the ring is, the fallback to the service threads, a pipe
 * does not stall the ring, a batch completes exactly once, finalize with
 * calls in flight)
 */
#include "service_test.h"

/* White-box: the ring's busy count and batch statistics (src/service). */
uint32_t coexec__ring_busy(void);
void coexec__ring_stats(uint64_t *batches, uint64_t *sqes);
extern int coexec__service_ring_refuse;

/* stderr into a temporary file while it is captured. */
typedef struct {
    FILE *f;
    int saved;
} capture_t;

static void capture_begin(capture_t *c)
{
    fflush(stderr);
    c->f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(c->f);
    c->saved = dup(2);
    CU_ASSERT_FATAL(c->saved >= 0);
    CU_ASSERT_FATAL(dup2(fileno(c->f), 2) == 2);
}

/* Ends the capture; returns the number of lines containing needle. */
static int capture_end(capture_t *c, const char *needle)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    rewind(c->f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, c->f))
        n += strstr(line, needle) != NULL;
    fclose(c->f);
    return n;
}

static void init_io(coexec_service_io_t io, int nxs, int threads, int max)
{
    g_io = io;
    svc_init(nxs, threads, max);
    g_io = COEXEC_SERVICE_IO_AUTO;
}

/* coexec_service_get_info and the printed configuration name the path */
static void t_io_info_path(void)
{
    int avail = uring_available();
    const char *ring = avail ? "io_uring" : "threads";
    static const struct {
        coexec_service_io_t io;
        int ring;
    } cases[] = {{COEXEC_SERVICE_IO_AUTO, 1},
                 {COEXEC_SERVICE_IO_URING, 1},
                 {COEXEC_SERVICE_IO_THREADS, 0}};
    for (size_t i = 0; i < 3; i++) {
        capture_t cap;
        capture_begin(&cap);
        init_io(cases[i].io, 2, 0, 0);
        /* The service (and its ring, or the warning) starts here. */
        coexec_service_info_t info = svc_info();
        int warned = capture_end(&cap, "service_io");
        const char *want = cases[i].ring ? ring : "threads";
        CU_ASSERT_PTR_NOT_NULL_FATAL(info.io_path);
        CU_ASSERT_STRING_EQUAL(info.io_path, want);
        /* only "uring" asked for and not had warns */
        CH_ASSERT_EQ(warned,
                     cases[i].io == COEXEC_SERVICE_IO_URING && !avail ? 1 : 0);
        FILE *f = tmpfile();
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CH_ASSERT_OK(coexec_print_config(f));
        rewind(f);
        char text[2048];
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
        char io_word[32];
        snprintf(io_word, sizeof io_word, "io=%s", want);
        CU_ASSERT_PTR_NOT_NULL(strstr(text, io_word));
        ch_finalize();
    }
}

/* A kernel that refuses io_uring: auto falls back silently, uring with
 * exactly one warning; file calls work either way */
static void t_io_fallback(void)
{
    char dir[64];
    tmpdir_make(dir);
    coexec__service_ring_refuse = 1;
    for (int k = 0; k < 2; k++) {
        coexec_service_io_t io =
            k ? COEXEC_SERVICE_IO_URING : COEXEC_SERVICE_IO_AUTO;
        capture_t cap;
        capture_begin(&cap);
        init_io(io, 2, 0, 0);
        /* The ring starts with the service, on first use. */
        coexec_service_info_t info = svc_info();
        int warned = capture_end(&cap, "service_io is uring");
        CH_ASSERT_EQ(warned, k ? 1 : 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(info.io_path);
        CU_ASSERT_STRING_EQUAL(info.io_path, "threads");
        make_subdirs(dir);
        fjob_t j = {.dir = dir, .i = k, .count = 2};
        CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(1), file_ult, &j));
        CH_ASSERT_EQ(atomic_load(&j.done), 1);
        remove_subdirs(dir);
        ch_finalize();
    }
    coexec__service_ring_refuse = 0;
    tmpdir_remove(dir);
}

/* ---- a read that never completes does not hold back the others ------ */

typedef struct {
    int fd;
    long w;
    atomic_int done;
} sock_writer_t;

static void sock_writer_ult(void *arg)
{
    sock_writer_t *w = arg;
    w->w = coexec_write(w->fd, "to-peer", 7);
    atomic_store(&w->done, 1);
}

static void t_io_pipe_does_not_stall(void)
{
    if (!uring_or_skip())
        return;
    char dir[64];
    tmpdir_make(dir);
    enum { NPIPES = 3 };
    int p[NPIPES][2], sv[2];
    for (int i = 0; i < NPIPES; i++)
        make_pipe(p[i]);
    CU_ASSERT_EQUAL_FATAL(
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    /* one service thread that may not grow: only the ring can keep file
     * I/O going while the reads wait */
    init_io(COEXEC_SERVICE_IO_URING, NSTREAMS, 1, 1);
    reader_t r[NPIPES + 1];
    coexec_thread_t tr[NPIPES + 1];
    memset(r, 0, sizeof r);
    for (int i = 0; i <= NPIPES; i++) {
        r[i].fd = i < NPIPES ? p[i][0] : sv[0];
        r[i].n = -999;
        ch_spawn_on(i % NSTREAMS, reader_ult, &r[i], &tr[i]);
    }
    CU_ASSERT_FATAL(CH_WAIT(coexec__ring_busy() >= NPIPES + 1));

    /* the same socket written while its read waits (another lane) */
    sock_writer_t sw = {.fd = sv[0], .w = -999};
    CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(2), sock_writer_ult, &sw));
    CH_ASSERT_EQ(sw.w, 7);
    char peer[8] = {0};
    CH_ASSERT_EQ(read(sv[1], peer, 7), 7);
    CU_ASSERT(memcmp(peer, "to-peer", 7) == 0);

    /* whole file jobs (ring and thread calls) complete meanwhile */
    make_subdirs(dir);
    (void)file_jobs_on_ults(dir, ch_iters(64, 8));
    CH_ASSERT_EQ(svc_info().threads, 1);
    /* nothing was written to them: the reads still wait */
    for (int i = 0; i <= NPIPES; i++)
        CH_ASSERT_EQ(atomic_load(&r[i].done), 0);
    for (int i = 0; i < NPIPES; i++)
        poke(p[i][1], (unsigned char)('a' + i));
    poke(sv[1], 'z');
    for (int i = 0; i <= NPIPES; i++)
        CH_ASSERT_OK(coexec_thread_free(&tr[i]));
    for (int i = 0; i <= NPIPES; i++) {
        CH_ASSERT_EQ(r[i].n, 1);
        CH_ASSERT_EQ(r[i].buf[0], i < NPIPES ? 'a' + i : 'z');
    }
    remove_subdirs(dir);
    ch_finalize();
    for (int i = 0; i < NPIPES; i++)
        close_pipe(p[i]);
    close(sv[0]);
    close(sv[1]);
    tmpdir_remove(dir);
}

/* ---- many requests at once: each completes exactly once -------------- */

#define B_CHUNK 512

typedef struct {
    int rfd, wfd;
    int idx;
    int rounds;
    long calls;
    long good;
} batch_t;

static unsigned char bpat(long off) { return (unsigned char)(off * 13 + 5); }

static void batch_ult(void *arg)
{
    batch_t *b = arg;
    unsigned char buf[B_CHUNK];
    for (int k = 0; k < b->rounds; k++) {
        off_t off = (off_t)((b->idx * 7 + k) % 64) * B_CHUNK;
        b->calls++;
        ssize_t got = coexec_pread(b->rfd, buf, B_CHUNK, off);
        bool ok = got == B_CHUNK;
        for (int i = 0; ok && i < B_CHUNK; i++)
            ok = buf[i] == bpat(off + i);
        memset(buf, (unsigned char)b->idx, sizeof buf);
        b->calls++;
        off_t woff = ((off_t)b->idx * b->rounds + k) * B_CHUNK;
        ok = ok && coexec_pwrite(b->wfd, buf, B_CHUNK, woff) == B_CHUNK;
        b->good += ok;
    }
}

static void t_io_batch_exactly_once(void)
{
    if (!uring_or_skip())
        return;
    char dir[64], rpath[128], wpath[128];
    tmpdir_make(dir);
    snprintf(rpath, sizeof rpath, "%s/r", dir);
    snprintf(wpath, sizeof wpath, "%s/w", dir);
    int rfd = open(rpath, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    int wfd = open(wpath, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    CU_ASSERT_FATAL(rfd >= 0 && wfd >= 0);
    unsigned char *data = malloc(64 * B_CHUNK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    for (long i = 0; i < 64 * B_CHUNK; i++)
        data[i] = bpat(i);
    CH_ASSERT_EQ(write(rfd, data, 64 * B_CHUNK), 64 * B_CHUNK);
    free(data);

    init_io(COEXEC_SERVICE_IO_URING, NSTREAMS, 1, 0);
    long n = ch_iters(512, 16);
    int rounds = (int)ch_iters(20, 4);
    batch_t *b = calloc((size_t)n, sizeof *b);
    coexec_thread_t *t = calloc((size_t)n, sizeof *t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    uint64_t bat0, sq0, bat1, sq1;
    coexec__ring_stats(&bat0, &sq0);
    uint64_t c0 = svc_completed();
    for (long i = 0; i < n; i++) {
        b[i] = (batch_t){.rfd = rfd, .wfd = wfd, .idx = (int)i,
                         .rounds = rounds};
        ch_spawn_on((int)(i % NSTREAMS), batch_ult, &b[i], &t[i]);
    }
    ch_free_threads(t, n);
    uint64_t c1 = svc_completed();
    coexec__ring_stats(&bat1, &sq1);
    long calls = 0, good = 0;
    for (long i = 0; i < n; i++) {
        calls += b[i].calls;
        good += b[i].good;
    }
    CH_ASSERT_EQ(calls, 2 * n * rounds);
    CH_ASSERT_EQ(good, n * rounds);
    /* every call completed once: no more, no fewer */
    CH_ASSERT_EQ(c1 - c0, (uint64_t)calls);
    CH_ASSERT_EQ(coexec__ring_busy(), 0);
    printf("\n    %ld calls in %llu submits (%.1f per submit)\n", calls,
           (unsigned long long)(bat1 - bat0),
           bat1 > bat0 ? (double)(sq1 - sq0) / (double)(bat1 - bat0) : 0.0);
    ch_finalize();
    /* what the pwrites left, byte for byte */
    unsigned char buf[B_CHUNK];
    for (long i = 0; i < n; i++)
        for (int k = 0; k < rounds; k++) {
            off_t woff = ((off_t)i * rounds + k) * B_CHUNK;
            CH_ASSERT_EQ_FATAL(pread(wfd, buf, B_CHUNK, woff), B_CHUNK);
            for (int x = 0; x < B_CHUNK; x++)
                if (buf[x] != (unsigned char)i) {
                    CH_ASSERT_EQ_FATAL(buf[x], (unsigned char)i);
                }
        }
    free(b);
    free(t);
    close(rfd);
    close(wfd);
    tmpdir_remove(dir);
}

/* ---- finalize while ring calls are in the kernel --------------------- */

typedef struct {
    int fd;
    int rounds;
    long ok, canceled, other;
    atomic_int done;
} looper_io_t;

static void looper_io_ult(void *arg)
{
    looper_io_t *l = arg;
    unsigned char buf[64];
    for (int k = 0; k < l->rounds; k++) {
        ssize_t r = coexec_pread(l->fd, buf, sizeof buf, 0);
        if (r == (ssize_t)sizeof buf)
            l->ok++;
        else if (r == COEXEC_ECANCELED)
            l->canceled++;
        else
            l->other++;
        if (coexec_yield() != COEXEC_OK)
            break;
    }
    atomic_store(&l->done, 1);
}

static void t_io_finalize_in_flight(void)
{
    if (!uring_or_skip())
        return;
    enum { NREAD = 4, NLOOP = 4 };
    int p[NREAD][2];
    for (int i = 0; i < NREAD; i++)
        make_pipe(p[i]);
    char dir[64], path[128];
    tmpdir_make(dir);
    snprintf(path, sizeof path, "%s/f", dir);
    int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    unsigned char z[64] = {0};
    CH_ASSERT_EQ(write(fd, z, sizeof z), (long)sizeof z);

    init_io(COEXEC_SERVICE_IO_URING, NSTREAMS, 1, 1);
    static reader_t r[NREAD];
    memset(r, 0, sizeof r);
    for (int i = 0; i < NREAD; i++) {
        r[i].fd = p[i][0];
        r[i].n = -999;
        CH_ASSERT_OK(coexec_thread_create_on(ch_xstream(i % NSTREAMS),
                                             reader_ult, &r[i], NULL, NULL));
    }
    /* the reads are in the kernel before anything else is queued (a read
     * submitted once finalize began would run directly, on its stream) */
    CU_ASSERT_FATAL(CH_WAIT(coexec__ring_busy() >= NREAD));
    static looper_io_t l[NLOOP];
    memset(l, 0, sizeof l);
    for (int i = 0; i < NLOOP; i++) {
        l[i].fd = fd;
        l[i].rounds = (int)ch_iters(2000, 50);
        CH_ASSERT_OK(coexec_thread_create_on(ch_xstream(i % NSTREAMS),
                                             looper_io_ult, &l[i], NULL,
                                             NULL));
    }

    capture_t cap;
    capture_begin(&cap);
    int rc = coexec_finalize();
    int lost = capture_end(&cap, "could not be cancelled");
    CH_ASSERT_RC(rc, COEXEC_OK);
    /* pipe reads are cancellable: none was abandoned */
    CH_ASSERT_EQ(lost, 0);
    for (int i = 0; i < NREAD; i++) {
        CH_ASSERT_EQ(atomic_load(&r[i].done), 1);
        CH_ASSERT_EQ(r[i].n, COEXEC_ECANCELED);
    }
    for (int i = 0; i < NLOOP; i++) {
        CH_ASSERT_EQ(atomic_load(&l[i].done), 1);
        CH_ASSERT_EQ(l[i].other, 0);
        CH_ASSERT_EQ(l[i].ok + l[i].canceled, l[i].rounds);
    }
    /* a new runtime has a working ring */
    init_io(COEXEC_SERVICE_IO_URING, 2, 0, 0);
    CU_ASSERT_STRING_EQUAL(svc_info().io_path, "io_uring");
    poke(p[0][1], 'q');
    reader_t again = {.fd = p[0][0], .n = -999};
    CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(1), reader_ult, &again));
    CH_ASSERT_EQ(again.n, 1);
    CH_ASSERT_EQ(again.buf[0], 'q');
    ch_finalize();
    for (int i = 0; i < NREAD; i++)
        close_pipe(p[i]);
    close(fd);
    tmpdir_remove(dir);
}

/* ======================================================================= */

const ch_test_t service_io_tests[] = {
    {"info_path", t_io_info_path},
    {"fallback", t_io_fallback},
    {"pipe_does_not_stall", t_io_pipe_does_not_stall},
    {"batch_exactly_once", t_io_batch_exactly_once},
    {"finalize_in_flight", t_io_finalize_in_flight},
    {NULL, NULL}};
