import Dispatch
import Foundation
import ServiceGraph
import ServiceGraphTestSupport
import Testing

// Hostile tests of a scope's idle close: with nothing in flight, no scope opened from it and no
// `willRemove` owed, `close()` marks the close started and finished in one turn of the scope's lock,
// then releases the instances (newest first), then tells the graph, whose shutdown waits for that
// release before it runs the singletons' `willRemove`. Every instance here reports its release to a
// ledger, which checks, as it happens, that nothing is released twice, that nothing is released
// before what was made from it, and that the singleton's `willRemove` finds no scoped instance alive.

extension ScopeKind {
    fileprivate static let icSession = ScopeKind("ic-session")
    fileprivate static let icRequest = ScopeKind("ic-request", inside: .icSession)
}

/// Whether the tests run under a sanitizer: the loops are shorter there.
private let icScale = ProcessEnvironment.isSanitizerRun ? 4 : 1

// MARK: - What the instances report to

/// What one test's instances report to: which are alive (by name, and how many per scope tag), the
/// releases and hooks in order, and every rule broken, found as it is broken.
private final class ICLedger: Sendable {
    private struct State {
        var alive: [String: (tag: String, isSeed: Bool)] = [:]
        var aliveByTag: [String: Int] = [:]
        var events: [String] = []
        var doubleReleases: [String] = []
        var violations: [String] = []
        var rootRemoved = false
        var onRelease: (@Sendable (String) -> Void)?
    }

    private let state = Locked(State())

    func made(_ name: String, tag: String, isSeed: Bool) {
        state.withLock { state in
            if state.alive.updateValue((tag, isSeed), forKey: name) != nil {
                state.violations.append("\(name) made twice")
            }
            state.aliveByTag[tag, default: 0] += 1
        }
    }

    /// The instance `name` is being released: it must be alive, what it was made from must be alive
    /// (newest first), and the singleton's `willRemove` must not have run yet. The observer, if any,
    /// runs first, the instance still counted alive.
    func released(_ name: String, madeFrom dependencies: [String]) {
        state.withLock { $0.onRelease }?(name)
        state.withLock { state in
            let isSeed = dependencies.isEmpty
            if let (tag, _) = state.alive.removeValue(forKey: name) {
                state.aliveByTag[tag, default: 0] -= 1
            } else {
                state.doubleReleases.append(name)
            }
            // A seed is the caller's value until a scope takes it: one refused after the shutdown is
            // released when its caller lets it go.
            if state.rootRemoved && !isSeed {
                state.violations.append("\(name) released after the singleton's willRemove")
            }
            for dependency in dependencies where state.alive[dependency] == nil {
                state.violations.append("\(dependency) released before \(name), which was made from it")
            }
            state.events.append("deinit \(name)")
        }
    }

    /// The singleton's `willRemove`: every scoped instance must be gone (seeds are the caller's values,
    /// some in flight to a `makeScope` the shutdown refuses, and are checked once everything returned).
    func rootRemoving() {
        state.withLock { state in
            let scoped = state.alive.filter { !$0.value.isSeed }.keys.sorted()
            if !scoped.isEmpty {
                state.violations.append(
                    "the singleton's willRemove ran with \(scoped.count) scoped instances alive: \(scoped.prefix(6))"
                )
            }
            state.rootRemoved = true
            state.events.append("willRemove root")
        }
    }

    /// A resolve was handed `node`: it must be alive, with what it was made from.
    func check(_ node: ICNode) {
        state.withLock { state in
            for name in [node.name] + node.madeFrom where state.alive[name] == nil {
                state.violations.append("a resolve was handed \(node.name) while \(name) was released")
            }
        }
    }

    func note(_ event: String) { state.withLock { $0.events.append(event) } }
    func violation(_ text: String) { state.withLock { $0.violations.append(text) } }
    func observeReleases(_ observer: (@Sendable (String) -> Void)?) { state.withLock { $0.onRelease = observer } }

    var events: [String] { state.withLock { $0.events } }
    var violations: [String] { state.withLock { $0.violations } }
    var doubleReleases: [String] { state.withLock { $0.doubleReleases } }
    var aliveNames: [String] { state.withLock { $0.alive.keys.sorted() } }
    var aliveScopedNames: [String] { state.withLock { $0.alive.filter { !$0.value.isSeed }.keys.sorted() } }
    func aliveCount(tag: String) -> Int { state.withLock { $0.aliveByTag[tag] ?? 0 } }
    func isAlive(_ name: String) -> Bool { state.withLock { $0.alive[name] != nil } }
    func count(of event: String) -> Int { events.filter { $0 == event }.count }

    /// The releases of the instances tagged `tag`, in order, by the part of the name after the tag.
    func releases(tag: String) -> [String] {
        events.compactMap { event -> String? in
            guard event.hasPrefix("deinit \(tag)") else { return nil }
            let rest = event.dropFirst("deinit \(tag)".count)
            if rest.isEmpty { return "seed" }
            return rest.hasPrefix("/") ? String(rest.dropFirst()) : nil
        }
    }
}

/// An instance that reports to its ledger while it exists. `tag` names the scope it belongs to (its
/// seed's name); `madeFrom`, the instances it was made from, which it does not hold.
private class ICNode: @unchecked Sendable {
    let name: String
    let tag: String
    let ledger: ICLedger
    let madeFrom: [String]
    /// How long its release takes, in seconds.
    let releaseDelay: Double

    init(_ name: String, tag: String? = nil, _ ledger: ICLedger, madeFrom: [ICNode] = [], releaseDelay: Double = 0) {
        self.name = name
        self.tag = tag ?? name
        self.ledger = ledger
        self.madeFrom = madeFrom.map(\.name)
        self.releaseDelay = releaseDelay
        ledger.made(name, tag: self.tag, isSeed: madeFrom.isEmpty)
    }

    /// A scoped instance made from `source`, in its scope.
    convenience init(_ suffix: String, from source: ICNode, _ ledger: ICLedger, also: [ICNode] = []) {
        self.init(
            "\(source.tag)/\(suffix)",
            tag: source.tag,
            ledger,
            madeFrom: [source] + also,
            releaseDelay: source.releaseDelay
        )
    }

    deinit {
        // A release that takes a while widens the window between a close marked finished and the end
        // of its release.
        if releaseDelay > 0 { Thread.sleep(forTimeInterval: releaseDelay) }
        ledger.released(name, madeFrom: madeFrom)
    }
}

/// An instance with hooks, which it logs; its `willRemove` finds it alive.
private final class ICHookedNode: ICNode, LifecycleHooks, @unchecked Sendable {
    func didAdd() async throws { ledger.note("didAdd \(name)") }

