#ifndef CMALLOCSTATS_H
#define CMALLOCSTATS_H
#include <stddef.h>

/// Bytes currently allocated by malloc, or -1 where the platform cannot tell.
long long cmallocstats_heap_in_use(void);

/// The process's peak resident set size in bytes.
long long cmallocstats_peak_resident_bytes(void);

#endif
