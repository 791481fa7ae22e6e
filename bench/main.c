/*
 * coexec-bench: the libcoexec benchmark suite (definitions and figures to
 * beat: BENCH.md in the project's shared notes).
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
 * with the configuration, then per benchmark its spread (min, median, max,
 * reps), setup, and where BENCH.md gives them the goal and the peers'
 * figures. ult_memory / ult_memory_vsz and tasklet_memory are measured
 * once, each kind in a fresh process, on a cold runtime.
 *
 * The benchmarks set the number of streams and the pinning themselves:
 * COEXEC_NUM_XSTREAMS and COEXEC_AFFINITY are ignored (removed from the
 * environment); the other COEXEC_* variables apply as usual.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <coexec.h>

#include "bench.h"

#define DEFAULT_REPS 21
#define MIN_PUBLISHED_REPS 11
#define WARMUPS 2

typedef struct result {
    const bench_def_t *def;
    int ok;
    double min, median, max;
    int reps;
    char setup[1024];
    char error[1024];
    char reference[256]; /* measured in this run (bench_run_t.reference) */
} result_t;

/* ---- the suite ------------------------------------------------------------ */

static const bench_def_t *const tables[] = {
    bench_raw_defs,     bench_ult_defs,  bench_fj_defs, bench_wait_defs,
    bench_service_defs, bench_peer_defs};
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
    snprintf(res->reference, sizeof res->reference, "%s", r->reference);
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
        fprintf(stderr, "#   %-32s min %.*f  median %.*f  max %.*f %s  (%d rep%s)%s%s\n",
                d->name, d->decimals, res->min, d->decimals, res->median,
                d->decimals, res->max, d->unit, res->reps,
                res->reps == 1 ? "" : "s", res->setup[0] ? "  " : "",
                res->setup);
    else
        fprintf(stderr, "#   %-32s NA: %s%s%s\n", d->name, res->error,
                res->setup[0] ? "  " : "", res->setup);
    /* BENCH.md's goal and the peers' figures, to read the median against. */
    if (d->goal > 0 && res->ok)
        fprintf(stderr, "#   %-32s goal <= %.*f %s: %s%s%s\n", "", d->decimals,
                d->goal, d->unit, res->median <= d->goal ? "met" : "NOT met",
                d->reference ? "; " : "", d->reference ? d->reference : "");
    else if (d->goal > 0)
        fprintf(stderr, "#   %-32s goal <= %.*f %s%s%s\n", "", d->decimals,
                d->goal, d->unit, d->reference ? "; " : "",
                d->reference ? d->reference : "");
    else if (d->reference)
        fprintf(stderr, "#   %-32s %s\n", "", d->reference);
    if (res->ok && res->reference[0])
        fprintf(stderr, "#   %-32s this run: %s\n", "", res->reference);
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

static int write_json(FILE *f, const result_t *res, int n, int reps,
                      double floor_recheck)
{
    fprintf(f, "{\n  \"suite\": \"coexec-bench\",\n  \"library_version\": ");
    json_string(f, coexec_version_string());
    fprintf(f, ",\n  \"cpus_online\": %ld,\n  \"cpus_allowed\": [",
            sysconf(_SC_NPROCESSORS_ONLN));
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
        if (x->def->goal > 0) {
            fprintf(f, ", \"goal\": ");
            json_number(f, x->def->goal, x->def->decimals);
            if (x->ok)
                fprintf(f, ", \"goal_met\": %s",
                        x->median <= x->def->goal ? "true" : "false");
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
    fprintf(f, "  ]\n}\n");
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
        for (size_t t = 0; t < NTABLES; t++)
            for (const bench_def_t *d = tables[t]; d->name; d++)
                printf("%-32s %-13s %s\n", d->name, d->unit, d->desc);
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

    char cpus[256] = "";
    for (int i = 0, len = 0; i < bench_ncpus && len < 200; i++)
        len += snprintf(cpus + len, sizeof cpus - (size_t)len, "%s%d",
                        i ? "," : "", bench_cpus[i]);
    fprintf(stderr,
            "# coexec-bench: libcoexec %s (headers %d.%d.%d), %ld CPUs online, "
            "allowed CPUs %s; median of %d timed reps after %d warm-ups; "
            "OpenMP comparisons: %s\n# %s\n",
            coexec_version_string(), COEXEC_VERSION_MAJOR,
            COEXEC_VERSION_MINOR, COEXEC_VERSION_PATCH,
            sysconf(_SC_NPROCESSORS_ONLN), cpus, reps, WARMUPS,
#ifdef COEXEC_BENCH_HAVE_OPENMP
            "libgomp",
#else
            "not built (no OpenMP found)",
#endif
            config_text);
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
            fprintf(stderr,
                    "# xes_spin_pingpong at the end of the run: %.1f ns "
                    "(start %.1f ns)%s\n",
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
