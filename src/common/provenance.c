/* SPDX-License-Identifier: Apache-2.0 */
/* provenance.c: see provenance.h. */
#include "common/provenance.h"
#include "common/env.h"
#include "common/version.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void gos_command_line(char *buf, size_t len, const char *prefix, int argc, char *const *argv)
{
    if (!len)
        return;
    size_t k = (size_t)snprintf(buf, len, "%s", prefix ? prefix : "");
    for (int i = 0; i < argc && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", k ? " " : "", argv[i]);
}

json_t *gos_provenance(const char *command, const char *driver)
{
    char date[32], host[256] = "unknown";
    time_t now = time(NULL);
    struct tm tm;
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    if (gethostname(host, sizeof host - 1))
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = 0;
    const char *commit = gos_env(GOS_ENV_COMMIT);
    if (!commit || !*commit)
        commit = gos_env(GOS_ENV_OLD_COMMIT);
    json_t *p = json_object();
    json_object_set_new(p, "date", json_string(date));
    json_object_set_new(p, "commit", json_string(commit && *commit ? commit : "unknown"));
    json_object_set_new(p, "command", json_string(command ? command : ""));
    json_object_set_new(p, "driver", json_string(driver ? driver : ""));
    json_object_set_new(p, "host", json_string(host));
    json_object_set_new(p, "version", json_string(GOS_VERSION));
    return p;
}
