/* SPDX-License-Identifier: Apache-2.0 */
/* log.c: log lines with priorities (log.h); linked into every process. */
#include "common/log.h"

#include "common/env.h"
#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int threshold = LOG_INFO;
static int journal; /* stderr is the journal: "<N>" prefixes */
static const char *who_am_i = "gpuos";

void gos_log_name(const char *who)
{
    who_am_i = who;
}

/* $JOURNAL_STREAM is "DEV:INODE" of the stream systemd connected; it counts only
 * while stderr is still that stream (a child whose stderr was redirected
 * inherits the variable but not the stream). */
static int stderr_is_journal(void)
{
    const char *js = gos_env(GOS_ENV_SYS_JOURNAL_STREAM);
    unsigned long long dev, ino;
    struct stat st;
    if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st))
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void gos_log_init(int level)
{
    threshold = level;
    journal = stderr_is_journal();
}

int gos_log_parse_level(const char *name, int *level)
{
    static const struct {
        const char *name;
        int prio;
    } names[] = {{"emerg", LOG_EMERG}, {"alert", LOG_ALERT}, {"crit", LOG_CRIT},     {"err", LOG_ERR},
                 {"error", LOG_ERR},   {"warning", LOG_WARNING}, {"warn", LOG_WARNING}, {"notice", LOG_NOTICE},
                 {"info", LOG_INFO},   {"debug", LOG_DEBUG}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name)) {
            *level = names[i].prio;
            return GOS_OK;
        }
    if (name[0] >= '0' && name[0] <= '7' && !name[1]) {
        *level = name[0] - '0';
        return GOS_OK;
    }
    return gos_fail(GOS_EINVAL, "log level \"%s\" must be err, warning, notice, info or debug (or 0..7)", name);
}

int gos_log_journal(void)
{
    return journal;
}

int gos_log_enabled(int prio)
{
    return prio <= threshold;
}

void gos_log(int prio, const char *fmt, ...)
{
    if (prio > threshold)
        return;
    char buf[1024];
    int n;
    if (journal)
        n = snprintf(buf, sizeof buf, "<%d>", prio);
    else
        n = snprintf(buf, sizeof buf, "%s: %s", who_am_i,
                     prio <= LOG_ERR ? "error: " : prio == LOG_WARNING ? "warning: " : "");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    n = m < 0 ? n : n + m > (int)sizeof buf - 2 ? (int)sizeof buf - 2 : n + m;
    /* One line per entry: a message never spreads over several. */
    for (char *p = buf; p < buf + n; p++)
        if (*p == '\n')
            *p = ' ';
    buf[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
    (void)w;
}
