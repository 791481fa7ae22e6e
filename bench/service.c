/*
 * bench/service.c: the service stream (coexec/service.h): one offloaded
 * system call at a time, many in flight, and file reads through the
 * offloaded POSIX wrappers against plain pread from pthreads.
 *
 * Placement: the compute streams take the process's first CPUs and the
 * service stream the next one, its own (service_cpus names it,
 * service_threads = 1), as docs/BENCHMARKS.md puts it for
 * offload_roundtrip_2es: xstream 0 on CPU 0, the service stream on CPU 1.
 * Every benchmark checks that placement through coexec_service_get_info
 * and that the offloaded calls really ran on the service CPU. Other limits
 * (service_max_threads, service_spin_us, COEXEC_* variables) are the
 * library's defaults; the number of service threads seen at the end of the
 * run goes to the setup.
 *
 * file_read_throughput runs the library's default file I/O path (io_uring
 * where it can be had); its _uring and _threads variants and the two
 * pread_roundtrip benchmarks pick a path through service_io, so both are
 * compared in one run (the _uring ones print NA where io_uring cannot be
 * had). The offload benchmarks run user functions, which always take the
 * service threads; their setup line names the file I/O path all the same.
 *
 * The file set of file_read_throughput and its pthread peer (64 files of
 * 1 MiB in $TMPDIR or /tmp) is written and synced once per process, by the
 * first of the two that runs, and removed at exit; the untimed warm-ups
 * read it once more, so the timed reps read from a warm page cache.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <coexec.h>
#include <coexec/service.h>

#include "bench.h"

static void note_rc(atomic_int *slot, int rc)
{
    int ok = COEXEC_OK;
    atomic_compare_exchange_strong(slot, &ok, rc);
}

/* ---- the runtime: compute streams, then the service stream's CPU ----------- */

/* Compute streams of the many-calls benchmarks: 2 when a third CPU is left
 * for the service stream, else 1. */
static int svc_compute_streams(void) { return bench_ncpus >= 3 ? 2 : 1; }

static intptr_t off_cpu(void *arg)
{
    (void)arg;
    return sched_getcpu();
}

/*
 * Starts the runtime with nxs compute streams on the first CPUs and one
 * service thread on CPU bench_cpus[nxs], file I/O by path io; checks the
 * placement with one offloaded call, and that io_uring runs when io asks
 * for it. Returns 0, or -1 after bench_fail (runtime stopped).
 */
static int svc_start_io(bench_run_t *r, int nxs, coexec_pool_t *main_pool,
                        coexec_service_io_t io)
{
    if (bench_ncpus < nxs + 1)
        return bench_fail(r, "needs %d CPUs (compute + service), the process "
                             "may use %d",
                          nxs + 1, bench_ncpus);
    coexec_config_t cfg;
    int rc = coexec_config_init(&cfg);
    if (rc != COEXEC_OK)
        return bench_fail(r, "coexec_config_init: %s", coexec_err_name(rc));
    cfg.num_xstreams = nxs;
    cfg.service_threads = 1;
    cfg.service_io = io;
    int svc_cpu = bench_cpus[nxs];
    snprintf(cfg.service_cpus, sizeof cfg.service_cpus, "%d", svc_cpu);
    if (bench_rt_start_cfg(r, &cfg, main_pool) != 0)
        return -1;

    intptr_t where = -1;
    coexec_service_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    CK(coexec_offload(off_cpu, NULL, &where));
    CK(coexec_service_get_info(&info));
    if (where != svc_cpu) {
        bench_fail(r, "an offloaded call ran on CPU %ld, not the service "
                      "CPU %d",
                   (long)where, svc_cpu);
        goto out;
    }
    if (io == COEXEC_SERVICE_IO_URING &&
        (!info.io_path || strcmp(info.io_path, "io_uring") != 0)) {
        bench_fail(r, "io_uring is unavailable here (built without liburing, "
                      "or the kernel refuses it)");
        goto out;
    }
    if (info.cpu != svc_cpu || info.shares_cpu) {
        bench_fail(r, "service stream on CPU %d (shares a compute CPU: %d), "
                      "asked for CPU %d alone",
                   info.cpu, info.shares_cpu, svc_cpu);
        goto out;
    }
    {
        char text[160];
        snprintf(text, sizeof text,
                 "[service stream: service_cpus \"%s\", service_threads 1, "
                 "%d thread(s) at start, I/O path \"%s\"]",
                 cfg.service_cpus, info.threads,
                 info.io_path ? info.io_path : "?");
        bench_append_setup(r, text);
    }
    return 0;
out:
    (void)bench_rt_stop(r);
    return -1;
}

