import Dispatch
import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// A graph's shutdown comes after everything that uses its singletons: closing scopes, dropped
/// scopes' owed hooks, child graphs; and the caller cannot cut it short.
@Suite("Shutdown")
struct ShutdownTests {
    private enum SessionKey: ServiceKey { typealias Value = HookedService }
    private enum ChildKey: ServiceKey { typealias Value = HookedService }

    /// A service whose `willRemove` waits until it is let go, and says when it started waiting.
    private final class SlowService: LifecycleHooks {
        let log: EventLog
        let gate: Gate
        init(log: EventLog, gate: Gate) {
            self.log = log
            self.gate = gate
        }
        func willRemove() async throws {
            log.record("willRemove slow (started)")
            await gate.wait()
            log.record("willRemove slow (done)")
        }
    }

    private enum SlowKey: ServiceKey { typealias Value = SlowService }

    /// A service whose `willRemove` gives up when its task is cancelled, as one that sleeps or does
    /// I/O would.
    private final class CancellableCleanup: LifecycleHooks {
        let name: String
        let log: EventLog
        init(_ name: String, log: EventLog) {
            self.name = name
            self.log = log
        }
        func willRemove() async throws {
            try await Task.sleep(for: .milliseconds(1))
            log.record("willRemove \(name)")
        }
    }

    private enum CleanupA: ServiceKey { typealias Value = CancellableCleanup }
    private enum CleanupB: ServiceKey { typealias Value = CancellableCleanup }

    @Test func shutdownWaitsForAScopeThatIsClosing() async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(SlowKey.self, lifetime: .scoped, dependsOn: ServiceA.self) { _ in
            SlowService(log: log, gate: gate)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        _ = try await scope.resolve(SlowKey.self)
        let closing = Task { try await scope.close() }
        try await log.waitFor("willRemove slow (started)")
        let shutdown = Task { try await graph.shutdown() }
        try await Task.sleep(for: .milliseconds(50))
        #expect(log.count(of: "willRemove A") == 0, "A was released while a scoped service using it was closing")
        await gate.open()
        try await closing.value
        try await shutdown.value
        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(removals == ["willRemove slow (started)", "willRemove slow (done)", "willRemove A"])
    }

    /// A scoped service with no hooks whose release blocks until it is let go (its deinit runs on the
    /// closing task's thread), and says when it started.
    private final class SlowToRelease: Sendable {
        let log: EventLog
        let letGo: DispatchSemaphore
        init(log: EventLog, letGo: DispatchSemaphore) {
            self.log = log
            self.letGo = letGo
        }
        deinit {
            log.record("release slow (started)")
            _ = letGo.wait(timeout: .now() + 10)
            log.record("release slow (done)")
        }
    }

    private enum SlowToReleaseKey: ServiceKey { typealias Value = SlowToRelease }

