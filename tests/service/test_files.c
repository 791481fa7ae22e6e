/*
 * tests/service/test_files.c: the file wrappers. The files suite: ULTs on 4
 * streams write, read back byte for byte and remove a file each through
 * every file wrapper; the same job from an external thread and without the
 * runtime runs directly. The errors suite: -errno results (EBADF, ENOENT,
 * EEXIST, ESPIPE, EINVAL) from a ULT, the main ULT, a tasklet, an external
 * thread and without the runtime; direct calls leave errno alone
 */
#include "service_test.h"

/* ======================================================================= */
/* files                                                                    */
/* ======================================================================= */

#define NDIRS 8
#define F_A 700
#define F_C1 300
#define F_C2 211
#define F_B 517
#define F_DATA (F_A + F_C1 + F_C2 + F_B)
#define F_EXTRA 100
#define F_SIZE (F_DATA + F_EXTRA)

static unsigned char fpat(int i, size_t k)
{
    return (unsigned char)((unsigned)i * 131u + (unsigned)k * 7u +
                           (unsigned)(k >> 8) + 1u);
}

/* Counts a wrapper call; evaluates to its result as a long long. */
#define CALL(n, expr) ((n)++, (long long)(expr))

/*
 * Writes file i of dir through every write-side wrapper, renames it,
 * reads it back through every read-side wrapper and compares byte for
 * byte, then removes it. Returns the number of wrapper calls made.
 */