static int svc_start(bench_run_t *r, int nxs, coexec_pool_t *main_pool)
{
    return svc_start_io(r, nxs, main_pool, COEXEC_SERVICE_IO_AUTO);
}

/* Notes the service threads left at the end, then finalizes. */
static void svc_stop(bench_run_t *r)
{
    coexec_service_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    if (coexec_service_get_info(&info) == COEXEC_OK) {
        char text[128];
        snprintf(text, sizeof text,
                 "[at the end: %d service thread(s), %llu requests completed]",
                 info.threads, (unsigned long long)info.completed);
        bench_append_setup(r, text);
    }
    if (bench_rt_stop(r) != 0)
        r->nsamples = 0;
}

/* ---- offload_roundtrip_2es ---------------------------------------------------- */

#define RT_CALLS 100000

static intptr_t off_getppid(void *arg)
{
    (void)arg;
    return (intptr_t)syscall(SYS_getppid);
}

static int bench_offload_roundtrip_2es(bench_run_t *r)
{
    coexec_pool_t pool;
    static double direct[BENCH_MAX_SAMPLES]; /* large: off the stack */
    int ndirect = 0;
    intptr_t want = (intptr_t)getppid(), bad = 0;
    if (svc_start(r, 1, &pool) != 0)
        return -1;
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < RT_CALLS; i++) {
            intptr_t ret = -1;
            CK(coexec_offload(off_getppid, NULL, &ret));
            bad |= ret ^ want;
        }
        uint64_t t1 = bench_now_ns();
        /* syscall_direct, on the same ULT in the same rep: the reference
         * under the same conditions of the machine. */
        for (int i = 0; i < RT_CALLS; i++)
            bad |= (intptr_t)syscall(SYS_getppid) ^ want;
        uint64_t t2 = bench_now_ns();
        if (rep >= r->warmups) {
            bench_sample(r, (double)(t1 - t0) / RT_CALLS);
            if (ndirect < BENCH_MAX_SAMPLES)
                direct[ndirect++] = (double)(t2 - t1) / RT_CALLS;
        }
    }
    if (bad) {
        bench_fail(r, "an offloaded getppid returned a wrong value");
        goto out;
    }
    {
        int rank = -1;
        CK(coexec_xstream_self_rank(&rank));
        if (rank != 0) {
            bench_fail(r, "the main ULT left xstream 0");
            goto out;
        }
    }
    bench_append_setup(r, "main ULT on xs0: coexec_offload(syscall(SYS_getppid)) "
                          "and wait, 100,000 calls per rep; then 100,000 "
                          "direct calls (syscall_direct, same rep)");
    if (ndirect) {
        double d = bench_median(direct, ndirect);
        int len = snprintf(r->reference, sizeof r->reference,
                           "syscall_direct %.1f ns (same reps, same ULT)", d);
        if (bench_floor_ns > 0)
            snprintf(r->reference + len, sizeof r->reference - (size_t)len,
                     "; xes_spin_pingpong %.1f ns; floor syscall + 2 "
                     "cross-CPU trips = %.0f ns",
                     bench_floor_ns, d + 2 * bench_floor_ns);
    }
out:
    svc_stop(r);
    return r->error[0] ? -1 : 0;
}

/* ---- offload_throughput_64 ------------------------------------------------------ */

#define TP_ULTS 64
#define TP_CALLS 2000 /* per ULT per rep */

