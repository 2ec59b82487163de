import ServiceGraph

/// A key of the stateful model: generated key `n`, or the key of a test double standing in for one.
enum ModelKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    case plain(Int)
    /// `DoubleKey<key n, HookedModelDouble or PlainModelDouble>`.
    case double(of: Int, hooked: Bool)

    var description: String {
        switch self {
        case .plain(let index): "k\(index)"
        case .double(let index, let hooked): "k\(index) double\(hooked ? "H" : "P")"
        }
    }

    var index: Int {
        switch self {
        case .plain(let index), .double(let index, _): index
        }
    }

    private var order: (Int, Int) {
        switch self {
        case .plain(let index): (index, 0)
        case .double(let index, let hooked): (index, hooked ? 2 : 1)
        }
    }

    static func < (lhs: ModelKey, rhs: ModelKey) -> Bool { lhs.order < rhs.order }
}

extension Lifetime {
    var shortName: String {
        switch self {
        case .singleton: "S"
        case .scoped: "scoped"
        case .transient: "transient"
        }
    }
}

/// One provider with a factory that makes a new model instance.
struct ProviderSpec: Sendable, CustomStringConvertible {
    let label: String
    let key: ModelKey
    /// Its lifetime in the graph (an override's is the one of the provider it replaces).
    let lifetime: Lifetime
    let dependencies: [ModelKey]
    let isAsync: Bool
    let hasHooks: Bool
    var factory = ModelFault.none
    var didAdd = ModelFault.none
    var willRemove = ModelFault.none

    var description: String {
        var text = "\(key)=\(label) \(lifetime.shortName)"
        if isAsync { text += " async" }
        if hasHooks { text += " H" }
        if factory != .none { text += " f:\(factory)" }
        if didAdd != .none { text += " d:\(didAdd)" }
        if willRemove != .none { text += " w:\(willRemove)" }
        if !dependencies.isEmpty { text += " ←" + dependencies.map(\.description).joined(separator: ",") }
        return text
    }

    var blueprint: ModelBlueprint {
        ModelBlueprint(
            key: key.description,
            index: key.index,
            label: label,
            isOwned: lifetime != .transient,
            hasHooks: hasHooks,
            didAdd: didAdd,
            willRemove: willRemove
        )
    }

    var hangs: Bool { factory.isHanging || (hasHooks && (didAdd.isHanging || willRemove.isHanging)) }
}

/// Where a key's value comes from in one graph.
enum KeySource {
    /// A factory that makes a new instance.
    case make(ProviderSpec)
    /// `{ $0 }` of another key: the same instance under two keys.
    case alias(ModelKey)
    /// `override(_:with:)`: an instance made by the test.
    case value(label: String, serial: Int)
    /// A child graph's view of its parent's singleton.
    case borrowed(ParentModel)
}

/// The parent graph a child's singleton is borrowed from, unowned: the run owns every graph model
/// (``StatefulRun/graphs``) until it ends, and a child's spec held strongly by a parent's child would
/// be a reference cycle that outlives the run.
struct ParentModel {
    unowned let model: GraphModel

    init(_ model: GraphModel) {
        self.model = model
    }
}

struct KeyEntry {
    var lifetime: Lifetime
    var source: KeySource
}

/// The providers of a builder as the model sees them: what each key resolves to.
struct GraphSpec {
    var entries: [ModelKey: KeyEntry] = [:]
    /// Overrides of keys nobody provides: validation must fail, naming each.
    var unknownOverrides: [ModelKey] = []
    var hookTimeout: Duration?
    var factoryTimeout: Duration?

    var keys: [ModelKey] { entries.keys.sorted() }

    func lifetime(of key: ModelKey) -> Lifetime? { entries[key]?.lifetime }

    /// The label of the provider whose instance `key` hands out.
    func label(of key: ModelKey) -> String {
        guard let entry = entries[key] else { return "?" }
        switch entry.source {
        case .make(let spec): return spec.label
        case .alias(let target): return label(of: target)
        case .value(let label, _): return label
        case .borrowed(let parent): return parent.model.spec.label(of: key)
        }
    }

    /// The keys `key`'s provider depends on.
    func dependencies(of key: ModelKey) -> [ModelKey] {
        guard let entry = entries[key] else { return [] }
        switch entry.source {
        case .make(let spec): return spec.dependencies
        case .alias(let target): return [target]
        case .value, .borrowed: return []
        }
    }

