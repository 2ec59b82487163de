import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// An event handler that uses the graph it observes: dumps it, reads its startup report and its
/// singletons, opens a scope of its own. The graph sends events while it works (opening a scope,
/// closing one, making a service, resolving), so a handler that calls back into it must find it
/// usable, not waiting on a lock the graph holds while it sends.
@Suite("An event handler calling back into its graph")
struct EventHandlerReentryTests {
    private enum ConfigKey: ServiceKey { typealias Value = String }
    private enum RequestKey: ServiceKey { typealias Value = Int }

    /// The graph, set once it is built, and what the handler did.
    private final class Observer: Sendable {
        let graph = Locked<ServiceGraph?>(nil)
        let seen = Locked<[String]>([])
        let kinds = Locked<[ServiceGraphEvent.Kind]>([])
        let hasOpened = Locked(false)
    }

    private static func builder(
        _ observer: Observer,
        kinds: Set<ServiceGraphEvent.Kind>,
        reportsResolves: Bool = false
    ) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(ConfigKey.self) { "config" }
        builder.provide(RequestKey.self, lifetime: .scoped) { 7 }
        builder.reportsResolveEvents = reportsResolves
        builder.eventKinds = kinds
        builder.eventHandler = { event in
            guard let graph = observer.graph.withLock({ $0 }) else { return }
            let dump = graph.dump(.text)
            let report = graph.startupReport()
            let singletons = graph.singletons(as: String.self)
            // A scope of the handler's own, the first time.
            let isFirst = observer.hasOpened.withLock { hasOpened in
                defer { hasOpened = true }
                return !hasOpened
            }
            var opened = "none"
            if isFirst {
                opened = (try? graph.makeScope()) != nil ? "opened" : "refused"
            }
            observer.seen.withLock {
                $0.append("\(event.kind): \(dump.count > 0) \(report.slowest.count) \(singletons.count) \(opened)")
            }
        }
        return builder
    }

    @Test(arguments: [ServiceGraphEvent.Kind.scopeOpened, .scopeClosed, .resolved, .serviceCreated])
    func aHandlerThatOpensAScopeAndReadsTheGraphIsNotBlocked(kind: ServiceGraphEvent.Kind) async throws {
        let observer = Observer()
        let graph = try await Self.builder(observer, kinds: [kind], reportsResolves: kind == .resolved).build()
        observer.graph.withLock { $0 = graph }
        try await withDeadline(.seconds(30)) {
            let scope = try graph.makeScope()
            #expect(try await scope.resolve(RequestKey.self) == 7)
            #expect(try await graph.resolve(ConfigKey.self) == "config")
            try await scope.close()
        }
        let seen = observer.seen.withLock { $0 }
        #expect(seen.contains("\(kind): true 1 1 opened"), "the handler read the graph and opened a scope: \(seen)")
        observer.graph.withLock { $0 = nil }
        try await graph.shutdown()
    }

    /// A handler that resolves on every `resolved` event, with no guard of its own: the resolves it makes
    /// are not reported to it (on its own thread, while it runs), so it is called once per resolve of the
    /// test's, rather than calling itself until the stack runs out.
    @Test func aHandlerThatResolvesOnEachResolveIsNotCalledForItsOwnResolves() async throws {
        let observer = Observer()
        var builder = ServiceGraph.Builder()
        builder.provide(ConfigKey.self, lifetime: .transient) { "config" }
        builder.reportsResolveEvents = true
        builder.eventKinds = [.resolved]
        builder.eventHandler = { event in
            guard let graph = observer.graph.withLock({ $0 }) else { return }
            let value = (try? graph.resolveSynchronously(ConfigKey.self)) ?? "failed"
            observer.seen.withLock { $0.append("\(event.kind) \(event.key ?? ""): \(value)") }
        }
        let graph = try await builder.build()
        observer.graph.withLock { $0 = graph }
        for _ in 0..<3 { #expect(try graph.resolveSynchronously(ConfigKey.self) == "config") }
        #expect(try await graph.resolve(ConfigKey.self) == "config")
        let seen = observer.seen.withLock { $0 }
        #expect(seen.count == 4, "one call per resolve of the test's: \(seen)")
        #expect(seen.allSatisfy { $0.hasSuffix(": config") }, "\(seen)")
        observer.graph.withLock { $0 = nil }
        try await graph.shutdown()
    }

    /// A handler of one graph that uses another graph: the other graph's events reach the other
    /// graph's handler (only a handler's own graph's events are held back while it runs).
    @Test func aHandlerUsingAnotherGraphLetsThatGraphReportToItsOwnHandler() async throws {
        let other = Observer()
        var otherBuilder = ServiceGraph.Builder()
        otherBuilder.provide(ConfigKey.self, lifetime: .transient) { "other" }
        otherBuilder.reportsResolveEvents = true
        otherBuilder.eventKinds = [.resolved]
        otherBuilder.eventHandler = { event in other.seen.withLock { $0.append("\(event.kind)") } }
        let otherGraph = try await otherBuilder.build()

        let first = Observer()
        var builder = ServiceGraph.Builder()
        builder.provide(ConfigKey.self, lifetime: .transient) { "first" }
        builder.reportsResolveEvents = true
        builder.eventKinds = [.resolved]
        builder.eventHandler = { event in
            let value = (try? otherGraph.resolveSynchronously(ConfigKey.self)) ?? "failed"
            first.seen.withLock { $0.append(value) }
        }
        let graph = try await builder.build()
        #expect(try graph.resolveSynchronously(ConfigKey.self) == "first")
        #expect(first.seen.withLock { $0 } == ["other"])
        #expect(other.seen.withLock { $0 } == ["resolved"], "the other graph's resolve reached its handler")
        try await graph.shutdown()
        try await otherGraph.shutdown()
    }

    /// A listener of drops alone hears of every scope dropped, whether or not it owed hooks.
    @Test func aListenerOfDropsAloneHearsOfAScopeThatOwedNothing() async throws {
        let drops = Locked<[String?]>([])
        var builder = ServiceGraph.Builder()
        builder.provide(RequestKey.self, lifetime: .scoped) { 7 }
        builder.eventKinds = [.scopeDropped]
        builder.eventHandler = { event in drops.withLock { $0.append(event.key) } }
        let graph = try await builder.build()
        do {
            let scope = try graph.makeScope()
            #expect(try await scope.resolve(RequestKey.self) == 7)
        }
        _ = try graph.makeScope()
        #expect(drops.withLock { $0 } == [nil, nil], "both drops, neither owing hooks")
        try await graph.shutdown()
    }

    /// A handler that keeps its events, and an update whose build fails: the event's error carries the
    /// problems but not the dump (the dump holds the failed generation, and with it this handler: kept
    /// in the handler's own storage, that generation would never be released); the thrown error has it.
    @Test func aFailedUpdatesEventKeepsTheProblemsNotTheFailedGeneration() async throws {
        struct FactoryFailure: Error {}
        let kept = Locked<[ServiceGraphEvent]>([])
        var builder = ServiceGraph.Builder()
        builder.provide(ConfigKey.self) { "config" }
        builder.eventKinds = [.updateFailed]
        builder.eventHandler = { event in kept.withLock { $0.append(event) } }
        let live = try await LiveGraph(builder)
        let thrown = await #expect(throws: ServiceGraphError.self) {
            try await live.update { $0.override(ConfigKey.self) { () -> String in throw FactoryFailure() } }
        }
        #expect(thrown?.dump() != nil, "the thrown error shows the graph")
        let failed = kept.withLock { $0 }
        #expect(failed.count == 1)
        let reported = failed.first?.error as? ServiceGraphError
        #expect(reported?.codes == thrown?.codes, "the same problems")
        #expect(reported != nil && reported?.dump() == nil, "no dump, and so no hold on the failed generation")
        #expect(failed.first?.update?.dump().isEmpty == false, "the update's own dump is there")
        try await live.shutdown()
        kept.withLock { $0 = [] }
    }

    /// Scopes opened while the graph shuts down, with a handler that takes its time over each
    /// `scopeOpened`: the shutdown closes scopes whose opening is still being reported, and each close
    /// (or drop, when the opener lets go first) is reported after the opening, so that a listener's count
    /// of open scopes never reads below zero, and ends at zero.
    @Test func aScopeClosedByAShutdownIsReportedClosedAfterItWasReportedOpen() async throws {
        let observer = Observer()
        var builder = ServiceGraph.Builder()
        builder.provide(RequestKey.self, lifetime: .scoped) { 7 }
        builder.eventKinds = [.scopeOpened, .scopeClosed, .scopeDropped]
        builder.eventHandler = { event in
            if event.kind == .scopeOpened {
                // Long enough for the shutdown to find the scope and start closing it meanwhile.
                let until = ContinuousClock.now + .milliseconds(2)
                while ContinuousClock.now < until {}
            }
            observer.kinds.withLock { $0.append(event.kind) }
        }
        for _ in 0..<20 {
            observer.kinds.withLock { $0 = [] }
            let graph = try await builder.build()
            try await withDeadline(.seconds(60)) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 {
                        group.addTask {
                            // Open until the shutdown refuses (kept open: the shutdown closes them),
                            // letting the shutdown's task have a thread between two.
                            var scopes: [ServiceScope] = []
                            while scopes.count < 1_000, let scope = try? graph.makeScope() {
                                scopes.append(scope)
                                await Task.yield()
                            }
                        }
                    }
                    group.addTask {
                        try await Task.sleep(for: .milliseconds(5))
                        try await graph.shutdown()
                    }
                    try await group.waitForAll()
                }
            }
            let kinds = observer.kinds.withLock { $0 }
            var open = 0
            for (index, kind) in kinds.enumerated() {
                open += kind == .scopeOpened ? 1 : -1
                #expect(open >= 0, "event \(index): a scope reported closed before it was reported open")
                if open < 0 { return }
            }
            #expect(open == 0, "every scope opened was reported closed (by the shutdown) or dropped: \(open) not")
            #expect(kinds.count >= 2)
        }
    }
}