static struct {
    atomic_int rc;
    atomic_long bad;
    intptr_t want;
} tp;

static void tp_caller(void *arg)
{
    (void)arg;
    long bad = 0;
    for (int i = 0; i < TP_CALLS; i++) {
        intptr_t ret = -1;
        int rc = coexec_offload(off_getppid, NULL, &ret);
        if (BENCH_UNLIKELY(rc != COEXEC_OK)) {
            note_rc(&tp.rc, rc);
            return;
        }
        bad += ret != tp.want;
    }
    if (bad)
        atomic_fetch_add(&tp.bad, bad);
}

static int bench_offload_throughput_64(bench_run_t *r)
{
    coexec_pool_t pool;
    coexec_thread_t t[TP_ULTS];
    coexec_xstream_t xs[2];
    int nxs = svc_compute_streams();
    memset(t, 0, sizeof t);
    memset(&tp, 0, sizeof tp);
    tp.want = (intptr_t)getppid();
    if (svc_start(r, nxs, &pool) != 0)
        return -1;
    for (int k = 0; k < nxs; k++)
        CK(coexec_xstream_by_rank(k, &xs[k]));
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < TP_ULTS; i++)
            CK(coexec_thread_create_on(xs[i % nxs], tp_caller, NULL, NULL,
                                       &t[i]));
        for (int i = 0; i < TP_ULTS; i++)
            CK(coexec_thread_free(&t[i]));
        uint64_t t1 = bench_now_ns();
        int rc = atomic_load(&tp.rc);
        if (rc != COEXEC_OK) {
            bench_fail(r, "caller ULT: coexec_offload: %s (%s)",
                       coexec_err_name(rc), coexec_strerror(rc));
            goto out;
        }
        if (atomic_load(&tp.bad)) {
            bench_fail(r, "%ld offloaded getppid calls returned a wrong value",
                       atomic_load(&tp.bad));
            goto out;
        }
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / ((double)TP_ULTS * TP_CALLS));
    }
    {
        char text[256];
        snprintf(text, sizeof text,
                 "64 ULTs dealt over %d compute stream(s), each 2,000 "
                 "coexec_offload(getppid) back to back; from the first "
                 "create to the last join, per call",
                 nxs);
        bench_append_setup(r, text);
        double *s = malloc(sizeof(double) * (size_t)r->nsamples);
        if (s && r->nsamples) {
            memcpy(s, r->samples, sizeof(double) * (size_t)r->nsamples);
            snprintf(r->reference, sizeof r->reference,
                     "%.2f M calls/s at the median",
                     1e3 / bench_median(s, r->nsamples));
        }
        free(s);
    }
out:
    for (int i = 0; i < TP_ULTS; i++)
        if (t[i].p) {
            int rc = coexec_thread_free(&t[i]);
            if (rc != COEXEC_OK)
                bench_fail(r, "coexec_thread_free: %s", coexec_err_name(rc));
        }
    svc_stop(r);
    return bench_finish(r);
}

/* ---- the file set ---------------------------------------------------------------- */

#define FS_FILES 64
#define FS_FILE_SIZE (1u << 20)
#define FS_CHUNK (128u * 1024) /* bytes per pread */
#define FS_TOTAL ((double)FS_FILES * FS_FILE_SIZE)

static char fs_dir[512];
static int fs_ready; /* 1: written and synced; -1: failed */

/* The 8-byte word at offset off (a multiple of 8) of file i. */
static uint64_t fs_word(int i, uint64_t off)
{
    return ((uint64_t)(i + 1) << 40) ^ (off * 0x9e3779b97f4a7c15ull);
}

static void fs_path(char *out, size_t n, int i)
{
    snprintf(out, n, "%s/f%02d", fs_dir, i);
}

static void fs_remove(void)
{
    if (fs_dir[0] == '\0')
        return;
    char p[600];
    for (int i = 0; i < FS_FILES; i++) {
        fs_path(p, sizeof p, i);
        (void)unlink(p);
    }
    (void)rmdir(fs_dir);
    fs_dir[0] = '\0';
}