    /// Every key `key` depends on, directly or not.
    func transitiveDependencies(of key: ModelKey) -> [ModelKey] {
        var found: [ModelKey] = []
        var stack = dependencies(of: key)
        while let next = stack.popLast() {
            guard !found.contains(next) else { continue }
            found.append(next)
            stack += dependencies(of: next)
        }
        return found
    }

    /// Whether resolving `key` needs a scope: it is scoped or depends on a scoped service.
    func needsScope(_ key: ModelKey) -> Bool {
        guard let entry = entries[key] else { return false }
        if entry.lifetime == .scoped { return true }
        if entry.lifetime == .singleton { return false }
        return dependencies(of: key).contains { needsScope($0) }
    }

    /// Whether `key` resolves without suspending (``ServiceGraph/resolveSynchronously(_:)``).
    func resolvesNow(_ key: ModelKey) -> Bool {
        guard let entry = entries[key] else { return false }
        switch entry.lifetime {
        case .singleton: return true
        case .scoped: return false
        case .transient:
            if case .make(let spec) = entry.source, spec.isAsync { return false }
            return dependencies(of: key).allSatisfy { resolvesNow($0) }
        }
    }

    /// The singletons this graph makes itself (not borrowed from a parent), with their providers.
    var ownSingletons: [ProviderSpec] {
        keys.compactMap { key in
            guard let entry = entries[key], entry.lifetime == .singleton, case .make(let spec) = entry.source
            else { return nil }
            return spec
        }
    }

    /// The failures a build must report (at least one of them, nothing else): the own singletons whose
    /// factory or `didAdd` fails or hangs.
    var buildFailures: [ExpectedProblem] {
        ownSingletons.compactMap { spec in
            if spec.factory == .throwing { return ExpectedProblem(.factoryFailed, spec.key) }
            if spec.factory.isHanging { return ExpectedProblem(.factoryTimedOut, spec.key) }
            if spec.hasHooks && spec.didAdd == .throwing { return ExpectedProblem(.didAddFailed, spec.key) }
            if spec.hasHooks && spec.didAdd.isHanging { return ExpectedProblem(.hookTimedOut, spec.key) }
            return nil
        }
    }

    /// Whether some provider hangs in a hook, or in a factory: the builder needs the matching timeout.
    var hasHangingHook: Bool {
        entries.values.contains { entry in
            guard case .make(let spec) = entry.source, spec.hasHooks, entry.lifetime != .transient else { return false }
            return spec.didAdd.isHanging || spec.willRemove.isHanging
        }
    }

    var hasHangingFactory: Bool {
        entries.values.contains { entry in
            guard case .make(let spec) = entry.source else { return false }
            return spec.factory.isHanging
        }
    }

    /// The first failure creating `key` in a scope whose instances are `existing`, following the
    /// order the graph creates them in (dependencies in declaration order, then the factory, then
    /// `didAdd`); nil when it succeeds.
    func creationFailure(of key: ModelKey, existing: [ModelKey: Int]) -> ExpectedProblem? {
        guard let entry = entries[key] else { return nil }
        switch entry.lifetime {
        case .singleton: return nil
        case .scoped: if existing[key] != nil { return nil }
        case .transient: break
        }
        switch entry.source {
        case .alias(let target): return creationFailure(of: target, existing: existing)
        case .value, .borrowed: return nil
        case .make(let spec):
            for dependency in spec.dependencies {
                if let failure = creationFailure(of: dependency, existing: existing) { return failure }
            }
            if spec.factory == .throwing { return ExpectedProblem(.factoryFailed, key) }
            if spec.factory.isHanging { return ExpectedProblem(.factoryTimedOut, key) }
            if entry.lifetime == .scoped && spec.hasHooks {
                if spec.didAdd == .throwing { return ExpectedProblem(.didAddFailed, key) }
                if spec.didAdd.isHanging { return ExpectedProblem(.hookTimedOut, key) }
            }
            return nil
        }
    }

    /// The first failure resolving `key` on the graph itself (no scope).
    func graphResolveFailure(of key: ModelKey) -> ExpectedProblem? {
        guard let entry = entries[key] else { return nil }
        switch entry.lifetime {
        case .singleton: return nil
        case .scoped: return ExpectedProblem(.wrongLifetime, key)
        case .transient: break
        }
        switch entry.source {
        case .alias(let target): return graphResolveFailure(of: target)
        case .value, .borrowed: return nil
        case .make(let spec):
            for dependency in spec.dependencies {
                if let failure = graphResolveFailure(of: dependency) { return failure }
            }
            if spec.factory == .throwing { return ExpectedProblem(.factoryFailed, key) }
            return nil
        }
    }

