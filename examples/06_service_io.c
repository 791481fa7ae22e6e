/*
 * 06_service_io.c: file I/O from ULTs through the service stream.
 *
 * A ULT that calls read() blocks its whole xstream: the OS thread sleeps in
 * the kernel, and every unit queued on that stream waits with it. The
 * service stream is libcoexec's answer: a few OS threads of their own (on
 * a CPU of their own where the machine has one) that make blocking calls
 * on behalf of the compute streams.
 *
 *   - coexec_open, coexec_pread, coexec_close, coexec_fstat, coexec_unlink
 *     and the other wrappers of coexec/service.h take libc's arguments and
 *     return libc's result, or -errno (they never set errno). Called from
 *     a ULT they run on the service stream while the ULT parks, and the
 *     ULT's stream runs other units meanwhile.
 *   - coexec_offload(fn, arg, &ret) does the same for any blocking code of
 *     yours: fn(arg) runs on a service thread, its result comes back in
 *     ret.
 *
 * What this program does: it writes a few files of different sizes into a
 * fresh temporary directory (plain POSIX, before the runtime starts) and
 * remembers the checksum of what it wrote. Then one ULT per file, spread
 * over several xstreams, opens, reads and checksums its file with the
 * wrappers only. Main checks every checksum against the one computed while
 * writing, counts the directory's entries through coexec_offload, removes
 * the files with coexec_unlink, and finally the directory.
 *
 * It also shows which thread did the I/O. Each stream counts the calls
 * its units submitted (coexec/stats.h); a tool callback (coexec/tool.h)
 * sees every call a service thread starts, on that thread, and notes the
 * thread's name; file calls the wrappers send through io_uring are made
 * by the service stream's ring thread instead. Each ULT notes the stream
 * it started and finished on: every call parks it, and it may resume on
 * another stream.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <coexec.h>
#include <coexec/service.h>

#define CHECK(call)                                                            \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != COEXEC_OK) {                                                \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, \
                    #call, coexec_err_name(rc_), coexec_strerror(rc_));        \
            exit(EXIT_FAILURE);                                                \
        }                                                                      \
    } while (0)

#define N_FILES 12
#define CHUNK 8192 /* bytes per coexec_pread */

static char dir[] = "/tmp/coexec-06-XXXXXX";

struct file {
    char path[64];
    size_t size;       /* as written */
    uint64_t expected; /* checksum of what was written */
    /* Filled by the file's ULT. */
    uint64_t sum;
    long bytes_read;
    int error;      /* 0, or the errno of the call that failed */
    int calls;      /* service calls made */
    int first_rank; /* the xstream the ULT started on */
    int rank;       /* the xstream it finished on */
};

static struct file files[N_FILES];

/*
 * The service threads that ran calls, and how many each ran. The tool
 * callback runs on the service thread itself, a plain OS thread on which
 * nothing switches, so a thread-local variable is that thread's own.
 */
#define MAX_SVC 16
static struct {
    atomic_int threads; /* slots taken */
    char name[MAX_SVC][16];
    atomic_int calls[MAX_SVC];
} svc;
static _Thread_local int svc_slot = -1;

static void on_offload(const coexec_tool_info_t *info, void *arg)
{
    (void)info;
    (void)arg;
    if (svc_slot < 0) {
        svc_slot = atomic_fetch_add(&svc.threads, 1);
        if (svc_slot < MAX_SVC &&
            pthread_getname_np(pthread_self(), svc.name[svc_slot],
                               sizeof svc.name[svc_slot]) != 0)
            strcpy(svc.name[svc_slot], "?");
    }
    if (svc_slot < MAX_SVC)
        atomic_fetch_add(&svc.calls[svc_slot], 1);
}

static int svc_calls(void)
{
    int n = 0, threads = atomic_load(&svc.threads);
    for (int i = 0; i < threads && i < MAX_SVC; i++)
        n += atomic_load(&svc.calls[i]);
    return n;
}

/* FNV-1a, 64 bits: a checksum that can be fed piece by piece. */
static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}
#define FNV_START 0xcbf29ce484222325ull

