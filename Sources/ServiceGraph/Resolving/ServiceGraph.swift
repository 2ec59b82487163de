/// A built, validated service graph: its singletons created in dependency order, ready to read.
///
/// Make one with a ``Builder``. A graph is immutable and `Sendable`: reading a singleton with the
/// subscript takes no lock, and resolving transient services is safe from many tasks at once.
///
/// ```swift
/// let graph = try await builder.build()
/// let database = graph[DatabaseKey.self]                  // a singleton, synchronously
/// let signup = try await graph.resolve(SignupKey.self)    // any lifetime
/// try await graph.shutdown()                              // willRemove hooks, in reverse order
/// ```
///
/// After ``shutdown()``, `resolve` throws; the subscript still returns the (released) singletons,
/// which the graph keeps until it is itself deallocated, then drops in reverse creation order.
public final class ServiceGraph: Sendable {
    @usableFromInline
    let _core: _GraphCore
    /// The graph's core, for the library's code that is not inlined into clients.
    var core: _GraphCore { _core }
    /// What the build noted: creation order, timings, the services whose hooks it started.
    let log: BuildLog
    /// The graph this one is a child of: kept alive as long as the child lives.
    let parent: ServiceGraph?
    /// This graph's number among its parent's children.
    let childID: Int
    /// See ``Builder/requiresShutdown``.
    let requiresShutdown: Bool
    private let state = Locked(State())

    /// What a graph tracks so that its shutdown comes after everything that uses its singletons.
    private struct State {
        /// The graph's one shutdown; later and concurrent calls wait for the first.
        var shutdown = Teardown<[ServiceGraphError.Problem]>()
        /// Where a scope keeps each scoped instance; made on the first scope.
        var scopeLayout: _GraphCore.ScopeLayout?
        /// Open scopes, as their bodies (the caller's handle is what keeps a scope alive).
        let scopes = OpenScopes()
        /// Live child graphs, weakly (a child keeps its parent alive, not the reverse).
        var children: [Int: WeakReference<ServiceGraph>] = [:]
        var nextID = 0
        /// Scopes not yet closed (including dropped ones still releasing) and children not yet shut
        /// down (including ones being built); the shutdown waits for them all.
        var unfinished = 0
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
        /// For a generation a ``LiveGraph`` has replaced: the singletons the next generation took over,
        /// by slot, which this one's shutdown leaves to it.
        var handedOver: [Bool]?
    }

    init(core: _GraphCore, log: BuildLog, parent: ServiceGraph?, childID: Int, requiresShutdown: Bool) {
        self._core = core
        self.log = log
        self.parent = parent
        self.childID = childID
        self.requiresShutdown = requiresShutdown
    }

    deinit {
        let wasShutDown = state.withLock { $0.shutdown.hasStarted }
        if !wasShutDown {
            // Reported first, so that the parent's shutdown, which waits for this graph, comes after the
            // report. The parent is told before this graph's core is let go (after this body; scopes and
            // handles may hold it for longer anyway). No hook of this graph is owed any more, but one may
            // still be running: the `didAdd` of a singleton made on first use whose creation began before
            // the drop (through a `Lazy` or `Provider` handle), which the parent's shutdown does not wait for.
            reportDroppedWithoutShutdown()
            parent?.childFinished(childID)
        }
    }

    /// Says that the graph is released while services still owe their `willRemove`.
    private func reportDroppedWithoutShutdown() {
        let started = log.started + (_core.deferredSingletons?.startedSoFar ?? [])
        guard !started.isEmpty else { return }
        let names = started.map { _core.name($0.slot) }.joined(separator: ", ")
        _core.events.send(ServiceGraphEvent(.droppedWithoutShutdown, key: names))
        if requiresShutdown {
            assertionFailure(
                """
                ServiceGraph: a graph was released without `try await graph.shutdown()`; willRemove never \
                ran for: \(names). Shut the graph down before releasing it (or set \
                `builder.requiresShutdown = false` where dropping it is deliberate).
                """
            )
        }
    }

