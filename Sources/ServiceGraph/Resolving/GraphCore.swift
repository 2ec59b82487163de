public import Synchronization

/// The immutable heart of a built graph: the key table, a flat resolution plan, and the singletons.
///
/// Everything the resolve path touches is a flat array indexed by slot, so resolving is a table lookup
/// and a few array reads, with no hashing of strings, no locks and no allocation for singletons. The
/// only mutable state is the shutdown flag, an atomic.
///
/// `@unchecked Sendable`: the raw buffers are written only in `init`, except the singleton slots,
/// which follow ``SingletonStorage``'s write-once-before-publication rule.
@usableFromInline
final class GraphCore: @unchecked Sendable {
    /// Per slot: the key, lifetime and registration site, for errors and dumps.
    let records: [ServiceRecord]
    /// Per slot: the key's name, made on first use.
    let keyNames: KeyNames
    /// The distinct `#fileID`s of the registrations (``ServiceRecord/fileIndex``).
    let files: [StaticString]
    let singletons: SingletonStorage
    /// Per slot: whether it depends (transitively) on a scoped service.
    let needsScope: [Bool]
    @usableFromInline
    let isShutDown = Atomic<Bool>(false)
    /// How long a lifecycle hook may run before it is abandoned; nil waits forever.
    let hookTimeout: Duration?
    /// How long an asynchronous singleton or scoped factory may run before it is abandoned.
    let factoryTimeout: Duration?
    /// The instances whose hooks this graph runs (see ``HookClaims``).
    let hookClaims: HookClaims
    /// Where events go.
    let events: EventSink
    /// Whether top-level resolves send events (checked on the resolve path, so a plain flag).
    @usableFromInline
    let reportsResolves: Bool
    /// Where `resolveSynchronously` keeps the services the current thread is making.
    let threadTrail = ThreadTrail.Slot.shared

    // The flat resolution plan. Raw buffers, owned by the core and immutable after `init` (but for
    // the factories of singletons, released once the build is done), so reading them costs no
    // reference counting and no bounds bookkeeping on the resolve path.

    /// The key table, copied into two raw buffers (identities, slots): see ``KeyTable``.
    @usableFromInline
    let keyIdentities: UnsafeMutableBufferPointer<UInt>
    @usableFromInline
    let keySlots: UnsafeMutableBufferPointer<Int32>
    @usableFromInline
    let keyMask: Int
    @usableFromInline
    let keyShift: UInt
    /// Per slot: the singleton's box, or nil (not a singleton, or not built yet).
    @usableFromInline
    let singletonRefs: UnsafeMutablePointer<Unmanaged<AnyBox>?>
    /// Per slot: the factory, retained by the core; nil for a built singleton.
    @usableFromInline
    let factoryRefs: UnsafeMutableBufferPointer<Unmanaged<AnyFactory>?>
    /// Per slot: its lifetime.
    @usableFromInline
    let lifetimes: UnsafeMutableBufferPointer<Lifetime>
    /// Per slot: whether it can be resolved without suspending (see ``ResolutionTraits``).
    @usableFromInline
    let resolvesNow: UnsafeMutableBufferPointer<Bool>
    /// The dependencies of slot `s` are `dependencySlots[dependencyStart[s]..<dependencyStart[s + 1]]`.
    @usableFromInline
    let dependencyStart: UnsafeMutableBufferPointer<Int32>
    @usableFromInline
    let dependencySlots: UnsafeMutableBufferPointer<Int32>

