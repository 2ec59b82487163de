public import Synchronization

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
    let core: GraphCore
    let record: BuildRecord
    private let state = Locked(State())

    private struct State {
        var shutdown = Shutdown.notStarted
        var openScopes: [Int: ServiceScope] = [:]
        var nextScopeID = 0
    }

    init(core: GraphCore, record: BuildRecord) {
        self.core = core
        self.record = record
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
        guard let slot = core.slot(of: key), let value = core.singleton(at: slot, as: Key.Value.self) else {
            core.trapNotSingleton(key)
        }
        return value
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
    public func resolveSynchronously<Key: ServiceKey>(_ key: Key.Type) throws -> Key.Value {
        let slot = try resolvableSlot(of: key)
        guard core.resolvesNow[slot] else { throw core.cannotResolveNowError(slot) }
        if core.reportsResolves { return try core.valueNowReporting(at: slot, as: key, in: nil) }
        return try core.valueNow(at: slot, as: key, in: nil)
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
    nonisolated(nonsending) public func resolve<Key: ServiceKey>(_ key: Key.Type) async throws -> Key.Value {
        let slot = try resolvableSlot(of: key)
        if core.reportsResolves { return try await core.valueReporting(at: slot, as: key, in: nil) }
        return try await core.value(at: slot, as: key, in: nil)
    }

    @inlinable
    func resolvableSlot<Key: ServiceKey>(of key: Key.Type) throws(ServiceGraphError) -> Int {
        guard let slot = core.slot(of: key) else { throw core.notFoundError(key) }
        guard !core.isShutDown.load(ordering: .relaxed) else { throw core.shutDownError(key) }
        return slot
    }

    /// Opens a child scope that owns its ``Lifetime/scoped`` instances.
    ///
    /// Close the scope with ``ServiceScope/close()`` to release its instances in reverse order. Scopes
    /// still open when the graph shuts down are closed first.
    ///
    /// - Throws: ``ServiceGraphError/Code/graphShutDown`` after ``shutdown()``.
    public func makeScope() throws(ServiceGraphError) -> ServiceScope {
        try state.withLock { state throws(ServiceGraphError) in
            guard case .notStarted = state.shutdown else {
                throw ServiceGraphError(core.shutDownProblem("a new scope"))
            }
            let scope = ServiceScope(graph: self, id: state.nextScopeID)
            state.openScopes[state.nextScopeID] = scope
            state.nextScopeID += 1
            core.events.send(ServiceGraphEvent(.scopeOpened))
            return scope
        }
    }

    func scopeDidClose(_ scope: ServiceScope) {
        _ = state.withLock { $0.openScopes.removeValue(forKey: scope.id) }
    }

    /// Releases the graph: closes open scopes, then calls ``LifecycleHooks/willRemove()`` on every
    /// started singleton in reverse topological order.
    ///
    /// Each hook runs exactly once, even when shutdown is called again or concurrently (later calls
    /// wait for the first and report the same result). A hook that throws does not stop the others.
    ///
    /// - Throws: A ``ServiceGraphError`` with every hook failure.
    public func shutdown() async throws(ServiceGraphError) {
        let role = state.withLock { state -> ShutdownRole in
            switch state.shutdown {
            case .finished(let problems): return .done(problems)
            case .running: return .wait
            case .notStarted:
                core.isShutDown.store(true, ordering: .releasing)
                state.shutdown = .running(waiters: [])
                let scopes = state.openScopes.sorted { $0.key > $1.key }.map(\.value)
                state.openScopes = [:]
                return .run(scopes)
            }
        }
        let problems: [ServiceGraphError.Problem]
        switch role {
        case .done(let finished):
            problems = finished
        case .wait:
            problems = await withCheckedContinuation { waiter in
                let finished = state.withLock { state -> [ServiceGraphError.Problem]? in
                    switch state.shutdown {
                    case .finished(let problems): return problems
                    case .running(var waiters):
                        waiters.append(waiter)
                        state.shutdown = .running(waiters: waiters)
                        return nil
                    case .notStarted: return []
                    }
                }
                if let finished { waiter.resume(returning: finished) }
            }
        case .run(let scopes):
            // Released here, in the caller's task: no task object outlives the release holding the
            // instances it released.
            let start = ContinuousClock.now
            var found: [ServiceGraphError.Problem] = []
            for scope in scopes {
                found += await scope.closeForShutdown()
            }
            found += await Lifecycle.release(record.started, of: core)
            core.events.send(ServiceGraphEvent(.shutdownFinished, duration: start.duration(to: .now)))
            let waiters = state.withLock { state -> [CheckedContinuation<[ServiceGraphError.Problem], Never>] in
                defer { state.shutdown = .finished(found) }
                if case .running(let waiters) = state.shutdown { return waiters }
                return []
            }
            for waiter in waiters {
                waiter.resume(returning: found)
            }
            problems = found
        }
        if !problems.isEmpty { throw ServiceGraphError(problems) }
    }

    /// Where the graph's shutdown stands; later and concurrent calls wait for the first.
    private enum Shutdown {
        case notStarted
        case running(waiters: [CheckedContinuation<[ServiceGraphError.Problem], Never>])
        case finished([ServiceGraphError.Problem])
    }

    private enum ShutdownRole {
        case run([ServiceScope])
        case wait
        case done([ServiceGraphError.Problem])
    }

    /// The singletons' key names in the order they were created (a topological order).
    public var initializationOrder: [String] {
        record.order.map { core.name(Int($0)) }
    }
}
