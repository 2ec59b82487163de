import ServiceGraph
import Testing
import ServiceGraphTestSupport

// Graphs that mix synchronous and asynchronous singleton factories. The build runs synchronous
// factories inline on its coordinator and asynchronous ones in tasks of their own; these tests show
// the asynchronous ones still overlap however the synchronous ones are placed around them. Each
// asynchronous factory waits at a barrier until all of its group have started: a build that ran them
// one after the other would never get past the first, and the deadline turns that hang into a failure.

private enum Root: ServiceKey { typealias Value = Int }
private enum FirstAsync0: ServiceKey { typealias Value = Int }
private enum FirstAsync1: ServiceKey { typealias Value = Int }
private enum FirstAsync2: ServiceKey { typealias Value = Int }
private enum FirstAsync3: ServiceKey { typealias Value = Int }
private enum MiddleSync0: ServiceKey { typealias Value = Int }
private enum MiddleSync1: ServiceKey { typealias Value = Int }
private enum SecondAsync0: ServiceKey { typealias Value = Int }
private enum SecondAsync1: ServiceKey { typealias Value = Int }
private enum SecondAsync2: ServiceKey { typealias Value = Int }
private enum SecondAsync3: ServiceKey { typealias Value = Int }
private enum Top: ServiceKey { typealias Value = Int }

private enum Early: ServiceKey { typealias Value = Int }
private enum Between: ServiceKey { typealias Value = Int }
private enum Late: ServiceKey { typealias Value = Int }
private enum Partner: ServiceKey { typealias Value = Int }

/// One link of a synchronous chain: `Step<Previous>` depends on `Previous`, so a chain of any length
/// is made of distinct key types at run time.
private enum Step<Previous: ServiceKey>: ServiceKey where Previous.Value == Int { typealias Value = Int }
private enum ChainStart: ServiceKey { typealias Value = Int }

