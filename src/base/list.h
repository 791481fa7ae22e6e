/*
 * src/base/list.h: the one intrusive doubly linked list of the runtime.
 *
 * Every list in the tree (pool queues, the deque's side queue, priority
 * levels, wait lists, sleepers, service queues) links its records through
 * two fields named `next` and `prev` of the record's own type, and keeps a
 * `head` (and, for FIFO use, a `tail`) wherever its owner likes: in a pool
 * record, a level array, a static. So these are macros over lvalues rather
 * than functions over an embedded node: the same code for every record
 * type, no container_of on the hot paths, and the compiler sees plain
 * pointer moves. The caller provides the exclusion (a lock, or ownership);
 * nothing here is atomic.
 *
 * An unlinked record has next == prev == NULL (DL_UNLINK leaves it so); a
 * record is never on two lists at once.
 */
#ifndef COEXEC_BASE_LIST_H
#define COEXEC_BASE_LIST_H

#include <stddef.h>

/* Links n first on the list (head, tail). */
#define DL_PUSH_HEAD(head, tail, n)                                            \
    do {                                                                       \
        __typeof__(n) dl_n_ = (n);                                             \
        dl_n_->prev = NULL;                                                    \
        dl_n_->next = (head);                                                  \
        if (head)                                                              \
            (head)->prev = dl_n_;                                              \
        else                                                                   \
            (tail) = dl_n_;                                                    \
        (head) = dl_n_;                                                        \
    } while (0)

/* Links n last on the list (head, tail). */
#define DL_PUSH_TAIL(head, tail, n)                                            \
    do {                                                                       \
        __typeof__(n) dl_n_ = (n);                                             \
        dl_n_->next = NULL;                                                    \
        dl_n_->prev = (tail);                                                  \
        if (tail)                                                              \
            (tail)->next = dl_n_;                                              \
        else                                                                   \
            (head) = dl_n_;                                                    \
        (tail) = dl_n_;                                                        \
    } while (0)

/* Unlinks n from the list (head, tail) and clears its links. */
#define DL_UNLINK(head, tail, n)                                               \
    do {                                                                       \
        __typeof__(n) dl_n_ = (n);                                             \
        if (dl_n_->prev)                                                       \
            dl_n_->prev->next = dl_n_->next;                                   \
        else                                                                   \
            (head) = dl_n_->next;                                              \
        if (dl_n_->next)                                                       \
            dl_n_->next->prev = dl_n_->prev;                                   \
        else                                                                   \
            (tail) = dl_n_->prev;                                              \
        dl_n_->next = dl_n_->prev = NULL;                                      \
    } while (0)

/* A list with a head only (newest first, unlinked from anywhere). */
#define DL_HEAD_PUSH(head, n)                                                  \
    do {                                                                       \
        __typeof__(n) dl_n_ = (n);                                             \
        dl_n_->prev = NULL;                                                    \
        dl_n_->next = (head);                                                  \
        if (head)                                                              \
            (head)->prev = dl_n_;                                              \
        (head) = dl_n_;                                                        \
    } while (0)

#define DL_HEAD_UNLINK(head, n)                                                \
    do {                                                                       \
        __typeof__(n) dl_n_ = (n);                                             \
        if (dl_n_->prev)                                                       \
            dl_n_->prev->next = dl_n_->next;                                   \
        else                                                                   \
            (head) = dl_n_->next;                                              \
        if (dl_n_->next)                                                       \
            dl_n_->next->prev = dl_n_->prev;                                   \
        dl_n_->next = dl_n_->prev = NULL;                                      \
    } while (0)

#endif /* COEXEC_BASE_LIST_H */
