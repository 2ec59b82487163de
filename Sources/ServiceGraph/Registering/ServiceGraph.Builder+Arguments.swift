// Factories with arguments (assisted injection): `provide(_:arguments:dependsOn:factory:)` registers a
// function under `ArgumentFactory<Key, Arguments...>` that takes the caller's arguments and the values
// of its dependencies. One overload per number of arguments (1 to 3), each with a parameter pack of
// dependencies: a closure type cannot hold two packs. `provide` and `override` share one body per arity.
//
// A synchronous closure (the overloads taking `throws`, which the compiler prefers for a closure that
// does not await) registers the factory twice, from the same closure and dependencies: as the
// asynchronous function every factory has, and as its synchronous form,
// `ArgumentFactory<Key, Arguments...>.Synchronous`, which callers that cannot suspend depend on. Any
// other provider of the asynchronous form (an asynchronous closure, an override of the function
// itself) takes the synchronous form away: see `GraphPlan`.

extension ServiceGraph.Builder {
    /// Provides `key` made with 1 argument the caller supplies as well as the values of
    /// `dependsOn`: the graph holds the function under ``ArgumentFactory``, which callers resolve or depend on.
    ///
    /// - Parameters:
    ///   - key: The key of what the function makes; the function's own key is
    ///     `ArgumentFactory<Key, A1>`.
    ///   - lifetime: How long the function lives (a singleton by default; ``Lifetime/scoped`` where it
    ///     depends on scoped services). Each call makes a new value.
    ///   - a1: The type of the first argument.
    ///   - dependencies: The keys whose values the function is made with.
    ///   - fileID: Where the provider is registered, for errors and dumps; the caller's file by default.
    ///   - line: The line of the registration; the caller's line by default.
    ///   - factory: Makes the value from the arguments, then the dependencies' values; runs on the
    ///     caller's executor.
    @inlinable
    @inline(__always)
    public mutating func provide<Key: ServiceKey, A1: Sendable, each Dependency: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
        arguments a1: A1.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory:
            nonisolated(nonsending) @escaping @Sendable (A1, repeat (each Dependency).Value) async throws ->
            Key.Value
    ) {
        _addArgumentFactory(
            key,
            arguments: (A1).self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: false,
            factory: factory
        )
    }

    /// Provides `key` made with 2 arguments the caller supplies as well as the values of
    /// `dependsOn`: the graph holds the function under ``ArgumentFactory``, which callers resolve or depend on.
    ///
    /// - Parameters:
    ///   - key: The key of what the function makes; the function's own key is
    ///     `ArgumentFactory<Key, A1, A2>`.
    ///   - lifetime: How long the function lives (a singleton by default; ``Lifetime/scoped`` where it
    ///     depends on scoped services). Each call makes a new value.
    ///   - a1: The type of the first argument.
    ///   - a2: The type of the second argument.
    ///   - dependencies: The keys whose values the function is made with.
    ///   - fileID: Where the provider is registered, for errors and dumps; the caller's file by default.
    ///   - line: The line of the registration; the caller's line by default.
    ///   - factory: Makes the value from the arguments, then the dependencies' values; runs on the
    ///     caller's executor.
    @inlinable
    @inline(__always)
    public mutating func provide<
        Key: ServiceKey,
        A1: Sendable,
        A2: Sendable,
        each Dependency: ServiceKey
    >(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
        arguments a1: A1.Type,
        _ a2: A2.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory:
            nonisolated(nonsending) @escaping @Sendable (A1, A2, repeat (each Dependency).Value) async throws ->
            Key.Value
    ) {
        _addArgumentFactory(
            key,
            arguments: (A1, A2).self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: false,
            factory: factory
        )
    }

    /// Provides `key` made with 3 arguments the caller supplies as well as the values of
    /// `dependsOn`: the graph holds the function under ``ArgumentFactory``, which callers resolve or depend on.
    ///
    /// - Parameters:
    ///   - key: The key of what the function makes; the function's own key is
    ///     `ArgumentFactory<Key, A1, A2, A3>`.
    ///   - lifetime: How long the function lives (a singleton by default; ``Lifetime/scoped`` where it
    ///     depends on scoped services). Each call makes a new value.
    ///   - a1: The type of the first argument.
    ///   - a2: The type of the second argument.
    ///   - a3: The type of the third argument.
    ///   - dependencies: The keys whose values the function is made with.
    ///   - fileID: Where the provider is registered, for errors and dumps; the caller's file by default.
    ///   - line: The line of the registration; the caller's line by default.
    ///   - factory: Makes the value from the arguments, then the dependencies' values; runs on the
    ///     caller's executor.
    @inlinable
    @inline(__always)
    public mutating func provide<
        Key: ServiceKey,
        A1: Sendable,
        A2: Sendable,
        A3: Sendable,
        each Dependency: ServiceKey
    >(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
        arguments a1: A1.Type,
        _ a2: A2.Type,
        _ a3: A3.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory:
            nonisolated(nonsending) @escaping @Sendable (A1, A2, A3, repeat (each Dependency).Value) async throws ->
            Key.Value
    ) {
        _addArgumentFactory(
            key,
            arguments: (A1, A2, A3).self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: false,
            factory: factory
        )
    }

    /// Replaces the factory of `key` with 1 argument (its ``ArgumentFactory``); see `provide`, and
    /// `override(_:lifetime:dependsOn:fileID:line:factory:)` for how an override replaces a provider.
    /// The factory then has no ``ArgumentFactory/Synchronous`` form.
    @inlinable
    @inline(__always)
    public mutating func override<Key: ServiceKey, A1: Sendable, each Dependency: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime? = nil,
        arguments a1: A1.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory:
            nonisolated(nonsending) @escaping @Sendable (A1, repeat (each Dependency).Value) async throws ->
            Key.Value
    ) {
        _addArgumentFactory(
            key,
            arguments: (A1).self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: true,
            factory: factory
        )
    }

    /// Replaces the factory of `key` with 2 arguments (its ``ArgumentFactory``); see `provide`, and
    /// `override(_:lifetime:dependsOn:fileID:line:factory:)` for how an override replaces a provider.
    /// The factory then has no ``ArgumentFactory/Synchronous`` form.
    @inlinable
    @inline(__always)
    public mutating func override<
        Key: ServiceKey,
        A1: Sendable,
        A2: Sendable,
        each Dependency: ServiceKey
    >(
        _ key: Key.Type,
        lifetime: Lifetime? = nil,
        arguments a1: A1.Type,
        _ a2: A2.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory:
            nonisolated(nonsending) @escaping @Sendable (A1, A2, repeat (each Dependency).Value) async throws ->
            Key.Value
    ) {
        _addArgumentFactory(
            key,
            arguments: (A1, A2).self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: true,
            factory: factory
        )
    }

    /// Replaces the factory of `key` with 3 arguments (its ``ArgumentFactory``); see `provide`, and
    /// `override(_:lifetime:dependsOn:fileID:line:factory:)` for how an override replaces a provider.
    /// The factory then has no ``ArgumentFactory/Synchronous`` form.
    @inlinable
    @inline(__always)
    public mutating func override<
        Key: ServiceKey,
        A1: Sendable,
        A2: Sendable,
        A3: Sendable,
        each Dependency: ServiceKey
    >(
        _ key: Key.Type,
        lifetime: Lifetime? = nil,
        arguments a1: A1.Type,
        _ a2: A2.Type,
        _ a3: A3.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory:
            nonisolated(nonsending) @escaping @Sendable (A1, A2, A3, repeat (each Dependency).Value) async throws ->
            Key.Value
    ) {
        _addArgumentFactory(
            key,
            arguments: (A1, A2, A3).self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: true,
            factory: factory
        )
    }

    /// Provides `key` made with 1 argument from a synchronous closure: the graph holds the function under
    /// ``ArgumentFactory`` and, callable without `await`, under ``ArgumentFactory/Synchronous``; see the
    /// asynchronous overload for the parameters.
    @inlinable
    @inline(__always)
    public mutating func provide<Key: ServiceKey, A1: Sendable, each Dependency: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
        arguments a1: A1.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory:
            @escaping @Sendable (A1, repeat (each Dependency).Value) throws -> Key.Value
    ) {
        _addArgumentFactory(
            key,
            arguments: (A1).self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: false,
            factory: factory
        )
    }

    /// Provides `key` made with 2 arguments from a synchronous closure: the graph holds the function under
    /// ``ArgumentFactory`` and, callable without `await`, under ``ArgumentFactory/Synchronous``; see the
    /// asynchronous overload for the parameters.
    @inlinable
    @inline(__always)
    public mutating func provide<
        Key: ServiceKey,
        A1: Sendable,
        A2: Sendable,
        each Dependency: ServiceKey
    >(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
        arguments a1: A1.Type,
        _ a2: A2.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory:
            @escaping @Sendable (A1, A2, repeat (each Dependency).Value) throws -> Key.Value
    ) {
        _addArgumentFactory(
            key,
            arguments: (A1, A2).self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: false,
            factory: factory
        )
    }

    /// Provides `key` made with 3 arguments from a synchronous closure: the graph holds the function under
    /// ``ArgumentFactory`` and, callable without `await`, under ``ArgumentFactory/Synchronous``; see the
    /// asynchronous overload for the parameters.
    @inlinable
    @inline(__always)
    public mutating func provide<
        Key: ServiceKey,
        A1: Sendable,
        A2: Sendable,
        A3: Sendable,
        each Dependency: ServiceKey
    >(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
        arguments a1: A1.Type,
        _ a2: A2.Type,
        _ a3: A3.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory:
            @escaping @Sendable (A1, A2, A3, repeat (each Dependency).Value) throws -> Key.Value
    ) {
        _addArgumentFactory(
            key,
            arguments: (A1, A2, A3).self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: false,
            factory: factory
        )
    }

    /// Replaces the factory of `key` with 1 argument by a synchronous closure, in both forms
    /// (``ArgumentFactory`` and ``ArgumentFactory/Synchronous``, which it adds where the factory had none).
    @inlinable
    @inline(__always)
    public mutating func override<Key: ServiceKey, A1: Sendable, each Dependency: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime? = nil,
        arguments a1: A1.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory:
            @escaping @Sendable (A1, repeat (each Dependency).Value) throws -> Key.Value
    ) {
        _addArgumentFactory(
            key,
            arguments: (A1).self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: true,
            factory: factory
        )
    }

    /// Replaces the factory of `key` with 2 arguments by a synchronous closure, in both forms
    /// (``ArgumentFactory`` and ``ArgumentFactory/Synchronous``, which it adds where the factory had none).
    @inlinable
    @inline(__always)
    public mutating func override<
        Key: ServiceKey,
        A1: Sendable,
        A2: Sendable,
        each Dependency: ServiceKey
    >(
        _ key: Key.Type,
        lifetime: Lifetime? = nil,
        arguments a1: A1.Type,
        _ a2: A2.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory:
            @escaping @Sendable (A1, A2, repeat (each Dependency).Value) throws -> Key.Value
    ) {
        _addArgumentFactory(
            key,
            arguments: (A1, A2).self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: true,
            factory: factory
        )
    }

    /// Replaces the factory of `key` with 3 arguments by a synchronous closure, in both forms
    /// (``ArgumentFactory`` and ``ArgumentFactory/Synchronous``, which it adds where the factory had none).
    @inlinable
    @inline(__always)
    public mutating func override<
        Key: ServiceKey,
        A1: Sendable,
        A2: Sendable,
        A3: Sendable,
        each Dependency: ServiceKey
    >(
        _ key: Key.Type,
        lifetime: Lifetime? = nil,
        arguments a1: A1.Type,
        _ a2: A2.Type,
        _ a3: A3.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory:
            @escaping @Sendable (A1, A2, A3, repeat (each Dependency).Value) throws -> Key.Value
    ) {
        _addArgumentFactory(
            key,
            arguments: (A1, A2, A3).self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: true,
            factory: factory
        )
    }

    /// Adds the function of a factory with 1 argument under `ArgumentFactory<Key, A1>`: it is
    /// made from the dependencies' values, which it keeps, and makes a value per call. The factory then
    /// has no synchronous form (see `GraphPlan`).
    @inlinable
    @inline(__always)
    mutating func _addArgumentFactory<Key: ServiceKey, A1: Sendable, each Dependency: ServiceKey>(
        _ key: Key.Type,
        arguments: (A1).Type,
        lifetime: Lifetime?,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString,
        line: UInt,
        isOverride: Bool,
        factory:
            nonisolated(nonsending) @escaping @Sendable (A1, repeat (each Dependency).Value) async throws ->
            Key.Value
    ) {
        _addProvider(
            ArgumentFactory<Key, A1>.self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: isOverride,
            argumentFactoryForm: .asynchronous
        ) { (values: repeat (each Dependency).Value) -> ArgumentFactory<Key, A1>.Value in
            let captured = (repeat each values)
            return { a1 in try await factory(a1, repeat each captured) }
        }
    }

    /// Adds the function of a factory with 2 arguments under `ArgumentFactory<Key, A1, A2>`: it is
    /// made from the dependencies' values, which it keeps, and makes a value per call. The factory then
    /// has no synchronous form (see `GraphPlan`).
    @inlinable
    @inline(__always)
    mutating func _addArgumentFactory<
        Key: ServiceKey,
        A1: Sendable,
        A2: Sendable,
        each Dependency: ServiceKey
    >(
        _ key: Key.Type,
        arguments: (A1, A2).Type,
        lifetime: Lifetime?,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString,
        line: UInt,
        isOverride: Bool,
        factory:
            nonisolated(nonsending) @escaping @Sendable (A1, A2, repeat (each Dependency).Value) async throws ->
            Key.Value
    ) {
        _addProvider(
            ArgumentFactory<Key, A1, A2>.self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: isOverride,
            argumentFactoryForm: .asynchronous
        ) { (values: repeat (each Dependency).Value) -> ArgumentFactory<Key, A1, A2>.Value in
            let captured = (repeat each values)
            return { a1, a2 in try await factory(a1, a2, repeat each captured) }
        }
    }

    /// Adds the function of a factory with 3 arguments under `ArgumentFactory<Key, A1, A2, A3>`: it is
    /// made from the dependencies' values, which it keeps, and makes a value per call. The factory then
    /// has no synchronous form (see `GraphPlan`).
    @inlinable
    @inline(__always)
    mutating func _addArgumentFactory<
        Key: ServiceKey,
        A1: Sendable,
        A2: Sendable,
        A3: Sendable,
        each Dependency: ServiceKey
    >(
        _ key: Key.Type,
        arguments: (A1, A2, A3).Type,
        lifetime: Lifetime?,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString,
        line: UInt,
        isOverride: Bool,
        factory:
            nonisolated(nonsending) @escaping @Sendable (A1, A2, A3, repeat (each Dependency).Value) async throws ->
            Key.Value
    ) {
        _addProvider(
            ArgumentFactory<Key, A1, A2, A3>.self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: isOverride,
            argumentFactoryForm: .asynchronous
        ) { (values: repeat (each Dependency).Value) -> ArgumentFactory<Key, A1, A2, A3>.Value in
            let captured = (repeat each values)
            return { a1, a2, a3 in try await factory(a1, a2, a3, repeat each captured) }
        }
    }

    /// Adds the two forms of a factory with 1 argument made by a synchronous closure: the function
    /// under `ArgumentFactory<Key, A1>`, and its synchronous form.
    @inlinable
    @inline(__always)
    mutating func _addArgumentFactory<Key: ServiceKey, A1: Sendable, each Dependency: ServiceKey>(
        _ key: Key.Type,
        arguments: (A1).Type,
        lifetime: Lifetime?,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString,
        line: UInt,
        isOverride: Bool,
        factory:
            @escaping @Sendable (A1, repeat (each Dependency).Value) throws -> Key.Value
    ) {
        _addProvider(
            ArgumentFactory<Key, A1>.self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: isOverride,
            argumentFactoryForm: .asynchronous,
            isPairedForm: true
        ) { (values: repeat (each Dependency).Value) -> ArgumentFactory<Key, A1>.Value in
            let captured = (repeat each values)
            return { a1 in try factory(a1, repeat each captured) }
        }
        _addProvider(
            ArgumentFactory<Key, A1>.Synchronous.self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: isOverride,
            argumentFactoryForm: .synchronous,
            isPairedForm: true
        ) { (values: repeat (each Dependency).Value) -> ArgumentFactory<Key, A1>.Synchronous.Value in
            let captured = (repeat each values)
            return { a1 in try factory(a1, repeat each captured) }
        }
    }

    /// Adds the two forms of a factory with 2 arguments made by a synchronous closure: the function
    /// under `ArgumentFactory<Key, A1, A2>`, and its synchronous form.
    @inlinable
    @inline(__always)
    mutating func _addArgumentFactory<
        Key: ServiceKey,
        A1: Sendable,
        A2: Sendable,
        each Dependency: ServiceKey
    >(
        _ key: Key.Type,
        arguments: (A1, A2).Type,
        lifetime: Lifetime?,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString,
        line: UInt,
        isOverride: Bool,
        factory:
            @escaping @Sendable (A1, A2, repeat (each Dependency).Value) throws -> Key.Value
    ) {
        _addProvider(
            ArgumentFactory<Key, A1, A2>.self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: isOverride,
            argumentFactoryForm: .asynchronous,
            isPairedForm: true
        ) { (values: repeat (each Dependency).Value) -> ArgumentFactory<Key, A1, A2>.Value in
            let captured = (repeat each values)
            return { a1, a2 in try factory(a1, a2, repeat each captured) }
        }
        _addProvider(
            ArgumentFactory<Key, A1, A2>.Synchronous.self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: isOverride,
            argumentFactoryForm: .synchronous,
            isPairedForm: true
        ) { (values: repeat (each Dependency).Value) -> ArgumentFactory<Key, A1, A2>.Synchronous.Value in
            let captured = (repeat each values)
            return { a1, a2 in try factory(a1, a2, repeat each captured) }
        }
    }

    /// Adds the two forms of a factory with 3 arguments made by a synchronous closure: the function
    /// under `ArgumentFactory<Key, A1, A2, A3>`, and its synchronous form.
    @inlinable
    @inline(__always)
    mutating func _addArgumentFactory<
        Key: ServiceKey,
        A1: Sendable,
        A2: Sendable,
        A3: Sendable,
        each Dependency: ServiceKey
    >(
        _ key: Key.Type,
        arguments: (A1, A2, A3).Type,
        lifetime: Lifetime?,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString,
        line: UInt,
        isOverride: Bool,
        factory:
            @escaping @Sendable (A1, A2, A3, repeat (each Dependency).Value) throws -> Key.Value
    ) {
        _addProvider(
            ArgumentFactory<Key, A1, A2, A3>.self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: isOverride,
            argumentFactoryForm: .asynchronous,
            isPairedForm: true
        ) { (values: repeat (each Dependency).Value) -> ArgumentFactory<Key, A1, A2, A3>.Value in
            let captured = (repeat each values)
            return { a1, a2, a3 in try factory(a1, a2, a3, repeat each captured) }
        }
        _addProvider(
            ArgumentFactory<Key, A1, A2, A3>.Synchronous.self,
            lifetime: lifetime,
            dependsOn: repeat each dependencies,
            fileID: fileID,
            line: line,
            isOverride: isOverride,
            argumentFactoryForm: .synchronous,
            isPairedForm: true
        ) { (values: repeat (each Dependency).Value) -> ArgumentFactory<Key, A1, A2, A3>.Synchronous.Value in
            let captured = (repeat each values)
            return { a1, a2, a3 in try factory(a1, a2, a3, repeat each captured) }
        }
    }
}
