extension ServiceGraph.Builder {
    /// Declares `key` as a seed: a value each ``ServiceScope`` is given when it is made, such as the
    /// logged-in user of a session or the request being served.
    ///
    /// A seed is part of the graph like any provider: scoped and transient providers depend on it by
    /// its key, validation checks those edges (a singleton that depends on a seed is a captive
    /// dependency, as it would outlive the scope), and dumps draw it. Its value comes from
    /// ``ServiceGraph/makeScope(seeding:)-(ScopeSeed...)``, which refuses a scope that is not given every seed.
    ///
    /// ```swift
    /// builder.seed(SessionUserKey.self)
    /// builder.provide(CartKey.self, lifetime: .scoped, dependsOn: SessionUserKey.self) { user in Cart(owner: user) }
    /// let graph = try await builder.build()
    /// let session = try graph.makeScope(seeding: ScopeSeed(SessionUserKey.self, user))
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key whose value each scope is given.
    ///   - fileID: Where the seed is declared, for errors and dumps; the caller's file by default.
    ///   - line: The line of the declaration; the caller's line by default.
    public mutating func seed<Key: ServiceKey>(
        _ key: Key.Type,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) {
        var registration = Registration(
            key: key,
            lifetime: .scoped,
            dependencies: _DependencyKeys(),
            site: SiteLiteral(fileID: fileID, line: line),
            factory: _AnyFactory(Key.Value.self) { _, _ in throw ServiceGraphError.seedNotGiven(Key.serviceName) },
            isOverride: false
        )
        registration.isSeed = true
        registration.scopeKind = currentScopeKind
        registration.module = currentModule
        registration.isWrapperKey = Key._dependencyKind != .direct
        registrations.append(consume registration)
    }
}

extension ServiceGraph.Builder {
    /// Registers, in `body`, the scoped services and seeds of scopes of `kind`: each scope of that
    /// kind has its own instances and is given its own seeds; scopes of kinds nested inside it read
    /// them. Singletons and transients registered in `body` are the graph's, as anywhere else.
    ///
    /// ```swift
    /// builder.inScope(.session) { session in
    ///     session.seed(SessionUserKey.self)
    ///     session.provide(CartKey.self, lifetime: .scoped, dependsOn: SessionUserKey.self) { Cart(owner: $0) }
    /// }
    /// builder.inScope(.request) { request in
    ///     request.seed(IncomingRequestKey.self)
    ///     request.provide(CheckoutKey.self, lifetime: .scoped, dependsOn: IncomingRequestKey.self, CartKey.self) {
    ///         Checkout(request: $0, cart: $1)
    ///     }
    /// }
    /// let session = try graph.makeScope(.session, seeding: ScopeSeed(SessionUserKey.self, user))
    /// let request = try session.makeScope(.request, seeding: ScopeSeed(IncomingRequestKey.self, incoming))
    /// ```
    ///
    /// Validation refuses a scoped service that depends on one of a kind its scopes are not within
    /// (a session's service on a request's: ``ServiceGraphError/Code/captiveDependency``).
    public mutating func inScope(_ kind: ScopeKind, _ body: (inout Self) throws -> Void) rethrows {
        let outer = currentScopeKind
        currentScopeKind = scopeKindIndex(kind)
        defer { currentScopeKind = outer }
        try body(&self)
    }

    /// The index of `kind` in the registrations' kinds, added if new (and its parents first).
    private mutating func scopeKindIndex(_ kind: ScopeKind) -> UInt16 {
        if let parent = kind.parent { _ = scopeKindIndex(parent) }
        if let index = registrations.scopeKinds.firstIndex(of: kind) { return UInt16(index) }
        precondition(registrations.scopeKinds.count < Int(UInt16.max), "too many kinds of scope")
        registrations.scopeKinds.append(kind)
        return UInt16(registrations.scopeKinds.count - 1)
    }
}
