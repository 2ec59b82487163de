// Fixed-arity overloads of `provide` for synchronous factories with up to four dependencies.
//
// They are the same API as the parameter-pack `provide` (overload resolution prefers them), and exist
// for speed only: Swift 6.3 compiles the body of a pack expansion as a generic loop even after
// specialization, so a pack-based factory thunk pays a generic call per dependency on every resolve.
// With fixed arities the thunks are fully specialized. The pack overload serves every other arity.
//
// Every `provide` is `@inline(__always)`: inlined where it is called, the user's closure is a known
// function, which the compiler folds into the thunk, so the thunk captures nothing. Without it, a long
// composition root stops being inlined partway, and each thunk past that point captures the user's
// closure: one allocation per registration, and more code (measured on 1,000 registrations: 1.8
// allocations per service instead of 1.1, and 160 KB more machine code).
// Keep the five overloads identical but for their arity.

extension ServiceGraph.Builder {
    /// Provides `key` with a synchronous factory of no dependencies; see
    /// the parameter-pack `provide`, which this overload replaces for speed.
    @inlinable
    @inline(__always)
    public mutating func provide<Key: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable () throws -> Key.Value
    ) {
        _appendRegistration(
            key,
            lifetime: lifetime,
            dependencies: _DependencyKeys(),
            fileID: fileID,
            line: line,
            isOverride: false,
            isWrapperKey: Key._dependencyKind != .direct,
            makeSynchronously: { resolver, address in
                _ = address.initializeMemory(as: Key.Value.self, to: try factory())
            }
        )
    }

    /// Provides `key` with a synchronous factory of 1 dependency; see
    /// the parameter-pack `provide`, which this overload replaces for speed.
    @inlinable
    @inline(__always)
    public mutating func provide<Key: ServiceKey, D1: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
        dependsOn d1: D1.Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable (D1.Value) throws -> Key.Value
    ) {
        _appendRegistration(
            key,
            lifetime: lifetime,
            dependencies: _DependencyKeys(d1),
            fileID: fileID,
            line: line,
            isOverride: false,
            isWrapperKey: Key._dependencyKind != .direct,
            makeSynchronously: { resolver, address in
                _ = address.initializeMemory(as: Key.Value.self, to: try factory(try resolver.next(D1.self)))
            }
        )
    }

    /// Provides `key` with a synchronous factory of 2 dependencies; see
    /// the parameter-pack `provide`, which this overload replaces for speed.
    @inlinable
    @inline(__always)
    public mutating func provide<Key: ServiceKey, D1: ServiceKey, D2: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
        dependsOn d1: D1.Type,
        _ d2: D2.Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable (D1.Value, D2.Value) throws -> Key.Value
    ) {
        _appendRegistration(
            key,
            lifetime: lifetime,
            dependencies: _DependencyKeys(d1, d2),
            fileID: fileID,
            line: line,
            isOverride: false,
            isWrapperKey: Key._dependencyKind != .direct,
            makeSynchronously: { resolver, address in
                _ = address.initializeMemory(
                    as: Key.Value.self,
                    to: try factory(try resolver.next(D1.self), try resolver.next(D2.self))
                )
            }
        )
    }

    /// Provides `key` with a synchronous factory of 3 dependencies; see
    /// the parameter-pack `provide`, which this overload replaces for speed.
    @inlinable
    @inline(__always)
    public mutating func provide<Key: ServiceKey, D1: ServiceKey, D2: ServiceKey, D3: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
        dependsOn d1: D1.Type,
        _ d2: D2.Type,
        _ d3: D3.Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable (D1.Value, D2.Value, D3.Value) throws -> Key.Value
    ) {
        _appendRegistration(
            key,
            lifetime: lifetime,
            dependencies: _DependencyKeys(d1, d2, d3),
            fileID: fileID,
            line: line,
            isOverride: false,
            isWrapperKey: Key._dependencyKind != .direct,
            makeSynchronously: { resolver, address in
                _ = address.initializeMemory(
                    as: Key.Value.self,
                    to: try factory(
                        try resolver.next(D1.self),
                        try resolver.next(D2.self),
                        try resolver.next(D3.self)
                    )
                )
            }
        )
    }

    /// Provides `key` with a synchronous factory of 4 dependencies; see
    /// the parameter-pack `provide`, which this overload replaces for speed.
    @inlinable
    @inline(__always)
    public mutating func provide<Key: ServiceKey, D1: ServiceKey, D2: ServiceKey, D3: ServiceKey, D4: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
        dependsOn d1: D1.Type,
        _ d2: D2.Type,
        _ d3: D3.Type,
        _ d4: D4.Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable (D1.Value, D2.Value, D3.Value, D4.Value) throws -> Key.Value
    ) {
        _appendRegistration(
            key,
            lifetime: lifetime,
            dependencies: _DependencyKeys(d1, d2, d3, d4),
            fileID: fileID,
            line: line,
            isOverride: false,
            isWrapperKey: Key._dependencyKind != .direct,
            makeSynchronously: { resolver, address in
                _ = address.initializeMemory(
                    as: Key.Value.self,
                    to: try factory(
                        try resolver.next(D1.self),
                        try resolver.next(D2.self),
                        try resolver.next(D3.self),
                        try resolver.next(D4.self)
                    )
                )
            }
        )
    }
}
