/*
 * coexec-bench: the libcoexec benchmark suite (the benchmarks, their goals
 * and the method: docs/BENCHMARKS.md).
 *
 * Usage: coexec-bench [--json [FILE|-]] [--reps N] [--list] [name ...]
 *
 *   (no name)     runs every benchmark; with names, only those
 *                 (xes_spin_pingpong, the cross-stream floor, runs always)
 *   --reps N      timed repetitions per benchmark (default 21; published
 *                 figures need at least 11); 2 untimed warm-ups precede
 *   --json FILE   also writes the figures as JSON to FILE; with "-" (or
 *                 no FILE) the JSON goes to stdout and the text lines to
 *                 stderr
 *   --list        prints every benchmark's name, unit and description
 *
 * Output: one `name value unit` line per benchmark on stdout, the median of
 * the timed repetitions (each timed with clock_gettime(CLOCK_MONOTONIC));
 * `name NA n/a` when this configuration cannot run it. On stderr: a header
 * (CPU model, CPUs online and allowed, kernel, compiler, build type, git
 * commit, library version, date of the run in UTC), then per benchmark its
 * spread (min, median, max, reps), setup, goal and what to read it
 * against, and at the end a summary table: each figure, its goal, whether
 * it is met, and its ratio to the peers measured in the same run (pairs[]).
 * Every line of text is at most TEXT_WIDTH columns; the JSON carries the
 * same header fields, figures and ratios. ult_memory / ult_memory_vsz and
 * tasklet_memory are measured once, each kind in a fresh process, on a
 * cold runtime.
 *
 * The benchmarks set the number of streams and the pinning themselves:
 * COEXEC_NUM_XSTREAMS and COEXEC_AFFINITY are ignored (removed from the
 * environment); the other COEXEC_* variables apply as usual.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <coexec.h>

#include "bench.h"

#define DEFAULT_REPS 21
#define MIN_PUBLISHED_REPS 11
#define WARMUPS 2
#define TEXT_WIDTH 100 /* the widest line of text output */

/* Set by bench/CMakeLists.txt. */
#ifndef COEXEC_BENCH_BUILD_TYPE
#define COEXEC_BENCH_BUILD_TYPE "unknown"
#endif
#ifndef COEXEC_BENCH_GIT_COMMIT
#define COEXEC_BENCH_GIT_COMMIT "unknown"
#endif
#if defined(__clang__)
#define BENCH_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define BENCH_COMPILER "gcc " __VERSION__
#else
#define BENCH_COMPILER "unknown"
#endif

typedef struct result {
    const bench_def_t *def;
    int ok;
    double min, median, max;
    int reps;
    char setup[1024];
    char error[1024];
    char reference[256]; /* measured in this run (bench_run_t.reference) */
    double units;        /* bench_run_t.units */
} result_t;

/*
 * The in-run comparisons: each figure beside a peer measured in the same
 * run (a pthread or libgomp equivalent, the direct call, or the floor
 * xes_spin_pingpong of a 2-xstream figure). The summary and the JSON give
 * figure / peer (per work unit when per_unit: both note their task count)
 * when both ran; goal_ratio > 0 is the figure's goal as an upper bound on
 * that ratio.
 */
typedef struct pair {
    const char *figure;
    const char *peer;
    int per_unit;
    double goal_ratio;
} pair_t;

