extension ServiceGraph.Builder {
    /// Contributes an element to the list `key` names, made by a synchronous factory that receives
    /// exactly the values of `dependsOn`.
    ///
    /// Each contribution is a service of its own (with its own dependencies, lifetime and lifecycle
    /// hooks); what depends on `key` receives every contribution's value, in order (see
    /// ``ContributionKey``). The list is a singleton when every contribution is one, scoped when they
    /// are scoped (or singletons) in one kind of scope, and transient otherwise.
    ///
    /// - Parameters:
    ///   - key: The list this contributes to.
    ///   - id: The name other contributions use in `before` and `after`, and
    ///     ``overrideContribution(_:id:lifetime:dependsOn:fileID:line:factory:)-998up``
    ///     to replace this one; unique within the list. Nil for a contribution nothing refers to.
    ///   - lifetime: How long the element lives; ``Lifetime/singleton`` by default.
    ///   - position: Where the element goes where `before` and `after` leave a choice: lower first;
    ///     equal positions keep the order of registration. 0 by default.
    ///   - before: The ids of contributions this one must come before.
    ///   - after: The ids of contributions this one must come after.
    ///   - dependencies: The keys whose values the factory receives.
    ///   - fileID: Where the contribution is registered, for errors and dumps.
    ///   - line: The line of the registration.
    ///   - factory: Makes the element from its dependencies' values.
    @inlinable
    public mutating func contribute<Key: ContributionKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        id: String? = nil,
        lifetime: Lifetime = .singleton,
        position: Int = 0,
        before: [String] = [],
        after: [String] = [],
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable (repeat (each Dependency).Value) throws -> Key.Element
    ) {
        addContribution(
            ContributedCollection(list: key),
            id: id,
            lifetime: lifetime,
            position: position,
            before: before,
            after: after,
            dependencies: _keyList(repeat each dependencies),
            fileID: fileID,
            line: line,
            factory: Self.synchronousFactory(Key.Element.self, dependsOn: repeat each dependencies, factory: factory),
            isOverride: false
        )
    }

    /// Contributes an element to the list `key` names, made by an asynchronous, throwing factory that
    /// receives exactly the values of `dependsOn`. See
    /// ``contribute(_:id:lifetime:position:before:after:dependsOn:fileID:line:factory:)-49hvt``.
    @inlinable
    public mutating func contribute<Key: ContributionKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        id: String? = nil,
        lifetime: Lifetime = .singleton,
        position: Int = 0,
        before: [String] = [],
        after: [String] = [],
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable (repeat (each Dependency).Value) async throws -> Key.Element
    ) {
        addContribution(
            ContributedCollection(list: key),
            id: id,
            lifetime: lifetime,
            position: position,
            before: before,
            after: after,
            dependencies: _keyList(repeat each dependencies),
            fileID: fileID,
            line: line,
            factory: Self.asynchronousFactory(Key.Element.self, dependsOn: repeat each dependencies, factory: factory),
            isOverride: false
        )
    }

    /// Replaces the contribution `id` to `key` (a test's double, say), keeping its place in the list:
    /// its position and its `before` and `after`. The last override of an id wins; an override of an id
    /// nobody contributes is a validation error. To replace the whole list, `override` the key itself.
    ///
    /// - Parameters:
    ///   - key: The list the contribution belongs to.
    ///   - id: The id of the contribution to replace.
    ///   - lifetime: The replacement's lifetime; nil (the default) keeps the replaced one's.
    ///   - dependencies: The keys whose values the factory receives.
    ///   - fileID: Where the override is registered, for errors and dumps.
    ///   - line: The line of the override.
    ///   - factory: Makes the element from its dependencies' values.
    public mutating func overrideContribution<Key: ContributionKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        id: String,
        lifetime: Lifetime? = nil,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable (repeat (each Dependency).Value) throws -> Key.Element
    ) {
        addContribution(
            ContributedCollection(list: key),
            id: id,
            lifetime: lifetime,
            position: 0,
            before: [],
            after: [],
            dependencies: _keyList(repeat each dependencies),
            fileID: fileID,
            line: line,
            factory: Self.synchronousFactory(Key.Element.self, dependsOn: repeat each dependencies, factory: factory),
            isOverride: true
        )
    }

    /// The synchronous thunk of a contribution's factory (as `provide` makes one).
    @inlinable
    static func synchronousFactory<Element: Sendable, each Dependency: ServiceKey>(
        _ element: Element.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        factory: @escaping @Sendable (repeat (each Dependency).Value) throws -> Element
    ) -> _AnyFactory {
        _AnyFactory(Element.self) { resolver, address in
            _ = address.initializeMemory(
                as: Element.self,
                to: try factory(repeat try resolver.next((each Dependency).self))
            )
        }
    }

    /// The asynchronous thunk of a contribution's factory (as `provide` makes one).
    @inlinable
    static func asynchronousFactory<Element: Sendable, each Dependency: ServiceKey>(
        _ element: Element.Type,
        dependsOn dependencies: repeat (each Dependency).Type,
        factory: @escaping @Sendable (repeat (each Dependency).Value) async throws -> Element
    ) -> _AnyFactory {
        _AnyFactory(
            Element.self,
            makeAsynchronously: { resolver, address in
                let value = try await factory(repeat try resolver.nextPrepared((each Dependency).self))
                _ = address.initializeMemory(as: Element.self, to: value)
            }
        )
    }

    @usableFromInline
    mutating func addContribution(
        _ collection: ContributedCollection,
        id: String?,
        lifetime: Lifetime?,
        position: Int,
        before: [String],
        after: [String],
        dependencies: _DependencyKeys,
        fileID: StaticString,
        line: UInt,
        factory: _AnyFactory,
        isOverride: Bool
    ) {
        contributions.append(
            Contribution(
                collection: collection,
                id: id,
                position: position,
                before: before,
                after: after,
                lifetime: lifetime,
                dependencies: dependencies,
                site: SiteLiteral(fileID: fileID, line: line),
                factory: factory,
                scopeKind: currentScopeKind,
                isOverride: isOverride,
                module: currentModule
            )
        )
    }
}

