/*
 * 07_custom_scheduler.c: a pool and a scheduler of your own.
 *
 * Eight jobs, each with an amount of work and a deadline, all ready at
 * time 0, run on one secondary xstream. Time here is counted in work units
 * (one unit = one step of a job), so the result does not depend on the
 * machine.
 *
 *   - The pool is an earliest-deadline-first queue: a binary heap ordered
 *     by the deadline, which it reads from each unit's argument
 *     (coexec_unit_get_arg). Its operations are a coexec_pool_ops_t table;
 *     coexec_pool_create_user makes a pool of it. The runtime takes no lock
 *     around the operations: the heap has its own mutex because other
 *     threads push into it.
 *   - The scheduler is a coexec_sched_ops_t whose run function is the
 *     stream's loop: it takes a unit (coexec_sched_pop), runs it
 *     (coexec_sched_run_unit), checks the stream's events every few units
 *     (coexec_sched_check_events), parks when there is nothing to do
 *     (coexec_sched_idle) and returns when coexec_sched_has_to_stop says
 *     so. After each run it looks at the job it ran and notes whether the
 *     job met its deadline.
 *
 * In creation order (what a FIFO pool would do) three of the eight jobs
 * would finish late; in deadline order none does, which the program checks.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <coexec.h>

#define CHECK(call)                                                            \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != COEXEC_OK) {                                                \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, \
                    #call, coexec_err_name(rc_), coexec_strerror(rc_));        \
            exit(EXIT_FAILURE);                                                \
        }                                                                      \
    } while (0)

/* ---- the jobs -------------------------------------------------------------- */

struct job {
    const char *name;
    int work;     /* steps of work */
    int deadline; /* must be done by this time */
    int finish;   /* when it was done (set by the scheduler) */
    long sum;     /* what the job computed */
};

static struct job jobs[] = {
    {"A", 3, 20, 0, 0}, {"B", 2, 5, 0, 0},  {"C", 4, 12, 0, 0},
    {"D", 1, 3, 0, 0},  {"E", 5, 25, 0, 0}, {"F", 2, 9, 0, 0},
    {"G", 3, 16, 0, 0}, {"H", 4, 24, 0, 0},
};
#define NJOBS (int)(sizeof jobs / sizeof jobs[0])

/* The stream's clock, in work steps. Only the stream running the jobs
 * touches it; main reads it after joining that stream. */
static int now;

/* A job: `work` steps of a small computation, each advancing the clock. */
static void job_main(void *arg)
{
    struct job *j = arg;
    for (int step = 0; step < j->work; step++) {
        for (int i = 1; i <= 1000; i++)
            j->sum += i % (step + 2);
        now++;
    }
}

/* ---- the EDF pool ----------------------------------------------------------- */

struct edf {
    pthread_mutex_t lock;
    coexec_unit_t heap[64];
    int deadline[64];
    size_t n;
};

static int edf_init(coexec_pool_t pool, void *arg, void **state)
{
    (void)pool;
    (void)arg;
    struct edf *e = calloc(1, sizeof *e);
    if (!e)
        return COEXEC_ENOMEM;
    pthread_mutex_init(&e->lock, NULL);
    *state = e;
    return COEXEC_OK;
}

static void edf_free(void *state)
{
    struct edf *e = state;
    pthread_mutex_destroy(&e->lock);
    free(e);
}

static void edf_swap(struct edf *e, size_t a, size_t b)
{
    coexec_unit_t u = e->heap[a];
    int d = e->deadline[a];
    e->heap[a] = e->heap[b];
    e->deadline[a] = e->deadline[b];
    e->heap[b] = u;
    e->deadline[b] = d;
}

/* Queues unit by the deadline of the job it runs. `kind` says why it is
 * pushed (new, yielded, woken); an EDF queue does not care. */
