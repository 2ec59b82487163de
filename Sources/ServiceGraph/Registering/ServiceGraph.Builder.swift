extension ServiceGraph {
    /// Collects providers, checks the whole graph, and builds it.
    ///
    /// A builder is a value: copy it and override some keys to get a test graph that shares the
    /// application's wiring but not its instances. Nothing runs until ``build()``; ``validate()`` checks
    /// the graph without running any factory.
    ///
    /// ```swift
    /// var builder = ServiceGraph.Builder()
    /// builder.provide(ConfigKey.self) { AppConfig.fromEnvironment() }
    /// builder.provide(LoggerKey.self, dependsOn: ConfigKey.self) { config in ConsoleLogger(level: config.logLevel) }
    /// let graph = try await builder.build()
    /// ```
    public struct Builder: Sendable {
        /// Every `provide` and `override` call, in order.
        var registrations = RegistrationList() {
            didSet { advanceRevision() }
        }
        /// Every `contribute` and `overrideContribution` call, in order (see ``Contributions``).
        var contributions: [Contribution] = [] {
            didSet { advanceRevision() }
        }
        /// For a child graph's builder: the contributions its parent placed, which the child's own
        /// contributions to the same lists are merged with.
        var inheritedContributions: [PlacedContribution] = [] {
            didSet { advanceRevision() }
        }
        /// Every `decorate` call, in order (see ``Decorations``).
        var decorations: [Decoration] = [] {
            didSet { advanceRevision() }
        }
        /// Where `registrations` are in their history (see ``RegistrationsRevision``).
        private var lineage = RegistrationsLineage()
        /// Every key ``remove(_:)`` took out, for an update to count as changed (see ``LiveGraph``).
        var removedKeys: [ObjectIdentifier: any ServiceKey.Type] = [:]
        /// The next number ``assignSerials()`` gives.
        var nextSerial: Int32 = 0
        /// Keys declared as used from outside the graph (see `declareEntryPoints`).
        var entryPoints: Set<ObjectIdentifier> = []
        /// The last validated plan, so `validate()` then `build()` validates once.
        let validatedPlans = ValidatedPlanCache()
        /// For a child graph's builder: the graph it is a child of.
        var parent: ServiceGraph?
        /// The kind of scope that scoped services and seeds registered now belong to (see
        /// ``inScope(_:_:)``): an index into the registrations' ``RegistrationList/scopeKinds``.
        var currentScopeKind: UInt16 = 0
        /// The module whose `register` is running (see ``include(_:)``): an index into the
        /// registrations' ``RegistrationList/modules``, 0 outside any.
        var currentModule: UInt16 = 0

        /// How long a ``LifecycleHooks/didAdd()`` or ``LifecycleHooks/willRemove()`` may run before the
        /// graph abandons it with ``ServiceGraphError/Code/hookTimedOut`` and goes on (cleaning up after
        /// a failed `didAdd`, releasing the other services after a stuck `willRemove`). The abandoned
        /// hook is cancelled. `nil`, the default, waits for hooks however long they take.
        public var hookTimeout: Duration?

        /// How long an asynchronous factory of a singleton (at build) or of a scoped service (in its
        /// scope) may run before the graph abandons it with ``ServiceGraphError/Code/factoryTimedOut``:
        /// the build then fails and releases what it started. The abandoned factory is cancelled and its
        /// instance, if it ever makes one, is dropped. `nil`, the default, waits however long it takes
        /// (cancelling the build's task still returns promptly).
        public var factoryTimeout: Duration?

        /// Whether a graph that still owes `willRemove` hooks must be shut down before it is released.
        ///
        /// A graph released without ``ServiceGraph/shutdown()`` cannot run its services' async
        /// `willRemove` hooks. It always sends a ``ServiceGraphEvent/Kind/droppedWithoutShutdown`` event
        /// naming them; when this is true (the default), debug builds also stop with an assertion that
        /// names them, as a forgotten shutdown is a bug. Set it to false where dropping a graph is
        /// deliberate.
        public var requiresShutdown = true

        /// Receives the graph's events: build, service creation, hooks, release, scopes, and resolves
        /// when ``reportsResolveEvents`` is on. Nil by default: no events are made.
        ///
        /// Called synchronously, from whichever thread did the work, possibly from several at once. The
        /// handler may call back into the graph (dump it, resolve, open a scope); the events those calls
        /// make on the handler's own thread, while it runs, are not delivered to it, so that it does not
        /// call itself (on platforms with POSIX threads). A scope it opens there is not reported opened,
        /// so its later close or drop can be the first a listener hears of it.
        public var eventHandler: (@Sendable (ServiceGraphEvent) -> Void)?

        /// Whether resolves are reported too. Off by default: resolving is the hot path, and an event
        /// per resolve costs a clock read and a call.
        public var reportsResolveEvents = false

        /// The kinds of events ``eventHandler`` receives: all of them by default (resolves only with
        /// ``reportsResolveEvents``). The graph makes no event of a kind left out.
        ///
        /// A handler that logs the graph's lifecycle can leave out the kinds made for each scope, so that
        /// a request scope costs what it costs without a handler:
        ///
        /// ```swift
        /// builder.eventKinds = [.buildFinished, .buildFailed, .didAdd, .willRemove, .shutdownFinished]
        /// ```
        public var eventKinds = Set(ServiceGraphEvent.Kind.allCases)

        /// Creates an empty builder.
        public init() {}
    }
}

