/*
 * coexec.h: libcoexec, user-level threads and tasklets on execution streams
 * pinned to cores. The only header users include.
 *
 * Start with coexec/types.h (the nouns), coexec/runtime.h (init and
 * configuration), coexec/thread.h (ULTs and tasklets).
 */
#ifndef COEXEC_H
#define COEXEC_H

#include "coexec/defs.h"
#include "coexec/error.h"
#include "coexec/types.h"
#include "coexec/version.h"
#include "coexec/runtime.h"
#include "coexec/pool.h"
#include "coexec/sched.h"
#include "coexec/xstream.h"
#include "coexec/thread.h"
#include "coexec/waker.h"
#include "coexec/poller.h"
#include "coexec/time.h"
#include "coexec/eventual.h"
#include "coexec/channel.h"
#include "coexec/sync.h"
#include "coexec/key.h"
#include "coexec/service.h"
#include "coexec/fj.h"
#include "coexec/stats.h"
#include "coexec/info.h"
#include "coexec/tool.h"

#endif /* COEXEC_H */
