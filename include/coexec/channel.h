/*
 * coexec/channel.h: bounded multi-producer multi-consumer channels of
 * fixed-size messages.
 *
 * Messages are copied in and out, and received in the order they were
 * sent (FIFO). send blocks while the channel is full and recv while it is
 * empty: a ULT parks, an external thread sleeps in the kernel, a tasklet
 * uses the _poll forms; the _try forms never block and work from any
 * thread. Closing makes every later send fail and every waiter return
 * COEXEC_ECLOSED; messages already queued can still be received, after
 * which recv returns COEXEC_ECLOSED too.
 *
 * Delivery is FIFO for every kind of receiver and sender: receivers that
 * wait get messages in the order they began to wait, and no receiver
 * gets a message sent before one it already got from the same sender. A
 * ULT or thread that waits gets its message copied straight in (or out)
 * by the unit that makes it possible. A tasklet waiting in
 * coexec_channel_poll_recv has its message reserved in the channel and is
 * woken: its next poll_recv on the channel takes it (a tasklet that polls
 * something else instead, or finishes, gives the reservation up to the
 * receivers behind it). A tasklet woken from coexec_channel_poll_send is
 * expected to poll again; the room it was woken for is not kept for it.
 *
 * A channel lives in caller storage; init allocates its ring buffer.
 *
 * At finalize, units waiting are released with COEXEC_ECANCELED (nothing
 * sent or received for them), which the calls that may wait or register
 * may also return (see coexec_finalize); the channel keeps working.
 *
 * Initialising a live channel (initialised and not destroyed) works as
 * destroy followed by init: COEXEC_EBUSY while a unit or thread waits on
 * it (the channel and its waiters are left as they were), else its queued
 * messages are dropped, its ring released and it starts afresh, open. Do
 * not let other calls on the channel race with its init. Live means its
 * header says so: memory that held a channel never destroyed counts as
 * live.
 */
#ifndef COEXEC_CHANNEL_H
#define COEXEC_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

#include "defs.h"
#include "types.h"

typedef struct coexec_channel {
    uint64_t opaque_[16];
} coexec_channel_t;

COEXEC_BEGIN_DECLS

/*
 * Initialises ch for messages of msg_size bytes, holding up to capacity;
 * a live ch is re-initialised (see above).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (ch NULL, msg_size or capacity 0, or
 * their product overflowing); COEXEC_ENOMEM (a live ch is left as it
 * was); COEXEC_EBUSY (ch is live and waited on).
 */
COEXEC_API COEXEC_NODISCARD int
coexec_channel_init(coexec_channel_t *ch, size_t msg_size, size_t capacity);

/*
 * Destroys ch, dropping queued messages.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EBUSY (a unit
 * or thread is waiting on it).
 */
COEXEC_API COEXEC_NODISCARD int coexec_channel_destroy(coexec_channel_t *ch);

/*
 * Copies msg_size bytes from msg into ch, waiting while ch is full.
 * Context: a ULT or an external thread. Switches: yes (a ULT, when full).
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ECLOSED;
 * COEXEC_ECONTEXT (a tasklet or a scheduler loop).
 */
COEXEC_API COEXEC_NODISCARD int coexec_channel_send(coexec_channel_t *ch,
                                                    const void *msg);

/*
 * Takes the oldest message into msg (msg_size bytes), waiting while ch is
 * empty.
 * Context: a ULT or an external thread. Switches: yes (a ULT, when empty).
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ECLOSED
 * (closed and drained); COEXEC_ECONTEXT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_channel_recv(coexec_channel_t *ch,
                                                    void *msg);

/*
 * send and recv waiting at most timeout_ns.
 * Context and Switches: as coexec_channel_send and coexec_channel_recv.
 * Returns: as they do, plus COEXEC_ETIMEDOUT, and COEXEC_ENOMEM (a ULT
 * whose stream's timer heap could not grow; see coexec/time.h).
 */
COEXEC_API COEXEC_NODISCARD int
coexec_channel_send_timed(coexec_channel_t *ch, const void *msg,
                          uint64_t timeout_ns);
COEXEC_API COEXEC_NODISCARD int
coexec_channel_recv_timed(coexec_channel_t *ch, void *msg,
                          uint64_t timeout_ns);

/*
 * send and recv that never wait: COEXEC_EAGAIN when ch is full (send) or
 * empty (recv).
 * Context: any thread, tasklets included. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EAGAIN; COEXEC_EINVAL; COEXEC_EHANDLE;
 * COEXEC_ECLOSED.
 */
COEXEC_API COEXEC_NODISCARD int coexec_channel_try_send(coexec_channel_t *ch,
                                                        const void *msg);
COEXEC_API COEXEC_NODISCARD int coexec_channel_try_recv(coexec_channel_t *ch,
                                                        void *msg);

/*
 * The tasklet forms: COEXEC_READY once the message is sent (received),
 * else COEXEC_PENDING with the tasklet registered, to be polled again when
 * room (a message) may be there.
 * Context: a tasklet's function. Switches: never.
 * Returns: COEXEC_READY; COEXEC_PENDING; COEXEC_EINVAL; COEXEC_EHANDLE;
 * COEXEC_ECLOSED.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_channel_poll_send(coexec_channel_t *ch, coexec_poll_t *cx,
                         const void *msg);
COEXEC_API COEXEC_NODISCARD int
coexec_channel_poll_recv(coexec_channel_t *ch, coexec_poll_t *cx, void *msg);

/*
 * Closes ch: later sends return COEXEC_ECLOSED, and every waiting sender
 * and receiver is released with COEXEC_ECLOSED (receivers only once the
 * queue is empty). Closing twice is harmless.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int coexec_channel_close(coexec_channel_t *ch);

/*
 * *count = the number of messages queued now (a snapshot).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int coexec_channel_count(coexec_channel_t *ch,
                                                     size_t *count);

COEXEC_END_DECLS

#endif /* COEXEC_CHANNEL_H */
