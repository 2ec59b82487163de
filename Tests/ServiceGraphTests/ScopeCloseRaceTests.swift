import ServiceGraph
import Synchronization
import Testing

private final class RCObj: Sendable {
    static let live = Atomic<Int>(0)
    let id: Int
    init(_ id: Int) {
        self.id = id
        Self.live.add(1, ordering: .relaxed)
    }
    deinit { Self.live.subtract(1, ordering: .relaxed) }
}
private struct RCValue: Sendable {
    var obj: RCObj
    var n: Int
}
private enum RCScopedObj: ServiceKey { typealias Value = RCObj }
private enum RCScopedValue: ServiceKey { typealias Value = RCValue }
private enum RCTransient: ServiceKey { typealias Value = RCValue }

@Suite("Scope close racing the prepared path")
struct ScopeCloseRaceTests {
    /// Resolves that read scoped instances through prepared values race the scope's close: each
    /// resolve gets consistent values or `scopeClosed`, and every instance is released once.
    @Test func closeRacesResolvesThroughPreparedValues() async throws {
        let before = RCObj.live.load(ordering: .relaxed)
        do {
            var builder = ServiceGraph.Builder()
            builder.provide(RCScopedObj.self, lifetime: .scoped) { () async in
                await Task.yield()
                return RCObj(1)
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
        #expect(RCObj.live.load(ordering: .relaxed) == before)
    }
}
