/// The text of every problem the resolve path reports: the core calls these on its cold paths.
extension _GraphCore {
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
            return ServiceGraphError(problem.prepending(key(at: slot)))
        }
        let name = name(slot)
        return ServiceGraphError(
            .init(
                .factoryFailed,
                key: name,
                path: [name],
                site: site(slot),
                message: "the factory of \(name)\(moduleSuffix(slot)) threw: \(error)",
                underlyingError: error
            )
        )
    }

    /// " (module Payments)" for a service a module registered; nothing otherwise.
    func moduleSuffix(_ slot: Int) -> String {
        guard let module = slotModules?[slot], module != 0 else { return "" }
        return " (module \(modules[Int(module)].name))"
    }

    @usableFromInline
    func requiresAwaitError(_ slot: Int) -> ServiceGraphError {
        ServiceGraphError(requiresAwait(slot))
    }

    func requiresAwait(_ slot: Int) -> ServiceGraphError.Problem {
        let name = name(slot)
        let reason =
            lifetime(of: slot) == .scoped
            ? "it is scoped, and creating a scoped instance may suspend"
            : isDeferred(slot)
                ? "it is created on first use (only lazy dependencies reach it), and creating it may suspend"
                : needsScope(slot)
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
        let what =
            isSeed(slot)
            ? "a seed, given to each scope"
            : lifetime(of: slot) == .scoped ? "scoped" : "transient and depends on a scoped service"
        let open = seedSlots.isEmpty ? "graph.makeScope()" : "graph.makeScope(seeding:)"
        return .init(
            .wrongLifetime,
            key: name,
            site: site(slot),
            message: "\(name) is \(what); resolve it from a ServiceScope (\(open))"
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
        let (identities, keyNames) = (identities, keyNames)
        return .init(.keyNotFound, key: name) {
            NameSuggestions.notFoundMessage(
                for: name,
                key: key,
                valueType: valueType,
                among: identities.keys,
                named: keyNames
            )
        }
    }

    /// The error for `key` missing from the graph (kept out of line: it is the cold path).
    @usableFromInline
    func notFoundError<Key: ServiceKey>(_ key: Key.Type) -> ServiceGraphError {
        ServiceGraphError(notFound(Key.serviceName, valueType: Key.valueTypeID, key: key))
    }

    /// The error for a `resolve` of `key` that cannot go on: `key` missing from the graph
    /// (`isProvided` false), or the graph shut down. One cold call for both, which every inlined
    /// `resolve` carries.
    @usableFromInline
    func unresolvableError<Key: ServiceKey>(_ key: Key.Type, isProvided: Bool) -> ServiceGraphError {
        isProvided ? shutDownError(key) : notFoundError(key)
    }

    @usableFromInline
    func shutDownError<Key: ServiceKey>(_ key: Key.Type) -> ServiceGraphError {
        ServiceGraphError(shutDownProblem(Key.serviceName))
    }

    func shutDownError(at slot: Int) -> ServiceGraphError {
        ServiceGraphError(shutDownProblem(name(slot)))
    }

    @usableFromInline
    func cannotResolveSynchronouslyError(_ slot: Int) -> ServiceGraphError {
        ServiceGraphError(needsScope(slot) ? scopeRequired(slot) : requiresAwait(slot))
    }

    /// The error for a service a scope cannot resolve without suspending: a scoped service, or one that
    /// depends on one, named with the path to it; or a chain with an asynchronous factory.
    @usableFromInline
    func cannotResolveSynchronouslyInScopeError(_ slot: Int) -> ServiceGraphError {
        let name = name(slot)
        let path = pathToScopedService(from: slot)
        let reason =
            switch path.count {
            case 0: "its factory, or the factory of one of its dependencies, is async"
            case 1: "it is scoped, and creating a scoped instance may suspend"
            default: "it depends on the scoped service \(path.last!), whose creation may suspend"
            }
        return ServiceGraphError(
            .init(
                .requiresAwait,
                key: name,
                path: path,
                site: site(slot),
                message: "\(name) cannot be resolved synchronously: \(reason); use `try await scope.resolve`"
            )
        )
    }

    /// The shortest path of names from `slot` to a scoped service that is not a seed (a seed is always in
    /// place), breadth first; empty when there is none.
    private func pathToScopedService(from slot: Int) -> [String] {
        let path = shortestPath(
            from: slot,
            to: { lifetime(of: $0) == .scoped && !isSeed($0) },
            through: { lifetime(of: $0) != .scoped }
        )
        return path?.map(name) ?? []
    }

    /// The shortest path of slots from `slot` (first) to the nearest service `isTarget` accepts (last),
    /// breadth first through the dependencies of the services `expands` accepts; nil when there is
    /// none. For error messages: cold.
    func shortestPath(from slot: Int, to isTarget: (Int) -> Bool, through expands: (Int) -> Bool) -> [Int]? {
        var parent = [slot: slot]
        var queue = [slot]
        var head = 0
        while head < queue.count {
            let current = queue[head]
            head += 1
            if isTarget(current) {
                var path = [current]
                while path.last! != slot { path.append(parent[path.last!]!) }
                return path.reversed()
            }
            guard expands(current) else { continue }
            for dependency in dependencies(of: current) where parent[dependency] == nil {
                parent[dependency] = current
                queue.append(dependency)
            }
        }
        return nil
    }

    /// Traps with the message `resolve` would throw: the subscript's out-of-range access.
    @usableFromInline
    func trapNotSingleton<Key: ServiceKey>(_ key: Key.Type) -> Never {
        // `fatalError`, not `preconditionFailure`: `-O` drops the message of the latter.
        guard let slot = slot(of: key) else { fatalError(notFoundError(key).description) }
        if isDeferred(slot) {
            fatalError(
                "ServiceGraph: \(Key.serviceName) is a singleton created on first use, not created yet; use `resolve`"
            )
        }
        fatalError("ServiceGraph: \(Key.serviceName) is \(lifetime(of: slot)), not a singleton; use `resolve`")
    }

    func shutDownProblem(_ name: String) -> ServiceGraphError.Problem {
        .init(.graphShutDown, key: name, message: "\(name) was asked for after the graph was shut down")
    }
}