extension ServiceGraph.Builder {
    /// The current state of the registrations: the key of the validated-plan cache.
    var revision: RegistrationsRevision { RegistrationsRevision(lineage) }

    /// Gives the registrations a revision never used before (see ``RegistrationsRevision``).
    private mutating func advanceRevision() {
        if !isKnownUniquelyReferenced(&lineage) { lineage = RegistrationsLineage() }
        lineage.count &+= 1
    }
}

extension ServiceGraph.Builder {
    /// Provides `key` with a synchronous factory that receives exactly the values of `dependsOn`.
    ///
    /// The factory gets the declared dependencies' values, typed and in order, and nothing else: it has
    /// no handle on the graph. A synchronous factory can also be resolved without `await`.
    ///
    /// - Parameters:
    ///   - key: The key this provider provides.
    ///   - lifetime: How long an instance lives; ``Lifetime/singleton`` by default.
    ///   - dependencies: The keys whose values the factory receives.
    ///   - fileID: Where the provider is registered, for errors and dumps; the caller's file by default.
    ///   - line: The line of the registration; the caller's line by default.
    ///   - factory: Makes the service from its dependencies' values.
    @inlinable
    @inline(__always)
    public mutating func provide<Key: ServiceKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
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
            isOverride: false,
            factory: factory
        )
    }

    /// Provides `key` with an asynchronous, throwing factory that receives exactly the values of
    /// `dependsOn`.
    ///
    /// - Parameters:
    ///   - key: The key this provider provides.
    ///   - lifetime: How long an instance lives; ``Lifetime/singleton`` by default.
    ///   - dependencies: The keys whose values the factory receives.
    ///   - fileID: Where the provider is registered, for errors and dumps; the caller's file by default.
    ///   - line: The line of the registration; the caller's line by default.
    ///   - factory: Makes the service from its dependencies' values.
    @inlinable
    @inline(__always)
    public mutating func provide<Key: ServiceKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
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
            isOverride: false,
            factory: factory
        )
    }

    /// Provides a ``Injectable`` under its own type, made by its `init(dependencies:)`.
    public mutating func provide<S: Injectable>(
        _ service: S.Type,
        lifetime: Lifetime = .singleton,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) {
        S.Dependencies._register(S.self, lifetime: lifetime, in: &self, fileID: fileID, line: line) {
            try S(dependencies: $0)
        }
    }

    /// Provides `key` with a ``Injectable`` made by its `init(dependencies:)`.
    ///
    /// Use this to provide the same service type under several keys.
    public mutating func provide<Key: ServiceKey, S: Injectable>(
        _ key: Key.Type,
        lifetime: Lifetime = .singleton,
        using service: S.Type,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) where Key.Value == S {
        S.Dependencies._register(key, lifetime: lifetime, in: &self, fileID: fileID, line: line) {
            try S(dependencies: $0)
        }
    }
}

