/// A child of a ``ServiceGraph`` that owns one instance of each ``Lifetime/scoped`` service, such as a
/// logged-in user's session or one request.
///
/// A scope creates each scoped instance on first use, exactly once even when many tasks ask at the
/// same moment, and releases them together, in reverse creation order, when it closes. Scoped
/// services may depend on the graph's singletons and on other scoped services, never the reverse.
///
/// ```swift
/// let request = try graph.makeScope()
/// let session = try await request.resolve(SessionKey.self)
/// try await request.close()
/// ```
public final class ServiceScope: Sendable {
    /// The scope itself, which the graph holds too while the scope is open (see ``_ScopeBody``).
    @usableFromInline
    let _body: _ScopeBody
    /// The graph's core, which the body has too: kept here for the inlined resolve path, which reads a
    /// handle's field without a retain where it would retain one read through the body's memory.
    @usableFromInline
    let _core: _GraphCore

    init(_ body: _ScopeBody) {
        self._body = body
        self._core = body.core
    }

    /// A scope released without ``close()`` releases its instances, most recent first; the hooks it
    /// owed run in a task of their own, which the graph's shutdown waits for.
    deinit {
        _body.handleDropped()
    }

    /// The graph's singleton for `key`; see ``ServiceGraph/subscript(_:)``.
    ///
    /// Works as long as the scope does, even after the last reference to the graph is gone: the
    /// scope keeps the graph's services alive.
    ///
    /// - Complexity: O(1), no lock.
    public subscript<Key: ServiceKey>(key: Key.Type) -> Key.Value {
        _core.singletonOrTrap(key)
    }

    /// Resolves `key` in this scope: the scope's instance of a scoped service (created on first use),
    /// a new transient, or a singleton of the graph.
    ///
    /// A factory or `didAdd` must not ask the scope for the instance it is making, directly or through
    /// other services: the scope refuses with ``ServiceGraphError/Code/reentrantResolution`` rather than
    /// wait for itself, forgets the failed instance, and stays usable.
    ///
    /// - Throws: ``ServiceGraphError``: ``ServiceGraphError/Code/scopeClosed`` after ``close()``,
    ///   ``ServiceGraphError/Code/keyNotFound``, ``ServiceGraphError/Code/reentrantResolution``, or the
    ///   failing factory or `didAdd` with its path.
    /// - Complexity: O(1) for an existing scoped instance (no lock); one factory call per new
    ///   instance in the chain.
    @inlinable
    @inline(__always)
    nonisolated(nonsending) public func resolve<Key: ServiceKey>(_ key: Key.Type) async throws -> Key.Value {
        try await _body.resolve(key, core: _core)
    }

    /// Resolves `key` without suspending: a singleton, a seed of the scope, or a transient whose chain is
    /// synchronous and needs no scoped service but seeds.
    ///
    /// - Throws: ``ServiceGraphError``, as ``ServiceGraph/resolveSynchronously(_:)``, with
    ///   ``ServiceGraphError/Code/requiresAwait`` naming the scoped service in the way, and
    ///   ``ServiceGraphError/Code/scopeClosed`` after ``close()``.
    /// - Complexity: As ``ServiceGraph/resolveSynchronously(_:)``: a chain of any depth.
    @inlinable
    public func resolveSynchronously<Key: ServiceKey>(_ key: Key.Type) throws -> Key.Value {
        try _body.resolveSynchronously(key, core: _core)
    }

    /// Closes the scope: waits for instances being created, then calls ``LifecycleHooks/willRemove()``
    /// on each scoped instance in reverse creation order and releases them.
    ///
    /// Cancelling the calling task does not cut the cleanup short: every hook still runs, bounded by
    /// ``ServiceGraph/Builder/hookTimeout`` only.
    ///
    /// Runs on the caller's executor, as ``resolve(_:)`` does: a request handler closing its scope does
    /// not hop to the global executor and back. A scope with nothing in flight and no hooks owed closes
    /// without suspending.
    ///
    /// - Throws: ``ServiceGraphError/Code/scopeClosed`` when the scope was already closed (by this call or
    ///   by the graph's shutdown), or at once, saying "already closing", while another close or the
    ///   shutdown is closing it: that one runs the hooks and reports their failures (waiting for it would
    ///   never end when one of those hooks asks); ``ServiceGraphError/Code/reentrantResolution``, the
    ///   scope left open, when a factory or `didAdd` making one of this scope's instances (or a transient
    ///   resolved in it) asks: the close would wait for it forever; otherwise every `willRemove` failure,
    ///   together.
    @inlinable
    nonisolated(nonsending) public func close() async throws(ServiceGraphError) {
        // Inlined into the caller: the usual close (nothing in flight, no hook owed) is a synchronous
        // call, with no asynchronous frame to allocate; the rest awaits.
        if _body._closeIfIdle() { return }
        try await _body.close()
    }

    /// Opens a scope of `kind` inside this one, given the values of that kind's seeds: `kind` must be
    /// declared inside this scope's kind (``ScopeKind/init(_:inside:)``). The new scope reads this one's
    /// scoped services and seeds, keeps this one alive, and is closed before it.
    ///
    /// ```swift
    /// let session = try graph.makeScope(.session, seeding: ScopeSeed(SessionUserKey.self, user))
    /// let request = try session.makeScope(.request, seeding: ScopeSeed(IncomingRequestKey.self, incoming))
    /// let checkout = try await request.resolve(CheckoutKey.self)   // the session's cart, this request
    /// ```
    ///
    /// Opened while the graph shuts down, the new scope may come back closed, as a scope the graph opens
    /// does (see ``ServiceGraph/makeScope()``), even if this one began closing meanwhile (the shutdown
    /// released the seeds); this one then has nothing of it left to close.
    ///
    /// - Throws: As ``ServiceGraph/makeScope(_:seeding:)-(ScopeKind,ScopeSeed...)``, and
    ///   ``ServiceGraphError/Code/scopeClosed`` when this scope is closed or closing. When this throws, the
    ///   seeds stay the caller's: no hook runs on them.
    public func makeScope(_ kind: ScopeKind, seeding seeds: ScopeSeed...) throws(ServiceGraphError) -> ServiceScope {
        try makeScope(kind, seeding: seeds)
    }

    /// Opens a scope of `kind` inside this one given the value of its one seed, without an array of seeds;
    /// see ``makeScope(_:seeding:)-(ScopeKind,ScopeSeed...)``.
    public func makeScope(_ kind: ScopeKind, seeding seed: ScopeSeed) throws(ServiceGraphError) -> ServiceScope {
        try _body.makeScope(kind, seeding: seed, from: self)
    }

    /// Opens a scope of `kind` inside this one given its seeds, as an array; see
    /// ``makeScope(_:seeding:)-(ScopeKind,ScopeSeed...)``.
    public func makeScope(_ kind: ScopeKind, seeding seeds: [ScopeSeed]) throws(ServiceGraphError) -> ServiceScope {
        try _body.makeScope(kind, seeding: seeds, from: self)
    }

    /// The scope's kind.
    public var scopeKind: ScopeKind { _body.scopeKind }

    /// Whether ``close()`` has been called (or the graph has shut down, or the scope is closing).
    public var isClosed: Bool { _body.isClosed }
}