/* Writes and syncs the file set once per process (removed at exit). */
static int fs_prepare(bench_run_t *r)
{
    if (fs_ready == 1)
        return 0;
    if (fs_ready < 0)
        return bench_fail(r, "the file set could not be prepared");
    fs_ready = -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(fs_dir, sizeof fs_dir, "%s/coexec-bench-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fs_dir)) {
        int e = errno;
        fs_dir[0] = '\0';
        return bench_fail(r, "mkdtemp: %s", strerror(e));
    }
    atexit(fs_remove);
    uint64_t *buf = malloc(FS_FILE_SIZE);
    if (!buf)
        return bench_fail(r, "out of memory");
    for (int i = 0; i < FS_FILES; i++) {
        char p[600];
        fs_path(p, sizeof p, i);
        for (uint64_t w = 0; w < FS_FILE_SIZE / 8; w++)
            buf[w] = fs_word(i, w * 8);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0) {
            bench_fail(r, "open %s: %s", p, strerror(errno));
            free(buf);
            return -1;
        }
        ssize_t n = write(fd, buf, FS_FILE_SIZE);
        /* Synced now, so that no write-back runs during the timed reads. */
        int e = n == (ssize_t)FS_FILE_SIZE && fdatasync(fd) == 0 ? 0 : errno;
        close(fd);
        if (n != (ssize_t)FS_FILE_SIZE || e) {
            bench_fail(r, "writing %s: %s", p, e ? strerror(e) : "short");
            free(buf);
            return -1;
        }
    }
    free(buf);
    fs_ready = 1;
    return 0;
}

/* Reads file i (fd) whole in FS_CHUNK preads through read_fn; checks the
 * first word of every chunk. Returns the bytes read, or -errno, or -EIO
 * for wrong data. */
typedef ssize_t (*pread_fn_t)(int fd, void *buf, size_t n, off_t off);

static long fs_read_file(pread_fn_t read_fn, int fd, int i, uint64_t *buf)
{
    long total = 0;
    for (off_t off = 0; off < FS_FILE_SIZE; off += FS_CHUNK) {
        ssize_t n = read_fn(fd, buf, FS_CHUNK, off);
        if (n < 0)
            return (long)n;
        if (n != (ssize_t)FS_CHUNK || buf[0] != fs_word(i, (uint64_t)off))
            return -EIO;
        total += n;
    }
    return total;
}

static ssize_t plain_pread(int fd, void *buf, size_t n, off_t off)
{
    ssize_t got = pread(fd, buf, n, off);
    return got < 0 ? -errno : got;
}

/* ---- file_read_throughput ----------------------------------------------------- */

static struct {
    int fd[FS_FILES];
    uint64_t *buf[FS_FILES];
    atomic_long err; /* first failure: -errno or -EIO */
    atomic_int wrong_caller;
} fr;

static void fr_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    long n = fs_read_file(coexec_pread, fr.fd[i], i, fr.buf[i]);
    if (n != FS_FILE_SIZE) {
        long ok = 0;
        atomic_compare_exchange_strong(&fr.err, &ok, n < 0 ? n : -EIO);
    }
}

