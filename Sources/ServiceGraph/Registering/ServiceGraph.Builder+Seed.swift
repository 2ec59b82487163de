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
        registration.isWrapperKey = Key._dependencyKind != .direct
        registrations.append(consume registration)
    }
}