    /// The singleton for `key`.
    ///
    /// Like an out-of-range `Array` index, asking for a key that is not in the graph, or for one that is
    /// not a singleton, is a programming error and traps, with the same message `resolve`
    /// would throw. Use `resolve` when the key may be absent.
    ///
    /// - Complexity: O(1): a table lookup and an array read, no lock.
    @inlinable
    public subscript<Key: ServiceKey>(key: Key.Type) -> Key.Value {
        @inline(__always) get { _core.singletonOrTrap(key) }
    }

    /// Resolves `key` without suspending: a singleton, or a transient service whose factory chain is
    /// synchronous.
    ///
    /// A chain may be of any depth: past 64 levels the graph makes the rest of it iteratively rather
    /// than recursively, so the depth is bounded by memory, not by the thread's stack (100,000 levels
    /// take a few megabytes).
    ///
    /// A factory may resolve other services through a graph it captured, but not the service it is
    /// making, directly or through other services: the graph refuses that resolve with
    /// ``ServiceGraphError/Code/reentrantResolution`` rather than recursing without end.
    ///
    /// - Throws: ``ServiceGraphError`` with ``ServiceGraphError/Code/keyNotFound`` (naming the closest
    ///   keys), ``ServiceGraphError/Code/requiresAwait`` for asynchronous chains,
    ///   ``ServiceGraphError/Code/wrongLifetime`` for scoped ones,
    ///   ``ServiceGraphError/Code/factoryFailed`` with the path to the failing factory,
    ///   ``ServiceGraphError/Code/reentrantResolution`` with the path back to the service, or
    ///   ``ServiceGraphError/Code/graphShutDown``.
    /// - Complexity: O(1) for a singleton; one factory call per transient in the chain, and one box
    ///   per transient deeper than 64 levels.
    @inlinable
    @inline(__always)
    public func resolveSynchronously<Key: ServiceKey>(_ key: Key.Type) throws -> Key.Value {
        let slot = try _resolvableSlot(of: key)
        guard _core.resolvesSynchronously(slot) else {
            return try _core.valueNotResolvableSynchronously(at: slot, as: Key.Value.self)
        }
        if _core.reportsResolves { return try _core.valueSynchronouslyReporting(at: slot, as: key, in: nil) }
        return try _core.valueSynchronously(at: slot, as: key, in: nil)
    }

    /// Resolves `key`, of any lifetime but scoped, awaiting asynchronous factories.
    ///
    /// Scoped services, and transients that depend on them, are resolved from a ``ServiceScope``.
    /// Runs on the caller's executor: resolving from an actor does not hop off it.
    ///
    /// A chain may be of any depth, bounded by memory, not by the thread's stack: a chain of synchronous
    /// factories is made as ``resolveSynchronously(_:)`` makes it, without suspending, and asynchronous
    /// factories do not use the thread's stack for the chain. A factory must not resolve the service it
    /// is making, directly or through other services, from a graph it captured (see
    /// ``resolveSynchronously(_:)``).
    ///
    /// - Throws: ``ServiceGraphError`` naming the key and, for a failing factory, its path;
    ///   ``ServiceGraphError/Code/reentrantResolution`` when a factory asks for the service it is
    ///   making.
    /// - Complexity: O(1) for a singleton; one factory call per transient in the chain.
    @inlinable
    @inline(__always)
    nonisolated(nonsending) public func resolve<Key: ServiceKey>(_ key: Key.Type) async throws -> Key.Value {
        let found = _core.slot(of: key)
        // The fast path, while the graph runs and resolves send no events (one test of one word): a
        // created singleton is the probe and the read the subscript makes; a transient whose whole
        // chain is synchronous is made here, in the caller, as `resolveSynchronously` makes it.
        // The last two lines repeat `_resolveOffTheFastPath`'s on purpose: with that function inlined
        // here instead, the optimizer meets every path at the value and retains a created singleton the
        // caller only borrows; with it called for them, a synchronous chain would pay an async call.
        if let slot = found, _core.resolveFlags.allowsFastPath {
            if let box = _core.buffers.singletonBox(at: slot) {
                return _GraphCore._Buffers.value(in: box, as: Key.Value.self)
            }
            if _core.resolvesSynchronously(slot) { return try _core.valueSynchronously(at: slot, as: key, in: nil) }
            return _unsafeValue(of: try await _core.boxAwaiting(at: slot, in: nil), as: Key.Value.self)
        }
        return try await _resolveOffTheFastPath(key, found: found)
    }

