/*
 * coexec/info.h: what the runtime is doing now, printed for a person: every
 * stream (state, CPU, units run, its scheduler and pools), and every
 * unit that is blocked, with what it waits on and, on request, where.
 *
 * Besides calling coexec_info_print, a process can have it printed on
 * stderr without code changes:
 *  - COEXEC_DUMP_SIGNAL=SIGUSR2 (or SIGUSR1, SIGQUIT): when the process
 *    gets that signal (kill -USR2 followed by its pid);
 *  - COEXEC_HANG_DUMP=30 (any number of seconds): when no stream has
 *    started or resumed a unit (nor stolen a fork-join task) for that
 *    long, once per stall. A unit that computes for longer without
 *    switching looks like a stall too.
 * Both are served by one monitor thread (named coexec-mon), started only
 * when one of them is set; the signal handler only writes to a pipe.
 */
#ifndef COEXEC_INFO_H
#define COEXEC_INFO_H

#include "defs.h"
#include "types.h"

/* coexec_info_print's flag: the streams, schedulers and pools. */
#define COEXEC_INFO_STREAMS 0x1u
/* coexec_info_print's flag: the units blocked, and on what. */
#define COEXEC_INFO_BLOCKED 0x2u
/* coexec_info_print's flag: every live unit, not only the blocked ones. */
#define COEXEC_INFO_UNITS 0x4u
/* coexec_info_print's flag: a blocked ULT's call stack, a walk of its
 * frame pointers (complete only for code built with
 * -fno-omit-frame-pointer); addresses as module plus offset, for
 * addr2line, with symbol names where dladdr finds them. */
#define COEXEC_INFO_BACKTRACE 0x8u
/* What flags 0 means. */
#define COEXEC_INFO_DEFAULT (COEXEC_INFO_STREAMS | COEXEC_INFO_BLOCKED)

COEXEC_BEGIN_DECLS

/*
 * Prints the runtime's state to fp (a FILE *; NULL: stderr), as flags ask
 * (0: COEXEC_INFO_DEFAULT). A blocked ULT is shown with what it waits on:
 * "mutex 0x...", "eventual 0x...", "join of unit 17", "sleep, 3.2 ms
 * left", "service request 0x...", ... (ULTs on stacks of the user's own
 * do not record it: "blocked"). Figures read while streams run are a
 * moment's values.
 * Context: any thread, a unit included. Switches: never (it takes
 * internal locks briefly; not async-signal-safe: use COEXEC_DUMP_SIGNAL
 * for signals).
 * Returns: COEXEC_OK; COEXEC_EINVAL (unknown flag bits); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_info_print(void *fp, unsigned flags);

/*
 * Prints one unit to fp (a FILE *; NULL: stderr), as coexec_info_print
 * shows it: its id, kind and state, what it waits on if it is blocked,
 * and with flags COEXEC_INFO_BACKTRACE, for a ULT that is not running,
 * its stack and call stack ("not started yet" before its first run). A
 * unit that goes on meanwhile is shown as it was a moment ago.
 * Context: any thread, a unit included. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (flags other than
 * COEXEC_INFO_BACKTRACE); COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_info_print_unit(void *fp, coexec_unit_t unit, unsigned flags);

COEXEC_END_DECLS

#endif /* COEXEC_INFO_H */
