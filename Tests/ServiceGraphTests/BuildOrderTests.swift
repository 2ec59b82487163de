import ServiceGraph
import Synchronization
import Testing
import ServiceGraphTestSupport

private enum Parallel0: ServiceKey { typealias Value = Int }
private enum Parallel1: ServiceKey { typealias Value = Int }
private enum Parallel2: ServiceKey { typealias Value = Int }
private enum Parallel3: ServiceKey { typealias Value = Int }
private enum Parallel4: ServiceKey { typealias Value = Int }
private enum Parallel5: ServiceKey { typealias Value = Int }
private enum Parallel6: ServiceKey { typealias Value = Int }
private enum Parallel7: ServiceKey { typealias Value = Int }
private enum Joined: ServiceKey { typealias Value = Int }
private enum OrderX: ServiceKey { typealias Value = String }
private enum OrderY: ServiceKey { typealias Value = String }
private enum OrderZ: ServiceKey { typealias Value = String }
private enum OrderW: ServiceKey { typealias Value = String }
private enum SlowStartKey: ServiceKey { typealias Value = SlowStart }
private enum MidA: ServiceKey { typealias Value = String }
private enum MidB: ServiceKey { typealias Value = String }
private enum MidC: ServiceKey { typealias Value = String }
private enum MidD: ServiceKey { typealias Value = String }
private enum MidE: ServiceKey { typealias Value = String }
private enum AfterSlowStart: ServiceKey { typealias Value = String }
private enum BesideSlowStart: ServiceKey { typealias Value = String }

/// A service whose `didAdd` takes a while.
private final class SlowStart: LifecycleHooks, Sendable {
    let log: EventLog

    init(log: EventLog) {
        self.log = log
        log.record("init slow")
    }

    func didAdd() async throws {
        try await Task.sleep(for: .milliseconds(100))
        log.record("didAdd slow done")
    }

    func willRemove() async throws {}
}

