import Synchronization

/// What a ``ServiceScope`` is made of: its instances, its state and the resolves in flight. The graph
/// holds it strongly while the scope is open (its shutdown closes it), and the caller holds the
/// ``ServiceScope`` handle, whose end (the caller dropping the scope without closing it) releases what
/// the scope owns. Two objects, so that the graph needs no weak reference to each scope: a weak
/// reference gives its object a side table, which a server pays for once per request scope, with cold
/// caches.
///
/// One allocation: the body's fields and state are the header of its memory, and its instance cells,
/// the creation order, the resolve gate's word and the lock's mutex are the tail (laid out by
/// `ManagedBufferPointer`, as ``_ValueBox`` is). A server opens a scope per request, and each
/// allocation a request makes costs it more than the work in between.
@usableFromInline
final class _ScopeBody: @unchecked Sendable {
    // No stored properties: the header and the tail are the object's memory (see ``Header``).

    private typealias Memory = ManagedBufferPointer<Header, _GraphCore.ScopeCells.Cell>

    /// The scope's fields, immutable (its state is in the tail, under the lock, so that no write under
    /// the lock is to the memory the resolve path reads without it). Of types whose layout this module
    /// knows only, as the state's, so that each access is at an offset known when compiling (a type of
    /// the concurrency library in either would make each access ask the runtime for the layout).
    private struct Header {
        /// The graph's core. The inlined resolve path gets it from the handle (``ServiceScope/core``)
        /// rather than from here: a read through the header is a retain and a release per call.
        let core: _GraphCore
        let id: Int
        /// Where the graph keeps this scope among its open ones (``OpenScopes``).
        let place: Int
        /// The scope's kind: an index in the graph's ``_GraphCore/scopeKinds`` (0: ``ScopeKind/default``).
        let kind: UInt16
        /// The scope this one was opened from (a scope of the parent kind), kept alive by this one; nil
        /// for a scope opened from the graph. It is `parentHandle?._body`, kept so that the resolve
        /// path's walk to an outer kind's scope reads one field per step rather than two.
        let parent: _ScopeBody?
        /// The handle of the scope this one was opened from, kept alive by this one: that scope is not
        /// dropped (and releases nothing) before this one finished.
        let parentHandle: ServiceScope?
        /// The layout of the instance table, kept alive here for ``instances``, which views it.
        let layout: _GraphCore.ScopeLayout
        /// The created instances, read without a lock: a view of the tail's first cells.
        let instances: _GraphCore.ScopeCells
        /// The tail's length (see ``TailLayout``).
        let tail: TailLayout
    }

    /// The tail: the scope's ``State`` (read and written under the lock only), the resolve gate's word,
    /// the count of creations and the lock's mutex, at offsets known when compiling (their types' layouts are), then the
    /// instance table (the cells and the creation order), whose length is the scope layout's. Each part
    /// at a whole number of cells.
    private struct TailLayout {
        // Computed, not stored: constants once inlined, where a static stored property is a lazy global.
        @inline(__always) static var state: Int { 0 }
        @inline(__always) static var gate: Int { state + cells(for: State.self) }
        @inline(__always) static var creations: Int { gate + cells(for: ResolveGate.self) }
        @inline(__always) static var mutex: Int { creations + cells(for: Creations.self) }
        @inline(__always) static var table: Int { mutex + cells(for: PlatformMutex.Storage.self) }

        let cellCount: Int
        let capacity: Int

        init(_ layout: _GraphCore.ScopeLayout) {
            cellCount = layout.count
            let tableCount = _GraphCore.ScopeCells.memoryCount(for: layout)
            _internalInvariant(
                tableCount * MemoryLayout<_GraphCore.ScopeCells.Cell>.stride
                    >= cellCount * (MemoryLayout<_GraphCore.ScopeCells.Cell>.stride + MemoryLayout<Int32>.stride),
                "the creation order runs past the tail"
            )
            capacity = Self.table + tableCount
        }

        /// The cells a value of `type` takes.
        @inline(__always)
        private static func cells<T: ~Copyable>(for type: T.Type) -> Int {
            precondition(
                MemoryLayout<T>.alignment <= MemoryLayout<_GraphCore.ScopeCells.Cell>.alignment,
                "\(T.self) is aligned beyond the tail"
            )
            let cell = MemoryLayout<_GraphCore.ScopeCells.Cell>.stride
            return (MemoryLayout<T>.size + cell - 1) / cell
        }
    }

    @inline(__always)
    private var header: UnsafeMutablePointer<Header> {
        // Safety: the object is made by `make` as a buffer of this layout; the pointer is used while the
        // object lives (by its own methods).
        Memory(unsafeBufferObject: self).withUnsafeMutablePointerToHeader { $0 }
    }

    /// The part of the tail `offset` cells from its start, bound to `T` by `make`.
    @inline(__always)
    private func tail<T: ~Copyable>(at offset: Int, as type: T.Type) -> UnsafeMutablePointer<T> {
        let tail = Memory(unsafeBufferObject: self).withUnsafeMutablePointerToElements { $0 }
        return UnsafeMutableRawPointer(tail + offset).assumingMemoryBound(to: T.self)
    }

    /// The graph's core, for the library's code that is not inlined into clients (the inlined resolve
    /// path is given it: see ``Header/core``).
    var core: _GraphCore {
        // An addressor: the core is read in place, borrowed, with no retain and release around each use
        // (the scope's code reads it a dozen times per request).
        unsafeAddress {
            UnsafeRawPointer(header).advanced(by: MemoryLayout<Header>.offset(of: \Header.core).unsafelyUnwrapped)
                .assumingMemoryBound(to: _GraphCore.self)
        }
    }
    var id: Int { header.pointee.id }
    private var place: Int { header.pointee.place }
    var kind: UInt16 { header.pointee.kind }
    var parent: _ScopeBody? { header.pointee.parent }
    /// The created instances, read without a lock.
    private var instances: _GraphCore.ScopeCells { header.pointee.instances }
    /// The resolves in flight, which a close waits for.
    private var resolves: UnsafeMutablePointer<ResolveGate> { tail(at: TailLayout.gate, as: ResolveGate.self) }
    /// How many instances the scope created, and whether it makes new ones.
    private var creations: UnsafeMutablePointer<Creations> { tail(at: TailLayout.creations, as: Creations.self) }
    /// The scope's state under its lock.
    private var state: StateLock {
        StateLock(
            mutex: tail(at: TailLayout.mutex, as: PlatformMutex.Storage.self),
            state: tail(at: TailLayout.state, as: State.self)
        )
    }

    private enum LookupStep {
        case ready
        case wait(Creation)
        /// This call creates the instance, in its own task.
        case create(Creation.ID)
        case closed
    }

    private struct State {
        /// The graph the scope was opened from, held until the scope finishes, then let go (a weak
        /// reference would cost each scope a side table).
        var graph: ServiceGraph?
        /// The scope's one close; a shutdown that finds the scope closing waits for it.
        var closing = Teardown<[ServiceGraphError.Problem]>()
        /// The rest of the state, nil while all of it is empty (see ``Extras``).
        var extras: Extras?

        /// The extras, made now if the scope has none: for a write.
        mutating func extrasForWriting() -> Extras {
            if let extras { return extras }
            let made = Extras()
            extras = made
            return made
        }

        /// Takes the claims on the caller's seeds' hooks, leaving none.
        func takeCallerSeedClaims() -> [InstanceHooks] {
            guard let extras else { return [] }
            defer { extras.callerSeedClaims = [] }
            return extras.callerSeedClaims
        }
    }

    /// The part of a scope's ``State`` that a request scope's usual cycle leaves empty (seeds and
    /// services with no hooks, the services made in place, no scope opened from it, closed with no
    /// resolve in flight): made on the first write, under the lock, and read and written under it only.
    /// Apart, so that making a scope initializes, and its end destroys, only the fields that cycle uses,
    /// and its close tests one reference for all the rest.
    private final class Extras {
        /// The instances being made, by slot. A creation publishes its instance in
        /// ``_GraphCore/ScopeCells`` and leaves this list at once, so it holds no instance itself once
        /// done.
        var creating = CreationList()
        /// The identity of the next creation run by a resolve (see ``Creation/inline(_:)``).
        var nextCreationID: Creation.ID = 0
        /// The created instances whose `willRemove` the scope owes, in creation order.
        var owedHooks: [StartedService] = []
        /// The claims on the hooks of the seeds the caller owns: held while the scope is open, so that no
        /// scoped service that hands one out runs its hooks, and given back unrun.
        var callerSeedClaims: [InstanceHooks] = []
        /// The scopes opened from this one, weakly (a child keeps its parent alive, not the reverse):
        /// closed before this one releases anything.
        var children = [Int: WeakReference<ServiceScope>]()
        /// The scopes opened from this one that have not finished (closed, or dropped and done releasing
        /// what they owned): this one's close waits for them all.
        var unfinishedChildren = 0
        var childWaiters: [CheckedContinuation<Void, Never>] = []
        /// The close waiting for the resolves in flight to return (see ``ResolveGate``): one at most. An
        /// array rather than an optional: an optional of a type of the concurrency library (whose layout
        /// is not known to this module) would make this object's layout known only at run time.
        var drainWaiters: [CheckedContinuation<Void, Never>] = []