    func willRemove() async throws {
        if !ledger.isAlive(name) { ledger.violation("willRemove \(name) ran after its release") }
        ledger.note("willRemove \(name)")
    }
}

/// A scoped instance whose release blocks the closing thread until the test lets it go.
private final class ICBlocker: ICNode, @unchecked Sendable {
    let letGo: DispatchSemaphore

    init(from source: ICNode, _ ledger: ICLedger, letGo: DispatchSemaphore) {
        self.letGo = letGo
        super.init("\(source.tag)/blocker", tag: source.tag, ledger, madeFrom: [source])
    }

    deinit {
        ledger.note("release \(name) started")
        if letGo.wait(timeout: .now() + 300) == .timedOut { ledger.violation("\(name) was never let go") }
    }
}

/// The singleton every scoped service depends on: its `willRemove` must come after every scoped
/// instance's release.
private final class ICRoot: LifecycleHooks, Sendable {
    let ledger: ICLedger
    init(_ ledger: ICLedger) { self.ledger = ledger }
    func willRemove() async throws { ledger.rootRemoving() }
}

/// What a scope hands out that reaches it without its handle.
private struct ICHandles: Sendable {
    let probe: Provider<ICProbeKey>
    let seed: Lazy<ICSeedKey>
}

private enum ICRootKey: ServiceKey { typealias Value = ICRoot }
private enum ICSeedKey: ServiceKey { typealias Value = ICNode }
private enum ICFirstKey: ServiceKey { typealias Value = ICNode }
private enum ICSecondKey: ServiceKey { typealias Value = ICNode }
private enum ICThirdKey: ServiceKey { typealias Value = ICNode }
private enum ICProbeKey: ServiceKey { typealias Value = Int }
private enum ICHandlesKey: ServiceKey { typealias Value = ICHandles }
private enum ICGatedKey: ServiceKey { typealias Value = ICNode }
private enum ICGatedProbeKey: ServiceKey { typealias Value = Int }
private enum ICBlockerKey: ServiceKey { typealias Value = ICBlocker }
private enum ICUserKey: ServiceKey { typealias Value = ICNode }
private enum ICCartKey: ServiceKey { typealias Value = ICNode }
private enum ICCartProbeKey: ServiceKey { typealias Value = Int }
private enum ICTicketKey: ServiceKey { typealias Value = ICNode }
private enum ICCheckoutKey: ServiceKey { typealias Value = ICNode }
private enum ICCheckoutProbeKey: ServiceKey { typealias Value = Int }

/// A singleton root; a seed; three scoped services in a chain on it (first on the seed and the root,
/// second on first, third, made asynchronously, on second); a transient probe on third that returns
/// a number, so that whoever resolves it holds no scoped instance; handles on the probe and the
/// seed. With `gate`, a scoped service on third whose factory waits at the gate, and its probe; with
/// `letGo`, a scoped service on third whose release blocks until it is signalled. With `nested`, a
/// session kind (seeded with a user; a cart on the user and the root) and a request kind inside it
/// (seeded with a ticket; a checkout on the ticket and the session's cart), each with a probe.
private func icBuilder(
    _ ledger: ICLedger,
    gate: Gate? = nil,
    letGo: DispatchSemaphore? = nil,
    nested: Bool = false
) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    // A test that fails part-way drops its graph without a shutdown: a failure, not a crash of the run.
    builder.requiresShutdown = false
    builder.provide(ICRootKey.self) { ICRoot(ledger) }
    builder.seed(ICSeedKey.self)
    builder.provide(ICFirstKey.self, lifetime: .scoped, dependsOn: ICSeedKey.self, ICRootKey.self) { seed, _ in
        ICNode("first", from: seed, ledger)
    }
    builder.provide(ICSecondKey.self, lifetime: .scoped, dependsOn: ICFirstKey.self) {
        ICNode("second", from: $0, ledger)
    }
    builder.provide(ICThirdKey.self, lifetime: .scoped, dependsOn: ICSecondKey.self) { second async in
        await Task.yield()
        return ICNode("third", from: second, ledger)
    }
    builder.provide(ICProbeKey.self, lifetime: .transient, dependsOn: ICThirdKey.self) { third in
        ledger.check(third)
        return third.name.count
    }
    builder.provide(ICHandlesKey.self, lifetime: .transient, dependsOn: Provider<ICProbeKey>.self, Lazy<ICSeedKey>.self)
    {
        ICHandles(probe: $0, seed: $1)
    }
    if let gate {
        builder.provide(ICGatedKey.self, lifetime: .scoped, dependsOn: ICThirdKey.self) { third async in
            ledger.note("gated factory started in \(third.tag)")
            await gate.wait()
            return ICNode("gated", from: third, ledger)
        }
        builder.provide(ICGatedProbeKey.self, lifetime: .transient, dependsOn: ICGatedKey.self) { gated in
            ledger.check(gated)
            return 1
        }
    }
    if let letGo {
        builder.provide(ICBlockerKey.self, lifetime: .scoped, dependsOn: ICThirdKey.self) {
            ICBlocker(from: $0, ledger, letGo: letGo)
        }
    }
    guard nested else { return builder }
    builder.inScope(.icSession) { session in
        session.seed(ICUserKey.self)
        session.provide(ICCartKey.self, lifetime: .scoped, dependsOn: ICUserKey.self, ICRootKey.self) { user, _ in
            ICNode("cart", from: user, ledger)
        }
    }
    builder.inScope(.icRequest) { request in
        request.seed(ICTicketKey.self)
        request.provide(ICCheckoutKey.self, lifetime: .scoped, dependsOn: ICTicketKey.self, ICCartKey.self) {
            ICNode("checkout", from: $0, ledger, also: [$1])
        }
    }
    builder.provide(ICCartProbeKey.self, lifetime: .transient, dependsOn: ICCartKey.self) { cart in
        ledger.check(cart)
        return 1
    }
    builder.provide(ICCheckoutProbeKey.self, lifetime: .transient, dependsOn: ICCheckoutKey.self) { checkout in
        ledger.check(checkout)
        return 1
    }
    return builder
}

/// A scope of the default kind, seeded with a new instance named `tag` that only the scope holds.
private func icOpen(
    _ graph: ServiceGraph,
    _ tag: String,
    _ ledger: ICLedger,
    slow: Bool = false,
    releaseDelay: Double? = nil
) throws -> ServiceScope {
    try graph.makeScope(
        seeding: ScopeSeed(ICSeedKey.self, ICNode(tag, ledger, releaseDelay: releaseDelay ?? (slow ? 0.0002 : 0)))
    )
}