    /// `resolve` of a key the graph does not provide, after shutdown, or with resolve events on.
    @inlinable
    nonisolated(nonsending) func _resolveOffTheFastPath<Key: ServiceKey>(
        _ key: Key.Type,
        found: Int?
    ) async throws -> Key.Value {
        guard let slot = found, !_core.isShutDown() else {
            throw _core.unresolvableError(key, isProvided: found != nil)
        }
        // No asynchronous call unless a factory must be awaited, as on the fast path.
        if _core.resolvesSynchronously(slot) {
            if _core.reportsResolves { return try _core.valueSynchronouslyReporting(at: slot, as: key, in: nil) }
            return try _core.valueSynchronously(at: slot, as: key, in: nil)
        }
        return _unsafeValue(of: try await _core.boxAwaiting(at: slot, in: nil), as: Key.Value.self)
    }

    /// The slot of `key` in a running graph, for `resolveSynchronously`: inlined, with one cold call for
    /// both of its errors.
    @inlinable
    @inline(__always)
    func _resolvableSlot<Key: ServiceKey>(of key: Key.Type) throws(ServiceGraphError) -> Int {
        let found = _core.slot(of: key)
        guard let slot = found, !_core.isShutDown() else {
            throw _core.unresolvableError(key, isProvided: found != nil)
        }
        return slot
    }

    /// Opens a child scope that owns its ``Lifetime/scoped`` instances.
    ///
    /// Close the scope with ``ServiceScope/close()`` to release its instances in reverse order. Scopes
    /// still open when the graph shuts down are closed first. The graph does not keep a scope alive: a
    /// scope released without `close()` releases its instances, and the `willRemove` hooks it owed run
    /// in the background (the graph's shutdown waits for them, and the graph is kept alive until they
    /// have run), with a ``ServiceGraphEvent/Kind/scopeDropped`` event.
    ///
    /// A scope opened while the graph shuts down may come back closed: the shutdown closes every scope
    /// open when it starts, one whose ``ServiceGraphEvent/Kind/scopeOpened`` event is still being sent
    /// included. Such a scope throws ``ServiceGraphError/Code/scopeClosed`` to every resolve and close,
    /// has released its seeds as any close does, and is reported closed once, after it was reported
    /// opened.
    ///
    /// A graph with seeds (``Builder/seed(_:fileID:line:)``) needs their values: use
    /// ``makeScope(seeding:)-(ScopeSeed...)``.
    ///
    /// - Throws: ``ServiceGraphError/Code/graphShutDown`` after ``shutdown()``;
    ///   ``ServiceGraphError/Code/missingSeed`` for each seed the graph declares.
    public func makeScope() throws(ServiceGraphError) -> ServiceScope {
        try makeScope(seeding: [])
    }

