import ServiceGraph
import ServiceGraphTestSupport

/// What a model factory makes: enough for the instance to record itself and misbehave as planned.
struct ModelBlueprint: Sendable {
    /// The short name of the key (`k3`, `k3 double`).
    let key: String
    let index: Int
    let label: String
    let isOwned: Bool
    let hasHooks: Bool
    var didAdd = ModelFault.none
    var willRemove = ModelFault.none
}

/// A service made by one of the stateful test's providers: it names the provider that made it,
/// records its life in a ``ModelJournal`` and keeps its dependencies, as a real service would.
class ModelService: GeneratedService, @unchecked Sendable {
    let serial: Int
    let label: String
    let journal: ModelJournal
    let dependencies: [GeneratedService]
    let blueprint: ModelBlueprint

    init(_ blueprint: ModelBlueprint, dependencies: [GeneratedService], journal: ModelJournal) {
        self.label = blueprint.label
        self.journal = journal
        self.dependencies = dependencies
        self.blueprint = blueprint
        self.serial = journal.register(
            key: blueprint.key,
            label: blueprint.label,
            isOwned: blueprint.isOwned,
            hasHooks: blueprint.hasHooks,
            didAddFault: blueprint.didAdd,
            willRemoveFault: blueprint.willRemove,
            dependencies: dependencies.compactMap { ($0 as? ModelService)?.serial }
        )
        super.init(index: blueprint.index, value: dependencies.reduce(1) { $0 + $1.value })
    }

    deinit {
        journal.released(serial)
    }

    /// The body of `didAdd` for the subclasses that adopt ``LifecycleHooks``.
    func runDidAdd() async throws {
        journal.didAddBegan(serial)
        do {
            try await blueprint.didAdd.wait()
        } catch {
            journal.didAddEnded(serial, succeeded: false)
            throw error
        }
        guard blueprint.didAdd != .throwing else {
            journal.didAddEnded(serial, succeeded: false)
            throw TestFailure("didAdd of \(label) failed on purpose")
        }
        journal.didAddEnded(serial, succeeded: true)
    }

    /// The body of `willRemove`: notes whether its task is cancelled, which cleanup must never be
    /// (but for a hook that hangs on purpose until the graph abandons it).
    func runWillRemove() async throws {
        var sawCancellation = Task.isCancelled
        journal.willRemoveBegan(serial)
        do {
            try await blueprint.willRemove.wait()
        } catch {
            if !blueprint.willRemove.isHanging { sawCancellation = true }
        }
        let fails = blueprint.willRemove == .throwing || blueprint.willRemove.isHanging
        journal.willRemoveEnded(serial, succeeded: !fails, sawCancellation: sawCancellation)
        if fails { throw TestFailure("willRemove of \(label) failed on purpose") }
    }
}

/// A model service with lifecycle hooks.
final class HookedModelService: ModelService, LifecycleHooks, @unchecked Sendable {
    func didAdd() async throws { try await runDidAdd() }
    func willRemove() async throws { try await runWillRemove() }
}

/// A test double with lifecycle hooks, installed with `override(_:withDouble:as:)`.
final class HookedModelDouble: ModelService, LifecycleHooks, @unchecked Sendable {
    func didAdd() async throws { try await runDidAdd() }
    func willRemove() async throws { try await runWillRemove() }
}

/// A test double without hooks.
final class PlainModelDouble: ModelService, @unchecked Sendable {}

/// Typed access to one key of a graph or scope, for keys the model names at run time.
struct KeyHandle: Sendable {
    /// The graph's name for the key, as errors and events use it.
    let name: String
    /// The singleton through the subscript, once `resolveSynchronously` has shown it is there (the
    /// subscript traps on a missing key).
    let read: @Sendable (ServiceGraph) throws -> GeneratedService
    let resolve: @Sendable (ServiceGraph) async throws -> GeneratedService
    let resolveNow: @Sendable (ServiceGraph) throws -> GeneratedService
    let resolveInScope: @Sendable (ServiceScope) async throws -> GeneratedService

