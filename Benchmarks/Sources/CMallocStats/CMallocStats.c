#include "CMallocStats.h"
#include <sys/resource.h>
#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#endif

long long cmallocstats_heap_in_use(void) {
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 info = mallinfo2();
    return (long long)info.uordblks;
#else
    return -1;
#endif
}

long long cmallocstats_peak_resident_bytes(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
#if defined(__APPLE__)
    return (long long)usage.ru_maxrss;
#else
    return (long long)usage.ru_maxrss * 1024;
#endif
}