    /// The usual close (nothing in flight, no hook owed) ends in one turn of the scope's lock and then
    /// releases; a shutdown that comes meanwhile must still wait for that release before it runs the
    /// singletons' `willRemove`.
    @Test func shutdownWaitsForAnIdleCloseThatIsStillReleasing() async throws {
        let log = EventLog()
        let letGo = DispatchSemaphore(value: 0)
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(SlowToReleaseKey.self, lifetime: .scoped, dependsOn: ServiceA.self) { _ in
            SlowToRelease(log: log, letGo: letGo)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        _ = try await scope.resolve(SlowToReleaseKey.self)
        // Its release blocks the thread the close runs on, until the test lets it go.
        let closing = Task { try await scope.close() }
        try await log.waitFor("release slow (started)")
        #expect(scope.isClosed)
        let shutdown = Task { try await graph.shutdown() }
        try await Task.sleep(for: .milliseconds(50))
        #expect(log.count(of: "willRemove A") == 0, "A was released while a scoped service using it was")
        letGo.signal()
        try await closing.value
        try await shutdown.value
        let ends = log.all.filter { $0.hasPrefix("willRemove") || $0.hasPrefix("release") }
        #expect(ends == ["release slow (started)", "release slow (done)", "willRemove A"])
    }

    @Test func closingAScopeWaitsForAResolveInFlightInIt() async throws {
        enum ReportKey: ServiceKey { typealias Value = String }
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(ReportKey.self, lifetime: .transient, dependsOn: ServiceA.self) { a in
            log.record("making report")
            await gate.wait()
            let state = log.count(of: "willRemove A") == 0 ? "live" : "removed"
            log.record("report made with A \(state)")
            return "report of \(a.name)"
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let resolving = Task { try await scope.resolve(ReportKey.self) }
        try await log.waitFor("making report")
        let shutdown = Task { try await graph.shutdown() }
        try await Task.sleep(for: .milliseconds(50))
        #expect(log.count(of: "willRemove A") == 0, "A was released under a resolve still using it")
        await gate.open()
        #expect(try await resolving.value == "report of A")
        try await shutdown.value
        #expect(log.count(of: "report made with A live") == 1)
        #expect(log.count(of: "willRemove A") == 1)
    }

    @Test func cancellingShutdownStillRunsEveryHook() async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(CleanupA.self) { CancellableCleanup("A", log: log) }
        builder.provide(CleanupB.self, dependsOn: CleanupA.self) { _ in CancellableCleanup("B", log: log) }
        builder.provide(SlowKey.self, dependsOn: CleanupB.self) { _ in SlowService(log: log, gate: gate) }
        let graph = try await builder.build()
        let shutdown = Task { try await graph.shutdown() }
        try await log.waitFor("willRemove slow (started)")
        shutdown.cancel()
        await gate.open()
        try await shutdown.value
        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(removals == ["willRemove slow (started)", "willRemove slow (done)", "willRemove B", "willRemove A"])
        try await graph.shutdown()  // a second call reports the same (clean) result
    }

    @Test func cancellingACloseStillRunsEveryHook() async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(CleanupA.self, lifetime: .scoped) { CancellableCleanup("session", log: log) }
        builder.provide(SlowKey.self, lifetime: .scoped, dependsOn: CleanupA.self) { _ in
            SlowService(log: log, gate: gate)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        _ = try await scope.resolve(SlowKey.self)
        let closing = Task { try await scope.close() }
        try await log.waitFor("willRemove slow (started)")
        closing.cancel()
        await gate.open()
        try await closing.value
        #expect(log.count(of: "willRemove session") == 1)
        try await graph.shutdown()
    }

    @Test func aParentShutsDownItsChildrenFirstNewestFirst() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("parent", log: log) }
        let parent = try await builder.build()
        var first = parent.makeChildBuilder()
        first.provide(ChildKey.self, dependsOn: ServiceA.self) { _ in HookedService("first child", log: log) }
        let older = try await first.build()
        var second = parent.makeChildBuilder()
        second.provide(ChildKey.self, dependsOn: ServiceA.self) { _ in HookedService("second child", log: log) }
        let newer = try await second.build()
        var grand = newer.makeChildBuilder()
        grand.provide(ServiceB.self, dependsOn: ChildKey.self) { _ in HookedService("grandchild", log: log) }
        let grandchild = try await grand.build()
        try await parent.shutdown()
        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(
            removals == [
                "willRemove grandchild", "willRemove second child", "willRemove first child", "willRemove parent",
            ]
        )
        for graph in [older, newer, grandchild] {
            let error = await #expect(throws: ServiceGraphError.self) { try await graph.resolve(ChildKey.self) }
            #expect(error?.codes == [.graphShutDown])
        }
    }

    @Test func aChildsShutdownLeavesItsParentRunning() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("parent", log: log) }
        let parent = try await builder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(ChildKey.self, dependsOn: ServiceA.self) { _ in HookedService("child", log: log) }
        let child = try await childBuilder.build()
        try await child.shutdown()
        #expect(try await parent.resolve(ServiceA.self).name == "parent")
        #expect(log.count(of: "willRemove parent") == 0)
        try await parent.shutdown()
        #expect(log.count(of: "willRemove parent") == 1)
    }

    @Test func aChildOfAShutDownParentDoesNotBuild() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("parent", log: log) }
        let parent = try await builder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(ChildKey.self, dependsOn: ServiceA.self) { a in
            HookedService("child of \(a.name)", log: log)
        }
        try await parent.shutdown()
        let error = await #expect(throws: ServiceGraphError.self) { _ = try await childBuilder.build() }
        #expect(error?.codes == [.graphShutDown])
        #expect(log.count(of: "init child of parent") == 0, "nothing of the child may run")
    }

    @Test func aChildBuiltWhileItsParentShutsDownIsShutDownAndRefused() async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("parent", log: log) }
        let parent = try await builder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(ChildKey.self, dependsOn: ServiceA.self) { _ in
            await gate.wait()
            return HookedService("child", log: log)
        }
        let building = Task { try await childBuilder.build() }
        try await Task.sleep(for: .milliseconds(20))
        let shutdown = Task { try await parent.shutdown() }
        try await Task.sleep(for: .milliseconds(20))
        #expect(log.count(of: "willRemove parent") == 0, "the parent waits for the child being built")
        await gate.open()
        let error = await #expect(throws: ServiceGraphError.self) { _ = try await building.value }
        #expect(error?.codes == [.graphShutDown])
        try await shutdown.value
        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(removals == ["willRemove child", "willRemove parent"])
    }

    @Test func aScopesSubscriptWorksAfterTheGraphValueIsGone() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(IntKey.self) { 42 }
        builder.provide(StringKey.self, lifetime: .scoped, dependsOn: IntKey.self) { "scoped \($0)" }
        var graph: ServiceGraph? = try await builder.build()
        let scope = try #require(graph).makeScope()
        graph = nil
        #expect(scope[IntKey.self] == 42)
        #expect(try await scope.resolve(IntKey.self) == 42)
        #expect(try await scope.resolve(StringKey.self) == "scoped 42")
        try await scope.close()
    }

    /// A singleton that still exists while the graph shuts down (A, asked for by B's `willRemove`,
    /// before A's own turn) is refused by `resolve` and `resolveSynchronously` alike: their check of
    /// the shutdown flag, inlined in the caller, comes before any read of the singleton.
    @Test func aSingletonStillAliveDuringShutdownIsRefused() async throws {
        let log = EventLog()
        let graphHolder = Locked<ServiceGraph?>(nil)
        let outcomes = Locked<[[ServiceGraphError.Code]]>([])
        @Sendable func outcome(_ body: () async throws -> HookedService) async -> [ServiceGraphError.Code] {
            do {
                _ = try await body()
                return []
            } catch {
                return (error as? ServiceGraphError)?.codes ?? []
            }
        }
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceA.self) { HookedService("A", log: log) }
        builder.provide(RemovalProbeKey.self, dependsOn: ServiceA.self) { _ in
            RemovalProbe("B", log: log) {
                guard let graph = graphHolder.withLock({ $0 }) else { return }
                log.record("B asks for A")
                let asynchronous = await outcome { try await graph.resolve(ServiceA.self) }
                let synchronous = await outcome { try graph.resolveSynchronously(ServiceA.self) }
                outcomes.withLock { $0 += [asynchronous, synchronous] }
            }
        }
        let graph = try await builder.build()
        // Held by the probe's closure only for the shutdown: the graph holds the probe.
        graphHolder.withLock { $0 = graph }
        defer { graphHolder.withLock { $0 = nil } }
        #expect(try await graph.resolve(ServiceA.self).name == "A")
        try await graph.shutdown()
        #expect(outcomes.withLock { $0 } == [[.graphShutDown], [.graphShutDown]])
        #expect(try #require(log.index(of: "B asks for A")) < #require(log.index(of: "willRemove A")))
    }
}

private enum RemovalProbeKey: ServiceKey { typealias Value = RemovalProbe }

/// A service whose `willRemove` runs `probe` (after logging it), to act on the graph as it shuts down.
private final class RemovalProbe: LifecycleHooks, Sendable {
    let inner: HookedService
    let probe: @Sendable () async -> Void

    init(_ name: String, log: EventLog, probe: @escaping @Sendable () async -> Void) {
        inner = HookedService(name, log: log)
        self.probe = probe
    }

    func willRemove() async throws {
        try await inner.willRemove()
        await probe()
    }
}
