/*
 * src/core/trace.c: the Chrome trace (coexec/tool.h), recorded through
 * the runtime's events (thread/tool.h).
 *
 * Each thread that has an event to record gets a buffer of its own on the
 * first one (a mapping touched as it fills), linked into a list under the
 * trace lock; after that it writes events with plain stores and publishes
 * the count with a release store, so recording takes no lock and shares
 * no cache line. A full buffer counts what it drops. Writing the file
 * reads each buffer up to its published count.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch/clock.h"
#include "base/global.h"
#include "core/config.h"
#include "thread/tool.h"
#include "thread/unit.h"

/* One recorded event. */
struct tev {
    uint64_t t;     /* clock_now_ns() */
    uint64_t id;    /* the unit's id */
    const void *fn; /* the unit's function, or an offloaded call's */
    const char *name; /* the unit's name attribute, or NULL */
    uint32_t type;  /* coexec_tool_event_t, or EV_FLOW_END */
    uint32_t tasklet;
};

/* A run that a wake caused: the end of its flow arrow. */
#define EV_FLOW_END 100u

/* What the trace records. */
#define TRACE_MASK                                                             \
    (COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_RUN) |                                   \
     COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_YIELD) |                                 \
     COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_BLOCK) |                                 \
     COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_FINISH) |                                \
     COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_RESUME) |                                \
     COEXEC_TOOL_BIT(COEXEC_TOOL_UNIT_STEAL) |                                 \
     COEXEC_TOOL_BIT(COEXEC_TOOL_XSTREAM_PARK) |                               \
     COEXEC_TOOL_BIT(COEXEC_TOOL_XSTREAM_UNPARK) |                             \
     COEXEC_TOOL_BIT(COEXEC_TOOL_OFFLOAD_BEGIN) |                              \
     COEXEC_TOOL_BIT(COEXEC_TOOL_OFFLOAD_END))


struct tbuf {
    struct tbuf *next;
    int track;      /* the trace's tid: a stream's rank, or 1000 + n */
    char name[32];  /* the track's name */
    uint32_t cap;
    atom_u32_t n;   /* events published (release) */
    atom_u64_t dropped;
    size_t bytes;
    struct tev ev[];
};

static struct {
    pthread_mutex_t lock;
    atom_u32_t on;
    char path[256];
    uint32_t cap;
    uint64_t t0;
    int others; /* tracks of threads that are not streams */
    struct tbuf *all;
} tr = {.lock = PTHREAD_MUTEX_INITIALIZER};

static __thread struct tbuf *my_buf __attribute__((tls_model("initial-exec")));
/* The trace epoch my_buf belongs to (a buffer of an earlier trace is
 * gone). */
static __thread uint64_t my_t0 __attribute__((tls_model("initial-exec")));

static struct tbuf *buf_new(int rank)
{
    size_t bytes = sizeof(struct tbuf) + (size_t)tr.cap * sizeof(struct tev);
    struct tbuf *b = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (b == MAP_FAILED)
        return NULL;
    b->bytes = bytes;
    b->cap = tr.cap;
    pthread_mutex_lock(&tr.lock);
    if (rank >= 0) {
        b->track = rank;
        snprintf(b->name, sizeof b->name, "stream %d", rank);
    } else {
        b->track = 1000 + tr.others++;
        if (pthread_getname_np(pthread_self(), b->name, sizeof b->name) ||
            !b->name[0])
            snprintf(b->name, sizeof b->name, "thread %d", b->track - 1000);
    }
    b->next = tr.all;
    tr.all = b;
    pthread_mutex_unlock(&tr.lock);
    return b;
}

static void put(struct tbuf *b, uint32_t type, const coexec_tool_info_t *in)
{
    uint32_t n = atom_load_rlx_u32(&b->n);
    if (n == b->cap) {
        atom_store_rlx_u64(&b->dropped, atom_load_rlx_u64(&b->dropped) + 1);
        return;
    }
    struct tev *e = &b->ev[n];
    e->t = clock_now_ns();
    e->id = in->unit_id;
    e->fn = in->unit_fn;
    e->name = in->unit_name;
    e->type = type;
    e->tasklet = (uint32_t)in->unit_is_tasklet;
    /* Release: the writer of the file reads the event after the count. */
    atom_store_rel_u32(&b->n, n + 1);
}

