import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// `singletons(as:)`: what a server's runner reads to start long-running services in the graph's
/// order (see the Servers article).
@Suite("Listing singletons by type")
struct SingletonListingTests {
    protocol Runnable: Sendable {
        var name: String { get }
    }

    final class RunnableObject: Runnable {
        let name: String
        init(_ name: String) { self.name = name }
    }

    struct RunnableValue: Runnable, Equatable {
        let name: String
        let padding: (Int, Int, Int, Int) = (1, 2, 3, 4)  // too large for an existential's inline buffer
        static func == (lhs: Self, rhs: Self) -> Bool { lhs.name == rhs.name }
    }

    enum DatabaseKey: ServiceKey { typealias Value = RunnableObject }
    enum CacheKey: ServiceKey { typealias Value = RunnableValue }
    enum WorkerKey: ServiceKey { typealias Value = RunnableObject }
    enum PlainKey: ServiceKey { typealias Value = Int }
    enum TransientKey: ServiceKey { typealias Value = RunnableObject }
    enum ScopedKey: ServiceKey { typealias Value = RunnableObject }
    enum LazyKey: ServiceKey { typealias Value = RunnableObject }
    enum LazyUserKey: ServiceKey { typealias Value = Lazy<LazyKey> }

    /// Worker → Cache → Database, declared in reverse so that declaration order is not creation order;
    /// plus services that are not listed: a plain value, a transient, a scoped one, a lazy singleton.
    private func builder() -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(WorkerKey.self, dependsOn: CacheKey.self, PlainKey.self) { _, _ in RunnableObject("worker") }
        builder.provide(CacheKey.self, dependsOn: DatabaseKey.self) { _ in RunnableValue(name: "cache") }
        builder.provide(DatabaseKey.self) { RunnableObject("database") }
        builder.provide(PlainKey.self) { 42 }
        builder.provide(TransientKey.self, lifetime: .transient) { RunnableObject("transient") }
        builder.provide(ScopedKey.self, lifetime: .scoped) { RunnableObject("scoped") }
        builder.provide(LazyKey.self) { RunnableObject("lazy") }
        builder.provide(LazyUserKey.self, dependsOn: Lazy<LazyKey>.self) { $0 }
        return builder
    }

    @Test func listsTheBuildsSingletonsOfATypeInCreationOrder() async throws {
        let graph = try await builder().build()
        let listed = graph.singletons(as: (any Runnable).self)
        #expect(
            listed.map(\.key) == [
                "SingletonListingTests.DatabaseKey", "SingletonListingTests.CacheKey",
                "SingletonListingTests.WorkerKey",
            ]
        )
        #expect(listed.map(\.value.name) == ["database", "cache", "worker"])
        // The same instances the graph resolves, not copies made for the list.
        #expect(listed[0].value as? RunnableObject === graph[DatabaseKey.self])
        #expect(listed[2].value as? RunnableObject === graph[WorkerKey.self])
        #expect(listed[1].value as? RunnableValue == graph[CacheKey.self])
        // The order is the graph's initialization order, filtered.
        let order = graph.initializationOrder
        let positions = listed.map { entry in order.firstIndex(of: entry.key) ?? -1 }
        #expect(positions == positions.sorted() && !positions.contains(-1))
        try await graph.shutdown()
    }

    @Test func aConcreteTypeAndAnyListWhatTheyMatch() async throws {
        let graph = try await builder().build()
        #expect(graph.singletons(as: RunnableObject.self).map(\.value.name) == ["database", "worker"])
        #expect(graph.singletons(as: RunnableValue.self).map(\.value.name) == ["cache"])
        #expect(graph.singletons(as: Int.self).map(\.value) == [42])
        // Every singleton the build created, and only those: the lazy one is not created yet.
        #expect(graph.singletons(as: Any.self).map(\.key) == graph.initializationOrder)
        #expect(!graph.initializationOrder.contains { $0.hasSuffix(".LazyKey") })
        #expect(graph.singletons(as: String.self).isEmpty)
        try await graph.shutdown()
    }

    @Test func transientAndScopedInstancesAreNeverListed() async throws {
        let graph = try await builder().build()
        let scope = try graph.makeScope()
        _ = try await scope.resolve(ScopedKey.self)
        _ = try await graph.resolve(TransientKey.self)
        #expect(
            !graph.singletons(as: RunnableObject.self).contains { ["scoped", "transient"].contains($0.value.name) }
        )
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func aChildGraphListsItsOwnSingletonsOnly() async throws {
        let parent = try await builder().build()
        var childBuilder = parent.makeChildBuilder()
        enum ChildKey: ServiceKey { typealias Value = RunnableObject }
        childBuilder.provide(ChildKey.self, dependsOn: WorkerKey.self) { _ in RunnableObject("child") }
        let child = try await childBuilder.build()
        #expect(child.singletons(as: (any Runnable).self).map(\.value.name) == ["child"])
        try await child.shutdown()
        try await parent.shutdown()
    }

    @Test func theListSurvivesShutdown() async throws {
        let graph = try await builder().build()
        let before = graph.singletons(as: (any Runnable).self).map(\.key)
        try await graph.shutdown()
        #expect(graph.singletons(as: (any Runnable).self).map(\.key) == before)
        #expect(before.count == 3)
    }

    enum RunnersKey: ContributionKey { typealias Element = RunnableObject }

    /// A child that contributes to a list its parent filled places the parent's elements under keys of
    /// its own list: they are still the parent's instances, and not listed by the child.
    @Test func aChildsListOfContributionsDoesNotListTheParentsElements() async throws {
        var parentBuilder = ServiceGraph.Builder()
        parentBuilder.contribute(RunnersKey.self, id: "parent") { RunnableObject("parent's") }
        let parent = try await parentBuilder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.contribute(RunnersKey.self, id: "child") { RunnableObject("child's") }
        let child = try await childBuilder.build()
        #expect(child[RunnersKey.self].map(\.name) == ["parent's", "child's"])
        #expect(child[RunnersKey.self][0] === parent[RunnersKey.self][0])
        #expect(parent.singletons(as: RunnableObject.self).map(\.value.name) == ["parent's"])
        #expect(child.singletons(as: RunnableObject.self).map(\.value.name) == ["child's"])
        try await child.shutdown()
        try await parent.shutdown()
    }

    @Test func anInstanceUnderTwoKeysIsListedUnderEach() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(DatabaseKey.self) { RunnableObject("database") }
        builder.provide(WorkerKey.self, dependsOn: DatabaseKey.self) { $0 }
        let graph = try await builder.build()
        let listed = graph.singletons(as: RunnableObject.self)
        #expect(listed.map(\.key) == ["SingletonListingTests.DatabaseKey", "SingletonListingTests.WorkerKey"])
        #expect(listed[0].value === listed[1].value)
        try await graph.shutdown()
    }

    /// Many services in a random dependency order: each listed service comes after everything it
    /// depends on.
    @Test(arguments: [1, 2, 3]) func theOrderRespectsDependenciesInARandomGraph(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let count = 300
        var dependencies: [[Int]] = []
        for index in 0..<count {
            let picks = (0..<(index == 0 ? 0 : Int.random(in: 0...3, using: &random))).map { _ in
                Int.random(in: 0..<index, using: &random)
            }
            dependencies.append(Array(Set(picks)))
        }
        var builder = ServiceGraph.Builder()
        for index in (0..<count).shuffled(using: &random) {
            GeneratedKeys.provide(index, dependsOn: dependencies[index], into: &builder)
        }
        let graph = try await builder.build()
        let listed = graph.singletons(as: GeneratedService.self).map(\.value.index)
        #expect(listed.count == count)
        var position = [Int: Int]()
        for (offset, index) in listed.enumerated() { position[index] = offset }
        for index in 0..<count {
            for dependency in dependencies[index] {
                #expect(position[dependency]! < position[index]!)
            }
        }
        try await graph.shutdown()
    }
}