/* Before the runtime: write file i with plain POSIX calls. */
static void write_file(int i)
{
    struct file *f = &files[i];
    snprintf(f->path, sizeof f->path, "%s/data%02d", dir, i);
    f->size = 20000 + (size_t)i * 17321; /* no two sizes alike */
    unsigned char *data = malloc(f->size);
    uint32_t x = 2463534242u + (uint32_t)i;
    for (size_t k = 0; k < f->size; k++) { /* xorshift bytes */
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data[k] = (unsigned char)x;
    }
    f->expected = fnv1a(FNV_START, data, f->size);
    int fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || write(fd, data, f->size) != (ssize_t)f->size ||
        close(fd) != 0) {
        perror(f->path);
        exit(EXIT_FAILURE);
    }
    free(data);
}

/* A ULT: checksum one file. Every call below that could block in the
 * kernel goes through the service stream. */
static void checksum_file(void *arg)
{
    struct file *f = arg;
    CHECK(coexec_xstream_self_rank(&f->first_rank));

    int fd = coexec_open(f->path, O_RDONLY, 0);
    f->calls++;
    if (fd < 0) {
        f->error = -fd; /* the wrappers return -errno */
        CHECK(coexec_xstream_self_rank(&f->rank));
        return;
    }
    struct stat st;
    int rc = coexec_fstat(fd, &st);
    f->calls++;
    /* ULT stacks are small (16 KiB by default): the buffer goes on the
     * heap, not on the stack. */
    unsigned char *buf = malloc(CHUNK);
    uint64_t h = FNV_START;
    for (off_t off = 0; rc == 0 && buf && off < st.st_size;) {
        ssize_t n = coexec_pread(fd, buf, CHUNK, off);
        f->calls++;
        if (n <= 0) { /* an error, or the file shrank */
            rc = n < 0 ? (int)n : -EIO;
            break;
        }
        h = fnv1a(h, buf, (size_t)n); /* computing: no service call */
        off += n;
        f->bytes_read += n;
    }
    if (!buf)
        rc = -ENOMEM;
    free(buf);
    int crc = coexec_close(fd);
    f->calls++;
    f->error = rc ? -rc : crc ? -crc : 0;
    f->sum = h;
    CHECK(coexec_xstream_self_rank(&f->rank));
}

/* Blocking code of our own, run on the service stream by coexec_offload:
 * counts the regular entries of a directory, and notes the thread it ran
 * on. */
static char counted_on[16];

