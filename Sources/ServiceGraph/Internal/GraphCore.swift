import Synchronization

/// The immutable heart of a built graph: nodes by slot, the key table, and the singleton instances.
///
/// Everything the resolve path touches lives here, so resolving is a table lookup and a few array
/// reads. The only mutable state is the shutdown flag, an atomic.
final class GraphCore: Sendable {
    let plan: GraphPlan
    let nodes: [Node]
    let singletons: SingletonStorage
    let isShutDown = Atomic<Bool>(false)

    init(plan: GraphPlan) {
        self.plan = plan
        self.nodes = Node.nodes(of: plan)
        self.singletons = SingletonStorage(count: plan.count)
    }

    /// The slot of `key`, or nil.
    ///
    /// - Complexity: O(1) on average.
    func slot<Key: ServiceKey>(of key: Key.Type) -> Int? {
        plan.table.slot(for: Key.keyID)
    }

    /// The value at `slot`, made without suspending (singletons and synchronous transients).
    func valueNow<Key: ServiceKey>(at slot: Int, as key: Key.Type, in scope: ServiceScope?) throws -> Key.Value {
        let node = nodes[slot]
        switch node.lifetime {
        case .singleton:
            return singletons.value(at: slot, as: Key.Value.self)
        case .transient:
            guard let make = unsafeDowncast(node.factory, to: Factory<Key.Value>.self).makeNow else {
                throw ServiceGraphError(requiresAwait(slot))
            }
            var arguments = Arguments(core: self, scope: scope, slots: node.dependencies)
            do {
                return try make(&arguments)
            } catch {
                throw failure(error, at: slot)
            }
        case .scoped:
            throw ServiceGraphError(requiresAwait(slot))
        }
    }

    /// The value at `slot`, awaiting asynchronous factories and scoped instances.
    func value<Key: ServiceKey>(at slot: Int, as key: Key.Type, in scope: ServiceScope?) async throws -> Key.Value {
        let node = nodes[slot]
        switch node.lifetime {
        case .singleton:
            return singletons.value(at: slot, as: Key.Value.self)
        case .transient:
            var arguments = Arguments(core: self, scope: scope, slots: node.dependencies)
            do {
                return try await unsafeDowncast(node.factory, to: Factory<Key.Value>.self).make(&arguments)
            } catch {
                throw failure(error, at: slot)
            }
        case .scoped:
            guard let scope else { throw ServiceGraphError(scopeRequired(slot)) }
            return try await scope.instance(at: slot, as: key)
        }
    }

    /// Wraps a factory's error in a ``ServiceGraphError`` naming the service, or extends the path of
    /// one thrown deeper in the chain.
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

    func shutDownProblem(_ name: String) -> ServiceGraphError.Problem {
        .init(.graphShutDown, key: name, message: "\(name) was asked for after the graph was shut down")
    }
}
