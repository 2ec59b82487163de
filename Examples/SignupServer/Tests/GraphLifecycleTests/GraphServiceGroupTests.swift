import GraphLifecycle
import ServiceGraph
import ServiceLifecycle
import Testing

@Suite("GraphServiceGroup: startup and shutdown in the graph's order")
struct GraphServiceGroupTests {
    /// C depends on B, B on A, declared in reverse; A and C are needed running by their dependents.
    func chain(
        _ journal: Journal,
        a: Behaviour = Behaviour(),
        b: Behaviour = Behaviour(),
        c: Behaviour = Behaviour()
    )
        -> ServiceGraph.Builder
    {
        var builder = ServiceGraph.Builder()
        builder.provide(CKey.self, dependsOn: BKey.self) {
            FakeService("C", journal: journal, behaviour: c, needs: [$0])
        }
        builder.provide(BKey.self, dependsOn: AKey.self, PlainKey.self) { a, _ in
            FakeService("B", journal: journal, behaviour: b, needs: [a])
        }
        builder.provide(AKey.self) { FakeService("A", journal: journal, behaviour: a) }
        builder.provide(PlainKey.self) { 7 }
        return builder
    }

    @Test func startsInCreationOrderAndStopsInReverseThenRunsTheHooksInReverse() async throws {
        let journal = Journal()
        let group = try await makeGroup(chain(journal), journal: journal).group
        #expect(group.serviceNames == ["AKey", "BKey", "CKey", "server"])
        let run = start(group)
        try await journal.waitFor("run server")
        await group.triggerGracefulShutdown()
        #expect(errors(of: await run.value).isEmpty)

        let all = journal.all
        #expect(journal.matching("running ") == ["running A", "running B", "running C"])
        // Each service ran only once what it needs was running; the server once all were.
        #expect(all.firstIndex(of: "running A")! < all.firstIndex(of: "run B")!)
        #expect(all.firstIndex(of: "running B")! < all.firstIndex(of: "run C")!)
        #expect(all.firstIndex(of: "running C")! < all.firstIndex(of: "run server")!)
        #expect(journal.matching("stop ") == ["stop server", "stop C", "stop B", "stop A"])
        #expect(journal.matching("willRemove ") == ["willRemove C", "willRemove B", "willRemove A"])
        #expect(all.firstIndex(of: "stop A")! < all.firstIndex(of: "willRemove C")!)
    }

    @Test func aServiceWaitsForWhatItNeedsToBeRunningNotJustBuilt() async throws {
        let journal = Journal()
        let (graph, group) = try await makeGroup(
            chain(journal, a: Behaviour(waitsForRelease: true)),
            journal: journal,
            server: nil
        )
        let run = start(group)
        try await journal.waitFor("run A")
        // A is built and its run() has begun, but it is not running yet: B must not have started.
        try await Task.sleep(for: .milliseconds(100))
        #expect(journal.index(of: "run B") == nil)
        graph[AKey.self].letRun()
        try await journal.waitFor("run C")
        #expect(journal.index(of: "running A")! < journal.index(of: "run B")!)
        await group.triggerGracefulShutdown()
        #expect(errors(of: await run.value).isEmpty)
    }

    @Test func aFailingServiceBringsTheGroupDownWithAnErrorNamingIt() async throws {
        let journal = Journal()
        let group = try await makeGroup(chain(journal, c: Behaviour(fails: "disk full")), journal: journal).group
        let found = errors(of: await start(group).value)
        let error = try #require(found.first as? GraphLifecycleError)
        #expect(error.service == "CKey")
        #expect("\(error)" == "CKey failed: disk full")
        // The others were stopped gracefully, in reverse, and the graph was shut down.
        #expect(journal.matching("stop ").last == "stop A")
        #expect(journal.matching("willRemove ") == ["willRemove C", "willRemove B", "willRemove A"])
        // The server never started: C never said it was running.
        #expect(journal.index(of: "run server") == nil)
    }

    @Test func aServiceThatReturnsBeforeTheShutdownIsAFailure() async throws {
        let journal = Journal()
        let group = try await makeGroup(
            chain(journal, b: Behaviour(exitsEarly: true)),
            journal: journal,
            server: nil
        ).group
        let found = errors(of: await start(group).value)
        let messages = found.map { "\($0)" }
        #expect(messages.contains("BKey stopped running before the service group was shut down"))
        // C needed B running; B stopped before it was running, so C never ran.
        #expect(journal.index(of: "run C") == nil)
        #expect(journal.matching("willRemove ") == ["willRemove C", "willRemove B", "willRemove A"])
    }