        /// Whether a close has nothing to wait for but the resolves in flight: no scope opened from this
        /// one is recorded or unfinished, and no creation is in flight.
        var waitsForNothing: Bool { children.isEmpty && unfinishedChildren == 0 && creating.isEmpty }

        /// Records that the calling resolve makes the instance at `slot`, which no one is making.
        func startInlineCreation(at slot: Int) -> Creation.ID {
            let id = nextCreationID
            nextCreationID &+= 1
            creating.append(.inline(id), at: slot)
            return id
        }
    }

    /// The count of the instances a scope created, seeds included (their slots, in creation order, are in
    /// the cell table, ``_GraphCore/ScopeCells/slot(createdAt:)``, which has room for all of them), and
    /// whether it makes new ones: atomics, so that a resolve that makes an instance in place records it
    /// without the scope's lock. Read under the lock once no resolve is in flight (a close waits for them
    /// all before it takes the count).
    struct Creations: ~Copyable, Sendable {
        private let count = Atomic<Int>(0)
        private let refused = Atomic<Bool>(false)

        /// The position in creation order of the instance just made.
        func next() -> Int {
            count.wrappingAdd(1, ordering: .relaxed).oldValue
        }

        /// Takes the number of instances created, leaving none.
        func take() -> Int {
            count.exchange(0, ordering: .relaxed)
        }

        /// Whether the scope has started closing: a resolve makes no new instance then.
        var areRefused: Bool { refused.load(ordering: .relaxed) }

        func refuse() {
            refused.store(true, ordering: .relaxed)
        }
    }

    /// Records the instance just created at `slot`, whose `willRemove` the scope owes if `hooks`. Under the
    /// lock when `hooks` (the list of hooks owed is the state's).
    private func noteCreated(_ slot: Int, hooks: InstanceHooks?, in state: inout State) {
        instances.noteCreation(of: slot, at: creations.pointee.next())
        if let hooks { state.extrasForWriting().owedHooks.append(StartedService(slot: slot, hooks: hooks)) }
    }

    /// Records the instance just made in place at `slot`, which has no hooks: no lock.
    private func noteCreatedInPlace(_ slot: Int) {
        instances.noteCreation(of: slot, at: creations.pointee.next())
    }

    /// Takes the number of created instances (their slots stay in the cell table, and no creation writes
    /// there once the scope is closing and its resolves have returned) and the hooks owed, leaving none.
    private func takeCreated(_ state: inout State) -> (count: Int, owed: [StartedService]) {
        guard let extras = state.extras else { return (creations.pointee.take(), []) }
        defer { extras.owedHooks = [] }
        return (creations.pointee.take(), extras.owedHooks)
    }

    /// The seeds of a new scope, one per seed of its kind.
    enum Seeding {
        /// As given, when they are exactly the kind's seeds and none has hooks (see
        /// ``_GraphCore/seedsArePlainAndExact(_:kind:)``): written straight to their cells.
        case exact([ScopeSeed])
        /// The kind's one seed, with no hooks, and its slot: written straight to its cell.
        case one(ScopeSeed, at: Int)
        /// At their slots, with their hooks claimed (see ``_GraphCore/placedSeeds(_:kind:)``).
        case placed([_GraphCore.PlacedSeed])
    }

    /// A scope of `graph` given its seeds: each is published at once, and listed first among the
    /// created instances (in slot order), so it is released last.
    static func make(
        graph: ServiceGraph,
        layout: _GraphCore.ScopeLayout,
        id: Int,
        place: Int,
        seeding: Seeding = .placed([]),
        kind: UInt16 = 0,
        parent: ServiceScope? = nil
    ) -> _ScopeBody {
        let tail = TailLayout(layout)
        let memory = Memory(bufferClass: _ScopeBody.self, minimumCapacity: tail.capacity) { buffer, _ in
            // Safety: the tail's memory is there, uninitialized; its table is initialized here, the rest
            // below, before anything reads it; all of it is deinitialized in `deinit`.
            let elements = Memory(unsafeBufferObject: buffer).withUnsafeMutablePointerToElements { $0 }
            return Header(
                core: graph.core,
                id: id,
                place: place,
                kind: kind,
                parent: parent?._body,
                parentHandle: parent,
                layout: layout,
                instances: _GraphCore.ScopeCells.initialize(at: elements + TailLayout.table, layout: layout),
                tail: tail
            )
        }
        // Safety: the buffer is an instance of the class it was made with.
        let scope = unsafeDowncast(memory.buffer, to: _ScopeBody.self)
        // The tail's other parts, each bound to its type here, then read as bound.
        memory.withUnsafeMutablePointerToElements { elements in
            UnsafeMutableRawPointer(elements + TailLayout.gate).bindMemory(to: ResolveGate.self, capacity: 1)
                .initialize(
                    to: ResolveGate()
                )
            UnsafeMutableRawPointer(elements + TailLayout.creations).bindMemory(to: Creations.self, capacity: 1)
                .initialize(to: Creations())
            PlatformMutex.initialize(
                UnsafeMutableRawPointer(elements + TailLayout.mutex).bindMemory(
                    to: PlatformMutex.Storage.self,
                    capacity: 1
                )
            )
            // The state filled in place, not copied in: a copy retains each reference the state holds.
            let state = UnsafeMutableRawPointer(elements + TailLayout.state).bindMemory(to: State.self, capacity: 1)
            state.initialize(to: State())
            state.pointee.graph = graph
            scope.seed(&state.pointee, with: seeding)
        }
        return scope
    }

    /// Publishes the scope's seeds and lists them as its first creations: see
    /// ``make(graph:layout:id:place:seeding:kind:parent:)``.
    @inline(__always)
    private func seed(_ state: inout State, with seeding: Seeding) {
        let (core, instances) = (header.pointee.core, header.pointee.instances)
        switch seeding {
        case .exact(let seeds):
            let seedSlots = core.seedSlots(ofKind: kind)
            for (position, seed) in seeds.enumerated() {
                // Safety: each seed's key has a slot (``_GraphCore/seedsArePlainAndExact(_:kind:)``).
                instances.publish(seed.box, at: core.slot(of: seed, at: position, of: seedSlots).unsafelyUnwrapped)
            }
            for slot in seedSlots { noteCreated(slot, hooks: nil, in: &state) }
        case .one(let seed, let slot):
            instances.publish(seed.box, at: slot)
            noteCreated(slot, hooks: nil, in: &state)
        case .placed(let seeds):
            for placed in seeds {
                instances.publish(placed.seed.box, at: placed.slot)
                // A seed the scope owns gets its `willRemove` when the scope closes; a caller's seed none.
                let owned = placed.isOwned
                noteCreated(placed.slot, hooks: owned ? placed.claimedHooks : nil, in: &state)
                if !owned, let hooks = placed.claimedHooks { state.extrasForWriting().callerSeedClaims.append(hooks) }
            }
        }
    }

    deinit {
        let table = tail(at: TailLayout.table, as: _GraphCore.ScopeCells.Cell.self)
        _GraphCore.ScopeCells.deinitialize(table, count: header.pointee.tail.cellCount)
        // Each part taken out and destroyed as its own type (`move()`): `deinitialize(count:)` goes through
        // the runtime's loop over an array of any type, more code fetched for each scope that ends.
        _ = resolves.move()
        _ = creations.move()
        PlatformMutex.destroy(tail(at: TailLayout.mutex, as: PlatformMutex.Storage.self))
        _ = tail(at: TailLayout.state, as: State.self).move()
        _ = header.move()
    }

    /// The scope's state and its mutex, in the scope's memory.
    private struct StateLock: @unchecked Sendable {
        let mutex: UnsafeMutablePointer<PlatformMutex.Storage>
        let state: UnsafeMutablePointer<State>

        func withLock<Result, Failure: Error>(
            _ body: (inout State) throws(Failure) -> Result
        ) throws(Failure) -> Result {
            try PlatformMutex.withLock(mutex, state, body)
        }
    }

    /// The caller let go of the scope's handle: a scope released without ``close()`` releases its
    /// instances, most recent first; the hooks it owed run in a task of their own, which the graph's
    /// shutdown waits for.
    func handleDropped() {
        // Closed: the close held the handle until it finished, so it has, and left nothing to release.
        if resolves.pointee.isClosing { return }
        let isDrained = state.withLock { state -> Bool? in
            guard case .run = state.closing.start() else { return nil }
            creations.pointee.refuse()
            _ = state.closing.finish(with: [])
            // A resolve may be in flight without the handle: a provider's or a lazy handle's, which hold
            // this body. New ones are refused; what the scope owns is released once those have returned.
            resolves.pointee.close()
            return resolves.pointee.isDrained
        }
        guard let isDrained else { return }
        if isDrained {
            releaseDropped()
        } else {
            _ = UnretainingTask.start { [self] in
                await resolvesDrained()
                releaseDropped()
            }
        }
    }

