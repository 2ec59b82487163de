import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

// MARK: - Doubles

/// A holder of a lazy handle, as a service's value.
private struct LHHolds<Key: ServiceKey>: Sendable {
    let lazy: Lazy<Key>
}

/// A singleton that logs its hooks and may hold a lazy handle on another node; in its `willRemove`
/// it reads that handle when it was made (a holder is removed before what it holds).
private final class LHNode: LifecycleHooks, Sendable {
    let name: String
    let log: EventLog
    private let peek: (@Sendable () -> Bool)?
    private let next: (@Sendable () async throws -> LHNode)?

    init(_ name: String, log: EventLog) {
        self.name = name
        self.log = log
        self.peek = nil
        self.next = nil
        log.record("init \(name)")
    }

    init<Key: ServiceKey>(_ name: String, log: EventLog, next lazy: Lazy<Key>) where Key.Value == LHNode {
        self.name = name
        self.log = log
        self.peek = { lazy.isMade }
        self.next = { try await lazy.value }
        log.record("init \(name)")
    }

    var nextIsMade: Bool { peek?() ?? false }

    func nextValue() async throws -> LHNode {
        guard let next else { throw TestFailure("\(name) holds no lazy handle") }
        return try await next()
    }

    func didAdd() async throws { log.record("didAdd \(name)") }

    func willRemove() async throws {
        log.record("willRemove \(name)")
        if nextIsMade { log.record("\(name) saw \(try await nextValue().name)") }
    }
}

/// What a task's use of a lazy value came to.
private enum LHOutcome: Sendable {
    case value(HookedService)
    case refused([ServiceGraphError.Code])
    case other(String)
    case shutDown

    init(_ body: () async throws -> HookedService) async {
        do {
            self = .value(try await body())
        } catch let error as ServiceGraphError {
            self = .refused(error.codes)
        } catch {
            self = .other("\(type(of: error)): \(error)")
        }
    }
}

/// Races `close` (a shutdown or a scope's close, which waits a little longer each round) against 40
/// first uses that start together; returns the values the uses got, after checking that every other
/// use was refused with `refusal`.
private func lhRaceFirstUses(
    round: Int,
    expecting refusal: ServiceGraphError.Code,
    close: @escaping @Sendable () async throws -> Void,
    use: @escaping @Sendable (Int) async throws -> HookedService
) async throws -> [HookedService] {
    let outcomes = try await withDeadline(.seconds(30)) {
        await withTaskGroup(of: LHOutcome.self) { group in
            let barrier = Barrier(count: 41)
            group.addTask {
                await barrier.arriveAndWait()
                for _ in 0..<(round / 4) { await Task.yield() }
                do {
                    try await close()
                    return .shutDown
                } catch {
                    return .other("closing threw \(error)")
                }
            }
            for index in 0..<40 {
                group.addTask {
                    await barrier.arriveAndWait()
                    for _ in 0..<(index % 7) { await Task.yield() }
                    return await LHOutcome { try await use(index) }
                }
            }
            return await group.reduce(into: [LHOutcome]()) { $0.append($1) }
        }
    }
    var values: [HookedService] = []
    for outcome in outcomes {
        switch outcome {
        case .value(let value): values.append(value)
        case .refused(let codes): #expect(codes == [refusal], "round \(round)")
        case .other(let text): Issue.record("round \(round): \(text)")
        case .shutDown: break
        }
    }
    return values
}

/// A handle on a generated key, type-erased, for the ten-thousand-service graph.
private struct LHGeneratedHolder: Sendable {
    let use: @Sendable () async throws -> GeneratedService
    let isMade: @Sendable () -> Bool
}

private enum LHGeneratedHolderKey<Inner: GeneratedKey>: ServiceKey { typealias Value = LHGeneratedHolder }

// MARK: - Keys

private enum LHStoreKey: ServiceKey { typealias Value = HookedService }
private enum LHHeavyKey: ServiceKey { typealias Value = HookedService }
private enum LHScreenKey: ServiceKey { typealias Value = LHHolds<LHHeavyKey> }
private enum LHPanelKey: ServiceKey { typealias Value = LHHolds<LHHeavyKey> }

private enum LHGatedKey: ServiceKey { typealias Value = HookedService }
private enum LHGatedHolderKey: ServiceKey { typealias Value = LHHolds<LHGatedKey> }

private enum LHSlowStartKey: ServiceKey { typealias Value = LHSlowStart }
private enum LHSlowStartHolderKey: ServiceKey { typealias Value = LHHolds<LHSlowStartKey> }

private enum LHFlakyKey: ServiceKey { typealias Value = HookedService }
private enum LHFlakyHolderKey: ServiceKey { typealias Value = LHHolds<LHFlakyKey> }

private enum LHHangingKey: ServiceKey { typealias Value = HookedService }
private enum LHHangingHolderKey: ServiceKey { typealias Value = LHHolds<LHHangingKey> }

private enum LHSessionKey: ServiceKey { typealias Value = HookedService }
private enum LHCartKey: ServiceKey { typealias Value = HookedService }
private enum LHCartHolderKey: ServiceKey { typealias Value = LHHolds<LHCartKey> }

private enum LHBaseKey: ServiceKey { typealias Value = LHNode }
private enum LHRootKey: ServiceKey { typealias Value = LHNode }
private enum LHChainAKey: ServiceKey { typealias Value = LHNode }
private enum LHChainBKey: ServiceKey { typealias Value = LHNode }
private enum LHChainCKey: ServiceKey { typealias Value = LHNode }
private enum LHChainDKey: ServiceKey { typealias Value = LHNode }
private enum LHLeftKey: ServiceKey { typealias Value = LHNode }
private enum LHRightKey: ServiceKey { typealias Value = LHNode }
private enum LHSharedKey: ServiceKey { typealias Value = LHNode }

private enum LHDraftKey: ServiceKey { typealias Value = LHCounted }
private enum LHDraftHolderKey: ServiceKey { typealias Value = LHHolds<LHDraftKey> }
private enum LHScopedDraftKey: ServiceKey { typealias Value = LHCounted }
private enum LHScopedDraftHolderKey: ServiceKey { typealias Value = LHHolds<LHScopedDraftKey> }
private enum LHRequestKey: ServiceKey { typealias Value = String }
private enum LHRequestHolderKey: ServiceKey { typealias Value = LHHolds<LHRequestKey> }
private enum LHGreetingKey: ServiceKey { typealias Value = String }
private enum LHGreetingHolderKey: ServiceKey { typealias Value = LHHolds<LHGreetingKey> }
private enum LHConfigKey: ServiceKey { typealias Value = LHNode }
private enum LHConfigHolderKey: ServiceKey { typealias Value = LHHolds<LHConfigKey> }

private enum LHChildUserKey: ServiceKey { typealias Value = LHHolds<LHHeavyKey> }
private enum LHChildDeferredKey: ServiceKey { typealias Value = HookedService }
private enum LHChildDeferredHolderKey: ServiceKey { typealias Value = LHHolds<LHChildDeferredKey> }

private enum LHEagerTargetKey: ServiceKey { typealias Value = HookedService }
private enum LHEagerLazyHolderKey: ServiceKey { typealias Value = LHHolds<LHEagerTargetKey> }
private enum LHEagerDirectHolderKey: ServiceKey { typealias Value = HookedService }

private enum LHSneakyXKey: ServiceKey { typealias Value = Int }
private enum LHSneakyYKey: ServiceKey { typealias Value = Int }
private enum LHSneakyXHolderKey: ServiceKey { typealias Value = LHHolds<LHSneakyXKey> }
private enum LHSneakyYHolderKey: ServiceKey { typealias Value = LHHolds<LHSneakyYKey> }
private enum LHIndexKey: ServiceKey { typealias Value = HookedService }
private enum LHBombKey: ServiceKey { typealias Value = HookedService }
private enum LHTeardownUserKey: ServiceKey { typealias Value = LHTeardownUser }

private enum LHLoopAKey: ServiceKey { typealias Value = Int }
private enum LHLoopBKey: ServiceKey { typealias Value = Int }
private enum LHSelfKey: ServiceKey { typealias Value = Int }
private enum LHMissingKey: ServiceKey { typealias Value = Int }
private enum LHNeedsMissingKey: ServiceKey { typealias Value = Int }
private enum LHScopedThingKey: ServiceKey { typealias Value = Int }
private enum LHTransientOnScopedKey: ServiceKey { typealias Value = Int }
private enum LHCaptorKey: ServiceKey { typealias Value = Int }
private enum LHIndirectCaptorKey: ServiceKey { typealias Value = Int }
private enum LHDeferredCaptorKey: ServiceKey { typealias Value = Int }
private enum LHDeferredCaptorHolderKey: ServiceKey { typealias Value = Int }
private enum LHScopedFineKey: ServiceKey { typealias Value = Int }
private enum LHTransientFineKey: ServiceKey { typealias Value = Int }
private enum LHPlainKey: ServiceKey { typealias Value = Int }
private enum LHWrapperUserKey: ServiceKey { typealias Value = Int }

/// A value that counts how many were made.
private final class LHCounted: Sendable {
    let id: Int
    init(id: Int) { self.id = id }
}

/// A service whose `didAdd` waits at a gate, and logs when it started and finished.
private final class LHSlowStart: LifecycleHooks, Sendable {
    let log: EventLog
    let gate: Gate
    init(log: EventLog, gate: Gate) {
        self.log = log
        self.gate = gate
    }
    func didAdd() async throws {
        log.record("didAdd started")
        await gate.wait()
        log.record("didAdd finished")
    }
    func willRemove() async throws { log.record("willRemove SlowStart") }
}

