/*
 * 04_futures.c: a tasklet that awaits an eventual, then a channel.
 *
 * An eventual is a value that is set once and waited for by anyone; a
 * channel is a bounded queue of fixed-size messages. A ULT waits on them
 * with coexec_eventual_wait / coexec_channel_recv, which park the ULT until
 * the value or a message is there. A tasklet has no stack to park, so it
 * uses the _poll forms instead, in the style of a Future's poll():
 *
 *   - COEXEC_READY (0): the thing is there; the call did its work.
 *   - COEXEC_PENDING:   not yet. The call has registered the tasklet with
 *                       the eventual (or channel); the tasklet's function
 *                       returns COEXEC_PENDING, and the runtime polls it
 *                       again once the eventual is set (a message arrives).
 *
 * Because the function returns in between, the tasklet keeps its progress
 * in its argument: a small state machine. Here it computes the price of an
 * order: first it awaits the unit price (an eventual holding a long), then
 * it receives the quantities of the order's items from a channel until the
 * channel is closed. A ULT on the other stream plays the shop: it publishes
 * the price, sends the quantities and closes the channel.
 */
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

#define UNIT_PRICE 25L
static const int quantities[] = {1, 2, 3, 4};
#define N_ITEMS (int)(sizeof quantities / sizeof quantities[0])

enum order_state {
    AWAIT_PRICE, /* waiting for the eventual */
    AWAIT_ITEMS, /* receiving from the channel until it is closed */
    DONE
};

struct order {
    /* What the tasklet waits on. Both live here, in caller storage. */
    coexec_eventual_t price; /* set once, to a long */
    coexec_channel_t items;  /* int quantities, capacity 1 */

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
    void *value;
    int qty;
    int rc = COEXEC_OK;
    o->polls++;
    switch (o->state) {
    case AWAIT_PRICE:
        rc = coexec_eventual_poll(&o->price, cx, &value);
        if (rc == COEXEC_PENDING) {
            printf("  poll %d: no price yet, pending\n", o->polls);
            return COEXEC_PENDING; /* polled again once the price is set */
        }
        if (rc != COEXEC_READY)
            break;
        /* value points to the bytes the setter stored. */
        o->unit_price = *(const long *)value;
        printf("  poll %d: unit price is %ld\n", o->polls, o->unit_price);
        o->state = AWAIT_ITEMS;
        /* A message may already be there: go on at once. */
        /* fall through */
    case AWAIT_ITEMS:
        for (;;) {
            rc = coexec_channel_poll_recv(&o->items, cx, &qty);
            if (rc == COEXEC_PENDING) {
                printf("  poll %d: channel empty, pending\n", o->polls);
                return COEXEC_PENDING; /* polled again when a message (or
                                          the close) arrives */
            }
            if (rc == COEXEC_ECLOSED) { /* closed and drained: done */
                o->state = DONE;
                printf("  poll %d: channel closed, order complete\n",
                       o->polls);
                return COEXEC_READY;
            }
            if (rc != COEXEC_READY)
                break;
            o->received++;
            o->total += qty * o->unit_price;
            printf("  poll %d: item of quantity %d, running total %ld\n",
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
 * previous quantity: the two take turns without any explicit handshake.
 */
static void shop(void *arg)
{
    struct order *o = arg;
    long price = UNIT_PRICE;
    printf("shop: publishing the price\n");
    CHECK(coexec_eventual_set(&o->price, &price, sizeof price));
    for (int i = 0; i < N_ITEMS; i++) {
        CHECK(coexec_channel_send(&o->items, &quantities[i]));
        printf("shop: sent quantity %d\n", quantities[i]);
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

    /* An eventual for values of up to sizeof(long) bytes, and a channel of
     * int messages that holds one at a time. */
    static struct order o = {.state = AWAIT_PRICE};
    CHECK(coexec_eventual_init(&o.price, sizeof(long)));
    CHECK(coexec_channel_init(&o.items, sizeof(int), 1));

    /* The tasklet on the last stream, the shop on the first: the waits and
     * wakes normally cross between the two OS threads. */
    coexec_tasklet_t k;
    coexec_thread_t t;
    CHECK(coexec_tasklet_create_on(last, order_poll, &o, &k));
    CHECK(coexec_thread_create_on(first, shop, &o, NULL, &t));

    /* Joining the tasklet waits until its function has returned READY,
     * however many polls that takes. */
    CHECK(coexec_tasklet_free(&k));
    CHECK(coexec_thread_free(&t));

    /* Nobody waits on them any more: they can go. */
    CHECK(coexec_eventual_destroy(&o.price));
    CHECK(coexec_channel_destroy(&o.items));
    CHECK(coexec_finalize());

    long want = 0;
    for (int i = 0; i < N_ITEMS; i++)
        want += quantities[i] * UNIT_PRICE;
    if (o.error != COEXEC_OK || o.state != DONE || o.received != N_ITEMS ||
        o.total != want) {
        printf("futures: FAILED (error %s, %d items, total %ld, expected "
               "%ld)\n",
               coexec_err_name(o.error), o.received, o.total, want);
        return EXIT_FAILURE;
    }
    printf("order total %ld from %d items in %d polls (ok)\n", o.total,
           o.received, o.polls);
    printf("futures: all checks passed\n");
    return EXIT_SUCCESS;
}
