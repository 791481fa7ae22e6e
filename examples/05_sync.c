/*
 * 05_sync.c: producers and consumers with a ULT mutex, condition variables
 * and sleeps.
 *
 * coexec_mutex_t and coexec_cond_t are used like pthread_mutex_t and
 * pthread_cond_t, with one difference that matters: a ULT that must wait
 * for the lock or for a signal parks, and its xstream runs other ULTs
 * meanwhile; a pthread mutex would block the whole OS thread, and with it
 * every ULT queued on that stream. Likewise coexec_sleep_ns parks the
 * calling ULT on its stream's timers instead of putting the OS thread to
 * sleep.
 *
 * The program is the classic bounded buffer: producers put numbered items
 * into a ring of a few slots, consumers take them out, a mutex guards the
 * ring and two condition variables say "not full" and "not empty". The
 * producers and the consumers sleep a little for each item to stand for
 * real work. ULTs are spread over several xstreams, so the lock really is
 * contended between OS threads. At the end main checks that every item was
 * consumed exactly once, and prints what it counted on the way: the first
 * operations on the ring in the order they happened, how often each side
 * had to wait, how often the lock was busy, and how many items crossed from
 * one xstream to another.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

#define N_PRODUCERS 3
#define N_CONSUMERS 2
#define ITEMS_PER_PRODUCER 40
#define N_ITEMS (N_PRODUCERS * ITEMS_PER_PRODUCER)
#define RING_SLOTS 4
#define WORK_NS 50000 /* a producer "works" 50 us per item */
#define USE_NS 100000 /* a consumer 100 us */
#define N_SHOWN 64    /* ring operations shown in order */

struct slot {
    int item;
    int rank; /* the xstream its producer put it in on */
};

/* The shared state. Everything below `lock` is guarded by it. */
static struct {
    coexec_mutex_t lock;
    coexec_cond_t not_full;  /* signalled when a slot frees up */
    coexec_cond_t not_empty; /* signalled when an item arrives */
    struct slot ring[RING_SLOTS];
    int head, count;
    int producers_left;            /* consumers stop at 0 with the ring empty */
    unsigned char seen[N_ITEMS];   /* how often each item was consumed */
    /* What main prints at the end. */
    int ops;                 /* puts and takes so far */
    char shown[N_SHOWN + 1]; /* the first ones: 'A'+i producer i put,
                                'x'+i consumer i took */
    int locks, busy;         /* lockings, and how many found it held */
    int waits_full;          /* producer waits for a free slot */
    int waits_empty;         /* consumer waits for an item */
    int crossed;             /* items taken on another xstream than put */
} buf = {
    /* Static initialisers, like PTHREAD_MUTEX_INITIALIZER. */
    .lock = COEXEC_MUTEX_INITIALIZER,
    .not_full = COEXEC_COND_INITIALIZER,
    .not_empty = COEXEC_COND_INITIALIZER,
    .producers_left = N_PRODUCERS,
};

static atomic_int started; /* workers that have recorded first_rank */

/* Locks the ring, counting the times another unit held it. */
static void lock_ring(void)
{
    int rc = coexec_mutex_trylock(&buf.lock), busy = rc == COEXEC_EBUSY;
    if (busy)
        rc = coexec_mutex_lock(&buf.lock);
    CHECK(rc);
    buf.locks++;
    buf.busy += busy;
}

/* Notes one ring operation; called with the lock held. */
static void note(char op)
{
    if (buf.ops < N_SHOWN)
        buf.shown[buf.ops] = op;
    buf.ops++;
}

struct worker {
    int index;
    int made;       /* items produced or consumed */
    int first_rank; /* the xstream it started on */
    int rank;       /* the xstream it was on when it finished */
};

static void producer(void *arg)
{
    struct worker *w = arg;
    CHECK(coexec_xstream_self_rank(&w->first_rank));
    atomic_fetch_add(&started, 1);
    for (int i = 0; i < ITEMS_PER_PRODUCER; i++) {
        /* The "work": the ULT parks on its stream's timers; the stream
         * runs other ULTs meanwhile. */
        CHECK(coexec_sleep_ns(WORK_NS));
        int item = w->index * ITEMS_PER_PRODUCER + i;

        lock_ring();
        /* Always wait in a loop: wake-ups can be spurious, and another
         * producer may have taken the free slot first. */
        while (buf.count == RING_SLOTS) {
            buf.waits_full++;
            CHECK(coexec_cond_wait(&buf.not_full, &buf.lock));
        }
        /* The stream is read after the waits: each of them may have moved
         * this ULT to another one. */
        struct slot *sl = &buf.ring[(buf.head + buf.count) % RING_SLOTS];
        sl->item = item;
        CHECK(coexec_xstream_self_rank(&sl->rank));
        buf.count++;
        note((char)('A' + w->index));
        CHECK(coexec_cond_signal(&buf.not_empty));
        CHECK(coexec_mutex_unlock(&buf.lock));
        w->made++;
    }

    /* The last producer to finish wakes every consumer, so that those
     * waiting on an empty ring see that nothing more will come. */
    lock_ring();
    if (--buf.producers_left == 0)
        CHECK(coexec_cond_broadcast(&buf.not_empty));
    CHECK(coexec_mutex_unlock(&buf.lock));
    CHECK(coexec_xstream_self_rank(&w->rank));
}

