import ServiceGraph
import Testing
import ServiceGraphTestSupport

@Suite("Memory")
struct MemoryTests {
    @Test func buildingAndShuttingDownTenThousandTimesRetainsNothing() async throws {
        let recorder = GraphRecorder()
        var builder = ServiceGraph.Builder()
        GeneratedKeys.provide(0, dependsOn: [], recorder: recorder, into: &builder)
        GeneratedKeys.provide(1, dependsOn: [0], recorder: recorder, into: &builder)
        GeneratedKeys.provide(2, dependsOn: [0, 1], asynchronous: true, recorder: recorder, into: &builder)
        GeneratedKeys.provide(3, lifetime: .scoped, dependsOn: [2], recorder: recorder, into: &builder)
        let rounds = ProcessEnvironment.value("SERVICEGRAPH_MEMORY_ROUNDS").flatMap(Int.init) ?? 10_000
        for round in 1...rounds {
            try await buildUseAndShutDown(builder, openingAScope: round % 100 == 0)
            if round % 1_000 == 0 {
                #expect(recorder.alive == 0, "round \(round): instances \(recorder.aliveIndices) retained")
            }
        }
        #expect(recorder.alive == 0)
        #expect(recorder.count(of: .created(3)) == rounds / 100, "each opened scope made its instance")
    }

    /// One round; the graph is released when it returns, so its instances must be gone.
    private func buildUseAndShutDown(_ builder: ServiceGraph.Builder, openingAScope: Bool) async throws {
        let graph = try await builder.build()
        if openingAScope {
            let scope = try graph.makeScope()
            _ = try await scope.resolveGenerated(3)
        }
        try await graph.shutdown()
    }
}
