/*
 * src/base/valgrind.c: whether valgrind runs the process, and the ids of
 * the user-given stacks registered with it (see base/valgrind.h).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/valgrind.h"

bool coexec__on_valgrind(void)
{
#ifdef COEXEC_HAVE_VALGRIND
    return RUNNING_ON_VALGRIND != 0;
#else
    /* Without the header: valgrind always preloads its vgpreload_core
     * library into the program it runs. */
    const char *p = getenv("LD_PRELOAD");
    return p && strstr(p, "/vgpreload_core-");
#endif
}

/* ---- user-given stacks ----------------------------------------------------- */

/* Open addressing with linear probing, keyed by the stack's lowest address;
 * a static table, so that nothing is allocated on the way (and nothing is
 * resident when valgrind does not run us). A stack that finds the table
 * full goes unregistered: valgrind may then take a switch onto it for a
 * large push. */
#define VG_SLOTS 4096u

static struct {
    const void *lo; /* NULL: free */
    unsigned id;
} vg_tab[VG_SLOTS];
static pthread_mutex_t vg_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned vg_home(const void *lo)
{
    uint64_t h = (uint64_t)(uintptr_t)lo * 0x9e3779b97f4a7c15ull;
    return (unsigned)(h >> 52) & (VG_SLOTS - 1);
}

void coexec__vg_user_stack_add(const void *lo, size_t bytes)
{
    pthread_mutex_lock(&vg_lock);
    unsigned i = vg_home(lo);
    for (unsigned n = 0; n < VG_SLOTS; n++, i = (i + 1) & (VG_SLOTS - 1)) {
        if (!vg_tab[i].lo) {
            vg_tab[i].lo = lo;
            vg_tab[i].id = vg_stack_register(lo, bytes);
            break;
        }
    }
    pthread_mutex_unlock(&vg_lock);
}

void coexec__vg_user_stack_remove(const void *lo, size_t bytes)
{
    pthread_mutex_lock(&vg_lock);
    unsigned i = vg_home(lo);
    unsigned n = 0;
    while (n < VG_SLOTS && vg_tab[i].lo && vg_tab[i].lo != lo) {
        i = (i + 1) & (VG_SLOTS - 1);
        n++;
    }
    if (n < VG_SLOTS && vg_tab[i].lo == lo) {
        vg_stack_deregister(vg_tab[i].id);
        /* Backward-shift deletion: move up every later entry of the run
         * that may not stay behind the hole. */
        unsigned hole = i;
        for (unsigned k = 1; k < VG_SLOTS; k++) {
            unsigned j = (i + k) & (VG_SLOTS - 1);
            if (!vg_tab[j].lo)
                break;
            unsigned h = vg_home(vg_tab[j].lo);
            /* j's entry may fill the hole when its home is not in
             * (hole, j], cyclically. */
            bool stays = hole <= j ? (hole < h && h <= j)
                                   : (hole < h || h <= j);
            if (!stays) {
                vg_tab[hole] = vg_tab[j];
                hole = j;
            }
        }
        vg_tab[hole].lo = NULL;
        vg_tab[hole].id = 0;
    }
    pthread_mutex_unlock(&vg_lock);
#ifdef COEXEC_HAVE_VALGRIND
    VALGRIND_MAKE_MEM_UNDEFINED(lo, bytes);
#else
    (void)bytes;
#endif
}