    /// Releases what a scope dropped without ``close()`` owned, no resolve being in flight: see
    /// ``handleDropped()``.
    private func releaseDropped() {
        let taken = state.withLock { state -> (scope: DroppedScope, graph: ServiceGraph?) in
            for hooks in state.takeCallerSeedClaims() { self.core.hookClaims.giveBack(hooks) }
            let (count, owed) = takeCreated(&state)
            let boxes = (0..<count).compactMap { instances.take(instances.slot(createdAt: $0)) }
            return (DroppedScope(owed: owed, boxes: boxes), state.graph.take())
        }
        let dropped = taken.scope
        let graph = taken.graph
        let (id, place) = (self.id, self.place)
        guard dropped.owesHooks else {
            dropped.releaseInstances()
            // Reported whatever it owed, so that a listener's count of open scopes comes back to zero.
            if core.events.isEnabled(.scopeDropped) { core.events.send(ServiceGraphEvent(.scopeDropped)) }
            Self.tell(consume graph, finished: id, at: place)
            parent?.childFinished(id)
            return
        }
        let core = self.core
        // The graph is held until the hooks have run: a child graph dropped meanwhile would otherwise
        // tell its parent it finished, and the parent's shutdown release the singletons these hooks may
        // still use. Let go by `tell`, before the shutdown this may end resumes.
        let heldGraph = HandOver(consume graph)
        core.events.send(ServiceGraphEvent(.scopeDropped, key: dropped.owedNames(in: core)))
        UnretainingTask.start(
            {
                _ = await Lifecycle.releaseInPlace(dropped.takeOwed(), of: core)
                dropped.releaseInstances()
            },
            then: { [opener = HandOver((parent, header.pointee.parentHandle))] in
                // The scope this one was opened from (its body, and its handle, whose last release ends
                // it) is kept until this one's hooks ran, so that it releases nothing before them; then
                // told, and let go before the graph is told, so that a shutdown this tell lets return
                // finds neither still held (it ends, and tells the graph, on its own). Not this scope
                // itself: it holds the graph's core, and with it the singletons, which that shutdown must
                // not find held either (a top-level scope's task holds nothing of the graph then).
                do {
                    let taken = opener.take()
                    taken?.0?.childFinished(id)
                }
                Self.tell(heldGraph.take() ?? nil, finished: id, at: place)
            }
        )
    }

    /// See ``ServiceScope/resolve(_:)``.
    @inlinable
    @inline(__always)
    nonisolated(nonsending) func resolve<Key: ServiceKey>(
        _ key: Key.Type,
        core _core: _GraphCore
    ) async throws -> Key.Value {
        guard let slot = _core.slot(of: key) else { throw _notFoundError(key) }
        // One call out of line: counts the resolve in flight and reads the scope's cell for `slot`.
        let entry = _enter(at: slot)
        if case .refused = entry { throw _closedError(key) }
        defer { _leave() }
        // A scoped instance already created is read here, as fast as a singleton.
        if case .created(let box) = entry, !_core.reportsResolves { return box.value(as: Key.Value.self) }
        // A singleton, or a transient whose whole chain is synchronous (seeds are in place), is made
        // here, in the caller, as `resolveSynchronously` makes it: no asynchronous call unless a factory
        // must be awaited.
        if _core.resolvesSynchronouslyInScope(slot) {
            if _core.reportsResolves { return try _core.valueSynchronouslyReporting(at: slot, as: key, in: self) }
            return try _core.valueSynchronously(at: slot, as: key, in: self)
        }
        // A scoped instance whose factory is synchronous and whose dependencies are read in place is
        // made here too: the first resolve in a request scope, without an asynchronous call.
        if !_core.reportsResolves {
            switch try _makeInPlace(at: slot) {
            case .made(let box): return _unsafeValue(of: box, as: Key.Value.self)
            case .adding(let made): return _unsafeValue(of: try await _add(made), as: Key.Value.self)
            case .elsewhere: break
            }
        }
        return _unsafeValue(of: try await _core.boxAwaiting(at: slot, in: self), as: Key.Value.self)
    }

    /// The instance at `slot` (of `key`) as the scope holds it: a ``Lazy`` handle's first use.
    nonisolated(nonsending) func _box<Key: ServiceKey>(at slot: Int, key: Key.Type) async throws -> _AnyBox {
        let entry = _enter(at: slot)
        if case .refused = entry { throw _closedError(key) }
        defer { _leave() }
        if case .created(let box) = entry { return box.box.takeUnretainedValue() }
        return try await core.boxAwaiting(at: slot, in: self)
    }

    /// See ``ServiceScope/resolveSynchronously(_:)``.
    @inlinable
    func resolveSynchronously<Key: ServiceKey>(_ key: Key.Type, core _core: _GraphCore) throws -> Key.Value {
        guard let slot = _core.slot(of: key) else { throw _notFoundError(key) }
        let entry = _enter(at: slot)
        if case .refused = entry { throw _closedError(key) }
        defer { _leave() }
        // A seed is in place from the start, and read as `resolve` reads it (a created scoped instance is
        // not: the call's success would depend on timing, so it is left to `resolve`).
        if case .created(let box) = entry, !_core.reportsResolves, _core.isSeed(slot) {
            return box.value(as: Key.Value.self)
        }
        guard _core.resolvesSynchronouslyInScope(slot) else {
            if _core.isDeferred(slot) { return try _core.valueNotResolvableSynchronously(at: slot, as: Key.Value.self) }
            throw _cannotResolveSynchronouslyError(slot)
        }
        if _core.reportsResolves { return try _core.valueSynchronouslyReporting(at: slot, as: key, in: self) }
        return try _core.valueSynchronously(at: slot, as: key, in: self)
    }

    /// How a resolve started by ``_enter(at:)`` may go on.
    @usableFromInline
    enum _Entry {
        /// The scope is closing: nothing was counted, and the resolve must fail.
        case refused
        /// Counted as in flight; the slot has no created scoped instance.
        case entered
        /// Counted as in flight; the scoped instance at the slot, already created.
        case created(_GraphCore._PublishedBox)
    }

    /// Starts a resolve of the service at `slot`: counts it as in flight until ``_leave()``, so that
    /// closing the scope waits for it instead of releasing what it is using, and reads the slot's cell.
    /// One call for both, as the read of a created instance is the scope's hot path.
    @usableFromInline
    func _enter(at slot: Int) -> _Entry {
        switch resolves.pointee.enter() {
        case .entered: break
        case .refused: return .refused
        case .refusedLast:
            resumeDrainWaiter()
            return .refused
        }
        guard let box = instances.box(at: slot) else {
            // A service of an outer kind of scope, created in the outer scope: read in place too.
            if core.slotScopeKinds != nil, let box = outerBox(at: slot) { return .created(box) }
            return .entered
        }
        return .created(box)
    }

    /// The created instance at `slot` in the outer scope that owns it, for a resolve counted in flight
    /// in this one (the outer scope closes this one, which waits for its resolves, before it releases
    /// anything); nil when the service is not an outer kind's, or not created.
    private func outerBox(at slot: Int) -> _GraphCore._PublishedBox? {
        let owner = core.scopeKindIndex(of: slot)
        guard owner != kind, core.lifetime(of: slot) == .scoped else { return nil }
        return outerBox(at: slot, ownedBy: owner)
    }

    /// The created instance at `slot` in the scope of kind `owner` this one was opened from, directly or
    /// not; nil when there is none, or it has not created the instance.
    private func outerBox(at slot: Int, ownedBy owner: UInt16) -> _GraphCore._PublishedBox? {
        guard let parent else { return nil }
        // The walk takes no reference: each scope keeps the one it was opened from alive, and this one is
        // alive for the call (reference counting on the way was most of a nested read's cost).
        var candidate = Unmanaged.passUnretained(parent)
        while true {
            let (box, next) = candidate._withUnsafeGuaranteedRef { scope in
                scope.kind == owner
                    ? (scope.instances.box(at: slot), nil) : (nil, scope.parent.map { Unmanaged.passUnretained($0) })
            }
            guard let next else { return box }
            candidate = next
        }
    }

    /// The error for `key` missing from the graph (out of line: the cold path).
    @usableFromInline
    func _notFoundError<Key: ServiceKey>(_ key: Key.Type) -> ServiceGraphError {
        ServiceGraphError(core.notFound(Key.serviceName, valueType: Key.valueTypeID))
    }

    /// The error for `key` asked of a closed scope (out of line: the cold path).
    @usableFromInline
    func _closedError<Key: ServiceKey>(_ key: Key.Type) -> ServiceGraphError {
        ServiceGraphError(closedProblem(Key.serviceName))
    }

    /// Ends a resolve started by ``_enter(at:)``.
    @usableFromInline
    func _leave() {
        if resolves.pointee.leave() { resumeDrainWaiter() }
    }

    /// Counts the graph's report of this scope's opening as a resolve in flight, until ``_leave()``: a
    /// close, which waits for those, then reports the scope closed after it was reported open. Called
    /// on a scope just made, which nothing can close yet.
    func holdForOpeningReport() {
        let entry = resolves.pointee.enter()
        _internalInvariant(entry == .entered, "a scope just made is closing")
    }