static const pair_t pairs[] = {
    {"ult_yield_1es", "ctx_switch", 0, 0},
    {"ult_create_join_1es", "pthread_create_join", 0, 0},
    {"ult_create_join_2es", "pthread_create_join", 0, 0},
    {"ult_create_join_2es", "xes_spin_pingpong", 0, 0},
    {"tasklet_create_join_1es", "omp_task_create_join", 0, 0},
    {"fib_ult_1es", "omp_fib_1t", 0, 0},
    {"fib_ult_2es", "omp_fib_2t", 0, 0},
    {"fib_ult_2es_ws", "omp_fib_2t", 0, 0},
    {"steal_throughput", "xes_spin_pingpong", 0, 0},
    {"fj_fib_1es", "omp_fib_1es", 1, 0},
    {"fj_fib_2es", "omp_fib_2es", 1, 0},
    {"parallel_for_2es", "omp_parallel_for_2es", 0, 1.10}, /* within 10% */
    {"eventual_pingpong_2es", "pthread_mutex_cond_pingpong_2t", 0, 0},
    {"eventual_pingpong_2es", "xes_spin_pingpong", 0, 0},
    {"wake_latency_2es", "xes_spin_pingpong", 0, 0},
    {"mutex_contended", "pthread_mutex_contended_4t", 0, 0},
    {"channel_pingpong_2es", "pthread_channel_pingpong_2t", 0, 0},
    {"channel_pingpong_2es", "xes_spin_pingpong", 0, 0},
    {"offload_roundtrip_2es", "syscall_direct", 0, 0},
    {"offload_roundtrip_2es", "xes_spin_pingpong", 0, 0},
    {"offload_throughput_64", "offload_roundtrip_2es", 0, 0},
    {"file_read_throughput", "pthread_file_read_throughput", 0, 0},
    {"file_read_throughput_uring", "file_read_throughput_threads", 0, 0},
    {"pread_roundtrip_uring", "pread_roundtrip_threads", 0, 0},
    {"mpi_pingpong_2ranks", "mpi_pingpong_plain_2ranks", 0, 1.5},
    /* the Argobots API over libcoexec beside libcoexec's own API */
    {"abt_create_join_1es", "ult_create_join_1es", 0, 0},
    {"abt_yield_1es", "ult_yield_1es", 0, 0},
    {"abt_tasklet_create_join_1es", "tasklet_create_join_1es", 0, 0},
    {"abt_eventual_pingpong_2es", "xes_spin_pingpong", 0, 0},
    {"abt_offload_handoff_2es", "xes_spin_pingpong", 0, 0},
    {"abt_fib_1es", "fib_ult_1es", 0, 0},
    {"abt_fib_2es", "fib_ult_2es", 0, 0},
};
#define NPAIRS (sizeof pairs / sizeof pairs[0])

/* ---- text output ----------------------------------------------------------- */

/* Prints text on f after prefix, broken at spaces so that no line is wider
 * than TEXT_WIDTH; the lines after the first start with cont. */
static void print_wrapped(FILE *f, const char *prefix, const char *cont,
                          const char *text)
{
    const char *lead = prefix;
    const char *p = text;
    do {
        size_t room = TEXT_WIDTH - strlen(lead);
        size_t n = strlen(p);
        if (n > room) {
            size_t cut = room;
            while (cut > 0 && p[cut] != ' ')
                cut--;
            n = cut ? cut : room; /* a word wider than the line is cut */
        }
        fprintf(f, "%s%.*s\n", lead, (int)n, p);
        p += n;
        while (*p == ' ')
            p++;
        lead = cont;
    } while (*p);
}

