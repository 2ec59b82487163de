#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
import Synchronization
#endif

/// A value guarded by a lock, with `Mutex`'s `withLock` shape.
///
/// On Apple platforms it is `Synchronization.Mutex`. On Linux, `Mutex` is built on futexes that the
/// thread sanitizer cannot see, so every contended use is reported as a race and the sanitizer run
/// stops telling real races from false ones; there this is a `pthread_mutex_t`, which it understands.
/// Both are short, non-recursive, blocking locks: never hold one across an `await` or a user's code.
#if canImport(Glibc) || canImport(Musl)
final class Locked<State>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var state: State

    init(_ state: State) {
        self.state = state
        // Safety: a `pthread_mutex_t` must not move once initialized, so it lives in memory this object
        // allocates here and frees in `deinit`, never in a stored property Swift may move.
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
#else
final class Locked<State>: @unchecked Sendable {
    private let mutex: Mutex<State>

    init(_ state: sending State) {
        mutex = Mutex(state)
    }

    func withLock<Result, Failure: Error>(
        _ body: (inout sending State) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        try mutex.withLock(body)
    }
}
#endif
