/*
 * src/core/config.c: configuration defaults and the COEXEC_* environment
 * variables. A malformed value is an error that names the variable; it is
 * never ignored.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/global.h"
#include "base/cpulist.h"
#include "core/config.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

static char init_error[256];

COEXEC_API const char *coexec_init_error(void)
{
    return init_error;
}

void coexec__set_init_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(init_error, sizeof init_error, fmt, ap);
    va_end(ap);
}

COEXEC_API int coexec_config_init(coexec_config_t *cfg)
{
    if (!cfg)
        return COEXEC_EINVAL;
    memset(cfg, 0, sizeof *cfg);
    cfg->size = sizeof *cfg;
    cfg->num_xstreams = 1;
    cfg->stack_size = 16 * 1024;
    cfg->sched_kind = COEXEC_SCHED_BASIC_WAIT;
    cfg->event_freq = 64;
    cfg->affinity = 1;
    cfg->idle_spin_us = 50;
    cfg->guard_size = COEXEC__DEFAULT_GUARD;
    cfg->print_config = 0;
    cfg->quiet = 0;
    cfg->service_threads = 1;
    cfg->service_max_threads = 16;
    cfg->service_spin_us = 50;
    cfg->service_cpus[0] = '\0';
    cfg->service_io = COEXEC_SERVICE_IO_AUTO;
    cfg->fj_slots = 65536;
    cfg->trace_events = 262144;
    return COEXEC_OK;
}

/* Parses a whole unsigned decimal number with an optional K/M/G suffix
 * (when `suffixes`). Returns false on anything else. */
static bool parse_u64(const char *s, bool suffixes, uint64_t *out)
{
    if (!s || !*s || !isdigit((unsigned char)*s))
        return false;
    int saved = errno;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    bool overflow = errno == ERANGE;
    errno = saved;
    if (overflow || end == s)
        return false;
    uint64_t mul = 1;
    if (suffixes && *end) {
        switch (*end) {
        case 'k': case 'K': mul = 1ull << 10; break;
        case 'm': case 'M': mul = 1ull << 20; break;
        case 'g': case 'G': mul = 1ull << 30; break;
        default: return false;
        }
        end++;
        if (*end == 'b' || *end == 'B' || *end == 'i')
            end += (*end == 'i' && (end[1] == 'B' || end[1] == 'b')) ? 2 : 1;
    }
    if (*end)
        return false;
    if (v > UINT64_MAX / mul)
        return false;
    *out = (uint64_t)v * mul;
    return true;
}

static bool parse_bool(const char *s, int *out)
{
    static const char *yes[] = {"1", "yes", "true", "on"};
    static const char *no[] = {"0", "no", "false", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(s, yes[i])) {
            *out = 1;
            return true;
        }
        if (!strcasecmp(s, no[i])) {
            *out = 0;
            return true;
        }
    }
    return false;
}

/* ---- the fields ---------------------------------------------------------- */

/*
 * One row per coexec_config_t field that init reads: its environment
 * variable, its type and bounds. The environment (apply_env) and the
 * struct (validate) are checked against the same row, and the messages
 * for both say what is valid with the same words, built from the bounds.
 */
enum fkind {
    F_INT,      /* int, min..max */
    F_UNSIGNED, /* unsigned, min..max */
    F_SIZE,     /* size_t, min..max bytes; the variable takes K/M/G */
    F_BOOL,     /* int, 0 or 1; the variable also takes yes/no, ... */
    F_ENUM,     /* an enum, one of `names` */
    F_CPUS,     /* char[], a CPU list ("" in the struct: the default) */
    F_PATH      /* char[max], a file path ("" in the struct: none) */
};

struct name_val {
    const char *name;
    int val;
};

struct field {
    const char *var;
    const char *name;
    size_t off;
    enum fkind kind;
    uint64_t min, max;
    const char *unit;             /* F_INT / F_UNSIGNED: what is counted */
    const struct name_val *names; /* F_ENUM: ends with a NULL name */
    const char *ewant, *cwant;    /* F_ENUM: what the variable, the field
                                     takes (aliases are not listed) */
};

