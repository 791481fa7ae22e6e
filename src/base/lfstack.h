/*
 * src/base/lfstack.h: the lock-free inbox: many producers push records one
 * at a time, one consumer takes them all at once.
 *
 * A stream's inbox of woken units, the service workers' inbox of requests
 * and the ring thread's are all this: a pointer word holding the newest
 * record, each record linked to the older one through its `next` field.
 * Producers push with a compare-and-swap loop, seq_cst so that the push is
 * ordered before the producer's later check of whether the consumer sleeps
 * (the consumer's partner is its own seq_cst store of "sleeping" before it
 * re-reads the word: Dekker). The consumer swaps the word with NULL
 * (acquire: pairs with the pushes' release, so the records' fields written
 * before the push are visible) and gets the records newest first;
 * LFS_REVERSE turns such a chain oldest first. No ABA: nothing is ever
 * popped singly.
 */
#ifndef COEXEC_BASE_LFSTACK_H
#define COEXEC_BASE_LFSTACK_H

#include "arch/atomic.h"

/* Pushes record r onto the inbox word `word` (an atom_ptr_t *). */
#define LFS_PUSH(word, r)                                                      \
    do {                                                                       \
        __typeof__(r) lfs_r_ = (r);                                            \
        void *lfs_head_ = atom_load_rlx_ptr(word);                             \
        do {                                                                   \
            lfs_r_->next = lfs_head_;                                          \
        } while (!atom_cas_sc_ptr(word, &lfs_head_, lfs_r_));                  \
    } while (0)

/* Takes every record of the inbox word, newest first (NULL: empty). */
static inline void *lfs_take_all(atom_ptr_t *word)
{
    return atom_xchg_acq_ptr(word, NULL);
}

/* Reverses the chain starting at the lvalue `list` (of a record type linked
 * by next) in place: a take's newest-first chain becomes oldest first. */
#define LFS_REVERSE(list)                                                      \
    do {                                                                       \
        __typeof__(list) lfs_rev_ = NULL;                                      \
        while (list) {                                                         \
            __typeof__(list) lfs_n_ = (list)->next;                            \
            (list)->next = lfs_rev_;                                           \
            lfs_rev_ = (list);                                                 \
            (list) = lfs_n_;                                                   \
        }                                                                      \
        (list) = lfs_rev_;                                                     \
    } while (0)

#endif /* COEXEC_BASE_LFSTACK_H */