static void consumer(void *arg)
{
    struct worker *w = arg;
    CHECK(coexec_xstream_self_rank(&w->first_rank));
    atomic_fetch_add(&started, 1);
    for (;;) {
        lock_ring();
        while (buf.count == 0 && buf.producers_left > 0) {
            buf.waits_empty++;
            CHECK(coexec_cond_wait(&buf.not_empty, &buf.lock));
        }
        if (buf.count == 0) { /* empty, and every producer has finished */
            CHECK(coexec_mutex_unlock(&buf.lock));
            break;
        }
        struct slot sl = buf.ring[buf.head];
        buf.head = (buf.head + 1) % RING_SLOTS;
        buf.count--;
        buf.seen[sl.item]++;
        int rank;
        CHECK(coexec_xstream_self_rank(&rank));
        buf.crossed += rank != sl.rank;
        note((char)('x' + w->index));
        w->made++;
        CHECK(coexec_cond_signal(&buf.not_full));
        CHECK(coexec_mutex_unlock(&buf.lock));
        /* Using an item takes longer than making one, so the ring fills
         * up and the producers wait for free slots. */
        CHECK(coexec_sleep_ns(USE_NS));
    }
    CHECK(coexec_xstream_self_rank(&w->rank));
}

int main(void)
{
    /* One xstream per CPU, at least 2 and at most 4. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    coexec_config_t cfg;
    CHECK(coexec_config_init(&cfg));
    cfg.num_xstreams = ncpu < 2 ? 2 : ncpu > 4 ? 4 : (int)ncpu;
    CHECK(coexec_init(&cfg));
    int nxs;
    CHECK(coexec_xstream_get_num(&nxs));

    /* A sleep, timed on the runtime's clock: at least what was asked. */
    uint64_t t0 = coexec_now_ns();
    CHECK(coexec_sleep_ns(1000000));
    uint64_t slept = coexec_now_ns() - t0;
    printf("main slept %.2f ms (asked for 1 ms)\n", (double)slept / 1e6);

    /* Producers and consumers, dealt round-robin over the streams. With
     * the default setup an idle stream steals queued ULTs from the others,
     * and a ULT woken from a wait or a sleep is queued again, where it may
     * be stolen too: where each one starts and finishes varies from run to
     * run. */
    struct worker prod[N_PRODUCERS], cons[N_CONSUMERS];
    coexec_thread_t tp[N_PRODUCERS], tc[N_CONSUMERS];
    int next = 0;
    for (int i = 0; i < N_CONSUMERS; i++, next++) {
        coexec_xstream_t xs;
        cons[i] = (struct worker){.index = i, .first_rank = -1, .rank = -1};
        CHECK(coexec_xstream_by_rank(next % nxs, &xs));
        CHECK(coexec_thread_create_on(xs, consumer, &cons[i], NULL, &tc[i]));
    }
    for (int i = 0; i < N_PRODUCERS; i++, next++) {
        coexec_xstream_t xs;
        prod[i] = (struct worker){.index = i, .first_rank = -1, .rank = -1};
        CHECK(coexec_xstream_by_rank(next % nxs, &xs));
        CHECK(coexec_thread_create_on(xs, producer, &prod[i], NULL, &tp[i]));
    }

    /* A join of a ULT that has not started runs it at once, in place, on
     * the joiner's stream. To see the ULTs start where they were sent, let
     * them all start first: each yield gives this stream's scheduler a
     * turn (the other streams run theirs in parallel). */
    while (atomic_load(&started) < N_PRODUCERS + N_CONSUMERS)
        CHECK(coexec_yield());

    /* Join them all; main parks while they run. */
    for (int i = 0; i < N_PRODUCERS; i++)
        CHECK(coexec_thread_free(&tp[i]));
    for (int i = 0; i < N_CONSUMERS; i++)
        CHECK(coexec_thread_free(&tc[i]));

    int consumed = 0, ok = slept >= 1000000;
    for (int i = 0; i < N_PRODUCERS; i++) {
        printf("producer %d made %d items (xstream %d, then %d)\n", i,
               prod[i].made, prod[i].first_rank, prod[i].rank);
        ok &= prod[i].made == ITEMS_PER_PRODUCER;
    }
    for (int i = 0; i < N_CONSUMERS; i++) {
        printf("consumer %d took %d items (xstream %d, then %d)\n", i,
               cons[i].made, cons[i].first_rank, cons[i].rank);
        consumed += cons[i].made;
    }
    for (int i = 0; i < N_ITEMS; i++)
        ok &= buf.seen[i] == 1;
    ok &= consumed == N_ITEMS && buf.count == 0 && buf.ops == 2 * N_ITEMS;

    printf("the first %d of %d ring operations (A-%c put, x-%c take):\n"
           "  %s\n",
           N_SHOWN, buf.ops, 'A' + N_PRODUCERS - 1, 'x' + N_CONSUMERS - 1,
           buf.shown);
    printf("waits: %d by producers for a free slot, %d by consumers for an "
           "item\n",
           buf.waits_full, buf.waits_empty);
    printf("the lock was held by another unit at %d of %d lockings\n",
           buf.busy, buf.locks);
    printf("%d of %d items were taken on another xstream than they were "
           "put on\n",
           buf.crossed, N_ITEMS);

    /* Objects made with a static initialiser are destroyed like the others. */
    CHECK(coexec_cond_destroy(&buf.not_empty));
    CHECK(coexec_cond_destroy(&buf.not_full));
    CHECK(coexec_mutex_destroy(&buf.lock));
    CHECK(coexec_finalize());

    if (!ok) {
        printf("sync: FAILED (%d of %d items consumed, or one consumed "
               "twice, or the sleep was short)\n",
               consumed, N_ITEMS);
        return EXIT_FAILURE;
    }
    printf("%d items through a %d-slot ring on %d xstreams, each consumed "
           "once (ok)\n",
           N_ITEMS, RING_SLOTS, nxs);
    printf("sync: all checks passed\n");
    return EXIT_SUCCESS;
}