extension ServiceGraph.Builder {
    /// Wraps a synchronous factory in the graph's thunks and adds it to the registrations.
    @inlinable
    @inline(__always)
    mutating func _addProvider<Key: ServiceKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime?,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString,
        line: UInt,
        isOverride: Bool,
        argumentFactoryForm: _ArgumentFactoryForm = .none,
        isPairedForm: Bool = false,
        factory: @escaping @Sendable (repeat (each Dependency).Value) throws -> Key.Value
    ) {
        _appendRegistration(
            key,
            lifetime: lifetime,
            dependencies: _keyList(repeat each dependencies),
            fileID: fileID,
            line: line,
            isOverride: isOverride,
            isWrapperKey: Key._dependencyKind != .direct,
            argumentFactoryForm: argumentFactoryForm,
            isPairedForm: isPairedForm,
            makeSynchronously: { resolver, address in
                _ = address.initializeMemory(
                    as: Key.Value.self,
                    to: try factory(repeat try resolver.next((each Dependency).self))
                )
            }
        )
    }

    /// Wraps an asynchronous factory in the graph's thunk and adds it to the registrations: the thunk reads
    /// the dependencies the graph has prepared for it, and awaits only the factory.
    @inlinable
    @inline(__always)
    mutating func _addProvider<Key: ServiceKey, each Dependency: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime?,
        dependsOn dependencies: repeat (each Dependency).Type,
        fileID: StaticString,
        line: UInt,
        isOverride: Bool,
        argumentFactoryForm: _ArgumentFactoryForm = .none,
        factory: @escaping @Sendable (repeat (each Dependency).Value) async throws -> Key.Value
    ) {
        _appendRegistration(
            key,
            lifetime: lifetime,
            dependencies: _keyList(repeat each dependencies),
            fileID: fileID,
            line: line,
            isOverride: isOverride,
            isWrapperKey: Key._dependencyKind != .direct,
            argumentFactoryForm: argumentFactoryForm,
            makeSynchronously: _AnyFactory.requiresAwait(Key.Value.self),
            makeAsynchronously: { resolver, address in
                let value = try await factory(repeat try resolver.nextPrepared((each Dependency).self))
                _ = address.initializeMemory(as: Key.Value.self, to: value)
            }
        )
    }

    /// The pack of dependency key types, in order.
    @inlinable
    func _keyList<each Dependency: ServiceKey>(_ dependencies: repeat (each Dependency).Type) -> _DependencyKeys {
        var keys = _DependencyKeys()
        for dependency in repeat each dependencies {
            keys.append(dependency)
        }
        return keys
    }

    /// Adds the registration of an inlined `provide`, given its thunks (of a factory of `Key.Value`).
    /// Inlined too: it hands the factory and the dependency list on as their parts, plain words. Passed
    /// as an ``_AnyFactory`` and a ``_DependencyKeys``, each was a temporary of the caller (the factory is
    /// 72 bytes, passed by address), and the compiler gives every inlined `provide` of a composition
    /// root temporaries of its own, which it does not share: a function of 1,000 registrations took a
    /// stack frame of 108 KB, memory a first build touches for the first time, and a few thousand
    /// registrations in one function would overflow a 512 KB thread stack. As words, they are
    /// arguments of the call, whose room each call reuses.
    @inlinable
    @inline(__always)
    mutating func _appendRegistration<Key: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime?,
        dependencies: _DependencyKeys,
        fileID: StaticString,
        line: UInt,
        isOverride: Bool,
        isWrapperKey: Bool,
        argumentFactoryForm: _ArgumentFactoryForm = .none,
        isPairedForm: Bool = false,
        makeSynchronously: @escaping _AnyFactory.SyncThunk,
        makeAsynchronously: _AnyFactory.AsyncThunk? = nil
    ) {
        let layout = _ValueLayout(of: Key.Value.self)
        _appendRegistration(
            key,
            lifetime: lifetime,
            dependency0: dependencies.inline.0,
            dependency1: dependencies.inline.1,
            dependency2: dependencies.inline.2,
            dependency3: dependencies.inline.3,
            spilledDependencies: dependencies.spilled,
            dependencyCount: dependencies.storedCount,
            dependencyKinds: dependencies.inlineKinds,
            fileID: fileID,
            line: line,
            isOverride: isOverride,
            isWrapperKey: isWrapperKey,
            argumentFactoryForm: argumentFactoryForm,
            isPairedForm: isPairedForm,
            makeSynchronously: makeSynchronously,
            makeAsynchronously: makeAsynchronously,
            valueSize: layout.storedSize,
            valueAlignment: layout.storedAlignment,
            valueType: layout.valueType,
            hasHooks: layout.hasHooks,
            isObject: layout.isObject,
            isBorrowed: false
        )
    }

    /// Adds a registration given as the parts of its factory and dependency list (see the inlined
    /// `_appendRegistration` above).
    @usableFromInline
    mutating func _appendRegistration<Key: ServiceKey>(
        _ key: Key.Type,
        lifetime: Lifetime?,
        dependency0: Any.Type?,
        dependency1: Any.Type?,
        dependency2: Any.Type?,
        dependency3: Any.Type?,
        spilledDependencies: [(key: Any.Type, kind: _DependencyKind)]?,
        dependencyCount: UInt32,
        dependencyKinds: UInt32,
        fileID: StaticString,
        line: UInt,
        isOverride: Bool,
        isWrapperKey: Bool,
        argumentFactoryForm: _ArgumentFactoryForm,
        isPairedForm: Bool,
        makeSynchronously: @escaping _AnyFactory.SyncThunk,
        makeAsynchronously: _AnyFactory.AsyncThunk?,
        valueSize: UInt32,
        valueAlignment: UInt32,
        valueType: Any.Type,
        hasHooks: @escaping @Sendable (UnsafeRawPointer, _HookAnswer?) -> Bool,
        isObject: Bool,
        isBorrowed: Bool
    ) {
        var registration = Registration(
            key: key,
            lifetime: lifetime ?? .singleton,
            dependencies: _DependencyKeys(
                inline: (dependency0, dependency1, dependency2, dependency3),
                spilled: spilledDependencies,
                storedCount: dependencyCount,
                inlineKinds: dependencyKinds
            ),
            site: SiteLiteral(fileID: fileID, line: line),
            factory: _AnyFactory(
                makeSynchronously: makeSynchronously,
                makeAsynchronously: makeAsynchronously,
                layout: _ValueLayout(
                    storedSize: valueSize,
                    storedAlignment: valueAlignment,
                    valueType: valueType,
                    hasHooks: hasHooks,
                    isObject: isObject
                ),
                isBorrowed: isBorrowed
            ),
            isOverride: isOverride
        )
        registration.inheritsLifetime = lifetime == nil
        // Decided where `provide` is inlined, where the key's type is known: constants there.
        registration.isWrapperKey = isWrapperKey
        registration.argumentFactoryForm = argumentFactoryForm
        registration.isPairedForm = isPairedForm
        registration.scopeKind = currentScopeKind
        registration.module = currentModule
        registrations.append(consume registration)
    }
}
