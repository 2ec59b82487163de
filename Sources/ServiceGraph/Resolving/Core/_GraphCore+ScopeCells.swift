import Synchronization

extension _GraphCore {
    /// A scope's created instances, one cell per scoped service, so that reading an instance already
    /// created takes neither a lock nor a dictionary lookup: a table index and one atomic load.
    ///
    /// Safety: a cell is published once, with a releasing store of a box that is complete by then (and
    /// whose `didAdd` has run), and read with an acquiring load, so a reader that sees the box sees the
    /// instance in it. A cell is emptied only by the scope's close (or its deinit), and the close empties
    /// the cells only after every resolve in flight has returned and new ones are refused: a reader that
    /// holds a cell's box without retaining it (``_PublishedBox``) is always inside a resolve the close
    /// waits for. The table owns one retain of each published box (taken in ``publish(_:at:)``, given
    /// back by whoever takes it out with ``take(_:)``).
    ///
    /// A cell also says who is making its instance, so that the first resolve of a request scope's
    /// service claims it without the scope's lock: empty; ``claimed`` by a resolve that makes it in place
    /// and that no one waits for (it publishes or gives up with a compare-and-exchange); ``waited``, made
    /// with the scope's ``CreationList`` entry for it, under the scope's lock (those waiting are there);
    /// or the instance's box. Readers of boxes see either mark as empty.
    struct ScopeCells: @unchecked Sendable {
        typealias Cell = Atomic<Unmanaged<_AnyBox>?>

        /// The layout's memory (see ``ScopeLayout/Memory``), kept here: read on every resolve of a scoped
        /// instance. Plain pointers, so that a view of a table is trivial to copy and to use: what holds
        /// the table's memory (a scope's header, see ``_ScopeBody``, or the table's own storage, see
        /// ``make(layout:)``) keeps the layout.
        private let layout: ScopeLayout.Memory
        /// One cell per scoped slot, in the order of ``ScopeLayout``.
        private let cells: UnsafeMutablePointer<Cell>
        /// The slots of the instances the scope created, in creation order, after the cells in the same
        /// memory. Each position is written once, by the resolve that made the instance (under the scope's
        /// lock, or without it for an instance made in place), and read only once the scope's resolves
        /// have all returned: each resolve leaves the scope's resolve gate with a releasing write, which a
        /// close's wait for the gate to drain reads with an acquiring one.
        private let order: UnsafeMutablePointer<Int32>

        /// Cells that are a storage of their own (a graph's singletons created on first use).
        private final class Storage: ManagedBuffer<ScopeLayout, Cell> {
            deinit {
                // Through the pointers, not the `header` property, whose read would be an exclusivity
                // check at run time.
                withUnsafeMutablePointers { header, cells in ScopeCells.deinitialize(cells, count: header.pointee.count)
                }
            }
        }

        /// How many cells a table for `layout` takes in its owner's memory: one per scoped service, then
        /// room for `count` 4-byte slots, the creation order (half a cell each where a cell is a 64-bit
        /// word, a whole one on a 32-bit platform): the scope's list of what it created, without an
        /// allocation of its own.
        static func memoryCount(for layout: ScopeLayout) -> Int {
            let cell = MemoryLayout<Cell>.stride
            let orderCells = (layout.count * MemoryLayout<Int32>.stride + cell - 1) / cell
            return max(layout.count + orderCells, 1)
        }

        /// A table in a storage of its own, which the caller keeps as long as it uses the table.
        static func make(layout: ScopeLayout) -> (cells: ScopeCells, storage: AnyObject) {
            // Safety: `create` makes an instance of the class it is called on.
            let storage = unsafeDowncast(
                Storage.create(minimumCapacity: memoryCount(for: layout)) { _ in layout },
                to: Storage.self
            )
            // Safety: the memory stays valid while the storage lives, which the caller keeps; the storage's
            // header keeps the layout.
            return (initialize(at: storage.withUnsafeMutablePointerToElements { $0 }, layout: layout), storage)
        }

