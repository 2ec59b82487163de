// Counts the calls to malloc by their callers' frames, for Scripts/allocation-sites.sh: loaded into the
// server with LD_PRELOAD, it counts from SIGUSR1 on, and on SIGUSR2 writes the counts to
// $ALLOCATION_SITES_DIR/sites.PID (a line per distinct stack: the count, then up to 7 frames as
// "name" or "@object@offset") and stops. The dump runs in the signal handler and may deadlock if the
// signal lands in malloc: send it with the server idle. glibc only (__libc_malloc); a tool, not part of the
// server.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
extern void *__libc_malloc(size_t);
#define N 65536
#define D 7
static void *keys[N][D]; static unsigned long counts[N];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int busy;
static volatile int on = 0;
__attribute__((noinline)) static void record(void) {
  void *bt[D + 2]; int n = backtrace(bt, D + 2);
  void *k[D] = {0}; for (int i = 2; i < n && i - 2 < D; i++) k[i - 2] = bt[i];
  unsigned long h = 0; for (int i = 0; i < D; i++) h = h * 31 + (unsigned long)k[i];
  pthread_mutex_lock(&mu);
  // A full table drops the stack rather than search forever.
  for (unsigned long j = h % N, probes = 0; probes < N; j = (j + 1) % N, probes++) {
    if (counts[j] == 0) { memcpy(keys[j], k, sizeof k); counts[j] = 1; break; }
    if (!memcmp(keys[j], k, sizeof k)) { counts[j]++; break; }
  }
  pthread_mutex_unlock(&mu);
}
void *malloc(size_t s) {
  void *p = __libc_malloc(s);
  if (on && !busy) { busy = 1; record(); busy = 0; }
  return p;
}
static void dump(int sig) {
  on = 0;
  const char *dir = getenv("ALLOCATION_SITES_DIR");
  char path[4096]; snprintf(path, sizeof path, "%s/sites.%d", dir ? dir : "/tmp", getpid());
  FILE *f = fopen(path, "w");
  if (!f) return;
  for (int j = 0; j < N; j++) if (counts[j]) {
    fprintf(f, "%lu", counts[j]);
    for (int i = 0; i < D; i++) { Dl_info info; void *a = keys[j][i];
      if (a && dladdr(a, &info) && info.dli_sname) fprintf(f, " | %s", info.dli_sname); else if (a && dladdr(a, &info)) fprintf(f, " | @%s@%lx", info.dli_fname, (unsigned long)((char*)a-(char*)info.dli_fbase)); else fprintf(f, " | %p", a); }
    fprintf(f, "\n");
    counts[j] = 0;
  }
  fclose(f);
}
static void start(int sig) { on = 1; }
__attribute__((constructor)) static void init(void) { signal(SIGUSR1, start); signal(SIGUSR2, dump); }