static int file_read_throughput(bench_run_t *r, coexec_service_io_t io)
{
    coexec_pool_t pool;
    coexec_thread_t t[FS_FILES];
    coexec_xstream_t xs[2];
    int nxs = svc_compute_streams(), up = 0;
    memset(t, 0, sizeof t);
    memset(&fr, 0, sizeof fr);
    for (int i = 0; i < FS_FILES; i++)
        fr.fd[i] = -1;
    if (fs_prepare(r) != 0)
        return -1;
    for (int i = 0; i < FS_FILES; i++)
        if (posix_memalign((void **)&fr.buf[i], 4096, FS_CHUNK) != 0) {
            bench_fail(r, "out of memory");
            goto out;
        }
    if (svc_start_io(r, nxs, &pool, io) != 0)
        goto out;
    up = 1;
    for (int k = 0; k < nxs; k++)
        CK(coexec_xstream_by_rank(k, &xs[k]));
    /* Opened through the service stream too, once, untimed. */
    for (int i = 0; i < FS_FILES; i++) {
        char p[600];
        fs_path(p, sizeof p, i);
        fr.fd[i] = coexec_open(p, O_RDONLY, 0);
        if (fr.fd[i] < 0) {
            bench_fail(r, "coexec_open %s: %s", p, strerror(-fr.fd[i]));
            goto out;
        }
    }
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < FS_FILES; i++)
            CK(coexec_thread_create_on(xs[i % nxs], fr_reader,
                                       (void *)(intptr_t)i, NULL, &t[i]));
        for (int i = 0; i < FS_FILES; i++)
            CK(coexec_thread_free(&t[i]));
        uint64_t t1 = bench_now_ns();
        long e = atomic_load(&fr.err);
        if (e) {
            bench_fail(r, "coexec_pread: %s", strerror((int)-e));
            goto out;
        }
        if (rep >= r->warmups)
            bench_sample(r, FS_TOTAL / ((double)(t1 - t0) / 1e9) / 1e6);
    }
    {
        char text[256];
        snprintf(text, sizeof text,
                 "64 files x 1 MiB, page cache warm; one ULT per file dealt "
                 "over %d compute stream(s), coexec_pread in 128 KiB chunks "
                 "(files opened with coexec_open beforehand); first create to "
                 "last join",
                 nxs);
        bench_append_setup(r, text);
    }
out:
    for (int i = 0; i < FS_FILES; i++)
        if (t[i].p) {
            int rc = coexec_thread_free(&t[i]);
            if (rc != COEXEC_OK)
                bench_fail(r, "coexec_thread_free: %s", coexec_err_name(rc));
        }
    for (int i = 0; i < FS_FILES; i++)
        if (fr.fd[i] >= 0 && coexec_close(fr.fd[i]) != 0)
            bench_fail(r, "coexec_close failed");
    if (up)
        svc_stop(r);
    for (int i = 0; i < FS_FILES; i++)
        free(fr.buf[i]);
    return bench_finish(r);
}

static int bench_file_read_throughput(bench_run_t *r)
{
    return file_read_throughput(r, COEXEC_SERVICE_IO_AUTO);
}

static int bench_file_read_throughput_uring(bench_run_t *r)
{
    return file_read_throughput(r, COEXEC_SERVICE_IO_URING);
}

static int bench_file_read_throughput_threads(bench_run_t *r)
{
    return file_read_throughput(r, COEXEC_SERVICE_IO_THREADS);
}

/* ---- pread_roundtrip: one 4 KiB read at a time ------------------------------ */

#define PR_CALLS 20000
#define PR_SIZE 4096

