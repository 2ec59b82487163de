/// A provider dependency: `dependsOn: Provider<RequestHandlerKey>.self` gives the factory a function
/// that resolves the key on each call, a new instance of a transient each time.
///
/// ```swift
/// builder.provide(ServerKey.self, dependsOn: Provider<RequestHandlerKey>.self) { makeHandler in
///     Server { request in try await makeHandler().handle(request) }
/// }
/// ```
///
/// The graph checks the edge like any other, with one difference: nothing is made with the dependent,
/// so a singleton may hold a provider of a transient (it makes a new one each call), though not of a
/// scoped service (which belongs to one scope: a captive dependency). A cycle through a provider is
/// still reported. A provider made in a scope resolves in that scope; one made by a singleton, in the
/// graph.
///
/// A provider does not keep its graph or scope alive: called after the graph is shut down or the
/// scope closed, it throws ``ServiceGraphError/Code/graphShutDown`` or
/// ``ServiceGraphError/Code/scopeClosed``.
public struct Provider<Key: ServiceKey>: ServiceKey, Sendable {
    public typealias Value = Provider<Key>

    @usableFromInline
    let handle: _ServiceHandle

    @usableFromInline
    init(handle: _ServiceHandle) {
        self.handle = handle
    }

    /// Resolves the key: a new instance of a transient, the scope's instance of a scoped service, or the
    /// singleton.
    ///
    /// - Throws: ``ServiceGraphError``, as ``ServiceGraph/resolve(_:)`` or ``ServiceScope/resolve(_:)``
    ///   does.
    nonisolated(nonsending) public func callAsFunction() async throws -> Key.Value {
        try await handle.resolve(Key.self)
    }

    /// Resolves the key without suspending, where its chain allows (see
    /// ``ServiceGraph/resolveSynchronously(_:)`` and ``ServiceScope/resolveSynchronously(_:)``: a scoped
    /// service that is not a seed always needs `await`, created or not).
    public func resolveSynchronously() throws -> Key.Value {
        try handle.resolveSynchronously(Key.self)
    }

    /// `Provider<Key>`.
    public static var serviceName: String { "Provider<\(Key.serviceName)>" }

    @_documentation(visibility: private)
    @inlinable
    public static var _dependencyKind: _DependencyKind { .provider }

    @_documentation(visibility: private)
    @inlinable
    public static var _dependencyTarget: any ServiceKey.Type { Key.self }

    @_documentation(visibility: private)
    @inlinable
    public static func _dependencyValue<Reader: _DependencyReading>(from reader: inout Reader) throws -> Value {
        Provider(handle: reader._nextHandle(Key.self))
    }
}

/// Where a ``Provider`` resolves its key: the graph, or the scope it was made in, held weakly (a
/// singleton holding a provider must not keep its own graph alive).
///
/// Not API.
@_documentation(visibility: private)
public struct _ServiceHandle: Sendable {
    private weak let core: _GraphCore?
    private weak let scope: _ScopeBody?
    /// Whether the handle was made in a scope (then a scope that is gone is closed).
    private let isInScope: Bool

    init(core: _GraphCore, scope: _ScopeBody?) {
        self.core = core
        self.scope = scope
        self.isInScope = scope != nil
    }

    nonisolated(nonsending) func resolve<Key: ServiceKey>(_ key: Key.Type) async throws -> Key.Value {
        if isInScope { return try await resolveInScope(key) }
        guard let core else { throw ServiceGraphError(Self.graphGone(Key.serviceName)) }
        guard let slot = core.slot(of: key) else { throw core.notFoundError(key) }
        guard !core.isShutDown() else { throw core.shutDownError(key) }
        if core.resolvesSynchronously(slot) { return try core.valueSynchronously(at: slot, as: key, in: nil) }
        return _unsafeValue(of: try await core.boxAwaiting(at: slot, in: nil), as: Key.Value.self)
    }

    /// ``resolve(_:)`` for a handle made in a scope: out of line, so that the graph's handles, the usual
    /// ones, await in a frame of their own size (the scope's resolve, inlined, made it larger than the
    /// task's first slab of memory: an allocation per call).
    @inline(never)
    private nonisolated(nonsending) func resolveInScope<Key: ServiceKey>(_ key: Key.Type) async throws -> Key.Value {
        guard let scope else { throw ServiceGraphError(Self.scopeGone(Key.serviceName)) }
        return try await scope.resolve(key, core: scope.core)
    }

    /// The instance for `key` as the graph or scope holds it (see ``_AnyBox``): what a ``Lazy`` keeps.
    nonisolated(nonsending) func box<Key: ServiceKey>(of key: Key.Type) async throws -> _AnyBox {
        if isInScope {
            guard let scope else { throw ServiceGraphError(Self.scopeGone(Key.serviceName, lazy: true)) }
            guard let slot = scope.core.slot(of: key) else { throw scope._notFoundError(key) }
            return try await scope._box(at: slot, key: key)
        }
        guard let core else { throw ServiceGraphError(Self.graphGone(Key.serviceName, lazy: true)) }
        guard let slot = core.slot(of: key) else { throw core.notFoundError(key) }
        guard !core.isShutDown() else { throw core.shutDownError(key) }
        return try await core.boxAwaiting(at: slot, in: nil)
    }

    func resolveSynchronously<Key: ServiceKey>(_ key: Key.Type) throws -> Key.Value {
        if isInScope {
            guard let scope else { throw ServiceGraphError(Self.scopeGone(Key.serviceName)) }
            return try scope.resolveSynchronously(key, core: scope.core)
        }
        guard let core else { throw ServiceGraphError(Self.graphGone(Key.serviceName)) }
        guard let slot = core.slot(of: key) else { throw core.notFoundError(key) }
        guard !core.isShutDown() else { throw core.shutDownError(key) }
        guard core.resolvesSynchronously(slot) else {
            return try core.valueNotResolvableSynchronously(at: slot, as: Key.Value.self)
        }
        return try core.valueSynchronously(at: slot, as: key, in: nil)
    }

    private static func scopeGone(_ name: String, lazy: Bool = false) -> ServiceGraphError.Problem {
        let what = lazy ? "a lazy handle of \(name) was first used" : "a provider of \(name) was called"
        return .init(.scopeClosed, key: name, message: "\(what) after its scope was released")
    }

    private static func graphGone(_ name: String, lazy: Bool = false) -> ServiceGraphError.Problem {
        let what = lazy ? "a lazy handle of \(name) was first used" : "a provider of \(name) was called"
        return .init(.graphShutDown, key: name, message: "\(what) after its graph was released")
    }
}