/// The releases a scope that made its whole chain must make, newest first, its seed last.
private let icChainReleases = ["third", "second", "first", "seed"]

// MARK: - Checks

/// Runs `body`: true when it returned, false when it was refused with only `codes`; any other error
/// is an issue.
private func icAttempt(
    refusing codes: Set<ServiceGraphError.Code> = [.scopeClosed],
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> Bool {
    do {
        try await body()
        return true
    } catch let error as ServiceGraphError where !error.codes.isEmpty && error.codes.allSatisfy(codes.contains) {
        return false
    } catch {
        Issue.record("unexpected error: \(error)", sourceLocation: sourceLocation)
        return false
    }
}

/// Expects `error` to be a ``ServiceGraphError`` of exactly `codes`.
private func icExpectCodes(
    _ error: (any Error)?,
    _ codes: [ServiceGraphError.Code],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(
        (error as? ServiceGraphError)?.codes == codes,
        "\(String(describing: error))",
        sourceLocation: sourceLocation
    )
}

/// Whether `error` is a ``ServiceGraphError`` of exactly `codes`.
private func icIs(_ error: any Error, _ codes: [ServiceGraphError.Code]) -> Bool {
    (error as? ServiceGraphError)?.codes == codes
}

/// Nothing was released twice, no rule was broken, and every instance is gone.
private func icExpectClean(_ ledger: ICLedger, sourceLocation: SourceLocation = #_sourceLocation) {
    let violations = ledger.violations
    #expect(
        violations.isEmpty,
        "\(violations.count) violations: \(violations.prefix(8))",
        sourceLocation: sourceLocation
    )
    #expect(ledger.doubleReleases.isEmpty, "released twice: \(ledger.doubleReleases)", sourceLocation: sourceLocation)
    let alive = ledger.aliveNames
    #expect(alive.isEmpty, "\(alive.count) never released: \(alive.prefix(8))", sourceLocation: sourceLocation)
}

/// Waits (polling, within a generous deadline: a guard against a hang, not a timing assertion) until
/// `condition` holds; the caller then asserts it.
private func icEventually(_ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + .seconds(ProcessEnvironment.isSanitizerRun ? 240 : 60)
    while !condition(), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(1)) }
}

/// Gives other work a chance (about `milliseconds`, less if `stop` holds sooner) to do something it
/// must not: a pause that can only hide a bug on a slow machine, never invent one.
private func icGiveAChance(milliseconds: Int = 100, stopping stop: () -> Bool = { false }) async {
    for _ in 0..<milliseconds where !stop() {
        await Task.yield()
        try? await Task.sleep(for: .milliseconds(1))
    }
}

/// Runs its jobs on a serial dispatch queue, outside the cooperative pool: a close run there may block
/// its thread in a release without starving the tasks that must let it go (the machine may have two
/// cooperative threads in all).
private final class ICQueueExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "IdleCloseHostileTests.blocking")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

@Suite("Idle scope close, hostile", .serialized)
struct IdleCloseHostileTests {
    // MARK: Many closers