    /// Makes the core of a valid plan (no missing edges, no cycles); the plan is not kept.
    init(
        plan: GraphPlan,
        hookTimeout: Duration?,
        factoryTimeout: Duration?,
        parentClaims: HookClaims?,
        events: EventSink,
        reportsResolves: Bool
    ) {
        self.hookTimeout = hookTimeout
        self.factoryTimeout = factoryTimeout
        self.hookClaims = HookClaims(parent: parentClaims)
        self.events = events
        self.reportsResolves = reportsResolves
        let count = plan.count
        var files: [StaticString] = []
        var fileIndex: [UInt: UInt32] = [:]
        var records: [ServiceRecord] = []
        records.reserveCapacity(count)
        for (slot, provider) in plan.providers.enumerated() {
            let file = provider.site.fileID
            let address = file.hasPointerRepresentation ? UInt(bitPattern: file.utf8Start) : 0
            let index: UInt32
            if let known = fileIndex[address], address != 0 {
                index = known
            } else {
                index = UInt32(files.count)
                files.append(file)
                fileIndex[address] = index
            }
            records.append(
                ServiceRecord(
                    key: provider.key,
                    line: UInt32(truncatingIfNeeded: provider.site.line),
                    fileIndex: index,
                    lifetime: provider.lifetime,
                    isOverride: plan.overridden[slot]
                )
            )
        }
        self.records = records
        self.keyNames = KeyNames { [records] in records.map(\.key) }
        self.files = files
        let traits = ResolutionTraits(plan)
        self.needsScope = traits.needsScope
        self.singletons = SingletonStorage(count: count)
        self.singletonRefs = singletons.base

        let entries = plan.table.entries
        self.keyIdentities = .allocate(capacity: entries.count)
        _ = keyIdentities.initialize(from: entries.lazy.map { $0.identity })
        self.keySlots = .allocate(capacity: entries.count)
        _ = keySlots.initialize(from: entries.lazy.map { Int32(truncatingIfNeeded: $0.slot) })
        self.keyMask = entries.count - 1
        self.keyShift = plan.table.shift

        self.factoryRefs = .allocate(capacity: count)
        _ = factoryRefs.initialize(from: plan.providers.lazy.map { Unmanaged.passRetained($0.factory) })
        self.lifetimes = .allocate(capacity: count)
        _ = lifetimes.initialize(from: plan.providers.lazy.map { $0.lifetime })
        self.resolvesNow = .allocate(capacity: count)
        _ = resolvesNow.initialize(from: traits.resolvesNow)
        let dependencyStart = UnsafeMutableBufferPointer<Int32>.allocate(capacity: count + 1)
        let dependencySlots = UnsafeMutableBufferPointer<Int32>.allocate(capacity: max(plan.edges.edgeCount, 1))
        var edge = 0
        for slot in 0..<count {
            dependencyStart.initializeElement(at: slot, to: Int32(truncatingIfNeeded: edge))
            for target in plan.edges.dependencies(of: slot) {
                dependencySlots.initializeElement(at: edge, to: Int32(truncatingIfNeeded: target))
                edge += 1
            }
        }
        dependencyStart.initializeElement(at: count, to: Int32(truncatingIfNeeded: edge))
        self.dependencyStart = dependencyStart
        self.dependencySlots = dependencySlots
    }

    deinit {
        releaseFactories { _ in true }
        keyIdentities.deallocate()
        keySlots.deallocate()
        factoryRefs.deallocate()
        lifetimes.deallocate()
        resolvesNow.deallocate()
        dependencyStart.deallocate()
        dependencySlots.deallocate()
    }

    /// Releases the factories of the slots `where` selects. Called by the build, once every singleton
    /// exists, for the singletons' factories: the graph never runs them again.
    func releaseFactories(where shouldRelease: (Int) -> Bool) {
        for slot in factoryRefs.indices where shouldRelease(slot) {
            factoryRefs[slot]?.release()
            factoryRefs[slot] = nil
        }
    }

    /// The factory at `slot`, retained; only for slots whose factory is still held.
    @usableFromInline
    func factory(at slot: Int) -> AnyFactory {
        factoryRefs[slot].unsafelyUnwrapped.takeUnretainedValue()
    }

    var count: Int { records.count }

    /// The number of dependency edges.
    var edgeCount: Int { Int(dependencyStart[count]) }

    /// The slots `slot` depends on, in declaration order: how code outside the core reads the edges.
    func dependencies(of slot: Int) -> LazyMapCollection<Range<Int>, Int> {
        (Int(dependencyStart[slot])..<Int(dependencyStart[slot + 1])).lazy.map { Int(self.dependencySlots[$0]) }
    }

