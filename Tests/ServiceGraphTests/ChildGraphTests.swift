import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum Theme: ServiceKey { typealias Value = String }
private enum Greeting: ServiceKey { typealias Value = String }
private enum Billing: ServiceKey { typealias Value = String }

@Suite("Child graphs")
struct ChildGraphTests {
    private func parent(_ log: EventLog) async throws -> ServiceGraph {
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(Theme.self) { "light" }
        builder.provide(Greeting.self, lifetime: .transient, dependsOn: Theme.self) { "hello in \($0)" }
        builder.provide(ServiceB.self, lifetime: .scoped, dependsOn: ServiceA.self) { _ in HookedService("B", log: log)
        }
        return try await builder.build()
    }

    @Test func aChildSharesTheParentsSingletonsAndAddsServicesThatDependOnThem() async throws {
        let log = EventLog()
        let parent = try await parent(log)
        var child = parent.makeChildBuilder()
        child.provide(Billing.self, dependsOn: ServiceA.self) { "billing for \($0.name)" }
        let graph = try await child.build()
        #expect(graph[ServiceA.self] === parent[ServiceA.self])
        #expect(graph[Billing.self] == "billing for A")
        #expect(log.count(of: "init A") == 1)
        #expect(log.count(of: "didAdd A") == 1, "the parent owns its singletons' hooks")
        try await graph.shutdown()
        #expect(log.count(of: "willRemove A") == 0, "a child does not release what its parent owns")
        try await parent.shutdown()
        #expect(log.count(of: "willRemove A") == 1)
    }

    @Test func theChildIsSearchedFirstAndTheParentIsUntouched() async throws {
        let parent = try await parent(EventLog())
        var child = parent.makeChildBuilder()
        child.provide(Theme.self) { "dark" }
        let graph = try await child.build()
        #expect(try await graph.resolve(Greeting.self) == "hello in dark", "the child's dependents see its theme")
        #expect(try await parent.resolve(Greeting.self) == "hello in light")
        #expect(graph.dump().contains("Theme: String [singleton, #"))
        try await parent.shutdown()
    }

    @Test func childrenOfChildrenAreSearchedInOrder() async throws {
        let root = try await parent(EventLog())
        var first = root.makeChildBuilder()
        first.provide(Theme.self) { "sepia" }
        let middle = try await first.build()
        var second = middle.makeChildBuilder()
        second.provide(Billing.self, dependsOn: Theme.self) { "billing in \($0)" }
        let leaf = try await second.build()
        #expect(leaf[Billing.self] == "billing in sepia", "the middle graph is searched before the root")
        #expect(try await leaf.resolve(Greeting.self) == "hello in sepia")
        try await root.shutdown()
    }

    @Test func aChildMakesItsOwnScopedInstances() async throws {
        let log = EventLog()
        let parent = try await parent(log)
        let graph = try await parent.makeChildBuilder().build()
        let scope = try graph.makeScope()
        let instance = try await scope.resolve(ServiceB.self)
        #expect(instance.name == "B")
        try await scope.close()
        #expect(log.count(of: "willRemove B") == 1)
        try await parent.shutdown()
    }

    @Test func aChildIsValidatedLikeAnyGraph() async throws {
        let parent = try await parent(EventLog())
        var child = parent.makeChildBuilder()
        child.provide(Billing.self, dependsOn: Billing.self) { $0 }
        #expect(throws: ServiceGraphError.self) { try child.validate() }
        try await parent.shutdown()
    }
}
