import ServiceGraph
import ServiceGraphTestSupport
import Testing

// Hostile tests of the scope handle: a `ServiceScope` is a handle on a body the graph holds while the
// scope is open. Dropping the last handle without `close()` releases the scope's instances (hooks in
// the background, which the graph's shutdown waits for), exactly once, whatever else still reaches the
// body: providers, lazy handles, child scopes, the graph's shutdown.

extension ScopeKind {
    fileprivate static let shOuter = ScopeKind("sh-outer")
    fileprivate static let shInner = ScopeKind("sh-inner", inside: .shOuter)
    fileprivate static let shSeeded = ScopeKind("sh-seeded")
}

/// Everything one test's services report to.
private final class SHFixture: Sendable {
    let log = EventLog()
    let live = LiveCounter()
    let serial = Tally()
    let gate = Gate()
    let gated: Bool
    let hookedBase: Bool
    /// (dependent, dependency) instance names: the dependent's `willRemove` must come first.
    let edges = Locked<[(String, String)]>([])
    let events = Locked<[(ServiceGraphEvent.Kind, String)]>([])
    /// The only handle of a scope, for the factory that lets it go.
    let captured = Captured<ServiceScope>()

    init(gated: Bool = false, hookedBase: Bool = true) {
        self.gated = gated
        self.hookedBase = hookedBase
    }

    func node(_ prefix: String, after dependencies: SHNode...) -> SHHookedNode {
        let node = SHHookedNode("\(prefix)#\(serial.increment())", fixture: self)
        edges.withLock { edges in
            for dependency in dependencies { edges.append((node.name, dependency.name)) }
        }
        return node
    }

    func eventCount(_ kind: ServiceGraphEvent.Kind) -> Int {
        events.withLock { $0.filter { $0.0 == kind }.count }
    }
}

/// A service with a name unique to the instance, which counts itself while alive (the singleton base
/// does not: a graph that is shut down but still referenced may keep its singletons).
private class SHNode: @unchecked Sendable {
    let name: String
    let log: EventLog
    private let token: LiveInstance?

    init(_ name: String, fixture: SHFixture) {
        self.name = name
        self.log = fixture.log
        self.token = name.hasSuffix("base") ? nil : LiveInstance(fixture.serial.count, in: fixture.live)
        log.record("init \(name)")
    }
}

/// A service that also logs its hooks.
private final class SHHookedNode: SHNode, LifecycleHooks, @unchecked Sendable {
    func didAdd() async throws { log.record("didAdd \(name)") }
    func willRemove() async throws { log.record("willRemove \(name)") }
}

/// What a scope hands out to reach it without its handle.
private struct SHMaker: Sendable {
    let top: Provider<SHTopKey>
    let lazyTop: Lazy<SHTopKey>
    let lazySide: Lazy<SHSideKey>
    let label: Provider<SHLabelKey>
    let suicide: Provider<SHSuicideKey>
}

private struct SHInnerMaker: Sendable {
    let request: Provider<SHRequestKey>
    let lazyLate: Lazy<SHLateKey>
}

private struct SHCartMaker: Sendable {
    let cart: Provider<SHCartKey>
}

private enum SHBaseKey: ServiceKey { typealias Value = SHNode }
private enum SHMidKey: ServiceKey { typealias Value = SHNode }
private enum SHTopKey: ServiceKey { typealias Value = SHNode }
private enum SHSideKey: ServiceKey { typealias Value = SHNode }
private enum SHLabelKey: ServiceKey { typealias Value = String }
private enum SHSuicideKey: ServiceKey { typealias Value = SHNode }
private enum SHMakerKey: ServiceKey { typealias Value = SHMaker }
private enum SHSessionKey: ServiceKey { typealias Value = SHNode }
private enum SHLateKey: ServiceKey { typealias Value = SHNode }
private enum SHRequestKey: ServiceKey { typealias Value = SHNode }
private enum SHInnerMakerKey: ServiceKey { typealias Value = SHInnerMaker }
private enum SHConnectionKey: ServiceKey { typealias Value = SHNode }
private enum SHCartKey: ServiceKey { typealias Value = SHNode }
private enum SHCartMakerKey: ServiceKey { typealias Value = SHCartMaker }
private enum SHReaperKey: ServiceKey { typealias Value = SHReaper }

/// A scoped service whose `willRemove` reaches back into its own scope, which is closing or dropped.
private final class SHReaper: LifecycleHooks, Sendable {
    let node: SHHookedNode
    let side: Provider<SHSideKey>
    let lazySide: Lazy<SHSideKey>

    init(_ node: SHHookedNode, side: Provider<SHSideKey>, lazySide: Lazy<SHSideKey>) {
        self.node = node
        self.side = side
        self.lazySide = lazySide
    }