    /// The spec of a child graph of `parent`: its singletons borrowed, its other providers run anew.
    static func child(of parent: GraphModel) -> GraphSpec {
        var spec = GraphSpec()
        for (key, entry) in parent.spec.entries {
            spec.entries[key] =
                entry.lifetime == .singleton
                ? KeyEntry(lifetime: .singleton, source: .borrowed(ParentModel(parent))) : entry
        }
        return spec
    }
}

/// A problem the model expects: its code and the key it names.
struct ExpectedProblem: Hashable, CustomStringConvertible {
    let code: ServiceGraphError.Code
    let key: ModelKey?
    /// Names the key may appear under (the key's own name when empty).
    var names: Set<String> = []

    init(_ code: ServiceGraphError.Code, _ key: ModelKey?, names: Set<String> = []) {
        self.code = code
        self.key = key
        self.names = names
    }

    var description: String { "\(code) \(key?.description ?? "")" }
}

/// A builder the sequence keeps, with what the model knows of it.
final class BuilderModel {
    let id: Int
    var builder: ServiceGraph.Builder
    let spec: GraphSpec

    init(id: Int, builder: ServiceGraph.Builder, spec: GraphSpec) {
        self.id = id
        self.builder = builder
        self.spec = spec
    }
}

/// Holds an object weakly, to see when it is gone.
final class WeakHandle: @unchecked Sendable {
    weak var object: AnyObject?

    init(_ object: AnyObject) {
        self.object = object
    }

    var isAlive: Bool { object != nil }
}

/// A built graph as the model sees it.
final class GraphModel {
    enum State: Equatable {
        case live
        case shutDown
    }

    let id: Int
    let spec: GraphSpec
    /// Unowned, as ``ParentModel``: the parent holds its children.
    unowned let parent: GraphModel?
    var children: [GraphModel] = []
    /// The test's reference; nil once the test dropped the graph.
    var graph: ServiceGraph?
    let weakGraph: WeakHandle
    var state = State.live
    /// The problems its own `shutdown()` reported, to compare a later call with; nil when it was shut
    /// down by its parent.
    var shutdownProblems: String?
    /// The serial of each singleton, as the graph hands it out.
    var singletons: [ModelKey: Int] = [:]
    var scopes: [ScopeModel] = []
    /// The test has checked that the graph is gone (and what it said on the way).
    var releaseChecked = false
    /// Its own started singletons when the test dropped it without shutdown.
    var owedWhenDropped: [Int] = []

    init(id: Int, spec: GraphSpec, parent: GraphModel?, graph: ServiceGraph) {
        self.id = id
        self.spec = spec
        self.parent = parent
        self.graph = graph
        self.weakGraph = WeakHandle(graph)
    }

    var name: String { "G\(id)" }
    var isHeld: Bool { graph != nil }
    /// Alive: held by the test, or by a live child graph (a child keeps its parent).
    var isAlive: Bool { isHeld || children.contains { $0.isAlive } }
    var isShutDown: Bool { state == .shutDown }

    /// This graph and its live descendants that are not shut down: what its `shutdown()` shuts down.
    var shutdownFamily: [GraphModel] {
        guard !isShutDown else { return [] }
        return [self] + children.filter { $0.isAlive }.flatMap(\.shutdownFamily)
    }
}

/// A scope as the model sees it.
final class ScopeModel {
    enum State: Equatable {
        case open
        case closed
        /// Dropped by the test without `close()`; its release may still be running.
        case dropped
    }

    let id: Int
    /// Unowned: the graph model holds its scopes, and the run holds every graph model until it ends.
    unowned let graph: GraphModel
    var scope: ServiceScope?
    let weakScope: WeakHandle
    var state = State.open
    /// The serial of the scope's instance of each scoped key made by a factory.
    var values: [ModelKey: Int] = [:]

    init(id: Int, graph: GraphModel, scope: ServiceScope) {
        self.id = id
        self.graph = graph
        self.scope = scope
        self.weakScope = WeakHandle(scope)
    }

    var name: String { "S\(id)" }
    var isOpen: Bool { state == .open && !graph.isShutDown }
}