/// A singleton whose `willRemove` makes the first use of its lazy handle, during shutdown.
private final class LHTeardownUser: LifecycleHooks, Sendable {
    let lazy: Lazy<LHHeavyKey>
    let log: EventLog
    init(lazy: Lazy<LHHeavyKey>, log: EventLog) {
        self.lazy = lazy
        self.log = log
    }
    func willRemove() async throws {
        log.record("willRemove TeardownUser")
        do {
            log.record("TeardownUser got \(try await lazy.value.name)")
        } catch let error as ServiceGraphError {
            log.record("TeardownUser refused: \(error.codes)")
        }
    }
}

// MARK: - Helpers

/// The store (built), the heavy service (only a lazy edge reaches it, so created on first use), a
/// singleton screen and a transient panel that each hold a handle on it.
private func lhHeavyBuilder(
    log: EventLog,
    made: Tally,
    factory: @escaping @Sendable () async throws -> Void = {}
) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(LHStoreKey.self) { HookedService("Store", log: log) }
    builder.provide(LHHeavyKey.self, dependsOn: LHStoreKey.self) { _ in
        made.increment()
        try await factory()
        return HookedService("Heavy", log: log)
    }
    builder.provide(LHScreenKey.self, dependsOn: Lazy<LHHeavyKey>.self, LHStoreKey.self) { lazy, _ in
        LHHolds(lazy: lazy)
    }
    builder.provide(LHPanelKey.self, lifetime: .transient, dependsOn: Lazy<LHHeavyKey>.self) { LHHolds(lazy: $0) }
    return builder
}

/// Whether `error` is a ``ServiceGraphError`` with exactly these codes.
private func lhIsGraphError(_ error: any Error, _ codes: [ServiceGraphError.Code]) -> Bool {
    (error as? ServiceGraphError)?.codes == codes
}

/// Indices in the log, failing the test for an entry never recorded.
private func lhPosition(
    _ entry: String,
    in log: EventLog,
    sourceLocation: SourceLocation = #_sourceLocation
) throws
    -> Int
{
    try #require(log.index(of: entry), "\(entry) never recorded: \(log.all)", sourceLocation: sourceLocation)
}

/// Polls until `condition` holds or `limit` passes; returns whether it held.
private func lhEventually(within limit: Duration = .seconds(5), _ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try await Task.sleep(for: .milliseconds(2))
    }
    return true
}

/// Provides a lazy-only generated singleton `key` and a holder of a handle on it.
private func lhProvideLazyGenerated<K: GeneratedKey>(
    _ key: K.Type,
    index: Int,
    recorder: GraphRecorder,
    into builder: inout ServiceGraph.Builder
) {
    builder.provide(key) { RecordingService(index: index, value: index, recorder: recorder) }
    builder.provide(LHGeneratedHolderKey<K>.self, dependsOn: Lazy<K>.self) { lazy in
        LHGeneratedHolder(use: { try await lazy.value }, isMade: { lazy.isMade })
    }
}

// MARK: - Tests

@Suite("Lazy dependencies, hostile")
struct LazyHostileTests {
    // MARK: Concurrent first uses

    @Test func twoHundredFirstUsesThroughManyHandlesAndTheGraphCreateOnce() async throws {
        let log = EventLog()
        let made = Tally()
        let created = Tally()
        var builder = lhHeavyBuilder(log: log, made: made) { try await Task.sleep(for: .milliseconds(20)) }
        builder.eventHandler = { event in
            if event.kind == .serviceCreated && event.key == "LHHeavyKey" { created.increment() }
        }
        let graph = try await builder.build()
        #expect(made.count == 0)
        let screen = graph[LHScreenKey.self]
        // Distinct handles: every transient panel has its own.
        var panels: [LHHolds<LHHeavyKey>] = []
        for _ in 0..<20 { panels.append(try await graph.resolve(LHPanelKey.self)) }
        let handles = panels
        let barrier = Barrier(count: 200)
        let seen = try await withDeadline(.seconds(60)) {
            try await withThrowingTaskGroup(of: HookedService.self) { group in
                for index in 0..<200 {
                    group.addTask {
                        await barrier.arriveAndWait()
                        switch index % 3 {
                        case 0: return try await screen.lazy.value
                        case 1: return try await handles[index % handles.count].lazy.value
                        default: return try await graph.resolve(LHHeavyKey.self)
                        }
                    }
                }
                return try await group.reduce(into: [HookedService]()) { $0.append($1) }
            }
        }
        #expect(seen.count == 200)
        #expect(seen.allSatisfy { $0 === seen[0] }, "every first use got the same instance")
        #expect(made.count == 1)
        #expect(log.count(of: "init Heavy") == 1)
        #expect(log.count(of: "didAdd Heavy") == 1)
        #expect(created.count == 1, "one serviceCreated event")
        #expect(screen.lazy.isMade && handles.allSatisfy { $0.lazy.isMade })
        #expect(try graph.resolveSynchronously(LHHeavyKey.self) === seen[0])
        try await withDeadline { try await graph.shutdown() }
        #expect(log.count(of: "willRemove Heavy") == 1)
        #expect(try lhPosition("willRemove Heavy", in: log) < lhPosition("willRemove Store", in: log))
    }

    @Test func aHandleAndAGraphResolveRacingForTheFirstUseCreateOnceEveryTime() async throws {
        // The smallest race, repeated on fresh graphs: one first use through a handle, one through the
        // graph, at the same moment.
        for round in 0..<10_000 {
            let log = EventLog()
            let made = Tally()
            let graph = try await lhHeavyBuilder(log: log, made: made).build()
            let screen = graph[LHScreenKey.self]
            let pair = try await withDeadline {
                async let viaHandle = screen.lazy.value
                async let viaGraph = graph.resolve(LHHeavyKey.self)
                return try await (viaHandle, viaGraph)
            }
            #expect(pair.0 === pair.1, "round \(round)")
            #expect(made.count == 1, "round \(round)")
            #expect(log.count(of: "didAdd Heavy") == 1, "round \(round)")
            try await graph.shutdown()
            #expect(log.count(of: "willRemove Heavy") == 1, "round \(round)")
            if made.count != 1 || log.count(of: "willRemove Heavy") != 1 { break }
        }
    }

