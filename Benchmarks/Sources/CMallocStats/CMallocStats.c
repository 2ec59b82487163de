#include "CMallocStats.h"
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
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

void cmallocstats_trim(void) {
#if defined(__linux__) && defined(__GLIBC__)
    malloc_trim(0);
#endif
}

long long cmallocstats_resident_bytes(void) {
#if defined(__linux__)
    FILE *file = fopen("/proc/self/statm", "r");
    if (file == NULL) return -1;
    long long size = 0, resident = 0;
    int read = fscanf(file, "%lld %lld", &size, &resident);
    fclose(file);
    if (read != 2) return -1;
    return resident * (long long)sysconf(_SC_PAGESIZE);
#else
    return -1;
#endif
}

int cmallocstats_reset_peak_resident(void) {
#if defined(__linux__)
    FILE *file = fopen("/proc/self/clear_refs", "w");
    if (file == NULL) return -1;
    int written = fputs("5", file);
    int closed = fclose(file);
    return (written < 0 || closed != 0) ? -1 : 0;
#else
    return -1;
#endif
}

long long cmallocstats_peak_resident_since_reset(void) {
#if defined(__linux__)
    FILE *file = fopen("/proc/self/status", "r");
    if (file == NULL) return -1;
    char line[256];
    long long kilobytes = -1;
    while (fgets(line, sizeof line, file) != NULL) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            sscanf(line + 6, "%lld", &kilobytes);
            break;
        }
    }
    fclose(file);
    return kilobytes < 0 ? -1 : kilobytes * 1024;
#else
    return -1;
#endif
}
