#if os(Linux)
internal import ServiceGraphShims
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A value guarded by a lock, with `Mutex`'s `withLock` shape.
///
/// On Apple platforms it is `Synchronization.Mutex`. On Linux, `Mutex`'s lock and unlock are calls into
/// the standard library that the thread sanitizer does not see, so every contended use is reported as a
/// race; there this is ``PlatformMutex``'s lock, whose ordering is atomics compiled into this module,
/// which the sanitizer understands. Both are short, non-recursive, blocking locks: never hold one across
/// an `await` or a user's code.
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

    /// The state and its lock word in one allocation: the word must not move while a thread may sleep
    /// on it, so it lives in the object's tail, never in a stored property Swift may move.
    private final class Storage: ManagedBuffer<State, PlatformMutex.Word> {
        static func make(_ makeState: () -> State) -> Storage {
            // Safety: `create` makes an instance of the class it is called on.
            let storage = unsafeDowncast(create(minimumCapacity: 1) { _ in makeState() }, to: Storage.self)
            storage.withUnsafeMutablePointerToElements { PlatformMutex.initialize(PlatformMutex.storage(at: $0)) }
            return storage
        }

        deinit {
            withUnsafeMutablePointerToElements { PlatformMutex.destroy(PlatformMutex.storage(at: $0)) }
        }

        func withLock<Result, Failure: Error>(
            _ body: (inout State) throws(Failure) -> Result
        ) throws(Failure) -> Result {
            // Safety: both pointers stay valid while this object lives, which this call guarantees.
            let mutex = withUnsafeMutablePointerToElements { PlatformMutex.storage(at: $0) }
            let state = withUnsafeMutablePointerToHeader { $0 }
            return try PlatformMutex.withLock(mutex, state, body)
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

/// A lock in memory its owner allocated and keeps in place: for an object that holds its lock in its
/// own allocation (a scope's fields, state, lock and instance cells are one allocation, see
/// ``_ScopeBody``), where ``Locked`` would be a second one.
///
/// On Linux, a futex lock: an atomic word (0 free, 1 held, 2 held and maybe waited for), taken and let
/// go with one atomic operation each, inlined where it is used; a thread finding it held sleeps on the
/// word in the kernel. Not a `pthread_mutex_t`: its lock and unlock are calls into the C library whose
/// code a request scope's open and close fetched each time, with cold caches (about a dozen lines of
/// code and ten of data per scope). Not `Synchronization.Mutex` either: the thread sanitizer sees this
/// lock's ordering through its atomics, where it does not see `Mutex`'s. Elsewhere a `pthread_mutex_t`,
/// which the sanitizer understands.
enum PlatformMutex {
    #if os(Linux)
    typealias Storage = Atomic<UInt32>
    /// The raw memory a ``Storage`` takes, for a buffer's element type.
    typealias Word = UInt32

    private static var free: UInt32 { 0 }
    private static var held: UInt32 { 1 }
    /// Held, and a thread may be sleeping on the word: its unlock wakes one.
    private static var contended: UInt32 { 2 }

    /// The lock in the memory of a buffer's element `word`, bound to ``Storage`` by ``initialize(_:)``.
    static func storage(at word: UnsafeMutablePointer<Word>) -> UnsafeMutablePointer<Storage> {
        UnsafeMutableRawPointer(word).assumingMemoryBound(to: Storage.self)
    }

    /// Initializes the lock at `mutex`, free, which must not move until ``destroy(_:)``.
    static func initialize(_ mutex: UnsafeMutablePointer<Storage>) {
        UnsafeMutableRawPointer(mutex).bindMemory(to: Storage.self, capacity: 1).initialize(to: Storage(free))
    }

    static func destroy(_ mutex: UnsafeMutablePointer<Storage>) {
        mutex.deinitialize(count: 1)
    }

    @inline(__always)
    private static func lock(_ mutex: UnsafeMutablePointer<Storage>) {
        if !mutex.pointee.compareExchange(expected: free, desired: held, ordering: .acquiring).exchanged {
            lockContended(mutex)
        }
    }

    @inline(__always)
    private static func unlock(_ mutex: UnsafeMutablePointer<Storage>) {
        if mutex.pointee.exchange(free, ordering: .releasing) == contended { wakeOne(mutex) }
    }

    /// Takes the lock another thread holds: spins a little (a holder lets go within a few hundred
    /// instructions), then marks the word contended and sleeps on it until it is let go.
    @inline(never)
    private static func lockContended(_ mutex: UnsafeMutablePointer<Storage>) {
        var spins = 100
        while spins > 0, mutex.pointee.load(ordering: .relaxed) == held { spins -= 1 }
        if mutex.pointee.compareExchange(expected: free, desired: held, ordering: .acquiring).exchanged { return }
        // Marked contended whenever taken from here: another sleeper may remain, which its unlock wakes.
        while mutex.pointee.exchange(contended, ordering: .acquiring) != free {
            servicegraph_futex_wait(address(of: mutex), contended)
        }
    }

    @inline(never)
    private static func wakeOne(_ mutex: UnsafeMutablePointer<Storage>) {
        servicegraph_futex_wake_one(address(of: mutex))
    }

    /// The word's address, for the kernel.
    private static func address(of mutex: UnsafeMutablePointer<Storage>) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(mutex)
    }
    #else
    typealias Storage = pthread_mutex_t
    /// The raw memory a ``Storage`` takes, for a buffer's element type.
    typealias Word = pthread_mutex_t

    /// The lock in the memory of a buffer's element `word`.
    static func storage(at word: UnsafeMutablePointer<Word>) -> UnsafeMutablePointer<Storage> {
        word
    }

    /// Initializes the mutex at `mutex`, which must not move until ``destroy(_:)``.
    static func initialize(_ mutex: UnsafeMutablePointer<Storage>) {
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    static func destroy(_ mutex: UnsafeMutablePointer<Storage>) {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
    }

    @inline(__always)
    private static func lock(_ mutex: UnsafeMutablePointer<Storage>) {
        pthread_mutex_lock(mutex)
    }

    @inline(__always)
    private static func unlock(_ mutex: UnsafeMutablePointer<Storage>) {
        pthread_mutex_unlock(mutex)
    }
    #endif

    /// Runs `body` on `state`, holding the lock at `mutex`.
    @inline(__always)
    static func withLock<State, Result, Failure: Error>(
        _ mutex: UnsafeMutablePointer<Storage>,
        _ state: UnsafeMutablePointer<State>,
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        lock(mutex)
        defer { unlock(mutex) }
        return try body(&state.pointee)
    }
}
