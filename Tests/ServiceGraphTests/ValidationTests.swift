import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum A: ServiceKey { typealias Value = Int }
private enum B: ServiceKey { typealias Value = Int }
private enum C: ServiceKey { typealias Value = Int }
private enum Scoped: ServiceKey { typealias Value = Int }
private enum Absent: ServiceKey { typealias Value = Int }

@Suite("Validation")
struct ValidationTests {
    @Test func reportsEveryProblemAtOnceInAStableOrder() throws {
        let calls = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(A.self, dependsOn: B.self) { _ in calls.increment() }
        builder.provide(B.self, dependsOn: A.self) { _ in calls.increment() }
        builder.provide(C.self, dependsOn: Absent.self, Scoped.self) { _, _ in calls.increment() }
        builder.provide(Scoped.self, lifetime: .scoped) { calls.increment() }
        builder.provide(Scoped.self, lifetime: .scoped) { calls.increment() }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.map(\.code) == [.duplicateProvider, .missingProvider, .cycle, .captiveDependency])
        #expect(error.description.hasPrefix("ServiceGraph found 4 problems:"))
        #expect(error.contains(.cycle))
        #expect(calls.count == 0, "validation runs no factory")
    }

    @Test func buildValidatesFirstAndRunsNoFactoryOnABrokenGraph() async throws {
        let calls = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(A.self) { calls.increment() }
        builder.provide(B.self, dependsOn: Absent.self) { _ in calls.increment() }
        let error = await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        #expect(error?.codes == [.missingProvider])
        #expect(calls.count == 0)
    }

    @Test func aValidGraphPasses() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(A.self) { 1 }
        builder.provide(B.self, lifetime: .transient, dependsOn: A.self) { $0 }
        builder.provide(Scoped.self, lifetime: .scoped, dependsOn: A.self) { $0 }
        builder.provide(C.self, lifetime: .transient, dependsOn: Scoped.self, B.self) { $0 + $1 }
        try builder.validate()
    }

    @Test func anEmptyGraphIsValidAndBuilds() async throws {
        let builder = ServiceGraph.Builder()
        try builder.validate()
        let graph = try await builder.build()
        #expect(graph.initializationOrder.isEmpty)
        try await graph.shutdown()
    }

    @Test func validatesALargeGeneratedGraph() throws {
        var builder = ServiceGraph.Builder()
        for index in 0..<5_000 {
            let dependencies = [index / 2, index / 3, index - 1].filter { $0 >= 0 && $0 < index }
            GeneratedKeys.provide(index, dependsOn: Array(Set(dependencies)).sorted(), into: &builder)
        }
        try builder.validate()
    }
}
