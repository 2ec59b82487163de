public import Synchronization

/// The immutable heart of a built graph: the key table, a flat resolution plan, and the singletons.
///
/// Everything the resolve path touches is a flat array indexed by slot, so resolving is a table lookup
/// and a few array reads, with no hashing of strings, no locks and no allocation for singletons. The
/// only mutable state is the shutdown flag, an atomic.
@usableFromInline
final class GraphCore: Sendable {
    let plan: GraphPlan
    let nodes: [Node]
    @usableFromInline
    let table: KeyTable
    @usableFromInline
    let singletons: SingletonStorage
    /// Per slot: its lifetime.
    @usableFromInline
    let lifetimes: [Lifetime]
    /// Per slot: whether it can be resolved without suspending (see ``Node/resolvesNow``).
    @usableFromInline
    let resolvesNow: [Bool]
    /// Per slot: its factory.
    @usableFromInline
    let factories: [AnyFactory]
    /// The dependencies of slot `s` are `dependencySlots[dependencyStart[s]..<dependencyStart[s + 1]]`.
    @usableFromInline
    let dependencyStart: [Int]
    @usableFromInline
    let dependencySlots: [Int]
    @usableFromInline
    let isShutDown = Atomic<Bool>(false)

    init(plan: GraphPlan) {
        self.plan = plan
        let nodes = Node.nodes(of: plan)
        self.nodes = nodes
        self.table = plan.table
        self.singletons = SingletonStorage(count: plan.count)
        self.lifetimes = nodes.map(\.lifetime)
        self.resolvesNow = nodes.map(\.resolvesNow)
        self.factories = nodes.map(\.factory)
        var start: [Int] = []
        start.reserveCapacity(nodes.count + 1)
        var slots: [Int] = []
        for node in nodes {
            start.append(slots.count)
            slots.append(contentsOf: node.dependencies)
        }
        start.append(slots.count)
        self.dependencyStart = start
        self.dependencySlots = slots
    }

    /// The slot of `key`, or nil.
    ///
    /// - Complexity: O(1) on average.
    @inlinable
    func slot<Key: ServiceKey>(of key: Key.Type) -> Int? {
        table.slot(for: Key.keyID)
    }

    /// The factory at `slot`, which makes a `Value` (guaranteed by construction).
    @inlinable
    func factory<Value>(at slot: Int, making: Value.Type) -> Factory<Value> {
        unsafeDowncast(factories[slot], to: Factory<Value>.self)
    }

    /// The value at `slot`, made without suspending (singletons and synchronous transients).
    ///
    /// The caller has checked ``resolvesNow`` for the service it resolves, which covers its chain.
    @inlinable
    func valueNow<Key: ServiceKey>(at slot: Int, as key: Key.Type, in scope: ServiceScope?) throws -> Key.Value {
        if let box = singletons.box(at: slot) {
            return unsafeDowncast(box, to: Box<Key.Value>.self).value
        }
        guard lifetimes[slot] == .transient, let make = factory(at: slot, making: Key.Value.self).makeNow else {
            throw requiresAwaitError(slot)
        }
        var arguments = Arguments(core: self, scope: scope, slot: slot)
        do {
            return try make(&arguments)
        } catch {
            throw failure(error, at: slot)
        }
    }

    /// The value at `slot`, awaiting asynchronous factories and scoped instances.
    @inlinable
    nonisolated(nonsending) func value<Key: ServiceKey>(
        at slot: Int,
        as key: Key.Type,
        in scope: ServiceScope?
    ) async throws -> Key.Value {
        if let box = singletons.box(at: slot) {
            return unsafeDowncast(box, to: Box<Key.Value>.self).value
        }
        switch lifetimes[slot] {
        case .transient:
            var arguments = Arguments(core: self, scope: scope, slot: slot)
            do {
                return try await factory(at: slot, making: Key.Value.self).make(&arguments)
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