/* The recorder: thread/tool.h's `trace`. p: the unit, or the call's fn. */
static void record(const coexec_tool_info_t *in, void *p)
{
    if (!atom_load_acq_u32(&tr.on))
        return;
    if (UNLIKELY(!my_buf || my_t0 != tr.t0)) {
        my_buf = buf_new(in->rank);
        my_t0 = tr.t0;
        if (!my_buf)
            return;
    }
    struct coexec_unit_rec *u = p;
    switch (in->event) {
    case COEXEC_TOOL_UNIT_RESUME:
        atom_for_rlx_u32(&u->attrs, UA_TRACE_WOKEN);
        break;
    case COEXEC_TOOL_UNIT_RUN:
        put(my_buf, in->event, in);
        if (atom_load_rlx_u32(&u->attrs) & UA_TRACE_WOKEN) {
            atom_fand_rlx_u32(&u->attrs, ~UA_TRACE_WOKEN);
            put(my_buf, EV_FLOW_END, in);
        }
        return;
    default:
        break;
    }
    put(my_buf, in->event, in);
}

/* ---- the file ---------------------------------------------------------------- */

/* A function's symbol (or its address), for a span's name; the last
 * lookups are kept, as a trace names the same few functions many times. */
static const char *fn_name(const void *fn, char *buf, size_t len)
{
    static struct {
        const void *fn;
        const char *name;
    } cache[256]; /* only the file writer, under tr.lock */
    size_t i = ((uintptr_t)fn >> 4) % 256;
    if (fn && cache[i].fn == fn)
        return cache[i].name;
    Dl_info di;
    if (fn && dladdr(fn, &di) && di.dli_sname) {
        cache[i].fn = fn;
        cache[i].name = di.dli_sname;
        return di.dli_sname;
    }
    snprintf(buf, len, "%p", fn);
    return buf;
}

/* s as a JSON string's contents. */
static void json_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
}

static void ev_head(FILE *f, bool *first, const char *ph, const struct tbuf *b,
                    const struct tev *e)
{
    fprintf(f, "%s\n{\"ph\":\"%s\",\"pid\":1,\"tid\":%d,\"ts\":%.3f", *first ? "" : ",",
            ph, b->track, (double)(e->t - tr.t0) / 1000.0);
    *first = false;
}

static void write_event(FILE *f, bool *first, const struct tbuf *b,
                        const struct tev *e)
{
    char nb[32];
    switch (e->type) {
    case COEXEC_TOOL_UNIT_RUN:
        ev_head(f, first, "B", b, e);
        fputs(",\"name\":\"", f);
        json_str(f, e->name ? e->name : fn_name(e->fn, nb, sizeof nb));
        fprintf(f, "\",\"cat\":\"%s\",\"args\":{\"unit\":%llu}}",
                e->tasklet ? "tasklet" : "ult", (unsigned long long)e->id);
        break;
    case COEXEC_TOOL_UNIT_YIELD:
    case COEXEC_TOOL_UNIT_BLOCK:
    case COEXEC_TOOL_UNIT_FINISH:
        ev_head(f, first, "E", b, e);
        fprintf(f, ",\"args\":{\"end\":\"%s\"}}",
                e->type == COEXEC_TOOL_UNIT_YIELD   ? "yield"
                : e->type == COEXEC_TOOL_UNIT_BLOCK ? "block"
                                                    : "finish");
        break;
    case COEXEC_TOOL_UNIT_RESUME:
        ev_head(f, first, "i", b, e);
        fprintf(f, ",\"name\":\"wake %llu\",\"cat\":\"wake\",\"s\":\"t\"}",
                (unsigned long long)e->id);
        ev_head(f, first, "s", b, e);
        fprintf(f, ",\"name\":\"wake\",\"cat\":\"wake\",\"id\":%llu}",
                (unsigned long long)e->id);
        break;
    case EV_FLOW_END:
        ev_head(f, first, "f", b, e);
        fprintf(f, ",\"name\":\"wake\",\"cat\":\"wake\",\"bp\":\"e\",\"id\":%llu}",
                (unsigned long long)e->id);
        break;
    case COEXEC_TOOL_UNIT_STEAL:
        ev_head(f, first, "i", b, e);
        fprintf(f, ",\"name\":\"steal %llu\",\"cat\":\"steal\",\"s\":\"t\"}",
                (unsigned long long)e->id);
        break;
    case COEXEC_TOOL_XSTREAM_PARK:
        ev_head(f, first, "i", b, e);
        fputs(",\"name\":\"park\",\"cat\":\"park\",\"s\":\"t\"}", f);
        ev_head(f, first, "B", b, e);
        fputs(",\"name\":\"parked\",\"cat\":\"park\"}", f);
        break;
    case COEXEC_TOOL_XSTREAM_UNPARK:
        ev_head(f, first, "E", b, e);
        fputs("}", f);
        break;
    case COEXEC_TOOL_OFFLOAD_BEGIN:
        ev_head(f, first, "B", b, e);
        fputs(",\"name\":\"offload ", f);
        json_str(f, fn_name(e->fn, nb, sizeof nb));
        fputs("\",\"cat\":\"offload\"}", f);
        break;
    case COEXEC_TOOL_OFFLOAD_END:
        ev_head(f, first, "E", b, e);
        fputs("}", f);
        break;
    }
}

