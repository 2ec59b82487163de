#ifndef CMALLOCSTATS_H
#define CMALLOCSTATS_H
#include <stddef.h>

/// Bytes currently allocated by malloc, or -1 where the platform cannot tell.
long long cmallocstats_heap_in_use(void);

/// The process's peak resident set size in bytes.
long long cmallocstats_peak_resident_bytes(void);

/// Returns free heap memory to the system (glibc's malloc_trim), so that memory a later step uses
/// shows up as resident again. Does nothing where the platform has no such call.
void cmallocstats_trim(void);

/// The process's resident set size now, in bytes, or -1 where the platform cannot tell.
long long cmallocstats_resident_bytes(void);

/// Starts a new peak: resets the resident high-water mark to the current resident size (Linux's
/// /proc/self/clear_refs). Returns 0 on success, -1 where the platform cannot.
int cmallocstats_reset_peak_resident(void);

/// The resident high-water mark since the last reset (Linux's VmHWM), in bytes, or -1.
long long cmallocstats_peak_resident_since_reset(void);

#endif
