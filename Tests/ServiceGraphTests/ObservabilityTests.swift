import ServiceGraph
import Testing
import ServiceGraphTestSupport

@Suite("Startup report, events and lint")
struct ObservabilityTests {
    @Test func theStartupReportFindsTheCriticalPathAndTheSlowest() async throws {
        var builder = ServiceGraph.Builder()
        @Sendable func slow(_ milliseconds: Int) async throws -> Int {
            try await Task.sleep(for: .milliseconds(milliseconds))
            return milliseconds
        }
        builder.provide(ServiceA.self) { HookedService("A", log: EventLog()) }
        // Two chained 200 ms factories against ones that return at once: the gap is wide enough that a
        // loaded machine (or the thread sanitizer) cannot reorder them.
        builder.provide(IntKey.self) { try await slow(200) }
        builder.provide(OtherIntKey.self, dependsOn: IntKey.self) { _ in try await slow(200) }
        builder.provide(DoubleKey.self) { 1.0 }
        let graph = try await builder.build()
        let report = graph.startupReport(slowest: 2)
        try await graph.shutdown()
        #expect(report.criticalPath.map(\.key) == ["IntKey", "OtherIntKey"])
        #expect(report.criticalPathDuration >= .milliseconds(400))
        #expect(Set(report.slowest.map(\.key)) == ["IntKey", "OtherIntKey"])
        #expect(report.description.contains("IntKey → OtherIntKey"))
    }

    @Test func theStartupReportTimesEachFactoryAndEachDidAddApart() async throws {
        var builder = ServiceGraph.Builder()
        // A synchronous factory that takes 200 ms, one that returns at once, and an instance whose
        // didAdd takes 300 ms: each duration goes to its own service and column. Long enough that a
        // thread descheduled for a while on a loaded machine (a sanitizer, the suite in parallel) does
        // not move a figure across a bound.
        builder.provide(IntKey.self) {
            let clock = ContinuousClock()
            let end = clock.now + .milliseconds(200)
            while clock.now < end {}
            return 1
        }
        builder.provide(DoubleKey.self) { 1.0 }
        builder.provide(SlowStartKey.self) { SlowStart() }
        let graph = try await builder.build()
        let report = graph.startupReport(slowest: 10)
        try await graph.shutdown()
        let entries = Dictionary(uniqueKeysWithValues: report.slowest.map { ($0.key, $0) })
        let slowFactory = try #require(entries["IntKey"])
        #expect(slowFactory.factory >= .milliseconds(200))
        #expect(slowFactory.didAdd == .zero)
        let fast = try #require(entries["DoubleKey"])
        #expect(fast.factory < .milliseconds(200))
        #expect(fast.didAdd == .zero)
        let slowStart = try #require(entries["SlowStartKey"])
        #expect(slowStart.didAdd >= .milliseconds(300))
        #expect(slowStart.factory < .milliseconds(300))
        #expect(report.slowest.first?.key == "SlowStartKey")
    }

    @Test func eventsReportBuildHooksScopesAndReleaseWithDurations() async throws {
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = ServiceGraph.Builder()
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        builder.provide(ServiceA.self) { HookedService("A", log: EventLog()) }
        builder.provide(ServiceB.self, lifetime: .scoped, dependsOn: ServiceA.self) { _ in
            HookedService("B", log: EventLog())
        }
        builder.provide(IntKey.self, lifetime: .transient) { 1 }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        _ = try await scope.resolve(ServiceB.self)
        _ = try await graph.resolve(IntKey.self)
        try await scope.close()
        try await graph.shutdown()
        let seen = events.withLock { $0 }.map { "\($0.kind)\($0.key.map { " \($0)" } ?? "")" }
        #expect(
            seen == [
                "build started", "didAdd ServiceA", "service created ServiceA", "build finished",
                // A scoped instance as a singleton: reported created once in place, its didAdd run.
                "scope opened", "didAdd ServiceB", "service created ServiceB",
                "willRemove ServiceB", "scope closed", "willRemove ServiceA", "shutdown finished",
            ]
        )
        #expect(events.withLock { $0 }.filter { $0.kind == .buildFinished }.allSatisfy { $0.duration != nil })
    }

    @Test func resolveEventsAreOffByDefaultAndOnWhenAsked() async throws {
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = ServiceGraph.Builder()
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        builder.provide(IntKey.self, lifetime: .transient) { 1 }
        _ = try await builder.build().resolve(IntKey.self)
        #expect(!events.withLock { $0 }.contains { $0.kind == .resolved })
        builder.reportsResolveEvents = true
        let graph = try await builder.build()
        _ = try await graph.resolve(IntKey.self)
        _ = try graph.resolveSynchronously(IntKey.self)
        #expect(events.withLock { $0 }.filter { $0.kind == .resolved }.map(\.key) == ["IntKey", "IntKey"])
    }

    @Test func aFailedBuildIsAnEventWithItsError() async throws {
        let events = Locked<[ServiceGraphEvent]>([])
        var builder = ServiceGraph.Builder()
        builder.eventHandler = { event in events.withLock { $0.append(event) } }
        builder.provide(IntKey.self) { throw TestFailure("no") }
        _ = try? await builder.build()
        let failed = try #require(events.withLock { $0 }.last)
        #expect(failed.kind == .buildFailed)
        #expect(failed.error is ServiceGraphError)
    }

    @Test func lintWarnsAboutProvidersNothingUsesUnlessTheyAreEntryPoints() throws {
        var builder = DiagnosticsFixtures.builder()
        builder.provide(StringKey.self) { "unused" }
        #expect(builder.lint().map(\.key) == ["DiagHandler", "StringKey"])
        builder.declareEntryPoints(DiagHandler.self)
        let warnings = builder.lint()
        #expect(warnings.map(\.key) == ["StringKey"])
        #expect(warnings[0].code == .unusedProvider)
        #expect(warnings[0].description.contains("StringKey is provided but nothing depends on it"))
        try builder.validate()  // warnings are not errors
    }
}

/// Hooks whose `didAdd` takes 30 ms.
private final class SlowStart: LifecycleHooks, Sendable {
    func didAdd() async throws { try await Task.sleep(for: .milliseconds(300)) }
}

private enum SlowStartKey: ServiceKey { typealias Value = SlowStart }