    /// Opens a child scope given the values of the graph's seeds (``Builder/seed(_:fileID:line:)``),
    /// which its scoped and transient services may depend on.
    ///
    /// ```swift
    /// let session = try graph.makeScope(seeding: ScopeSeed(SessionUserKey.self, user))
    /// let cart = try await session.resolve(CartKey.self)   // made with the session's user
    /// ```
    ///
    /// Every seed must be given, once, and nothing else: otherwise no scope is made, and the error
    /// names each key that is missing, given twice, or not a seed (a value for a seed that an override
    /// replaced is ignored). Each seed is in place from the start: resolving it from the scope returns
    /// the value given, without suspending. The scope releases its seeds last, after its scoped
    /// instances; it runs no hooks on them unless a seed is given with `ownedByScope: true`
    /// (``ScopeSeed/init(_:_:ownedByScope:)``). When this throws, the values stay the caller's.
    /// Otherwise as ``makeScope()``.
    ///
    /// - Throws: ``ServiceGraphError`` with a ``ServiceGraphError/Code/missingSeed``,
    ///   ``ServiceGraphError/Code/duplicateSeed``, ``ServiceGraphError/Code/unexpectedSeed`` or
    ///   ``ServiceGraphError/Code/ownedSeedInUse`` problem per key that is wrong, all at once;
    ///   ``ServiceGraphError/Code/graphShutDown`` after ``shutdown()``.
    public func makeScope(seeding seeds: ScopeSeed...) throws(ServiceGraphError) -> ServiceScope {
        try makeScope(seeding: seeds)
    }

    /// Opens a child scope given the values of the graph's seeds, as an array; see
    /// ``makeScope(seeding:)-(ScopeSeed...)``.
    public func makeScope(seeding seeds: [ScopeSeed]) throws(ServiceGraphError) -> ServiceScope {
        try openScope(kind: 0, parent: nil, seeds: seeds)
    }

    /// Opens a child scope given the value of the graph's one seed; see
    /// ``makeScope(seeding:)-(ScopeSeed...)``. The usual request scope's case, which opens without an
    /// array of seeds to make and release (a server opens one per request).
    public func makeScope(seeding seed: ScopeSeed) throws(ServiceGraphError) -> ServiceScope {
        try openScope(kind: 0, parent: nil, seed: seed)
    }

    /// Opens a scope of `kind`, a kind the graph opens (declared without a parent), given the values
    /// of that kind's seeds; see ``makeScope(seeding:)-(ScopeSeed...)`` and ``ScopeKind``.
    ///
    /// ```swift
    /// let session = try graph.makeScope(.session, seeding: ScopeSeed(SessionUserKey.self, user))
    /// ```
    ///
    /// - Throws: As ``makeScope(seeding:)-(ScopeSeed...)``, for the seeds of `kind`;
    ///   ``ServiceGraphError/Code/wrongScopeKind`` when `kind` opens inside another kind, or the graph
    ///   has no services of that kind.
    public func makeScope(_ kind: ScopeKind, seeding seeds: ScopeSeed...) throws(ServiceGraphError) -> ServiceScope {
        try makeScope(kind, seeding: seeds)
    }

    /// Opens a scope of `kind` given the value of its one seed; see
    /// ``makeScope(_:seeding:)-(ScopeKind,ScopeSeed...)``. Opens without an array of seeds, as
    /// ``makeScope(seeding:)-(ScopeSeed)`` does.
    public func makeScope(_ kind: ScopeKind, seeding seed: ScopeSeed) throws(ServiceGraphError) -> ServiceScope {
        try openScope(kind: _core.scopeKindIndex(openingFromGraph: kind), parent: nil, seed: seed)
    }

    /// Opens a scope of `kind` given its seeds, as an array; see ``makeScope(_:seeding:)-(ScopeKind,ScopeSeed...)``.
    public func makeScope(_ kind: ScopeKind, seeding seeds: [ScopeSeed]) throws(ServiceGraphError) -> ServiceScope {
        try openScope(kind: _core.scopeKindIndex(openingFromGraph: kind), parent: nil, seeds: seeds)
    }

