#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The transients the current thread is making synchronously, innermost last: the synchronous half of
/// the ``_ResolutionTrail``, for chains whose factories are all synchronous (`resolveSynchronously`, and
/// `resolve` of such a chain).
///
/// Synchronous code does not suspend, so such a chain runs to its end on one thread, and a thread-local
/// trail is enough. It is far cheaper than the task-local one: pushing a task-local value costs about
/// 85 ns (the runtime takes the task's status lock to check for a task group); entering and leaving
/// this trail costs two thread-local reads and a store into a small per-thread buffer.
///
/// The two halves never need each other: a synchronous factory can only resolve synchronous chains, which
/// are all on this trail, and the task-local trail holds only asynchronous transients and scoped
/// instances, which no synchronous factory can reach. Where there are no POSIX threads, the task-local
/// trail serves both halves.
@usableFromInline
enum _ThreadTrail {
    /// Whether the platform has POSIX threads, and so this trail.
    @inlinable
    static var hasThreads: Bool {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        true
        #else
        false
        #endif
    }

    /// Puts the transient at `slot` of `core` on the current thread's trail; the caller passes the
    /// trail it returns to ``leave(_:)`` once the transient is made or has failed.
    ///
    /// - Throws: ``ServiceGraphError/Code/reentrantResolution``, leaving the trail as it was, when the
    ///   current thread is already making it.
    /// - Complexity: O(1) outside any chain; O(*n*) in the number of synchronous chains the thread is
    ///   inside of (chains started by factories through captured graphs); amortized O(1) allocation.
    @usableFromInline
    static func enter(_ slot: Int, of core: _GraphCore) throws(ServiceGraphError) -> UnsafeMutablePointer<Buffer> {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        let trail = Buffer.current(core.threadTrail.key)
        let owner = ObjectIdentifier(core)
        for index in 0..<trail.pointee.count {
            let entry = trail.pointee.entries[index]
            if entry.slot == slot && entry.owner == owner { throw core.reentrantError(slot) }
        }
        trail.pointee.append(Entry(owner: owner, slot: slot))
        return trail
        #else
        fatalError("ServiceGraph: no thread-local storage on this platform")
        #endif
    }

    /// Takes the innermost transient off the current thread's trail, which ``enter(_:of:)`` returned.
    @inlinable
    static func leave(_ trail: UnsafeMutablePointer<Buffer>) {
        // Safety: the current thread's buffer, which only this thread touches, freed when it exits.
        trail.pointee.count -= 1
    }

    /// One transient being made.
    struct Entry {
        let owner: ObjectIdentifier
        let slot: Int
    }

    /// A thread's entries, innermost last, in memory the thread owns (freed when it exits).
    @usableFromInline
    struct Buffer {
        var entries: UnsafeMutablePointer<Entry>
        @usableFromInline
        var count: Int
        var capacity: Int

        @inline(__always)
        mutating func append(_ entry: Entry) {
            if count == capacity {
                // Safety: grows the buffer this thread owns; nothing else holds its old address.
                let larger = UnsafeMutablePointer<Entry>.allocate(capacity: capacity * 2)
                larger.moveInitialize(from: entries, count: count)
                entries.deallocate()
                entries = larger
                capacity *= 2
            }
            (entries + count).initialize(to: entry)
            count += 1
        }

        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        /// The current thread's buffer, made on its first use.
        static func current(_ key: pthread_key_t) -> UnsafeMutablePointer<Buffer> {
            // Safety: the key's values are only ever the `Buffer`s made below, freed by the key's destructor.
            if let buffer = pthread_getspecific(key) { return buffer.assumingMemoryBound(to: Buffer.self) }
            let buffer = UnsafeMutablePointer<Buffer>.allocate(capacity: 1)
            buffer.initialize(to: Buffer(entries: .allocate(capacity: 8), count: 0, capacity: 8))
            pthread_setspecific(key, buffer)
            return buffer
        }
        #endif
    }

    /// The thread-local slot holding each thread's ``Buffer``: one for the process, copied into each
    /// graph's core so that the resolve path reads a field, not a lazily made global.
    struct Slot: Sendable {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        let key: pthread_key_t

        static let shared: Slot = {
            var key = pthread_key_t()
            let status = pthread_key_create(&key) { buffer in
                #if canImport(Darwin)
                let buffer = buffer.assumingMemoryBound(to: Buffer.self)
                #else
                guard let buffer = buffer?.assumingMemoryBound(to: Buffer.self) else { return }
                #endif
                buffer.pointee.entries.deallocate()
                buffer.deinitialize(count: 1)
                buffer.deallocate()
            }
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