/* print_wrapped on stderr of a printf-formatted text. */
static void note(const char *prefix, const char *cont, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(const char *prefix, const char *cont, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    print_wrapped(stderr, prefix, cont, buf);
}

/* Where a benchmark's lines after its first go on stderr. */
#define DETAIL "#       "

/* ---- the suite ------------------------------------------------------------ */

static const bench_def_t *const tables[] = {
    bench_raw_defs,     bench_ult_defs,  bench_fj_defs, bench_wait_defs,
    bench_service_defs, bench_peer_defs, bench_mpi_defs, bench_abt_defs};
#define NTABLES (sizeof tables / sizeof tables[0])

static const bench_def_t *find_def(const char *name)
{
    for (size_t t = 0; t < NTABLES; t++)
        for (const bench_def_t *d = tables[t]; d->name; d++)
            if (strcmp(d->name, name) == 0)
                return d;
    return NULL;
}

static bench_run_t run_buf; /* large: kept off the stack */

static void run_one(const bench_def_t *d, int reps, result_t *res)
{
    bench_run_t *r = &run_buf;
    memset(r, 0, sizeof *r);
    r->name = d->name;
    r->reps = reps;
    r->warmups = WARMUPS;
    memset(res, 0, sizeof *res);
    res->def = d;
    fflush(stdout);
    fflush(stderr);
    int rc = d->fn(r);
    bench_restore_affinity();
    snprintf(res->setup, sizeof res->setup, "%.511s", r->setup);
    snprintf(res->reference, sizeof res->reference, "%.255s", r->reference);
    res->units = r->units;
    if (rc == 0 && r->nsamples == 0)
        rc = bench_fail(r, "no sample recorded");
    if (rc != 0) {
        snprintf(res->error, sizeof res->error, "%s",
                 r->error[0] ? r->error : "failed");
        return;
    }
    int n = r->nsamples;
    res->ok = 1;
    res->reps = n;
    res->median = bench_median(r->samples, n); /* sorts the samples */
    res->min = r->samples[0];
    res->max = r->samples[n - 1];
}

/* The goal as text ("<= 30 ns", ">= 90 %") and whether median meets it. */
static const char *goal_op(const bench_def_t *d)
{
    return d->goal < 0 ? ">=" : "<=";
}

static double goal_value(const bench_def_t *d)
{
    return d->goal < 0 ? -d->goal : d->goal;
}

static bool goal_met(const bench_def_t *d, double median)
{
    return d->goal < 0 ? median >= -d->goal : median <= d->goal;
}

static void print_result(FILE *out, const result_t *res)
{
    const bench_def_t *d = res->def;
    if (res->ok)
        fprintf(out, "%s %.*f %s\n", d->name, d->decimals, res->median,
                d->unit);
    else
        fprintf(out, "%s NA n/a\n", d->name);
    fflush(out);
    if (res->ok)
        note("#   ", DETAIL,
             "%s: min %.*f  median %.*f  max %.*f %s  (%d rep%s)", d->name,
             d->decimals, res->min, d->decimals, res->median, d->decimals,
             res->max, d->unit, res->reps, res->reps == 1 ? "" : "s");
    else
        note("#   ", DETAIL, "%s: NA: %s", d->name, res->error);
    if (res->setup[0])
        note(DETAIL "setup: ", DETAIL "  ", "%s", res->setup);
    /* The goal and what to read the median against. */
    if (d->goal != 0)
        note(DETAIL, DETAIL "  ", "goal %s %.*f %s%s", goal_op(d), d->decimals,
             goal_value(d), d->unit,
             !res->ok ? "" : goal_met(d, res->median) ? ": met" : ": NOT met");
    if (d->reference)
        note(DETAIL "reference: ", DETAIL "  ", "%s", d->reference);
    if (res->ok && res->reference[0])
        note(DETAIL "this run: ", DETAIL "  ", "%s", res->reference);
    fflush(stderr);
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v, int decimals)
{
    fprintf(f, "%.*f", decimals + 2, v);
}

static char config_text[512];
static coexec_config_t run_config;
static int have_config;

/* ---- the header: the machine, the build, the run ------------------------- */

static struct {
    char cpu_model[128]; /* /proc/cpuinfo "model name", or "unknown" */
    long cpus_online;
    char cpus_allowed[256]; /* bench_cpus, "0,1,..." */
    char kernel[128];       /* uname -r */
    char date[32];          /* start of the run, UTC, ISO 8601 */
} info;

static void collect_info(void)
{
    snprintf(info.cpu_model, sizeof info.cpu_model, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            char *colon = strchr(line, ':');
            if (strncmp(line, "model name", 10) != 0 || !colon)
                continue;
            colon += strspn(colon + 1, " \t") + 1;
            colon[strcspn(colon, "\n")] = '\0';
            if (*colon)
                snprintf(info.cpu_model, sizeof info.cpu_model, "%s", colon);
            break;
        }
        fclose(f);
    }
    info.cpus_online = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 0, len = 0; i < bench_ncpus && len < 200; i++)
        len += snprintf(info.cpus_allowed + len,
                        sizeof info.cpus_allowed - (size_t)len, "%s%d",
                        i ? "," : "", bench_cpus[i]);
    struct utsname u;
    snprintf(info.kernel, sizeof info.kernel, "%s",
             uname(&u) == 0 ? u.release : "unknown");
    time_t now = time(NULL);
    struct tm tm;
    if (!gmtime_r(&now, &tm) ||
        !strftime(info.date, sizeof info.date, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(info.date, sizeof info.date, "unknown");
}

static void print_header(int reps)
{
    note("# ", "#   ", "coexec-bench: libcoexec %s (headers %d.%d.%d), run %s",
         coexec_version_string(), COEXEC_VERSION_MAJOR, COEXEC_VERSION_MINOR,
         COEXEC_VERSION_PATCH, info.date);
    note("# ", "#   ", "cpu: %s; cpus: %ld online, allowed %s", info.cpu_model,
         info.cpus_online, info.cpus_allowed);
    note("# ", "#   ", "kernel %s; compiler %s; build %s, commit %s",
         info.kernel, BENCH_COMPILER, COEXEC_BENCH_BUILD_TYPE,
         COEXEC_BENCH_GIT_COMMIT);
    note("# ", "#   ",
         "median of %d timed reps after %d warm-ups; OpenMP comparisons: %s; "
         "goals and method: docs/BENCHMARKS.md",
         reps, WARMUPS,
#ifdef COEXEC_BENCH_HAVE_OPENMP
         "libgomp"
#else
         "not built (no OpenMP found)"
#endif
    );
    note("# ", "#   ", "%s", config_text);
}

/* ---- the summary: goals and in-run ratios ----------------------------------- */

/* Prints line on stderr without its trailing spaces. */
static void put_trimmed(const char *line)
{
    size_t n = strlen(line);
    while (n > 0 && line[n - 1] == ' ')
        n--;
    fprintf(stderr, "%.*s\n", (int)n, line);
}

static const result_t *find_result(const result_t *res, int n,
                                   const char *name)
{
    for (int i = 0; i < n; i++)
        if (res[i].ok && strcmp(res[i].def->name, name) == 0)
            return &res[i];
    return NULL;
}

/* 1 and *ratio = figure / peer when both ran in this run; else 0. */
static int pair_ratio(const pair_t *p, const result_t *res, int n,
                      double *ratio)
{
    const result_t *a = find_result(res, n, p->figure);
    const result_t *b = find_result(res, n, p->peer);
    if (!a || !b || b->median <= 0)
        return 0;
    if (!p->per_unit) {
        *ratio = a->median / b->median;
        return 1;
    }
    if (a->units <= 0 || b->units <= 0)
        return 0;
    *ratio = (a->median / a->units) / (b->median / b->units);
    return 1;
}

/* A ratio with 3 significant digits and no exponent. */
static void format_ratio(char *buf, size_t size, double ratio)
{
    int digits = ratio > 0 ? 2 - (int)floor(log10(ratio)) : 2;
    digits = digits < 2 ? 2 : digits > 9 ? 9 : digits;
    snprintf(buf, size, "%.*f", digits, ratio);
}

/* The pair that gives the figure name a goal (goal_ratio), or NULL. */
static const pair_t *ratio_goal(const char *name)
{
    for (size_t p = 0; p < NPAIRS; p++)
        if (pairs[p].goal_ratio > 0 && strcmp(pairs[p].figure, name) == 0)
            return &pairs[p];
    return NULL;
}

static void print_summary(const result_t *res, int n)
{
    int wname = 9, wval = 6, wunit = 4, wgoal = 4;
    char val[128][32], goal[128][32];
    for (int i = 0; i < n; i++) {
        const bench_def_t *d = res[i].def;
        if (res[i].ok)
            snprintf(val[i], sizeof val[i], "%.*f", d->decimals,
                     res[i].median);
        else
            snprintf(val[i], sizeof val[i], "NA");
        goal[i][0] = '\0';
        const pair_t *rg = ratio_goal(d->name);
        if (d->goal != 0)
            snprintf(goal[i], sizeof goal[i], "%s %.*f", goal_op(d), d->decimals,
                     goal_value(d));
        else if (rg)
            snprintf(goal[i], sizeof goal[i], "<= %.2fx", rg->goal_ratio);
        int len = (int)strlen(d->name);
        wname = len > wname ? len : wname;
        len = (int)strlen(val[i]);
        wval = len > wval ? len : wval;
        len = (int)strlen(d->unit);
        wunit = len > wunit ? len : wunit;
        len = (int)strlen(goal[i]);
        wgoal = len > wgoal ? len : wgoal;
    }
    fprintf(stderr, "#\n");
    note("# ", "#   ",
         "summary: the median of each figure, its goal, and its ratio to "
         "the peers measured in this run (figure / peer)");
    char line[512];
    int col = snprintf(line, sizeof line, "# %-*s %*s %-*s %-*s %-3s ",
                       wname, "benchmark", wval, "median", wunit, "unit",
                       wgoal, "goal", "met");
    fprintf(stderr, "%sratio to peer\n", line);
    for (int i = 0; i < n; i++) {
        const bench_def_t *d = res[i].def;
        const char *met = "";
        const pair_t *rg = ratio_goal(d->name);
        double r;
        if (d->goal != 0)
            met = !res[i].ok ? "-" : goal_met(d, res[i].median) ? "yes" : "NO";
        else if (rg)
            met = !pair_ratio(rg, res, n, &r) ? "-"
                  : r <= rg->goal_ratio      ? "yes"
                                             : "NO";
        /* A line longer than the buffer is cut: the table is for reading. */
        if (snprintf(line, sizeof line, "# %-*s %*s %-*s %-*s %-3s ", wname,
                     d->name, wval, val[i], wunit, res[i].ok ? d->unit : "",
                     wgoal, goal[i], met) >= (int)sizeof line)
            line[sizeof line - 1] = '\0';
        int first = 1;
        for (size_t p = 0; p < NPAIRS; p++) {
            double ratio;
            if (strcmp(pairs[p].figure, d->name) != 0 ||
                !pair_ratio(&pairs[p], res, n, &ratio))
                continue;
            char vs[128], text[32];
            format_ratio(text, sizeof text, ratio);
            int len = snprintf(vs, sizeof vs, "%sx %s%s", text,
                               pairs[p].peer,
                               pairs[p].per_unit ? " per task" : "");
            if (first && col + len <= TEXT_WIDTH) {
                fprintf(stderr, "%s%s\n", line, vs);
            } else {
                if (first)
                    put_trimmed(line);
                int pad = col + len <= TEXT_WIDTH ? col : TEXT_WIDTH - len;
                fprintf(stderr, "#%*s%s\n", pad - 1, "", vs);
            }
            first = 0;
        }
        if (first)
            put_trimmed(line);
    }
}

static int write_json(FILE *f, const result_t *res, int n, int reps,
                      double floor_recheck)
{
    fprintf(f, "{\n  \"suite\": \"coexec-bench\",\n  \"library_version\": ");
    json_string(f, coexec_version_string());
    static const char *const keys[] = {"date", "cpu_model", "kernel",
                                       "compiler", "build_type", "git_commit"};
    const char *const vals[] = {info.date, info.cpu_model, info.kernel,
                                BENCH_COMPILER, COEXEC_BENCH_BUILD_TYPE,
                                COEXEC_BENCH_GIT_COMMIT};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        fprintf(f, ",\n  \"%s\": ", keys[k]);
        json_string(f, vals[k]);
    }
    fprintf(f, ",\n  \"cpus_online\": %ld,\n  \"cpus_allowed\": [",
            info.cpus_online);
    for (int i = 0; i < bench_ncpus; i++)
        fprintf(f, "%s%d", i ? ", " : "", bench_cpus[i]);
    fprintf(f, "],\n  \"reps\": %d,\n  \"warmups\": %d,\n", reps, WARMUPS);
    if (have_config)
        fprintf(f,
                "  \"config\": {\"stack_size\": %zu, \"sched\": \"%s\", "
                "\"event_freq\": %u, \"idle_spin_us\": %u, "
                "\"guard_size\": %zu, \"service_threads\": %d, "
                "\"service_max_threads\": %d, \"service_spin_us\": %u},\n",
                run_config.stack_size, bench_sched_name(run_config.sched_kind),
                run_config.event_freq, run_config.idle_spin_us,
                run_config.guard_size, run_config.service_threads,
                run_config.service_max_threads, run_config.service_spin_us);
    fprintf(f, "  \"setup\": ");
    json_string(f, config_text);
    if (floor_recheck > 0) {
        fprintf(f, ",\n  \"xes_spin_pingpong_end\": ");
        json_number(f, floor_recheck, 1);
    }
    fprintf(f, ",\n  \"results\": [\n");
    for (int i = 0; i < n; i++) {
        const result_t *x = &res[i];
        fprintf(f, "    {\"name\": ");
        json_string(f, x->def->name);
        if (x->ok) {
            fprintf(f, ", \"value\": ");
            json_number(f, x->median, x->def->decimals);
            fprintf(f, ", \"unit\": ");
            json_string(f, x->def->unit);
            fprintf(f, ", \"min\": ");
            json_number(f, x->min, x->def->decimals);
            fprintf(f, ", \"median\": ");
            json_number(f, x->median, x->def->decimals);
            fprintf(f, ", \"max\": ");
            json_number(f, x->max, x->def->decimals);
            fprintf(f, ", \"reps\": %d", x->reps);
        } else {
            fprintf(f, ", \"value\": null, \"unit\": \"n/a\", \"error\": ");
            json_string(f, x->error);
        }
        if (x->setup[0]) {
            fprintf(f, ", \"setup\": ");
            json_string(f, x->setup);
        }
        if (x->def->goal != 0) {
            fprintf(f, ", \"goal\": ");
            json_number(f, goal_value(x->def), x->def->decimals);
            fprintf(f, ", \"goal_kind\": \"%s\"",
                    x->def->goal < 0 ? "min" : "max");
            if (x->ok)
                fprintf(f, ", \"goal_met\": %s",
                        goal_met(x->def, x->median) ? "true" : "false");
        }
        if (x->def->reference) {
            fprintf(f, ", \"reference\": ");
            json_string(f, x->def->reference);
        }
        if (x->ok && x->reference[0]) {
            fprintf(f, ", \"reference_this_run\": ");
            json_string(f, x->reference);
        }
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    /* The summary's ratios: figure / peer, both measured in this run. */
    fprintf(f, "  ],\n  \"comparisons\": [");
    int nc = 0;
    for (size_t p = 0; p < NPAIRS; p++) {
        double ratio;
        if (!pair_ratio(&pairs[p], res, n, &ratio))
            continue;
        fprintf(f, "%s\n    {\"figure\": ", nc++ ? "," : "");
        json_string(f, pairs[p].figure);
        fprintf(f, ", \"peer\": ");
        json_string(f, pairs[p].peer);
        fprintf(f, ", \"basis\": \"%s\", \"ratio\": ",
                pairs[p].per_unit ? "per task" : "median");
        fprintf(f, "%.4g", ratio);
        if (pairs[p].goal_ratio > 0)
            fprintf(f, ", \"goal_ratio\": %.2f, \"goal_met\": %s",
                    pairs[p].goal_ratio,
                    ratio <= pairs[p].goal_ratio ? "true" : "false");
        fprintf(f, "}");
    }
    fprintf(f, "%s]\n}\n", nc ? "\n  " : "");
    return ferror(f) ? -1 : 0;
}

/* Reads the configuration in force (defaults plus COEXEC_* variables). */
static void probe_config(void)
{
    coexec_config_t cfg;
    int rc = coexec_config_init(&cfg);
    if (rc == COEXEC_OK) {
        cfg.num_xstreams = 1;
        rc = coexec_init(&cfg);
    }
    if (rc != COEXEC_OK) {
        snprintf(config_text, sizeof config_text,
                 "runtime: coexec_init failed: %s (%s)", coexec_err_name(rc),
                 coexec_init_error());
        return;
    }
    if (coexec_get_config(&run_config) == COEXEC_OK) {
        have_config = 1;
        snprintf(config_text, sizeof config_text,
                 "runtime: stack %zu B, sched %s, idle spin %u us, "
                 "event_freq %u, guard %zu B, streams pinned (affinity on); "
                 "default setup: one MPMC LIFO pool per stream, stealing on; "
                 "service stream: %d thread(s) kept, up to %d, idle spin %u us",
                 run_config.stack_size, bench_sched_name(run_config.sched_kind),
                 run_config.idle_spin_us, run_config.event_freq,
                 run_config.guard_size,
                 run_config.service_threads, run_config.service_max_threads,
                 run_config.service_spin_us);
    }
    rc = coexec_finalize();
    if (rc != COEXEC_OK)
        fprintf(stderr, "# warning: coexec_finalize: %s\n",
                coexec_err_name(rc));
    bench_restore_affinity();
}

static void usage(FILE *f, const char *argv0)
{
    fprintf(f,
            "usage: %s [--json [FILE|-]] [--reps N] [--list] [name ...]\n"
            "  Runs every benchmark, or only the ones named (the floor\n"
            "  xes_spin_pingpong always runs). Prints `name value unit` on\n"
            "  stdout, the median of the timed reps; the spread and the setup\n"
            "  on stderr.\n"
            "  --json [FILE|-]  also write the figures as JSON (stdout when\n"
            "                   FILE is - or absent; text lines then go to stderr)\n"
            "  --reps N         timed repetitions (default %d), after %d warm-ups\n"
            "  --list           list the benchmarks with their units\n",
            argv0, DEFAULT_REPS, WARMUPS);
}

static int is_two_stream(const char *name)
{
    size_t n = strlen(name);
    return (n > 4 && strcmp(name + n - 4, "_2es") == 0) ||
           strstr(name, "_2es_") != NULL || /* fib_ult_2es_ws */
           strcmp(name, "steal_throughput") == 0 ||
           strcmp(name, "mutex_contended") == 0 || /* 4 ULTs on 2 streams */
           /* compute stream(s) plus the service stream on its own CPU */
           strncmp(name, "offload_", 8) == 0 ||
           strcmp(name, "file_read_throughput") == 0;
}

int main(int argc, char **argv)
{
    const char *json_path = NULL;
    int reps = DEFAULT_REPS;
    int list = 0;
    const bench_def_t *chosen[128];
    int nchosen = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--memory-child") == 0)
            return bench_memory_child(i + 1 < argc ? argv[i + 1] : "ult");
        if (strcmp(a, "--json") == 0) {
            /* FILE is optional: none, an option or a benchmark name next
             * means stdout. */
            if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0 &&
                !find_def(argv[i + 1]))
                json_path = argv[++i];
            else
                json_path = "-";
        } else if (strncmp(a, "--json=", 7) == 0) {
            json_path = a[7] ? a + 7 : "-";
        } else if (strcmp(a, "--reps") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > BENCH_MAX_SAMPLES) {
                fprintf(stderr, "%s: --reps wants 1..%d\n", argv[0],
                        BENCH_MAX_SAMPLES);
                return 2;
            }
            reps = (int)v;
        } else if (strcmp(a, "--list") == 0) {
            list = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout, argv[0]);
            return 0;
        } else if (a[0] == '-') {
            usage(stderr, argv[0]);
            return 2;
        } else {
            const bench_def_t *d = find_def(a);
            if (!d) {
                fprintf(stderr, "%s: unknown benchmark '%s' (see --list)\n",
                        argv[0], a);
                return 2;
            }
            if (nchosen < 128)
                chosen[nchosen++] = d;
        }
    }

    if (list) {
        char lead[64], cont[64];
        snprintf(cont, sizeof cont, "%47s", ""); /* under the description */
        for (size_t t = 0; t < NTABLES; t++)
            for (const bench_def_t *d = tables[t]; d->name; d++)
            {
                snprintf(lead, sizeof lead, "%-32s %-13s ", d->name, d->unit);
                print_wrapped(stdout, lead, cont, d->desc);
            }
        return 0;
    }

    /* The suite decides the number of streams and the pinning. */
    static const char *const owned_vars[] = {"COEXEC_NUM_XSTREAMS",
                                             "COEXEC_AFFINITY"};
    for (size_t i = 0; i < sizeof owned_vars / sizeof owned_vars[0]; i++)
        if (getenv(owned_vars[i])) {
            fprintf(stderr, "# note: %s ignored: each benchmark sets it\n",
                    owned_vars[i]);
            unsetenv(owned_vars[i]);
        }

    bench_affinity_init();

    /* Full run: every benchmark in table order. xes_spin_pingpong always
     * runs, first, as the floor of this run's 2-xstream figures. */
    const bench_def_t *floor_def = find_def("xes_spin_pingpong");
    const bench_def_t *order[128];
    int norder = 0;
    order[norder++] = floor_def;
    if (nchosen == 0) {
        for (size_t t = 0; t < NTABLES; t++)
            for (const bench_def_t *d = tables[t]; d->name; d++)
                if (d != floor_def)
                    order[norder++] = d;
    } else {
        for (int i = 0; i < nchosen; i++) {
            int dup = 0;
            for (int j = 0; j < norder; j++)
                dup |= order[j] == chosen[i];
            if (!dup)
                order[norder++] = chosen[i];
        }
    }

    probe_config();
    FILE *text = stdout;
    if (json_path && strcmp(json_path, "-") == 0)
        text = stderr;

    collect_info();
    print_header(reps);
    if (reps < MIN_PUBLISHED_REPS)
        fprintf(stderr, "# note: fewer than %d reps: not a publishable figure\n",
                MIN_PUBLISHED_REPS);

    static result_t results[128];
    uint64_t t_start = bench_now_ns();
    int any_2es = 0;
    for (int i = 0; i < norder; i++) {
        run_one(order[i], reps, &results[i]);
        if (i == 0 && results[0].ok)
            bench_floor_ns = results[0].median;
        print_result(text, &results[i]);
        any_2es |= results[i].ok && is_two_stream(order[i]->name);
    }

    /* The floor moves when the host moves the vCPUs: check it again. */
    double recheck = 0;
    if (any_2es && results[0].ok) {
        result_t again;
        run_one(floor_def, reps, &again);
        if (again.ok) {
            recheck = again.median;
            note("# ", "#   ",
                    "xes_spin_pingpong at the end of the run: %.1f ns "
                    "(start %.1f ns)%s",
                    again.median, results[0].median,
                    (again.median > 1.5 * results[0].median ||
                     results[0].median > 1.5 * again.median)
                        ? ": the floor moved during the run, 2-xstream "
                          "figures are not comparable"
                        : "");
        }
    }
    fprintf(stderr, "# suite took %.1f s\n",
            (double)(bench_now_ns() - t_start) / 1e9);
    print_summary(results, norder);

    int status = 0;
    if (json_path) {
        FILE *f = strcmp(json_path, "-") == 0 ? stdout : fopen(json_path, "w");
        if (!f) {
            fprintf(stderr, "%s: cannot write %s: %s\n", argv[0], json_path,
                    strerror(errno));
            return 1;
        }
        if (write_json(f, results, norder, reps, recheck) != 0)
            status = 1;
        if (f != stdout && fclose(f) != 0)
            status = 1;
        if (status)
            fprintf(stderr, "%s: error writing %s\n", argv[0], json_path);
    }
    return status;
}
