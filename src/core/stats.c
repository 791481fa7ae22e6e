/*
 * src/core/stats.c: the streams' counters (coexec/stats.h) read, reset
 * and printed. The counting itself is in the rooms that do the work
 * (base/stats.h names the counters); this file only reads them, under
 * coexec__g.lock, which also guards the reset snapshot.
 */
#include <stdio.h>

#include <string.h>

#include "arch/clock.h"
#include "base/global.h"
#include "core/config.h"
#include "fj/fj.h"
#include "sched/sched.h"
#include "service/service.h"
#include "xstream/xstream.h"

/* The figures of one stream: its counters, then two gathered from
 * elsewhere (units stolen from its pools, tasks from its fork-join
 * worker), then its busy time. */
enum { S_STOLEN = XC_N, S_FJ_STOLEN, S_BUSY_NS, S_UNITS_RUN, S_SWITCHES, S_N };

/* A stream's figures since the reset, into v. Under coexec__g.lock. */
static void gather(struct coexec_xstream_rec *xs, uint64_t v[S_N])
{
    for (int i = 0; i < XC_N; i++)
        v[i] = atom_load_rlx_u64(&xs->count[i]);
    /* Acquire: a stopped stream's last figures. */
    uint64_t end = atom_load_acq_u64(&xs->stop_ns);
    uint64_t stolen = 0;
    struct coexec_sched_rec *s = atom_load_acq_ptr(&xs->sched);
    if (end)
        stolen = atom_load_rlx_u64(&xs->stolen_at_stop);
    else if (s)
        for (int i = 0; i < s->npools; i++)
            stolen += atom_load_rlx_u64(&s->pools[i]->stolen);
    v[S_STOLEN] = stolen;
    v[S_FJ_STOLEN] = coexec__fj_stolen(xs->rank);
    for (int i = 0; i < S_BUSY_NS; i++)
        v[i] = v[i] >= xs->count_base[i] ? v[i] - xs->count_base[i] : 0;
    if (!end)
        end = clock_now_ns();
    uint64_t span = end > xs->since_ns ? end - xs->since_ns : 0;
    uint64_t away = v[XC_IDLE_NS] + v[XC_PARKED_NS];
    v[S_BUSY_NS] = span > away ? span - away : 0;
    v[S_UNITS_RUN] = v[XC_ULT_RUNS] + v[XC_TASKLETS_RUN];
    v[S_SWITCHES] = v[XC_ULT_RUNS] + v[XC_SCHED_SWITCHES];
}

/* A stream record that ran in this init (live or stopped). */
static bool xs_counts(struct coexec_xstream_rec *xs)
{
    return xs->since_ns != 0;
}

COEXEC_API int coexec_xstream_get_stats(coexec_xstream_t xs,
                                        coexec_xstream_stats_t *st)
{
    if (!st || st->size == 0)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = CHECK_HANDLE(xs);
    if (rc)
        return rc;
    uint64_t v[S_N];
    pthread_mutex_lock(&coexec__g.lock);
    gather(xs.p, v);
    int rank = xs.p->rank;
    pthread_mutex_unlock(&coexec__g.lock);
    if (!HANDLE_STILL(xs))
        return COEXEC_EHANDLE;
    coexec_xstream_stats_t o = {
        .size = st->size < sizeof o ? st->size : sizeof o,
        .rank = rank,
        .units_run = v[S_UNITS_RUN],
        .tasklets_run = v[XC_TASKLETS_RUN],
        .switches = v[S_SWITCHES],
        .yields = v[XC_YIELDS],
        .parks = v[XC_PARKS],
        .wakes_local = v[XC_WAKES_LOCAL],
        .wakes_remote = v[XC_WAKES_REMOTE],
        .steals = v[XC_STEALS],
        .stolen = v[S_STOLEN],
        .fj_steals = v[XC_FJ_STEALS],
        .fj_stolen = v[S_FJ_STOLEN],
        .offloads = v[XC_OFFLOADS],
        .busy_ns = v[S_BUSY_NS],
        .idle_ns = v[XC_IDLE_NS],
        .parked_ns = v[XC_PARKED_NS],
    };
    memcpy(st, &o, o.size);
    return COEXEC_OK;
}

