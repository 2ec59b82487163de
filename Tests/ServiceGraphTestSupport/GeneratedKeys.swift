package import ServiceGraph
import Synchronization

/// Distinct key types made at run time, for large and random generated graphs.
///
/// Key `n` is a type spelling `n` in binary: `Bit1<Bit0<Bit1<Root>>>` is key 5. Every `n` below
/// 2^bits gets its own type (and so its own identity in the graph) with nesting only `bits` deep.
package protocol GeneratedKey: GeneratedDependency where Value == GeneratedService {}

/// What a generated service may list in `dependsOn`: a generated key, or an optional one.
package protocol GeneratedDependency: ServiceKey {
    /// What the dependency's value adds to its dependent's value.
    static func contribution(_ value: Value) -> Int
}

extension GeneratedKey {
    package static func contribution(_ value: GeneratedService) -> Int { value.value }
}

/// An optional dependency on a generated key adds nothing where the key is not provided.
extension Optional: GeneratedDependency where Wrapped: GeneratedKey {
    package static func contribution(_ value: GeneratedService?) -> Int { value?.value ?? 0 }
}

/// A lazy handle on a generated key adds nothing: nothing is made with its holder.
extension Lazy: GeneratedDependency where Key: GeneratedKey {
    package static func contribution(_ value: Lazy<Key>) -> Int { 0 }
}

/// A provider of a generated key adds nothing: nothing is made with its holder.
extension Provider: GeneratedDependency where Key: GeneratedKey {
    package static func contribution(_ value: Provider<Key>) -> Int { 0 }
}

package enum GeneratedRoot: GeneratedKey { package typealias Value = GeneratedService }
package enum Bit0<Inner: GeneratedKey>: GeneratedKey { package typealias Value = GeneratedService }
package enum Bit1<Inner: GeneratedKey>: GeneratedKey { package typealias Value = GeneratedService }

extension GeneratedKey {
    package static var appendingZero: any GeneratedKey.Type { Bit0<Self>.self }
    package static var appendingOne: any GeneratedKey.Type { Bit1<Self>.self }
}

/// A generated service: its value is one plus the sum of its dependencies' values.
open class GeneratedService: @unchecked Sendable {
    package let index: Int
    package let value: Int

    package init(index: Int, value: Int) {
        self.index = index
        self.value = value
    }
}

