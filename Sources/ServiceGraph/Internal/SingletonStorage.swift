/// The singleton instances of a graph, one slot per service, read without a lock.
///
/// Safety: each slot is written at most once, by the build coordinator, before any reader of that slot
/// exists (its dependents are started after the write, and the graph is returned after the build).
/// After the build the storage is never written again, so concurrent reads need no synchronization.
final class SingletonStorage: @unchecked Sendable {
    private let buffer: UnsafeMutableBufferPointer<AnyBox?>
    /// The order in which the instances were created; they are released in reverse.
    private var creationOrder: [Int] = []

    init(count: Int) {
        buffer = .allocate(capacity: count)
        buffer.initialize(repeating: nil)
        creationOrder.reserveCapacity(count)
    }

    deinit {
        for slot in creationOrder.reversed() {
            buffer[slot] = nil
        }
        buffer.deinitialize()
        buffer.deallocate()
    }

    /// Stores a created instance. Only the build coordinator calls this.
    func store(_ box: AnyBox, at slot: Int) {
        buffer[slot] = box
        creationOrder.append(slot)
    }

    /// The box at `slot`, or nil when it holds no singleton.
    func box(at slot: Int) -> AnyBox? {
        buffer[slot]
    }

    /// The singleton at `slot`, which must hold a `Value` (guaranteed by construction).
    ///
    /// - Complexity: O(1), no lock, no allocation.
    func value<Value: Sendable>(at slot: Int, as type: Value.Type) -> Value {
        unsafeDowncast(buffer[slot].unsafelyUnwrapped, to: Box<Value>.self).value
    }

    /// Drops every instance, most recently created first.
    func removeAll() {
        for slot in creationOrder.reversed() {
            buffer[slot] = nil
        }
        creationOrder.removeAll()
    }
}
