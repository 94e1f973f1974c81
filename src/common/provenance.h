/* SPDX-License-Identifier: Apache-2.0 */
/* provenance.h: the one provenance object every result file carries:
 * {"date", "commit", "command", "driver", "host", "version"} (docs/CONTRIBUTING.md,
 * "The GPU"). The commit is $GPUOS_COMMIT (or $GOS_COMMIT), else "unknown". */
#ifndef GOS_PROVENANCE_H
#define GOS_PROVENANCE_H

#include <jansson.h>
#include <stddef.h>

/* buf = prefix (may be NULL) and argv[0..argc) joined by spaces, truncated to len. */
void gos_command_line(char *buf, size_t len, const char *prefix, int argc, char *const *argv);

/* A new provenance object for a result made by `command` on a driver (NULL or
 * "" when there is none): the date now (UTC, ISO 8601), commit, host, version. */
json_t *gos_provenance(const char *command, const char *driver);

#endif