    /// Opens a scope of the kind at `kind` (an index in the core's ``_GraphCore/scopeKinds``), from
    /// `parent` or from the graph: its seeds are placed and claimed, and it is registered with the
    /// graph (whose shutdown closes it) and, by the caller, with its parent.
    func openScope(kind: UInt16, parent: ServiceScope?, seeds: [ScopeSeed]) throws(ServiceGraphError) -> ServiceScope {
        // A server opens a scope per request, with cold caches: what only some scopes need (seeds with
        // hooks or given out of place, a listener, the graph's first scope) is out of line.
        guard _core.seedsArePlainAndExact(seeds, kind: kind) else {
            return try openScope(kind: kind, parent: parent, placing: seeds)
        }
        return try openScope(kind: kind, parent: parent, seeding: .exact(seeds))
    }

    /// Opens a scope of the kind at `kind` given one seed, as ``openScope(kind:parent:seeds:)`` does with
    /// an array of one.
    func openScope(kind: UInt16, parent: ServiceScope?, seed: ScopeSeed) throws(ServiceGraphError) -> ServiceScope {
        guard let slot = _core.slotOfOnlySeed(seed, kind: kind) else {
            return try openScope(kind: kind, parent: parent, placing: [seed])
        }
        return try openScope(kind: kind, parent: parent, seeding: .one(seed, at: slot))
    }

    /// Opens a scope whose seeds are not exactly its kind's plain ones: they are placed and their hooks
    /// claimed, or what is wrong with them reported.
    @inline(never)
    private func openScope(
        kind: UInt16,
        parent: ServiceScope?,
        placing seeds: [ScopeSeed]
    ) throws(ServiceGraphError) -> ServiceScope {
        let placed = try _core.claimingHooks(of: _core.placedSeeds(seeds, kind: kind))
        do {
            return try openScope(kind: kind, parent: parent, seeding: .placed(placed))
        } catch {
            // No scope: the seeds stay the caller's.
            _core.giveBackHooks(of: placed)
            throw error
        }
    }

    private func openScope(
        kind: UInt16,
        parent: ServiceScope?,
        seeding: _ScopeBody.Seeding
    ) throws(ServiceGraphError) -> ServiceScope {
        // Names only for a listener, and made outside the lock (a key's name may run the key's code).
        let reportsOpening = _core.reportsScopeEvent(.scopeOpened)
        let names = reportsOpening ? scopeOpenedNames(kind: kind) : nil
        let scope = try state.withLock { state throws(ServiceGraphError) -> _ScopeBody in
            guard !state.shutdown.hasStarted else { throw newScopeRefused() }
            let scope = _ScopeBody.make(
                graph: self,
                layout: state.scopeLayout ?? makeScopeLayout(&state),
                id: state.nextID,
                place: state.scopes.nextPlace,
                seeding: seeding,
                kind: kind,
                parent: parent
            )
            state.scopes.insert(scope)
            state.nextID += 1
            state.unfinished += 1
            if reportsOpening { scope.holdForOpeningReport() }
            return scope
        }
        if reportsOpening {
            // Reported once the graph's lock is let go, so that a handler may open a scope of its own
            // (under the lock, that waited for itself). The graph's shutdown may start closing the
            // scope from now on: held as a resolve in flight, it reports the close after this.
            _core.events.send(ServiceGraphEvent(.scopeOpened, key: names))
            scope._leave()
        }
        return ServiceScope(scope)
    }

    /// The names of the seeds of the kind at `kind`, in slot order, for the scopeOpened event; nil when it
    /// has none.
    @inline(never)
    private func scopeOpenedNames(kind: UInt16) -> String? {
        let seedSlots = _core.seedSlots(ofKind: kind)
        return seedSlots.isEmpty ? nil : seedSlots.map { _core.name($0) }.joined(separator: ", ")
    }

    /// The layout of the graph's scopes, made by its first one.
    @inline(never)
    private func makeScopeLayout(_ state: inout State) -> _GraphCore.ScopeLayout {
        let layout = _GraphCore.ScopeLayout(core: _core)
        state.scopeLayout = layout
        return layout
    }

