/*
 * coexec/key.h: keys, ULT-local storage.
 *
 * A key names one slot in every ULT (the primary's main ULT included); each
 * ULT sees its own value, NULL until it sets one. When a ULT finishes, the
 * destructor of each key whose value it left non-NULL runs on that ULT with
 * the value (up to four rounds, for destructors that set keys again). The
 * values of the main ULT are destroyed at coexec_finalize.
 */
#ifndef COEXEC_KEY_H
#define COEXEC_KEY_H

#include "defs.h"
#include "types.h"

/* A key. A zeroed key ({0}) is invalid. */
typedef struct coexec_key {
    uint32_t index; /* the key's slot (private) */
    uint32_t gen;   /* the slot's generation (private) */
} coexec_key_t;

/* The most keys that may exist at once. */
#define COEXEC_KEYS_MAX 256

COEXEC_BEGIN_DECLS

/*
 * Creates a key whose non-NULL values are passed to destructor (may be
 * NULL) when their ULT finishes.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (key NULL); COEXEC_EAGAIN
 * (COEXEC_KEYS_MAX keys exist); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_key_create(void (*destructor)(void *),
                                                  coexec_key_t *key);

/*
 * Deletes key. Values ULTs still hold are not destroyed (as with pthreads);
 * later calls with key return COEXEC_EHANDLE.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_key_delete(coexec_key_t key);

/*
 * Sets the calling ULT's value of key. The first set of a ULT allocates its
 * table (COEXEC_ENOMEM if that fails).
 * Context: a ULT. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_ECONTEXT; COEXEC_ENOMEM;
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_key_set(coexec_key_t key,
                                               void *value);

/*
 * *value = the calling ULT's value of key (NULL if never set).
 * Context: a ULT. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (value NULL); COEXEC_EHANDLE;
 * COEXEC_ECONTEXT; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_key_get(coexec_key_t key,
                                               void **value);

COEXEC_END_DECLS

#endif /* COEXEC_KEY_H */