    @Test func noUserGetsALazySingletonBeforeItsDidAddFinished() async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(LHSlowStartKey.self) { LHSlowStart(log: log, gate: gate) }
        builder.provide(LHSlowStartHolderKey.self, dependsOn: Lazy<LHSlowStartKey>.self) { LHHolds(lazy: $0) }
        let graph = try await builder.build()
        let holder = graph[LHSlowStartHolderKey.self]
        let early = Locked<[Bool]>([])
        let users = (0..<50).map { index in
            Task {
                let value =
                    index.isMultiple(of: 2)
                    ? try await holder.lazy.value : try await graph.resolve(LHSlowStartKey.self)
                early.withLock { $0.append(log.index(of: "didAdd finished") == nil) }
                return ObjectIdentifier(value)
            }
        }
        try await log.waitFor("didAdd started")
        try await Task.sleep(for: .milliseconds(50))
        #expect(early.withLock { $0 }.isEmpty, "nobody got the service while its didAdd was running")
        let blocked = try #require(throws: ServiceGraphError.self) {
            try graph.resolveSynchronously(LHSlowStartKey.self)
        }
        #expect(blocked.codes == [.requiresAwait], "not readable without await before its didAdd finished")
        #expect(!holder.lazy.isMade)
        await gate.open()
        var identities = Set<ObjectIdentifier>()
        for user in users { identities.insert(try await withDeadline { try await user.value }) }
        #expect(identities.count == 1)
        #expect(early.withLock { $0 }.allSatisfy { !$0 })
        #expect(log.count(of: "didAdd started") == 1)
        try await graph.shutdown()
        #expect(log.count(of: "willRemove SlowStart") == 1)
    }

    // MARK: Racing shutdown and close

    @Test func firstUsesRacingShutdownEndWithTheValueOrGraphShutDownAndBalancedHooks() async throws {
        for round in 0..<40 {
            let log = EventLog()
            let made = Tally()
            let builder = lhHeavyBuilder(log: log, made: made) {
                if round.isMultiple(of: 3) { try await Task.sleep(for: .microseconds(200)) }
                for _ in 0..<(round % 5) { await Task.yield() }
            }
            let graph = try await builder.build()
            let screen = graph[LHScreenKey.self]
            let values = try await lhRaceFirstUses(round: round, expecting: .graphShutDown) {
                try await graph.shutdown()
            } use: { index in
                index.isMultiple(of: 2) ? try await screen.lazy.value : try await graph.resolve(LHHeavyKey.self)
            }
            #expect(values.allSatisfy { $0 === values[0] }, "round \(round)")
            #expect(made.count <= 1, "round \(round): created at most once")
            let didAdd = log.count(of: "didAdd Heavy")
            #expect(didAdd <= 1, "round \(round)")
            #expect(log.count(of: "willRemove Heavy") == didAdd, "round \(round): \(log.all)")
            if !values.isEmpty { #expect(didAdd == 1, "round \(round): a value handed out was started") }
            #expect(log.count(of: "willRemove Store") == 1)
            if didAdd == 1 {
                let removeStore = try lhPosition("willRemove Store", in: log)
                #expect(try lhPosition("didAdd Heavy", in: log) < removeStore, "round \(round): \(log.all)")
                #expect(try lhPosition("willRemove Heavy", in: log) < removeStore, "round \(round): \(log.all)")
            }
            // After shutdown: the made value stays readable, otherwise the first use is refused.
            if screen.lazy.isMade {
                let late = try await screen.lazy.value
                #expect(values.isEmpty || late === values[0])
            } else {
                let late = await #expect(throws: ServiceGraphError.self) { try await screen.lazy.value }
                #expect(late?.codes == [.graphShutDown])
            }
            #expect(made.count <= 1, "round \(round): no creation after shutdown")
        }
    }

    @Test func aFirstUseInFlightWhenShutdownStartsIsRemovedOnceBeforeItsDependencies() async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(LHStoreKey.self) { HookedService("Store", log: log) }
        builder.provide(LHGatedKey.self, dependsOn: LHStoreKey.self) { _ in
            log.record("entered")
            await gate.wait()
            return HookedService("Gated", log: log)
        }
        builder.provide(LHGatedHolderKey.self, dependsOn: Lazy<LHGatedKey>.self) { LHHolds(lazy: $0) }
        let graph = try await builder.build()
        let holder = graph[LHGatedHolderKey.self]
        let user = Task { await LHOutcome { try await holder.lazy.value } }
        try await log.waitFor("entered")
        let shutdown = Task { try await graph.shutdown() }
        try await Task.sleep(for: .milliseconds(30))
        await gate.open()
        let outcome = try await withDeadline { await user.value }
        try await withDeadline { try await shutdown.value }
        switch outcome {
        case .value(let value):
            #expect(value.name == "Gated")
            #expect(log.count(of: "didAdd Gated") == 1)
        case .refused(let codes): #expect(codes == [.graphShutDown])
        case .other(let text): Issue.record("unexpected error: \(text)")
        case .shutDown: Issue.record("impossible")
        }
        #expect(log.count(of: "willRemove Gated") == log.count(of: "didAdd Gated"), "\(log.all)")
        #expect(log.count(of: "willRemove Store") == 1)
        if log.count(of: "didAdd Gated") == 1 {
            #expect(try lhPosition("willRemove Gated", in: log) < lhPosition("willRemove Store", in: log))
        } else {
            // Not started: then nothing may start it later.
            try await Task.sleep(for: .milliseconds(50))
            #expect(log.count(of: "didAdd Gated") == 0)
        }
    }

    @Test func firstUsesRacingScopeCloseEndWithTheValueOrScopeClosedAndBalancedHooks() async throws {
        for round in 0..<40 {
            let log = EventLog()
            let carts = Tally()
            var builder = ServiceGraph.Builder()
            builder.provide(LHSessionKey.self, lifetime: .scoped) { HookedService("Session", log: log) }
            builder.provide(LHCartKey.self, lifetime: .scoped, dependsOn: LHSessionKey.self) { _ in
                carts.increment()
                if round.isMultiple(of: 3) { try await Task.sleep(for: .microseconds(200)) }
                for _ in 0..<(round % 5) { await Task.yield() }
                return HookedService("Cart", log: log)
            }
            builder.provide(LHCartHolderKey.self, lifetime: .scoped, dependsOn: Lazy<LHCartKey>.self) {
                LHHolds(lazy: $0)
            }
            let graph = try await builder.build()
            let scope = try graph.makeScope()
            let holder = try await scope.resolve(LHCartHolderKey.self)
            let values = try await lhRaceFirstUses(round: round, expecting: .scopeClosed) {
                try await scope.close()
            } use: { index in
                index.isMultiple(of: 2) ? try await holder.lazy.value : try await scope.resolve(LHCartKey.self)
            }
            #expect(values.allSatisfy { $0 === values[0] }, "round \(round)")
            #expect(carts.count <= 1, "round \(round)")
            let didAdd = log.count(of: "didAdd Cart")
            #expect(log.count(of: "willRemove Cart") == didAdd, "round \(round): \(log.all)")
            #expect(log.count(of: "willRemove Session") == log.count(of: "didAdd Session"), "round \(round)")
            if !values.isEmpty { #expect(didAdd == 1, "round \(round)") }
            if didAdd == 1 {
                #expect(
                    try lhPosition("willRemove Cart", in: log) < lhPosition("willRemove Session", in: log),
                    "round \(round): \(log.all)"
                )
            }
            if !holder.lazy.isMade {
                let late = await #expect(throws: ServiceGraphError.self) { try await holder.lazy.value }
                #expect(late?.codes == [.scopeClosed])
            }
            try await withDeadline { try await graph.shutdown() }
        }
    }

    @Test func aHandleUsedAfterShutdownIsRefusedAndAMadeOneStaysReadable() async throws {
        let log = EventLog()
        let made = Tally()
        let graph = try await lhHeavyBuilder(log: log, made: made).build()
        let madePanel = try await graph.resolve(LHPanelKey.self)
        let unmadePanel = try await graph.resolve(LHPanelKey.self)
        let heavy = try await madePanel.lazy.value
        try await graph.shutdown()
        #expect(try await madePanel.lazy.value === heavy)
        #expect(madePanel.lazy.isMade)
        for _ in 0..<3 {
            let error = await #expect(throws: ServiceGraphError.self) { try await unmadePanel.lazy.value }
            #expect(error?.codes == [.graphShutDown])
        }
        #expect(!unmadePanel.lazy.isMade)
        #expect(made.count == 1, "no factory runs after shutdown")
        #expect(log.count(of: "willRemove Heavy") == 1)
    }

    // MARK: Cancellation

    @Test func cancellingTheFirstUserPartWayLetsTheOthersHaveTheValue() async throws {
        let log = EventLog()
        let gate = Gate()
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(LHGatedKey.self) { () async -> HookedService in
            let attempt = made.increment()
            log.record("entered \(attempt)")
            await gate.wait()
            return HookedService("Gated#\(attempt)", log: log)
        }
        builder.provide(LHGatedHolderKey.self, dependsOn: Lazy<LHGatedKey>.self) { LHHolds(lazy: $0) }
        let graph = try await builder.build()
        let holder = graph[LHGatedHolderKey.self]
        let first = Task { await LHOutcome { try await holder.lazy.value } }
        try await log.waitFor("entered 1")
        let others = (0..<30).map { index in
            Task {
                await LHOutcome {
                    index.isMultiple(of: 2) ? try await holder.lazy.value : try await graph.resolve(LHGatedKey.self)
                }
            }
        }
        try await Task.sleep(for: .milliseconds(30))
        first.cancel()
        try await Task.sleep(for: .milliseconds(30))
        await gate.open()
        var values: [HookedService] = []
        for other in others {
            let outcome = try await withDeadline { await other.value }
            switch outcome {
            case .value(let value): values.append(value)
            case .refused(let codes): Issue.record("a waiter was refused: \(codes)")
            case .other(let text): Issue.record("a waiter failed: \(text)")
            case .shutDown: break
            }
        }
        #expect(values.count == 30)
        #expect(values.allSatisfy { $0 === values.first })
        let firstOutcome = try await withDeadline { await first.value }
        if case .value(let value) = firstOutcome {
            #expect(value === values.first)
        }
        #expect(made.count == 1, "the cancelled first user's creation was not redone: \(log.all)")
        #expect(log.count(of: "didAdd Gated#1") == 1)
        #expect(holder.lazy.isMade)
        #expect(try await holder.lazy.value === values.first)
        try await graph.shutdown()
        #expect(log.all.filter { $0.hasPrefix("willRemove") } == ["willRemove Gated#1"])
    }

    @Test func anAlreadyCancelledTaskDoesNotPoisonTheHandle() async throws {
        let log = EventLog()
        let made = Tally()
        // The factory sleeps: in a cancelled context the sleep throws.
        let graph = try await lhHeavyBuilder(log: log, made: made) {
            try await Task.sleep(for: .milliseconds(5))
        }.build()
        let screen = graph[LHScreenKey.self]
        for _ in 0..<5 {
            let cancelled = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await LHOutcome { try await screen.lazy.value }
            }
            _ = await cancelled.value
        }
        let heavy = try await withDeadline { try await screen.lazy.value }
        #expect(heavy.name == "Heavy")
        #expect(screen.lazy.isMade)
        #expect(try await graph.resolve(LHHeavyKey.self) === heavy)
        #expect(log.count(of: "didAdd Heavy") == 1)
        try await graph.shutdown()
        #expect(log.count(of: "willRemove Heavy") == 1)
    }

    @Test func everyAskerCancelledStillLeavesOneInstanceForTheNext() async throws {
        let log = EventLog()
        let gate = Gate()
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(LHGatedKey.self) { () async -> HookedService in
            let attempt = made.increment()
            log.record("entered \(attempt)")
            await gate.wait()
            return HookedService("Gated#\(attempt)", log: log)
        }
        builder.provide(LHGatedHolderKey.self, dependsOn: Lazy<LHGatedKey>.self) { LHHolds(lazy: $0) }
        let graph = try await builder.build()
        let holder = graph[LHGatedHolderKey.self]
        let askers = (0..<10).map { _ in Task { await LHOutcome { try await holder.lazy.value } } }
        try await log.waitFor("entered 1")
        try await Task.sleep(for: .milliseconds(20))
        for asker in askers { asker.cancel() }
        await gate.open()
        for asker in askers { _ = try await withDeadline { await asker.value } }
        let value = try await withDeadline { try await holder.lazy.value }
        #expect(try await graph.resolve(LHGatedKey.self) === value)
        let started = log.all.filter { $0.hasPrefix("didAdd") }
        #expect(started.count == 1, "one instance started: \(log.all)")
        try await graph.shutdown()
        #expect(log.all.filter { $0.hasPrefix("willRemove") }.count == 1, "\(log.all)")
    }

    // MARK: Failures and retries

    @Test func aFactoryThatThrowsIsRetriedByTheHandleAndByTheGraph() async throws {
        let log = EventLog()
        let attempts = Tally()
        let graph = try await lhHeavyBuilder(log: log, made: attempts) {
            if attempts.count <= 2 { throw TestFailure("attempt \(attempts.count)") }
        }.build()
        let screen = graph[LHScreenKey.self]
        let first = await #expect(throws: ServiceGraphError.self) { try await screen.lazy.value }
        #expect(first?.codes == [.factoryFailed])
        #expect(first?.problems.first?.key == "LHHeavyKey")
        #expect((first?.problems.first?.underlyingError as? TestFailure) == TestFailure("attempt 1"))
        #expect(!screen.lazy.isMade)
        let second = await #expect(throws: ServiceGraphError.self) { try await graph.resolve(LHHeavyKey.self) }
        #expect(second?.codes == [.factoryFailed])
        let blocked = #expect(throws: ServiceGraphError.self) { try graph.resolveSynchronously(LHHeavyKey.self) }
        #expect(blocked?.codes == [.requiresAwait], "a failed creation is not kept")
        let heavy = try await screen.lazy.value
        #expect(attempts.count == 3)
        #expect(try await graph.resolve(LHHeavyKey.self) === heavy)
        #expect(log.count(of: "didAdd Heavy") == 1)
        try await graph.shutdown()
        #expect(log.count(of: "willRemove Heavy") == 1)
    }

    @Test func concurrentUsersOfAFailingFirstAttemptSeeTheFailureOrTheRetriedValue() async throws {
        let log = EventLog()
        let attempts = Tally()
        let graph = try await lhHeavyBuilder(log: log, made: attempts) {
            try await Task.sleep(for: .milliseconds(10))
            if attempts.count == 1 { throw TestFailure("first attempt") }
        }.build()
        let screen = graph[LHScreenKey.self]
        let outcomes = try await withDeadline {
            await withTaskGroup(of: LHOutcome.self) { group in
                for _ in 0..<100 { group.addTask { await LHOutcome { try await screen.lazy.value } } }
                return await group.reduce(into: [LHOutcome]()) { $0.append($1) }
            }
        }
        var values: [HookedService] = []
        for outcome in outcomes {
            switch outcome {
            case .value(let value): values.append(value)
            case .refused(let codes): #expect(codes == [.factoryFailed])
            case .other(let text): Issue.record("\(text)")
            case .shutDown: break
            }
        }
        let heavy = try await screen.lazy.value
        #expect(values.allSatisfy { $0 === heavy })
        #expect(log.count(of: "didAdd Heavy") == 1)
        #expect(attempts.count == 2, "one failed attempt shared by its waiters, then one success")
        try await graph.shutdown()
        #expect(log.count(of: "willRemove Heavy") == 1)
    }

    @Test func aDidAddThatThrowsKeepsNothingRunsNoWillRemoveAndTheNextUseRetries() async throws {
        let log = EventLog()
        let attempts = Tally()
        let instances = WeakRegistry()
        var builder = ServiceGraph.Builder()
        builder.provide(LHStoreKey.self) { HookedService("Store", log: log) }
        builder.provide(LHFlakyKey.self, dependsOn: LHStoreKey.self) { _ in
            let attempt = attempts.increment()
            return instances.track(HookedService("Flaky#\(attempt)", log: log, failDidAdd: attempt == 1))
        }
        builder.provide(LHFlakyHolderKey.self, dependsOn: Lazy<LHFlakyKey>.self) { LHHolds(lazy: $0) }
        let graph = try await builder.build()
        let holder = graph[LHFlakyHolderKey.self]
        do {
            let error = await #expect(throws: ServiceGraphError.self) { try await holder.lazy.value }
            #expect(error?.codes == [.didAddFailed])
            #expect(error?.problems.first?.key == "LHFlakyKey")
        }
        #expect(!holder.lazy.isMade)
        let blocked = #expect(throws: ServiceGraphError.self) { try graph.resolveSynchronously(LHFlakyKey.self) }
        #expect(blocked?.codes == [.requiresAwait])
        #expect(try await lhEventually { instances.alive == 0 }, "the instance whose didAdd threw is released")
        let retried = try await holder.lazy.value
        #expect(retried.name == "Flaky#2")
        #expect(try await graph.resolve(LHFlakyKey.self) === retried)
        #expect(graph[LHFlakyKey.self] === retried)
        try await graph.shutdown()
        #expect(log.count(of: "willRemove Flaky#1") == 0, "never started, never removed")
        #expect(log.count(of: "willRemove Flaky#2") == 1)
        #expect(try lhPosition("willRemove Flaky#2", in: log) < lhPosition("willRemove Store", in: log))
    }

    @Test func aHangingFactoryTimesOutTheRetrySucceedsAndTheGraphStillShutsDown() async throws {
        let log = EventLog()
        let gate = Gate()
        let attempts = Tally()
        var builder = ServiceGraph.Builder()
        builder.factoryTimeout = .milliseconds(100)
        builder.provide(LHStoreKey.self) { HookedService("Store", log: log) }
        builder.provide(LHHangingKey.self, dependsOn: LHStoreKey.self) { _ in
            let attempt = attempts.increment()
            if attempt == 1 { await gate.wait() }  // ignores cancellation
            return HookedService("Hanging#\(attempt)", log: log)
        }
        builder.provide(LHHangingHolderKey.self, dependsOn: Lazy<LHHangingKey>.self) { LHHolds(lazy: $0) }
        let graph = try await builder.build()
        let holder = graph[LHHangingHolderKey.self]
        let error = try await withDeadline {
            await #expect(throws: ServiceGraphError.self) { try await holder.lazy.value }
        }
        #expect(error?.codes == [.factoryTimedOut])
        #expect(error?.problems.first?.key == "LHHangingKey")
        #expect(!holder.lazy.isMade)
        let retried = try await withDeadline { try await holder.lazy.value }
        #expect(retried.name == "Hanging#2")
        #expect(try await graph.resolve(LHHangingKey.self) === retried)
        try await withDeadline { try await graph.shutdown() }
        #expect(log.count(of: "willRemove Hanging#2") == 1)
        await gate.open()
        try await Task.sleep(for: .milliseconds(50))
        #expect(log.count(of: "didAdd Hanging#1") == 0, "the abandoned instance is never started")
        #expect(log.count(of: "willRemove Hanging#1") == 0)
        #expect(log.count(of: "willRemove Store") == 1)
    }

    @Test func aHangingFactoryNeverUnblockedDoesNotHangShutdown() async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.factoryTimeout = .milliseconds(100)
        builder.provide(LHStoreKey.self) { HookedService("Store", log: log) }
        builder.provide(LHHangingKey.self, dependsOn: LHStoreKey.self) { _ in
            await gate.wait()
            return HookedService("Hanging", log: log)
        }
        builder.provide(LHHangingHolderKey.self, dependsOn: Lazy<LHHangingKey>.self) { LHHolds(lazy: $0) }
        let graph = try await builder.build()
        let holder = graph[LHHangingHolderKey.self]
        // Many users at once: all get the timeout, none waits forever.
        let outcomes = try await withDeadline {
            await withTaskGroup(of: LHOutcome.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        await LHOutcome {
                            index.isMultiple(of: 2)
                                ? try await holder.lazy.value : try await graph.resolve(LHHangingKey.self)
                        }
                    }
                }
                return await group.reduce(into: [LHOutcome]()) { $0.append($1) }
            }
        }
        for outcome in outcomes {
            guard case .refused(let codes) = outcome else {
                Issue.record("expected a timeout, got \(outcome)")
                continue
            }
            #expect(codes == [.factoryTimedOut])
        }
        try await withDeadline { try await graph.shutdown() }
        let late = await #expect(throws: ServiceGraphError.self) { try await holder.lazy.value }
        #expect(late?.codes == [.graphShutDown])
        await gate.open()
        try await Task.sleep(for: .milliseconds(50))
        #expect(log.count(of: "didAdd Hanging") == 0)
    }

    // MARK: Chains and teardown order

    /// Root (built) →lazy A; A → D, A →lazy B; B → C; D → C; C → Base (built). A, B, C and D are all
    /// only reached through lazy edges or from each other: none is built.
    private func chainBuilder(log: EventLog) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(LHBaseKey.self) { LHNode("Base", log: log) }
        builder.provide(LHRootKey.self, dependsOn: Lazy<LHChainAKey>.self, LHBaseKey.self) { lazy, _ in
            LHNode("Root", log: log, next: lazy)
        }
        builder.provide(LHChainAKey.self, dependsOn: Lazy<LHChainBKey>.self, LHChainDKey.self) { lazy, _ in
            LHNode("A", log: log, next: lazy)
        }
        builder.provide(LHChainBKey.self, dependsOn: LHChainCKey.self) { _ in LHNode("B", log: log) }
        builder.provide(LHChainDKey.self, dependsOn: LHChainCKey.self) { _ in LHNode("D", log: log) }
        builder.provide(LHChainCKey.self, dependsOn: LHBaseKey.self) { _ in LHNode("C", log: log) }
        return builder
    }

    private func checkChainTeardown(_ log: EventLog) throws {
        let removals = log.all.filter { $0.hasPrefix("willRemove") }
        #expect(removals.count == 6, "\(removals)")
        #expect(Set(removals).count == 6, "each removed once: \(removals)")
        func at(_ name: String) throws -> Int { try lhPosition("willRemove \(name)", in: log) }
        // Released after everything that holds it, before what it uses.
        for (holder, held) in [("Root", "A"), ("A", "B"), ("A", "D"), ("B", "C"), ("D", "C"), ("C", "Base")] {
            #expect(try at(holder) < at(held), "\(holder) holds \(held): \(removals)")
        }
        #expect(try lhPosition("Root saw A", in: log) < at("A"))
        #expect(try lhPosition("A saw B", in: log) < at("B"))
    }

    @Test func aChainOfLazySingletonsIsCreatedPieceByPieceAndReleasedHolderFirst() async throws {
        let log = EventLog()
        let graph = try await chainBuilder(log: log).build()
        #expect(log.all.filter { $0.hasPrefix("init") } == ["init Base", "init Root"], "the build makes only these")
        let root = graph[LHRootKey.self]
        let a = try await root.nextValue()
        #expect(a.name == "A")
        // A's direct dependencies come first, started before A is made; B stays alone.
        #expect(try lhPosition("didAdd C", in: log) < lhPosition("init D", in: log))
        #expect(try lhPosition("didAdd D", in: log) < lhPosition("init A", in: log))
        #expect(log.count(of: "init B") == 0)
        #expect(!a.nextIsMade)
        // B is made after A: created later, but A holds it, so A must go first.
        let b = try await a.nextValue()
        #expect(b.name == "B")
        #expect(log.count(of: "init C") == 1, "C is shared, made once")
        #expect(try graph.resolveSynchronously(LHChainBKey.self) === b)
        try await graph.shutdown()
        try checkChainTeardown(log)
    }

    @Test func aChainUsedFromItsFarEndFirstIsStillReleasedHolderFirst() async throws {
        let log = EventLog()
        let graph = try await chainBuilder(log: log).build()
        let b = try await graph.resolve(LHChainBKey.self)
        #expect(log.count(of: "init A") == 0 && log.count(of: "init D") == 0)
        let a = try await graph[LHRootKey.self].nextValue()
        #expect(try await a.nextValue() === b)
        #expect(log.count(of: "init C") == 1)
        try await graph.shutdown()
        try checkChainTeardown(log)
    }

    @Test func aChainFirstUsedConcurrentlyFromBothEndsCreatesEachOnce() async throws {
        let log = EventLog()
        let graph = try await chainBuilder(log: log).build()
        let root = graph[LHRootKey.self]
        try await withDeadline {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<120 {
                    group.addTask {
                        switch index % 4 {
                        case 0: _ = try await root.nextValue().nextValue()
                        case 1: _ = try await graph.resolve(LHChainBKey.self)
                        case 2: _ = try await graph.resolve(LHChainDKey.self)
                        default: _ = try await graph.resolve(LHChainCKey.self)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        for name in ["A", "B", "C", "D"] {
            #expect(log.count(of: "init \(name)") == 1, "\(name)")
            #expect(log.count(of: "didAdd \(name)") == 1, "\(name)")
        }
        try await graph.shutdown()
        try checkChainTeardown(log)
    }

    @Test func aLazySingletonSharedByTwoHoldersIsReleasedAfterBoth() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(LHSharedKey.self) { LHNode("Shared", log: log) }
        builder.provide(LHLeftKey.self, dependsOn: Lazy<LHSharedKey>.self) { LHNode("Left", log: log, next: $0) }
        builder.provide(LHRightKey.self, dependsOn: Lazy<LHSharedKey>.self) { LHNode("Right", log: log, next: $0) }
        let graph = try await builder.build()
        let left = graph[LHLeftKey.self]
        let right = graph[LHRightKey.self]
        let pair = try await withDeadline {
            async let fromLeft = left.nextValue()
            async let fromRight = right.nextValue()
            return try await (fromLeft, fromRight)
        }
        #expect(pair.0 === pair.1)
        #expect(log.count(of: "init Shared") == 1)
        try await graph.shutdown()
        let shared = try lhPosition("willRemove Shared", in: log)
        #expect(try lhPosition("willRemove Left", in: log) < shared)
        #expect(try lhPosition("willRemove Right", in: log) < shared)
        #expect(try lhPosition("Left saw Shared", in: log) < shared)
        #expect(try lhPosition("Right saw Shared", in: log) < shared)
    }

    @Test func aLazySingletonWithADirectDependentIsBuiltEagerly() async throws {
        let log = EventLog()
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(LHEagerTargetKey.self) {
            made.increment()
            return HookedService("Target", log: log)
        }
        builder.provide(LHEagerLazyHolderKey.self, dependsOn: Lazy<LHEagerTargetKey>.self) { LHHolds(lazy: $0) }
        builder.provide(LHEagerDirectHolderKey.self, dependsOn: LHEagerTargetKey.self) { target in
            HookedService("Direct holder of \(target.name)", log: log)
        }
        let graph = try await builder.build()
        #expect(made.count == 1, "a direct edge reaches it: the build makes it")
        #expect(log.count(of: "didAdd Target") == 1)
        #expect(try lhPosition("didAdd Target", in: log) < lhPosition("init Direct holder of Target", in: log))
        let target = try graph.resolveSynchronously(LHEagerTargetKey.self)
        #expect(graph[LHEagerTargetKey.self] === target)
        #expect(try await graph[LHEagerLazyHolderKey.self].lazy.value === target)
        #expect(made.count == 1)
        #expect(graph.initializationOrder.contains("LHEagerTargetKey"))
        #expect(graph.dump(.json).contains("\"createdOnFirstUse\": false"))
        #expect(!graph.dump(.text).contains("created on first use"), "nothing is created on first use")
        try await graph.shutdown()
        #expect(log.count(of: "willRemove Target") == 1)
    }

    // MARK: Synchronous reads

    @Test func synchronousReadsOfALazySingletonRequireAwaitUntilCreatedThenReturnIt() async throws {
        let log = EventLog()
        let made = Tally()
        let graph = try await lhHeavyBuilder(log: log, made: made).build()
        let scope = try graph.makeScope()
        for _ in 0..<2 {
            let fromGraph = #expect(throws: ServiceGraphError.self) { try graph.resolveSynchronously(LHHeavyKey.self) }
            #expect(fromGraph?.codes == [.requiresAwait])
            let fromScope = #expect(throws: ServiceGraphError.self) { try scope.resolveSynchronously(LHHeavyKey.self) }
            #expect(fromScope?.codes == [.requiresAwait])
        }
        #expect(made.count == 0, "a refused synchronous read creates nothing")
        let heavy = try await scope.resolve(LHHeavyKey.self)
        #expect(try graph.resolveSynchronously(LHHeavyKey.self) === heavy)
        #expect(try scope.resolveSynchronously(LHHeavyKey.self) === heavy)
        #expect(graph[LHHeavyKey.self] === heavy)
        #expect(scope[LHHeavyKey.self] === heavy)
        #expect(try await graph[LHScreenKey.self].lazy.value === heavy)
        try await scope.close()
        #expect(log.count(of: "willRemove Heavy") == 0, "a singleton outlives the scope that made it")
        try await graph.shutdown()
        #expect(log.count(of: "willRemove Heavy") == 1)
        #expect(made.count == 1)
    }

    // MARK: Transients, scoped services and seeds

    @Test func aLazyTransientKeepsOneInstancePerHandleEvenUnderConcurrency() async throws {
        let made = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(LHDraftKey.self, lifetime: .transient) { () async throws -> LHCounted in
            try await Task.sleep(for: .milliseconds(5))
            return LHCounted(id: made.increment())
        }
        builder.provide(LHDraftHolderKey.self, lifetime: .transient, dependsOn: Lazy<LHDraftKey>.self) {
            LHHolds(lazy: $0)
        }
        let graph = try await builder.build()
        let holders = try await (0..<10).asyncMap { _ in try await graph.resolve(LHDraftHolderKey.self) }
        #expect(made.count == 0)
        let ids = try await withDeadline {
            try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                for index in 0..<200 {
                    group.addTask { (index % 10, try await holders[index % 10].lazy.value.id) }
                }
                return try await group.reduce(into: [Int: Set<Int>]()) { $0[$1.0, default: []].insert($1.1) }
            }
        }
        #expect(ids.count == 10)
        #expect(ids.values.allSatisfy { $0.count == 1 }, "one instance per handle: \(ids)")
        #expect(Set(ids.values.flatMap { $0 }).count == 10, "a different instance for each handle")
        #expect(made.count == 10)
        try await graph.shutdown()
    }

    @Test func aLazyScopedServiceIsTheScopesInstanceForEveryConcurrentUser() async throws {
        let log = EventLog()
        let carts = Tally()
        var builder = ServiceGraph.Builder()
        builder.provide(LHSessionKey.self, lifetime: .scoped) { HookedService("Session", log: log) }
        builder.provide(LHCartKey.self, lifetime: .scoped, dependsOn: LHSessionKey.self) { _ in
            try await Task.sleep(for: .milliseconds(5))
            return HookedService("Cart#\(carts.increment())", log: log)
        }
        builder.provide(LHCartHolderKey.self, lifetime: .transient, dependsOn: Lazy<LHCartKey>.self) {
            LHHolds(lazy: $0)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let other = try graph.makeScope()
        let holders = try await (0..<10).asyncMap { _ in try await scope.resolve(LHCartHolderKey.self) }
        let seen = try await withDeadline {
            try await withThrowingTaskGroup(of: HookedService.self) { group in
                for index in 0..<150 {
                    group.addTask {
                        index % 3 == 0
                            ? try await scope.resolve(LHCartKey.self) : try await holders[index % 10].lazy.value
                    }
                }
                return try await group.reduce(into: [HookedService]()) { $0.append($1) }
            }
        }
        #expect(seen.allSatisfy { $0 === seen[0] })
        #expect(carts.count == 1)
        let otherCart = try await other.resolve(LHCartHolderKey.self).lazy.value
        #expect(otherCart !== seen[0], "a handle made in another scope resolves there")
        try await scope.close()
        #expect(log.count(of: "willRemove Cart#1") == 1)
        #expect(log.count(of: "willRemove Cart#2") == 0)
        try await other.close()
        try await graph.shutdown()
        #expect(log.count(of: "willRemove Cart#2") == 1)
    }

    @Test func aLazySeedReadsItsOwnScopesSeed() async throws {
        var builder = ServiceGraph.Builder()
        builder.seed(LHRequestKey.self)
        builder.provide(LHRequestHolderKey.self, lifetime: .scoped, dependsOn: Lazy<LHRequestKey>.self) {
            LHHolds(lazy: $0)
        }
        builder.provide(LHGreetingKey.self, lifetime: .transient, dependsOn: LHRequestKey.self) { "hello \($0)" }
        builder.provide(LHGreetingHolderKey.self, lifetime: .transient, dependsOn: Lazy<LHGreetingKey>.self) {
            LHHolds(lazy: $0)
        }
        let graph = try await builder.build()
        let ada = try graph.makeScope(seeding: ScopeSeed(LHRequestKey.self, "ada"))
        let bob = try graph.makeScope(seeding: ScopeSeed(LHRequestKey.self, "bob"))
        let adaHolder = try await ada.resolve(LHRequestHolderKey.self)
        let bobHolder = try await bob.resolve(LHRequestHolderKey.self)
        let greetings = try await (ada.resolve(LHGreetingHolderKey.self), bob.resolve(LHGreetingHolderKey.self))
        let reads = try await withDeadline {
            try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        index.isMultiple(of: 2) ? try await adaHolder.lazy.value : try await bobHolder.lazy.value
                    }
                }
                return try await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
            }
        }
        #expect(reads == ["ada": 50, "bob": 50])
        #expect(try await greetings.0.lazy.value == "hello ada")
        #expect(try await greetings.1.lazy.value == "hello bob")
        // A handle on a seed, first used after its scope closed, is refused.
        let late = try await ada.resolve(LHGreetingHolderKey.self)
        try await ada.close()
        #expect(try await adaHolder.lazy.value == "ada", "made before: still readable")
        let error = await #expect(throws: ServiceGraphError.self) { try await late.lazy.value }
        #expect(error?.codes == [.scopeClosed])
        try await bob.close()
        try await graph.shutdown()
    }

    @Test func aHandleOnASingletonMadeInAScopeIsRefusedAfterTheScopeClosed() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(LHConfigKey.self) { LHNode("Config", log: log) }
        builder.provide(LHConfigHolderKey.self, lifetime: .scoped, dependsOn: Lazy<LHConfigKey>.self) {
            LHHolds(lazy: $0)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let used = try await scope.resolve(LHConfigHolderKey.self)
        let config = try await used.lazy.value
        let second = try graph.makeScope()
        let unused = try await second.resolve(LHConfigHolderKey.self)
        try await scope.close()
        try await second.close()
        #expect(log.count(of: "willRemove Config") == 0, "the graph's singleton outlives the scope")
        #expect(try await used.lazy.value === config)
        let error = await #expect(throws: ServiceGraphError.self) { try await unused.lazy.value }
        #expect(error?.codes == [.scopeClosed], "a handle made in a scope resolves in that scope")
        #expect(try await graph.resolve(LHConfigKey.self) === config)
        try await graph.shutdown()
        #expect(log.count(of: "willRemove Config") == 1)
    }

    // MARK: Child graphs

    @Test func aChildSharesTheParentsLazySingletonCreatedOnceAcrossBothGraphs() async throws {
        let log = EventLog()
        let made = Tally()
        let parent = try await lhHeavyBuilder(log: log, made: made) {
            try await Task.sleep(for: .milliseconds(10))
        }.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(LHChildUserKey.self, dependsOn: Lazy<LHHeavyKey>.self) { LHHolds(lazy: $0) }
        let child = try await childBuilder.build()
        #expect(made.count == 0, "building the child creates nothing in the parent")
        let childUser = child[LHChildUserKey.self]
        let parentScreen = parent[LHScreenKey.self]
        let seen = try await withDeadline {
            try await withThrowingTaskGroup(of: HookedService.self) { group in
                for index in 0..<120 {
                    group.addTask {
                        switch index % 4 {
                        case 0: return try await childUser.lazy.value
                        case 1: return try await parentScreen.lazy.value
                        case 2: return try await child.resolve(LHHeavyKey.self)
                        default: return try await parent.resolve(LHHeavyKey.self)
                        }
                    }
                }
                return try await group.reduce(into: [HookedService]()) { $0.append($1) }
            }
        }
        #expect(seen.allSatisfy { $0 === seen[0] })
        #expect(made.count == 1)
        #expect(log.count(of: "didAdd Heavy") == 1)
        try await child.shutdown()
        #expect(log.count(of: "willRemove Heavy") == 0, "the parent owns it")
        #expect(try await parentScreen.lazy.value === seen[0])
        try await parent.shutdown()
        #expect(log.count(of: "willRemove Heavy") == 1)
        #expect(try lhPosition("willRemove Heavy", in: log) < lhPosition("willRemove Store", in: log))
    }

    @Test func aChildsDeferredSingletonOnTheParentsLazyOneCreatesEachInItsOwnGraph() async throws {
        let log = EventLog()
        let made = Tally()
        let parent = try await lhHeavyBuilder(log: log, made: made).build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(LHChildDeferredKey.self, dependsOn: LHHeavyKey.self) { heavy in
            HookedService("Child on \(heavy.name)", log: log)
        }
        childBuilder.provide(LHChildDeferredHolderKey.self, dependsOn: Lazy<LHChildDeferredKey>.self) {
            LHHolds(lazy: $0)
        }
        let child = try await childBuilder.build()
        #expect(made.count == 0)
        #expect(log.count(of: "init Child on Heavy") == 0, "the child's deferred singleton is not built")
        let deferred = try await child[LHChildDeferredHolderKey.self].lazy.value
        #expect(deferred.name == "Child on Heavy")
        #expect(made.count == 1)
        #expect(try parent.resolveSynchronously(LHHeavyKey.self).name == "Heavy", "created in the parent")
        try await child.shutdown()
        #expect(log.count(of: "willRemove Child on Heavy") == 1)
        #expect(log.count(of: "willRemove Heavy") == 0)
        try await parent.shutdown()
        #expect(log.count(of: "willRemove Heavy") == 1)
        #expect(log.count(of: "willRemove Child on Heavy") == 1)
    }

    // MARK: Released graphs

    @Test func aHandleOutlivingItsReleasedGraphIsRefusedAndAMadeValueStaysReadable() async throws {
        let log = EventLog()
        let made = Tally()
        var builder = lhHeavyBuilder(log: log, made: made)
        builder.requiresShutdown = false
        var graph: ServiceGraph? = try await builder.build()
        weak let released = graph
        let madePanel = try await graph!.resolve(LHPanelKey.self)
        let unmadePanel = try await graph!.resolve(LHPanelKey.self)
        let heavy = try await madePanel.lazy.value
        graph = nil
        #expect(try await lhEventually { released == nil }, "the handles do not keep the graph alive")
        #expect(try await madePanel.lazy.value === heavy)
        let error = try await withDeadline {
            await #expect(throws: ServiceGraphError.self) { try await unmadePanel.lazy.value }
        }
        #expect(error?.codes == [.graphShutDown])
        #expect(made.count == 1, "no creation through a released graph")
        #expect(!unmadePanel.lazy.isMade)
    }

    // MARK: Scale

    @Test func tenThousandLazySingletonsAreNotBuiltThenAllUsedConcurrently() async throws {
        let count = 10_000
        let recorder = GraphRecorder()
        var builder = ServiceGraph.Builder()
        for index in 0..<count {
            func open<K: GeneratedKey>(_ key: K.Type) {
                lhProvideLazyGenerated(key, index: index, recorder: recorder, into: &builder)
            }
            open(GeneratedKeys.key(index))
        }
        let frozen = builder
        let graph = try await withDeadline(.seconds(120)) { try await frozen.build() }
        #expect(recorder.events.isEmpty, "the build creates none of them")
        #expect(graph.initializationOrder.count == count, "only the holders")
        let holders: [LHGeneratedHolder] = (0..<count).map { index in
            func open<K: GeneratedKey>(_ key: K.Type) -> LHGeneratedHolder { graph[LHGeneratedHolderKey<K>.self] }
            return open(GeneratedKeys.key(index))
        }
        let mismatches = try await withDeadline(.seconds(120)) {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<count {
                    group.addTask { try await holders[index].use().index == index ? 0 : 1 }
                    group.addTask {
                        func open<K: GeneratedKey>(_ key: K.Type) async throws -> Int {
                            try await graph.resolve(key).index
                        }
                        return try await open(GeneratedKeys.key(index)) == index ? 0 : 1
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        #expect(mismatches == 0)
        let events = recorder.events
        let created = events.filter { if case .created = $0 { true } else { false } }
        let added = events.filter { if case .didAdd = $0 { true } else { false } }
        #expect(created.count == count, "each created once")
        #expect(added.count == count, "each started once")
        #expect(holders.allSatisfy { $0.isMade() })
        try await withDeadline(.seconds(120)) { try await graph.shutdown() }
        let removed = recorder.events.filter { if case .willRemove = $0 { true } else { false } }
        #expect(removed.count == count, "each removed once")
        #expect(Set(removed.map { "\($0)" }).count == count)
    }

    // MARK: Dumps

    @Test func everyDumpFormatDrawsTheLazyEdgesBetweenTheRightServices() async throws {
        let log = EventLog()
        let graph = try await chainBuilder(log: log).build()
        let text = graph.dump(.text, includingTimings: false)
        #expect(text.contains("(lazy) LHChainAKey"), "\(text)")
        #expect(text.contains("(lazy) LHChainBKey"), "\(text)")
        #expect(!text.contains("(lazy) LHChainDKey") && !text.contains("(lazy) LHChainCKey"), "\(text)")
        #expect(text.contains("4 singletons created on first use"), "\(text)")

        struct Dump: Decodable {
            struct Service: Decodable {
                let id: Int
                let key: String
                let dependencies: [String]
                let dependencyKinds: [String]
                let createdOnFirstUse: Bool
                let initializationIndex: Int?
            }
            let services: [Service]
            let initializationOrder: [String]
        }
        func decode() throws -> Dump { try JSONDecoder().decode(Dump.self, from: Data(graph.dump(.json).utf8)) }
        let json = try decode()
        let byKey = Dictionary(uniqueKeysWithValues: json.services.map { ($0.key, $0) })
        let expectedLazy: [String: [String]] = [
            "LHRootKey": ["lazy", "direct"], "LHChainAKey": ["lazy", "direct"], "LHChainBKey": ["direct"],
            "LHChainDKey": ["direct"], "LHChainCKey": ["direct"], "LHBaseKey": [],
        ]
        for (key, kinds) in expectedLazy { #expect(byKey[key]?.dependencyKinds == kinds, "\(key)") }
        #expect(byKey["LHRootKey"]?.dependencies == ["LHChainAKey", "LHBaseKey"])
        let deferred = Set(json.services.filter(\.createdOnFirstUse).map(\.key))
        #expect(deferred == ["LHChainAKey", "LHChainBKey", "LHChainCKey", "LHChainDKey"])
        #expect(json.initializationOrder == ["LHBaseKey", "LHRootKey"])

        let ids = Dictionary(uniqueKeysWithValues: json.services.map { ($0.key, "s\($0.id)") })
        func id(_ key: String) throws -> String {
            guard let id = ids[key] else { throw TestFailure("no service \(key) in the JSON dump") }
            return id
        }
        let dot = graph.dump(.dot, includingTimings: false)
        #expect(dot.contains("  \(try id("LHRootKey")) -> \(try id("LHChainAKey")) [style=dashed, label=\"lazy\"];"))
        #expect(dot.contains("  \(try id("LHChainAKey")) -> \(try id("LHChainBKey")) [style=dashed, label=\"lazy\"];"))
        #expect(dot.contains("  \(try id("LHChainAKey")) -> \(try id("LHChainDKey"));\n"))
        #expect(dot.components(separatedBy: "label=\"lazy\"").count - 1 == 2, "exactly two lazy edges: \(dot)")
        let mermaid = graph.dump(.mermaid, includingTimings: false)
        #expect(mermaid.contains("    \(try id("LHRootKey")) -. lazy .-> \(try id("LHChainAKey"))\n"))
        #expect(mermaid.contains("    \(try id("LHChainAKey")) -. lazy .-> \(try id("LHChainBKey"))\n"))
        #expect(mermaid.contains("    \(try id("LHChainBKey")) --> \(try id("LHChainCKey"))\n"))
        #expect(mermaid.components(separatedBy: "-. lazy .->").count - 1 == 2, "exactly two lazy edges: \(mermaid)")

        // Once made, the dumps still draw the edges lazy and show the creation order.
        _ = try await graph[LHRootKey.self].nextValue().nextValue()
        let after = try decode()
        #expect(after.initializationOrder.prefix(2) == ["LHBaseKey", "LHRootKey"])
        #expect(
            Set(after.initializationOrder.dropFirst(2)) == ["LHChainAKey", "LHChainBKey", "LHChainCKey", "LHChainDKey"]
        )
        let order = after.initializationOrder
        #expect(order.firstIndex(of: "LHChainCKey")! < order.firstIndex(of: "LHChainDKey")!)
        #expect(order.firstIndex(of: "LHChainDKey")! < order.firstIndex(of: "LHChainAKey")!)
        #expect(after.services.first { $0.key == "LHRootKey" }?.dependencyKinds == ["lazy", "direct"])
        #expect(graph.dump(.dot).components(separatedBy: "label=\"lazy\"").count - 1 == 2)
        #expect(graph.dump(.text, includingTimings: false).contains("(lazy) LHChainBKey"))
        try await graph.shutdown()
    }

    // MARK: More hostility

    @Test func aFirstUseFromAWillRemoveDuringShutdownNeitherHangsNorBreaksTheOrder() async throws {
        let log = EventLog()
        let made = Tally()
        var builder = lhHeavyBuilder(log: log, made: made)
        builder.provide(LHTeardownUserKey.self, dependsOn: Lazy<LHHeavyKey>.self) {
            LHTeardownUser(lazy: $0, log: log)
        }
        let graph = try await builder.build()
        #expect(made.count == 0)
        try await withDeadline { try await graph.shutdown() }
        let outcome = try #require(log.all.first { $0.hasPrefix("TeardownUser ") }, "\(log.all)")
        if outcome == "TeardownUser got Heavy" {
            // Made during shutdown: then started and removed once, before the store it uses.
            #expect(log.count(of: "didAdd Heavy") == 1)
            #expect(log.count(of: "willRemove Heavy") == 1)
            #expect(try lhPosition("didAdd Heavy", in: log) < lhPosition("willRemove Store", in: log), "\(log.all)")
            #expect(try lhPosition("willRemove Heavy", in: log) < lhPosition("willRemove Store", in: log), "\(log.all)")
        } else {
            #expect(outcome == "TeardownUser refused: [graph shut down]", "\(log.all)")
            #expect(made.count == 0)
            #expect(log.count(of: "willRemove Heavy") == 0)
        }
        #expect(log.count(of: "willRemove Store") == 1)
    }

    @Test func aHiddenCycleThroughALazyHandleIsRefusedNotDeadlocked() async throws {
        let graph = Captured<ServiceGraph>()
        let attempts = Tally()
        var builder = ServiceGraph.Builder()
        // Declared edges show no cycle: X's factory asks the graph for Y, whose factory first-uses a
        // handle on X, which is being made.
        builder.provide(LHSneakyXKey.self) { () async throws -> Int in
            attempts.increment()
            return try await graph.value.resolve(LHSneakyYKey.self) + 1
        }
        builder.provide(LHSneakyXHolderKey.self, dependsOn: Lazy<LHSneakyXKey>.self) { LHHolds(lazy: $0) }
        builder.provide(LHSneakyYKey.self, dependsOn: LHSneakyXHolderKey.self) { holder in
            try await holder.lazy.value + 1
        }
        builder.provide(LHSneakyYHolderKey.self, dependsOn: Lazy<LHSneakyYKey>.self) { LHHolds(lazy: $0) }
        graph.fill(try await builder.build())
        defer { graph.fill(nil) }
        // The holder is only reached from Y, itself created on first use: resolved, not read.
        let holder = try await graph.value.resolve(LHSneakyXHolderKey.self)
        let error = try await withDeadline {
            await #expect(throws: ServiceGraphError.self) { try await holder.lazy.value }
        }
        #expect(error?.codes == [.reentrantResolution], "\(String(describing: error))")
        #expect(attempts.count == 1, "refused, not retried in a loop")
        #expect(!holder.lazy.isMade)
        try await withDeadline { try await graph.value.shutdown() }
    }

    @Test func anEagerSingletonUsingAHandleWhileItsTargetsDependencyIsStillBuildingWaitsForIt() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(LHStoreKey.self) { () async throws -> HookedService in
            try await Task.sleep(for: .milliseconds(50))
            return HookedService("Store", log: log)
        }
        builder.provide(LHHeavyKey.self, dependsOn: LHStoreKey.self) { store in
            HookedService("Heavy on \(store.name)", log: log)
        }
        // The index does not wait for the store: it starts at once, and its first use of the heavy
        // service needs the store, still being made.
        builder.provide(LHIndexKey.self, dependsOn: Lazy<LHHeavyKey>.self) { heavy in
            HookedService("Index of \(try await heavy.value.name)", log: log)
        }
        builder.provide(LHScreenKey.self, dependsOn: Lazy<LHHeavyKey>.self, LHStoreKey.self) { lazy, _ in
            LHHolds(lazy: lazy)
        }
        let frozen = builder
        let graph = try await withDeadline { try await frozen.build() }
        #expect(graph[LHIndexKey.self].name == "Index of Heavy on Store")
        #expect(log.count(of: "init Store") == 1, "the store is made once, by the build")
        #expect(log.count(of: "init Heavy on Store") == 1)
        #expect(try lhPosition("didAdd Store", in: log) < lhPosition("init Heavy on Store", in: log))
        #expect(try await graph[LHScreenKey.self].lazy.value === graph.resolve(LHHeavyKey.self))
        try await graph.shutdown()
        let index = try lhPosition("willRemove Index of Heavy on Store", in: log)
        let heavy = try lhPosition("willRemove Heavy on Store", in: log)
        let store = try lhPosition("willRemove Store", in: log)
        #expect(index < heavy && heavy < store, "\(log.all)")
    }

    @Test func aFailedBuildRemovesALazySingletonAnEagerFactoryCreatedDuringIt() async throws {
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.provide(LHStoreKey.self) { HookedService("Store", log: log) }
        builder.provide(LHHeavyKey.self, dependsOn: LHStoreKey.self) { _ in HookedService("Heavy", log: log) }
        builder.provide(LHIndexKey.self, dependsOn: Lazy<LHHeavyKey>.self) { heavy in
            HookedService("Index of \(try await heavy.value.name)", log: log)
        }
        builder.provide(LHBombKey.self, dependsOn: LHIndexKey.self) { _ in
            throw TestFailure("the build fails after the heavy service was made")
        }
        let frozen = builder
        let error = try await withDeadline {
            await #expect(throws: ServiceGraphError.self) { _ = try await frozen.build() }
        }
        #expect(error?.codes == [.factoryFailed])
        #expect(log.count(of: "didAdd Heavy") == 1)
        _ = try await lhEventually { log.count(of: "willRemove Store") == 1 }
        for name in ["Store", "Heavy", "Index of Heavy"] {
            #expect(log.count(of: "willRemove \(name)") == 1, "\(name): \(log.all)")
        }
        let heavy = try lhPosition("willRemove Heavy", in: log)
        #expect(try lhPosition("willRemove Index of Heavy", in: log) < heavy, "\(log.all)")
        #expect(try heavy < lhPosition("willRemove Store", in: log), "\(log.all)")
    }

    @Test func aLazySingletonInFlightFromAScopeIsTheGraphsAndOutlivesTheScopesClose() async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(LHGatedKey.self) { () async -> HookedService in
            log.record("entered")
            await gate.wait()
            return HookedService("Gated", log: log)
        }
        builder.provide(LHGatedHolderKey.self, lifetime: .scoped, dependsOn: Lazy<LHGatedKey>.self) {
            LHHolds(lazy: $0)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let holder = try await scope.resolve(LHGatedHolderKey.self)
        let user = Task { await LHOutcome { try await holder.lazy.value } }
        try await log.waitFor("entered")
        let close = Task { try await scope.close() }
        try await Task.sleep(for: .milliseconds(30))
        await gate.open()
        let outcome = try await withDeadline { await user.value }
        try await withDeadline { try await close.value }
        switch outcome {
        case .value(let value): #expect(value.name == "Gated")
        case .refused(let codes): #expect(codes == [.scopeClosed])
        case .other(let text): Issue.record("unexpected error: \(text)")
        case .shutDown: Issue.record("impossible")
        }
        #expect(log.count(of: "willRemove Gated") == 0, "a singleton is not removed with a scope")
        #expect(log.count(of: "didAdd Gated") <= 1)
        let fromGraph = try await graph.resolve(LHGatedKey.self)
        #expect(fromGraph.name == "Gated")
        #expect(log.count(of: "init Gated") == 1, "one instance for the graph: \(log.all)")
        try await graph.shutdown()
        #expect(log.count(of: "willRemove Gated") == 1)
    }

    @Test func aLazyScopedServiceInFlightWhenItsScopeClosesIsRemovedOnce() async throws {
        let log = EventLog()
        let gate = Gate()
        var builder = ServiceGraph.Builder()
        builder.provide(LHSessionKey.self, lifetime: .scoped) { HookedService("Session", log: log) }
        builder.provide(LHCartKey.self, lifetime: .scoped, dependsOn: LHSessionKey.self) { _ in
            log.record("entered")
            await gate.wait()
            return HookedService("Cart", log: log)
        }
        builder.provide(LHCartHolderKey.self, lifetime: .scoped, dependsOn: Lazy<LHCartKey>.self) {
            LHHolds(lazy: $0)
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let holder = try await scope.resolve(LHCartHolderKey.self)
        let user = Task { await LHOutcome { try await holder.lazy.value } }
        try await log.waitFor("entered")
        let close = Task { try await scope.close() }
        try await Task.sleep(for: .milliseconds(30))
        await gate.open()
        let outcome = try await withDeadline { await user.value }
        try await withDeadline { try await close.value }
        switch outcome {
        case .value(let value): #expect(value.name == "Cart")
        case .refused(let codes): #expect(codes == [.scopeClosed])
        case .other(let text): Issue.record("unexpected error: \(text)")
        case .shutDown: Issue.record("impossible")
        }
        try await Task.sleep(for: .milliseconds(30))
        #expect(log.count(of: "willRemove Cart") == log.count(of: "didAdd Cart"), "\(log.all)")
        #expect(log.count(of: "willRemove Session") == 1, "\(log.all)")
        if log.count(of: "willRemove Cart") == 1 {
            #expect(try lhPosition("willRemove Cart", in: log) < lhPosition("willRemove Session", in: log))
        }
        try await graph.shutdown()
    }

    @Test func aChildsHandleOnAParentServiceIsRefusedOnceTheChildIsShutDown() async throws {
        let log = EventLog()
        let made = Tally()
        let parent = try await lhHeavyBuilder(log: log, made: made).build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(LHChildUserKey.self, dependsOn: Lazy<LHHeavyKey>.self) { LHHolds(lazy: $0) }
        let child = try await childBuilder.build()
        let childUser = child[LHChildUserKey.self]
        try await child.shutdown()
        let error = await #expect(throws: ServiceGraphError.self) { try await childUser.lazy.value }
        #expect(error?.codes == [.graphShutDown], "the handle's graph is the child")
        #expect(made.count == 0)
        #expect(try await parent.resolve(LHHeavyKey.self).name == "Heavy", "the parent is still up")
        try await parent.shutdown()
        #expect(log.count(of: "willRemove Heavy") == 1)
    }

    // MARK: Validation

    @Test func aCycleMadeOnlyOfLazyEdgesIsStillACycleMarkedLazy() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(LHLoopAKey.self, dependsOn: Lazy<LHLoopBKey>.self) { _ in 1 }
        builder.provide(LHLoopBKey.self, dependsOn: Lazy<LHLoopAKey>.self) { _ in 2 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.cycle])
        let cycle = try #require(error.problems.first)
        #expect(cycle.message.contains("(lazy)"), "\(cycle.message)")
        #expect(cycle.path.first == cycle.path.last, "\(cycle.path)")
        #expect(
            Set(cycle.path.map { $0.replacingOccurrences(of: " (lazy)", with: "") }).isSuperset(of: [
                "LHLoopAKey", "LHLoopBKey",
            ])
        )
        let built = await #expect(throws: ServiceGraphError.self) { _ = try await builder.build() }
        #expect(built?.codes == [.cycle])
    }

    @Test func aServiceLazilyDependingOnItselfIsACycle() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(LHSelfKey.self, dependsOn: Lazy<LHSelfKey>.self) { _ in 1 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.cycle])
        #expect(error.problems.first?.message.contains("(lazy)") == true, "\(error)")
        #expect(error.problems.first?.key == "LHSelfKey")
    }

    @Test func aMissingProviderBehindLazyIsReportedForEveryLifetimeAndInAChild() async throws {
        for lifetime in Lifetime.allCases {
            var builder = ServiceGraph.Builder()
            builder.provide(LHNeedsMissingKey.self, lifetime: lifetime, dependsOn: Lazy<LHMissingKey>.self) { _ in 1 }
            let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
            #expect(error.codes == [.missingProvider], "\(lifetime)")
            #expect(error.problems.first?.key == "LHMissingKey", "\(lifetime)")
            #expect(
                error.problems.first?.message.contains("LHMissingKey has no provider; LHNeedsMissingKey requires it")
                    == true,
                "\(lifetime): \(error)"
            )
        }
        let parent = try await ServiceGraph.Builder().build()
        var child = parent.makeChildBuilder()
        child.provide(LHNeedsMissingKey.self, dependsOn: Lazy<LHMissingKey>.self) { _ in 1 }
        let error = await #expect(throws: ServiceGraphError.self) { _ = try await child.build() }
        #expect(error?.codes == [.missingProvider])
        try await parent.shutdown()
    }

    @Test func aSingletonHoldingALazyScopedServiceDirectlyOrThroughATransientIsCaptive() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(LHScopedThingKey.self, lifetime: .scoped) { 1 }
        builder.provide(LHTransientOnScopedKey.self, lifetime: .transient, dependsOn: LHScopedThingKey.self) { $0 }
        builder.provide(LHCaptorKey.self, dependsOn: Lazy<LHScopedThingKey>.self) { _ in 1 }
        builder.provide(LHIndirectCaptorKey.self, dependsOn: Lazy<LHTransientOnScopedKey>.self) { _ in 1 }
        // A singleton created on first use is a singleton all the same.
        builder.provide(LHDeferredCaptorKey.self, dependsOn: Lazy<LHScopedThingKey>.self) { _ in 1 }
        builder.provide(LHDeferredCaptorHolderKey.self, dependsOn: Lazy<LHDeferredCaptorKey>.self) { _ in 1 }
        // Scoped and transient holders of the same handles are fine.
        builder.provide(LHScopedFineKey.self, lifetime: .scoped, dependsOn: Lazy<LHScopedThingKey>.self) { _ in 1 }
        builder.provide(LHTransientFineKey.self, lifetime: .transient, dependsOn: Lazy<LHTransientOnScopedKey>.self) {
            _ in 1
        }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.captiveDependency, .captiveDependency, .captiveDependency], "\(error)")
        #expect(Set(error.problems.map(\.key)) == ["LHCaptorKey", "LHIndirectCaptorKey", "LHDeferredCaptorKey"])
    }

    @Test func aSingletonHoldingALazySeedIsCaptive() throws {
        var builder = ServiceGraph.Builder()
        builder.seed(LHRequestKey.self)
        builder.provide(LHCaptorKey.self, dependsOn: Lazy<LHRequestKey>.self) { _ in 1 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.captiveDependency], "\(error)")
        #expect(error.problems.first?.key == "LHCaptorKey")
    }

    @Test func wrappedLazyKeysAreRefusedAsInvalid() throws {
        func refused<D: ServiceKey>(_ dependency: D.Type, sourceLocation: SourceLocation = #_sourceLocation) throws {
            var builder = ServiceGraph.Builder()
            builder.provide(LHPlainKey.self) { 1 }
            builder.provide(LHWrapperUserKey.self, dependsOn: dependency) { _ in 2 }
            let error = try #require(
                throws: ServiceGraphError.self,
                "\(D.serviceName)",
                sourceLocation: sourceLocation
            ) { try builder.validate() }
            #expect(error.codes == [.invalidKey], "\(D.serviceName): \(error)", sourceLocation: sourceLocation)
            #expect(error.problems.first?.key == "LHWrapperUserKey", sourceLocation: sourceLocation)
        }
        try refused(Lazy<LHPlainKey?>.self)
        try refused(Lazy<Provider<LHPlainKey>>.self)
        try refused(Provider<Lazy<LHPlainKey>>.self)
        try refused(Lazy<LHPlainKey>?.self)
        try refused(Lazy<Lazy<LHPlainKey>>.self)
    }

    @Test func providingOrOverridingALazyKeyIsRefused() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(LHPlainKey.self) { 1 }
        builder.provide(Lazy<LHPlainKey>.self) { fatalError("never run") }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.invalidKey], "\(error)")
        #expect(error.problems.first?.key == "Lazy<LHPlainKey>")
        #expect(error.problems.first?.message.contains("provide LHPlainKey itself") == true, "\(error)")
        let built = await #expect(throws: ServiceGraphError.self) { _ = try await builder.build() }
        #expect(built?.codes == [.invalidKey])

        var overriding = ServiceGraph.Builder()
        overriding.provide(LHPlainKey.self) { 1 }
        overriding.override(Lazy<LHPlainKey>.self) { fatalError("never run") }
        let overridden = try #require(throws: ServiceGraphError.self) { try overriding.validate() }
        #expect(overridden.codes == [.invalidKey] || overridden.codes == [.overrideOfUnknownKey], "\(overridden)")
    }
}

extension Range where Bound == Int {
    fileprivate func asyncMap<T>(_ transform: (Int) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for index in self { result.append(try await transform(index)) }
        return result
    }
}