static int pread_roundtrip(bench_run_t *r, coexec_service_io_t io)
{
    coexec_pool_t pool;
    static double direct[BENCH_MAX_SAMPLES];
    int ndirect = 0, fd = -1, up = 0;
    uint64_t *buf = NULL;
    if (fs_prepare(r) != 0)
        return -1;
    if (posix_memalign((void **)&buf, 4096, PR_SIZE) != 0)
        return bench_fail(r, "out of memory");
    char p[600];
    fs_path(p, sizeof p, 0);
    if ((fd = open(p, O_RDONLY)) < 0) {
        bench_fail(r, "open %s: %s", p, strerror(errno));
        goto out;
    }
    if (svc_start_io(r, 1, &pool, io) != 0)
        goto out;
    up = 1;
    long bad = 0;
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < PR_CALLS; i++) {
            uint64_t off = (uint64_t)(i % (FS_FILE_SIZE / PR_SIZE)) * PR_SIZE;
            bad += coexec_pread(fd, buf, PR_SIZE, (off_t)off) != PR_SIZE ||
                   buf[0] != fs_word(0, off);
        }
        uint64_t t1 = bench_now_ns();
        for (int i = 0; i < PR_CALLS; i++) {
            uint64_t off = (uint64_t)(i % (FS_FILE_SIZE / PR_SIZE)) * PR_SIZE;
            bad += pread(fd, buf, PR_SIZE, (off_t)off) != PR_SIZE;
        }
        uint64_t t2 = bench_now_ns();
        if (rep >= r->warmups) {
            bench_sample(r, (double)(t1 - t0) / PR_CALLS);
            if (ndirect < BENCH_MAX_SAMPLES)
                direct[ndirect++] = (double)(t2 - t1) / PR_CALLS;
        }
    }
    if (bad) {
        bench_fail(r, "%ld reads came back short or wrong", bad);
        goto out;
    }
    bench_append_setup(r, "main ULT on xs0: coexec_pread of 4 KiB from a warm "
                          "1 MiB file and wait, 20,000 calls per rep; then "
                          "20,000 plain preads (pread_direct, same rep)");
    if (ndirect) {
        double d = bench_median(direct, ndirect);
        int len = snprintf(r->reference, sizeof r->reference,
                           "pread_direct %.1f ns (same reps, same ULT)", d);
        if (bench_floor_ns > 0)
            snprintf(r->reference + len, sizeof r->reference - (size_t)len,
                     "; xes_spin_pingpong %.1f ns", bench_floor_ns);
    }
out:
    if (up)
        svc_stop(r);
    if (fd >= 0)
        close(fd);
    free(buf);
    return bench_finish(r);
}

static int bench_pread_roundtrip_uring(bench_run_t *r)
{
    return pread_roundtrip(r, COEXEC_SERVICE_IO_URING);
}

static int bench_pread_roundtrip_threads(bench_run_t *r)
{
    return pread_roundtrip(r, COEXEC_SERVICE_IO_THREADS);
}

/* ---- pthread_file_read_throughput ---------------------------------------------- */

static struct {
    int fd[FS_FILES];
    _Alignas(64) atomic_int next; /* the next file to read */
    atomic_long err;
    int nthreads;
    int pin_err;
} pr;

struct pr_thread {
    pthread_t tid;
    int cpu;
    uint64_t *buf;
};

static void *pr_reader(void *arg)
{
    struct pr_thread *th = arg;
    if (bench_pin_self(th->cpu) != 0)
        pr.pin_err = 1;
    for (;;) {
        int i = atomic_fetch_add(&pr.next, 1);
        if (i >= FS_FILES)
            break;
        long n = fs_read_file(plain_pread, pr.fd[i], i, th->buf);
        if (n != FS_FILE_SIZE) {
            long ok = 0;
            atomic_compare_exchange_strong(&pr.err, &ok, n < 0 ? n : -EIO);
        }
    }
    return NULL;
}

static int bench_pthread_file_read_throughput(bench_run_t *r)
{
    struct pr_thread th[3];
    memset(th, 0, sizeof th);
    memset(&pr, 0, sizeof pr);
    for (int i = 0; i < FS_FILES; i++)
        pr.fd[i] = -1;
    /* As many threads as file_read_throughput occupies CPUs: its compute
     * streams and the service stream. */
    pr.nthreads = svc_compute_streams() + 1;
    if (bench_need_cpus(r, pr.nthreads) != 0)
        return -1;
    if (fs_prepare(r) != 0)
        return -1;
    for (int k = 0; k < pr.nthreads; k++) {
        th[k].cpu = bench_cpus[k];
        if (posix_memalign((void **)&th[k].buf, 4096, FS_CHUNK) != 0) {
            bench_fail(r, "out of memory");
            goto out;
        }
    }
    for (int i = 0; i < FS_FILES; i++) {
        char p[600];
        fs_path(p, sizeof p, i);
        if ((pr.fd[i] = open(p, O_RDONLY)) < 0) {
            bench_fail(r, "open %s: %s", p, strerror(errno));
            goto out;
        }
    }
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        atomic_store(&pr.next, 0);
        int made = 0;
        uint64_t t0 = bench_now_ns();
        for (; made < pr.nthreads; made++) {
            int rc = pthread_create(&th[made].tid, NULL, pr_reader, &th[made]);
            if (rc != 0) {
                bench_fail(r, "pthread_create: %s", strerror(rc));
                break;
            }
        }
        for (int k = 0; k < made; k++)
            pthread_join(th[k].tid, NULL);
        uint64_t t1 = bench_now_ns();
        if (r->error[0])
            goto out;
        long e = atomic_load(&pr.err);
        if (e) {
            bench_fail(r, "pread: %s", strerror((int)-e));
            goto out;
        }
        if (pr.pin_err) {
            bench_fail(r, "cannot pin a reader thread");
            goto out;
        }
        if (rep >= r->warmups)
            bench_sample(r, FS_TOTAL / ((double)(t1 - t0) / 1e9) / 1e6);
    }
    bench_setup(r, "the file set of file_read_throughput read with pread in "
                   "128 KiB chunks by %d pthreads pinned one per CPU, each "
                   "taking the next file; create to last join",
                pr.nthreads);