    func name(_ slot: Int) -> String { keyNames.name(slot) }

    func site(_ slot: Int) -> RegistrationSite {
        let record = records[slot]
        return RegistrationSite(fileID: files[Int(record.fileIndex)].description, line: Int(record.line))
    }

    /// The slot of `key`, or nil.
    ///
    /// - Complexity: O(1) on average.
    @inlinable
    @inline(__always)
    func slot<Key: ServiceKey>(of key: Key.Type) -> Int? {
        let bits = UInt(bitPattern: Key.keyID)
        var index = KeyTable.bucket(for: bits, shift: keyShift)
        while true {
            let identity = keyIdentities[index]
            if identity == bits { return Int(keySlots[index]) }
            if identity == 0 { return nil }
            index = (index + 1) & keyMask
        }
    }

    /// A trivially copyable view of the flat plan, for the synchronous resolve path.
    @inlinable
    var resolution: ResolutionPlan {
        ResolutionPlan(
            core: self,
            singletonRefs: singletonRefs,
            factoryRefs: factoryRefs.baseAddress.unsafelyUnwrapped,
            lifetimes: lifetimes.baseAddress.unsafelyUnwrapped,
            dependencyStart: dependencyStart.baseAddress.unsafelyUnwrapped,
            dependencySlots: dependencySlots.baseAddress.unsafelyUnwrapped
        )
    }

    /// The singleton at `slot` as a `Value`, or nil when the slot holds no singleton.
    @inlinable
    func singleton<Value: Sendable>(at slot: Int, as type: Value.Type) -> Value? {
        resolution.singleton(at: slot, as: type)
    }

    /// Resolves `slot` without suspending and reports it (out of line: only with resolve events on).
    @usableFromInline
    func valueNowReporting<Key: ServiceKey>(at slot: Int, as key: Key.Type, in scope: ServiceScope?) throws -> Key.Value
    {
        let start = ContinuousClock.now
        do {
            let value = try valueNow(at: slot, as: key, in: scope)
            reportResolve(of: slot, since: start)
            return value
        } catch {
            reportResolve(of: slot, since: start, error: error)
            throw error
        }
    }

    /// Resolves `slot` and reports it (out of line: only with resolve events on).
    @usableFromInline
    nonisolated(nonsending) func valueReporting<Key: ServiceKey>(
        at slot: Int,
        as key: Key.Type,
        in scope: ServiceScope?
    ) async throws -> Key.Value {
        let start = ContinuousClock.now
        do {
            let value = try await value(at: slot, as: key, in: scope)
            reportResolve(of: slot, since: start)
            return value
        } catch {
            reportResolve(of: slot, since: start, error: error)
            throw error
        }
    }

    private func reportResolve(of slot: Int, since start: ContinuousClock.Instant, error: (any Error)? = nil) {
        events.send(ServiceGraphEvent(.resolved, key: name(slot), duration: start.duration(to: .now), error: error))
    }

    /// The value at `slot`, made without suspending: where `resolveSynchronously` starts a chain.
    ///
    /// A singleton is read as is. A transient is made in its own entry of the current thread's trail
    /// (``ThreadTrail``), so that a factory asking for it again, through a graph or scope it captured,
    /// gets ``ServiceGraphError/Code/reentrantResolution`` instead of recursing without end.
    @inlinable
    @inline(__always)
    func valueNow<Key: ServiceKey>(at slot: Int, as key: Key.Type, in scope: ServiceScope?) throws -> Key.Value {
        let resolution = self.resolution
        if let value = resolution.singleton(at: slot, as: Key.Value.self) {
            return value
        }
        guard ThreadTrail.hasThreads else {
            return try ResolutionTrail.current.withValue(try trail(entering: slot)) {
                try resolution.valueNow(at: slot, as: Key.Value.self, in: scope, depth: 0)
            }
        }
        let trail = try ThreadTrail.enter(slot, of: self)
        defer { ThreadTrail.leave(trail) }
        return try resolution.valueNow(at: slot, as: Key.Value.self, in: scope, depth: 0)
    }