    static func of<Key: ServiceKey>(_ key: Key.Type) -> KeyHandle where Key.Value: GeneratedService {
        KeyHandle(
            name: key.serviceName,
            read: { graph in
                _ = try graph.resolveSynchronously(key)
                return graph[key]
            },
            resolve: { try await $0.resolve(key) },
            resolveNow: { try $0.resolveSynchronously(key) },
            resolveInScope: { try await $0.resolve(key) }
        )
    }

    /// The handle of generated key `index`.
    static func generated(_ index: Int) -> KeyHandle {
        func open<Key: GeneratedKey>(_ key: Key.Type) -> KeyHandle { of(key) }
        return open(ModelWiring.key(index))
    }
}

/// Registers the model's providers with a builder under generated keys.
enum ModelWiring {
    typealias Make = @Sendable ([GeneratedService]) throws -> GeneratedService
    typealias MakeAsync = @Sendable ([GeneratedService]) async throws -> GeneratedService

    enum Body: Sendable {
        case sync(Make)
        case async(MakeAsync)
    }

    enum Mode {
        case provide(Lifetime)
        /// An override; nil keeps the lifetime of the provider it replaces.
        case override(Lifetime?)
    }

    /// The generated key `index` (eight bits: keys 0 to 255, with short type names).
    static func key(_ index: Int) -> any GeneratedKey.Type {
        GeneratedKeys.key(index, bits: 8)
    }

