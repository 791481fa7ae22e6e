/*
 * src/core/config.c: configuration defaults and the COEXEC_* environment
 * variables. A malformed value is an error that names the variable; it is
 * never ignored.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/config.h"
#include "core/internal.h"
#include "service/service.h"

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

static int env_error(const char *var, const char *val, const char *want)
{
    coexec__set_init_error("coexec_init: %s=\"%s\" is malformed: expected %s",
                           var, val, want);
    fprintf(stderr, "%s\n", init_error);
    return COEXEC_EENV;
}

#define ENV_U64(var, min, max, suffixes, want, field, T)                       \
    do {                                                                       \
        const char *v_ = getenv(var);                                          \
        uint64_t x_;                                                           \
        if (v_) {                                                              \
            if (!parse_u64(v_, suffixes, &x_) || x_ + 1 < (uint64_t)(min) + 1 ||     \
                x_ > (max))     \
                return env_error(var, v_, want);                               \
            cfg->field = (T)x_;                                                \
        }                                                                      \
    } while (0)

#define ENV_BOOL(var, field)                                                   \
    do {                                                                       \
        const char *v_ = getenv(var);                                          \
        int b_;                                                                \
        if (v_) {                                                              \
            if (!parse_bool(v_, &b_))                                          \
                return env_error(var, v_, "0/1, yes/no, true/false or on/off"); \
            cfg->field = b_;                                                   \
        }                                                                      \
    } while (0)

int coexec__config_apply_env(coexec_config_t *cfg)
{
    ENV_U64("COEXEC_NUM_XSTREAMS", 1, MAX_XSTREAMS, false,
            "a whole number from 1 to 1024", num_xstreams, int);
    ENV_U64("COEXEC_STACK_SIZE", COEXEC_MIN_STACK, COEXEC_MAX_STACK, true,
            "a size from 16K to 1G (bytes, or with a K/M/G suffix)",
            stack_size, size_t);
    ENV_U64("COEXEC_GUARD_SIZE", 0, COEXEC__MAX_GUARD, true,
            "a size from 0 to 64M (bytes, or with a K/M suffix)", guard_size,
            size_t);
    ENV_U64("COEXEC_EVENT_FREQ", 1, 1u << 30, false,
            "a whole number of at least 1", event_freq, unsigned);
    ENV_U64("COEXEC_IDLE_SPIN_US", 0, 60u * 1000 * 1000, false,
            "microseconds, 0 to 60000000", idle_spin_us, unsigned);
    ENV_U64("COEXEC_SERVICE_THREADS", 1, 1024, false,
            "a whole number from 1 to 1024", service_threads, int);
    ENV_U64("COEXEC_SERVICE_MAX_THREADS", 1, 1024, false,
            "a whole number from 1 to 1024", service_max_threads, int);
    ENV_U64("COEXEC_SERVICE_SPIN_US", 0, 60u * 1000 * 1000, false,
            "microseconds, 0 to 60000000", service_spin_us, unsigned);
    const char *cpus = getenv("COEXEC_SERVICE_CPUS");
    if (cpus) {
        if (strlen(cpus) >= sizeof cfg->service_cpus ||
            coexec__service_check_cpus(cpus) != 0)
            return env_error("COEXEC_SERVICE_CPUS", cpus,
                             "a CPU number or a comma-separated list of them");
        strcpy(cfg->service_cpus, cpus);
    }
    const char *io = getenv("COEXEC_SERVICE_IO");
    if (io) {
        if (!strcasecmp(io, "auto"))
            cfg->service_io = COEXEC_SERVICE_IO_AUTO;
        else if (!strcasecmp(io, "uring") || !strcasecmp(io, "io_uring"))
            cfg->service_io = COEXEC_SERVICE_IO_URING;
        else if (!strcasecmp(io, "threads"))
            cfg->service_io = COEXEC_SERVICE_IO_THREADS;
        else
            return env_error("COEXEC_SERVICE_IO", io, "auto, uring or threads");
    }
    ENV_BOOL("COEXEC_AFFINITY", affinity);
    ENV_BOOL("COEXEC_PRINT_CONFIG", print_config);
    ENV_BOOL("COEXEC_QUIET", quiet);
    const char *v = getenv("COEXEC_SCHED");
    if (v) {
        if (!strcasecmp(v, "basic"))
            cfg->sched_kind = COEXEC_SCHED_BASIC;
        else if (!strcasecmp(v, "basic_wait") || !strcasecmp(v, "basic-wait"))
            cfg->sched_kind = COEXEC_SCHED_BASIC_WAIT;
        else if (!strcasecmp(v, "prio"))
            cfg->sched_kind = COEXEC_SCHED_PRIO;
        else if (!strcasecmp(v, "randws"))
            cfg->sched_kind = COEXEC_SCHED_RANDWS;
        else
            return env_error("COEXEC_SCHED", v,
                             "basic, basic_wait, prio or randws");
    }
    return COEXEC_OK;
}

int coexec__config_validate(const coexec_config_t *cfg)
{
    const char *bad = NULL;
    if (cfg->num_xstreams < 1 || cfg->num_xstreams > MAX_XSTREAMS)
        bad = "num_xstreams must be 1..1024";
    else if (cfg->stack_size < COEXEC_MIN_STACK ||
             cfg->stack_size > COEXEC_MAX_STACK)
        bad = "stack_size must be 16 KiB..1 GiB";
    else if (cfg->guard_size > COEXEC__MAX_GUARD)
        bad = "guard_size must be 0..64 MiB";
    else if ((unsigned)cfg->sched_kind > COEXEC_SCHED_RANDWS)
        bad = "sched_kind is not a built-in scheduler kind";
    else if (cfg->event_freq < 1)
        bad = "event_freq must be at least 1";
    else if (cfg->service_threads < 1 || cfg->service_threads > 1024)
        bad = "service_threads must be 1..1024";
    else if (cfg->service_max_threads < cfg->service_threads ||
             cfg->service_max_threads > 1024)
        bad = "service_max_threads must be service_threads..1024";
    else if (memchr(cfg->service_cpus, '\0', sizeof cfg->service_cpus) == NULL ||
             coexec__service_check_cpus(cfg->service_cpus) != 0)
        bad = "service_cpus must be a CPU number or a comma-separated list";
    else if (cfg->service_io != COEXEC_SERVICE_IO_AUTO &&
             cfg->service_io != COEXEC_SERVICE_IO_URING &&
             cfg->service_io != COEXEC_SERVICE_IO_THREADS)
        bad = "service_io must be COEXEC_SERVICE_IO_AUTO, _URING or _THREADS";
    if (bad) {
        coexec__set_init_error("coexec_init: %s", bad);
        return COEXEC_EINVAL;
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
            "affinity=%d idle_spin_us=%u guard_size=%zu\n",
            coexec_version_string(), c->num_xstreams, c->stack_size,
            sched_kind_name(c->sched_kind),
            c->event_freq, c->affinity, c->idle_spin_us, coexec__g.guard_size);
    pthread_mutex_lock(&coexec__g.lock);
    fprintf(f, "coexec placement: %s;", coexec__affinity_describe());
    for (int r = 0; r < MAX_XSTREAMS; r++) {
        struct coexec_xstream_rec *xs = coexec__g.xs_by_rank[r];
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
