/*
 * src/base/cpulist.h: CPU lists as the configuration and the environment
 * give them (COEXEC_CPUS, the service stream's CPUs). Pure: no runtime
 * state.
 */
#ifndef COEXEC_BASE_CPULIST_H
#define COEXEC_BASE_CPULIST_H

/* The most CPUs a CPU list may name (ranges expanded). */
#define COEXEC__MAX_CPULIST 1024

/* Parses a CPU list, "3", "2,3", "0-3,8": CPU numbers and ranges lo-hi
 * (lo <= hi) separated by commas, digits only. Stores the CPUs, ranges
 * expanded, in cpus (at most max) and their count in *n. Returns NULL, or
 * what is wrong with s. */
const char *coexec__cpulist_parse(const char *s, int *cpus, int max, int *n);

#endif /* COEXEC_BASE_CPULIST_H */