COEXEC_API int coexec_stats_reset(void)
{
    RT_CHECK();
    uint64_t now = clock_now_ns();
    pthread_mutex_lock(&coexec__g.lock);
    for (int i = 0; i < coexec__xsr.num_all; i++) {
        struct coexec_xstream_rec *xs = coexec__xsr.all[i];
        if (!xs_counts(xs))
            continue;
        uint64_t v[S_N];
        for (int k = 0; k < S_BUSY_NS; k++)
            xs->count_base[k] = 0;
        gather(xs, v);
        for (int k = 0; k < S_BUSY_NS; k++)
            xs->count_base[k] = v[k];
        xs->since_ns = now;
    }
    pthread_mutex_unlock(&coexec__g.lock);
    return COEXEC_OK;
}

/* ---- the table ------------------------------------------------------------ */

/* n in at most 6 characters: 123456, 1234.5k, 12.3M ... */
static const char *num6(char buf[16], uint64_t n)
{
    static const char unit[] = "kMGTPE";
    if (n < 1000000) {
        snprintf(buf, 16, "%llu", (unsigned long long)n);
        return buf;
    }
    double x = (double)n;
    int u = -1;
    while (x >= 999.95 && u < 5) {
        x /= 1000;
        u++;
    }
    snprintf(buf, 16, x < 99.95 ? "%.1f%c" : "%.0f%c", x, unit[u]);
    return buf;
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static const int cols[] = {S_UNITS_RUN, S_SWITCHES, XC_YIELDS, XC_PARKS,
                           XC_WAKES_LOCAL, XC_WAKES_REMOTE, XC_STEALS, S_STOLEN,
                           XC_FJ_STEALS, S_FJ_STOLEN, XC_OFFLOADS};
#define NCOLS (int)(sizeof cols / sizeof cols[0])

static void row(FILE *f, const char *label, const uint64_t v[S_N])
{
    char b[16];
    fprintf(f, "%-5s", label);
    for (int c = 0; c < NCOLS; c++)
        fprintf(f, " %6s", num6(b, v[cols[c]]));
    uint64_t span = v[S_BUSY_NS] + v[XC_IDLE_NS] + v[XC_PARKED_NS];
    fprintf(f, " %5.1f %5.1f %5.1f\n", pct(v[S_BUSY_NS], span),
            pct(v[XC_IDLE_NS], span), pct(v[XC_PARKED_NS], span));
}

int coexec__stats_print(FILE *f)
{
    fprintf(f, "coexec stats since init or reset (busy, idle, parkd: %% of "
               "wall time%s)\n",
            coexec__g.cfg.stats ? "" : "; idle is busy");
    fprintf(f, "%-5s %6s %6s %6s %6s %6s %6s %6s %6s %6s %6s %6s %5s %5s %5s\n",
            "rank", "run", "switch", "yield", "park", "wake-l", "wake-r",
            "steal", "stolen", "fjstl", "fjstd", "offl", "busy", "idle",
            "parkd");
    uint64_t tot[S_N] = {0};
    pthread_mutex_lock(&coexec__g.lock);
    for (int i = 0; i < coexec__xsr.num_all; i++) {
        struct coexec_xstream_rec *xs = coexec__xsr.all[i];
        if (!xs_counts(xs))
            continue;
        uint64_t v[S_N];
        gather(xs, v);
        char label[16];
        snprintf(label, sizeof label, "%d", xs->rank);
        row(f, label, v);
        for (int k = 0; k < S_N; k++)
            tot[k] += v[k];
    }
    pthread_mutex_unlock(&coexec__g.lock);
    row(f, "all", tot);
    coexec_service_info_t si = {.size = sizeof si};
    if (!coexec__service_live())
        fprintf(f, "service: not started (no call was offloaded)\n");
    else if (coexec_service_get_info(&si) == COEXEC_OK)
        fprintf(f, "service: %d thread(s) (%d idle) on cpu %d, %llu call(s) "
                   "completed, file I/O through %s\n",
                si.threads, si.idle, si.cpu, (unsigned long long)si.completed,
                si.io_path);
    return COEXEC_OK;
}

COEXEC_API int coexec_stats_print(void *fp)
{
    RT_CHECK();
    return coexec__stats_print(fp ? (FILE *)fp : stderr);
}