    func didAdd() async throws { try await node.didAdd() }

    func willRemove() async throws {
        let viaProvider = await shOutcome { try await self.side() }
        let viaLazy = await shOutcome { try await self.lazySide.value }
        node.log.record("reaper saw \(viaProvider) \(viaLazy)")
        try await node.willRemove()
    }
}

private func shBuilder(_ fixture: SHFixture) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.eventHandler = { event in fixture.events.withLock { $0.append((event.kind, event.key ?? "")) } }
    builder.provide(SHBaseKey.self) {
        fixture.hookedBase ? SHHookedNode("base", fixture: fixture) : SHNode("plain base", fixture: fixture)
    }
    // Async, and held at the gate when the fixture is gated.
    builder.provide(SHMidKey.self, lifetime: .scoped, dependsOn: SHBaseKey.self) { base in
        let node = fixture.node("mid", after: base)
        fixture.log.record("start mid")
        if fixture.gated { await fixture.gate.wait() }
        return node
    }
    builder.provide(SHTopKey.self, lifetime: .scoped, dependsOn: SHMidKey.self) { fixture.node("top", after: $0) }
    builder.provide(SHSideKey.self, lifetime: .scoped, dependsOn: SHBaseKey.self) { fixture.node("side", after: $0) }
    builder.provide(SHLabelKey.self, lifetime: .transient) { "label" }
    // Lets go of the scope's last handle while a resolve through a provider makes it.
    builder.provide(SHSuicideKey.self, lifetime: .scoped, dependsOn: SHBaseKey.self) { base in
        fixture.captured.fill(nil)
        try await Task.sleep(for: .milliseconds(20))
        return fixture.node("suicide", after: base)
    }
    builder.provide(
        SHMakerKey.self,
        lifetime: .transient,
        dependsOn: Provider<SHTopKey>.self,
        Lazy<SHTopKey>.self,
        Lazy<SHSideKey>.self,
        Provider<SHLabelKey>.self,
        Provider<SHSuicideKey>.self
    ) { SHMaker(top: $0, lazyTop: $1, lazySide: $2, label: $3, suicide: $4) }
    builder.inScope(.shOuter) { outer in
        outer.provide(SHSessionKey.self, lifetime: .scoped, dependsOn: SHBaseKey.self) {
            fixture.node("session", after: $0)
        }
        outer.provide(SHLateKey.self, lifetime: .scoped, dependsOn: SHBaseKey.self) { fixture.node("late", after: $0) }
    }
    builder.inScope(.shInner) { inner in
        inner.provide(SHRequestKey.self, lifetime: .scoped, dependsOn: SHSessionKey.self) { session in
            let node = fixture.node("request", after: session)
            fixture.log.record("start request")
            if fixture.gated { await fixture.gate.wait() }
            return node
        }
        inner.provide(
            SHInnerMakerKey.self,
            lifetime: .transient,
            dependsOn: Provider<SHRequestKey>.self,
            Lazy<SHLateKey>.self
        ) { SHInnerMaker(request: $0, lazyLate: $1) }
    }
    builder.inScope(.shSeeded) { seeded in
        seeded.seed(SHConnectionKey.self)
        seeded.provide(SHCartKey.self, lifetime: .scoped, dependsOn: SHConnectionKey.self, SHBaseKey.self) {
            connection,
            base in
            let node = fixture.node("cart", after: connection, base)
            fixture.log.record("start cart")
            if fixture.gated { await fixture.gate.wait() }
            return node
        }
        seeded.provide(SHCartMakerKey.self, lifetime: .transient, dependsOn: Provider<SHCartKey>.self) {
            SHCartMaker(cart: $0)
        }
    }
    builder.provide(
        SHReaperKey.self,
        lifetime: .scoped,
        dependsOn: Provider<SHSideKey>.self,
        Lazy<SHSideKey>.self
    ) { SHReaper(fixture.node("reaper"), side: $0, lazySide: $1) }
    return builder
}

