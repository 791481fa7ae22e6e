/*
 * src/base/cpulist.c: CPU lists, "0-3,8" (src/base/cpulist.h).
 */
#include <ctype.h>
#include <limits.h>
#include <stddef.h>

#include "base/cpulist.h"

/* Reads a decimal CPU number at *s (digits only: no sign, no space).
 * Returns NULL, or what is wrong. */
static const char *cpu_number(const char **s, int *out)
{
    const char *p = *s;
    if (!isdigit((unsigned char)*p))
        return "not a CPU number";
    long v = 0;
    for (; isdigit((unsigned char)*p); p++) {
        v = v * 10 + (*p - '0');
        if (v > INT_MAX)
            return "a CPU number too large";
    }
    *out = (int)v;
    *s = p;
    return NULL;
}

const char *coexec__cpulist_parse(const char *s, int *cpus, int max, int *n)
{
    const char *why;
    *n = 0;
    if (!*s)
        return "an empty list";
    for (;;) {
        int lo, hi;
        if (!*s || *s == ',')
            return "an empty entry (a stray comma)";
        if ((why = cpu_number(&s, &lo)) != NULL)
            return why;
        hi = lo;
        if (*s == '-') {
            s++;
            if (!isdigit((unsigned char)*s))
                return "a range needs a last CPU";
            if ((why = cpu_number(&s, &hi)) != NULL)
                return why;
            if (hi < lo)
                return "a range ends below its start";
        }
        if ((long)hi - lo >= (long)max - *n)
            return "too many CPUs";
        for (long c = lo; c <= hi; c++)
            cpus[(*n)++] = (int)c;
        if (!*s)
            return NULL;
        if (*s != ',')
            return "CPUs are separated by commas";
        s++;
    }
}
