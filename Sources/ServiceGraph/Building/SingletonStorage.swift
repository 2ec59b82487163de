/// The singleton instances of a graph, one slot per service, read without a lock or reference
/// counting on the box.
///
/// Safety: each slot is written at most once, by the build coordinator, before any reader of that slot
/// exists (its dependents are started after the write, and the graph is returned after the build).
/// After the build the storage is never written again, so concurrent reads need no synchronization.
/// The storage owns one retain of each box (taken in ``store(_:at:)``, given back in ``removeAll()``).
final class SingletonStorage: @unchecked Sendable {
    let base: UnsafeMutablePointer<Unmanaged<AnyBox>?>
    private let count: Int
    /// The order in which the instances were created; they are released in reverse.
    private var creationOrder: [Int] = []

    init(count: Int) {
        self.count = count
        base = .allocate(capacity: max(count, 1))
        base.initialize(repeating: nil, count: count)
        creationOrder.reserveCapacity(count)
    }

    deinit {
        removeAll()
        base.deinitialize(count: count)
        base.deallocate()
    }

    /// Stores a created instance. Only the build coordinator calls this.
    func store(_ box: AnyBox, at slot: Int) {
        base[slot] = .passRetained(box)
        creationOrder.append(slot)
    }

    /// Drops every instance, most recently created first.
    func removeAll() {
        for slot in creationOrder.reversed() {
            base[slot]?.release()
            base[slot] = nil
        }
        creationOrder.removeAll()
    }
}
