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
    let plan: GraphPlan
    let nodes: [Node]
    let singletons: SingletonStorage
    /// Keeps the factories alive; the resolve path reads them unretained through ``factoryRefs``.
    private let factories: [AnyFactory]
    let table: KeyTable
    @usableFromInline
    let isShutDown = Atomic<Bool>(false)

    // The flat resolution plan. Raw buffers, owned by the core and immutable after `init`, so reading
    // them costs no reference counting and no bounds bookkeeping on the resolve path.

    /// The key table, copied into one raw buffer of (identity, slot) pairs: see ``KeyTable``.
    @usableFromInline
    let keyEntries: UnsafeMutablePointer<KeyTable.Entry>
    @usableFromInline
    let keyMask: Int
    @usableFromInline
    let keyShift: UInt
    /// Per slot: the singleton's box, or nil (not a singleton, or not built yet).
    @usableFromInline
    let singletonRefs: UnsafeMutablePointer<Unmanaged<AnyBox>?>
    /// Per slot: the factory.
    @usableFromInline
    let factoryRefs: UnsafeMutableBufferPointer<Unmanaged<AnyFactory>>
    /// Per slot: its lifetime.
    @usableFromInline
    let lifetimes: UnsafeMutableBufferPointer<Lifetime>
    /// Per slot: whether it can be resolved without suspending (see ``Node/resolvesNow``).
    @usableFromInline
    let resolvesNow: UnsafeMutableBufferPointer<Bool>
    /// The dependencies of slot `s` are `dependencySlots[dependencyStart[s]..<dependencyStart[s + 1]]`.
    @usableFromInline
    let dependencyStart: UnsafeMutableBufferPointer<Int>
    @usableFromInline
    let dependencySlots: UnsafeMutableBufferPointer<Int>

    init(plan: GraphPlan) {
        self.plan = plan
        let nodes = Node.nodes(of: plan)
        self.nodes = nodes
        self.table = plan.table
        let entries = plan.table.entries
        self.keyEntries = .allocate(capacity: entries.count)
        keyEntries.initialize(from: entries, count: entries.count)
        self.keyMask = entries.count - 1
        self.keyShift = plan.table.shift
        self.singletons = SingletonStorage(count: plan.count)
        self.singletonRefs = singletons.base
        self.factories = nodes.map(\.factory)
        self.factoryRefs = .allocate(capacity: nodes.count)
        _ = factoryRefs.initialize(from: factories.lazy.map { Unmanaged.passUnretained($0) })
        self.lifetimes = .allocate(capacity: nodes.count)
        _ = lifetimes.initialize(from: nodes.lazy.map(\.lifetime))
        self.resolvesNow = .allocate(capacity: nodes.count)
        _ = resolvesNow.initialize(from: nodes.lazy.map(\.resolvesNow))
        var start: [Int] = []
        start.reserveCapacity(nodes.count + 1)
        var slots: [Int] = []
        for node in nodes {
            start.append(slots.count)
            slots.append(contentsOf: node.dependencies)
        }
        start.append(slots.count)
        self.dependencyStart = .allocate(capacity: start.count)
        _ = dependencyStart.initialize(from: start)
        self.dependencySlots = .allocate(capacity: max(slots.count, 1))
        _ = dependencySlots.initialize(from: slots)
    }

    deinit {
        keyEntries.deallocate()
        factoryRefs.deallocate()
        lifetimes.deallocate()
        resolvesNow.deallocate()
        dependencyStart.deallocate()
        dependencySlots.deallocate()
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
            let entry = keyEntries[index]
            if entry.identity == bits { return entry.slot }
            if entry.identity == 0 { return nil }
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

    /// The value at `slot`, made without suspending; see ``ResolutionPlan/valueNow(at:as:in:)``.
    @inlinable
    func valueNow<Key: ServiceKey>(at slot: Int, as key: Key.Type, in scope: ServiceScope?) throws -> Key.Value {
        try resolution.valueNow(at: slot, as: key, in: scope)
    }

    /// The value at `slot`, awaiting asynchronous factories and scoped instances.
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
            var arguments = Arguments(resolution, scope: scope, slot: slot)
            let make = unsafeDowncast(factoryRefs[slot].takeUnretainedValue(), to: Factory<Key.Value>.self).make
            do {
                return try await make(&arguments)
            } catch {
                throw failure(error, at: slot)
            }
        case .scoped:
            guard let scope else { throw ServiceGraphError(scopeRequired(slot)) }
            return try await scope.instance(at: slot, as: key)
        case .singleton:
            // Only during a failed build; a built graph has every singleton.
            throw requiresAwaitError(slot)
        }
    }

    /// Wraps a factory's error in a ``ServiceGraphError`` naming the service, or extends the path of
    /// one thrown deeper in the chain.
    @usableFromInline
    func failure(_ error: any Error, at slot: Int) -> ServiceGraphError {
        let name = nodes[slot].name
        if let error = error as? ServiceGraphError {
            guard error.problems.count == 1, let problem = error.problems.first else { return error }
            return ServiceGraphError(
                .init(
                    problem.code,
                    key: problem.key,
                    path: [name] + (problem.path.isEmpty ? [problem.key] : problem.path),
                    site: problem.site,
                    message: problem.message,
                    underlyingError: problem.underlyingError
                )
            )
        }
        return ServiceGraphError(
            .init(
                .factoryFailed,
                key: name,
                path: [name],
                site: nodes[slot].provider.site.site,
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
        let node = nodes[slot]
        let reason =
            node.lifetime == .scoped
            ? "it is scoped, and creating a scoped instance may suspend"
            : node.needsScope
                ? "it depends on a scoped service"
                : "its factory, or the factory of one of its dependencies, is async"
        return .init(
            .requiresAwait,
            key: node.name,
            site: node.provider.site.site,
            message: "\(node.name) cannot be resolved synchronously: \(reason); use `try await resolve`"
        )
    }

    @usableFromInline
    func scopeRequired(_ slot: Int) -> ServiceGraphError.Problem {
        let node = nodes[slot]
        return .init(
            .wrongLifetime,
            key: node.name,
            site: node.provider.site.site,
            message:
                "\(node.name) is \(node.lifetime == .scoped ? "scoped" : "transient and depends on a scoped service"); resolve it from a ServiceScope (graph.makeScope())"
        )
    }

    /// The error for a key that is not in the graph, naming the closest keys that are.
    func notFound(_ name: String, valueType: ObjectIdentifier) -> ServiceGraphError.Problem {
        let suggestions = NameSuggestions.closest(
            to: name,
            among: plan.providers.map { ($0.name, $0.key.valueTypeID == valueType) }
        )
        var message = "\(name) is not in this graph"
        if !suggestions.isEmpty {
            message += "; closest keys: \(suggestions.joined(separator: ", "))"
        }
        return .init(.keyNotFound, key: name, message: message)
    }

    /// The error for `key` missing from the graph (kept out of line: it is the cold path).
    @usableFromInline
    func notFoundError<Key: ServiceKey>(_ key: Key.Type) -> ServiceGraphError {
        ServiceGraphError(notFound(Key.serviceName, valueType: Key.valueTypeID))
    }

    @usableFromInline
    func shutDownError<Key: ServiceKey>(_ key: Key.Type) -> ServiceGraphError {
        ServiceGraphError(shutDownProblem(Key.serviceName))
    }

    @usableFromInline
    func cannotResolveNowError(_ slot: Int) -> ServiceGraphError {
        ServiceGraphError(nodes[slot].needsScope ? scopeRequired(slot) : requiresAwait(slot))
    }

    /// Traps with the message `resolve` would throw: the subscript's out-of-range access.
    @usableFromInline
    func trapNotSingleton<Key: ServiceKey>(_ key: Key.Type) -> Never {
        guard let slot = slot(of: key) else { preconditionFailure(notFoundError(key).description) }
        preconditionFailure(
            "ServiceGraph: \(Key.serviceName) is \(lifetimes[slot]), not a singleton; use `resolve`"
        )
    }

    func shutDownProblem(_ name: String) -> ServiceGraphError.Problem {
        .init(.graphShutDown, key: name, message: "\(name) was asked for after the graph was shut down")
    }
}