static const struct name_val sched_names[] = {
    {"basic", COEXEC_SCHED_BASIC},
    {"basic_wait", COEXEC_SCHED_BASIC_WAIT},
    {"basic-wait", COEXEC_SCHED_BASIC_WAIT},
    {"prio", COEXEC_SCHED_PRIO},
    {"randws", COEXEC_SCHED_RANDWS},
    {NULL, 0}};

static const struct name_val xstreams_names[] = {
    {"all", COEXEC_NUM_XSTREAMS_ALL}, {NULL, 0}};

static const struct name_val affinity_names[] = {
    {"auto", COEXEC_AFFINITY_AUTO},       {"1", COEXEC_AFFINITY_AUTO},
    {"yes", COEXEC_AFFINITY_AUTO},        {"true", COEXEC_AFFINITY_AUTO},
    {"on", COEXEC_AFFINITY_AUTO},         {"none", COEXEC_AFFINITY_NONE},
    {"0", COEXEC_AFFINITY_NONE},          {"no", COEXEC_AFFINITY_NONE},
    {"false", COEXEC_AFFINITY_NONE},      {"off", COEXEC_AFFINITY_NONE},
    {"binding", COEXEC_AFFINITY_BINDING}, {"rank", COEXEC_AFFINITY_RANK},
    {"rank-partition", COEXEC_AFFINITY_RANK}, {NULL, 0}};

static const struct name_val io_names[] = {
    {"auto", COEXEC_SERVICE_IO_AUTO},
    {"uring", COEXEC_SERVICE_IO_URING},
    {"io_uring", COEXEC_SERVICE_IO_URING},
    {"threads", COEXEC_SERVICE_IO_THREADS},
    {NULL, 0}};

static const struct name_val signal_names[] = {
    {"none", 0},          {"0", 0},          {"SIGUSR1", SIGUSR1},
    {"USR1", SIGUSR1},    {"SIGUSR2", SIGUSR2}, {"USR2", SIGUSR2},
    {"SIGQUIT", SIGQUIT}, {"QUIT", SIGQUIT},  {NULL, 0}};

/* F_ENUM fields are read and written as int. */
_Static_assert(sizeof(coexec_sched_kind_t) == sizeof(int) &&
                   sizeof(coexec_service_io_t) == sizeof(int),
               "enum fields are ints");

#define SPIN_MAX_US (60ull * 1000 * 1000)
#define SVC_MAX_THREADS 1024

#define ROW(i, var, f, kind, min, max, unit)                                \
    [i] = {var, #f, offsetof(coexec_config_t, f), kind, min, max, unit,        \
           NULL, NULL, NULL}
/* A number that also takes the names of `names` (F_INT, F_UNSIGNED). */
#define NAMED_ROW(i, var, f, kind, min, max, unit, names, ewant, cwant)       \
    [i] = {var, #f, offsetof(coexec_config_t, f), kind, min, max, unit,        \
           names, ewant, cwant}
#define ENUM_ROW(i, var, f, names, ewant, cwant)                               \
    [i] = {var, #f, offsetof(coexec_config_t, f), F_ENUM, 0, 0, NULL,          \
           names, ewant, cwant}

enum field_index {
    I_NUM_XSTREAMS, I_STACK_SIZE, I_GUARD_SIZE, I_SCHED, I_EVENT_FREQ,
    I_AFFINITY, I_IDLE_SPIN_US, I_PRINT_CONFIG, I_QUIET, I_SERVICE_THREADS,
    I_SERVICE_MAX_THREADS, I_SERVICE_SPIN_US, I_SERVICE_CPUS, I_SERVICE_IO,
    I_FJ_SLOTS, I_STATS, I_DUMP_SIGNAL, I_HANG_DUMP, I_TRACE, I_TRACE_EVENTS,
    I_STREAM_SIGNALS, I_GUARD_APP, I_UNIT_DATA_SIZE, NFIELDS
};
_Static_assert(NFIELDS <= 32, "apply_env marks the fields in a 32-bit mask");

