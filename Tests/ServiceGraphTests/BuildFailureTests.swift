import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum App: ServiceKey { typealias Value = HookedService }
private final class Plain: Sendable {}
private enum PlainA: ServiceKey { typealias Value = Plain }
private enum PlainB: ServiceKey { typealias Value = Plain }
private enum PlainC: ServiceKey { typealias Value = Plain }

@Suite("Failure during build")
struct BuildFailureTests {
    /// D ← B ← A(App), D ← C; `failure` makes one service's factory or didAdd throw.
    private func graph(
        _ log: EventLog,
        _ registry: WeakRegistry,
        factoryFails: String? = nil,
        didAddFails: String? = nil
    ) -> ServiceGraph.Builder {
        @Sendable func make(_ name: String) throws -> HookedService {
            if factoryFails == name { throw TestFailure("factory of \(name) failed on purpose") }
            return registry.track(HookedService(name, log: log, failDidAdd: didAddFails == name))
        }
        var builder = ServiceGraph.Builder()
        builder.provide(App.self, dependsOn: ServiceB.self, ServiceC.self) { _, _ in try make("App") }
        builder.provide(ServiceB.self, dependsOn: ServiceD.self) { _ in try make("B") }
        builder.provide(ServiceC.self, dependsOn: ServiceD.self) { _ in
            try await Task.sleep(for: .milliseconds(5))
            return try make("C")
        }
        builder.provide(ServiceD.self) { try make("D") }
        return builder
    }

