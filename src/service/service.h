/*
 * src/service/service.h: the service stream's hooks into init and
 * finalize, and the offload entry the POSIX wrappers use.
 */
#ifndef COEXEC_SERVICE_SERVICE_H
#define COEXEC_SERVICE_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "coexec.h"

/* Starts the service threads (init, after the streams). */
int coexec__service_start(void);
/* Finalize, first step: refuses new requests, cancels the queued ones,
 * waits a grace period for running ones and abandons those still stuck.
 * Runs on the main ULT, which keeps its stream running meanwhile. */
void coexec__service_close(void);
/* Finalize, last step: stops and joins the service threads. */
void coexec__service_stop(void);

/* True when the caller is a ULT on a compute stream and the service
 * stream takes requests: the wrappers offload then, else run directly. */
bool coexec__service_offloads(void);

/* 0 if s is a valid CPU list ("3" or "2,3"), -1 otherwise. */
int coexec__service_check_cpus(const char *s);

#endif /* COEXEC_SERVICE_SERVICE_H */