static const struct field fields[NFIELDS] = {
    NAMED_ROW(I_NUM_XSTREAMS, "COEXEC_NUM_XSTREAMS", num_xstreams, F_INT, 1,
              MAX_XSTREAMS, NULL, xstreams_names, "all",
              "COEXEC_NUM_XSTREAMS_ALL"),
    ROW(I_STACK_SIZE, "COEXEC_STACK_SIZE", stack_size, F_SIZE,
        COEXEC_MIN_STACK, COEXEC_MAX_STACK, NULL),
    ROW(I_GUARD_SIZE, "COEXEC_GUARD_SIZE", guard_size, F_SIZE, 0,
        COEXEC__MAX_GUARD, NULL),
    ENUM_ROW(I_SCHED, "COEXEC_SCHED", sched_kind, sched_names,
             "basic, basic_wait, prio or randws",
             "COEXEC_SCHED_BASIC, _BASIC_WAIT, _PRIO or _RANDWS"),
    ROW(I_EVENT_FREQ, "COEXEC_EVENT_FREQ", event_freq, F_UNSIGNED, 1,
        1u << 30, NULL),
    ENUM_ROW(I_AFFINITY, "COEXEC_AFFINITY", affinity, affinity_names,
             "auto, binding, rank or none (1 = auto, 0 = none)",
             "COEXEC_AFFINITY_AUTO, _BINDING, _RANK or _NONE"),
    ROW(I_IDLE_SPIN_US, "COEXEC_IDLE_SPIN_US", idle_spin_us, F_UNSIGNED, 0,
        SPIN_MAX_US, "microseconds"),
    ROW(I_PRINT_CONFIG, "COEXEC_PRINT_CONFIG", print_config, F_BOOL, 0, 1,
        NULL),
    ROW(I_QUIET, "COEXEC_QUIET", quiet, F_BOOL, 0, 1, NULL),
    ROW(I_SERVICE_THREADS, "COEXEC_SERVICE_THREADS", service_threads, F_INT,
        1, SVC_MAX_THREADS, NULL),
    ROW(I_SERVICE_MAX_THREADS, "COEXEC_SERVICE_MAX_THREADS",
        service_max_threads, F_INT, 1, SVC_MAX_THREADS, NULL),
    ROW(I_SERVICE_SPIN_US, "COEXEC_SERVICE_SPIN_US", service_spin_us,
        F_UNSIGNED, 0, SPIN_MAX_US, "microseconds"),
    ROW(I_SERVICE_CPUS, "COEXEC_SERVICE_CPUS", service_cpus, F_CPUS, 0, 0,
        NULL),
    ENUM_ROW(I_SERVICE_IO, "COEXEC_SERVICE_IO", service_io, io_names,
             "auto, uring or threads",
             "COEXEC_SERVICE_IO_AUTO, _URING or _THREADS"),
    ROW(I_FJ_SLOTS, "COEXEC_FJ_SLOTS", fj_slots, F_SIZE, 64, 1u << 24, NULL),
    ROW(I_STATS, "COEXEC_STATS", stats, F_BOOL, 0, 1, NULL),
    ENUM_ROW(I_DUMP_SIGNAL, "COEXEC_DUMP_SIGNAL", dump_signal, signal_names,
             "none, SIGUSR1, SIGUSR2 or SIGQUIT",
             "0, SIGUSR1, SIGUSR2 or SIGQUIT"),
    ROW(I_HANG_DUMP, "COEXEC_HANG_DUMP", hang_dump_s, F_UNSIGNED, 0, 86400,
        "seconds"),
    ROW(I_TRACE, "COEXEC_TRACE", trace_path, F_PATH, 0,
        sizeof(((coexec_config_t *)0)->trace_path), NULL),
    ROW(I_TRACE_EVENTS, "COEXEC_TRACE_EVENTS", trace_events, F_UNSIGNED, 1024,
        1u << 28, "events"),
    ROW(I_STREAM_SIGNALS, "COEXEC_STREAM_SIGNALS", stream_signals, F_BOOL, 0, 1,
        NULL),
    ROW(I_GUARD_APP, "COEXEC_GUARD_APP", guard_app, F_BOOL, 0, 1, NULL),
    ROW(I_UNIT_DATA_SIZE, "COEXEC_UNIT_DATA_SIZE", unit_data_size, F_SIZE, 0,
        COEXEC__MAX_UNIT_DATA, NULL),
};