    /// Resumes the close waiting for the resolves in flight, if it waits: the last one has left. Out of
    /// line: inlined into ``_enter(at:)``, its continuation (of a size known only at run time) made
    /// every resolve look up the continuation's type and size its stack frame.
    @inline(never)
    private func resumeDrainWaiter() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard let extras = state.extras else { return [] }
            defer { extras.drainWaiters = [] }
            return extras.drainWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until no resolve is in flight; only after `resolves.close()`, and by the one close.
    private nonisolated(nonsending) func resolvesDrained() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            // Checked under the lock that the last resolve takes to find the waiter, so that either it
            // finds the waiter or this finds the resolves gone.
            let isDrained = state.withLock { state in
                if resolves.pointee.isDrained { return true }
                state.extrasForWriting().drainWaiters.append(waiter)
                return false
            }
            if isDrained { waiter.resume() }
        }
    }

    /// The box of the instance at `slot` if it is a scoped service already created (a seed always is),
    /// not retained: for a resolve in flight, which keeps it alive (see ``_GraphCore/ScopeCells``).
    @usableFromInline
    func _publishedBox(at slot: Int) -> _GraphCore._PublishedBox? {
        let owner = core.scopeKindIndex(of: slot)
        guard owner != kind else { return instances.box(at: slot) }
        return outerBox(at: slot, ownedBy: owner)
    }

    /// The instance at `slot` if this scope holds it, created (a seed always is), not retained: for a
    /// dependency read in place by a factory this scope runs, whose resolve keeps it alive.
    @usableFromInline
    func _ownBox(at slot: Int) -> _GraphCore._PublishedBox? {
        instances.box(at: slot)
    }

    /// The scope that owns the scoped service or seed at `slot`: this one, or the enclosing scope of the
    /// service's kind (``ScopeKind``).
    ///
    /// - Throws: ``ServiceGraphError/Code/wrongScopeKind`` when neither this scope nor any it was opened
    ///   from is of that kind.
    func _owner(of slot: Int) throws(ServiceGraphError) -> _ScopeBody {
        let owner = core.scopeKindIndex(of: slot)
        var scope: _ScopeBody? = self
        while let candidate = scope {
            if candidate.kind == owner { return candidate }
            scope = candidate.parent
        }
        throw wrongKindError(slot)
    }

    @inline(never)
    private func wrongKindError(_ slot: Int) -> ServiceGraphError {
        let name = core.name(slot)
        let (wanted, own) = (core.scopeKind(of: slot), core.scopeKinds[Int(kind)])
        return ServiceGraphError(
            .init(
                .wrongScopeKind,
                key: name,
                site: core.site(slot),
                message: "\(name) belongs to \(wanted) scopes, and this \(own) scope is not one nor inside one; "
                    + "resolve it from a \(wanted) scope"
            )
        )
    }

    /// The box of the instance at `slot` if it is a scoped service already created and the scope is
    /// open, not retained: the caller is a resolve in flight, which keeps it alive.
    @usableFromInline
    func _createdBox(at slot: Int) -> _GraphCore._PublishedBox? {
        guard !resolves.pointee.isClosing else { return nil }
        return instances.box(at: slot)
    }

    /// The scope's instance at `slot`, created once, held as the graph holds it: for a `resolve` that
    /// must await, or a factory on the asynchronous path that depends on it.
    ///
    /// - Complexity: O(1) for an instance already created: an atomic load, no lock.
    @usableFromInline
    nonisolated(nonsending) func _instanceBox(at slot: Int) async throws -> _AnyBox {
        if let box = _createdBox(at: slot) { return box.box.takeUnretainedValue() }
        return try await madeBox(at: slot).box.takeUnretainedValue()
    }

    /// The box of the instance at `slot`, created by this call or by the one that was first to ask for
    /// it; or an error when the scope is closing.
    private nonisolated(nonsending) func madeBox(at slot: Int) async throws -> _GraphCore._PublishedBox {
        while true {
            if let box = try await madeBoxOnce(at: slot) { return box }
        }
    }

    /// One look at the instance at `slot`, as ``madeBox(at:)``: nil when a creation run by another
    /// resolve ended, with no instance, before this one could wait for it (it failed): look again.
    private nonisolated(nonsending) func madeBoxOnce(at slot: Int) async throws -> _GraphCore._PublishedBox? {
        let step = state.withLock { state -> LookupStep in
            if state.closing.hasStarted { return .closed }
            return lookUp(slot, in: &state)
        }
        switch step {
        case .ready:
            break
        case .create(let id):
            do {
                if let made = try madeInPlace(slot) {
                    if case .none = made.claim {
                        publish(made.box, at: slot, hooks: nil)
                    } else {
                        try await addMadeInPlace(
                            made.box,
                            at: slot,
                            claim: made.claim,
                            creation: id,
                            created: made.created
                        )
                    }
                } else {
                    try await create(slot, inline: true)
                }
            } catch {
                finishInlineCreation(id, at: slot, throwing: error)
                throw error
            }
            finishInlineCreation(id, at: slot, throwing: nil)
        case .wait(let creation):
            // Being made by this task (or the one that asked for it): waiting would never end.
            if _ResolutionTrail.isMaking(slot, of: self) { throw core.reentrantError(slot) }
            try await wait(for: creation, at: slot)
            if case .inline = creation, instances.box(at: slot) == nil, !resolves.pointee.isClosing { return nil }
        case .closed:
            throw ServiceGraphError(closedProblem(core.key(at: slot).serviceName))
        }
        // Made, then released by a close that came in between.
        guard let box = instances.box(at: slot) else {
            throw ServiceGraphError(closedProblem(core.key(at: slot).serviceName))
        }
        return box
    }

    /// What a resolve of the instance at `slot` does, under the scope's lock: read it, wait for the
    /// creation in flight, or start one. Its cell says which (see ``_GraphCore/ScopeCells``).
    private func lookUp(_ slot: Int, in state: inout State) -> LookupStep {
        while true {
            switch instances.making(slot) {
            case .created:
                return .ready
            case .waited:
                guard let creation = state.extras?.creating[slot] else {
                    preconditionFailure("\(core.name(slot)) is being made with no creation listed")
                }
                return .wait(creation)
            case .claimed:
                // A claim given up meanwhile: look again.
                if let creation = listClaimedCreation(at: slot, in: &state) { return .wait(creation) }
            case .empty:
                guard instances.markWaited(slot, from: .empty) else { continue }
                // A synchronous factory is run by the first resolve, in its own task: no task to start
                // and switch to (most of a request scope's cost). Nothing in it can be cut short by the
                // caller's cancellation but the `didAdd` hook, which runs in a task of its own
                // (``add(_:at:claim:inline:)``).
                if core.buffers.withFactory(at: slot, { $0.isSynchronous }) {
                    return .create(state.extrasForWriting().startInlineCreation(at: slot))
                }
                let task = UnretainingTask.start { try await self.create(slot) }
                state.extrasForWriting().creating.append(.task(task), at: slot)
                return .wait(.task(task))
            }
        }
    }

    /// Lists the creation of the instance at `slot` that a resolve is making in place, so that the caller
    /// can wait for it: that resolve then publishes it under the lock and resumes those waiting. Nil when
    /// the cell is no longer claimed (the creation ended meanwhile). Under the lock.
    private func listClaimedCreation(at slot: Int, in state: inout State) -> Creation? {
        guard instances.markWaited(slot, from: .claimed) else { return nil }
        return .inline(state.extrasForWriting().startInlineCreation(at: slot))
    }

    /// Creates the instance at `slot` and runs its `didAdd`; on failure, forgets the attempt so a later
    /// resolve can try again. Runs in its own entry of the ``_ResolutionTrail``, so that a factory or hook
    /// asking this scope for the instance again fails instead of waiting for itself.
    ///
    /// Inline (in the resolving task rather than one of its own), the `didAdd` hook runs in a task of
    /// its own, so that cancelling the resolve does not cancel the hook of an instance other resolves may
    /// be waiting for.
    private nonisolated(nonsending) func create(_ slot: Int, inline: Bool = false) async throws {
        try await _ResolutionTrail.current.withValue(_ResolutionTrail(making: slot, of: self)) {
            try await makeAndAdd(slot, inline: inline)
        }
    }

    /// What ``_makeInPlace(at:)`` did.
    @usableFromInline
    enum _InPlace {
        /// Made and published: the box, kept alive by the resolve in flight.
        case made(_AnyBox)
        /// Made, with hooks to run (or to wait for) before it is published: ``_add(_:)`` finishes it.
        case adding(_MadeInPlace)
        /// Not a scoped service, or not one this call can make now: the asynchronous path's.
        case elsewhere
    }

    /// A scoped instance made in place whose `didAdd` is still to run.
    @usableFromInline
    struct _MadeInPlace {
        let owner: _ScopeBody
        let slot: Int
        let box: _AnyBox
        let claim: ClaimedHooks
        /// The creation in the scope's list, when the asynchronous path started it; nil for a claim of
        /// the cell alone (``_GraphCore/ScopeCells/claim(_:)``).
        let creation: Creation.ID?
        /// The factory's duration, to report as `serviceCreated` once the `didAdd` has run; nil when no
        /// listener wants it.
        let created: Duration?
    }

    /// Makes the scoped instance at `slot` in place, without suspending, if it can be made so (see
    /// ``madeInPlace(_:)``) and no one is making it: the first resolve of a request-scoped service.
    @usableFromInline
    func _makeInPlace(at slot: Int) throws -> _InPlace {
        // The usual request-scoped service: made in place (known when the graph was built) and of this
        // scope's own kind, made here in one call (a server runs it once per request, with cold caches).
        guard core.makesInPlaceInScope(slot), core.scopeKindIndex(of: slot) == kind else {
            return try makeInPlaceInOwner(slot)
        }
        _internalInvariant(core.readsDependenciesInPlace(of: slot, in: self), "\(core.name(slot)) is not made in place")
        return try makeInPlaceIfFirst(slot)
    }

    /// ``_makeInPlace(at:)`` for a service of an outer kind of scope, made in the scope of that kind, or
    /// one whose dependencies are checked now (a dependency on a singleton made on first use, or on an
    /// outer scope's service, may be in place).
    @inline(never)
    private func makeInPlaceInOwner(_ slot: Int) throws -> _InPlace {
        guard core.makesInPlaceInScope(slot) else { return try makeInPlaceIfReadable(slot) }
        let owner = try _owner(of: slot)
        _internalInvariant(
            core.readsDependenciesInPlace(of: slot, in: owner),
            "\(core.name(slot)) is not made in place"
        )
        return try owner.makeInPlaceIfFirstOutOfLine(slot)
    }

    @inline(never)
    private func makeInPlaceIfReadable(_ slot: Int) throws -> _InPlace {
        guard core.lifetime(of: slot) == .scoped, core.buffers.withFactory(at: slot, { $0.isSynchronous }) else {
            return .elsewhere
        }
        let owner = try _owner(of: slot)
        guard core.readsDependenciesInPlace(of: slot, in: owner) else { return .elsewhere }
        return try owner.makeInPlaceIfFirstOutOfLine(slot)
    }

    /// ``makeInPlaceIfFirst(_:)`` for the uncommon cases' callers, which share one copy of it (it is
    /// inlined into ``_makeInPlace(at:)``, the usual case's).
    @inline(never)
    private func makeInPlaceIfFirstOutOfLine(_ slot: Int) throws -> _InPlace {
        try makeInPlaceIfFirst(slot)
    }

    /// Makes the instance at `slot`, whose dependencies are read in place in this scope, if no one has
    /// made it or is making it.
    ///
    /// The instance's cell is claimed with a compare-and-exchange, not under the scope's lock: a request
    /// scope's first resolve takes no lock. Those who come to wait for it meanwhile mark the cell, under
    /// the lock, and the instance is then published under it (see ``_GraphCore/ScopeCells``).
    @inline(__always)
    private func makeInPlaceIfFirst(_ slot: Int) throws -> _InPlace {
        // Closing, or created or being made meanwhile: the asynchronous path reports or waits.
        guard !creations.pointee.areRefused, instances.claim(slot) else { return .elsewhere }
        // Its dependencies were read in place a moment ago, and a scope's seeds and a graph's singletons
        // stay. A factory that throws gives the claim up (``forgetCreation(at:failing:)``).
        let made = try makeInPlace(slot)
        guard case .none = made.claim else {
            let adding = _MadeInPlace(
                owner: self,
                slot: slot,
                box: made.box,
                claim: made.claim,
                creation: nil,
                created: made.created
            )
            return .adding(adding)
        }
        noteCreatedInPlace(slot)
        if !instances.publishClaimed(made.box, at: slot) { publish(made.box, at: slot, hooks: nil, noted: true) }
        return .made(made.box)
    }

    /// Runs the `didAdd` of an instance made in place, publishes it, and returns its box.
    @usableFromInline
    nonisolated(nonsending) func _add(_ made: _MadeInPlace) async throws -> _AnyBox {
        try await made.owner.addMadeInPlace(
            made.box,
            at: made.slot,
            claim: made.claim,
            creation: made.creation,
            created: made.created
        )
        return made.box
    }

    /// Runs the `didAdd` of the instance made in place at `slot` (in the trail: the hook may ask for
    /// the instance, and is refused rather than waiting for itself), publishes it, and ends `creation`.
    private nonisolated(nonsending) func addMadeInPlace(
        _ box: _AnyBox,
        at slot: Int,
        claim: ClaimedHooks,
        creation: Creation.ID?,
        created: Duration?
    ) async throws {
        do {
            try await _ResolutionTrail.current.withValue(_ResolutionTrail(making: slot, of: self)) {
                try await add(box, at: slot, claim: claim, inline: true, created: created)
            }
        } catch {
            // A claim of the cell alone was given up by `add` (``forgetCreation(at:failing:)``).
            if let creation { finishInlineCreation(creation, at: slot, throwing: error) }
            throw error
        }
    }

    /// Makes the instance at `slot` in place, without suspending, when its factory is synchronous and
    /// each of its dependencies is read in place (a created singleton, a seed of the scope, a lazy or
    /// provider handle): the request-scoped service's usual case, made without the asynchronous
    /// calls and the trail entry that ``create(_:inline:)`` takes. Nil, having run nothing, otherwise.
    ///
    /// Nothing in it can ask the scope for the instance again and wait: the factory cannot await.
    private func madeInPlace(_ slot: Int) throws -> (box: _AnyBox, claim: ClaimedHooks, created: Duration?)? {
        guard core.readsDependenciesInPlace(of: slot, in: self) else { return nil }
        return try makeInPlace(slot)
    }

    /// Makes the instance at `slot` in place, as ``madeInPlace(_:)``, whose dependencies the caller found
    /// read in place. `created` is the factory's duration when a listener wants `serviceCreated` and the
    /// instance has a `didAdd` to run first (without one, it is reported here).
    @inline(__always)
    private func makeInPlace(_ slot: Int) throws -> (box: _AnyBox, claim: ClaimedHooks, created: Duration?) {
        do {
            return try core.buffers.withFactory(at: slot) { factory in
                var resolver = _GraphCore._UnsafeResolver(core: core, scope: self, slot: slot)
                guard core.reportsScopeEvent(.serviceCreated) else {
                    let box = try factory.makeBoxSynchronously(&resolver)
                    let answer = instances.hookAnswer(at: slot)
                    return (box, factory.claimHooks(of: box, for: slot, in: core.hookClaims, rememberedIn: answer), nil)
                }
                return try makeReportingCreation(of: slot, with: factory, &resolver)
            }
        } catch {
            throw forgetCreation(at: slot, failing: core.failure(error, at: slot))
        }
    }

    /// Runs the synchronous `factory` of `slot` as ``makeInPlace(_:)`` does, and tells the event
    /// listener how long it took: out of line, so that the usual call has no clock in its code.
    private func makeReportingCreation(
        of slot: Int,
        with factory: _AnyFactory,
        _ resolver: inout _GraphCore._UnsafeResolver
    ) throws -> (box: _AnyBox, claim: ClaimedHooks, created: Duration?) {
        let start = ContinuousClock.now
        let box = try factory.makeBoxSynchronously(&resolver)
        let duration = start.duration(to: .now)
        let answer = instances.hookAnswer(at: slot)
        let claim = factory.claimHooks(of: box, for: slot, in: core.hookClaims, rememberedIn: answer)
        // In place once made when there is no `didAdd` to run; otherwise once it has run (``add``).
        guard case .none = claim else { return (box, claim, duration) }
        core.events.send(ServiceGraphEvent(.serviceCreated, key: core.name(slot), duration: duration))
        return (box, claim, nil)
    }

    private nonisolated(nonsending) func makeAndAdd(_ slot: Int, inline: Bool) async throws {
        let factory = core.serviceFactory(at: slot)
        let box: _AnyBox
        let start = core.events.isEnabled(.serviceCreated) ? ContinuousClock.now : nil
        let created: Duration?
        do {
            if let limit = core.factoryTimeout, !factory.isSynchronous {
                box = try await core.makeBox(at: slot, in: self, within: limit)
            } else {
                box = try await core.makeBox(at: slot, in: self)
            }
            created = start.map { $0.duration(to: .now) }
        } catch let timeout as FactoryTimedOut {
            throw forgetCreation(
                at: slot,
                failing: ServiceGraphError(Lifecycle.factoryTimedOut(slot, after: timeout.limit, in: core))
            )
        } catch {
            throw forgetCreation(at: slot, failing: core.failure(error, at: slot))
        }
        try await add(
            box,
            at: slot,
            claim: factory.claimHooks(
                of: box,
                for: slot,
                in: core.hookClaims,
                rememberedIn: instances.hookAnswer(at: slot)
            ),
            inline: inline,
            created: created
        )
    }

    /// Runs the `didAdd` of the instance just made at `slot`, if it has hooks this scope claimed (after
    /// the creation of the service that holds them, if another one does), reports it created (its
    /// factory took `created`; nil: not reported), then publishes it; on failure, gives the claim back
    /// and forgets the attempt.
    private nonisolated(nonsending) func add(
        _ box: _AnyBox,
        at slot: Int,
        claim: ClaimedHooks,
        inline: Bool,
        created: Duration?
    ) async throws {
        if case .held(let holder) = claim { await waitForCreation(of: holder, heldFor: slot) }
        let hooks = claim.hooks
        if let hooks {
            do {
                if inline {
                    let core = self.core
                    try await UnretainingTask.start { try await Lifecycle.didAdd(hooks, of: slot, in: core) }.value
                } else {
                    try await Lifecycle.didAdd(hooks, of: slot, in: core)
                }
            } catch {
                core.hookClaims.giveBack(hooks)
                throw forgetCreation(at: slot, failing: error)
            }
        }
        // Before publishing: once published, a close may release it and report its `willRemove`.
        if let created { core.events.send(ServiceGraphEvent(.serviceCreated, key: core.name(slot), duration: created)) }
        publish(box, at: slot, hooks: hooks)
    }

    /// Publishes the instance made at `slot`, its `didAdd` run: resolves read it from now on.
    /// Under the lock, or with `noted` when the caller recorded the creation already (one with no hooks).
    private func publish(_ box: _AnyBox, at slot: Int, hooks: InstanceHooks?, noted: Bool = false) {
        let waiters = state.withLock { state in
            instances.publishMade(box, at: slot)
            if !noted { noteCreated(slot, hooks: hooks, in: &state) }
            return state.extras?.creating.remove(slot) ?? CreationList.Waiters()
        }
        waiters.resume(throwing: nil)
    }

    /// Forgets the failed creation at `slot`, so that a later resolve tries again, and fails those
    /// waiting for it with `error`, which it returns. A creation in place no one waits for gives its
    /// claim up without the lock.
    private func forgetCreation(at slot: Int, failing error: any Error) -> any Error {
        if instances.unclaim(slot) { return error }
        state.withLock { state in
            instances.unmark(slot)
            return state.extras?.creating.remove(slot) ?? CreationList.Waiters()
        }.resume(throwing: error)
        return error
    }

    /// Ends the creation `id` of the instance at `slot` run by a resolve, if it has not ended (by
    /// ``publish(_:at:hooks:noted:)`` or ``forgetCreation(at:failing:)``), and resumes those waiting.
    private func finishInlineCreation(_ id: Creation.ID, at slot: Int, throwing error: (any Error)?) {
        state.withLock { state -> CreationList.Waiters in
            guard let waiters = state.extras?.creating.finish(id, at: slot) else { return CreationList.Waiters() }
            // Ended with no instance: the next resolve makes one.
            instances.unmark(slot)
            return waiters
        }.resume(throwing: error)
    }

    /// Waits until `creation`, of the instance at `slot`, has ended (not cancellable, as `Task.value` is
    /// not).
    ///
    /// - Throws: The creation's error.
    private nonisolated(nonsending) func wait(for creation: Creation, at slot: Int) async throws {
        switch creation {
        case .task(let task):
            try await task.value
        case .inline(let id):
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                // Ended meanwhile: the caller reads what it left (the instance, or none).
                if !state.withLock({ $0.extras?.creating.addWaiter(waiter, to: id, at: slot) ?? false }) {
                    waiter.resume()
                }
            }
        }
    }

    /// Waits until this scope's creation of the service at `holder`, whose hooks the instance made for
    /// `slot` has too, has ended: the instance has started, and `slot`, published after, is released
    /// before it, as is what depends on `slot`. No wait when the holder's own creation asked for `slot`
    /// (it would be waiting for itself), or when another scope or the graph holds the instance.
    private nonisolated(nonsending) func waitForCreation(of holder: Int, heldFor slot: Int) async {
        guard holder != slot, !_ResolutionTrail.isMaking(holder, of: self) else { return }
        let creation = state.withLock { state -> Creation? in
            if let creation = state.extras?.creating[holder] { return creation }
            // Being made in place by a resolve no one waits for: wait for it in the list.
            guard instances.making(holder) == .claimed else { return nil }
            return listClaimedCreation(at: holder, in: &state)
        }
        guard let creation else { return }
        _ = try? await wait(for: creation, at: holder)
    }

    /// See ``ServiceScope/close()``, which has tried ``_closeIfIdle()`` before it calls this.
    @usableFromInline
    nonisolated(nonsending) func close() async throws(ServiceGraphError) {
        // Asked by a factory or `didAdd` that is making one of this scope's instances, or a transient
        // resolved in it: the close would wait for that, which waits for the close. Refused, the scope
        // left as it is.
        if let slot = _ResolutionTrail.slotMaking(in: self) { throw reentrantCloseError(making: slot) }
        switch await closeOnce(waitingForAnother: false) {
        case .closed(let problems): if !problems.isEmpty { throw ServiceGraphError(problems) }
        case .closedBefore: throw secondCloseError("closed")
        case .closing: throw secondCloseError("closing")
        }
    }

    /// The error for a close of a scope that is already `closed` or `closing` (out of line: the cold path).
    @inline(never)
    private func secondCloseError(_ state: String) -> ServiceGraphError {
        ServiceGraphError(
            .init(.scopeClosed, key: "close()", message: "close() was called on a scope that is already \(state)")
        )
    }

    /// The error for a close asked while the current task makes the instance at `slot` of this scope
    /// (out of line: the cold path).
    @inline(never)
    private func reentrantCloseError(making slot: Int) -> ServiceGraphError {
        let name = core.name(slot)
        return ServiceGraphError(
            .init(
                .reentrantResolution,
                key: name,
                site: core.site(slot),
                message: "the scope was asked to close while it was making \(name): its factory or didAdd hook, "
                    + "or one they call, closes the scope it is made in (the close would wait for it forever); "
                    + "close the scope once the resolve has returned"
            )
        )
    }

    /// Closes the scope on behalf of the graph's shutdown: a scope being closed by someone else is
    /// waited for; its problems are reported by the one who closed it.
    nonisolated(nonsending) func closeForShutdown() async -> [ServiceGraphError.Problem] {
        guard case .closed(let problems) = await closeOnce(waitingForAnother: true) else { return [] }
        return problems
    }

    /// Closes the scope at once when nothing is in flight, no scope was opened from it and it owes no
    /// hook: a request scope's usual close, in one synchronous call whose code is a fraction of
    /// ``closeOnce(waitingForAnother:)``'s (a server runs it with cold caches, once per request). False,
    /// having changed nothing, otherwise. Called by the inlined ``ServiceScope/close()`` before it awaits
    /// anything, so that such a close allocates no asynchronous frame.
    @usableFromInline
    func _closeIfIdle() -> Bool {
        // Nothing but the state's first fields in use (no extras: no hook owed, no caller's seed claimed,
        // no scope opened from this one), the request scope's case, in the least code: the rest apart. A
        // scope closing, or with a resolve in flight, is left to `close()` at once.
        var hasExtras = false
        let taken = state.withLock { state -> (count: Int, graph: ServiceGraph?)? in
            guard state.extras == nil else {
                hasExtras = true
                return nil
            }
            guard !state.closing.hasStarted, resolves.pointee.closeIfIdle() else { return nil }
            // Started and finished in this one turn of the lock: no one can be waiting for it yet, and
            // with no hook to run there is nothing to wait for. The graph's shutdown waits for what the
            // scope releases below through its count of unfinished scopes (``tell(_:finished:at:)``), not
            // through this close.
            state.closing.finishAtOnce()
            creations.pointee.refuse()
            return (creations.pointee.take(), state.graph.take())
        }
        guard case let (count, graph)? = consume taken else { return hasExtras && closeIfIdleWithExtras() }
        release(count)
        Self.tell(consume graph, finished: id, at: place)
        parent?.childFinished(id)
        return true
    }

    /// ``_closeIfIdle()`` for a scope whose state has its extras: it closes at once when they hold nothing
    /// to run or wait for (the claims on the caller's seeds are given back).
    @inline(never)
    private func closeIfIdleWithExtras() -> Bool {
        let taken = state.withLock {
            state -> (count: Int, callerSeedClaims: [InstanceHooks], graph: ServiceGraph?)? in
            // Nothing owed, in flight or opened from this scope.
            guard
                !state.closing.hasStarted,
                state.extras.map({ $0.owedHooks.isEmpty && $0.waitsForNothing }) ?? true,
                resolves.pointee.closeIfIdle()
            else { return nil }
            // As in ``_closeIfIdle()``.
            _ = state.closing.start()
            _ = state.closing.finish(with: [])
            creations.pointee.refuse()
            return (takeCreated(&state).count, state.takeCallerSeedClaims(), state.graph.take())
        }
        guard case let (count, callerSeedClaims, graph)? = consume taken else { return false }
        release(count, givingBack: callerSeedClaims)
        // Consumed: the graph is let go before the shutdown this may end is resumed.
        Self.tell(consume graph, finished: id, at: place)
        parent?.childFinished(id)
        return true
    }

    /// What ``closeOnce(waitingForAnother:)`` did.
    private enum CloseOutcome {
        /// Closed the scope, with these problems.
        case closed([ServiceGraphError.Problem])
        /// Another close had finished, or was running and has been waited for.
        case closedBefore
        /// Another close is running, not waited for.
        case closing
    }

    /// Closes and releases, once. When another close came first and is still running, it is waited for
    /// only if `waitingForAnother`.
    private nonisolated(nonsending) func closeOnce(waitingForAnother: Bool) async -> CloseOutcome {
        enum Role {
            /// Close: the creations to wait for, the scopes opened from this one, and whether any of
            /// those has not finished.
            case close([(slot: Int, creation: Creation)], [WeakReference<ServiceScope>], hasUnfinishedChildren: Bool)
            /// Close, with nothing to wait for: the created instances and the caller's seeds' claims,
            /// taken already (the case of a request scope, in one turn of the lock).
            case closeNow((count: Int, owed: [StartedService]), callerSeedClaims: [InstanceHooks])
            case wait
            case done(CloseOutcome)
        }
        let role = state.withLock { state -> Role in
            switch state.closing.start() {
            case .run:
                creations.pointee.refuse()
                if state.extras?.waitsForNothing ?? true {
                    resolves.pointee.close()
                    if resolves.pointee.isDrained {
                        return .closeNow(takeCreated(&state), callerSeedClaims: state.takeCallerSeedClaims())
                    }
                }
                guard let extras = state.extras else { return .close([], [], hasUnfinishedChildren: false) }
                // Weak references only: a scope loaded here and released under the lock could end,
                // and its end takes this lock.
                let children = extras.children.isEmpty ? [] : extras.children.sorted { $0.key > $1.key }.map(\.value)
                let creating = extras.creating.all
                return .close(creating, children, hasUnfinishedChildren: extras.unfinishedChildren > 0)
            case .running: return waitingForAnother ? .wait : .done(.closing)
            case .finished: return .done(.closedBefore)
            }
        }
        var created: (count: Int, owed: [StartedService])
        let callerSeedClaims: [InstanceHooks]
        var childProblems: [ServiceGraphError.Problem] = []
        // Consumed: the role holds the list of hooks owed, whose references must be gone before the
        // instances are released (see below).
        switch consume role {
        case .done(let outcome):
            return outcome
        case .wait:
            _ = await Teardown.outcome { waiter in state.withLock { $0.closing.outcome(orWait: waiter) } }
            return .closedBefore
        case .closeNow(let taken, let claims):
            (created, callerSeedClaims) = (taken, claims)
        case .close(let pending, let children, let hasUnfinishedChildren):
            // The scopes opened from this one first, newest first: they read this one's instances, which
            // stay readable until they are closed (only new creations are refused meanwhile).
            for child in children {
                if let child = child.object { childProblems += await child._body.closeForShutdown() }
            }
            // Once closing, no child is added: none unfinished then, none to wait for.
            if hasUnfinishedChildren { await waitForChildren() }
            resolves.pointee.close()
            if !resolves.pointee.isDrained { await resolvesDrained() }
            for (slot, creation) in pending {
                _ = try? await wait(for: creation, at: slot)
            }
            (created, callerSeedClaims) = state.withLock { state in
                (takeCreated(&state), state.takeCallerSeedClaims())
            }
        }
        var owed = created.owed
        created.owed = []
        let problems = owed.isEmpty ? childProblems : childProblems + (await Lifecycle.release(owed, of: core))
        // The list of hooks owed holds a reference to each instance: let go before the cells' references
        // are, newest first, so that the instances are released in that order (a list let go after them
        // releases them oldest first).
        owed = []
        finishClosing(releasing: created.count, givingBack: callerSeedClaims, problems: problems)
        return .closed(problems)
    }

    /// Gives back the caller's seeds' claims and releases the `count` instances created, newest first:
    /// a close's, its hooks run.
    private func release(_ count: Int, givingBack callerSeedClaims: [InstanceHooks]) {
        for hooks in callerSeedClaims { core.hookClaims.giveBack(hooks) }
        release(count)
    }

    /// Releases the `count` instances created, newest first: a close's, its hooks run.
    private func release(_ count: Int) {
        if core.reportsScopeEvent(.scopeClosed) {
            core.events.send(ServiceGraphEvent(.scopeClosed))
        }
        // The scope's references dropped most recent first, as the hooks ran (no resolve reads
        // the table any more: new ones are refused, and those in flight have returned).
        for position in (0..<count).reversed() { _ = instances.take(instances.slot(createdAt: position)) }
    }

    /// The end of a close, its hooks run: gives back the caller's seeds' claims, releases the `count`
    /// instances created, and tells those waiting for the close, the graph and the parent scope.
    private func finishClosing(
        releasing count: Int,
        givingBack callerSeedClaims: [InstanceHooks],
        problems: [ServiceGraphError.Problem]
    ) {
        release(count, givingBack: callerSeedClaims)
        let (waiters, graph) = state.withLock { ($0.closing.finish(with: problems), $0.graph.take()) }
        Self.tell(consume graph, finished: id, at: place)
        parent?.childFinished(id)
        waiters.resume(returning: problems)
    }

    /// Opens a scope of `kind` inside this one given its seeds, whose handle is `handle`; see
    /// ``ServiceScope/makeScope(_:seeding:)-(ScopeKind,ScopeSeed...)``.
    func makeScope(
        _ kind: ScopeKind,
        seeding seeds: [ScopeSeed],
        from handle: ServiceScope
    ) throws(ServiceGraphError) -> ServiceScope {
        try makeScope(kind, from: handle) { graph, index throws(ServiceGraphError) in
            try graph.openScope(kind: index, parent: handle, seeds: seeds)
        }
    }

    /// Opens a scope of `kind` inside this one given its one seed, whose handle is `handle`; see
    /// ``ServiceScope/makeScope(_:seeding:)-(ScopeKind,ScopeSeed)``.
    func makeScope(
        _ kind: ScopeKind,
        seeding seed: ScopeSeed,
        from handle: ServiceScope
    ) throws(ServiceGraphError) -> ServiceScope {
        try makeScope(kind, from: handle) { graph, index throws(ServiceGraphError) in
            try graph.openScope(kind: index, parent: handle, seed: seed)
        }
    }

    /// Opens a scope of `kind` inside this one with `open`, given the graph and the kind's index, and
    /// records it to be closed before this one.
    private func makeScope(
        _ kind: ScopeKind,
        from handle: ServiceScope,
        opening open: (ServiceGraph, UInt16) throws(ServiceGraphError) -> ServiceScope
    ) throws(ServiceGraphError) -> ServiceScope {
        let index = try core.scopeKindIndex(opening: kind, inside: self.kind)
        // Reserved under this scope's lock, so that a close that starts from now on waits for the child;
        // opened outside it (opening runs the keys' and the event handler's code).
        let graph = try state.withLock { state throws(ServiceGraphError) in
            // The graph is held until the scope finishes, which is after its close started.
            guard !state.closing.hasStarted, let graph = state.graph else {
                throw ServiceGraphError(closedProblem("a new scope"))
            }
            state.extrasForWriting().unfinishedChildren += 1
            return graph
        }
        let child: ServiceScope
        do {
            child = try open(graph, index)
        } catch {
            childFinished(nil)
            throw error
        }
        let isClosing = state.withLock { state in
            if state.closing.hasStarted { return true }
            // Recorded, to be closed before this scope, unless its close has begun: only the graph's
            // shutdown can have begun it (no one else has the scope yet), while its opening was reported
            // or since, and that close may have ended and told this scope so already, which would leave an
            // entry made now for good. Its end is waited for through the count. The child's gate is read
            // (an atomic) rather than its lock taken under this one: it closes before any close ends.
            let extras = state.extrasForWriting()
            if !child._body.resolves.pointee.isClosing {
                extras.children[child._body.id] = WeakReference(child)
            }
            _internalInvariant(extras.children.count <= extras.unfinishedChildren, "a finished child is recorded")
            return false
        }
        // A close began meanwhile and did not see the child: it is dropped unused, and its end is waited for.
        // Its seeds stay the caller's, their hooks unrun, unless the graph's shutdown began closing it: then
        // it is returned closed, as below.
        if isClosing {
            guard child._body.disownSeeds() else { return child }
            throw ServiceGraphError(closedProblem("a new scope"))
        }
        // A child the shutdown closed (see above) is returned closed, as the graph returns a scope its
        // shutdown closed while its opening was reported: its seeds were the scope's, and are released.
        return child
    }

    /// Gives the seeds this scope owns back to the caller unless its close has begun: their hooks are
    /// given back unrun when the scope ends, as a caller's seeds' are. For a scope no one was given
    /// (``makeScope(_:seeding:from:)`` refused it), which made nothing but its seeds. False when a close
    /// (the graph's shutdown's) had begun: it runs them.
    private func disownSeeds() -> Bool {
        state.withLock { state in
            guard !state.closing.hasStarted else { return false }
            // No extras: no hook owed, nothing to give.
            if let extras = state.extras {
                extras.callerSeedClaims += extras.owedHooks.map(\.hooks)
                extras.owedHooks = []
            }
            return true
        }
    }

    /// The scope's kind.
    var scopeKind: ScopeKind { core.scopeKinds[Int(kind)] }

    /// The error for `slot`, which this scope cannot resolve without suspending: a scoped service of a
    /// kind this scope is not within (no `await` would help), or one to await (out of line: cold path).
    @usableFromInline
    func _cannotResolveSynchronouslyError(_ slot: Int) -> ServiceGraphError {
        if core.lifetime(of: slot) == .scoped {
            do { _ = try _owner(of: slot) } catch { return error }
        }
        // A chain that needs a kind of scope this one is not within fails the same way when awaited:
        // say so, rather than suggest an await that cannot help.
        if core.slotScopeKinds != nil, let error = unreachableKind(from: slot) { return error }
        return core.cannotResolveSynchronouslyInScopeError(slot)
    }

    /// The ``ServiceGraphError/Code/wrongScopeKind`` error of the nearest scoped service or seed that
    /// resolving `slot` would need and this scope cannot reach (its kind is neither this scope's nor an
    /// enclosing one's), with the path to it; nil when there is none. Breadth first through the
    /// transients the resolve would make (a singleton is made already; a scoped service's own
    /// dependencies are validated with its kind). Cold: only for an error.
    private func unreachableKind(from slot: Int) -> ServiceGraphError? {
        func isUnreachable(_ service: Int) -> Bool {
            guard core.lifetime(of: service) == .scoped else { return false }
            do {
                _ = try _owner(of: service)
                return false
            } catch {
                return true
            }
        }
        guard
            let path = core.shortestPath(
                from: slot,
                to: isUnreachable,
                through: { core.lifetime(of: $0) == .transient }
            ),
            let unreachable = path.last
        else { return nil }
        do {
            _ = try _owner(of: unreachable)
            return nil
        } catch {
            let problem = error.problems[0]
            return ServiceGraphError(
                .init(
                    problem.code,
                    key: problem.key,
                    path: path.map(core.name),
                    site: problem.site,
                    message: problem.message
                )
            )
        }
    }

    /// Tells `graph` that the scope `id` at `place` finished (closed, or dropped and done releasing), and
    /// lets the graph go before resuming the shutdown this may end: that shutdown cannot then return
    /// while this scope still keeps the graph alive.
    @inline(__always)
    private static func tell(_ graph: consuming ServiceGraph?, finished id: Int, at place: Int) {
        var body: _ScopeBody?
        let waiters = graph?.scopeFinished(id, at: place, removing: &body)
        graph = nil
        // After the graph: the body's end may end the scope it was opened from, and that the shutdown.
        body = nil
        waiters?.resume()
    }

    /// A scope opened from this one has finished: closed, or dropped and done releasing (`id`, or nil
    /// for one that failed to open).
    func childFinished(_ id: Int?) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            // Made when the child was counted (``makeScope(_:seeding:from:)``).
            let extras = state.extrasForWriting()
            if let id { extras.children[id] = nil }
            extras.unfinishedChildren -= 1
            _internalInvariant(extras.children.count <= extras.unfinishedChildren, "a finished child is recorded")
            guard extras.unfinishedChildren == 0 else { return [] }
            defer { extras.childWaiters = [] }
            return extras.childWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until every scope opened from this one has finished (a dropped one releases in the
    /// background).
    private nonisolated(nonsending) func waitForChildren() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if (state.extras?.unfinishedChildren ?? 0) == 0 { return true }
                state.extrasForWriting().childWaiters.append(waiter)
                return false
            }
            if done { waiter.resume() }
        }
    }

    /// Whether ``close()`` has been called (or the graph has shut down, or the scope is closing).
    var isClosed: Bool { state.withLock { $0.closing.hasStarted } }

    /// How many scopes opened from this one it records (to close them before itself), and how many
    /// have not finished: each one recorded has not. For the tests.
    var childCounts: (recorded: Int, unfinished: Int) {
        state.withLock { ($0.extras?.children.count ?? 0, $0.extras?.unfinishedChildren ?? 0) }
    }

    private func closedProblem(_ name: String) -> ServiceGraphError.Problem {
        .init(.scopeClosed, key: name, message: "\(name) was asked of a scope that is already closed")
    }
}

