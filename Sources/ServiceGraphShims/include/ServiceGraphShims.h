// What the library needs of the C platform that Swift cannot call itself.
#ifndef SERVICEGRAPH_SHIMS_H
#define SERVICEGRAPH_SHIMS_H

#if defined(__linux__)
#include <stdint.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

// A futex wait and wake (`syscall` is variadic, which Swift does not import): for the library's lock
// (`Sources/ServiceGraph/Support/Lock.swift`), whose uncontended path is an atomic in Swift, so that a
// request scope's open and close fetch no pthread code, with cold caches, and the thread sanitizer sees
// the lock's ordering through those atomics.

/// Sleeps while the 32-bit `*word == expected`, until woken (or spuriously); a process-private futex.
static inline void servicegraph_futex_wait(void *word, uint32_t expected) {
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, (void *)0, (void *)0, 0);
}

/// Wakes one thread sleeping on `word`.
static inline void servicegraph_futex_wake_one(void *word) {
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, (void *)0, (void *)0, 0);
}
#endif

#endif
