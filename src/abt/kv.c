/*
 * src/abt/kv.c: the key/value table behind ABT_sched_config and
 * ABT_pool_config (both map an int key to an int, a double or a pointer;
 * the type values 0, 1, 2 are the same in both enums).
 */
#include "abt_internal.h"

int abtx_kv_set(struct abtx_kv *c, int key, int type, const void *val)
{
    if (type < 0 || type > 2)
        return ABT_ERR_INV_ARG;
    int i;
    for (i = 0; i < c->n && c->e[i].key != key; i++)
        ;
    if (!val) {
        /* Removes the key. */
        if (i < c->n)
            c->e[i] = c->e[--c->n];
        return ABT_SUCCESS;
    }
    if (i == c->n) {
        if (c->n == ABTX_KV_MAX)
            return ABT_ERR_MEM;
        c->n++;
    }
    c->e[i].key = key;
    c->e[i].type = type;
    if (type == 0)
        c->e[i].v.i = *(const int *)val;
    else if (type == 1)
        c->e[i].v.d = *(const double *)val;
    else
        c->e[i].v.p = *(void *const *)val;
    return ABT_SUCCESS;
}

int abtx_kv_get(const struct abtx_kv *c, int key, int *type, void *val)
{
    for (int i = 0; i < c->n; i++) {
        if (c->e[i].key != key)
            continue;
        if (type)
            *type = c->e[i].type;
        if (val) {
            if (c->e[i].type == 0)
                *(int *)val = c->e[i].v.i;
            else if (c->e[i].type == 1)
                *(double *)val = c->e[i].v.d;
            else
                *(void **)val = c->e[i].v.p;
        }
        return ABT_SUCCESS;
    }
    return ABT_ERR_INV_ARG;
}
