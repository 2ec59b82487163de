import ServiceGraph
import Testing
import ServiceGraphTestSupport

@Suite("Hook timeouts and cancellation")
struct HookTimeoutTests {
    /// 0 ← 1 ← 2, and 0 ← 3: singletons that record their hooks.
    private func builder(_ recorder: GraphRecorder) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        GeneratedKeys.provide(0, dependsOn: [], recorder: recorder, into: &builder)
        GeneratedKeys.provide(1, dependsOn: [0], recorder: recorder, into: &builder)
        GeneratedKeys.provide(2, dependsOn: [1], recorder: recorder, into: &builder)
        GeneratedKeys.provide(3, dependsOn: [0], recorder: recorder, into: &builder)
        builder.hookTimeout = .milliseconds(200)
        return builder
    }

    @Test func aHangingDidAddIsAbandonedAndTheBuildCleansUp() async throws {
        let recorder = GraphRecorder(plan: FailurePlan(hangingDidAdd: 1))
        let builder = builder(recorder)
        let error = try await withDeadline { [builder] in
            await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        }
        let problem = try #require(error?.problems.first)
        #expect(problem.code == .hookTimedOut)
        #expect(problem.key == GeneratedKeys.name(1))
        #expect(problem.message.contains("did not finish within"))
        #expect(recorder.count(of: .willRemove(1)) == 0, "a service whose didAdd never finished never started")
        #expect(recorder.count(of: .willRemove(0)) == 1)
        #expect(recorder.count(of: .created(2)) == 0)
        // The abandoned hook was cancelled; once it returns, its instance goes too.
        let deadline = ContinuousClock.now + .seconds(10)
        while recorder.alive > 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(recorder.alive == 0)
    }

    @Test func aHangingWillRemoveIsAbandonedAndTheOthersAreStillReleased() async throws {
        let recorder = GraphRecorder(plan: FailurePlan(hangingWillRemove: 1))
        let graph = try await builder(recorder).build()
        let started = ContinuousClock.now
        let error = await #expect(throws: ServiceGraphError.self) { try await graph.shutdown() }
        #expect(ContinuousClock.now - started < .seconds(20), "shutdown did not wait for the stuck hook")
        #expect(error?.problems.map(\.code) == [.hookTimedOut])
        #expect(error?.problems.first?.key == GeneratedKeys.name(1))
        for service in 0...3 {
            #expect(recorder.count(of: .willRemove(service)) == 1)
        }
    }

    @Test func withoutATimeoutASlowHookIsAwaited() async throws {
        var builder = ServiceGraph.Builder()
        let log = EventLog()
        builder.provide(SlowKey.self) { SlowHooks("A", log: log) }
        let graph = try await builder.build()
        #expect(log.all == ["didAdd A done"])
        try await graph.shutdown()
        #expect(log.all == ["didAdd A done", "willRemove A done"])
    }

    @Test func cancellingTheBuildWhileADidAddRunsReleasesWhatStarted() async throws {
        let recorder = GraphRecorder(plan: FailurePlan(hangingDidAdd: 1))
        var builder = builder(recorder)
        builder.hookTimeout = nil
        let build = Task { [builder] in try await builder.build() }
        while recorder.count(of: .didAdd(1)) == 0 { try await Task.sleep(for: .milliseconds(5)) }
        build.cancel()
        let result = await build.result
        let error = try #require(throws: ServiceGraphError.self) { try result.get() }
        #expect(error.codes == [.buildCancelled])
        // 0 is what the abandoned didAdd of 1 uses: it is removed once that work ends (the cancelled
        // hook returns), in the background, not necessarily before the build returns.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while recorder.count(of: .willRemove(0)) == 0 || recorder.alive > 0, clock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(recorder.count(of: .willRemove(0)) == 1)
        #expect(recorder.count(of: .willRemove(1)) == 0)
        #expect(recorder.alive == 0)
    }
}

private enum SlowKey: ServiceKey { typealias Value = SlowHooks }

/// Hooks that take a little while and log when they are done.
private final class SlowHooks: LifecycleHooks, Sendable {
    let name: String
    let log: EventLog

    init(_ name: String, log: EventLog) {
        self.name = name
        self.log = log
    }

    func didAdd() async throws {
        try await Task.sleep(for: .milliseconds(50))
        log.record("didAdd \(name) done")
    }

    func willRemove() async throws {
        try await Task.sleep(for: .milliseconds(50))
        log.record("willRemove \(name) done")
    }
}