@Suite("Startup mixing synchronous and asynchronous factories")
struct MixedStartupTests {
    @Test func asyncLayersOverlapAroundSynchronousLayers() async throws {
        let calls = EventLog()
        let first = Barrier(count: 4)
        let second = Barrier(count: 4)
        @Sendable func meet(_ barrier: Barrier, _ name: String, _ value: Int) async -> Int {
            calls.record(name)
            await barrier.arriveAndWait()
            return value
        }
        var builder = ServiceGraph.Builder()
        builder.provide(Root.self) {
            calls.record("Root")
            return 1
        }
        builder.provide(FirstAsync0.self, dependsOn: Root.self) { root in await meet(first, "FirstAsync0", root + 1) }
        builder.provide(FirstAsync1.self, dependsOn: Root.self) { root in await meet(first, "FirstAsync1", root + 2) }
        builder.provide(FirstAsync2.self, dependsOn: Root.self) { root in await meet(first, "FirstAsync2", root + 3) }
        builder.provide(FirstAsync3.self, dependsOn: Root.self) { root in await meet(first, "FirstAsync3", root + 4) }
        builder.provide(MiddleSync0.self, dependsOn: FirstAsync0.self, FirstAsync1.self) { a, b in
            calls.record("MiddleSync0")
            return a + b
        }
        builder.provide(MiddleSync1.self, dependsOn: FirstAsync2.self, FirstAsync3.self) { a, b in
            calls.record("MiddleSync1")
            return a + b
        }
        builder.provide(SecondAsync0.self, dependsOn: MiddleSync0.self) { m in await meet(second, "SecondAsync0", m) }
        builder.provide(SecondAsync1.self, dependsOn: MiddleSync0.self) { m in await meet(second, "SecondAsync1", m) }
        builder.provide(SecondAsync2.self, dependsOn: MiddleSync1.self) { m in await meet(second, "SecondAsync2", m) }
        builder.provide(SecondAsync3.self, dependsOn: MiddleSync1.self) { m in await meet(second, "SecondAsync3", m) }
        builder.provide(
            Top.self,
            dependsOn: SecondAsync0.self,
            SecondAsync1.self,
            SecondAsync2.self,
            SecondAsync3.self
        ) { a, b, c, d in
            calls.record("Top")
            return a + b + c + d
        }

        let graph = try await withDeadline { [builder] in try await builder.build() }

        // Root 1; first layer 2, 3, 4, 5; middle 5 and 9; second layer 5, 5, 9, 9.
        #expect(graph[Top.self] == 28)
        let names = [
            "Root", "FirstAsync0", "FirstAsync1", "FirstAsync2", "FirstAsync3", "MiddleSync0", "MiddleSync1",
            "SecondAsync0", "SecondAsync1", "SecondAsync2", "SecondAsync3", "Top",
        ]
        for name in names {
            #expect(calls.count(of: name) == 1, "\(name) ran once")
        }
        let order = graph.initializationOrder
        let position = { (name: String) in try #require(order.firstIndex(of: name)) }
        for layer in ["FirstAsync0", "FirstAsync1", "FirstAsync2", "FirstAsync3"] {
            #expect(try position("Root") < position(layer))
        }
        #expect(try position("FirstAsync1") < position("MiddleSync0"))
        #expect(try position("FirstAsync3") < position("MiddleSync1"))
        #expect(try position("MiddleSync0") < position("SecondAsync1"))
        #expect(try position("MiddleSync1") < position("SecondAsync2"))
        #expect(order.last == "Top")
        try await graph.shutdown()
    }

    @Test func synchronousServiceMadeWhileAnAsyncOneWaitsStartsItsAsyncDependent() async throws {
        // Late and Partner meet at a barrier of two. Late depends on the synchronous Between, which
        // depends on the asynchronous Early: the build must take in Early's result, make Between inline
        // and start Late while Partner is still waiting.
        let pair = Barrier(count: 2)
        var builder = ServiceGraph.Builder()
        builder.provide(Early.self) { () async -> Int in 1 }
        builder.provide(Between.self, dependsOn: Early.self) { early in early + 1 }
        builder.provide(Late.self, dependsOn: Between.self) { between in
            await pair.arriveAndWait()
            return between + 1
        }
        builder.provide(Partner.self) { () async -> Int in
            await pair.arriveAndWait()
            return 10
        }

        let graph = try await withDeadline { [builder] in try await builder.build() }

        #expect(graph[Late.self] == 3)
        #expect(graph[Partner.self] == 10)
        let order = graph.initializationOrder
        #expect(order.firstIndex(of: "Early")! < order.firstIndex(of: "Between")!)
        #expect(order.firstIndex(of: "Between")! < order.firstIndex(of: "Late")!)
        try await graph.shutdown()
    }

    @Test func longSynchronousChainBesideWaitingAsyncFactories() async throws {
        // 100 synchronous links (more than the scheduler's batch between cancellation checks) next to
        // four asynchronous factories that wait for each other, and one that needs both.
        let group = Barrier(count: 4)
        var builder = ServiceGraph.Builder()
        builder.provide(ChainStart.self) { 0 }
        provideChain(after: ChainStart.self, links: 100, in: &builder)
        builder.provide(FirstAsync0.self) { () async -> Int in
            await group.arriveAndWait()
            return 1
        }
        builder.provide(FirstAsync1.self) { () async -> Int in
            await group.arriveAndWait()
            return 2
        }
        builder.provide(FirstAsync2.self) { () async -> Int in
            await group.arriveAndWait()
            return 3
        }
        builder.provide(FirstAsync3.self) { () async -> Int in
            await group.arriveAndWait()
            return 4
        }

        let graph = try await withDeadline { [builder] in try await builder.build() }

        let expected = 100 + 10  // the last link, then 1 + 2 + 3 + 4
        #expect(graph[Top.self] == expected)
        let serviceCount = 106  // the chain's start, 100 links, four async factories and Top
        #expect(graph.initializationOrder.count == serviceCount)
        #expect(graph.initializationOrder.last == "Top")
        try await graph.shutdown()
    }
}

/// Provides `links` synchronous services after `previous`, each its predecessor's value plus one,
/// then `Top`: the last link's value plus the four asynchronous factories'.
private func provideChain<Previous: ServiceKey>(
    after previous: Previous.Type,
    links: Int,
    in builder: inout ServiceGraph.Builder
) where Previous.Value == Int {
    guard links > 0 else {
        builder.provide(
            Top.self,
            dependsOn: Previous.self,
            FirstAsync0.self,
            FirstAsync1.self,
            FirstAsync2.self,
            FirstAsync3.self
        ) { last, a, b, c, d in last + a + b + c + d }
        return
    }
    builder.provide(Step<Previous>.self, dependsOn: Previous.self) { $0 + 1 }
    provideChain(after: Step<Previous>.self, links: links - 1, in: &builder)
}