/// A generated service that reports its life to a ``GraphRecorder`` and fails where it is told to.
package final class RecordingService: GeneratedService, LifecycleHooks, @unchecked Sendable {
    package let recorder: GraphRecorder

    package init(index: Int, value: Int, recorder: GraphRecorder) {
        self.recorder = recorder
        super.init(index: index, value: value)
        recorder.record(.created(index))
    }

    deinit {
        recorder.released(index)
    }

    package func didAdd() async throws {
        recorder.record(.didAdd(index))
        if recorder.plan.hangingDidAdd == index {
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
        if recorder.plan.failingDidAdd == index { throw TestFailure("didAdd of \(index) failed on purpose") }
    }

    package func willRemove() async throws {
        recorder.record(.willRemove(index))
        if recorder.plan.hangingWillRemove == index {
            // Ignores cancellation on purpose: the graph must abandon it, not wait for it.
            let deadline = ContinuousClock.now + .seconds(3)
            while ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        }
        if recorder.plan.failingWillRemove.contains(index) {
            throw TestFailure("willRemove of \(index) failed on purpose")
        }
    }
}

/// Where a generated graph's services fail on purpose.
package struct FailurePlan: Sendable {
    package var failingFactory: Int?
    package var failingDidAdd: Int?
    package var failingWillRemove: Set<Int> = []
    package var hangingDidAdd: Int?
    package var hangingWillRemove: Int?

    package init(
        failingFactory: Int? = nil,
        failingDidAdd: Int? = nil,
        failingWillRemove: Set<Int> = [],
        hangingDidAdd: Int? = nil,
        hangingWillRemove: Int? = nil
    ) {
        self.failingFactory = failingFactory
        self.failingDidAdd = failingDidAdd
        self.failingWillRemove = failingWillRemove
        self.hangingDidAdd = hangingDidAdd
        self.hangingWillRemove = hangingWillRemove
    }
}

/// Records what happens to a generated graph's services, in order, and counts live instances.
package final class GraphRecorder: Sendable {
    package enum Event: Equatable, Sendable {
        case created(Int)
        case didAdd(Int)
        case willRemove(Int)
    }

    package let plan: FailurePlan
    private let log = Locked<[Event]>([])
    private let live = Atomic<Int>(0)

    package init(plan: FailurePlan = FailurePlan()) {
        self.plan = plan
    }

    package func record(_ event: Event) {
        if case .created(let index) = event {
            live.add(1, ordering: .relaxed)
            liveIndices.withLock { $0[index, default: 0] += 1 }
        }
        log.withLock { $0.append(event) }
    }

    package func released(_ index: Int) {
        live.subtract(1, ordering: .relaxed)
        liveIndices.withLock { $0[index, default: 0] -= 1 }
    }

    private let liveIndices = Locked<[Int: Int]>([:])

    /// The indices of the instances still alive.
    package var aliveIndices: [Int] { liveIndices.withLock { $0.filter { $0.value > 0 }.keys.sorted() } }

    package var events: [Event] { log.withLock { $0 } }
    package var alive: Int { live.load(ordering: .relaxed) }

    package func position(of event: Event) -> Int? { events.firstIndex(of: event) }
    package func count(of event: Event) -> Int { events.filter { $0 == event }.count }
}

package enum GeneratedKeys {
    /// The key type for `index`.
    package static func key(_ index: Int, bits: Int = 20) -> any GeneratedKey.Type {
        var key: any GeneratedKey.Type = GeneratedRoot.self
        for bit in 0..<bits {
            key = (index >> bit) & 1 == 0 ? key.appendingZero : key.appendingOne
        }
        return key
    }

    /// Provides key `index` as one plus the sum of its dependencies' values; with a recorder, as a
    /// ``RecordingService`` that follows the recorder's failure plan. The dependencies at the positions
    /// in `optional` are optional (`Key?`): they add nothing where the key is not provided.
    package static func provide(
        _ index: Int,
        lifetime: Lifetime = .singleton,
        dependsOn dependencies: [Int],
        optional: Set<Int> = [],
        providers: Set<Int> = [],
        lazy: Set<Int> = [],
        asynchronous: Bool = false,
        recorder: GraphRecorder? = nil,
        into builder: inout ServiceGraph.Builder
    ) {
        let make: @Sendable ([Int]) throws -> GeneratedService = { contributions in
            let value = contributions.reduce(1, +)
            guard let recorder else { return GeneratedService(index: index, value: value) }
            if recorder.plan.failingFactory == index { throw TestFailure("factory of \(index) failed on purpose") }
            return RecordingService(index: index, value: value, recorder: recorder)
        }
        func open<K: GeneratedKey>(_ key: K.Type) {
            let keys = dependencies.enumerated().map { position, dependency in
                self.dependency(
                    dependency,
                    optional: optional.contains(position),
                    provider: providers.contains(position),
                    lazy: lazy.contains(position)
                )
            }
            if asynchronous {
                provideAsync(key, keys)
                return
            }
            switch keys.count {
            case 0: builder.provide(key, lifetime: lifetime) { try make([]) }
            case 1: provide1(key, keys[0])
            case 2: provide2(key, keys[0], keys[1])
            default: provide3(key, keys[0], keys[1], keys[2])
            }
        }
        func provide1<K: GeneratedKey, D1: GeneratedDependency>(_ key: K.Type, _ d1: D1.Type) {
            builder.provide(key, lifetime: lifetime, dependsOn: d1) { try make([D1.contribution($0)]) }
        }
        func provide2<K: GeneratedKey, D1: GeneratedDependency, D2: GeneratedDependency>(
            _ key: K.Type,
            _ d1: D1.Type,
            _ d2: D2.Type
        ) {
            builder.provide(key, lifetime: lifetime, dependsOn: d1, d2) {
                try make([D1.contribution($0), D2.contribution($1)])
            }
        }
        func provide3<K: GeneratedKey, D1: GeneratedDependency, D2: GeneratedDependency, D3: GeneratedDependency>(
            _ key: K.Type,
            _ d1: D1.Type,
            _ d2: D2.Type,
            _ d3: D3.Type
        ) {
            builder.provide(key, lifetime: lifetime, dependsOn: d1, d2, d3) {
                try make([D1.contribution($0), D2.contribution($1), D3.contribution($2)])
            }
        }
        func provideAsync<K: GeneratedKey>(_ key: K.Type, _ keys: [any GeneratedDependency.Type]) {
            // An async factory: it yields first, so concurrent builds interleave.
            func opened<D1: GeneratedDependency, D2: GeneratedDependency, D3: GeneratedDependency>(
                _ d1: D1.Type,
                _ d2: D2.Type,
                _ d3: D3.Type
            ) {
                switch keys.count {
                case 1:
                    builder.provide(key, lifetime: lifetime, dependsOn: d1) { a async throws in
                        await Task.yield()
                        return try make([D1.contribution(a)])
                    }
                case 2:
                    builder.provide(key, lifetime: lifetime, dependsOn: d1, d2) { a, b async throws in
                        await Task.yield()
                        return try make([D1.contribution(a), D2.contribution(b)])
                    }
                default:
                    builder.provide(key, lifetime: lifetime, dependsOn: d1, d2, d3) { a, b, c async throws in
                        await Task.yield()
                        return try make([D1.contribution(a), D2.contribution(b), D3.contribution(c)])
                    }
                }
            }
            if keys.isEmpty {
                builder.provide(key, lifetime: lifetime) { () async throws in
                    await Task.yield()
                    return try make([])
                }
                return
            }
            // Padding repeats the first key, but only the first `keys.count` are declared.
            let padded = keys + Array(repeating: keys[0], count: 3 - keys.count)
            opened(padded[0], padded[1], padded[2])
        }
        precondition(dependencies.count <= 3, "generated services depend on at most three others")
        open(key(index))
    }

    /// Generated key `index` as a dependency: the key, `Key?`, `Provider<Key>` or `Lazy<Key>`.
    package static func dependency(
        _ index: Int,
        optional: Bool,
        provider: Bool = false,
        lazy: Bool = false
    ) -> any GeneratedDependency.Type {
        func open<K: GeneratedKey>(_ key: K.Type) -> any GeneratedDependency.Type {
            lazy ? Lazy<K>.self : provider ? Provider<K>.self : optional ? Optional<K>.self : K.self
        }
        return open(key(index))
    }

    /// Declares generated key `index` as a seed of the graph's scopes.
    package static func seed(_ index: Int, into builder: inout ServiceGraph.Builder) {
        func open<K: GeneratedKey>(_ key: K.Type) { builder.seed(key) }
        open(key(index))
    }

    /// The value of seed `index` for a scope: a service of that value.
    package static func scopeSeed(_ index: Int, value: Int) -> ScopeSeed {
        func open<K: GeneratedKey>(_ key: K.Type) -> ScopeSeed {
            ScopeSeed(key, GeneratedService(index: index, value: value))
        }
        return open(key(index))
    }

    /// Provides a chain of `length` singletons, each depending on the one before.
    package static func provideChain(into builder: inout ServiceGraph.Builder, length: Int) {
        for index in 0..<length {
            provide(index, dependsOn: index == 0 ? [] : [index - 1], into: &builder)
        }
    }

    /// The name the graph uses for key `index` (cached: reflecting a nested generic type is slow).
    package static func name(_ index: Int) -> String {
        if let name = names.withLock({ $0[index] }) { return name }
        let name = key(index).serviceName
        names.withLock { $0[index] = name }
        return name
    }

    private static let names = Locked<[Int: String]>([:])
}

extension ServiceGraph {
    /// The singleton value of generated key `index`.
    package func generatedValue(_ index: Int) -> Int {
        func open<K: GeneratedKey>(_ key: K.Type) -> Int { self[key].value }
        return open(GeneratedKeys.key(index))
    }

    /// The graph's instance of generated key `index`, resolved.
    package func resolveGenerated(_ index: Int) async throws -> GeneratedService {
        func open<K: GeneratedKey>(_ key: K.Type) async throws -> GeneratedService { try await resolve(key) }
        return try await open(GeneratedKeys.key(index))
    }
}

extension ServiceScope {
    /// The scope's instance of generated key `index`.
    package func resolveGenerated(_ index: Int) async throws -> GeneratedService {
        func open<K: GeneratedKey>(_ key: K.Type) async throws -> GeneratedService { try await resolve(key) }
        return try await open(GeneratedKeys.key(index))
    }

    /// The scope's instance of generated key `index`, resolved without suspending.
    package func resolveGeneratedSynchronously(_ index: Int) throws -> GeneratedService {
        func open<K: GeneratedKey>(_ key: K.Type) throws -> GeneratedService { try resolveSynchronously(key) }
        return try open(GeneratedKeys.key(index))
    }
}