        /// A table in the memory at `memory` (``memoryCount(for:)`` cells), which its owner keeps, with
        /// `layout`, and releases with ``deinitialize(_:count:)`` when it ends.
        @inline(__always)
        static func initialize(at memory: UnsafeMutablePointer<Cell>, layout: ScopeLayout) -> ScopeCells {
            let count = layout.count
            for index in 0..<count { (memory + index).initialize(to: Atomic(nil)) }
            // Safety: plain slots after the cells, within the memory's ``memoryCount(for:)`` cells.
            let order = UnsafeMutableRawPointer(memory + count).bindMemory(to: Int32.self, capacity: count)
            return ScopeCells(layout: layout.memory, cells: memory, order: order)
        }

        /// Releases what the `count` cells at `cells` still hold, and deinitializes them: their owner's end.
        static func deinitialize(_ cells: UnsafeMutablePointer<Cell>, count: Int) {
            for index in 0..<count {
                // A scope's close takes every box out first (here this only guards against a leak); a
                // graph's singletons created on first use are released here.
                if let box = cells[index].exchange(nil, ordering: .relaxed), !isMark(box) { box.release() }
            }
            cells.deinitialize(count: count)
        }

        /// Records that the instance at `slot` was the scope's `position`th creation (seeds first), each
        /// cell's instance once, by the resolve that made it (see `order`): `position` is below the
        /// number of cells.
        func noteCreation(of slot: Int, at position: Int) {
            _internalInvariant(position >= 0 && position < layout.count, "creation \(position) of \(layout.count)")
            order[position] = Int32(truncatingIfNeeded: slot)
        }

        /// The slot of the scope's `position`th creation (see ``noteCreation(of:at:)``).
        func slot(createdAt position: Int) -> Int {
            _internalInvariant(position >= 0 && position < layout.count, "creation \(position) of \(layout.count)")
            return Int(order[position])
        }

        /// The cell of the scoped service at `slot`.
        private func cell(_ slot: Int) -> UnsafeMutablePointer<Atomic<Unmanaged<_AnyBox>?>> {
            let index = layout.index(of: slot)
            // The resolve path reaches this only for scoped slots; a wrong slot would read another cell.
            _internalInvariant(index >= 0 && index < layout.count, "slot \(slot) is not a scoped service")
            return cells + index
        }

        /// Where the hooks test of the instances made for the service at `slot` is remembered.
        func hookAnswer(at slot: Int) -> _HookAnswer? {
            layout.hookAnswer(at: slot)
        }

        /// The published box at `slot`, not retained; nil when it is not created yet (or being made), or
        /// not scoped.
        func box(at slot: Int) -> _PublishedBox? {
            let index = layout.index(of: slot)
            guard index >= 0, let box = cells[index].load(ordering: .acquiring), !Self.isMark(box) else { return nil }
            return _PublishedBox(box)
        }

        // MARK: Who is making an instance