static int write_file(void)
{
    char tmp[sizeof tr.path + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", tr.path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        coexec__warn("coexec trace: cannot write %s: %s", tmp, strerror(errno));
        return COEXEC_EIO;
    }
    uint64_t dropped = 0, kept = 0;
    bool first = true;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
    fprintf(f, "\n{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\","
               "\"args\":{\"name\":\"coexec\"}}");
    first = false;
    pthread_mutex_lock(&tr.lock);
    for (struct tbuf *b = tr.all; b; b = b->next) {
        fprintf(f, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_name\","
                   "\"args\":{\"name\":\"",
                b->track);
        json_str(f, b->name);
        fprintf(f, "\"}},\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                   "\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%d}}",
                b->track, b->track);
        uint32_t n = atom_load_acq_u32(&b->n);
        for (uint32_t i = 0; i < n; i++)
            write_event(f, &first, b, &b->ev[i]);
        kept += n;
        dropped += atom_load_rlx_u64(&b->dropped);
    }
    pthread_mutex_unlock(&tr.lock);
    fprintf(f, "\n],\"otherData\":{\"version\":\"%s\",\"events\":%llu,"
               "\"dropped\":%llu,\"events_per_thread\":%u}}\n",
            coexec_version_string(), (unsigned long long)kept,
            (unsigned long long)dropped, tr.cap);
    int bad = ferror(f);
    if (fclose(f) || bad || rename(tmp, tr.path)) {
        coexec__warn("coexec trace: cannot write %s: %s", tr.path,
                     strerror(errno));
        unlink(tmp);
        return COEXEC_EIO;
    }
    if (dropped)
        coexec__warn("coexec trace: %llu event(s) dropped (buffers full: "
                     "COEXEC_TRACE_EVENTS=%u per thread); %s has the first "
                     "%llu",
                     (unsigned long long)dropped, tr.cap, tr.path,
                     (unsigned long long)kept);
    return COEXEC_OK;
}

/* ---- the runtime's calls and the public ones --------------------------------------- */

static int trace_begin(const char *path)
{
    if (!TOOL_ON())
        return COEXEC_ENOSYS;
    pthread_mutex_lock(&tr.lock);
    if (atom_load_rlx_u32(&tr.on)) {
        pthread_mutex_unlock(&tr.lock);
        return COEXEC_EBUSY;
    }
    snprintf(tr.path, sizeof tr.path, "%s", path);
    tr.cap = coexec__g.cfg.trace_events;
    tr.t0 = clock_now_ns();
    tr.others = 0;
    atom_store_rel_u32(&tr.on, 1);
    pthread_mutex_unlock(&tr.lock);
    atom_store_rel_u32(&coexec__tool.trace_mask, TRACE_MASK);
    coexec__tool_remask();
    return COEXEC_OK;
}

int coexec__trace_init(void)
{
    /* Set before any stream runs, never changed. */
    coexec__tool.trace = record;
    const char *path = coexec__g.cfg.trace_path;
    return path[0] ? trace_begin(path) : COEXEC_OK;
}

/* Finalize, once no stream runs: writes the file and frees the buffers. */
void coexec__trace_end(void)
{
    if (!atom_load_acq_u32(&tr.on))
        return;
    atom_store_rel_u32(&coexec__tool.trace_mask, 0);
    coexec__tool_remask();
    IGNORE_RESULT(write_file());
    pthread_mutex_lock(&tr.lock);
    atom_store_rel_u32(&tr.on, 0);
    /* The memory goes back; the mappings stay, as a thread outside the
     * runtime may still be writing its last event into one. */
    for (struct tbuf *b = tr.all; b; b = b->next)
        madvise(b, b->bytes, MADV_DONTNEED);
    tr.all = NULL;
    pthread_mutex_unlock(&tr.lock);
}

COEXEC_API int coexec_trace_start(const char *path)
{
    if (!path || !*path || strlen(path) >= sizeof tr.path)
        return COEXEC_EINVAL;
    RT_CHECK();
    return trace_begin(path);
}

COEXEC_API int coexec_trace_flush(void)
{
    RT_CHECK();
    if (!atom_load_acq_u32(&tr.on))
        return COEXEC_ESTATE;
    return write_file();
}