    @Test func aServiceNeverSayingItIsRunningTimesOutItsDependents() async throws {
        let journal = Journal()
        let group = try await makeGroup(
            chain(journal, a: Behaviour(reportsRunning: false)),
            journal: journal,
            server: nil,
            configuration: testConfiguration(readinessTimeout: .milliseconds(200))
        ).group
        let found = errors(of: await start(group).value)
        let error = try #require(found.first as? GraphLifecycleError)
        #expect(error.service == "BKey")
        #expect("\(error)".hasPrefix("BKey needs AKey running, but AKey was not running after"))
        #expect(journal.index(of: "run B") == nil)
    }

    @Test func aShutdownWhileWaitingToStartEndsCleanly() async throws {
        let journal = Journal()
        let group = try await makeGroup(chain(journal, a: Behaviour(waitsForRelease: true)), journal: journal).group
        let run = start(group)
        try await journal.waitFor("run A")
        await group.triggerGracefulShutdown()
        #expect(errors(of: await run.value).isEmpty)
        // Neither B, C nor the server ran; A stopped; every hook ran once.
        #expect(journal.matching("run ") == ["run A"])
        #expect(journal.matching("willRemove ") == ["willRemove C", "willRemove B", "willRemove A"])
    }

    @Test func needingAServiceThatStartsLaterIsRefusedBeforeAnythingStarts() async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        // A needs B running, but B depends on A, so B starts after A.
        let late = FakeService("B", journal: journal)
        builder.provide(AKey.self) { FakeService("A", journal: journal, needs: [late]) }
        builder.provide(BKey.self, dependsOn: AKey.self) { _ in late }
        let graph = try await builder.build()
        #expect {
            try GraphServiceGroup(graph: graph, server: nil, configuration: testConfiguration(), logger: testLogger)
        } throws: { error in
            "\(error)".hasPrefix("AKey needs BKey running, but BKey is not a service the group starts before it")
        }
        #expect(journal.all.isEmpty)
        try await graph.shutdown()

        // Needing a service that is not in the graph at all.
        var other = ServiceGraph.Builder()
        let stranger = FakeService("stranger", journal: journal)
        other.provide(AKey.self) { FakeService("A", journal: journal, needs: [stranger]) }
        let second = try await other.build()
        #expect {
            try GraphServiceGroup(graph: second, server: nil, configuration: testConfiguration(), logger: testLogger)
        } throws: { error in
            "\(error)".hasPrefix("AKey needs FakeService running")
        }
        try await second.shutdown()
    }

    /// A service that ignores the graceful shutdown is cancelled after the group's limit; a hook that
    /// hangs is abandoned after the graph's hook timeout; the run reports the hook by name.
    @Test func theGroupsShutdownLimitAndTheGraphsHookTimeoutBoundAShutdown() async throws {
        let journal = Journal()
        var configuration = testConfiguration(gracefulShutdown: .milliseconds(300))
        configuration.hookTimeout = .milliseconds(300)
        let group = try await makeGroup(
            chain(
                journal,
                b: Behaviour(willRemoveHangs: .seconds(5)),
                c: Behaviour(ignoresGracefulShutdown: true)
            ),
            journal: journal,
            server: nil,
            configuration: configuration
        ).group
        let run = start(group)
        try await journal.waitFor("running C")
        await group.triggerGracefulShutdown()
        let found = errors(of: await run.value).map { "\($0)" }
        // Past the limit the group cancels every service still running at once (swift-service-lifecycle's
        // rule), so the order of these stops is not the graph's; the hooks' order still is.
        #expect(Set(journal.matching("stop ")) == ["stop C", "stop B", "stop A"])
        #expect(journal.index(of: "willRemove C")! > journal.all.lastIndex { $0.hasPrefix("stop ") }!)
        #expect(found.contains { $0.contains("willRemove") && $0.contains("BKey") })
        // A's hook still ran, after B's was abandoned.
        #expect(journal.matching("willRemove ") == ["willRemove C", "willRemove B", "willRemove A"])
    }

    @Test func cancellingTheRunStillShutsTheGraphDown() async throws {
        let journal = Journal()
        let group = try await makeGroup(chain(journal), journal: journal, server: nil).group
        let run = start(group)
        try await journal.waitFor("running C")
        run.cancel()
        _ = await run.value
        #expect(Set(journal.matching("stop ")) == ["stop A", "stop B", "stop C"])
        #expect(journal.matching("willRemove ") == ["willRemove C", "willRemove B", "willRemove A"])
    }

    @Test func aBuildThatFailsLeavesNothingStarted() async throws {
        let journal = Journal()
        var builder = chain(journal)
        builder.override(BKey.self, dependsOn: AKey.self, PlainKey.self) { _, _ in throw Failure("no B today") }
        await #expect {
            try await GraphServiceGroup.build(builder)
        } throws: { error in
            "\(error)".contains("BKey") && "\(error)".contains("no B today")
        }
        #expect(journal.matching("run ").isEmpty)
    }
}