extension _GraphCore {
    /// The singleton at `slot`, created on first use, if it is created; otherwise the error a resolve
    /// without suspending gets (its creation may suspend). For the paths that read it in place.
    @usableFromInline
    func createdDeferredValue<Value: Sendable>(at slot: Int, as type: Value.Type) throws -> Value {
        // Anything else is an empty singleton slot, seen only by a factory a failed build abandoned.
        guard isDeferred(slot) else { throw CancellationError() }
        guard let box = deferredSingletons?.createdBox(at: slot) else { throw requiresAwaitError(slot) }
        return box.value(as: Value.self)
    }

    /// The value at `slot` for a resolve without suspending whose chain may suspend: a singleton created
    /// on first use that is created by now, or the error (out of line: the cold path).
    @usableFromInline
    func valueNotResolvableSynchronously<Value: Sendable>(at slot: Int, as type: Value.Type) throws -> Value {
        if isDeferred(slot), let box = deferredSingletons?.createdBox(at: slot) { return box.value(as: Value.self) }
        throw cannotResolveSynchronouslyError(slot)
    }

    /// The box of the singleton for `key` that the subscript did not find: one created on first use and
    /// created by now (its box stays in ``deferredSingletons`` while the core lives), or a trap.
    @usableFromInline
    func createdDeferredBoxOrTrap<Key: ServiceKey>(_ key: Key.Type) -> Unmanaged<_AnyBox> {
        if let slot = slot(of: key), isDeferred(slot), let box = deferredSingletons?.createdBox(at: slot) {
            return box.box
        }
        trapNotSingleton(key)
    }
}

extension _GraphCore {
    /// The index of `kind` in ``scopeKinds``, for a scope of it opened from a scope of the kind at
    /// `outer` (an index), or from the graph when `outer` is nil.
    ///
    /// - Throws: ``ServiceGraphError/Code/wrongScopeKind`` when the graph has no services of `kind`, or
    ///   `kind` does not open there.
    @inline(never)
    func scopeKindIndex(opening kind: ScopeKind, inside outer: UInt16?) throws(ServiceGraphError) -> UInt16 {
        // The usual case, a kind the graph has opened where it opens, in a plain loop: a server runs this
        // once per request, with cold caches. What is wrong is found out of line.
        for index in scopeKinds.indices where scopeKinds[index].isSame(as: kind) {
            if kind.isOpened(from: outer.map { scopeKinds[Int($0)] }) { return UInt16(index) }
            break
        }
        throw scopeKindError(opening: kind, inside: outer)
    }

    /// The index of `kind` in ``scopeKinds``, for a scope of it opened from the graph: as
    /// ``scopeKindIndex(opening:inside:)`` with no outer kind. Its usual case, a kind declared without a
    /// parent and given as a copy of the value the graph was built with (a `static let`), is a short
    /// loop inlined where the scope is opened, one comparison per kind: a server opens a scope per
    /// request, with cold caches.
    @inline(__always)
    func scopeKindIndex(openingFromGraph kind: ScopeKind) throws(ServiceGraphError) -> UInt16 {
        for index in scopeKinds.indices where kind.isOpenedFromGraph && scopeKinds[index].isCopy(of: kind) {
            return UInt16(truncatingIfNeeded: index)
        }
        return try scopeKindIndex(opening: kind, inside: nil)
    }

    /// Why `kind` cannot be opened from a scope of the kind at `outer` (or from the graph when nil).
    @inline(never)
    private func scopeKindError(opening kind: ScopeKind, inside outer: UInt16?) -> ServiceGraphError {
        guard scopeKinds.contains(kind) else {
            return ServiceGraphError(
                .init(
                    .wrongScopeKind,
                    key: kind.description,
                    message: "the graph has no \(kind) scopes: register their services and seeds in "
                        + "builder.inScope(_:_:)"
                )
            )
        }
        let place = outer.map { "a \(scopeKinds[Int($0)]) scope" } ?? "the graph"
        let opener =
            kind.parent.map { "a \($0) scope: use makeScope(_:seeding:) on one" }
            ?? "the graph: use graph.makeScope(_:seeding:)"
        return ServiceGraphError(
            .init(
                .wrongScopeKind,
                key: kind.description,
                message: "\(kind) scopes cannot be opened from \(place); they are opened from \(opener)"
            )
        )
    }
}
