extension ServiceGraph.Builder {
    /// Wraps the value of `key` before anything receives it: logging, caching or metrics around a
    /// service, without its provider or its dependents knowing.
    ///
    /// The decorator receives the value `key`'s provider made (or the previous decorator's wrapper) and
    /// the values of its own `dependsOn`, and returns what dependents receive instead. Several
    /// decorators of one key apply in the order they were registered, the first innermost. Each stage
    /// is a service of its own in the graph (`Key (undecorated)`, `Key (decorator 1)`, ..., and `Key`,
    /// the last), with the lifetime of `key`'s provider: validation checks a decorator's dependencies
    /// as any provider's (a decorator that depends on `key` itself is a cycle), and lifecycle hooks run
    /// once per instance, on the wrapped value and on the wrapper, each before what uses it.
    ///
    /// An `override` of `key` (a test's double) replaces the value the provider makes and keeps the
    /// decorators; ``removeDecorators(of:)`` takes them away.
    ///
    /// Decorators belong to the builder they are registered with. A child graph
    /// (``ServiceGraph/makeChildBuilder()``) inherits the decorated value as its parent made it; a child
    /// that provides or overrides the key itself replaces that value, and decorates its own with
    /// decorators of its own. A seed cannot be decorated (its value is given to each scope as it is),
    /// and a factory with arguments is decorated through its key (`ArgumentFactory<Key, A>`).
    ///
    /// ```swift
    /// builder.decorate(RepositoryKey.self, dependsOn: LoggerKey.self) { repository, logger in
    ///     LoggingRepository(wrapping: repository, logger: logger)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key whose value to wrap.
    ///   - dependencies: The keys whose values the decorator receives after the value it wraps.
    ///   - fileID: Where the decorator is registered, for errors and dumps.
    ///   - line: The line of the registration.
    ///   - decorator: Makes the wrapper from the wrapped value and the dependencies' values.
    @inlinable
    public mutating func decorate<Key: ServiceKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        decorator: @escaping @Sendable (Key.Value, repeat (each Dependency).Value) throws -> Key.Value
    ) {
        let factory = _AnyFactory(Key.Value.self) { resolver, address in
            let inner = try resolver.next(DecoratedStage<Key, OrdinalEnd>.self)
            _ = address.initializeMemory(
                as: Key.Value.self,
                to: try decorator(inner, repeat try resolver.next((each Dependency).self))
            )
        }
        addDecoration(key, dependencies: _keyList(repeat each dependencies), fileID: fileID, line: line, factory)
    }

    /// Wraps the value of `key` with an asynchronous, throwing decorator. See
    /// ``decorate(_:dependsOn:fileID:line:decorator:)-zn5r``.
    @inlinable
    public mutating func decorate<Key: ServiceKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        decorator: @escaping @Sendable (Key.Value, repeat (each Dependency).Value) async throws -> Key.Value
    ) {
        let factory = _AnyFactory(
            Key.Value.self,
            makeAsynchronously: { resolver, address in
                let inner = try resolver.nextPrepared(DecoratedStage<Key, OrdinalEnd>.self)
                let value = try await decorator(inner, repeat try resolver.nextPrepared((each Dependency).self))
                _ = address.initializeMemory(as: Key.Value.self, to: value)
            }
        )
        addDecoration(key, dependencies: _keyList(repeat each dependencies), fileID: fileID, line: line, factory)
    }

    /// Takes away every decorator of `key` registered so far: a test that wants the undecorated value.
    public mutating func removeDecorators<Key: ServiceKey>(of key: Key.Type) {
        decorations.removeAll { $0.keyID == Key._keyID }
    }

    @usableFromInline
    mutating func addDecoration<Key: ServiceKey>(
        _ key: Key.Type,
        dependencies: _DependencyKeys,
        fileID: StaticString,
        line: UInt,
        _ factory: _AnyFactory
    ) {
        decorations.append(
            Decoration(
                key: key,
                stage: { DecoratedStage<Key, OrdinalEnd>.stage($0) },
                dependencies: dependencies,
                site: SiteLiteral(fileID: fileID, line: line),
                factory: factory,
                module: currentModule
            )
        )
    }
}