    @Test func aThrowingFactoryReleasesWhatWasCreatedInReverseOrder() async throws {
        let log = EventLog()
        let registry = WeakRegistry()
        let error = await #expect(throws: ServiceGraphError.self) {
            try await graph(log, registry, factoryFails: "App").build()
        }
        let problem = try #require(error?.problems.first)
        #expect(error?.problems.count == 1)
        #expect(problem.code == .factoryFailed)
        #expect(problem.key == "App")
        #expect(problem.path == ["App"])
        #expect(problem.underlyingError as? TestFailure == TestFailure("factory of App failed on purpose"))
        #expect(problem.description.contains("the factory of App threw: factory of App failed on purpose"))
        #expect(problem.site?.fileID.hasSuffix("BuildFailureTests.swift") == true)

        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(Set(removals) == ["willRemove B", "willRemove C", "willRemove D"])
        #expect(removals.last == "willRemove D", "D is removed after everything that depends on it")
        for name in ["B", "C", "D"] {
            #expect(log.count(of: "willRemove \(name)") == 1)
        }
        #expect(registry.alive == 0)
    }

    @Test func theErrorNamesTheFailingServiceAndItsPathFromARoot() async throws {
        let log = EventLog()
        let registry = WeakRegistry()
        let error = await #expect(throws: ServiceGraphError.self) {
            try await graph(log, registry, factoryFails: "D").build()
        }
        let problem = try #require(error?.problems.first)
        #expect(problem.key == "ServiceD")
        #expect(problem.path == ["App", "ServiceB", "ServiceD"])
        #expect(problem.description.contains("App → ServiceB → ServiceD"))
        #expect(log.all.isEmpty, "nothing was created, so nothing is removed")
        #expect(registry.tracked == 0)
    }

    @Test func aThrowingDidAddMeansTheServiceNeverStarted() async throws {
        let log = EventLog()
        let registry = WeakRegistry()
        let error = await #expect(throws: ServiceGraphError.self) {
            try await graph(log, registry, didAddFails: "B").build()
        }
        let problem = try #require(error?.problems.first)
        #expect(problem.code == .didAddFailed)
        #expect(problem.key == "ServiceB")
        #expect(problem.path == ["App", "ServiceB"])
        #expect(log.count(of: "didAdd B") == 1)
        #expect(log.count(of: "willRemove B") == 0, "a service that never started is never stopped")
        #expect(log.count(of: "willRemove D") == 1)
        #expect(log.count(of: "init App") == 0, "nothing that depends on B is created")
        if log.count(of: "didAdd C") == 1 {
            #expect(log.count(of: "willRemove C") == 1)
            #expect(try #require(log.index(of: "willRemove C")) < #require(log.index(of: "willRemove D")))
        }
        #expect(registry.alive == 0)
    }

    @Test func aFailingWillRemoveDuringCleanupIsReportedToo() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceD.self) { HookedService("D", log: log, failWillRemove: true) }
        builder.provide(ServiceB.self, dependsOn: ServiceD.self) { _ in throw TestFailure("B failed") }
        let error = await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        #expect(error?.problems.map(\.code) == [.factoryFailed, .willRemoveFailed])
        #expect(error?.problems.map(\.key) == ["ServiceB", "ServiceD"])
    }

    @Test func cancellingTheBuildReleasesWhatWasCreated() async throws {
        let log = EventLog()
        let registry = WeakRegistry()
        var builder = ServiceGraph.Builder()
        builder.provide(ServiceD.self) { registry.track(HookedService("D", log: log)) }
        builder.provide(ServiceB.self, dependsOn: ServiceD.self) { _ in
            try await Task.sleep(for: .seconds(30))
            return registry.track(HookedService("B", log: log))
        }
        let build = Task { [builder] in try await builder.build() }
        while log.count(of: "didAdd D") == 0 { await Task.yield() }
        build.cancel()
        let result = await build.result
        let error = try #require(throws: ServiceGraphError.self) { try result.get() }
        #expect(error.codes == [.buildCancelled])
        // The build returns at once; D, which B's abandoned (and cancelled) factory depends on, is
        // released as soon as that factory ends, which may be just after the build returned.
        try await log.waitFor("willRemove D")
        let deadline = ContinuousClock.now + .seconds(60)
        while registry.alive > 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        #expect(log.count(of: "willRemove D") == 1)
        #expect(registry.alive == 0)
    }

    // The build's first phase (synchronous factories, no hooks, in a plain loop) fails and is
    // cancelled like the second.

    @Test func aThrowingFactoryInThePlainLoopReleasesTheSingletonsBeforeIt() async throws {
        let registry = WeakRegistry()
        var builder = ServiceGraph.Builder()
        builder.provide(PlainA.self) { registry.track(Plain()) }
        builder.provide(PlainB.self, dependsOn: PlainA.self) { _ in registry.track(Plain()) }
        builder.provide(PlainC.self, dependsOn: PlainB.self) { _ -> Plain in throw TestFailure("C failed on purpose") }
        let error = await #expect(throws: ServiceGraphError.self) { _ = try await builder.build() }
        #expect(error?.codes == [.factoryFailed])
        #expect(error?.problems.first?.key == "PlainC")
        #expect(registry.tracked == 2)
        #expect(registry.alive == 0)
    }

    @Test func cancellingDuringThePlainLoopStopsWithinSixtyFourServicesAndReleasesThem() async throws {
        let registry = WeakRegistry()
        let calls = Tally()
        var builder = ServiceGraph.Builder()
        for index in 0..<200 {
            func open<Key: GeneratedKey>(_ key: Key.Type) {
                builder.provide(key) {
                    _ = calls.increment()
                    // Cancels the build's own task: the factory runs inline on it.
                    if index == 100 { withUnsafeCurrentTask { $0?.cancel() } }
                    return registry.track(GeneratedService(index: index, value: 1))
                }
            }
            open(GeneratedKeys.key(index))
        }
        let build = Task { [builder] in try await builder.build() }
        let result = await build.result
        let error = try #require(throws: ServiceGraphError.self) { try result.get() }
        #expect(error.codes == [.buildCancelled])
        #expect(calls.count > 100 && calls.count <= 101 + 64, "\(calls.count) factories ran")
        #expect(registry.alive == 0)
    }
}
