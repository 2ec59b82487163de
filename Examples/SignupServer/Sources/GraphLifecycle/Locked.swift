#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
import Synchronization
#endif

/// A value guarded by a lock, with `Mutex`'s `withLock` shape, for this package's targets.
///
/// On Apple platforms it is `Synchronization.Mutex`. On Linux, `Mutex` is built on futexes that the
/// thread sanitizer cannot see, so it reports every contended use as a race; there this is a
/// `pthread_mutex_t`, which it understands. A short, non-recursive, blocking lock: never hold it
/// across an `await`.
#if canImport(Glibc) || canImport(Musl)
package final class Locked<State>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var state: State

    package init(_ state: State) {
        self.state = state
        // A `pthread_mutex_t` must not move once initialized: it lives in memory allocated here.
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    package func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
#else
package final class Locked<State>: @unchecked Sendable {
    private let mutex: Mutex<State>

    package init(_ state: sending State) {
        mutex = Mutex(state)
    }

    package func withLock<Result, Failure: Error>(
        _ body: (inout sending State) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        try mutex.withLock(body)
    }
}
#endif
