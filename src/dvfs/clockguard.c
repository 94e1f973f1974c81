/* SPDX-License-Identifier: Apache-2.0 */
/* clockguard.c: changing the SM clock is a system-wide act, so once the
 * campaign may have set one, the clock is given back on every way out:
 *   - normal end and error returns: gos_dvfs_guard_end (campaign.c calls it on
 *     every path out of gos_dvfs_campaign_run);
 *   - SIGINT / SIGTERM: the handler only records the signal (NVML is not
 *     async-signal-safe); the campaign checks gos_dvfs_guard_interrupted() after
 *     every kernel and sleep (sleeps return early on a signal) and unwinds
 *     through the normal path. A second signal resets at once and exits 130;
 *   - exit() from anywhere while armed: an atexit handler resets.
 * One guard per process (a campaign is one per process). */
#include "dvfs/dvfs.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static gos_device *armed;
static volatile sig_atomic_t got_signal;
static volatile sig_atomic_t touched;
static struct sigaction old_int, old_term;
static int atexit_done;

static void reset_now(void)
{
    gos_device *d = armed;
    if (d && touched) {
        gos_dvfs_reset_clock(d); /* nothing to report to in a signal handler */
        touched = 0;
    }
}

static void on_signal(int sig)
{
    if (got_signal) { /* second signal: do not wait for the campaign */
        static const char msg[] = "gpuos: second signal: resetting SM clocks and exiting\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        reset_now();
        _exit(130);
    }
    got_signal = sig;
}

static void at_exit(void) { reset_now(); }

int gos_dvfs_guard_begin(gos_device *d)
{
    armed = d;
    got_signal = 0;
    touched = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: sleeps return early */
    if (sigaction(SIGINT, &sa, &old_int) || sigaction(SIGTERM, &sa, &old_term))
        return gos_fail(GOS_EIO, "cannot install the SIGINT/SIGTERM handlers that restore clocks");
    if (!atexit_done) {
        atexit(at_exit);
        atexit_done = 1;
    }
    return GOS_OK;
}

void gos_dvfs_guard_touched(void) { touched = 1; }

int gos_dvfs_guard_interrupted(void) { return got_signal; }

int gos_dvfs_guard_end(gos_device *d)
{
    int rc = GOS_OK;
    if (armed && touched) {
        rc = gos_dvfs_reset_clock(d);
        touched = 0;
    }
    armed = NULL;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return rc;
}