    /// Eight tasks close one idle scope at the same moment, round after round: exactly one close
    /// succeeds and the seven others are refused with scopeClosed; the scope's instances are released
    /// exactly once, newest first, the seed last, all before the winning close returned; nothing is
    /// made again afterwards.
    @Test func manyTasksClosingOneIdleScopeAtOnceCloseItOnceAndReleaseEachInstanceOnceNewestFirst() async throws {
        let ledger = ICLedger()
        let graph = try await icBuilder(ledger).build()
        let (rounds, closers) = (150 / icScale, 8)
        try await withDeadline {
            for round in 0..<rounds {
                let tag = "m\(round)"
                let scope = try icOpen(graph, tag, ledger, slow: round.isMultiple(of: 3))
                #expect(try await scope.resolve(ICProbeKey.self) == "\(tag)/third".count)
                #expect(!scope.isClosed)
                let barrier = Barrier(count: closers)
                let winners = Locked<[Int]>([])
                await withTaskGroup(of: Void.self) { group in
                    for closer in 0..<closers {
                        group.addTask {
                            await barrier.arriveAndWait()
                            let closed = await icAttempt { try await scope.close() }
                            guard closed else { return }
                            // The winner returns only once its release is done.
                            #expect(ledger.aliveCount(tag: tag) == 0, "round \(round): close returned before releasing")
                            winners.withLock { $0.append(closer) }
                        }
                    }
                }
                #expect(winners.withLock { $0.count } == 1, "round \(round): \(winners.withLock { $0 }) closed it")
                #expect(scope.isClosed)
                #expect(ledger.releases(tag: tag) == icChainReleases, "round \(round)")
                // Closed means closed: nothing is made or read again, and a later close is refused.
                icExpectCodes(
                    await #expect(throws: ServiceGraphError.self) { try await scope.resolve(ICFirstKey.self) },
                    [.scopeClosed]
                )
                icExpectCodes(
                    #expect(throws: ServiceGraphError.self) { try scope.resolveSynchronously(ICSeedKey.self) },
                    [.scopeClosed]
                )
                icExpectCodes(await #expect(throws: ServiceGraphError.self) { try await scope.close() }, [.scopeClosed])
                #expect(ledger.aliveCount(tag: tag) == 0)
            }
        }
        try await graph.shutdown()
        #expect(ledger.count(of: "willRemove root") == 1)
        icExpectClean(ledger)
    }

    // MARK: A release still running

    /// The winning close's release is held, mid-way, on a thread of its own: meanwhile the scope is
    /// closed to everyone (resolves, its seed, its provider and lazy handle, another close), the graph
    /// still opens and idle-closes other scopes, and a shutdown closes the other open scope but runs
    /// no singleton `willRemove` and does not return; once let go, the release ends newest first,
    /// and only then the singleton is removed.
    @Test func whileAnIdleCloseIsStillReleasingTheScopeIsClosedToAllAndTheShutdownWaitsForIt() async throws {
        let ledger = ICLedger()
        let letGo = DispatchSemaphore(value: 0)
        let graph = try await icBuilder(ledger, letGo: letGo).build()
        let executor = ICQueueExecutor()
        try await withDeadline {
            let older = try icOpen(graph, "b", ledger)
            _ = try await older.resolve(ICProbeKey.self)
            let scope = try icOpen(graph, "a", ledger)
            _ = try await scope.resolve(ICProbeKey.self)
            _ = try await scope.resolve(ICBlockerKey.self)
            let handles = try await scope.resolve(ICHandlesKey.self)

            let closing = Task(executorPreference: executor) { try await scope.close() }
            await icEventually { ledger.events.contains("release a/blocker started") }
            try #require(ledger.events.contains("release a/blocker started"))
            // Nothing else released yet: the rest waits, newest first, behind the blocker.
            #expect(ledger.aliveCount(tag: "a") == 5)

            #expect(scope.isClosed)
            let second = Task { await icAttempt { try await scope.close() } }
            icExpectCodes(
                await #expect(throws: ServiceGraphError.self) { try await scope.resolve(ICFirstKey.self) },
                [.scopeClosed]
            )
            icExpectCodes(
                await #expect(throws: ServiceGraphError.self) { try await scope.resolve(ICProbeKey.self) },
                [.scopeClosed]
            )
            icExpectCodes(
                #expect(throws: ServiceGraphError.self) { try scope.resolveSynchronously(ICSeedKey.self) },
                [.scopeClosed]
            )
            icExpectCodes(await #expect(throws: ServiceGraphError.self) { try await handles.probe() }, [.scopeClosed])
            icExpectCodes(
                await #expect(throws: ServiceGraphError.self) { try await handles.seed.value },
                [.scopeClosed]
            )

            // The graph carries on meanwhile.
            let other = try icOpen(graph, "c", ledger)
            _ = try await other.resolve(ICProbeKey.self)
            try await other.close()
            #expect(ledger.aliveCount(tag: "c") == 0)

            let shutdownReturned = Tally()
            let shutdown = Task {
                try await graph.shutdown()
                shutdownReturned.increment()
            }
            // The shutdown closes the older scope, then must wait for the release still running.
            await icEventually { ledger.aliveCount(tag: "b") == 0 }
            #expect(older.isClosed)
            #expect(ledger.aliveCount(tag: "b") == 0)
            await icGiveAChance { ledger.count(of: "willRemove root") > 0 || shutdownReturned.count > 0 }
            #expect(ledger.count(of: "willRemove root") == 0, "the singleton was removed during a scope's release")
            #expect(shutdownReturned.count == 0, "the shutdown returned during a scope's release")
            icExpectCodes(#expect(throws: ServiceGraphError.self) { try icOpen(graph, "d", ledger) }, [.graphShutDown])

            letGo.signal()
            try await closing.value
            #expect(await second.value == false, "a second close is refused")
            try await shutdown.value
        }
        #expect(ledger.releases(tag: "a") == ["blocker"] + icChainReleases)
        let events = ledger.events
        let lastRelease = try #require(events.lastIndex { $0.hasPrefix("deinit a") })
        let removal = try #require(events.firstIndex(of: "willRemove root"))
        #expect(lastRelease < removal)
        // "d", refused, was released by the caller.
        icExpectClean(ledger)
    }

    /// From inside the release itself (a deinit run by the closing call): the scope says it is closed,
    /// refuses its seed (still in its cell) and a new close, while the graph opens, uses and drops
    /// another scope; the scopeClosed event is sent once.
    @Test func codeRunByTheReleaseFindsTheScopeClosedAndTheGraphOpen() async throws {
        let ledger = ICLedger()
        let closedEvents = Tally()
        var builder = icBuilder(ledger)
        builder.eventKinds = [.scopeClosed]
        builder.eventHandler = { event in if event.kind == .scopeClosed { closedEvents.increment() } }
        let graph = try await builder.build()
        let target = Captured<ServiceScope>()
        let seen = Locked<[String]>([])
        let lateClose = Locked<Task<Bool, Never>?>(nil)
        ledger.observeReleases { name in
            guard name == "r/third", let scope = try? target.value else { return }
            seen.withLock { $0.append("isClosed \(scope.isClosed)") }
            do {
                _ = try scope.resolveSynchronously(ICSeedKey.self)
                seen.withLock { $0.append("seed read") }
            } catch {
                seen.withLock { $0.append("seed refused, scopeClosed \(icIs(error, [.scopeClosed]))") }
            }
            do {
                // Dropped at once, unused: released in place, without a close.
                _ = try icOpen(graph, "r-inner", ledger)
                seen.withLock { $0.append("opened another") }
            } catch {
                seen.withLock { $0.append("open refused: \(error)") }
            }
            lateClose.withLock { $0 = Task { await icAttempt { try await scope.close() } } }
        }
        try await withDeadline {
            let scope = try icOpen(graph, "r", ledger)
            target.fill(scope)
            _ = try await scope.resolve(ICProbeKey.self)
            #expect(!scope.isClosed)
            try await scope.close()
            #expect(scope.isClosed)
            #expect(ledger.aliveCount(tag: "r") == 0)
            #expect(ledger.aliveCount(tag: "r-inner") == 0)
            let late = try #require(lateClose.withLock { $0 })
            #expect(await late.value == false, "a close from inside the release is refused")
            target.fill(nil)
        }
        #expect(seen.withLock { $0 } == ["isClosed true", "seed refused, scopeClosed true", "opened another"])
        #expect(ledger.releases(tag: "r") == icChainReleases)
        #expect(closedEvents.count == 1, "one scopeClosed for the one scope closed (a dropped one sends none)")
        ledger.observeReleases(nil)
        try await graph.shutdown()
        icExpectClean(ledger)
    }

    // MARK: Close and shutdown

    /// Round after round, on a fresh graph, three idle scopes are closed by three tasks while a fourth
    /// shuts the graph down, all released together: each close succeeds or is refused (the shutdown
    /// closed it first); each scope's instances are released once, newest first; the singleton's
    /// `willRemove` finds no scoped instance alive; when the shutdown returns, none is.
    @Test func idleClosesAndAShutdownStartedTogetherNeverRemoveTheSingletonBeforeAScopedInstance() async throws {
        try await withDeadline {
            for round in 0..<(80 / icScale) {
                let ledger = ICLedger()
                let graph = try await icBuilder(ledger).build()
                let tags = (0..<3).map { "x\(round).\($0)" }
                var scopes: [ServiceScope] = []
                for (index, tag) in tags.enumerated() {
                    let scope = try icOpen(graph, tag, ledger, slow: index != 1)
                    _ = try await scope.resolve(ICProbeKey.self)
                    scopes.append(scope)
                }
                let barrier = Barrier(count: scopes.count + 1)
                let aliveWhenShutdownReturned = Locked<[String]?>(nil)
                let closed = Tally()
                try await withThrowingTaskGroup(of: Void.self) { [scopes] group in
                    for scope in scopes {
                        group.addTask {
                            await barrier.arriveAndWait()
                            if await icAttempt({ try await scope.close() }) { closed.increment() }
                        }
                    }
                    group.addTask {
                        await barrier.arriveAndWait()
                        for _ in 0..<(round % 4) { await Task.yield() }
                        try await graph.shutdown()
                        aliveWhenShutdownReturned.withLock { $0 = ledger.aliveNames }
                    }
                    try await group.waitForAll()
                }
                #expect(aliveWhenShutdownReturned.withLock { $0 } == [], "round \(round): shutdown returned first")
                #expect(scopes.allSatisfy { $0.isClosed })
                #expect(closed.count <= scopes.count)
                for tag in tags { #expect(ledger.releases(tag: tag) == icChainReleases, "round \(round), \(tag)") }
                #expect(ledger.count(of: "willRemove root") == 1)
                icExpectClean(ledger)
            }
        }
    }

    /// Thousands of scopes opened, resolved and closed idle from eight tasks (some dropped, some left
    /// for later) while the graph shuts down part-way: every close that succeeds has released its
    /// scope when it returns; every other is refused with scopeClosed; opening is refused once the
    /// shutdown started; the singleton's `willRemove` finds no scoped instance alive; when the shutdown
    /// returns none is; each instance is released once, each scope's newest first.
    @Test func thousandsOfIdleClosesFromManyTasksWithAShutdownPartWayReleaseEverythingBeforeTheSingleton()
        async throws
    {
        let ledger = ICLedger()
        let graph = try await icBuilder(ledger).build()
        let (tasks, perTask) = (8, 400 / icScale)
        let total = tasks * perTask
        let opened = Tally()
        let closed = Tally()
        let refusedCloses = Tally()
        let refusedOpens = Tally()
        let lateReleases = Locked<[String]>([])
        let aliveWhenShutdownReturned = Locked<[String]?>(nil)
        // The shutdown starts part-way, from inside the release of a scope its task is closing (on that
        // task's thread, which then goes on releasing for a while): it must wait for that release too.
        let trigger = "t\(perTask * 2 / 5)/third"
        let shutdown = Locked<Task<Void, any Error>?>(nil)
        ledger.observeReleases { name in
            guard name == trigger else { return }
            shutdown.withLock { started in
                started = Task {
                    try await graph.shutdown()
                    aliveWhenShutdownReturned.withLock { $0 = ledger.aliveScopedNames }
                }
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        try await withDeadline {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        var kept: [ServiceScope] = []
                        for index in 0..<perTask {
                            let serial = task * perTask + index
                            let tag = "t\(serial)"
                            // A few left open for later (closed by the shutdown, or refused after it), a
                            // few dropped, the rest closed by the task.
                            let (keep, drop) = (index % 48 == 4, index % 12 == 5)
                            // The closes' releases mostly take a little while, a few a long one: a
                            // shutdown that comes meanwhile is likely to find one still releasing. The
                            // shutdown's own closes are quick, so that it comes to its wait at once.
                            let delay =
                                keep || drop || serial.isMultiple(of: 8)
                                ? 0 : serial.isMultiple(of: 40) ? 0.005 : 0.0002
                            let scope: ServiceScope
                            do {
                                scope = try icOpen(graph, tag, ledger, releaseDelay: delay)
                            } catch {
                                icExpectCodes(error, [.graphShutDown])
                                refusedOpens.increment()
                                break
                            }
                            opened.increment()
                            _ = await icAttempt { _ = try await scope.resolve(ICProbeKey.self) }
                            if keep {
                                kept.append(scope)
                            } else if !drop {
                                if await icAttempt({ try await scope.close() }) {
                                    closed.increment()
                                    if ledger.aliveCount(tag: tag) != 0 { lateReleases.withLock { $0.append(tag) } }
                                } else {
                                    refusedCloses.increment()
                                }
                            }
                        }
                        for scope in kept {
                            if await icAttempt({ try await scope.close() }) {
                                closed.increment()
                            } else {
                                refusedCloses.increment()
                            }
                        }
                    }
                }
                group.addTask {
                    // Bounded by the deadline.
                    await icEventually { shutdown.withLock { $0 } != nil }
                    try await #require(shutdown.withLock { $0 }).value
                }
                try await group.waitForAll()
            }
        }
        ledger.observeReleases(nil)
        #expect(
            lateReleases.withLock { $0 }.isEmpty,
            "closes returned before releasing: \(lateReleases.withLock { $0.prefix(6) })"
        )
        #expect(aliveWhenShutdownReturned.withLock { $0 } == [], "alive when the shutdown returned")
        #expect(opened.count > perTask * 2 / 5 && opened.count + refusedOpens.count <= total)
        #expect(refusedOpens.count > 0, "the shutdown came part-way")
        #expect(closed.count > 0)
        #expect(ledger.count(of: "willRemove root") == 1)
        icExpectCodes(#expect(throws: ServiceGraphError.self) { try icOpen(graph, "after", ledger) }, [.graphShutDown])
        for serial in stride(from: 0, to: total, by: 7) {
            let releases = ledger.releases(tag: "t\(serial)")
            #expect(releases == icChainReleases.filter(releases.contains), "t\(serial): \(releases)")
        }
        icExpectClean(ledger)
    }

    // MARK: Close and resolves

    /// Tasks resolve one scope directly, through its provider and its lazy seed, while three others
    /// close it: each resolve gets live instances or scopeClosed, never one released under it; one
    /// close succeeds; no instance is made twice; each is released once (the seed when the last lazy
    /// reader lets it go).
    @Test func resolvesDirectAndThroughHandlesRacingIdleClosesGetLiveInstancesOrScopeClosed() async throws {
        let ledger = ICLedger()
        let graph = try await icBuilder(ledger).build()
        try await withDeadline {
            for round in 0..<(150 / icScale) {
                let tag = "v\(round)"
                let closes = try await Self.raceResolvesAndCloses(graph, ledger, tag: tag, round: round)
                #expect(closes == 1, "round \(round)")
                let releases = ledger.releases(tag: tag)
                #expect(releases == icChainReleases.filter(releases.contains), "round \(round): \(releases)")
                // The handles gone too (a lazy handle keeps what it read).
                #expect(ledger.aliveCount(tag: tag) == 0, "round \(round)")
            }
        }
        try await graph.shutdown()
        icExpectClean(ledger)
    }

    /// One round of ``resolvesDirectAndThroughHandlesRacingIdleClosesGetLiveInstancesOrScopeClosed()``:
    /// the number of closes that succeeded.
    private static func raceResolvesAndCloses(
        _ graph: ServiceGraph,
        _ ledger: ICLedger,
        tag: String,
        round: Int
    ) async throws -> Int {
        let scope = try icOpen(graph, tag, ledger, slow: round.isMultiple(of: 2))
        let handles = try await scope.resolve(ICHandlesKey.self)
        // Half the rounds start with nothing made: the resolves make the chain as the close comes.
        if round.isMultiple(of: 2) { _ = try await scope.resolve(ICProbeKey.self) }
        let closes = Tally()
        await withTaskGroup(of: Void.self) { group in
            for reader in 0..<4 {
                group.addTask {
                    for attempt in 0..<6 {
                        _ = await icAttempt {
                            switch (reader + attempt) % 4 {
                            case 0:
                                let count = try await scope.resolve(ICProbeKey.self)
                                #expect(count == "\(tag)/third".count)
                            case 1:
                                let count = try await handles.probe()
                                #expect(count == "\(tag)/third".count)
                            case 2:
                                let name = try await handles.seed.value.name
                                #expect(name == tag)
                            default:
                                let name = try scope.resolveSynchronously(ICSeedKey.self).name
                                #expect(name == tag)
                            }
                        }
                    }
                }
            }
            for closer in 0..<3 {
                group.addTask {
                    for _ in 0..<((round + closer) % 5) { await Task.yield() }
                    if await icAttempt({ try await scope.close() }) { closes.increment() }
                }
            }
        }
        // Whatever the lazy handle did not read is released by the close that succeeded.
        #expect(ledger.aliveScopedNames.allSatisfy { !$0.hasPrefix("\(tag)/") }, "\(tag)")
        return closes.count
    }

    // MARK: Close and the last handle

    /// The closing task holds the last reference to the scope while the test drops its own and a
    /// third task keeps resolving through the scope's provider: the close always succeeds (nobody
    /// else closes it), its handle's end after it releases nothing again, and every instance is
    /// released once.
    @Test func anIdleCloseWhoseTaskHoldsTheLastHandleClosesOnceAndItsEndReleasesNothingTwice() async throws {
        let ledger = ICLedger()
        let closedEvents = Tally()
        let droppedEvents = Tally()
        var builder = icBuilder(ledger)
        builder.eventKinds = [.scopeClosed, .scopeDropped]
        builder.eventHandler = { event in
            if event.kind == .scopeClosed { closedEvents.increment() }
            if event.kind == .scopeDropped { droppedEvents.increment() }
        }
        let graph = try await builder.build()
        let rounds = 200 / icScale
        let closes = Tally()
        try await withDeadline {
            for round in 0..<rounds {
                let tag = "h\(round)"
                // No local of the test holds the scope: the holder, then the closing task.
                let holder = Locked<ServiceScope?>(try icOpen(graph, tag, ledger))
                _ = try await holder.withLock { $0! }.resolve(ICProbeKey.self)
                let handles = try await holder.withLock { $0! }.resolve(ICHandlesKey.self)
                let barrier = Barrier(count: 3)
                let closer = holder.withLock { held in
                    let scope = held!
                    return Task.detached {
                        await barrier.arriveAndWait()
                        if await icAttempt({ try await scope.close() }) { closes.increment() }
                    }
                }
                let dropper = Task.detached {
                    await barrier.arriveAndWait()
                    holder.withLock { $0 = nil }
                }
                let reader = Task.detached {
                    await barrier.arriveAndWait()
                    for _ in 0..<8 {
                        _ = await icAttempt {
                            let count = try await handles.probe()
                            #expect(count == "\(tag)/third".count)
                        }
                    }
                }
                await closer.value
                await dropper.value
                await reader.value
                #expect(ledger.aliveCount(tag: tag) == 0, "round \(round)")
                #expect(ledger.releases(tag: tag) == icChainReleases, "round \(round)")
            }
        }
        #expect(closes.count == rounds, "every close succeeds")
        #expect(closedEvents.count == rounds)
        #expect(droppedEvents.count == 0)
        try await graph.shutdown()
        icExpectClean(ledger)
    }

    // MARK: Nested scopes

    /// A session whose requests (`ScopeKind("…", inside:)`, opened with `session.makeScope`) are opened,
    /// resolved, idle-closed or dropped by six tasks while the session is closed, or the graph shut
    /// down, part-way: the session's close succeeds; each request is opened or refused, closed or
    /// refused; when the close (or the shutdown) returns, every instance of the session and of its
    /// requests is released, and no cart before a checkout made from it.
    @Test(arguments: ["close", "shutdown"])
    func requestsOpenedAndClosedIdleWhileTheirSessionEndsAreAllReleasedBeforeTheEndReturns(
        ending: String
    )
        async throws
    {
        try await withDeadline {
            for round in 0..<(24 / icScale) {
                let ledger = ICLedger()
                let graph = try await icBuilder(ledger, nested: true).build()
                let user = "u\(round)"
                let session = try graph.makeScope(.icSession, seeding: ScopeSeed(ICUserKey.self, ICNode(user, ledger)))
                _ = try await session.resolve(ICCartProbeKey.self)
                let opened = Tally()
                let aliveAtEnd = Locked<[String]?>(nil)
                // The end starts part-way, from inside the release of a request its task is closing (on
                // that task's thread, which goes on releasing the request for a while): the end must
                // wait for that release too.
                let triggerTask = round % 6
                let triggerIndex = 3 + (4 - (triggerTask + 3) % 3) % 3
                let trigger = "\(user).\(triggerTask).\(triggerIndex)/checkout"
                let end = Locked<Task<Void, any Error>?>(nil)
                ledger.observeReleases { name in
                    guard name == trigger else { return }
                    end.withLock { started in
                        started = Task {
                            if ending == "close" {
                                try await session.close()
                            } else {
                                try await graph.shutdown()
                            }
                            // Seeds on their way to a `makeScope` the end refuses may still be alive here.
                            aliveAtEnd.withLock {
                                $0 = ledger.aliveScopedNames + (ledger.aliveCount(tag: user) == 0 ? [] : [user])
                            }
                        }
                    }
                    Thread.sleep(forTimeInterval: 0.01)
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<6 {
                        group.addTask {
                            for index in 0..<12 {
                                let request: ServiceScope
                                do {
                                    // The ticket is the scope's alone (no local holds it).
                                    request = try session.makeScope(
                                        .icRequest,
                                        seeding: ScopeSeed(
                                            ICTicketKey.self,
                                            ICNode(
                                                "\(user).\(task).\(index)",
                                                ledger,
                                                releaseDelay: index.isMultiple(of: 4) ? 0.0002 : 0
                                            )
                                        )
                                    )
                                } catch {
                                    // The session closed; or, in a shutdown, the graph refuses first.
                                    let refused =
                                        icIs(error, [.scopeClosed])
                                        || (ending == "shutdown" && icIs(error, [.graphShutDown]))
                                    #expect(refused, "\(error)")
                                    return
                                }
                                opened.increment()
                                _ = await icAttempt { _ = try await request.resolve(ICCheckoutProbeKey.self) }
                                if (task + index) % 3 != 0 {
                                    _ = await icAttempt { try await request.close() }
                                    #expect(request.isClosed)
                                }
                            }
                        }
                    }
                    group.addTask {
                        // Bounded by the deadline.
                        await icEventually { end.withLock { $0 } != nil }
                        try await #require(end.withLock { $0 }).value
                    }
                    try await group.waitForAll()
                }
                ledger.observeReleases(nil)
                #expect(opened.count > triggerIndex)
                #expect(session.isClosed)
                #expect(aliveAtEnd.withLock { $0 } == [], "round \(round): alive when the \(ending) returned")
                let late = #expect(throws: ServiceGraphError.self) {
                    try session.makeScope(.icRequest, seeding: ScopeSeed(ICTicketKey.self, ICNode("late", ledger)))
                }
                icExpectCodes(late, [.scopeClosed])
                if ending == "close" { try await graph.shutdown() }
                #expect(ledger.count(of: "willRemove root") == 1)
                icExpectClean(ledger)
            }
        }
    }

    /// Children opened with `scope.makeScope` while their parent idle-closes from other tasks: the
    /// parent's idle close never sees a child (a child opened first makes it wait, a child opened after
    /// is refused), and a parent's close that waited for children returns after them.
    @Test func openingAChildRacingItsParentsIdleCloseEitherRefusesTheChildOrClosesItFirst() async throws {
        let ledger = ICLedger()
        let graph = try await icBuilder(ledger, nested: true).build()
        try await withDeadline {
            for round in 0..<(200 / icScale) {
                let user = "p\(round)"
                let session = try graph.makeScope(.icSession, seeding: ScopeSeed(ICUserKey.self, ICNode(user, ledger)))
                _ = try await session.resolve(ICCartProbeKey.self)
                let barrier = Barrier(count: 3)
                let childOutcome = Locked<String>("")
                let parentClosed = Tally()
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        await barrier.arriveAndWait()
                        do {
                            let child = try session.makeScope(
                                .icRequest,
                                seeding: ScopeSeed(ICTicketKey.self, ICNode("\(user).c", ledger))
                            )
                            let resolved = await icAttempt { _ = try await child.resolve(ICCheckoutProbeKey.self) }
                            let closed = await icAttempt { try await child.close() }
                            childOutcome.withLock { $0 = "opened resolved \(resolved) closed \(closed)" }
                        } catch {
                            icExpectCodes(error, [.scopeClosed])
                            childOutcome.withLock { $0 = "refused" }
                        }
                    }
                    for _ in 0..<2 {
                        group.addTask {
                            await barrier.arriveAndWait()
                            if await icAttempt({ try await session.close() }) {
                                parentClosed.increment()
                                // Returned: the session and every request of it are released.
                                #expect(ledger.aliveCount(tag: user) == 0, "round \(round): a close returned early")
                                #expect(!ledger.isAlive("\(user).c/checkout"), "round \(round): the child outlived it")
                            }
                        }
                    }
                }
                #expect(parentClosed.count == 1, "round \(round)")
                let outcome = childOutcome.withLock { $0 }
                #expect(
                    [
                        "refused", "opened resolved true closed true", "opened resolved false closed false",
                        "opened resolved true closed false",
                    ].contains(outcome),
                    "round \(round): \(outcome)"
                )
                #expect(ledger.aliveCount(tag: "\(user).c") == 0)
            }
        }
        try await graph.shutdown()
        icExpectClean(ledger)
    }

    // MARK: Seeds

    enum SeedMode: String, CaseIterable, Sendable {
        case plainCallers, hookedCallers, plainOwned, hookedOwned
        var isOwned: Bool { self == .plainOwned || self == .hookedOwned }
        var hasHooks: Bool { self == .hookedCallers || self == .hookedOwned }
    }

    /// A scope seeded each way (the caller's plain value, the caller's value with hooks, owned without
    /// hooks, owned with hooks), closed by six tasks at once: one close succeeds; the seed gets a
    /// `willRemove` only when owned and hooked, once, and no `didAdd`; it is released after the scoped
    /// instances; a caller's hooked seed may be owned by a new scope as soon as the winning close has
    /// returned (and not before), and that scope's close ends it once.
    @Test(arguments: SeedMode.allCases)
    func seedsOwnedOrNotHookedOrNotEndOnceWhenManyTasksCloseTheirScope(mode: SeedMode) async throws {
        let ledger = ICLedger()
        let graph = try await icBuilder(ledger).build()
        try await withDeadline {
            for round in 0..<(60 / icScale) {
                let tag = "\(mode.rawValue)\(round)"
                var seed: ICNode? = mode.hasHooks ? ICHookedNode(tag, ledger) : ICNode(tag, ledger)
                let scope = try graph.makeScope(seeding: ScopeSeed(ICSeedKey.self, seed!, ownedByScope: mode.isOwned))
                // Only the caller's hooked seed is kept by the caller, to be given on.
                if mode != .hookedCallers { seed = nil }
                _ = try await scope.resolve(ICProbeKey.self)
                if mode == .hookedCallers, let seed {
                    let refused = #expect(throws: ServiceGraphError.self) {
                        try graph.makeScope(seeding: ScopeSeed(ICSeedKey.self, seed, ownedByScope: true))
                    }
                    icExpectCodes(refused, [.ownedSeedInUse])
                }
                let barrier = Barrier(count: 6)
                let closes = Tally()
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<6 {
                        group.addTask {
                            await barrier.arriveAndWait()
                            if await icAttempt({ try await scope.close() }) { closes.increment() }
                        }
                    }
                }
                #expect(closes.count == 1, "round \(round)")
                #expect(ledger.count(of: "willRemove \(tag)") == (mode == .hookedOwned ? 1 : 0), "round \(round)")
                #expect(ledger.count(of: "didAdd \(tag)") == 0)
                if mode == .hookedCallers, let kept = seed {
                    #expect(ledger.releases(tag: tag) == ["third", "second", "first"])
                    // The winning close gave the claim back before it returned.
                    let owner = try graph.makeScope(seeding: ScopeSeed(ICSeedKey.self, kept, ownedByScope: true))
                    seed = nil
                    #expect(ledger.count(of: "willRemove \(tag)") == 0)
                    try await owner.close()
                    #expect(ledger.count(of: "willRemove \(tag)") == 1)
                } else {
                    #expect(ledger.releases(tag: tag) == icChainReleases, "round \(round)")
                }
                #expect(ledger.aliveCount(tag: tag) == 0, "round \(round)")
                if mode == .hookedOwned {
                    let events = ledger.events
                    let removal = try #require(events.firstIndex(of: "willRemove \(tag)"))
                    let firstRelease = try #require(events.firstIndex(of: "deinit \(tag)/third"))
                    #expect(removal < firstRelease, "an owned seed's willRemove runs before the scope releases")
                }
            }
        }
        try await graph.shutdown()
        icExpectClean(ledger)
    }

    // MARK: Cancellation

    /// Closes from a task cancelled before it starts, and one cancelled part-way through a loop of
    /// scopes: each idle close still succeeds and has released its scope when it returns.
    @Test func cancelledTasksStillCloseIdleScopesAndReleaseThemBeforeReturning() async throws {
        let ledger = ICLedger()
        let graph = try await icBuilder(ledger).build()
        let gate = Gate()
        let failures = Locked<[String]>([])
        let progress = Tally()
        try await withDeadline {
            let loop = Task {
                for index in 0..<(400 / icScale) {
                    if index == 20 { await gate.wait() }
                    progress.increment()
                    let tag = "k\(index)"
                    do {
                        let scope = try icOpen(graph, tag, ledger)
                        _ = try await scope.resolve(ICProbeKey.self)
                        try await scope.close()
                        if ledger.aliveCount(tag: tag) != 0 { failures.withLock { $0.append("\(tag) not released") } }
                        if ledger.releases(tag: tag) != icChainReleases {
                            failures.withLock { $0.append("\(tag) released as \(ledger.releases(tag: tag))") }
                        }
                    } catch {
                        failures.withLock { $0.append("\(tag): \(error)") }
                    }
                }
                return Task.isCancelled
            }
            // Cancelled part-way: the loop waits at its twenty-first scope.
            await icEventually { progress.count == 20 }
            #expect(progress.count == 20)
            loop.cancel()
            await gate.open()
            #expect(await loop.value, "the loop ran cancelled")

            let scope = try icOpen(graph, "pre", ledger)
            _ = try await scope.resolve(ICProbeKey.self)
            let cancelled = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                try await scope.close()
                return Task.isCancelled
            }
            #expect(try await cancelled.value)
            #expect(scope.isClosed)
            #expect(ledger.releases(tag: "pre") == icChainReleases)
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(6) })")
        try await graph.shutdown()
        icExpectClean(ledger)
    }

    /// A close that cannot be idle (a resolve is in flight, its factory held at a gate) is cancelled
    /// while it waits, and a shutdown starts too: nothing is released while the resolve is in flight;
    /// once the factory finishes, the resolve gets live instances, the close succeeds, the release
    /// is newest first, and the singleton goes last.
    @Test func aCloseCancelledWhileItWaitsForAResolveInFlightStillWaitsAndReleasesOnce() async throws {
        let ledger = ICLedger()
        let gate = Gate()
        let graph = try await icBuilder(ledger, gate: gate).build()
        try await withDeadline {
            let scope = try icOpen(graph, "w", ledger)
            _ = try await scope.resolve(ICProbeKey.self)
            let resolve = Task {
                await icAttempt {
                    let one = try await scope.resolve(ICGatedProbeKey.self)
                    #expect(one == 1)
                }
            }
            await icEventually { ledger.events.contains("gated factory started in w") }
            let closing = Task { await icAttempt { try await scope.close() } }
            await icEventually { scope.isClosed }
            #expect(scope.isClosed)
            closing.cancel()
            let shutdown = Task { try await graph.shutdown() }
            await icGiveAChance { ledger.aliveCount(tag: "w") < 4 }
            #expect(ledger.aliveCount(tag: "w") == 4, "released under a resolve in flight")
            #expect(ledger.count(of: "willRemove root") == 0)
            await gate.open()
            #expect(await resolve.value, "the resolve in flight before the close gets its instance")
            #expect(await closing.value, "the cancelled close still closes")
            try await shutdown.value
        }
        #expect(ledger.releases(tag: "w") == ["gated"] + icChainReleases)
        #expect(ledger.events.last == "willRemove root")
        icExpectClean(ledger)
    }

    /// A session's close that must wait for a request whose resolve is in flight is cancelled while it
    /// waits: the request is closed by it (its own close then refused), the session's close succeeds
    /// once the resolve returns, and the request's instances go before the session's.
    @Test func aSessionCloseCancelledWhileItWaitsForItsRequestStillClosesBothInOrder() async throws {
        let ledger = ICLedger()
        let gate = Gate()
        var builder = icBuilder(ledger, nested: true)
        builder.inScope(.icRequest) { request in
            request.provide(ICGatedKey.self, lifetime: .scoped, dependsOn: ICCheckoutKey.self) { checkout async in
                ledger.note("gated factory started in \(checkout.tag)")
                await gate.wait()
                return ICNode("gated", from: checkout, ledger)
            }
        }
        builder.provide(ICGatedProbeKey.self, lifetime: .transient, dependsOn: ICGatedKey.self) { gated in
            ledger.check(gated)
            return 1
        }
        let graph = try await builder.build()
        try await withDeadline {
            let session = try graph.makeScope(.icSession, seeding: ScopeSeed(ICUserKey.self, ICNode("s", ledger)))
            _ = try await session.resolve(ICCartProbeKey.self)
            let request = try session.makeScope(.icRequest, seeding: ScopeSeed(ICTicketKey.self, ICNode("q", ledger)))
            let resolve = Task {
                await icAttempt {
                    let one = try await request.resolve(ICGatedProbeKey.self)
                    #expect(one == 1)
                }
            }
            await icEventually { ledger.events.contains("gated factory started in q") }
            let closing = Task { try await session.close() }
            await icEventually { session.isClosed && request.isClosed }
            #expect(session.isClosed && request.isClosed)
            closing.cancel()
            await icGiveAChance { ledger.aliveCount(tag: "s") < 2 || ledger.aliveCount(tag: "q") < 2 }
            #expect(ledger.aliveCount(tag: "s") == 2, "the session released while its request was in use")
            #expect(ledger.aliveCount(tag: "q") == 2, "the request released under a resolve in flight")
            await gate.open()
            #expect(await resolve.value)
            try await closing.value
            #expect(ledger.aliveCount(tag: "s") == 0 && ledger.aliveCount(tag: "q") == 0)
            icExpectCodes(await #expect(throws: ServiceGraphError.self) { try await request.close() }, [.scopeClosed])
        }
        let events = ledger.events
        let lastRequestRelease = try #require(events.lastIndex { $0.hasPrefix("deinit q") })
        let firstSessionRelease = try #require(events.firstIndex { $0.hasPrefix("deinit s") })
        #expect(lastRequestRelease < firstSessionRelease)
        #expect(ledger.releases(tag: "q") == ["gated", "checkout", "seed"])
        try await graph.shutdown()
        icExpectClean(ledger)
    }
}