static long file_job(const char *dir, int i)
{
    long n = 0;
    char tmp[128], fin[128];
    snprintf(tmp, sizeof tmp, "%s/d%d/f%d.tmp", dir, i % NDIRS, i);
    snprintf(fin, sizeof fin, "%s/d%d/f%d", dir, i % NDIRS, i);
    unsigned char *w = malloc(F_SIZE), *r = malloc(F_SIZE + 16);
    if (!w || !r) {
        ch_fail_at(__FILE__, __LINE__, "malloc");
        free(w);
        free(r);
        return n;
    }
    for (size_t k = 0; k < F_DATA; k++)
        w[k] = fpat(i, k);
    memset(w + F_DATA, 0, F_EXTRA);

    int fd = (int)CALL(n, coexec_open(tmp, O_CREAT | O_EXCL | O_RDWR |
                                               O_CLOEXEC, 0600));
    if (fd < 0) {
        ch_fail_at(__FILE__, __LINE__, "coexec_open(%s) = %d", tmp, fd);
        goto out;
    }
    CH_CHECK_EQ(CALL(n, coexec_write(fd, w, F_A)), F_A);
    struct iovec iv[2] = {{w + F_A, F_C1}, {w + F_A + F_C1, F_C2}};
    CH_CHECK_EQ(CALL(n, coexec_writev(fd, iv, 2)), F_C1 + F_C2);
    off_t boff = F_A + F_C1 + F_C2;
    CH_CHECK_EQ(CALL(n, coexec_pwrite(fd, w + boff, F_B, boff)), F_B);
    CH_CHECK_EQ(CALL(n, coexec_fsync(fd)), 0);
    CH_CHECK_EQ(CALL(n, coexec_ftruncate(fd, F_SIZE)), 0);
    CH_CHECK_EQ(CALL(n, coexec_fdatasync(fd)), 0);
    CH_CHECK_EQ(CALL(n, coexec_close(fd)), 0);
    CH_CHECK_EQ(CALL(n, coexec_rename(tmp, fin)), 0);
    struct stat st;
    CH_CHECK_EQ(CALL(n, coexec_stat(tmp, &st)), -ENOENT);

    fd = (int)CALL(n, coexec_open(fin, O_RDONLY | O_CLOEXEC, 0));
    if (fd < 0) {
        ch_fail_at(__FILE__, __LINE__, "coexec_open(%s) = %d", fin, fd);
        goto out;
    }
    memset(&st, 0, sizeof st);
    CH_CHECK_EQ(CALL(n, coexec_fstat(fd, &st)), 0);
    CH_CHECK_EQ(st.st_size, F_SIZE);
    CH_CHECK(S_ISREG(st.st_mode));
    memset(&st, 0, sizeof st);
    CH_CHECK_EQ(CALL(n, coexec_stat(fin, &st)), 0);
    CH_CHECK_EQ(st.st_size, F_SIZE);
    CH_CHECK_EQ(st.st_mode & 0777, 0600);

    memset(r, 0xEE, F_SIZE + 16);
    CH_CHECK_EQ(CALL(n, coexec_pread(fd, r + boff, F_B, boff)), F_B);
    /* pread left the offset at 0 */
    CH_CHECK_EQ(CALL(n, coexec_read(fd, r, F_A)), F_A);
    struct iovec rv[2] = {{r + F_A, F_C1}, {r + F_A + F_C1, F_C2}};
    CH_CHECK_EQ(CALL(n, coexec_readv(fd, rv, 2)), F_C1 + F_C2);
    CH_CHECK_EQ(CALL(n, coexec_pread(fd, r + F_DATA, F_EXTRA + 16, F_DATA)),
                F_EXTRA);
    /* the offset is at boff: the rest of the file, then end of file */
    unsigned char *tail = malloc(F_B + F_EXTRA + 16);
    if (tail) {
        CH_CHECK_EQ(CALL(n, coexec_read(fd, tail, F_B + F_EXTRA + 16)),
                    F_B + F_EXTRA);
        CH_CHECK(memcmp(tail, w + boff, F_B + F_EXTRA) == 0);
        CH_CHECK_EQ(CALL(n, coexec_read(fd, tail, 16)), 0);
        free(tail);
    }
    CH_CHECK_EQ(CALL(n, coexec_close(fd)), 0);
    for (size_t k = 0; k < F_SIZE; k++)
        if (r[k] != w[k]) {
            ch_fail_at(__FILE__, __LINE__,
                       "file %d: byte %zu is 0x%02x, expected 0x%02x", i, k,
                       r[k], w[k]);
            break;
        }
    CH_CHECK_EQ(r[F_SIZE], 0xEE);

    CH_CHECK_EQ(CALL(n, coexec_unlink(fin)), 0);
    CH_CHECK_EQ(CALL(n, coexec_stat(fin, &st)), -ENOENT);
    CH_CHECK_EQ(CALL(n, coexec_unlink(fin)), -ENOENT);
out:
    free(w);
    free(r);
    return n;
}

void file_ult(void *arg)
{
    fjob_t *j = arg;
    for (int k = 0; k < j->count; k++)
        j->calls += file_job(j->dir, j->i + k);
    atomic_store(&j->done, 1);
}

void make_subdirs(const char *dir)
{
    char d[128];
    for (int k = 0; k < NDIRS; k++) {
        snprintf(d, sizeof d, "%s/d%d", dir, k);
        CH_CHECK_EQ(coexec_mkdir(d, 0700), 0);
        CH_CHECK_EQ(coexec_mkdir(d, 0700), -EEXIST);
        struct stat st;
        CH_CHECK_EQ(coexec_stat(d, &st), 0);
        CH_CHECK(S_ISDIR(st.st_mode));
        CH_CHECK_EQ(st.st_mode & 0777, 0700);
    }
}

void remove_subdirs(const char *dir)
{
    char d[128];
    for (int k = 0; k < NDIRS; k++) {
        snprintf(d, sizeof d, "%s/d%d", dir, k);
        /* empty: every job removed its file */
        CH_CHECK_EQ(rmdir(d), 0);
    }
}

/* n ULTs dealt over the streams run one file job each; returns the
 * wrapper calls they made. */
