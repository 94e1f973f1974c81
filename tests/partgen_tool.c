/* SPDX-License-Identifier: Apache-2.0 */
/* partgen_tool.c: writes one chip of tests/partgen.h and the truth a probe must
 * recover, for tests/t_parts.sh.
 *
 *   partgen b200|b200-split|mi300x SEED CHIP.json TRUTH.json */
#include "partgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[1], "b200") && strcmp(argv[1], "b200-split") && strcmp(argv[1], "mi300x"))) {
        fprintf(stderr, "usage: partgen b200|b200-split|mi300x SEED CHIP.json TRUTH.json\n");
        return 2;
    }
    uint64_t seed = strtoull(argv[2], NULL, 10);
    partgen_truth t;
    json_t *doc = !strcmp(argv[1], "mi300x") ? partgen_mi300x(seed, &t)
                  : partgen_b200_split(seed, !strcmp(argv[1], "b200-split"), &t);
    json_t *truth = partgen_truth_json(&t);
    int rc = json_dump_file(doc, argv[3], JSON_COMPACT) || json_dump_file(truth, argv[4], JSON_COMPACT);
    json_decref(doc);
    json_decref(truth);
    if (rc)
        fprintf(stderr, "partgen: cannot write %s or %s\n", argv[3], argv[4]);
    return rc ? 1 : 0;
}
