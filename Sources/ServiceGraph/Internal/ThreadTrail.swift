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
    /// One transient being made, on the stack of the call that makes it.
    @usableFromInline
    struct Entry {
        @usableFromInline
        let owner: ObjectIdentifier
        @usableFromInline
        let slot: Int
        /// The entry around this one; set by ``enter(_:of:)``.
        @usableFromInline
        var outer: UnsafeMutablePointer<Entry>?

        @inlinable
        init(slot: Int, of owner: AnyObject) {
            self.owner = ObjectIdentifier(owner)
            self.slot = slot
            self.outer = nil
        }
    }

    /// Runs `body`, which makes the transient at `slot`, with it on the current thread's trail.
    ///
    /// - Throws: ``ServiceGraphError/Code/reentrantResolution`` when the current thread is already making
    ///   it; otherwise what `body` throws.
    /// - Complexity: O(1) outside any chain; O(*n*) in the number of synchronous chains the thread is
    ///   inside of (chains started by factories through captured graphs).
    @inlinable
    static func making<Result>(_ slot: Int, of core: GraphCore, _ body: () throws -> Result) throws -> Result {
        guard hasThreads else {
            return try ResolutionTrail.current.withValue(try core.trail(entering: slot), operation: body)
        }
        var entry = Entry(slot: slot, of: core)
        return try withUnsafeMutablePointer(to: &entry) { entry in
            try enter(entry, of: core)
            defer { leave(entry, of: core) }
            return try body()
        }
    }

    /// Whether the platform has POSIX threads, and so this trail.
    @inlinable
    static var hasThreads: Bool {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        true
        #else
        false
        #endif
    }

    /// Makes `entry` the current thread's innermost entry, unless the thread is already making its
    /// service.
    ///
    /// - Throws: ``ServiceGraphError/Code/reentrantResolution``, leaving the trail as it was.
    @usableFromInline
    static func enter(_ entry: UnsafeMutablePointer<Entry>, of core: GraphCore) throws(ServiceGraphError) {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        let key = core.threadTrail.key
        let outer = pthread_getspecific(key)?.assumingMemoryBound(to: Entry.self)
        var node = outer
        while let current = node {
            if current.pointee.slot == entry.pointee.slot && current.pointee.owner == entry.pointee.owner {
                throw core.reentrantError(entry.pointee.slot)
            }
            node = current.pointee.outer
        }
        entry.pointee.outer = outer
        pthread_setspecific(key, entry)
        #else
        fatalError("ServiceGraph: no thread-local storage on this platform")
        #endif
    }

    /// Makes the entry around `entry` the current thread's innermost again.
    @usableFromInline
    static func leave(_ entry: UnsafeMutablePointer<Entry>, of core: GraphCore) {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        pthread_setspecific(core.threadTrail.key, entry.pointee.outer)
        #endif
    }

    /// The thread-local slot holding the current thread's innermost ``Entry``: one for the process,
    /// copied into each graph's core so that the resolve path reads a field, not a lazily made global.
    struct Slot: Sendable {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        let key: pthread_key_t

        static let shared: Slot = {
            var key = pthread_key_t()
            let status = pthread_key_create(&key, nil)
            guard status == 0 else {
                fatalError("ServiceGraph: no thread-local key left (pthread_key_create: \(status))")
            }
            return Slot(key: key)
        }()
        #else
        static let shared = Slot()
        #endif
    }
}
