/* SPDX-License-Identifier: Apache-2.0 */
/* log.h: the one logging interface of every gpuos process (issue 20), with
 * syslog priorities: the daemon (gpuos serve), the executor (gpuos executor)
 * and the shim (gpuos's libcuda.so.1 in a program) each name their sink once
 * (gos_log_name) and log through gos_log. The CLI's own messages to its user
 * (cli_fail, usage) are not log lines.
 *
 * Every line goes to stderr in one write. Under systemd, when stderr is the
 * journal stream named by $JOURNAL_STREAM (device:inode), each line starts with
 * the syslog-style "<N>" prefix that journald turns into the entry's priority
 * (sd-daemon(3)); elsewhere it starts with the process's name ("gpuos serve: ")
 * and, for warnings and errors, the level ("warning: ", "error: "). Lines less
 * important than the threshold (--log-level; LOG_INFO by default) are
 * dropped. Thread-safe. */
#ifndef GOS_COMMON_LOG_H
#define GOS_COMMON_LOG_H

#include <syslog.h> /* LOG_ERR .. LOG_DEBUG */

/* Sets the threshold (LOG_ERR .. LOG_DEBUG) and looks at $JOURNAL_STREAM. */
void gos_log_init(int level);
/* The prefix of this process's lines ("gpuos serve"; default "gpuos"): a
 * string that lives as long as the process. */
void gos_log_name(const char *who);
/* "err"/"error", "warning", "notice", "info", "debug" or 0..7 -> priority. */
int gos_log_parse_level(const char *name, int *level);
int gos_log_enabled(int prio);
/* Whether lines go to the journal ("<N>" prefixes). */
int gos_log_journal(void);
void gos_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