extension ServiceGraph.Builder {
    /// Contributes an element under `id` to the dictionary `key` names, made by a synchronous factory
    /// that receives exactly the values of `dependsOn` (see ``KeyedContributionKey``).
    ///
    /// - Parameters:
    ///   - key: The dictionary this contributes to.
    ///   - id: The element's key in the dictionary; unique within it.
    ///   - lifetime: How long the element lives; ``Lifetime/singleton`` by default.
    ///   - dependencies: The keys whose values the factory receives.
    ///   - fileID: Where the contribution is registered, for errors and dumps.
    ///   - line: The line of the registration.
    ///   - factory: Makes the element from its dependencies' values.
    @inlinable
    public mutating func contribute<Key: KeyedContributionKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        id: String,
        lifetime: Lifetime = .singleton,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable (repeat (each Dependency).Value) throws -> Key.Element
    ) {
        addContribution(
            ContributedCollection(keyed: key),
            id: id,
            lifetime: lifetime,
            position: 0,
            before: [],
            after: [],
            dependencies: _keyList(repeat each dependencies),
            fileID: fileID,
            line: line,
            factory: Self.synchronousFactory(Key.Element.self, dependsOn: repeat each dependencies, factory: factory),
            isOverride: false
        )
    }

    /// Contributes an element under `id` to the dictionary `key` names, made by an asynchronous,
    /// throwing factory that receives exactly the values of `dependsOn` (see ``KeyedContributionKey``).
    @inlinable
    public mutating func contribute<Key: KeyedContributionKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        id: String,
        lifetime: Lifetime = .singleton,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable (repeat (each Dependency).Value) async throws -> Key.Element
    ) {
        addContribution(
            ContributedCollection(keyed: key),
            id: id,
            lifetime: lifetime,
            position: 0,
            before: [],
            after: [],
            dependencies: _keyList(repeat each dependencies),
            fileID: fileID,
            line: line,
            factory: Self.asynchronousFactory(Key.Element.self, dependsOn: repeat each dependencies, factory: factory),
            isOverride: false
        )
    }

    /// Replaces the element `id` of the dictionary `key` (a test's double, say). The last override of an
    /// id wins; an override of an id nobody contributes is a validation error.
    public mutating func overrideContribution<Key: KeyedContributionKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        id: String,
        lifetime: Lifetime? = nil,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString = #fileID,
        line: UInt = #line,
        factory: @escaping @Sendable (repeat (each Dependency).Value) throws -> Key.Element
    ) {
        addContribution(
            ContributedCollection(keyed: key),
            id: id,
            lifetime: lifetime,
            position: 0,
            before: [],
            after: [],
            dependencies: _keyList(repeat each dependencies),
            fileID: fileID,
            line: line,
            factory: Self.synchronousFactory(Key.Element.self, dependsOn: repeat each dependencies, factory: factory),
            isOverride: true
        )
    }
}