        /// The mark of a cell whose instance a resolve is making in place, with no one waiting for it. A
        /// value no object can have (it is never retained or released).
        private static var claimed: Unmanaged<_AnyBox> { Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: 0x8)!) }
        /// The mark of a cell whose instance is being made, with the scope's ``CreationList`` entry for it.
        private static var waited: Unmanaged<_AnyBox> { Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: 0x18)!) }

        @inline(__always)
        private static func isMark(_ cell: Unmanaged<_AnyBox>) -> Bool {
            UInt(bitPattern: cell.toOpaque()) <= 0x18
        }

        /// What a cell holds, for the scope's code under its lock.
        enum Making {
            case empty
            /// A resolve makes it in place, and no one waits for it.
            case claimed
            /// Being made, with the scope's list entry for it.
            case waited
            case created
        }

        /// What the cell of `slot` holds; empty when the service has no cell here.
        func making(_ slot: Int) -> Making {
            let index = layout.index(of: slot)
            guard index >= 0, let cell = cells[index].load(ordering: .acquiring) else { return .empty }
            if cell.toOpaque() == Self.claimed.toOpaque() { return .claimed }
            return cell.toOpaque() == Self.waited.toOpaque() ? .waited : .created
        }

        /// Claims the empty cell of `slot` for a resolve that makes the instance in place, without the
        /// scope's lock; false when it is created or being made.
        ///
        /// Acquiring, as ``markWaited(_:from:)`` from empty is: an attempt that failed gave the cell up
        /// with a releasing write (``unclaim(_:)``, ``unmark(_:)``), so the next attempt sees all the
        /// failed one did (a factory's own state included), as it did when both took the scope's lock.
        /// Two resolves in one scope are ordered by its resolve gate as well, but a service of an outer
        /// scope is made from its inner scopes, through their gates: only the cell orders those. (A
        /// factory or `didAdd` abandoned at its timeout is not ordered: it may still be running.)
        func claim(_ slot: Int) -> Bool {
            cell(slot).pointee.compareExchange(expected: nil, desired: Self.claimed, ordering: .acquiring).exchanged
        }

        /// Marks the cell of `slot` as made with the scope's list entry for it, from `expected` (empty: a
        /// creation the list starts; claimed: the first resolve to wait for a creation in place). Under
        /// the scope's lock; false when the cell changed meanwhile (a creation in place ended).
        func markWaited(_ slot: Int, from expected: Making) -> Bool {
            _internalInvariant(expected == .empty || expected == .claimed, "a cell marked from \(expected)")
            return cell(slot).pointee.compareExchange(
                expected: expected == .claimed ? Self.claimed : nil,
                desired: Self.waited,
                ordering: .acquiring
            ).exchanged
        }

        /// Publishes the instance a resolve made in place, if no one came to wait for it (the cell is
        /// still claimed); false otherwise, and the caller publishes it under the lock
        /// (``publishMade(_:at:)``).
        func publishClaimed(_ box: _AnyBox, at slot: Int) -> Bool {
            let retained = Unmanaged.passRetained(box)
            let exchanged = cell(slot).pointee.compareExchange(
                expected: Self.claimed,
                desired: retained,
                ordering: .releasing
            ).exchanged
            if !exchanged { retained.release() }
            return exchanged
        }

        /// Publishes the instance made at `slot`, whose cell is marked as being made: under the scope's
        /// lock, or by the resolve that claimed it.
        func publishMade(_ box: _AnyBox, at slot: Int) {
            let old = cell(slot).pointee.exchange(.passRetained(box), ordering: .releasing)
            precondition(old.map(Self.isMark) == true, "a scoped instance was published twice")
        }

        /// Gives up the claim of a resolve that failed to make the instance in place, if no one came to
        /// wait for it; false otherwise, and the caller empties the cell under the lock.
        func unclaim(_ slot: Int) -> Bool {
            cell(slot).pointee.compareExchange(expected: Self.claimed, desired: nil, ordering: .releasing).exchanged
        }

        /// Empties the cell of `slot`, marked as being made with the scope's list entry for it: the
        /// creation ended without an instance. Under the scope's lock.
        func unmark(_ slot: Int) {
            let (exchanged, found) = cell(slot).pointee.compareExchange(
                expected: Self.waited,
                desired: nil,
                ordering: .releasing
            )
            _internalInvariant(exchanged || found == nil, "a cell not being made was emptied")
        }

        /// Publishes the created instance at `slot`, once: readers see it from now on.
        func publish(_ box: _AnyBox, at slot: Int) {
            // Safety: the table takes one retain, given back by `take(_:)` (or `deinit`).
            let (exchanged, _) = cell(slot).pointee.compareExchange(
                expected: nil,
                desired: .passRetained(box),
                ordering: .releasing
            )
            precondition(exchanged, "a scoped instance was published twice")
        }

        /// Takes the box at `slot` out of the table, with the table's retain; nil when there is none.
        func take(_ slot: Int) -> _AnyBox? {
            cell(slot).pointee.exchange(nil, ordering: .acquiring)?.takeRetainedValue()
        }
    }

    /// A box read from a scope's ``ScopeCells`` by a resolve still in flight, not retained.
    @usableFromInline
    struct _PublishedBox {
        @usableFromInline
        let box: Unmanaged<_AnyBox>

        init(_ box: Unmanaged<_AnyBox>) {
            self.box = box
        }

        /// The instance in the box.
        ///
        /// - Complexity: O(1), no retain of the box.
        @inlinable
        func value<Value: Sendable>(as type: Value.Type) -> Value {
            // Safety: the in-flight resolve keeps the box alive (see ``ScopeCells``).
            box._withUnsafeGuaranteedRef { _unsafeValue(of: $0, as: Value.self) }
        }
    }

    /// Where each scoped service of a graph has its cell in a scope's ``ScopeCells``: made once per
    /// graph, on its first scope, and shared by all its scopes.
    final class ScopeLayout: @unchecked Sendable {
        /// The layout's tables, as plain pointers (see ``ScopeCells``), valid while the layout lives.
        struct Memory {
            /// Per slot of the graph: the index of its cell, or -1 when the service is not scoped.
            let indices: UnsafeMutablePointer<Int32>
            /// Per cell, whether the dynamic type last made for it has lifecycle hooks (``_HookAnswer``):
            /// shared by the graph's scopes, so that each makes its instances without a conformance
            /// lookup.
            let hookAnswers: UnsafeMutablePointer<Atomic<UInt>>
            /// How many services are scoped.
            let count: Int
            /// How many slots the graph has: the length of ``indices``.
            let slotCount: Int

            /// Where the hooks test of the instances made for the service at `slot` is remembered; nil
            /// when it has no cell.
            func hookAnswer(at slot: Int) -> _HookAnswer? {
                let index = index(of: slot)
                guard index >= 0 else { return nil }
                return _HookAnswer(hookAnswers + index)
            }

            /// The index of the cell of the service at `slot`; -1 when it is not scoped.
            @inline(__always)
            func index(of slot: Int) -> Int {
                _internalInvariant(slot >= 0 && slot < slotCount, "slot \(slot) of \(slotCount)")
                return Int(indices[slot])
            }
        }

        /// Safety: allocated and initialized here, deinitialized and deallocated in `deinit`.
        let memory: Memory

        /// How many services are scoped.
        var count: Int { memory.count }

        convenience init(core: _GraphCore) {
            self.init(core: core) { core.lifetime(of: $0) == .scoped }
        }

        /// A layout of the services `isIncluded` accepts (the singletons a graph creates on first use
        /// have their cells too, see ``DeferredSingletons``).
        init(core: _GraphCore, where isIncluded: (Int) -> Bool) {
            let indices = UnsafeMutablePointer<Int32>.allocate(capacity: core.count)
            var count = 0
            for slot in 0..<core.count {
                if isIncluded(slot) {
                    (indices + slot).initialize(to: Int32(count))
                    count += 1
                } else {
                    (indices + slot).initialize(to: -1)
                }
            }
            let hookAnswers = UnsafeMutablePointer<Atomic<UInt>>.allocate(capacity: count)
            for index in 0..<count { (hookAnswers + index).initialize(to: Atomic(0)) }
            memory = Memory(indices: indices, hookAnswers: hookAnswers, count: count, slotCount: core.count)
        }

        deinit {
            memory.hookAnswers.deinitialize(count: memory.count)
            memory.hookAnswers.deallocate()
            memory.indices.deinitialize(count: memory.slotCount)
            memory.indices.deallocate()
        }
    }
}