/// What a scope released without ``ServiceScope/close()`` still holds: the instances, until the hooks
/// it owed have run.
private final class DroppedScope: Sendable {
    private let owed: Locked<[StartedService]>
    /// In creation order.
    private let boxes: Locked<[_AnyBox]>

    init(owed: [StartedService], boxes: [_AnyBox]) {
        self.owed = Locked(owed)
        self.boxes = Locked(boxes)
    }

    var owesHooks: Bool { owed.withLock { !$0.isEmpty } }

    /// The services whose hooks are owed, in the order the hooks run (most recent first).
    func owedNames(in core: _GraphCore) -> String {
        owed.withLock { $0.reversed().map { core.name($0.slot) }.joined(separator: ", ") }
    }

    func takeOwed() -> [StartedService] {
        owed.withLock { owed in
            defer { owed = [] }
            return owed
        }
    }

    /// Releases the instances, most recent first.
    func releaseInstances() {
        var boxes = self.boxes.withLock { boxes in
            defer { boxes = [] }
            return boxes
        }
        while !boxes.isEmpty { boxes.removeLast() }
    }
}

/// A scoped instance being created, for the resolves that ask for it meanwhile and for the scope's
/// close to wait on.
enum Creation: Sendable {
    /// A creation run by a resolve, told apart from a later one of the same slot.
    typealias ID = UInt64

