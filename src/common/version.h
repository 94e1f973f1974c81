/* SPDX-License-Identifier: Apache-2.0 */
/* version.h: the one place that names gpuos's version (the CLI's --version, the
 * library's pkg-config file and SONAME series, the provenance of every JSON file). */
#ifndef GOS_VERSION_H
#define GOS_VERSION_H

#define GOS_VERSION "0.3.0"

#endif
