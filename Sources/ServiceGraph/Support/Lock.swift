#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
import Synchronization
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
struct Locked<State>: @unchecked Sendable {
    private let storage: Storage

    init(_ state: State) {
        storage = Storage.make { state }
    }

    /// A lock whose state `makeState` makes in place: for a large state, which would otherwise be copied
    /// in (a copy retains each reference it holds, and the original is then destroyed).
    init(making makeState: () -> State) {
        storage = Storage.make(makeState)
    }

    func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try storage.withLock(body)
    }

    /// The state and its mutex in one allocation. Safety: a `pthread_mutex_t` must not move once
    /// initialized, so it lives in the object's tail, initialized in ``make(_:)`` and destroyed in
    /// `deinit`, never in a stored property Swift may move.
    private final class Storage: ManagedBuffer<State, pthread_mutex_t> {
        static func make(_ makeState: () -> State) -> Storage {
            // Safety: `create` makes an instance of the class it is called on.
            let storage = unsafeDowncast(create(minimumCapacity: 1) { _ in makeState() }, to: Storage.self)
            // All zeros is `PTHREAD_MUTEX_INITIALIZER` in glibc and musl alike: a default mutex, with no
            // call to `pthread_mutex_init` (a scope makes one per request, with cold caches).
            storage.withUnsafeMutablePointerToElements { $0.initialize(to: pthread_mutex_t()) }
            return storage
        }

        deinit {
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                mutex.deinitialize(count: 1)
            }
        }

        func withLock<Result, Failure: Error>(
            _ body: (inout State) throws(Failure) -> Result
        ) throws(Failure) -> Result {
            // Safety: both pointers stay valid while this object lives, which this call guarantees.
            let mutex = withUnsafeMutablePointerToElements { $0 }
            let state = withUnsafeMutablePointerToHeader { $0 }
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&state.pointee)
        }
    }
}
#else
final class Locked<State>: @unchecked Sendable {
    private let mutex: Mutex<State>

    init(_ state: sending State) {
        mutex = Mutex(state)
    }

    /// A lock whose state `makeState` makes in place (see the other platforms' `init(making:)`).
    init(making makeState: () -> sending State) {
        mutex = Mutex(makeState())
    }

    func withLock<Result, Failure: Error>(
        _ body: (inout sending State) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        try mutex.withLock(body)
    }
}
#endif

/// A `pthread_mutex_t` in memory its owner allocated and keeps in place: for an object that holds its
/// lock in its own allocation (a scope's fields, state, lock and instance cells are one allocation, see
/// ``_ScopeBody``), where ``Locked`` would be a second one. A pthread mutex on every platform, which the
/// thread sanitizer understands.
enum PlatformMutex {
    typealias Storage = pthread_mutex_t

    /// Initializes the mutex at `mutex`, which must not move until ``destroy(_:)``.
    static func initialize(_ mutex: UnsafeMutablePointer<Storage>) {
        mutex.initialize(to: pthread_mutex_t())
        #if canImport(Glibc) || canImport(Musl)
        // All zeros is `PTHREAD_MUTEX_INITIALIZER` in glibc and musl alike: no call to make.
        #else
        pthread_mutex_init(mutex, nil)
        #endif
    }

    static func destroy(_ mutex: UnsafeMutablePointer<Storage>) {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
    }

    /// Runs `body` on `state`, holding the mutex at `mutex`.
    @inline(__always)
    static func withLock<State, Result, Failure: Error>(
        _ mutex: UnsafeMutablePointer<Storage>,
        _ state: UnsafeMutablePointer<State>,
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state.pointee)
    }
}
