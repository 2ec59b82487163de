import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum A: ServiceKey { typealias Value = Int }
private enum B: ServiceKey { typealias Value = Int }
private enum C: ServiceKey { typealias Value = Int }
private enum D: ServiceKey { typealias Value = Int }
private enum E: ServiceKey { typealias Value = Int }
private enum Root: ServiceKey { typealias Value = Int }

@Suite("Cycle detection")
struct CycleDetectionTests {
    @Test func reportsTheFullCyclePathInOrder() throws {
        var builder = ServiceGraph.Builder()
        let line = #line + 1
        builder.provide(A.self, dependsOn: B.self) { $0 }
        builder.provide(B.self, dependsOn: C.self) { $0 }
        builder.provide(C.self, dependsOn: A.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.count == 1)
        let cycle = try #require(error.problems.first)
        #expect(cycle.code == .cycle)
        #expect(cycle.path == ["A", "B", "C", "A"])
        #expect(cycle.description.contains("A → B → C → A"))
        #expect(cycle.site?.fileID.hasSuffix("CycleDetectionTests.swift") == true)
        #expect(cycle.site?.line == line)
    }

    @Test func reportsASelfDependency() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(A.self, dependsOn: A.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.map(\.path) == [["A", "A"]])
    }

    @Test func reportsEachDistinctCycleOnce() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Root.self, dependsOn: A.self, D.self) { $0 + $1 }
        builder.provide(A.self, dependsOn: B.self) { $0 }
        builder.provide(B.self, dependsOn: A.self) { $0 }
        builder.provide(D.self, dependsOn: E.self) { $0 }
        builder.provide(E.self, dependsOn: D.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.map(\.code) == [.cycle, .cycle])
        #expect(error.problems.map(\.path) == [["A", "B", "A"], ["D", "E", "D"]])
    }

    @Test func aCycleGroupIsReportedOnceWithItsMembers() throws {
        // A → B → C → A and B → A: one strongly connected group, one report, the shortest cycle.
        var builder = ServiceGraph.Builder()
        builder.provide(A.self, dependsOn: B.self) { $0 }
        builder.provide(B.self, dependsOn: C.self, A.self) { $0 + $1 }
        builder.provide(C.self, dependsOn: A.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.count == 1)
        #expect(error.problems[0].path == ["A", "B", "A"])
        #expect(error.problems[0].message.contains("3 services depend on each other here: A, B, C"))
    }

    @Test func acyclicDiamondIsNotACycle() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(A.self, dependsOn: B.self, C.self) { $0 + $1 }
        builder.provide(B.self, dependsOn: D.self) { $0 }
        builder.provide(C.self, dependsOn: D.self) { $0 }
        builder.provide(D.self) { 1 }
        try builder.validate()
    }

    @Test func deepChainsAreValidatedAndBuiltWithoutRecursion() async throws {
        var chain = ServiceGraph.Builder()
        GeneratedKeys.provideChain(into: &chain, length: 20_000)
        try chain.validate()
        let graph = try await chain.build()
        #expect(graph.generatedValue(19_999) == 20_000)
    }

    @Test func aLongCycleIsReportedWithEveryStep() throws {
        var builder = ServiceGraph.Builder()
        for index in 0..<50 {
            GeneratedKeys.provide(index, dependsOn: [(index + 1) % 50], into: &builder)
        }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.count == 1)
        #expect(error.problems[0].path.count == 51)
        #expect(error.problems[0].path.first == error.problems[0].path.last)
    }
}