    @inline(never)
    private func newScopeRefused() -> ServiceGraphError {
        ServiceGraphError(_core.shutDownProblem("a new scope"))
    }

    /// A scope has closed, or was dropped and has released what it owned.
    ///
    /// - Parameter body: Given the scope's body the graph held, to let go of outside the graph's lock
    ///   (see ``OpenScopes/remove(_:at:)``) and after the graph: its end may end the scope it was opened
    ///   from, whose own end may be the last a shutdown waits for.
    /// - Returns: The shutdown waiting for the graph's dependents, if this was the last: resume it once
    ///   no longer holding the graph (nor `body`), so that the shutdown it ends cannot return while the
    ///   graph is still kept alive by the caller.
    func scopeFinished(_ id: Int, at place: Int, removing body: inout _ScopeBody?) -> DependentsWaiters {
        var removed: _ScopeBody?
        let waiters = finish { state in
            removed = state.scopes.remove(id, at: place)
            return removed != nil
        }
        body = removed
        return waiters
    }

    /// Registers a child graph about to be built; throws once this graph is shutting down.
    func childBuildStarted() throws(ServiceGraphError) -> Int {
        try state.withLock { state throws(ServiceGraphError) in
            guard !state.shutdown.hasStarted else {
                throw ServiceGraphError(_core.shutDownProblem("a child graph"))
            }
            let id = state.nextID
            state.nextID += 1
            state.unfinished += 1
            return id
        }
    }

    /// Records a built child graph; false when this graph began shutting down during the build (the
    /// child must then shut itself down).
    func childBuilt(_ child: ServiceGraph) -> Bool {
        state.withLock { state in
            guard !state.shutdown.hasStarted else { return false }
            state.children[child.childID] = WeakReference(child)
            return true
        }
    }

    /// A child graph has shut down, was released, or failed to build.
    func childFinished(_ id: Int) {
        finish { state in
            state.children[id] = nil
            return true
        }.resume()
    }

    private func finish(_ update: (inout State) -> Bool) -> DependentsWaiters {
        state.withLock { state in
            guard update(&state) else { return DependentsWaiters() }
            state.unfinished -= 1
            guard state.unfinished == 0 else { return DependentsWaiters() }
            defer { state.drainWaiters = [] }
            return DependentsWaiters(waiters: state.drainWaiters)
        }
    }

    /// Waits until every scope and child graph has finished.
    private nonisolated(nonsending) func waitForDependents() async {
        // Usually none: no continuation then (in a fresh process, its type's first use costs the
        // runtime a scan of every conformance, a first build's cost).
        if !hasUnfinishedDependents { return }
        await waitForUnfinishedDependents()
    }