    /// The value at `slot`, awaiting asynchronous factories and scoped instances: where `resolve` starts
    /// a chain.
    ///
    /// A transient whose chain is synchronous is made as `resolveSynchronously` makes it, on the thread's
    /// trail: it cannot suspend, and so never reaches a service on the task's trail. Any other transient
    /// is made in its own entry of the task's ``ResolutionTrail``; a scope's creation task makes its own
    /// entry for a scoped instance.
    @inlinable
    nonisolated(nonsending) func value<Key: ServiceKey>(
        at slot: Int,
        as key: Key.Type,
        in scope: ServiceScope?
    ) async throws -> Key.Value {
        if let value = singleton(at: slot, as: Key.Value.self) {
            return value
        }
        switch lifetimes[slot] {
        case .transient:
            if resolvesNow[slot] {
                return try valueNow(at: slot, as: key, in: scope)
            }
            return try await makeTransient(entering: slot, as: key, in: scope)
        case .scoped:
            guard let scope else { throw ServiceGraphError(scopeRequired(slot)) }
            return try await scope.instance(at: slot, as: key)
        case .singleton:
            // Only during a failed build; a built graph has every singleton.
            throw requiresAwaitError(slot)
        }
    }

    /// Makes a new instance of the asynchronous transient at `slot` in its own entry of the task's
    /// ``ResolutionTrail``.
    @inlinable
    nonisolated(nonsending) func makeTransient<Key: ServiceKey>(
        entering slot: Int,
        as key: Key.Type,
        in scope: ServiceScope?
    ) async throws -> Key.Value {
        try await ResolutionTrail.current.withValue(try trail(entering: slot)) {
            try await makeTransient(at: slot, as: key, in: scope)
        }
    }

    /// The value at `slot` for a factory that declared it as a dependency, awaiting asynchronous
    /// factories and scoped instances.
    @inlinable
    nonisolated(nonsending) func dependencyValue<Key: ServiceKey>(
        at slot: Int,
        as key: Key.Type,
        in scope: ServiceScope?
    ) async throws -> Key.Value {
        if let value = singleton(at: slot, as: Key.Value.self) {
            return value
        }
        switch lifetimes[slot] {
        case .transient:
            return try await makeTransient(at: slot, as: key, in: scope)
        case .scoped:
            guard let scope else { throw ServiceGraphError(scopeRequired(slot)) }
            return try await scope.instance(at: slot, as: key)
        case .singleton:
            // Only during a failed build; a built graph has every singleton.
            throw requiresAwaitError(slot)
        }
    }

    /// Makes a new instance of the transient at `slot`, awaiting its dependencies.
    @inlinable
    nonisolated(nonsending) func makeTransient<Key: ServiceKey>(
        at slot: Int,
        as key: Key.Type,
        in scope: ServiceScope?
    ) async throws -> Key.Value {
        var arguments = Arguments(resolution, scope: scope, slot: slot)
        let make = unsafeDowncast(factory(at: slot), to: Factory<Key.Value>.self).make
        do {
            return try await make(&arguments)
        } catch {
            throw failure(error, at: slot)
        }
    }

    /// The current task's ``ResolutionTrail`` with the transient at `slot` pushed on it.
    ///
    /// - Throws: ``ServiceGraphError/Code/reentrantResolution`` when the current task is making it.
    @usableFromInline
    func trail(entering slot: Int) throws(ServiceGraphError) -> ResolutionTrail {
        guard let trail = ResolutionTrail.entering(slot, of: self) else { throw reentrantError(slot) }
        return trail
    }

    /// The error for a service asked for while the same task is making it: its factory, or one it
    /// calls, asked a graph or scope it captured for it.
    func reentrantError(_ slot: Int) -> ServiceGraphError {
        let name = name(slot)
        return ServiceGraphError(
            .init(
                .reentrantResolution,
                key: name,
                site: site(slot),
                message: "\(name) was resolved again while it was being made: its factory, or one it calls, asks "
                    + "the graph or a scope for \(name) (a cycle the declared dependencies do not show)"
            )
        )
    }