out:
    for (int i = 0; i < FS_FILES; i++)
        if (pr.fd[i] >= 0)
            close(pr.fd[i]);
    for (int k = 0; k < 3; k++)
        free(th[k].buf);
    return bench_finish(r);
}

/* Goals: docs/BENCHMARKS.md; main.c pairs each figure with its in-run peer. */
const bench_def_t bench_service_defs[] = {
    {"offload_roundtrip_2es", "ns/call",
     "a ULT on xstream 0 (CPU 0) offloads syscall(SYS_getppid) to the "
     "service stream on CPU 1 and waits; 100,000 calls per rep",
     bench_offload_roundtrip_2es, 1, 400,
     "peers Argobots, Qthreads (not measured here); floor syscall_direct "
     "+ 2 x xes_spin_pingpong"},
    {"offload_throughput_64", "ns/call",
     "64 ULTs on the compute stream(s) (1; 2 with 3+ CPUs) each make 2,000 "
     "offloaded getppid calls concurrently through one service thread on "
     "its own CPU; wall time per call, amortized",
     bench_offload_throughput_64, 1, 0,
     "no goal; read against offload_roundtrip_2es (one call in "
     "flight) and syscall_direct"},
    {"file_read_throughput", "MB/s",
     "64 ULTs each read one of 64 warm 1 MiB files with coexec_pread "
     "(128 KiB chunks) through the service stream on its own CPU, by the "
     "default file I/O path (io_uring where it can be had)",
     bench_file_read_throughput, 0, 0,
     "no goal; peer: pthread_file_read_throughput"},
    {"file_read_throughput_uring", "MB/s",
     "file_read_throughput with service_io = uring: the reads batched into "
     "the ring of the service stream's ring thread",
     bench_file_read_throughput_uring, 0, 0,
     "read against file_read_throughput_threads (same run)"},
    {"file_read_throughput_threads", "MB/s",
     "file_read_throughput with service_io = threads: each read a pread on "
     "the service thread",
     bench_file_read_throughput_threads, 0, 0,
     "read against file_read_throughput_uring (same run)"},
    {"pread_roundtrip_uring", "ns/call",
     "a ULT on xstream 0 reads 4 KiB of a warm file with coexec_pread, one "
     "call at a time, through io_uring on the service CPU",
     bench_pread_roundtrip_uring, 1, 0,
     "no goal; read against pread_roundtrip_threads and "
     "pread_direct"},
    {"pread_roundtrip_threads", "ns/call",
     "the same through the service thread (service_io = threads)",
     bench_pread_roundtrip_threads, 1, 0,
     "no goal; read against pread_roundtrip_uring and "
     "pread_direct"},
    {"pthread_file_read_throughput", "MB/s",
     "the same files read with plain pread (128 KiB chunks) by pthreads, "
     "one per CPU that file_read_throughput occupies",
     bench_pthread_file_read_throughput, 0, 0,
     "the peer of file_read_throughput"},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};