    @inline(never)
    private nonisolated(nonsending) func waitForUnfinishedDependents() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let drained = state.withLock { state in
                if state.unfinished == 0 { return true }
                state.drainWaiters.append(waiter)
                return false
            }
            if drained { waiter.resume() }
        }
    }

    /// Releases the graph: shuts down its child graphs, newest first, and closes its open scopes,
    /// newest first; waits for scopes closing or releasing on their own; then calls
    /// ``LifecycleHooks/willRemove()`` on every started singleton in reverse topological order.
    ///
    /// Each hook runs exactly once, even when shutdown is called again or concurrently (later calls
    /// wait for the first and report the same result). A hook that throws does not stop the others.
    /// Cancelling the task that calls `shutdown()` does not cut the cleanup short: every hook still
    /// runs, bounded by ``Builder/hookTimeout`` only. Like ``Builder/build()``, it runs on the caller's
    /// executor; the hooks run in a task of their own.
    ///
    /// - Throws: A ``ServiceGraphError`` with every hook failure, the children's and scopes' included.
    public nonisolated(nonsending) func shutdown() async throws(ServiceGraphError) {
        let role = state.withLock { state -> ShutdownRole in
            switch state.shutdown.start() {
            case .finished(let problems): return .done(problems)
            case .running: return .wait
            case .run:
                _core.markShutDown()
                let children = state.children.sorted { $0.key > $1.key }.compactMap { $0.value.object }
                let scopes = state.scopes.newestFirst()
                return .run(children: children, scopes: scopes)
            }
        }
        let problems: [ServiceGraphError.Problem]
        switch role {
        case .done(let finished):
            problems = finished
        case .wait:
            problems = await waitForShutdown()
        case .run(let children, let scopes):
            problems = await runShutdown(children: children, scopes: scopes)
        }
        if !problems.isEmpty { throw ServiceGraphError(problems) }
    }

    /// Waits for the shutdown another caller runs: out of line, so that the usual shutdown, which waits
    /// for no other, does not make the continuation's type.
    @inline(never)
    private nonisolated(nonsending) func waitForShutdown() async -> [ServiceGraphError.Problem] {
        await state.outcome(of: \.shutdown)
    }

    /// Whether a scope opened on this graph, or a child graph of it, has not finished.
    var hasUnfinishedDependents: Bool { state.withLock { $0.unfinished > 0 } }

    /// Retires this generation once a ``LiveGraph`` has committed the next one, which took over the
    /// singletons `handedOver` marks (by slot): shuts it down (closing any scope still open), releasing
    /// the rest of its singletons in reverse order.
    ///
    /// - Returns: Every `willRemove` failure.
    func retire(handingOver handedOver: [Bool]) async -> [ServiceGraphError.Problem] {
        state.withLock { $0.handedOver = handedOver }
        do {
            try await shutdown()
            return []
        } catch {
            return error.problems
        }
    }

    /// The one shutdown of this graph, run in the caller's task: no task object outlives the release
    /// holding the instances it released.
    private nonisolated(nonsending) func runShutdown(
        children: [ServiceGraph],
        scopes: [_ScopeBody]
    ) async -> [ServiceGraphError.Problem] {
        let start = ContinuousClock.now
        var found: [ServiceGraphError.Problem] = []
        for child in children {
            do {
                try await child.shutdown()
            } catch {
                found += error.problems
            }
        }
        for scope in scopes {
            found += await scope.closeForShutdown()
        }
        await waitForDependents()
        // Singletons created on first use are released with the build's, each before what it uses.
        var created = await _core.deferredSingletons?.close() ?? []
        var started = log.started
        var aliases = log.aliases + (_core.deferredSingletons?.aliasesSoFar ?? [])
        if let handedOver = state.withLock({ $0.handedOver }) {
            started.removeAll { handedOver[$0.slot] }
            created.removeAll { handedOver[$0.slot] }
            aliases.removeAll { handedOver[$0.slot] || handedOver[$0.holder] }
        }
        found += await Lifecycle.release(
            Lifecycle.startOrder(of: started, and: created, aliases: aliases, in: _core),
            of: _core
        )
        _core.events.send(ServiceGraphEvent(.shutdownFinished, duration: start.duration(to: .now)))
        let waiters = state.withLock { $0.shutdown.finish(with: found) }
        parent?.childFinished(childID)
        waiters.resume(returning: found)
        return found
    }

    /// A shutdown waiting for the graph's scopes and children, to resume once they have all finished.
    struct DependentsWaiters {
        fileprivate var waiters: [CheckedContinuation<Void, Never>] = []

        /// Resumes them; the test for none is inlined, as there usually are none.
        @inline(__always)
        func resume() {
            if !waiters.isEmpty { resumeEach() }
        }

        @inline(never)
        private func resumeEach() {
            for waiter in waiters { waiter.resume() }
        }
    }

    private enum ShutdownRole {
        case run(children: [ServiceGraph], scopes: [_ScopeBody])
        case wait
        case done([ServiceGraphError.Problem])
    }

    /// The singletons' key names in the order they were created (a topological order).
    public var initializationOrder: [String] {
        _core.creationOrder.map { _core.name($0) }
    }
}