@Suite("Build order and concurrency")
struct BuildOrderTests {
    @Test func createsEverySingletonOnceAfterAllOfItsDependencies() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self, dependsOn: ServiceB.self, ServiceC.self) { _, _ in HookedService("A", log: log) }
        builder.provide(ServiceB.self, dependsOn: ServiceD.self) { _ in HookedService("B", log: log) }
        builder.provide(ServiceC.self, dependsOn: ServiceD.self) { _ in HookedService("C", log: log) }
        builder.provide(ServiceD.self) { HookedService("D", log: log) }
        let graph = try await builder.build()
        for name in ["A", "B", "C", "D"] {
            #expect(log.count(of: "init \(name)") == 1)
        }
        let position = { (entry: String) in try #require(log.index(of: entry)) }
        #expect(try position("init D") < position("init B"))
        #expect(try position("init D") < position("init C"))
        #expect(try position("init B") < position("init A"))
        #expect(try position("init C") < position("init A"))
        #expect(graph.initializationOrder.last == "ServiceA")
        #expect(graph.initializationOrder.first == "ServiceD")
        #expect(graph[ServiceB.self] === graph[ServiceB.self])
        try await graph.shutdown()
    }

    @Test func dependentsReceiveTheSameSingletonInstance() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceD.self) { HookedService("D", log: log) }
        builder.provide(ServiceB.self, dependsOn: ServiceD.self) { d in
            HookedService("B<\(ObjectIdentifier(d))>", log: log)
        }
        let graph = try await builder.build()
        #expect(graph[ServiceB.self].name == "B<\(ObjectIdentifier(graph[ServiceD.self]))>")
        try await graph.shutdown()
    }

    @Test func independentAsyncFactoriesRunConcurrently() async throws {
        // Each factory waits until all eight have started. A sequential build would never get past the
        // first one; the deadline turns that hang into a failure. (How close the build comes to the
        // critical path in time is measured by the benchmarks, not here: a unit test sharing two
        // cores with the rest of the suite cannot time it reliably.)
        let barrier = Barrier(count: 8)
        let running = Atomic<Int>(0)
        let peak = Atomic<Int>(0)
        @Sendable func work(_ value: Int) async -> Int {
            let now = running.add(1, ordering: .relaxed).newValue
            peak.max(now, ordering: .relaxed)
            await barrier.arriveAndWait()
            running.subtract(1, ordering: .relaxed)
            return value
        }
        var builder = ServiceGraph.Builder()
        builder.provide(Parallel0.self) { await work(0) }
        builder.provide(Parallel1.self) { await work(1) }
        builder.provide(Parallel2.self) { await work(2) }
        builder.provide(Parallel3.self) { await work(3) }
        builder.provide(Parallel4.self) { await work(4) }
        builder.provide(Parallel5.self) { await work(5) }
        builder.provide(Parallel6.self) { await work(6) }
        builder.provide(Parallel7.self) { await work(7) }
        builder.provide(
            Joined.self,
            dependsOn: Parallel0.self,
            Parallel1.self,
            Parallel2.self,
            Parallel3.self,
            Parallel4.self,
            Parallel5.self,
            Parallel6.self,
            Parallel7.self
        ) { a, b, c, d, e, f, g, h in a + b + c + d + e + f + g + h }
        let graph = try await withDeadline { [builder] in try await builder.build() }
        #expect(peak.load(ordering: .relaxed) == 8)
        #expect(graph[Joined.self] == 28)
        #expect(graph.initializationOrder.last == "Joined")
    }

    @Test func transientAndScopedServicesAreNotCreatedAtBuild() async throws {
        let calls = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(IntKey.self, lifetime: .transient) { calls.increment() }
        builder.provide(OtherIntKey.self, lifetime: .scoped) { calls.increment() }
        builder.provide(StringKey.self) { "singleton" }
        let graph = try await builder.build()
        #expect(calls.count == 0)
        #expect(graph.initializationOrder == ["StringKey"])
    }

    @Test func singletonsAreMadeDepthFirstInDeclarationOrder() async throws {
        // Each service right after what it depends on, in the order they were declared.
        var builder = ServiceGraph.Builder()
        builder.provide(OrderX.self) { "x" }
        builder.provide(OrderY.self, dependsOn: OrderZ.self) { "y" + $0 }
        builder.provide(OrderW.self) { "w" }
        builder.provide(OrderZ.self) { "z" }
        let graph = try await builder.build()
        #expect(graph.initializationOrder == ["OrderX", "OrderZ", "OrderY", "OrderW"])
        #expect(graph[OrderY.self] == "yz")
        try await graph.shutdown()
    }

    @Test func aDidAddStillRunningHoldsBackOnlyItsDependents() async throws {
        // The service after one whose didAdd must run waits for it; the one beside it does not.
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(SlowStartKey.self) { SlowStart(log: log) }
        builder.provide(AfterSlowStart.self, dependsOn: SlowStartKey.self) { _ in
            log.record("init after")
            return "after"
        }
        builder.provide(BesideSlowStart.self) {
            log.record("init beside")
            return "beside"
        }
        let graph = try await builder.build()
        #expect(log.all == ["init slow", "init beside", "didAdd slow done", "init after"])
        #expect(graph.initializationOrder == ["BesideSlowStart", "SlowStartKey", "AfterSlowStart"])
        try await graph.shutdown()
    }

    @Test func anAsyncFactoryMidOrderStartsEverySingletonOnce() async throws {
        // The plain loop makes A, hands B to a task and switches to counting down: C and E are ready
        // (their dependencies exist), D waits for B.
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(MidA.self) {
            log.record("A")
            return "a"
        }
        builder.provide(MidB.self, dependsOn: MidA.self) { a async throws in
            try await Task.sleep(for: .milliseconds(20))
            log.record("B")
            return a + "b"
        }
        builder.provide(MidC.self, dependsOn: MidA.self) { a in
            log.record("C")
            return a + "c"
        }
        builder.provide(MidD.self, dependsOn: MidB.self, MidA.self) { b, a in
            log.record("D")
            return b + a + "d"
        }
        builder.provide(MidE.self) {
            log.record("E")
            return "e"
        }
        let graph = try await builder.build()
        #expect(log.all == ["A", "C", "E", "B", "D"])
        #expect(graph.initializationOrder == ["MidA", "MidC", "MidE", "MidB", "MidD"])
        #expect(graph[MidD.self] == "abad")
        try await graph.shutdown()
    }
}
