import ServiceGraph
import Testing
import ServiceGraphTestSupport

private let raceInstances = LiveCounter()
private struct RCValue: Sendable {
    var obj: LiveInstance
    var n: Int
}
private enum RCScopedObj: ServiceKey { typealias Value = LiveInstance }
private enum RCScopedValue: ServiceKey { typealias Value = RCValue }
private enum RCTransient: ServiceKey { typealias Value = RCValue }

@Suite("Scope close racing the prepared path")
struct ScopeCloseRaceTests {
    /// Resolves that read scoped instances through prepared values race the scope's close: each
    /// resolve gets consistent values or `scopeClosed`, and every instance is released once.
    @Test func closeRacesResolvesThroughPreparedValues() async throws {
        let before = raceInstances.count
        do {
            var builder = ServiceGraph.Builder()
            builder.provide(RCScopedObj.self, lifetime: .scoped) { () async in
                await Task.yield()
                return LiveInstance(1, in: raceInstances)
            }
            builder.provide(RCScopedValue.self, lifetime: .scoped, dependsOn: RCScopedObj.self) { o in
                RCValue(obj: o, n: 2)
            }
            builder.provide(RCTransient.self, lifetime: .transient, dependsOn: RCScopedObj.self, RCScopedValue.self) {
                o,
                v async in
                await Task.yield()
                precondition(o === v.obj)
                return RCValue(obj: o, n: v.n + 1)
            }
            let graph = try await builder.build()
            for round in 0..<200 {
                let scope = try graph.makeScope()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 {
                        group.addTask {
                            for _ in 0..<5 {
                                do {
                                    let value = try await scope.resolve(RCTransient.self)
                                    #expect(value.n == 3 && value.obj.id == 1)
                                } catch let error as ServiceGraphError {
                                    #expect(error.contains(.scopeClosed), "\(error)")
                                }
                            }
                        }
                    }
                    group.addTask {
                        for _ in 0..<(round % 7) { await Task.yield() }
                        try? await scope.close()
                    }
                    try await group.waitForAll()
                }
            }
            try await graph.shutdown()
        }
        #expect(raceInstances.count == before)
    }
}