/// Every hook-owning instance that got `didAdd` got exactly one `willRemove`, after it; none got one
/// without `didAdd` (owned seeds, named `seed…`, get exactly one and no `didAdd`); every dependent's
/// `willRemove` came before its dependency's.
private func shAudit(_ fixture: SHFixture) -> [String] {
    let entries = fixture.log.all
    var counts: [String: Int] = [:]
    var firstIndex: [String: Int] = [:]
    for (index, entry) in entries.enumerated() {
        counts[entry, default: 0] += 1
        if firstIndex[entry] == nil { firstIndex[entry] = index }
    }
    var problems: [String] = []
    for entry in entries where entry.hasPrefix("init ") {
        let name = String(entry.dropFirst("init ".count))
        if name == "plain base" { continue }
        let added = counts["didAdd \(name)", default: 0]
        let removed = counts["willRemove \(name)", default: 0]
        if name.hasPrefix("seed") {
            if added != 0 || removed != 1 { problems.append("\(name): didAdd \(added)x, willRemove \(removed)x") }
            continue
        }
        if added > 1 || removed != added { problems.append("\(name): didAdd \(added)x, willRemove \(removed)x") }
        if let add = firstIndex["didAdd \(name)"], let remove = firstIndex["willRemove \(name)"], remove < add {
            problems.append("\(name): willRemove before didAdd")
        }
    }
    for (dependent, dependency) in fixture.edges.withLock({ $0 }) {
        guard let first = firstIndex["willRemove \(dependent)"], let second = firstIndex["willRemove \(dependency)"]
        else { continue }
        if first > second { problems.append("\(dependency) removed before its dependent \(dependent)") }
    }
    return problems
}

/// How many `willRemove` hooks of instances whose names start with `prefix` ran.
private func shRemoved(_ fixture: SHFixture, _ prefix: String) -> Int {
    fixture.log.all.filter { $0.hasPrefix("willRemove \(prefix)") }.count
}

private func shIsClosedError(_ error: any Error) -> Bool {
    (error as? ServiceGraphError)?.codes == [.scopeClosed]
}

/// Polls `condition` until it holds, failing after `limit`.
private func shEventually(
    _ what: String,
    within limit: Duration = .seconds(20),
    _ condition: () -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        guard ContinuousClock.now < deadline else { throw TestFailure("never happened: \(what)") }
        try await Task.sleep(for: .milliseconds(2))
    }
}

/// A provider or lazy call's outcome: the instance's name, or the error codes.
private enum SHOutcome: Sendable, Equatable {
    case made(String)
    case refused([ServiceGraphError.Code])
    case other(String)
}

private func shOutcome(_ body: () async throws -> SHNode) async -> SHOutcome {
    do {
        return .made(try await body().name)
    } catch let error as ServiceGraphError {
        return .refused(error.codes)
    } catch {
        return .other("\(error)")
    }
}

/// Opens a scope, resolves what reaches it without its handle, and returns both, the handle in a box the
/// caller empties (so that no local of the test keeps it).
private func shOpenHeld(_ graph: ServiceGraph) async throws -> (Locked<ServiceScope?>, SHMaker) {
    let scope = try graph.makeScope()
    let maker = try await scope.resolve(SHMakerKey.self)
    return (Locked(scope), maker)
}

