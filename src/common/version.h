/* version.h: the gpuos version, recorded in every provenance object. */
#ifndef GOS_VERSION_H
#define GOS_VERSION_H

#define GOS_VERSION "0.3.0"

#endif