/* "16K", "1G", "4096": a size as a person writes it. */
static void size_text(char *buf, size_t len, uint64_t v)
{
    if (v && v % (1u << 30) == 0)
        snprintf(buf, len, "%lluG", (unsigned long long)(v >> 30));
    else if (v && v % (1u << 20) == 0)
        snprintf(buf, len, "%lluM", (unsigned long long)(v >> 20));
    else if (v && v % (1u << 10) == 0)
        snprintf(buf, len, "%lluK", (unsigned long long)(v >> 10));
    else
        snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* What a valid value of f is, as the variable (env) or the field takes it. */
static void want_text(const struct field *f, bool env, char *buf, size_t len)
{
    char lo[32], hi[32];
    switch (f->kind) {
    case F_INT:
    case F_UNSIGNED:
        snprintf(buf, len, "a whole number%s%s from %llu to %llu%s%s",
                 f->unit ? " of " : "", f->unit ? f->unit : "",
                 (unsigned long long)f->min, (unsigned long long)f->max,
                 f->names ? ", or " : "",
                 !f->names ? "" : env ? f->ewant : f->cwant);
        break;
    case F_SIZE:
        size_text(lo, sizeof lo, f->min);
        size_text(hi, sizeof hi, f->max);
        snprintf(buf, len, "a size %sfrom %s to %s%s", env ? "" : "in bytes ",
                 lo, hi, env ? " (bytes, or with a K/M/G suffix)" : "");
        break;
    case F_BOOL:
        snprintf(buf, len, "%s",
                 env ? "0/1, yes/no, true/false or on/off" : "0 or 1");
        break;
    case F_ENUM:
        snprintf(buf, len, "%s", env ? f->ewant : f->cwant);
        break;
    case F_CPUS:
        snprintf(buf, len, "%s",
                 "CPU numbers and ranges such as \"3\", \"2,3\" or "
                 "\"0-3,8\", of CPUs this process may run on");
        break;
    case F_PATH:
        snprintf(buf, len, "a file path of at most %llu characters",
                 (unsigned long long)f->max - 1);
        break;
    }
}

/* Fails init for a bad value of f: COEXEC_EENV naming the variable when it
 * came from the environment (the message also goes to stderr: whoever set
 * the variable may not see the return code), COEXEC_EINVAL naming the field
 * otherwise. `why` says what is wrong when "not valid" is not enough;
 * `want`, when not NULL, replaces what the row says is valid. */
static int field_error(const struct field *f, bool env, const char *val,
                       const char *why, const char *want)
{
    char buf[256];
    if (!want) {
        want_text(f, env, buf, sizeof buf);
        want = buf;
    }
    if (env) {
        coexec__set_init_error("coexec_init: %s=\"%s\" is not valid%s%s: "
                               "expected %s",
                               f->var, val, why ? ": " : "", why ? why : "",
                               want);
        fprintf(stderr, "%s\n", init_error);
        return COEXEC_EENV;
    }
    coexec__set_init_error("coexec_init: cfg.%s = %s is not valid%s%s: "
                           "expected %s",
                           f->name, val, why ? ": " : "", why ? why : "", want);
    return COEXEC_EINVAL;
}

/* Checks a CPU list: its syntax, and that the process may run on every CPU
 * it names, so that no thread meant to be pinned runs unpinned. */
static int check_cpus(const struct field *f, bool env, const char *s,
                      const char *shown)
{
    int cpus[COEXEC__MAX_CPULIST], n, bad = -1;
    const char *why = coexec__cpulist_parse(s, cpus, COEXEC__MAX_CPULIST, &n);
    if (why)
        return field_error(f, env, shown, why, NULL);
    char avail[96] = "", msg[160];
    int ok = coexec__affinity_cpus_allowed(cpus, n, &bad, avail, sizeof avail);
    if (ok < 0)
        return ok;
    if (!ok) {
        snprintf(msg, sizeof msg, "this process may not run on CPU %d "
                 "(it may run on %s)", bad, avail);
        return field_error(f, env, shown, msg, NULL);
    }
    return COEXEC_OK;
}

/* Parses the variable's text v into f's field of cfg. */
static int apply_one(const struct field *f, const char *v, coexec_config_t *cfg)
{
    void *p = (char *)cfg + f->off;
    uint64_t x;
    int b;
    switch (f->kind) {
    case F_INT:
    case F_UNSIGNED:
    case F_SIZE:
        for (const struct name_val *nv = f->names; nv && nv->name; nv++)
            if (!strcasecmp(v, nv->name)) {
                if (f->kind == F_INT)
                    *(int *)p = nv->val;
                else
                    *(unsigned *)p = (unsigned)nv->val;
                return COEXEC_OK;
            }
        if (!parse_u64(v, f->kind == F_SIZE, &x) || x < f->min || x > f->max)
            return field_error(f, true, v, NULL, NULL);
        if (f->kind == F_INT)
            *(int *)p = (int)x;
        else if (f->kind == F_UNSIGNED)
            *(unsigned *)p = (unsigned)x;
        else
            *(size_t *)p = (size_t)x;
        return COEXEC_OK;
    case F_BOOL:
        if (!parse_bool(v, &b))
            return field_error(f, true, v, NULL, NULL);
        *(int *)p = b;
        return COEXEC_OK;
    case F_ENUM:
        for (const struct name_val *nv = f->names; nv->name; nv++)
            if (!strcasecmp(v, nv->name)) {
                *(int *)p = nv->val;
                return COEXEC_OK;
            }
        return field_error(f, true, v, NULL, NULL);
    case F_CPUS: {
        char why[48];
        size_t cap = sizeof cfg->service_cpus;
        snprintf(why, sizeof why, "longer than %zu characters", cap - 1);
        if (strlen(v) >= cap)
            return field_error(f, true, v, why, NULL);
        int rc = check_cpus(f, true, v, v);
        if (rc)
            return rc;
        memcpy(p, v, strlen(v) + 1);
        return COEXEC_OK;
    }
    case F_PATH:
        if (strlen(v) >= f->max)
            return field_error(f, true, v, NULL, NULL);
        memcpy(p, v, strlen(v) + 1);
        return COEXEC_OK;
    }
    return COEXEC_OK;
}

/* Checks f's field of cfg as the struct gives it. */
static int check_one(const struct field *f, const coexec_config_t *cfg)
{
    const void *p = (const char *)cfg + f->off;
    char val[96];
    switch (f->kind) {
    case F_INT: {
        int v = *(const int *)p;
        for (const struct name_val *nv = f->names; nv && nv->name; nv++)
            if (v == nv->val)
                return COEXEC_OK; /* a named value (COEXEC_NUM_XSTREAMS_ALL) */
        snprintf(val, sizeof val, "%d", v);
        if (v < 0 || (uint64_t)v < f->min || (uint64_t)v > f->max)
            return field_error(f, false, val, NULL, NULL);
        return COEXEC_OK;
    }
    case F_UNSIGNED: {
        unsigned v = *(const unsigned *)p;
        snprintf(val, sizeof val, "%u", v);
        if (v < f->min || v > f->max)
            return field_error(f, false, val, NULL, NULL);
        return COEXEC_OK;
    }
    case F_SIZE: {
        size_t v = *(const size_t *)p;
        snprintf(val, sizeof val, "%zu", v);
        if (v < f->min || v > f->max)
            return field_error(f, false, val, NULL, NULL);
        return COEXEC_OK;
    }
    case F_BOOL: {
        int v = *(const int *)p;
        snprintf(val, sizeof val, "%d", v);
        if (v != 0 && v != 1)
            return field_error(f, false, val, NULL, NULL);
        return COEXEC_OK;
    }
    case F_ENUM: {
        int v = *(const int *)p;
        snprintf(val, sizeof val, "%d", v);
        for (const struct name_val *nv = f->names; nv->name; nv++)
            if (nv->val == v)
                return COEXEC_OK;
        return field_error(f, false, val, NULL, NULL);
    }
    case F_CPUS: {
        const char *s = p;
        if (!memchr(s, '\0', sizeof cfg->service_cpus))
            return field_error(f, false, "(no terminating NUL)", NULL, NULL);
        if (!*s)
            return COEXEC_OK; /* the default: the binding's last CPU */
        snprintf(val, sizeof val, "\"%s\"", s);
        return check_cpus(f, false, s, val);
    }
    case F_PATH:
        if (!memchr(p, '\0', f->max))
            return field_error(f, false, "(no terminating NUL)", NULL, NULL);
        return COEXEC_OK;
    }
    return COEXEC_OK;
}

int coexec__config_apply_env(coexec_config_t *cfg, uint32_t *from_env)
{
    *from_env = 0;
    for (size_t i = 0; i < NFIELDS; i++) {
        const char *v = getenv(fields[i].var);
        if (!v)
            continue;
        int rc = apply_one(&fields[i], v, cfg);
        if (rc != COEXEC_OK)
            return rc;
        *from_env |= 1u << i;
    }
    return COEXEC_OK;
}

int coexec__config_validate(const coexec_config_t *cfg, uint32_t from_env)
{
    /* Values from the environment were checked as they were read. */
    for (size_t i = 0; i < NFIELDS; i++) {
        if (from_env & (1u << i))
            continue;
        int rc = check_one(&fields[i], cfg);
        if (rc != COEXEC_OK)
            return rc;
    }
    /* The service keeps service_threads threads and grows to at most
     * service_max_threads. The maximum is not raised to fit: the kept
     * count is named (as a variable if the environment set it), unless
     * only the maximum came from the environment. */
    if (cfg->service_max_threads < cfg->service_threads) {
        bool t_env = from_env & (1u << I_SERVICE_THREADS);
        bool m_env = from_env & (1u << I_SERVICE_MAX_THREADS);
        char val[32], want[200];
        if (m_env && !t_env) {
            snprintf(val, sizeof val, "%d", cfg->service_max_threads);
            snprintf(want, sizeof want,
                     "a whole number from the threads the service keeps, %d "
                     "(service_threads, COEXEC_SERVICE_THREADS), to %d",
                     cfg->service_threads, SVC_MAX_THREADS);
            return field_error(&fields[I_SERVICE_MAX_THREADS], true, val,
                               NULL, want);
        }
        snprintf(val, sizeof val, "%d", cfg->service_threads);
        snprintf(want, sizeof want,
                 "a whole number from 1 to the service's maximum, %d "
                 "(service_max_threads, COEXEC_SERVICE_MAX_THREADS)",
                 cfg->service_max_threads);
        return field_error(&fields[I_SERVICE_THREADS], t_env, val, NULL,
                           want);
    }
    return COEXEC_OK;
}

COEXEC_API int coexec_get_config(coexec_config_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    *out = coexec__g.cfg;
    return COEXEC_OK;
}

static const char *sched_kind_name(coexec_sched_kind_t k)
{
    switch (k) {
    case COEXEC_SCHED_BASIC:
        return "basic";
    case COEXEC_SCHED_BASIC_WAIT:
        return "basic_wait";
    case COEXEC_SCHED_PRIO:
        return "prio";
    case COEXEC_SCHED_RANDWS:
        return "randws";
    default:
        return "user";
    }
}

COEXEC_API int coexec_print_config(void *fp)
{
    RT_CHECK();
    FILE *f = fp ? (FILE *)fp : stderr;
    const coexec_config_t *c = &coexec__g.cfg;
    fprintf(f,
            "coexec %s: xstreams=%d stack_size=%zu sched=%s event_freq=%u "
            "affinity=%d idle_spin_us=%u guard_size=%zu fj_slots=%zu\n",
            coexec_version_string(), c->num_xstreams, c->stack_size,
            sched_kind_name(c->sched_kind),
            c->event_freq, c->affinity, c->idle_spin_us, coexec__g.guard_size,
            c->fj_slots);
    pthread_mutex_lock(&coexec__g.lock);
    fprintf(f, "coexec placement: %s;", coexec__affinity_describe());
    for (int r = 0; r < MAX_XSTREAMS; r++) {
        struct coexec_xstream_rec *xs = coexec__xsr.by_rank[r];
        if (xs)
            fprintf(f, " xs%d->cpu%d", r, xs->cpu);
    }
    fprintf(f, "\n");
    pthread_mutex_unlock(&coexec__g.lock);
    coexec_service_info_t si = {.size = sizeof si};
    if (coexec_service_get_info(&si) == COEXEC_OK)
        fprintf(f, "coexec service: threads=%d (max %d) cpu=%d%s spin_us=%u "
                   "io=%s\n", si.threads, c->service_max_threads, si.cpu,
                si.shares_cpu ? " (shared with a compute stream)" : "",
                c->service_spin_us, si.io_path);
    return COEXEC_OK;
}