@Suite(.timeLimit(.minutes(10)))
struct ScopeHandleHostileTests {
    @Test func aProviderResolveInFlightWhenTheHandleIsDroppedDelaysTheReleaseAndShutdownWaitsForIt() async throws {
        let fixture = SHFixture(gated: true)
        let graph = try await shBuilder(fixture).build()
        let (handle, maker) = try await shOpenHeld(graph)
        let call = Task { await shOutcome { try await maker.top() } }
        try await fixture.log.waitFor("start mid")
        handle.withLock { $0 = nil }  // the drop, with the provider's resolve held at the gate
        try await Task.sleep(for: .milliseconds(50))
        #expect(shRemoved(fixture, "") == 0, "nothing is released while a resolve is in flight")
        let shutdownReturned = Tally()
        let shutdown = Task {
            try await graph.shutdown()
            shutdownReturned.increment()
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(shutdownReturned.count == 0, "shutdown waits for the dropped scope's in-flight resolve")
        #expect(fixture.log.count(of: "willRemove base") == 0)
        await fixture.gate.open()
        let outcome = try await withDeadline(.seconds(60)) { await call.value }
        try await withDeadline(.seconds(60)) { try await shutdown.value }
        switch outcome {
        case .made(let name):
            #expect(fixture.log.count(of: "willRemove \(name)") == 1, "the top made after the drop is released")
        case .refused(let codes): #expect(codes == [.scopeClosed])
        case .other(let error): Issue.record("unexpected error \(error)")
        }
        #expect(shRemoved(fixture, "mid") == 1)
        #expect(shAudit(fixture) == [])
        #expect(fixture.log.all.last == "willRemove base")
        #expect(fixture.live.count == 0)
        let late = await shOutcome { try await maker.top() }
        #expect(late == .refused([.scopeClosed]) || late == .refused([.graphShutDown]), "\(late)")
    }

    @Test func aLazyReadInFlightWhenTheHandleIsDroppedFromAnotherTaskFinishesOnceAndIsReleasedOnce() async throws {
        let fixture = SHFixture(gated: true)
        let graph = try await shBuilder(fixture).build()
        let (handle, maker) = try await shOpenHeld(graph)
        let first = Task { await shOutcome { try await maker.lazyTop.value } }
        try await fixture.log.waitFor("start mid")
        await Task.detached { handle.withLock { $0 = nil } }.value
        // A second read of the same handle, begun after the drop, waits for the first.
        let second = Task { await shOutcome { try await maker.lazyTop.value } }
        // A handle on another service, never read before the drop: its first read is refused.
        let side = await shOutcome { try await maker.lazySide.value }
        #expect(side == .refused([.scopeClosed]), "\(side)")
        #expect(throws: ServiceGraphError.self) { try maker.label.resolveSynchronously() }
        await fixture.gate.open()
        let firstOutcome = try await withDeadline(.seconds(60)) { await first.value }
        let secondOutcome = try await withDeadline(.seconds(60)) { await second.value }
        if case .made = firstOutcome, case .made = secondOutcome {
            #expect(firstOutcome == secondOutcome, "a lazy handle makes its value once")
        }
        for outcome in [firstOutcome, secondOutcome] {
            if case .made = outcome { continue }
            #expect(outcome == .refused([.scopeClosed]), "\(outcome)")
        }
        // The dropped scope releases on its own, without a shutdown.
        try await withDeadline(.seconds(60)) {
            try await shEventually("the dropped scope's hooks ran") { shRemoved(fixture, "mid") == 1 }
        }
        #expect(fixture.log.count(of: "willRemove base") == 0)
        try await withDeadline(.seconds(60)) { try await graph.shutdown() }
        #expect(shAudit(fixture) == [])
        #expect(fixture.eventCount(.scopeDropped) == 1, "one drop, one event")
    }

    @Test func providersAndLazyHandlesThatOutliveTheirScopeHandleThrowScopeClosedNeverCrash() async throws {
        let fixture = SHFixture()
        let graph = try await shBuilder(fixture).build()
        var makers: [SHMaker] = []
        var readEarly: [Int: String] = [:]
        for index in 0..<40 {
            let (handle, maker) = try await shOpenHeld(graph)
            if index.isMultiple(of: 2) { readEarly[index] = try await maker.lazyTop.value.name }
            if index % 3 == 0 { _ = try await maker.lazySide.value }
            handle.withLock { $0 = nil }
            makers.append(maker)
        }
        // Right after the drop, whether or not the release has run yet.
        for (index, maker) in makers.enumerated() {
            let viaProvider = await shOutcome { try await maker.top() }
            #expect(viaProvider == .refused([.scopeClosed]), "scope \(index): \(viaProvider)")
            let error = #expect(throws: ServiceGraphError.self) { try maker.label.resolveSynchronously() }
            #expect(error?.codes == [.scopeClosed], "scope \(index)")
            if index % 3 != 0 {
                let side = await shOutcome { try await maker.lazySide.value }
                #expect(side == .refused([.scopeClosed]), "scope \(index): \(side)")
            }
            if let early = readEarly[index] {
                #expect(try await maker.lazyTop.value.name == early, "a made lazy value is kept")
            }
        }
        try await withDeadline(.seconds(60)) {
            try await shEventually("every dropped scope ran its hooks") {
                shRemoved(fixture, "top") == 20 && shRemoved(fixture, "mid") == 20 && shRemoved(fixture, "side") == 14
            }
        }
        // One event per scope dropped, whether or not it owed hooks; a key (the services whose hooks it
        // owed) on the 27 that did: those that read their lazy top (even indices) or their side (every
        // third).
        #expect(fixture.eventCount(.scopeDropped) == 40)
        #expect(fixture.events.withLock { $0.filter { $0.0 == .scopeDropped && !$0.1.isEmpty }.count } == 27)
        // Once released, still refused the same way.
        for maker in makers {
            let viaProvider = await shOutcome { try await maker.suicide() }
            #expect(viaProvider == .refused([.scopeClosed]), "\(viaProvider)")
        }
        makers.removeAll()
        // Nothing is left (the made lazy values went with their makers), before any shutdown.
        #expect(fixture.live.count == 0)
        try await withDeadline(.seconds(60)) { try await graph.shutdown() }
        #expect(shAudit(fixture) == [])
        #expect(fixture.live.count == 0)
    }

    @Test func hundredsOfScopesDroppedFromManyTasksWhileSeveralTasksShutTheGraphDown() async throws {
        let fixture = SHFixture()
        let graphs = WeakRegistry()
        try await withDeadline(.seconds(240)) {
            let graph = graphs.track(try await shBuilder(fixture).build())
            let pool = Locked<[ServiceScope]>([])
            for index in 0..<300 {
                let scope = try graph.makeScope()
                if index % 5 != 4 { _ = try await scope.resolve(SHTopKey.self) }
                if index.isMultiple(of: 3) { _ = try await scope.resolve(SHSideKey.self) }
                pool.withLock { $0.append(scope) }
            }
            let lateShutdowns = Tally()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        while let scope = pool.withLock({ $0.popLast() }) {
                            withExtendedLifetime(scope) {}
                            await Task.yield()
                        }
                    }
                }
                for delay in 0..<4 {
                    group.addTask {
                        for _ in 0..<(delay * 40) { await Task.yield() }
                        try await graph.shutdown()
                        // Every caller returns only once the whole shutdown is done.
                        if fixture.log.count(of: "willRemove base") != 1 { lateShutdowns.increment() }
                    }
                }
                try await group.waitForAll()
            }
            #expect(lateShutdowns.count == 0, "a shutdown returned before the singletons were released")
            #expect(pool.withLock { $0.isEmpty })
        }
        #expect(shRemoved(fixture, "top") == 240)
        #expect(shRemoved(fixture, "mid") == 240)
        #expect(shRemoved(fixture, "side") == 100)
        #expect(shAudit(fixture) == [])
        #expect(fixture.log.all.last == "willRemove base")
        #expect(fixture.live.count == 0)
        #expect(graphs.alive == 0, "the graph is let go after shutdown once every scope is closed or dropped")
    }

    @Test func closeRacingTheDropOfAnotherReferenceClosesOnceAndNeverCountsAsADrop() async throws {
        let fixture = SHFixture()
        let graph = try await shBuilder(fixture).build()
        let successes = Tally()
        let refusals = Tally()
        try await withDeadline(.seconds(120)) {
            for round in 0..<200 {
                let (handle, _) = try await shOpenHeld(graph)
                _ = try await handle.withLock { $0! }.resolve(SHTopKey.self)
                let closers = (round.isMultiple(of: 2) ? 1 : 2)
                var tasks: [Task<Void, Never>] = []
                for _ in 0..<closers {
                    let reference = handle.withLock { $0! }
                    tasks.append(
                        Task.detached {
                            do {
                                try await reference.close()
                                successes.increment()
                            } catch {
                                if shIsClosedError(error) { refusals.increment() }
                            }
                        }
                    )
                }
                // The other reference goes at the same time, from yet another task.
                let dropper = Task.detached { handle.withLock { $0 = nil } }
                for task in tasks { await task.value }
                await dropper.value
            }
        }
        #expect(successes.count == 200, "exactly one close per scope succeeds")
        #expect(refusals.count == 100, "the second close of a scope is refused")
        #expect(fixture.eventCount(.scopeDropped) == 0, "a closed scope is never also dropped")
        #expect(shRemoved(fixture, "top") == 200)
        #expect(fixture.live.count == 0)
        try await withDeadline(.seconds(60)) { try await graph.shutdown() }
        #expect(shAudit(fixture) == [])
        #expect(fixture.live.count == 0)
    }

    @Test func anOuterHandleDroppedFirstLivesOnForItsChildUntilTheChildIsDroppedFromAnotherTask() async throws {
        let fixture = SHFixture()
        let graph = try await shBuilder(fixture).build()
        let inner = Locked<ServiceScope?>(nil)
        do {
            let outer = try graph.makeScope(.shOuter)
            _ = try await outer.resolve(SHSessionKey.self)
            let child = try outer.makeScope(.shInner)
            inner.withLock { $0 = child }
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(shRemoved(fixture, "") == 0, "the child keeps its parent open")
        #expect(fixture.eventCount(.scopeDropped) == 0)
        let (request, innerMaker) = try await {
            let child = try #require(inner.withLock { $0 })
            #expect(!child.isClosed)
            // The parent, whose handle is gone, still makes its own services for the child.
            return (try await child.resolve(SHRequestKey.self).name, try await child.resolve(SHInnerMakerKey.self))
        }()
        let late = try await innerMaker.lazyLate.value.name
        await Task.detached { inner.withLock { $0 = nil } }.value
        // `innerMaker` still holds `late` through its lazy handle; the hooks still run.
        try await withDeadline(.seconds(60)) {
            try await shEventually("the dropped pair ran their hooks") { shRemoved(fixture, "session") == 1 }
        }
        #expect(fixture.log.count(of: "willRemove \(request)") == 1)
        #expect(fixture.log.count(of: "willRemove \(late)") == 1)
        let requestIndex = try #require(fixture.log.index(of: "willRemove \(request)"))
        let lateIndex = try #require(fixture.log.index(of: "willRemove \(late)"))
        let sessionIndex = try #require(fixture.log.all.firstIndex { $0.hasPrefix("willRemove session") })
        #expect(requestIndex < sessionIndex && requestIndex < lateIndex, "the child's hooks run before its parent's")
        let refused = await shOutcome { try await innerMaker.request() }
        #expect(refused == .refused([.scopeClosed]), "\(refused)")
        #expect(fixture.log.count(of: "willRemove base") == 0)
        try await withDeadline(.seconds(60)) { try await graph.shutdown() }
        #expect(shAudit(fixture) == [])
        withExtendedLifetime(innerMaker) {}
    }

    @Test func nestedPairsWithOuterHandlesDroppedAndInnerOnesDroppedWhileShutdownRunsReleaseEverythingOnce()
        async throws
    {
        let fixture = SHFixture(gated: true)
        var calls: [Task<SHOutcome, Never>] = []
        let pool = Locked<[ServiceScope]>([])
        let graph = try await shBuilder(fixture).build()
        for index in 0..<60 {
            let outer = try graph.makeScope(.shOuter)
            _ = try await outer.resolve(SHSessionKey.self)
            let inner = try outer.makeScope(.shInner)
            if index.isMultiple(of: 3) {
                // A request held at the gate, through a provider, when the inner handle goes.
                let maker = try await inner.resolve(SHInnerMakerKey.self)
                calls.append(Task { await shOutcome { try await maker.request() } })
            }
            pool.withLock { $0.append(inner) }
        }
        try await withDeadline(.seconds(60)) {
            try await shEventually("every held request started") { fixture.log.count(of: "start request") == 20 }
        }
        try await withDeadline(.seconds(240)) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        while let scope = pool.withLock({ $0.popLast() }) {
                            withExtendedLifetime(scope) {}
                            await Task.yield()
                        }
                    }
                }
                group.addTask { try await graph.shutdown() }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(30))
                    #expect(fixture.log.count(of: "willRemove base") == 0, "shutdown waits for held requests")
                    await fixture.gate.open()
                }
                try await group.waitForAll()
            }
        }
        for call in calls {
            let outcome = await call.value
            if case .made(let name) = outcome {
                #expect(fixture.log.count(of: "willRemove \(name)") == 1, "\(name)")
            } else {
                #expect(outcome == .refused([.scopeClosed]), "\(outcome)")
            }
        }
        calls.removeAll()
        #expect(shRemoved(fixture, "session") == 60)
        #expect(shAudit(fixture) == [])
        #expect(fixture.log.all.last == "willRemove base")
        #expect(fixture.live.count == 0)
    }

    @Test func aDroppedScopeOwningItsSeedReleasesTheSeedLastAndOnceEvenWithACartInFlight() async throws {
        let fixture = SHFixture(gated: true)
        let graph = try await shBuilder(fixture).build()
        let seeds = WeakRegistry()
        let handle = Locked<ServiceScope?>(nil)
        let maker: SHCartMaker
        do {
            let seed = seeds.track(SHHookedNode("seed one", fixture: fixture))
            let scope = try graph.makeScope(
                .shSeeded,
                seeding: ScopeSeed(SHConnectionKey.self, seed, ownedByScope: true)
            )
            maker = try await scope.resolve(SHCartMakerKey.self)
            handle.withLock { $0 = scope }
        }
        let call = Task { await shOutcome { try await maker.cart() } }
        try await fixture.log.waitFor("start cart")
        await Task.detached { handle.withLock { $0 = nil } }.value
        try await Task.sleep(for: .milliseconds(50))
        #expect(fixture.log.count(of: "willRemove seed one") == 0, "the seed outlives the cart being made from it")
        #expect(seeds.alive == 1)
        await fixture.gate.open()
        let outcome = try await withDeadline(.seconds(60)) { await call.value }
        try await withDeadline(.seconds(60)) {
            try await shEventually("the seed's hook ran") { fixture.log.count(of: "willRemove seed one") == 1 }
        }
        if case .made(let cart) = outcome {
            let cartIndex = try #require(fixture.log.index(of: "willRemove \(cart)"))
            #expect(cartIndex < fixture.log.index(of: "willRemove seed one")!)
        } else {
            #expect(outcome == .refused([.scopeClosed]), "\(outcome)")
        }
        try await withDeadline(.seconds(60)) {
            try await shEventually("the dropped scope lets its owned seed go") { seeds.alive == 0 }
        }
        try await withDeadline(.seconds(60)) { try await graph.shutdown() }
        #expect(fixture.log.count(of: "didAdd seed one") == 0)
        #expect(fixture.log.count(of: "willRemove seed one") == 1)
        #expect(shAudit(fixture) == [])
        #expect(fixture.live.count == 0)
    }

    @Test func anInstanceOwnedByADroppedScopeMayBeOwnedByAnotherOnceTheDropHasReleasedIt() async throws {
        let fixture = SHFixture()
        let graph = try await shBuilder(fixture).build()
        let seed = SHHookedNode("seed shared", fixture: fixture)
        do {
            let scope = try graph.makeScope(
                .shSeeded,
                seeding: ScopeSeed(SHConnectionKey.self, seed, ownedByScope: true)
            )
            _ = try await scope.resolve(SHCartKey.self)
            // While it is open, no other scope may own it.
            let error = #expect(throws: ServiceGraphError.self) {
                try graph.makeScope(.shSeeded, seeding: ScopeSeed(SHConnectionKey.self, seed, ownedByScope: true))
            }
            #expect(error?.codes == [.ownedSeedInUse])
        }
        try await withDeadline(.seconds(60)) {
            try await shEventually("the drop released the seed") {
                fixture.log.count(of: "willRemove seed shared") == 1
            }
            try await shEventually("another scope may own it") {
                (try? graph.makeScope(.shSeeded, seeding: ScopeSeed(SHConnectionKey.self, seed, ownedByScope: true)))
                    != nil
            }
        }
        try await withDeadline(.seconds(60)) { try await graph.shutdown() }
        // The drop's hook, then the later owner's (dropped at once): one per ownership.
        #expect(fixture.log.count(of: "willRemove seed shared") == 2)
        #expect(fixture.log.count(of: "didAdd seed shared") == 0)
    }

    @Test func theLastHandleDroppedInsideAFactoryRunningUnderAProviderNeitherHangsNorLeaks() async throws {
        let fixture = SHFixture()
        let graph = try await shBuilder(fixture).build()
        var makers: [SHMaker] = []
        for _ in 0..<20 {
            let (handle, maker) = try await shOpenHeld(graph)
            fixture.captured.fill(handle.withLock { $0 })
            handle.withLock { $0 = nil }
            // The factory lets go of the captured handle, the scope's last, while it runs.
            let outcome = try await withDeadline(.seconds(60)) { await shOutcome { try await maker.suicide() } }
            switch outcome {
            case .made: break
            default: #expect(outcome == .refused([.scopeClosed]), "\(outcome)")
            }
            #expect(throws: (any Error).self) { try fixture.captured.value }
            makers.append(maker)
        }
        try await withDeadline(.seconds(60)) {
            try await shEventually("every made instance was released") {
                fixture.log.all.filter { $0.hasPrefix("didAdd suicide") }.count == shRemoved(fixture, "suicide")
            }
        }
        #expect(fixture.eventCount(.scopeDropped) == shRemoved(fixture, "suicide"))
        for maker in makers {
            let late = await shOutcome { try await maker.top() }
            #expect(late == .refused([.scopeClosed]), "\(late)")
        }
        makers.removeAll()
        try await withDeadline(.seconds(60)) { try await graph.shutdown() }
        #expect(shAudit(fixture) == [])
        #expect(fixture.live.count == 0)
    }

    @Test func anOpenScopeKeepsItsGraphAliveAndAClosedOrDroppedOneLetsItGo() async throws {
        for drop in [false, true] {
            let fixture = SHFixture(hookedBase: false)
            let graphs = WeakRegistry()
            var scope: ServiceScope?
            do {
                var builder = shBuilder(fixture)
                builder.requiresShutdown = false
                scope = try graphs.track(try await builder.build()).makeScope()
            }
            #expect(graphs.alive == 1, "an open scope keeps its graph")
            let top = try await scope!.resolve(SHTopKey.self).name
            #expect(scope![SHBaseKey.self].name == "plain base")
            if drop {
                scope = nil
                try await withDeadline(.seconds(60)) {
                    try await shEventually("the dropped scope's graph went") { graphs.alive == 0 }
                }
            } else {
                try await scope!.close()
                #expect(graphs.alive == 0, "a closed scope lets its graph go")
            }
            try await withDeadline(.seconds(60)) {
                try await shEventually("the scope's hooks ran") { shRemoved(fixture, "") == 2 }
            }
            #expect(fixture.log.count(of: "willRemove \(top)") == 1)
            #expect(fixture.eventCount(.droppedWithoutShutdown) == 0, "no hook was left unrun")
            #expect(shAudit(fixture) == [])
            scope = nil
            #expect(fixture.live.count == 0)
        }
    }

    @Test func aShutDownGraphGoesWhileItsClosedHandlesAreStillHeldAndThoseHandlesRefuseWork() async throws {
        let fixture = SHFixture()
        weak var weakGraph: ServiceGraph?
        var held: [ServiceScope] = []
        var makers: [SHMaker] = []
        do {
            let graph = try await shBuilder(fixture).build()
            weakGraph = graph
            for index in 0..<40 {
                let scope = try graph.makeScope()
                _ = try await scope.resolve(SHTopKey.self)
                makers.append(try await scope.resolve(SHMakerKey.self))
                switch index % 4 {
                case 0: try await scope.close()
                case 1: break  // dropped
                case 2: held.append(scope)
                default:
                    let outer = try graph.makeScope(.shOuter)
                    let inner = try outer.makeScope(.shInner)
                    _ = try await inner.resolve(SHRequestKey.self)
                    held.append(inner)  // the outer handle is dropped, kept by its child
                }
            }
            try await withDeadline(.seconds(60)) { try await graph.shutdown() }
        }
        #expect(weakGraph == nil, "closed scopes let their graph go")
        #expect(held.allSatisfy { $0.isClosed })
        for scope in held {
            let error = await #expect(throws: ServiceGraphError.self) { try await scope.resolve(SHTopKey.self) }
            #expect(error?.codes == [.scopeClosed])
        }
        for maker in makers {
            let late = await shOutcome { try await maker.top() }
            #expect(late == .refused([.scopeClosed]) || late == .refused([.graphShutDown]), "\(late)")
        }
        #expect(shRemoved(fixture, "top") == 40)
        #expect(shRemoved(fixture, "session") == 10)
        #expect(shAudit(fixture) == [])
        #expect(fixture.log.all.last == "willRemove base")
        held.removeAll()
        makers.removeAll()
        #expect(fixture.live.count == 0)
    }

    @Test(arguments: ["drop", "close", "shutdown"])
    func aWillRemoveThatReachesBackIntoItsClosingScopeIsRefusedAndNothingHangs(_ ending: String) async throws {
        let fixture = SHFixture()
        let graph = try await shBuilder(fixture).build()
        let handle = Locked<ServiceScope?>(try graph.makeScope())
        let reaper = try await handle.withLock { $0! }.resolve(SHReaperKey.self).node.name
        try await withDeadline(.seconds(60)) {
            switch ending {
            case "drop":
                handle.withLock { $0 = nil }
                try await shEventually("the dropped reaper's hook ran") { shRemoved(fixture, "reaper") == 1 }
            case "close": try await handle.withLock { $0! }.close()
            default: try await graph.shutdown()
            }
        }
        let refused = SHOutcome.refused([.scopeClosed])
        #expect(fixture.log.count(of: "reaper saw \(refused) \(refused)") == 1, "\(fixture.log.all)")
        #expect(fixture.log.count(of: "willRemove \(reaper)") == 1)
        #expect(shRemoved(fixture, "side") == 0, "nothing new is made in a closing scope")
        handle.withLock { $0 = nil }
        try await withDeadline(.seconds(60)) { try await graph.shutdown() }
        #expect(shAudit(fixture) == [])
        #expect(fixture.live.count == 0)
    }

    @Test func childrenOpenedAndDroppedWhileShutdownClosesTheirParentAreEachClosedOrRefusedAndReleasedOnce()
        async throws
    {
        let fixture = SHFixture()
        let graph = try await shBuilder(fixture).build()
        let parents = try (0..<20).map { _ in try graph.makeScope(.shOuter) }
        let opened = Tally()
        let refused = Tally()
        try await withDeadline(.seconds(240)) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for parent in parents {
                    group.addTask {
                        for _ in 0..<15 {
                            do {
                                let child = try parent.makeScope(.shInner)
                                opened.increment()
                                _ = try await child.resolve(SHRequestKey.self)
                            } catch {
                                // Opened, or resolved, once the shutdown began (graphShutDown, as the graph's
                                // makeScope) or closed the parent (scopeClosed).
                                let codes = (error as? ServiceGraphError)?.codes
                                guard codes == [.scopeClosed] || codes == [.graphShutDown] else { throw error }
                                refused.increment()
                            }
                            await Task.yield()
                        }
                    }
                }
                group.addTask {
                    for _ in 0..<30 { await Task.yield() }
                    try await graph.shutdown()
                }
                try await group.waitForAll()
            }
        }
        #expect(opened.count + refused.count >= 300)
        #expect(parents.allSatisfy { $0.isClosed })
        #expect(shAudit(fixture) == [])
        #expect(shRemoved(fixture, "session") == fixture.log.all.filter { $0.hasPrefix("didAdd session") }.count)
        #expect(fixture.log.all.last == "willRemove base")
        #expect(fixture.live.count == 0)
    }
}
