extension ServiceGraph.Builder {
    /// Replaces the provider of `key`, keeping every other provider: the way a test swaps in a double.
    ///
    /// Every service that depends on `key` gets the override's value; the factory is type-checked
    /// against the key's `Value` like any provider's. Overriding a key that was never provided is a
    /// validation error (``ServiceGraphError/Code/overrideOfUnknownKey``), as a typo would otherwise
    /// silently test the real service.
    ///
    /// ```swift
    /// var test = ServiceGraph.Builder.application   // a copy: the app's wiring, not its instances
    /// test.override(DatabaseKey.self) { InMemoryDatabase() }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key whose provider to replace.
    ///   - lifetime: The override's lifetime; by default the one of the provider it replaces.
    ///   - dependencies: The keys whose values the factory receives.
    ///   - fileID: Where the provider is registered, for errors and dumps; the caller's file by default.
    ///   - line: The line of the registration; the caller's line by default.
    ///   - factory: Makes the replacement from its dependencies' values.
    @inlinable
    @inline(__always)
    public mutating func override<Key: ServiceKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime? = nil,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable (repeat (each Dependency).Value) throws -> Key.Value
    ) {
        _addProvider(
            key,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: true,
            factory: factory
        )
    }

    /// Replaces the provider of `key` with an asynchronous factory; see the synchronous overload.
    @inlinable
    @inline(__always)
    public mutating func override<Key: ServiceKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime? = nil,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable (repeat (each Dependency).Value) async throws -> Key.Value
    ) {
        _addProvider(
            key,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: true,
            factory: factory
        )
    }

    /// Replaces the provider of `key` with a value made by the caller, as a singleton.
    ///
    /// The caller keeps its own reference to `value`, typed as the double it is, so a test reads back
    /// what the double recorded without casting.
    @inlinable
    @inline(__always)
    public mutating func override<Key: ServiceKey>(
        _ key: Key.Type,
        with value: Key.Value,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) {
        _addProvider(key, lifetime: .singleton, fileID: fileID, line: line, isOverride: true) { value }
    }
}

extension ServiceGraph.Builder {
    /// Replaces the provider of `key` with a test double, and returns a key under which the graph
    /// holds the double with its own type, so a test reads back what it recorded without casting.
    ///
    /// ```swift
    /// let mailer = test.override(MailerKey.self, withDouble: { RecordingMailer() }, as: { $0 })
    /// let graph = try await test.build()
    /// // ... exercise the services that send mail ...
    /// #expect(graph[mailer].sent.count == 1)      // a RecordingMailer, typed
    /// ```
    ///
    /// The double is a singleton; `key` keeps the lifetime of the provider it replaces. The `as`
    /// closure turns the double into the key's `Value` (usually `{ $0 }`), checked by the compiler.
    ///
    /// As with `override`, the last override of a key wins: a second double for `key` replaces the
    /// first, whose ``DoubleKey`` is then no longer in the graph.
    ///
    /// - Returns: The key of the double in the graph.
    @discardableResult
    public mutating func override<Key: ServiceKey, Double: Sendable>(
        _ key: Key.Type,
        withDouble makeDouble: @escaping @Sendable () -> Double,
        as upcast: @escaping @Sendable (Double) -> Key.Value,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> DoubleKey<Key, Double>.Type {
        registrations.removeAll { registration in
            (registration.key as? any TestDoubleKey.Type)?.originalKeyID == Key._keyID
        }
        provide(DoubleKey<Key, Double>.self, fileID: fileID, line: line, factory: makeDouble)
        override(key, dependsOn: DoubleKey<Key, Double>.self, fileID: fileID, line: line) { upcast($0) }
        return DoubleKey<Key, Double>.self
    }
}