static void edf_push(void *state, coexec_unit_t unit, coexec_push_kind_t kind)
{
    (void)kind;
    struct edf *e = state;
    void *arg = NULL;
    if (coexec_unit_get_arg(unit, &arg) != COEXEC_OK || !arg)
        abort(); /* every unit of this pool is a job */
    pthread_mutex_lock(&e->lock);
    if (e->n == 64)
        abort(); /* sized for this program */
    size_t i = e->n++;
    e->heap[i] = unit;
    e->deadline[i] = ((struct job *)arg)->deadline;
    while (i > 0 && e->deadline[(i - 1) / 2] > e->deadline[i]) {
        edf_swap(e, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    pthread_mutex_unlock(&e->lock);
}

/* Takes the unit with the earliest deadline (the null handle if none). */
static coexec_unit_t edf_pop(void *state)
{
    struct edf *e = state;
    coexec_unit_t u = {0};
    pthread_mutex_lock(&e->lock);
    if (e->n > 0) {
        u = e->heap[0];
        e->n--;
        edf_swap(e, 0, e->n);
        for (size_t i = 0;;) {
            size_t l = 2 * i + 1, r = l + 1, m = i;
            if (l < e->n && e->deadline[l] < e->deadline[m])
                m = l;
            if (r < e->n && e->deadline[r] < e->deadline[m])
                m = r;
            if (m == i)
                break;
            edf_swap(e, i, m);
            i = m;
        }
    }
    pthread_mutex_unlock(&e->lock);
    return u;
}

static size_t edf_size(void *state)
{
    struct edf *e = state;
    pthread_mutex_lock(&e->lock);
    size_t n = e->n;
    pthread_mutex_unlock(&e->lock);
    return n;
}

static const coexec_pool_ops_t edf_pool_ops = {
    .size = sizeof(coexec_pool_ops_t),
    .init = edf_init,
    .free = edf_free,
    .push = edf_push,
    .pop = edf_pop,
    .get_size = edf_size,
    /* no remove: a joiner waits instead of running a queued job in place;
     * no steal: no other stream takes jobs from this pool */
};

/* ---- the scheduler ------------------------------------------------------------ */

struct edf_stats {
    int ran, late;
    const char *order[NJOBS]; /* names, in the order the jobs finished */
};

static void edf_sched_run(coexec_sched_t sched, void *state)
{
    struct edf_stats *st = state;
    unsigned iter = 0;
    for (;;) {
        coexec_unit_t u;
        CHECK(coexec_sched_pop(sched, 0, &u));
        if (u.p) {
            void *arg = NULL;
            CHECK(coexec_unit_get_arg(u, &arg)); /* before it may be freed */
            CHECK(coexec_sched_run_unit(sched, u));
            struct job *j = arg;
            j->finish = now;
            if (j->finish > j->deadline)
                st->late++;
            if (st->ran < NJOBS)
                st->order[st->ran] = j->name;
            st->ran++;
        }
        /* Wakes from other streams, timers, stop requests. */
        if (!u.p || ++iter % 8 == 0)
            CHECK(coexec_sched_check_events(sched));
        int stop = 0;
        CHECK(coexec_sched_has_to_stop(sched, &stop));
        if (stop)
            return;
        if (!u.p)
            CHECK(coexec_sched_idle(sched)); /* park until a push */
    }
}

static int edf_sched_init(coexec_sched_t sched, void *arg, void **state)
{
    (void)sched;
    *state = arg; /* the caller's statistics */
    return COEXEC_OK;
}

static const coexec_sched_ops_t edf_sched_ops = {
    .size = sizeof(coexec_sched_ops_t),
    .init = edf_sched_init,
    .run = edf_sched_run,
};

/* What creation order (a FIFO pool) would give: the number of late jobs. */
static int late_in_creation_order(void)
{
    int t = 0, late = 0;
    for (int i = 0; i < NJOBS; i++) {
        t += jobs[i].work;
        late += t > jobs[i].deadline;
    }
    return late;
}

int main(void)
{
    CHECK(coexec_init(NULL));

    coexec_pool_t pool;
    CHECK(coexec_pool_create_user(&edf_pool_ops, COEXEC_ACCESS_MPMC, NULL, &pool));
    struct edf_stats stats;
    memset(&stats, 0, sizeof stats);
    coexec_sched_t sched;
    CHECK(coexec_sched_create_user(&edf_sched_ops, &pool, 1, NULL, &stats, &sched));

    /* All jobs are ready at time 0, queued before the stream starts. */
    coexec_thread_t t[NJOBS];
    for (int i = 0; i < NJOBS; i++)
        CHECK(coexec_thread_create(pool, job_main, &jobs[i], NULL, &t[i]));

    coexec_xstream_attr_t attr;
    CHECK(coexec_xstream_attr_init(&attr));
    attr.sched = sched;
    coexec_xstream_t xs;
    CHECK(coexec_xstream_create(&attr, &xs));
    /* The join returns once the pool is empty and the loop has returned. */
    CHECK(coexec_xstream_join(xs));

    int ok = stats.ran == NJOBS && stats.late == 0;
    for (int i = 0; i < NJOBS; i++) {
        CHECK(coexec_thread_free(&t[i]));
        long want = 0;
        for (int step = 0; step < jobs[i].work; step++)
            for (int k = 1; k <= 1000; k++)
                want += k % (step + 2);
        ok &= jobs[i].sum == want && jobs[i].finish <= jobs[i].deadline;
    }
    /* Deadline order: each finished job's deadline is no earlier than the
     * previous one's. */
    for (int i = 1; i < stats.ran && i < NJOBS; i++) {
        int prev = 0, cur = 0;
        for (int k = 0; k < NJOBS; k++) {
            if (jobs[k].name == stats.order[i - 1])
                prev = jobs[k].deadline;
            if (jobs[k].name == stats.order[i])
                cur = jobs[k].deadline;
        }
        ok &= prev <= cur;
    }

    printf("order:");
    for (int i = 0; i < stats.ran && i < NJOBS; i++)
        printf(" %s", stats.order[i]);
    printf("\n");
    for (int i = 0; i < NJOBS; i++)
        printf("  job %s: work %d, deadline %2d, done at %2d\n", jobs[i].name,
               jobs[i].work, jobs[i].deadline, jobs[i].finish);
    printf("late jobs: %d in deadline order, %d in creation order\n",
           stats.late, late_in_creation_order());

    CHECK(coexec_xstream_free(&xs));
    CHECK(coexec_sched_free(&sched));
    CHECK(coexec_pool_free(&pool));
    CHECK(coexec_finalize());
    if (!ok) {
        printf("custom_scheduler: FAILED\n");
        return EXIT_FAILURE;
    }
    printf("custom_scheduler: %d jobs in deadline order, all checks passed\n",
           NJOBS);
    return EXIT_SUCCESS;
}
