#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The transients the current thread is making synchronously, innermost first: the synchronous half of
/// the ``ResolutionTrail``, for chains whose factories are all synchronous (`resolveSynchronously`, and
/// `resolve` of such a chain).
///
/// Synchronous code does not suspend, so such a chain runs to its end on one thread, and a thread-local
/// trail is enough. It is far cheaper than the task-local one: pushing a task-local value costs about
/// 85 ns (the runtime takes the task's status lock to check for a task group), a thread-local entry a
/// few nanoseconds, and the entry lives on the stack of the call that makes the service.
///
/// The two halves never need each other: a synchronous factory can only resolve synchronous chains, which
/// are all on this trail, and the task-local trail holds only asynchronous transients and scoped
/// instances, which no synchronous factory can reach. Where there are no POSIX threads, the task-local
/// trail serves both halves.
@usableFromInline
enum ThreadTrail {
    /// Runs `body`, which makes the transient at `slot`, with it on the current thread's trail.
    ///
    /// - Throws: ``ServiceGraphError/Code/reentrantResolution`` when the current thread is already making
    ///   it; otherwise what `body` throws.
    /// - Complexity: O(1) outside any chain; O(*n*) in the number of synchronous chains the thread is
    ///   inside of (chains started by factories through captured graphs).
    @usableFromInline
    static func making<Result>(_ slot: Int, of core: GraphCore, _ body: () throws -> Result) throws -> Result {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        let owner = ObjectIdentifier(core)
        let outer = pthread_getspecific(key)?.assumingMemoryBound(to: Entry.self)
        var node = outer
        while let entry = node {
            if entry.pointee.slot == slot && entry.pointee.owner == owner { throw core.reentrantError(slot) }
            node = entry.pointee.outer
        }
        var entry = Entry(owner: owner, slot: slot, outer: outer)
        return try withUnsafeMutablePointer(to: &entry) { entry in
            pthread_setspecific(key, entry)
            defer { pthread_setspecific(key, outer) }
            return try body()
        }
        #else
        return try ResolutionTrail.current.withValue(try core.trail(entering: slot), operation: body)
        #endif
    }

    #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
    /// One transient being made, on the stack of the call that makes it.
    private struct Entry {
        let owner: ObjectIdentifier
        let slot: Int
        let outer: UnsafeMutablePointer<Entry>?
    }

    /// The thread-local slot holding the innermost ``Entry`` of the current thread.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        guard status == 0 else { fatalError("ServiceGraph: no thread-local key left (pthread_key_create: \(status))") }
        return key
    }()
    #endif
}