    /// Provides or overrides key `index`, depending on up to three generated keys.
    static func register(
        _ index: Int,
        _ mode: Mode,
        dependsOn dependencies: [Int],
        _ body: Body,
        into builder: inout ServiceGraph.Builder
    ) {
        precondition(dependencies.count <= 3, "model services depend on at most three others")
        let keys = dependencies.map(key)
        func open<K: GeneratedKey>(_ key: K.Type) {
            switch keys.count {
            case 0: register0(key)
            case 1: open1(key, keys[0])
            case 2: open2(key, keys[0], keys[1])
            default: open3(key, keys[0], keys[1], keys[2])
            }
        }
        func open1<K: GeneratedKey, A: GeneratedKey>(_ key: K.Type, _ a: A.Type) { register1(key, a) }
        func open2<K: GeneratedKey, A: GeneratedKey>(_ key: K.Type, _ a: A.Type, _ b: any GeneratedKey.Type) {
            func inner<B: GeneratedKey>(_ b: B.Type) { register2(key, a, b) }
            inner(b)
        }
        func open3<K: GeneratedKey, A: GeneratedKey>(
            _ key: K.Type,
            _ a: A.Type,
            _ b: any GeneratedKey.Type,
            _ c: any GeneratedKey.Type
        ) {
            func inner<B: GeneratedKey, C: GeneratedKey>(_ b: B.Type, _ c: C.Type) { register3(key, a, b, c) }
            func middle<B: GeneratedKey>(_ b: B.Type) {
                func last<C: GeneratedKey>(_ c: C.Type) { inner(b, c) }
                last(c)
            }
            middle(b)
        }
        func register0<K: GeneratedKey>(_ key: K.Type) {
            switch (mode, body) {
            case (.provide(let lifetime), .sync(let make)):
                builder.provide(key, lifetime: lifetime) { try make([]) }
            case (.provide(let lifetime), .async(let make)):
                builder.provide(key, lifetime: lifetime) { () async throws in try await make([]) }
            case (.override(let lifetime), .sync(let make)):
                builder.override(key, lifetime: lifetime) { try make([]) }
            case (.override(let lifetime), .async(let make)):
                builder.override(key, lifetime: lifetime) { () async throws in try await make([]) }
            }
        }
        func register1<K: GeneratedKey, A: GeneratedKey>(_ key: K.Type, _ a: A.Type) {
            switch (mode, body) {
            case (.provide(let lifetime), .sync(let make)):
                builder.provide(key, lifetime: lifetime, dependsOn: a) { try make([$0]) }
            case (.provide(let lifetime), .async(let make)):
                builder.provide(key, lifetime: lifetime, dependsOn: a) { x async throws in try await make([x]) }
            case (.override(let lifetime), .sync(let make)):
                builder.override(key, lifetime: lifetime, dependsOn: a) { try make([$0]) }
            case (.override(let lifetime), .async(let make)):
                builder.override(key, lifetime: lifetime, dependsOn: a) { x async throws in try await make([x]) }
            }
        }
        func register2<K: GeneratedKey, A: GeneratedKey, B: GeneratedKey>(_ key: K.Type, _ a: A.Type, _ b: B.Type) {
            switch (mode, body) {
            case (.provide(let lifetime), .sync(let make)):
                builder.provide(key, lifetime: lifetime, dependsOn: a, b) { try make([$0, $1]) }
            case (.provide(let lifetime), .async(let make)):
                builder.provide(key, lifetime: lifetime, dependsOn: a, b) { x, y async throws in
                    try await make([x, y])
                }
            case (.override(let lifetime), .sync(let make)):
                builder.override(key, lifetime: lifetime, dependsOn: a, b) { try make([$0, $1]) }
            case (.override(let lifetime), .async(let make)):
                builder.override(key, lifetime: lifetime, dependsOn: a, b) { x, y async throws in
                    try await make([x, y])
                }
            }
        }
        func register3<K: GeneratedKey, A: GeneratedKey, B: GeneratedKey, C: GeneratedKey>(
            _ key: K.Type,
            _ a: A.Type,
            _ b: B.Type,
            _ c: C.Type
        ) {
            switch (mode, body) {
            case (.provide(let lifetime), .sync(let make)):
                builder.provide(key, lifetime: lifetime, dependsOn: a, b, c) { try make([$0, $1, $2]) }
            case (.provide(let lifetime), .async(let make)):
                builder.provide(key, lifetime: lifetime, dependsOn: a, b, c) { x, y, z async throws in
                    try await make([x, y, z])
                }
            case (.override(let lifetime), .sync(let make)):
                builder.override(key, lifetime: lifetime, dependsOn: a, b, c) { try make([$0, $1, $2]) }
            case (.override(let lifetime), .async(let make)):
                builder.override(key, lifetime: lifetime, dependsOn: a, b, c) { x, y, z async throws in
                    try await make([x, y, z])
                }
            }
        }
        open(key(index))
    }

    /// `override(_:with:)`: key `index` becomes a singleton holding `value`.
    static func override(_ index: Int, with value: GeneratedService, into builder: inout ServiceGraph.Builder) {
        func open<K: GeneratedKey>(_ key: K.Type) { builder.override(key, with: value) }
        open(key(index))
    }

    /// `override(_:withDouble:as:)` on key `index`, with a double made from `blueprint` (with hooks or
    /// without, two different types); returns the handle of the double's key.
    static func overrideWithDouble(
        _ index: Int,
        _ blueprint: ModelBlueprint,
        journal: ModelJournal,
        into builder: inout ServiceGraph.Builder
    ) -> KeyHandle {
        func open<K: GeneratedKey>(_ key: K.Type) -> KeyHandle {
            if blueprint.hasHooks {
                let double = builder.override(
                    key,
                    withDouble: { HookedModelDouble(blueprint, dependencies: [], journal: journal) },
                    as: { $0 }
                )
                return KeyHandle.of(double)
            }
            let double = builder.override(
                key,
                withDouble: { PlainModelDouble(blueprint, dependencies: [], journal: journal) },
                as: { $0 }
            )
            return KeyHandle.of(double)
        }
        return open(key(index))
    }
}
