/* log.h: the daemon's log lines, with syslog priorities.
 *
 * Every line goes to stderr in one write. Under systemd, when stderr is the
 * journal stream named by $JOURNAL_STREAM (device:inode), each line starts with
 * the syslog-style "<N>" prefix that journald turns into the entry's priority
 * (sd-daemon(3)); elsewhere it starts with "gpuos serve: " and, for warnings and
 * errors, the level ("warning: ", "error: "). Lines less important than the
 * threshold (--log-level) are dropped. Thread-safe. */
#ifndef GOS_SERVE_LOG_H
#define GOS_SERVE_LOG_H

#include <syslog.h> /* LOG_ERR .. LOG_DEBUG */

/* Sets the threshold (LOG_ERR .. LOG_DEBUG) and looks at $JOURNAL_STREAM. */
void srv_log_init(int level);
/* "err"/"error", "warning", "notice", "info", "debug" or 0..7 -> priority. */
int srv_log_parse_level(const char *name, int *level);
int srv_log_enabled(int prio);
/* Whether lines go to the journal ("<N>" prefixes). */
int srv_log_journal(void);
void srv_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
