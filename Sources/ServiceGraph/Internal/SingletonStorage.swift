/// The singleton instances of a graph, one slot per service, read without a lock.
///
/// Safety: each slot is written at most once, by the build coordinator, before any reader of that slot
/// exists (its dependents are started after the write, and the graph is returned after the build).
/// After the build the storage is never written again, so concurrent reads need no synchronization.
@usableFromInline
final class SingletonStorage: @unchecked Sendable {
    @usableFromInline
    let buffer: UnsafeMutableBufferPointer<AnyBox?>
    /// The order in which the instances were created; they are released in reverse.
    private var creationOrder: [Int] = []

    init(count: Int) {
        buffer = .allocate(capacity: count)
        buffer.initialize(repeating: nil)
        creationOrder.reserveCapacity(count)
    }

    deinit {
        removeAll()
        buffer.deinitialize()
        buffer.deallocate()
    }

    /// Stores a created instance. Only the build coordinator calls this.
    func store(_ box: AnyBox, at slot: Int) {
        buffer[slot] = box
        creationOrder.append(slot)
    }

    /// The box at `slot`, or nil when it holds no singleton.
    ///
    /// - Complexity: O(1), no lock, no allocation.
    @inlinable
    func box(at slot: Int) -> AnyBox? {
        buffer[slot]
    }

    /// Drops every instance, most recently created first.
    func removeAll() {
        for slot in creationOrder.reversed() {
            buffer[slot] = nil
        }
        creationOrder.removeAll()
    }
}
