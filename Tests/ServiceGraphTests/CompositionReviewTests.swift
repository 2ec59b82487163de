import ServiceGraph
import Testing

// The cases a review of contributions, decorators and modules found broken, each kept as a test.

private enum CRStepsKey: ContributionKey { typealias Element = String }
private enum CROtherStepsKey: ContributionKey { typealias Element = String }
private enum CRBoxKey: ServiceKey { typealias Value = String }
private enum CRAbsentKey: ServiceKey { typealias Value = String }
private enum CRPipelineKey: ServiceKey { typealias Value = [String] }
private enum CRUserKey: ServiceKey { typealias Value = String }

/// Keeps its list and its box private.
private struct CRPrivateModule: GraphModule {
    var privateKeys: [any ServiceKey.Type] { [CRStepsKey.self, CRBoxKey.self] }

    func register(in builder: inout ServiceGraph.Builder) {
        builder.contribute(CRStepsKey.self, id: "m") { "m" }
        builder.provide(CRBoxKey.self) { "box" }
        builder.provide(CRUserKey.self, dependsOn: CRStepsKey.self, CRBoxKey.self) { $0.joined() + $1 }
    }
}

@Suite("Composition, reviewed")
struct CompositionReviewTests {
    @Test(
        "a child decorates a transient or scoped key its parent decorates: wrapped twice, no cycle",
        arguments: [
            Lifetime.transient, .scoped,
        ]
    )
    func childDecoratesParentsDecoratedKey(lifetime: Lifetime) async throws {
        var parent = ServiceGraph.Builder()
        parent.provide(CRBoxKey.self, lifetime: lifetime) { "p" }
        parent.decorate(CRBoxKey.self) { "pd(\($0))" }
        let graph = try await parent.build()
        var child = graph.makeChildBuilder()
        child.decorate(CRBoxKey.self) { "cd(\($0))" }
        child.decorate(CRBoxKey.self) { "cd2(\($0))" }
        let childGraph = try await child.build()
        let scope = try childGraph.makeScope()
        #expect(try await scope.resolve(CRBoxKey.self) == "cd2(cd(pd(p)))")
        let parentScope = try graph.makeScope()
        #expect(try await parentScope.resolve(CRBoxKey.self) == "pd(p)")
        try await scope.close()
        try await parentScope.close()
        try await childGraph.shutdown()
        try await graph.shutdown()
    }

    @Test("an empty list is found after an absent optional dependency")
    func emptyListAfterAbsentOptional() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(CRPipelineKey.self, dependsOn: CRAbsentKey?.self, CRStepsKey.self, CROtherStepsKey.self) {
            [$0 ?? "none"] + $1 + $2
        }
        let graph = try await builder.build()
        #expect(graph[CRPipelineKey.self] == ["none"])
        try await graph.shutdown()
    }

    @Test("a contribution from outside a module to its private list is refused")
    func privateListTakesNoOutsideContribution() throws {
        var builder = ServiceGraph.Builder()
        builder.include(CRPrivateModule())
        try builder.validate()
        let line = #line + 1
        builder.contribute(CRStepsKey.self, id: "outside") { "o" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.privateDependency])
        #expect(error.problems[0].site?.line == line)
        #expect(error.problems[0].message.contains("private to module CRPrivateModule"))
    }

    @Test("a test's override of a private key keeps it private")
    func overrideKeepsPrivacy() throws {
        var builder = ServiceGraph.Builder()
        builder.include(CRPrivateModule())
        builder.override(CRBoxKey.self) { "double" }
        try builder.validate()
        builder.provide(CRPipelineKey.self, dependsOn: CRBoxKey.self) { [$0] }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.privateDependency])
    }

    @Test("a grandchild does not bring back the elements of a list its parent replaced")
    func replacedListStaysReplaced() async throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(CRStepsKey.self, id: "a") { "a" }
        let graph = try await builder.build()
        var child = graph.makeChildBuilder()
        child.override(CRStepsKey.self) { ["override"] }
        let childGraph = try await child.build()
        #expect(childGraph[CRStepsKey.self] == ["override"])
        var grandchild = childGraph.makeChildBuilder()
        grandchild.contribute(CRStepsKey.self, id: "d") { "d" }
        let grandchildGraph = try await grandchild.build()
        #expect(grandchildGraph[CRStepsKey.self] == ["d"])
        try await graph.shutdown()
    }

    @Test("a child's contributions go around its parent's elements, which keep their order")
    func parentOrderKept() async throws {
        var builder = ServiceGraph.Builder()
        builder.contribute(CRStepsKey.self, id: "a") { "a" }
        builder.contribute(CRStepsKey.self, id: "b") { "b" }
        let graph = try await builder.build()
        var child = graph.makeChildBuilder()
        child.contribute(CRStepsKey.self, id: "c", before: ["a"]) { "c" }
        let childGraph = try await child.build()
        #expect(childGraph[CRStepsKey.self] == ["c", "a", "b"])

        var contradicting = graph.makeChildBuilder()
        contradicting.contribute(CRStepsKey.self, id: "x", before: ["a"], after: ["b"]) { "x" }
        let error = try #require(throws: ServiceGraphError.self) { try contradicting.validate() }
        #expect(error.codes == [.contradictoryOrder])
        try await graph.shutdown()
    }
}
