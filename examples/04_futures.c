/*
 * 04_futures.c: a future that several units set and several wait for.
 *
 * A future (coexec/eventual.h) has N compartments. Any unit or thread sets
 * one with coexec_future_set; the set that fills the last one completes the
 * future: it runs the future's callback there and then, with the N values in
 * the order they were set, and only then releases every waiter. Waiting
 * takes three forms:
 *
 *   - a ULT calls coexec_future_wait: it parks, and its stream runs other
 *     units meanwhile (an external thread sleeps in the kernel instead);
 *   - a tasklet has no stack to park, so it polls, in the style of a
 *     Future's poll(): coexec_future_poll returns COEXEC_READY (0) once the
 *     future is complete, or registers the tasklet and returns
 *     COEXEC_PENDING, which the tasklet's function returns in turn; the
 *     runtime polls it again once the future completes.
 *
 * (An eventual, coexec_eventual_t, is the one-value case: set once, waited
 * for the same three ways.)
 *
 * The program asks four suppliers for a price: one ULT each, dealt over the
 * streams, that works a while (it sleeps; the last supplier is the
 * quickest) and sets its quote into the future. The callback picks the
 * cheapest quote. Two units wait for the future: main, a ULT, and a tasklet
 * that prices an order. Because the tasklet's function returns in between
 * polls, it keeps its progress in its argument, a small state machine:
 * first it awaits the future, then it receives the quantities of the
 * order's items from a channel until the channel is closed. A shop ULT
 * sends the quantities and closes the channel.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

#define N_SUPPLIERS 4
static const long prices[N_SUPPLIERS] = {31, 25, 28, 40};
#define BEST_PRICE 25L
static const int quantities[] = {1, 2, 3, 4};
#define N_ITEMS (int)(sizeof quantities / sizeof quantities[0])

/* A supplier's answer: what the future's compartments point to. */
struct quote {
    int supplier;
    long price;
    int rank; /* the stream the supplier set it on */
};

static struct {
    coexec_future_t quotes; /* N_SUPPLIERS compartments, struct quote * */
    struct quote quote[N_SUPPLIERS];
    /* Written by the callback, before any waiter is released. */
    const struct quote *best;
    int callbacks;
} market;

/* The future's callback: runs once, on the supplier whose set completed
 * the future, before the waiters go on. */
static void pick_best(void **values, size_t n, void *arg)
{
    (void)arg;
    market.best = values[0];
    for (size_t i = 1; i < n; i++) {
        const struct quote *q = values[i];
        if (q->price < market.best->price)
            market.best = q;
    }
    market.callbacks++;
}

/* A supplier: an ordinary ULT, one of the future's contributors. */
static void supplier(void *arg)
{
    struct quote *q = arg;
    CHECK(coexec_sleep_ns((uint64_t)(N_SUPPLIERS - q->supplier) * 2000000));
    q->price = prices[q->supplier];
    CHECK(coexec_xstream_self_rank(&q->rank));
    CHECK(coexec_future_set(&market.quotes, q));
}

enum order_state {
    AWAIT_QUOTES, /* waiting for the future */
    AWAIT_ITEMS,  /* receiving from the channel until it is closed */
    DONE
};

struct order {
    coexec_channel_t items; /* int quantities, capacity 1 */

    /* The state machine: touched only by the tasklet's function (main
     * reads it after the join). */
    enum order_state state;
    long unit_price;
    long total;
    int received;
    int polls;
    int error; /* a call that failed inside the tasklet, or COEXEC_OK */
};

/*
 * The tasklet's function: one call is one poll. It resumes where the saved
 * state says, advances as far as it can, and returns COEXEC_PENDING when it
 * must wait or COEXEC_READY when the order is complete.
 */
static coexec_poll_status_t order_poll(coexec_poll_t *cx, void *arg)
{
    struct order *o = arg;
    int qty;
    int rc = COEXEC_OK;
    o->polls++;
    switch (o->state) {
    case AWAIT_QUOTES:
        rc = coexec_future_poll(&market.quotes, cx);
        if (rc == COEXEC_PENDING) {
            printf("  order, poll %d: quotes pending\n", o->polls);
            return COEXEC_PENDING; /* polled again once it is complete */
        }
        if (rc != COEXEC_READY)
            break;
        /* The callback ran before the future released its waiters. */
        o->unit_price = market.best->price;
        printf("  order, poll %d: all quotes in, best price %ld\n", o->polls,
               o->unit_price);
        o->state = AWAIT_ITEMS;
        /* A message may already be there: go on at once. */
        /* fall through */
    case AWAIT_ITEMS:
        for (;;) {
            rc = coexec_channel_poll_recv(&o->items, cx, &qty);
            if (rc == COEXEC_PENDING) {
                printf("  order, poll %d: channel empty, pending\n", o->polls);
                return COEXEC_PENDING; /* polled again when a message (or
                                          the close) arrives */
            }
            if (rc == COEXEC_ECLOSED) { /* closed and drained: done */
                o->state = DONE;
                printf("  order, poll %d: channel closed, order complete\n",
                       o->polls);
                return COEXEC_READY;
            }
            if (rc != COEXEC_READY)
                break;
            o->received++;
            o->total += qty * o->unit_price;
            printf("  order, poll %d: item of quantity %d, running total "
                   "%ld\n",
                   o->polls, qty, o->total);
        }
        break;
    case DONE:
        return COEXEC_READY;
    }
    /* A call failed: record it and finish, so that the join returns. */
    o->error = rc;
    o->state = DONE;
    return COEXEC_READY;
}