    /// Created in a task of its own: an asynchronous factory, which the first resolve's cancellation
    /// must not cut short for the others.
    case task(Task<Void, any Error>)
    /// Created by the first resolve, in its own task: a synchronous factory. Those waiting for it wait
    /// in the scope's ``CreationList``, under its lock: no allocation of its own.
    case inline(ID)
}

/// A scope's creations in flight, by slot, with those waiting for the ones resolves run: a short list
/// searched in place (a scope makes a few instances at a time, and a table would hash on every
/// creation). The first creation in flight is held in the list itself, so that a request scope making
/// one instance at a time allocates nothing for it.
struct CreationList {
    private struct Entry {
        let slot: Int
        let creation: Creation
        var waiters = Waiters()

        /// Whether this is the creation `id`, run by a resolve.
        func isInline(_ id: Creation.ID) -> Bool {
            guard case .inline(let found) = creation else { return false }
            return found == id
        }
    }

    /// Those waiting for a creation run by a resolve, to resume once out of the scope's lock.
    struct Waiters {
        fileprivate var continuations: [CheckedContinuation<Void, any Error>] = []

        /// Resumes them; the test for none is inlined, as there usually are none.
        @inline(__always)
        func resume(throwing error: (any Error)?) {
            if !continuations.isEmpty { resumeEach(throwing: error) }
        }