long file_jobs_on_ults(const char *dir, long n)
{
    fjob_t *j = calloc((size_t)n, sizeof *j);
    coexec_thread_t *t = calloc((size_t)n, sizeof *t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    for (long i = 0; i < n; i++) {
        j[i].dir = dir;
        j[i].i = (int)i;
        j[i].count = 1;
        ch_spawn_on((int)(i % NSTREAMS), file_ult, &j[i], &t[i]);
    }
    ch_free_threads(t, n);
    long calls = 0, done = 0;
    for (long i = 0; i < n; i++) {
        calls += j[i].calls;
        done += atomic_load(&j[i].done);
    }
    CH_ASSERT_EQ(done, n);
    CU_ASSERT(calls >= 23 * n);
    free(j);
    free(t);
    return calls;
}

static void files_ults(const char *want_path)
{
    char dir[64];
    tmpdir_make(dir);
    svc_init(NSTREAMS, 0, 0);
    coexec_service_info_t info = svc_info();
    CU_ASSERT_PTR_NOT_NULL_FATAL(info.io_path);
    CU_ASSERT_STRING_EQUAL(info.io_path, want_path);
    uint64_t c0 = svc_completed();
    make_subdirs(dir);
    /* the main ULT's mkdir/stat calls went through the service */
    CU_ASSERT(CH_WAIT(svc_completed() - c0 >= 3 * NDIRS));

    c0 = svc_completed();
    long calls = file_jobs_on_ults(dir, ch_iters(1000, 8));
    /* every one of them was offloaded */
    CU_ASSERT(CH_WAIT(svc_completed() - c0 >= (uint64_t)calls));
    remove_subdirs(dir);
    ch_finalize();
    tmpdir_remove(dir);
}

static void t_files_ults_threads(void)
{
    g_io = COEXEC_SERVICE_IO_THREADS;
    files_ults("threads");
    g_io = COEXEC_SERVICE_IO_AUTO;
}

static void t_files_ults_uring(void)
{
    if (!uring_or_skip())
        return;
    g_io = COEXEC_SERVICE_IO_URING;
    files_ults("io_uring");
    g_io = COEXEC_SERVICE_IO_AUTO;
}

static void ext_files(void *arg)
{
    fjob_t *j = arg;
    for (int k = 0; k < j->count; k++)
        j->calls += file_job(j->dir, j->i + k);
    atomic_store(&j->done, 1);
}

static void ext_mkdirs(void *arg) { make_subdirs(arg); }

static void t_files_external_direct(void)
{
    char dir[64];
    tmpdir_make(dir);
    svc_init(NSTREAMS, 0, 0);
    /* nothing else runs: calls from external threads must not reach the
     * service, whose completed count therefore stays where it is */
    uint64_t c0 = svc_completed();
    ch_run_external(ext_mkdirs, dir);
    fjob_t j[2] = {{.dir = dir, .i = 0, .count = (int)ch_iters(16, 2)},
                   {.dir = dir, .i = 1000, .count = (int)ch_iters(16, 2)}};
    ch_ext_t e[2];
    ch_ext_start(&e[0], ext_files, &j[0]);
    ch_ext_start(&e[1], ext_files, &j[1]);
    ch_ext_join(&e[0]);
    ch_ext_join(&e[1]);
    CH_ASSERT_EQ(atomic_load(&j[0].done), 1);
    CH_ASSERT_EQ(atomic_load(&j[1].done), 1);
    CU_ASSERT(j[0].calls >= 23L * j[0].count);
    uint64_t c1 = svc_completed();
    CH_ASSERT_EQ(c1, c0);
    /* from a tasklet, too */
    fjob_t jt = {.dir = dir, .i = 2000, .count = 2};
    CH_ASSERT_OK(ch_run_tasklet_in(ch_main_pool(1), ext_files, &jt));
    CH_ASSERT_EQ(atomic_load(&jt.done), 1);
    CH_ASSERT_EQ(svc_completed(), c0);
    remove_subdirs(dir);
    ch_finalize();
    tmpdir_remove(dir);
}

static void t_files_without_runtime(void)
{
    char dir[64];
    tmpdir_make(dir);
    CH_ASSERT_EQ(coexec_initialized(), 0);
    make_subdirs(dir);
    fjob_t j = {.dir = dir, .i = 7, .count = 3};
    ext_files(&j);
    CH_ASSERT_EQ(atomic_load(&j.done), 1);
    CU_ASSERT(j.calls >= 23L * 3);
    remove_subdirs(dir);
    tmpdir_remove(dir);
}

/* ======================================================================= */
/* errors                                                                   */
/* ======================================================================= */

typedef struct {
    const char *dir;
    bool check_errno;
    atomic_int ran;
} errjob_t;

static void errors_job(void *arg)
{
    errjob_t *j = arg;
    char missing[128], missing2[128], file[128], deep[128];
    snprintf(missing, sizeof missing, "%s/missing", j->dir);
    snprintf(missing2, sizeof missing2, "%s/missing2", j->dir);
    snprintf(deep, sizeof deep, "%s/missing/sub", j->dir);
    snprintf(file, sizeof file, "%s/ro-%p", j->dir, (void *)j);
    struct stat st;
    unsigned char buf[8];
    struct iovec iv = {buf, sizeof buf};

    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        ch_fail_at(__FILE__, __LINE__, "pipe2");
        return;
    }
    int closed_r = p[0], closed_w = p[1];
    close(p[0]);
    close(p[1]);

    if (j->check_errno) /* in a ULT, errno is its OS thread's */
        errno = 4242;
    CH_CHECK_EQ(coexec_read(closed_r, buf, 1), -EBADF);
    CH_CHECK_EQ(coexec_write(closed_w, "x", 1), -EBADF);
    CH_CHECK_EQ(coexec_open(missing, O_RDONLY, 0), -ENOENT);
    CH_CHECK_EQ(coexec_unlink(missing), -ENOENT);
    CH_CHECK_EQ(coexec_mkdir(j->dir, 0700), -EEXIST);
    CH_CHECK_EQ(coexec_mkdir(deep, 0700), -ENOENT);
    CH_CHECK_EQ(coexec_stat(missing, &st), -ENOENT);
    CH_CHECK_EQ(coexec_rename(missing, missing2), -ENOENT);
    CH_CHECK_EQ(coexec_close(-1), -EBADF);
    CH_CHECK_EQ(coexec_fstat(-1, &st), -EBADF);
    CH_CHECK_EQ(coexec_fsync(-1), -EBADF);
    CH_CHECK_EQ(coexec_fdatasync(-1), -EBADF);
    CH_CHECK_EQ(coexec_ftruncate(-1, 0), -EBADF);
    CH_CHECK_EQ(coexec_pread(-1, buf, 1, 0), -EBADF);
    CH_CHECK_EQ(coexec_pwrite(-1, "x", 1, 0), -EBADF);
    CH_CHECK_EQ(coexec_readv(-1, &iv, 1), -EBADF);
    CH_CHECK_EQ(coexec_writev(-1, &iv, 1), -EBADF);
    CH_CHECK_EQ(coexec_connect(-1, NULL, 0), -EBADF);
    CH_CHECK_EQ(coexec_accept(-1, NULL, NULL), -EBADF);
    if (j->check_errno)
        CH_CHECK_EQ(errno, 4242);

    /* a read-only file: write is EBADF, open O_EXCL is EEXIST */
    int fd = coexec_open(file, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    CH_CHECK(fd >= 0);
    if (fd >= 0)
        CH_CHECK_EQ(coexec_close(fd), 0);
    CH_CHECK_EQ(coexec_open(file, O_CREAT | O_EXCL | O_RDWR, 0600), -EEXIST);
    fd = coexec_open(file, O_RDONLY | O_CLOEXEC, 0);
    CH_CHECK(fd >= 0);
    if (fd >= 0) {
        if (j->check_errno) /* in a ULT, errno is its OS thread's */
            errno = 4242;
        CH_CHECK_EQ(coexec_write(fd, "x", 1), -EBADF);
        CH_CHECK_EQ(coexec_pwrite(fd, "x", 1, 0), -EBADF);
        CH_CHECK_EQ(coexec_ftruncate(fd, 10), -EINVAL);
        if (j->check_errno)
            CH_CHECK_EQ(errno, 4242);
        CH_CHECK_EQ(coexec_close(fd), 0);
    }
    CH_CHECK_EQ(coexec_unlink(file), 0);

    /* pipes: no seeking, no truncating */
    if (pipe2(p, O_CLOEXEC) == 0) {
        if (j->check_errno) /* in a ULT, errno is its OS thread's */
            errno = 4242;
        CH_CHECK_EQ(coexec_pread(p[0], buf, 1, 0), -ESPIPE);
        CH_CHECK_EQ(coexec_pwrite(p[1], "x", 1, 0), -ESPIPE);
        CH_CHECK_EQ(coexec_ftruncate(p[1], 0), -EINVAL);
        if (j->check_errno)
            CH_CHECK_EQ(errno, 4242);
        close(p[0]);
        close(p[1]);
    }
    atomic_fetch_add(&j->ran, 1);
}

static void errors_tasklet(void *arg) { errors_job(arg); }

static void t_errors_everywhere(void)
{
    char dir[64];
    tmpdir_make(dir);
    /* without the runtime: direct calls */
    errjob_t j = {.dir = dir, .check_errno = true};
    errors_job(&j);
    CH_ASSERT_EQ(atomic_load(&j.ran), 1);

    svc_init(NSTREAMS, 0, 0);
    /* offloaded: from the main ULT and ULTs on every stream (errno is not
     * checked there: a ULT may resume on another OS thread) */
    uint64_t c0 = svc_completed();
    j.check_errno = false;
    errors_job(&j);
    CU_ASSERT(CH_WAIT(svc_completed() - c0 >= 20));
    for (int r = 0; r < NSTREAMS; r++)
        CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(r), errors_job, &j));
    CH_ASSERT_EQ(atomic_load(&j.ran), 2 + NSTREAMS);

    /* direct: an external thread and a tasklet leave errno alone */
    j.check_errno = true;
    ch_run_external(errors_job, &j);
    CH_ASSERT_OK(ch_run_tasklet_in(ch_main_pool(1), errors_tasklet, &j));
    CH_ASSERT_EQ(atomic_load(&j.ran), 4 + NSTREAMS);
    ch_finalize();
    tmpdir_remove(dir);
}

/* the same through the service threads only */
static void t_errors_everywhere_threads(void)
{
    g_io = COEXEC_SERVICE_IO_THREADS;
    t_errors_everywhere();
    g_io = COEXEC_SERVICE_IO_AUTO;
}

/* an offloaded function's -errno result is not turned into anything else */
static intptr_t errno_fn(void *arg)
{
    (void)arg;
    errno = 0;
    if (close(-1) != 0)
        return -errno;
    return 0;
}

static void t_errors_offload_result(void)
{
    svc_init(2, 0, 0);
    intptr_t ret = 0;
    CH_ASSERT_OK(coexec_offload(errno_fn, NULL, &ret));
    CH_ASSERT_EQ(ret, -EBADF);
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t service_files_tests[] = {
    {"ults_uring", t_files_ults_uring},
    {"ults_threads", t_files_ults_threads},
    {"external_direct", t_files_external_direct},
    {"without_runtime", t_files_without_runtime},
    {NULL, NULL}};
const ch_test_t service_errors_tests[] = {
    {"everywhere", t_errors_everywhere},
    {"everywhere_threads", t_errors_everywhere_threads},
    {"offload_result", t_errors_offload_result},
    {NULL, NULL}};