static intptr_t count_entries(void *arg)
{
    if (pthread_getname_np(pthread_self(), counted_on, sizeof counted_on))
        strcpy(counted_on, "?");
    DIR *d = opendir(arg);
    if (!d)
        return -errno;
    intptr_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

int main(void)
{
    /* The files first, before the runtime exists: plain POSIX. */
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    for (int i = 0; i < N_FILES; i++)
        write_file(i);

    /* Up to 4 compute xstreams. The service stream needs no setup: by
     * default one thread on the last CPU (COEXEC_SERVICE_CPUS or
     * cfg.service_cpus choose another); on a small machine it shares that
     * CPU with a compute stream. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    coexec_config_t cfg;
    CHECK(coexec_config_init(&cfg));
    cfg.num_xstreams = ncpu < 2 ? 2 : ncpu > 4 ? 4 : (int)ncpu;
    CHECK(coexec_init(&cfg));
    int nxs;
    CHECK(coexec_xstream_get_num(&nxs));
    coexec_service_info_t info = {.size = sizeof info};
    CHECK(coexec_service_get_info(&info));
    int uring = strcmp(info.io_path, "io_uring") == 0;

    /* Count from here: the service threads' calls, and each stream's
     * submissions. */
    /* (A library built with -DCOEXEC_TOOLS=OFF has no tool events.) */
    int tools = coexec_tool_set_callback(
        on_offload, COEXEC_TOOL_BIT(COEXEC_TOOL_OFFLOAD_BEGIN), NULL);
    if (tools != COEXEC_ENOSYS)
        CHECK(tools);
    CHECK(coexec_stats_reset());

    /* One ULT per file, dealt round-robin over the streams. While one
     * waits for its pread, its stream runs the next ULT. */
    coexec_thread_t t[N_FILES];
    for (int i = 0; i < N_FILES; i++) {
        coexec_xstream_t xs;
        CHECK(coexec_xstream_by_rank(i % nxs, &xs));
        CHECK(coexec_thread_create_on(xs, checksum_file, &files[i], NULL,
                                      &t[i]));
    }
    for (int i = 0; i < N_FILES; i++)
        CHECK(coexec_thread_free(&t[i]));

    int ok = 1, calls = 0;
    for (int i = 0; i < N_FILES; i++) {
        struct file *f = &files[i];
        int good = f->error == 0 && f->sum == f->expected &&
                   f->bytes_read == (long)f->size;
        printf("%s: %7ld bytes, sum %016llx, %2d calls, xstream %d then %d "
               "(%s)\n",
               strrchr(f->path, '/') + 1, f->bytes_read,
               (unsigned long long)f->sum, f->calls, f->first_rank, f->rank,
               good ? "ok" : f->error ? strerror(f->error) : "WRONG");
        ok &= good;
        calls += f->calls;
    }

    /*
     * Which threads did the I/O. Every call of the ULTs was submitted by
     * the stream running the ULT at the time; the service threads ran
     * those the callback saw, the ring thread the rest (with the io_uring
     * path; on the threads path the service threads ran them all).
     */
    unsigned long long submitted = 0;
    printf("the ULTs made %d service calls, submitted from", calls);
    for (int r = 0; r < nxs; r++) {
        coexec_xstream_t xs;
        coexec_xstream_stats_t st = {.size = sizeof st};
        CHECK(coexec_xstream_by_rank(r, &xs));
        CHECK(coexec_xstream_get_stats(xs, &st));
        printf(" xstream %d: %llu%s", r, (unsigned long long)st.offloads,
               r + 1 < nxs ? "," : "\n");
        submitted += st.offloads;
    }
    int by_threads = svc_calls();
    if (tools == COEXEC_OK) {
        printf("run by service threads: %d (", by_threads);
        for (int i = 0; i < atomic_load(&svc.threads) && i < MAX_SVC; i++)
            printf("%s%s %d", i ? ", " : "", svc.name[i],
                   atomic_load(&svc.calls[i]));
        printf(")\n");
        if (uring)
            printf("through io_uring, by the ring thread (coexec-ring): %d\n",
                   calls - by_threads);
        ok &= uring ? by_threads <= calls : by_threads == calls;
    } else {
        printf("calls per service thread: not counted (built without tool "
               "events)\n");
    }
    ok &= submitted == (unsigned long long)calls;

    /* Any blocking function can be offloaded, not only the wrappers. */
    intptr_t entries = -1;
    CHECK(coexec_offload(count_entries, dir, &entries));
    printf("%ld files in the directory, counted on thread %s\n",
           (long)entries, counted_on);
    ok &= entries == N_FILES && strncmp(counted_on, "coexec-svc", 10) == 0;

    CHECK(coexec_service_get_info(&info));
    printf("service stream: %d thread(s), first on CPU %d%s, %llu requests "
           "completed\n",
           info.threads, info.cpu,
           info.shares_cpu ? " (shared with a compute stream)" : "",
           (unsigned long long)info.completed);

    /* Clean up through the service stream too. */
    for (int i = 0; i < N_FILES; i++)
        if (coexec_unlink(files[i].path) != 0)
            ok = 0;
    CHECK(coexec_finalize());

    /* There is no wrapper for rmdir; the runtime is gone anyway. */
    if (rmdir(dir) != 0) {
        perror(dir);
        ok = 0;
    }
    if (!ok) {
        printf("service_io: FAILED\n");
        return EXIT_FAILURE;
    }
    printf("%d files checksummed by ULTs on %d xstreams, all I/O on the "
           "service stream (ok)\n",
           N_FILES, nxs);
    printf("service_io: all checks passed\n");
    return EXIT_SUCCESS;
}