        @inline(never)
        private func resumeEach(throwing error: (any Error)?) {
            for waiter in continuations {
                if let error { waiter.resume(throwing: error) } else { waiter.resume() }
            }
        }
    }

    /// The creation in flight when there is one; the oldest of them otherwise, or nil.
    private var first: Entry?
    /// The other creations in flight.
    private var others: [Entry] = []

    subscript(slot: Int) -> Creation? {
        if let first, first.slot == slot { return first.creation }
        return others.first { $0.slot == slot }?.creation
    }

    var isEmpty: Bool { first == nil }

    /// Every creation in flight.
    var all: [(slot: Int, creation: Creation)] {
        guard let first else { return [] }
        return [(first.slot, first.creation)] + others.map { ($0.slot, $0.creation) }
    }

    /// Adds the creation of the instance at `slot`, which has none in flight.
    mutating func append(_ creation: Creation, at slot: Int) {
        let entry = Entry(slot: slot, creation: creation)
        if first == nil { first = entry } else { others.append(entry) }
    }

    /// Removes the creation at `slot`, if there is one, with those waiting for it.
    mutating func remove(_ slot: Int) -> Waiters {
        remove { $0.slot == slot } ?? Waiters()
    }

    /// Removes the creation `id` at `slot` if it is still in flight (not a later one), with those
    /// waiting for it; nil when it has ended.
    mutating func finish(_ id: Creation.ID, at slot: Int) -> Waiters? {
        remove { $0.slot == slot && $0.isInline(id) }
    }

    /// Adds `waiter` to those waiting for the creation `id` at `slot`; false when it has ended.
    mutating func addWaiter(_ waiter: CheckedContinuation<Void, any Error>, to id: Creation.ID, at slot: Int) -> Bool {
        if first?.slot == slot {
            guard first?.isInline(id) == true else { return false }
            first?.waiters.continuations.append(waiter)
            return true
        }
        guard let index = others.firstIndex(where: { $0.slot == slot }), others[index].isInline(id) else {
            return false
        }
        others[index].waiters.continuations.append(waiter)
        return true
    }

    /// Removes the first entry `matches` accepts, with those waiting for it; the next one in line takes
    /// the first place when it was there.
    private mutating func remove(where matches: (Entry) -> Bool) -> Waiters? {
        if let entry = first, matches(entry) {
            first = others.isEmpty ? nil : others.removeFirst()
            return entry.waiters
        }
        guard let index = others.firstIndex(where: matches) else { return nil }
        return others.remove(at: index).waiters
    }
}