/*
 * The shop: an ordinary ULT. coexec_channel_send parks it while the
 * channel (capacity 1) is full, that is until the tasklet has taken the
 * previous quantity, which it does only once the quotes are in: the two
 * take turns without any explicit handshake.
 */
static void shop(void *arg)
{
    struct order *o = arg;
    for (int i = 0; i < N_ITEMS; i++) {
        printf("shop: sends quantity %d\n", quantities[i]);
        CHECK(coexec_channel_send(&o->items, &quantities[i]));
    }
    /* Closing tells the receiver that no more items will come; it still
     * receives whatever is queued before it sees COEXEC_ECLOSED. */
    CHECK(coexec_channel_close(&o->items));
    printf("shop: closed the channel\n");
}

int main(void)
{
    coexec_config_t cfg;
    CHECK(coexec_config_init(&cfg));
    cfg.num_xstreams = 2;
    CHECK(coexec_init(&cfg));
    int nxs;
    CHECK(coexec_xstream_get_num(&nxs));
    coexec_xstream_t first, last;
    CHECK(coexec_xstream_by_rank(0, &first));
    CHECK(coexec_xstream_by_rank(nxs - 1, &last));

    /* A future of N_SUPPLIERS compartments with its callback, and a channel
     * of int messages that holds one at a time. */
    static struct order o = {.state = AWAIT_QUOTES};
    CHECK(coexec_future_init(&market.quotes, N_SUPPLIERS, pick_best, NULL));
    CHECK(coexec_channel_init(&o.items, sizeof(int), 1));

    /* The tasklet on the last stream, the shop on the first, the suppliers
     * dealt over all of them: the sets, waits and wakes normally cross
     * between OS threads. */
    coexec_tasklet_t k;
    coexec_thread_t t, sup[N_SUPPLIERS];
    CHECK(coexec_tasklet_create_on(last, order_poll, &o, &k));
    CHECK(coexec_thread_create_on(first, shop, &o, NULL, &t));
    for (int i = 0; i < N_SUPPLIERS; i++) {
        coexec_xstream_t xs;
        market.quote[i] = (struct quote){.supplier = i, .rank = -1};
        CHECK(coexec_xstream_by_rank(i % nxs, &xs));
        CHECK(coexec_thread_create_on(xs, supplier, &market.quote[i], NULL,
                                      &sup[i]));
    }

    /* main waits for the future too: it parks until the last quote is set
     * and the callback has run. */
    CHECK(coexec_future_wait(&market.quotes));
    int complete;
    CHECK(coexec_future_test(&market.quotes, &complete));

    /* Joining the tasklet waits until its function has returned READY,
     * however many polls that takes. */
    CHECK(coexec_tasklet_free(&k));
    CHECK(coexec_thread_free(&t));
    for (int i = 0; i < N_SUPPLIERS; i++)
        CHECK(coexec_thread_free(&sup[i]));

    /* The values in the order they were set, as the callback saw them. */
    int seen[N_SUPPLIERS] = {0}, all_once = 1;
    const struct quote *q = NULL;
    printf("quotes in the order they arrived:\n");
    for (int i = 0; i < N_SUPPLIERS; i++) {
        void *v;
        CHECK(coexec_future_get(&market.quotes, (size_t)i, &v));
        if (!(q = v)) {
            all_once = 0;
            break;
        }
        printf("  %d. supplier %d: %ld, set on xstream %d\n", i + 1,
               q->supplier, q->price, q->rank);
        all_once &= seen[q->supplier]++ == 0;
    }
    if (q && market.best)
        printf("callback, run by the last set (xstream %d): best is %ld, "
               "from supplier %d\n",
               q->rank, market.best->price, market.best->supplier);

    /* Nobody waits on them any more: they can go. */
    CHECK(coexec_future_destroy(&market.quotes));
    CHECK(coexec_channel_destroy(&o.items));
    CHECK(coexec_finalize());

    long want = 0;
    for (int i = 0; i < N_ITEMS; i++)
        want += quantities[i] * BEST_PRICE;
    if (!complete || !all_once || market.callbacks != 1 || !market.best ||
        market.best->price != BEST_PRICE || o.error != COEXEC_OK ||
        o.state != DONE || o.received != N_ITEMS || o.total != want) {
        printf("futures: FAILED (error %s, %d callbacks, %d items, total "
               "%ld, expected %ld)\n",
               coexec_err_name(o.error), market.callbacks, o.received,
               o.total, want);
        return EXIT_FAILURE;
    }
    printf("order total %ld from %d items in %d polls (ok)\n", o.total,
           o.received, o.polls);
    printf("futures: all checks passed\n");
    return EXIT_SUCCESS;
}