    /// Wraps a factory's error in a ``ServiceGraphError`` naming the service, or puts the service in
    /// front of the path of one thrown deeper in the chain.
    ///
    /// - Complexity: O(1): a failure that unwinds a chain of *n* factories costs O(*n*), not O(*n*²).
    @usableFromInline
    func failure(_ error: any Error, at slot: Int) -> ServiceGraphError {
        if let error = error as? ServiceGraphError {
            guard error.problems.count == 1, let problem = error.problems.first else { return error }
            return ServiceGraphError(problem.prepending(records[slot].key))
        }
        let name = name(slot)
        return ServiceGraphError(
            .init(
                .factoryFailed,
                key: name,
                path: [name],
                site: site(slot),
                message: "the factory of \(name) threw: \(error)",
                underlyingError: error
            )
        )
    }

    @usableFromInline
    func requiresAwaitError(_ slot: Int) -> ServiceGraphError {
        ServiceGraphError(requiresAwait(slot))
    }

    func requiresAwait(_ slot: Int) -> ServiceGraphError.Problem {
        let name = name(slot)
        let reason =
            lifetimes[slot] == .scoped
            ? "it is scoped, and creating a scoped instance may suspend"
            : needsScope[slot]
                ? "it depends on a scoped service"
                : "its factory, or the factory of one of its dependencies, is async"
        return .init(
            .requiresAwait,
            key: name,
            site: site(slot),
            message: "\(name) cannot be resolved synchronously: \(reason); use `try await resolve`"
        )
    }

    @usableFromInline
    func scopeRequired(_ slot: Int) -> ServiceGraphError.Problem {
        let name = name(slot)
        let what = lifetimes[slot] == .scoped ? "scoped" : "transient and depends on a scoped service"
        return .init(
            .wrongLifetime,
            key: name,
            site: site(slot),
            message: "\(name) is \(what); resolve it from a ServiceScope (graph.makeScope())"
        )
    }

    /// The error for a key that is not in the graph, naming the closest keys that are.
    ///
    /// The closest keys are found only when the message is read: a miss costs no more than the error.
    func notFound(
        _ name: String,
        valueType: ObjectIdentifier,
        key: (any ServiceKey.Type)? = nil
    ) -> ServiceGraphError.Problem {
        // The message keeps the keys and their names, not the core: an error must not keep a graph's
        // services alive.
        let (records, keyNames) = (records, keyNames)
        return .init(.keyNotFound, key: name) {
            NameSuggestions.notFoundMessage(
                for: name,
                key: key,
                valueType: valueType,
                among: records.map(\.key),
                named: keyNames
            )
        }
    }

    /// The error for `key` missing from the graph (kept out of line: it is the cold path).
    @usableFromInline
    func notFoundError<Key: ServiceKey>(_ key: Key.Type) -> ServiceGraphError {
        ServiceGraphError(notFound(Key.serviceName, valueType: Key.valueTypeID, key: key))
    }

    @usableFromInline
    func shutDownError<Key: ServiceKey>(_ key: Key.Type) -> ServiceGraphError {
        ServiceGraphError(shutDownProblem(Key.serviceName))
    }

    @usableFromInline
    func cannotResolveNowError(_ slot: Int) -> ServiceGraphError {
        ServiceGraphError(needsScope[slot] ? scopeRequired(slot) : requiresAwait(slot))
    }

    /// Traps with the message `resolve` would throw: the subscript's out-of-range access.
    @usableFromInline
    func trapNotSingleton<Key: ServiceKey>(_ key: Key.Type) -> Never {
        // `fatalError`, not `preconditionFailure`: `-O` drops the message of the latter.
        guard let slot = slot(of: key) else { fatalError(notFoundError(key).description) }
        fatalError("ServiceGraph: \(Key.serviceName) is \(lifetimes[slot]), not a singleton; use `resolve`")
    }

    func shutDownProblem(_ name: String) -> ServiceGraphError.Problem {
        .init(.graphShutDown, key: name, message: "\(name) was asked for after the graph was shut down")
    }
}
