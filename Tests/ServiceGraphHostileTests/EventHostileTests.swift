import Foundation
import ServiceGraph
import ServiceGraphTestSupport
import Testing

// Hostile tests of the graph's events (`Builder.eventHandler`, `eventKinds`, `reportsResolveEvents`,
// `ServiceGraphEvent`), written from their docs: kinds left out are never made, each service's and
// each scope's events come in a sensible order and balance, a handler may call back into the graph
// for every kind, and child graphs and live graphs report what their docs say.

private enum EHConfigKey: ServiceKey { typealias Value = EHHooked }
private enum EHMidKey: ServiceKey { typealias Value = EHHooked }
private enum EHTopKey: ServiceKey { typealias Value = EHHooked }
private enum EHScopedKey: ServiceKey { typealias Value = EHHooked }
private enum EHPlainScopedKey: ServiceKey { typealias Value = Int }
private enum EHTransientKey: ServiceKey { typealias Value = Int }
private enum EHFailingKey: ServiceKey { typealias Value = EHHooked }
private enum EHMissingKey: ServiceKey { typealias Value = Int }
private enum EHNeedsMissingKey: ServiceKey { typealias Value = Int }
private enum EHUserSeed: ServiceKey { typealias Value = String }
private enum EHRequestSeed: ServiceKey { typealias Value = Int }
private enum EHChildKey: ServiceKey { typealias Value = EHHooked }

/// A service with hooks, which can be told to fail in either.
private final class EHHooked: LifecycleHooks, Sendable {
    let name: String
    let failDidAdd: Bool
    let failWillRemove: Bool

    init(_ name: String, failDidAdd: Bool = false, failWillRemove: Bool = false) {
        self.name = name
        self.failDidAdd = failDidAdd
        self.failWillRemove = failWillRemove
    }

    func didAdd() async throws {
        if failDidAdd { throw TestFailure("didAdd of \(name) failed on purpose") }
    }

    func willRemove() async throws {
        if failWillRemove { throw TestFailure("willRemove of \(name) failed on purpose") }
    }
}

/// Every event a handler received, in the order received.
private final class EHRecorder: Sendable {
    let events = Locked<[ServiceGraphEvent]>([])

    func record(_ event: ServiceGraphEvent) { events.withLock { $0.append(event) } }
    var all: [ServiceGraphEvent] { events.withLock { $0 } }
    var kinds: [ServiceGraphEvent.Kind] { all.map(\.kind) }
    var lines: [String] { all.map { "\($0.kind)\($0.key.map { " \($0)" } ?? "")" } }
    func count(_ kind: ServiceGraphEvent.Kind) -> Int { all.filter { $0.kind == kind }.count }
    func of(_ kind: ServiceGraphEvent.Kind) -> [ServiceGraphEvent] { all.filter { $0.kind == kind } }
    func reset() { events.withLock { $0 = [] } }

    /// Polls until `condition` holds of the events received (a hang guard, not a timing assertion).
    func wait(
        within limit: Duration = .seconds(30),
        until condition: ([ServiceGraphEvent]) -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + limit
        while !condition(all) {
            guard ContinuousClock.now < deadline else { throw TestFailure("events never arrived: \(lines)") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}

/// A builder whose handler records into `recorder`.
private func ehBuilder(
    _ recorder: EHRecorder,
    kinds: Set<ServiceGraphEvent.Kind> = Set(ServiceGraphEvent.Kind.allCases),
    resolves: Bool = false
) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.eventHandler = { recorder.record($0) }
    builder.eventKinds = kinds
    builder.reportsResolveEvents = resolves
    builder.requiresShutdown = false
    return builder
}

/// A chain config ← mid ← top of hooked singletons, a hooked scoped service, a scoped service without
/// hooks and a transient.
private func ehChain(_ builder: inout ServiceGraph.Builder) {
    builder.provide(EHConfigKey.self) { EHHooked("config") }
    builder.provide(EHMidKey.self, dependsOn: EHConfigKey.self) { _ in EHHooked("mid") }
    builder.provide(EHTopKey.self, dependsOn: EHMidKey.self) { _ in EHHooked("top") }
    builder.provide(EHScopedKey.self, lifetime: .scoped, dependsOn: EHMidKey.self) { _ in EHHooked("scoped") }
    builder.provide(EHPlainScopedKey.self, lifetime: .scoped) { 5 }
    builder.provide(EHTransientKey.self, lifetime: .transient) { 1 }
}

/// Does something that makes every kind of event: a live graph (build, scopes closed and dropped,
/// resolves, an update committed and one failed, a retirement, shutdown), a failed build, and a graph
/// with hooks dropped without shutdown.
private func ehEveryKindWorkload(
    _ recorder: EHRecorder,
    kinds: Set<ServiceGraphEvent.Kind>,
    resolves: Bool
) async throws {
    var builder = ehBuilder(recorder, kinds: kinds, resolves: resolves)
    ehChain(&builder)
    let live = try await LiveGraph(builder)
    do {
        let graph = live.current
        _ = try await graph.resolve(EHTransientKey.self)
        _ = try graph.resolveSynchronously(EHTransientKey.self)
        let closed = try graph.makeScope()
        _ = try await closed.resolve(EHScopedKey.self)
        try await closed.close()
        var dropped: ServiceScope? = try graph.makeScope()
        _ = try await dropped?.resolve(EHScopedKey.self)
        dropped = nil
    }
    try await live.update { $0.override(EHMidKey.self, dependsOn: EHConfigKey.self) { _ in EHHooked("mid 2") } }
    do {
        try await live.update {
            $0.override(EHMidKey.self, dependsOn: EHConfigKey.self) { _ -> EHHooked in
                throw TestFailure("mid 3 refused")
            }
        }
        Issue.record("an update whose factory throws was committed")
    } catch {}
    try await live.shutdown()

    var failing = ehBuilder(recorder, kinds: kinds, resolves: resolves)
    failing.provide(EHConfigKey.self) { EHHooked("config") }
    failing.provide(EHFailingKey.self, dependsOn: EHConfigKey.self) { _ -> EHHooked in
        throw TestFailure("factory failed on purpose")
    }
    _ = try? await failing.build()

    var dropping = ehBuilder(recorder, kinds: kinds, resolves: resolves)
    dropping.provide(EHConfigKey.self) { EHHooked("dropped") }
    _ = try await dropping.build()
    // The drop's event may be sent in the background.
    if kinds.contains(.droppedWithoutShutdown) {
        try await recorder.wait { $0.contains { $0.kind == .droppedWithoutShutdown } }
    } else {
        try await Task.sleep(for: .milliseconds(20))
    }
}

@Suite("Events, hostile")
struct EventHostileTests {
    // MARK: - Kinds

    @Test(arguments: ServiceGraphEvent.Kind.allCases)
    func onlyTheOneListedKindIsReceivedAndItIsReceived(kind: ServiceGraphEvent.Kind) async throws {
        let recorder = EHRecorder()
        try await withDeadline(.seconds(60)) {
            try await ehEveryKindWorkload(recorder, kinds: [kind], resolves: true)
        }
        let lines = recorder.lines
        #expect(!lines.isEmpty, "the workload makes \(kind) with every kind on; with only it, none came")
        #expect(recorder.kinds.allSatisfy { $0 == kind }, "\(lines)")
    }

    @Test(arguments: ServiceGraphEvent.Kind.allCases)
    func aKindLeftOutIsNeverReceivedAndTheOthersStillAre(kind: ServiceGraphEvent.Kind) async throws {
        let recorder = EHRecorder()
        var kinds = Set(ServiceGraphEvent.Kind.allCases)
        kinds.remove(kind)
        let wanted = kinds
        try await withDeadline(.seconds(60)) {
            try await ehEveryKindWorkload(recorder, kinds: wanted, resolves: true)
        }
        #expect(recorder.count(kind) == 0, "\(recorder.lines)")
        for other in kinds {
            #expect(recorder.count(other) > 0, "leaving out \(kind) also silenced \(other): \(recorder.lines)")
        }
    }

    @Test func anEmptySetOfKindsReceivesNothing() async throws {
        let recorder = EHRecorder()
        try await withDeadline(.seconds(60)) {
            try await ehEveryKindWorkload(recorder, kinds: [], resolves: true)
        }
        #expect(recorder.all.isEmpty, "\(recorder.lines)")
    }

    @Test func resolvesAreReportedOnlyWithTheSwitchWhateverTheForm() async throws {
        for resolves in [false, true] {
            let recorder = EHRecorder()
            var builder = ehBuilder(recorder, resolves: resolves)
            ehChain(&builder)
            let graph = try await builder.build()
            _ = try await graph.resolve(EHTransientKey.self)
            _ = try graph.resolveSynchronously(EHTransientKey.self)
            _ = try await graph.resolve(EHTopKey.self)
            let scope = try graph.makeScope()
            _ = try await scope.resolve(EHPlainScopedKey.self)
            _ = try await scope.resolve(EHPlainScopedKey.self)
            _ = try scope.resolveSynchronously(EHTransientKey.self)
            try await scope.close()
            try await graph.shutdown()
            let resolved = recorder.of(.resolved)
            if resolves {
                // Two resolves of the transient from the graph, one from the scope, and the scoped service
                // twice: each resolve of those keys reported (a singleton's may or may not be).
                #expect(
                    resolved.filter { $0.key == "EHTransientKey" }.count == 3,
                    "\(resolved.map { "\($0)" })"
                )
                #expect(
                    resolved.filter { $0.key == "EHPlainScopedKey" }.count == 2,
                    "\(resolved.map { "\($0)" })"
                )
            } else {
                #expect(resolved.isEmpty, "\(resolved.map { "\($0)" })")
            }
        }
    }

    // MARK: - Order

    @Test func aBuildAndShutdownReportInOrderAndOnce() async throws {
        for _ in 0..<10 {
            let recorder = EHRecorder()
            var builder = ehBuilder(recorder)
            ehChain(&builder)
            let graph = try await builder.build()
            let afterBuild = recorder.all
            #expect(afterBuild.first?.kind == .buildStarted, "\(recorder.lines)")
            #expect(afterBuild.last?.kind == .buildFinished, "\(recorder.lines)")
            #expect(recorder.count(.buildStarted) == 1)
            #expect(recorder.count(.buildFinished) == 1)
            #expect(recorder.count(.buildFailed) == 0)
            #expect(recorder.of(.buildFinished).first?.duration != nil, "the duration is the whole build")
            // Concurrent shutdowns: the hooks run once, so does the report.
            try await withDeadline(.seconds(30)) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 { group.addTask { try await graph.shutdown() } }
                    try await group.waitForAll()
                }
            }
            let all = recorder.all
            #expect(all.last?.kind == .shutdownFinished, "\(recorder.lines)")
            #expect(recorder.count(.shutdownFinished) == 1, "\(recorder.lines)")
            for key in ["EHConfigKey", "EHMidKey", "EHTopKey"] {
                let mine = all.enumerated().filter { $0.element.key == key }
                let kinds = mine.map(\.element.kind)
                #expect(kinds.filter { $0 == .serviceCreated }.count == 1, "\(key): \(kinds)")
                #expect(kinds.filter { $0 == .didAdd }.count == 1, "\(key): \(kinds)")
                #expect(kinds.filter { $0 == .willRemove }.count == 1, "\(key): \(kinds)")
                #expect(kinds.last == .willRemove, "\(key): willRemove after its creation: \(kinds)")
                #expect(mine.allSatisfy { $0.element.error == nil })
            }
            // Reverse dependency order at shutdown: top's willRemove, then mid's, then config's.
            let removals = recorder.of(.willRemove).compactMap(\.key)
            #expect(removals == ["EHTopKey", "EHMidKey", "EHConfigKey"], "\(removals)")
            // Creation in dependency order: config in place before mid is made.
            let creations = recorder.of(.serviceCreated).compactMap(\.key)
            #expect(creations == ["EHConfigKey", "EHMidKey", "EHTopKey"], "\(creations)")
        }
    }

    @Test func theDidAddEventAndServiceCreatedAgreeOnWhenAServiceIsInPlace() async throws {
        // "serviceCreated: ... in place (made, and its didAdd run)": its didAdd event cannot come after.
        let recorder = EHRecorder()
        var builder = ehBuilder(recorder)
        ehChain(&builder)
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        _ = try await scope.resolve(EHScopedKey.self)
        try await scope.close()
        try await graph.shutdown()
        let all = recorder.all
        for key in ["EHConfigKey", "EHMidKey", "EHTopKey", "EHScopedKey"] {
            let kinds = all.filter { $0.key == key }.map(\.kind)
            let created = kinds.firstIndex(of: .serviceCreated)
            let didAdd = kinds.firstIndex(of: .didAdd)
            #expect(created != nil && didAdd != nil, "\(key): \(kinds)")
            if let created, let didAdd {
                #expect(didAdd < created, "\(key): serviceCreated said in place before its didAdd event: \(kinds)")
            }
        }
    }

    // MARK: - Scopes

    @Test func scopeOpenedNamesTheSeedsAndNothingWithoutSeeds() async throws {
        let recorder = EHRecorder()
        var builder = ehBuilder(recorder, kinds: [.scopeOpened, .scopeClosed])
        builder.seed(EHUserSeed.self)
        builder.seed(EHRequestSeed.self)
        builder.provide(EHPlainScopedKey.self, lifetime: .scoped, dependsOn: EHRequestSeed.self) { $0 }
        let graph = try await builder.build()
        let scope = try graph.makeScope(seeding: ScopeSeed(EHUserSeed.self, "ann"), ScopeSeed(EHRequestSeed.self, 3))
        try await scope.close()
        try await graph.shutdown()
        let opened = recorder.of(.scopeOpened)
        #expect(opened.count == 1)
        let names = Set((opened.first?.key ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(names == ["EHUserSeed", "EHRequestSeed"], "\(opened.map { "\($0)" })")

        let plain = EHRecorder()
        var unseeded = ehBuilder(plain, kinds: [.scopeOpened])
        ehChain(&unseeded)
        let other = try await unseeded.build()
        let unseededScope = try other.makeScope()
        try await unseededScope.close()
        try await other.shutdown()
        #expect(plain.of(.scopeOpened).map(\.key) == [nil], "\(plain.lines)")
    }

    @Test func aDroppedScopeNamesTheHooksItOwedAndNilWhenNone() async throws {
        let recorder = EHRecorder()
        var builder = ehBuilder(recorder, kinds: [.scopeOpened, .scopeClosed, .scopeDropped, .willRemove])
        ehChain(&builder)
        let graph = try await builder.build()
        try await withDeadline(.seconds(30)) {
            // No instance at all.
            do { _ = try graph.makeScope() }
            try await recorder.wait { $0.filter { $0.kind == .scopeDropped }.count == 1 }
            // An instance without hooks.
            do {
                let scope = try graph.makeScope()
                _ = try await scope.resolve(EHPlainScopedKey.self)
            }
            try await recorder.wait { $0.filter { $0.kind == .scopeDropped }.count == 2 }
            // An instance with hooks.
            do {
                let scope = try graph.makeScope()
                _ = try await scope.resolve(EHScopedKey.self)
                _ = try await scope.resolve(EHPlainScopedKey.self)
            }
            try await recorder.wait { $0.filter { $0.kind == .scopeDropped }.count == 3 }
        }
        try await graph.shutdown()
        let dropped = recorder.of(.scopeDropped)
        #expect(dropped.count == 3, "\(recorder.lines)")
        if dropped.count == 3 {
            #expect(dropped[0].key == nil, "owed no hooks: \(dropped[0])")
            #expect(dropped[1].key == nil, "owed no hooks (its instance has none): \(dropped[1])")
            #expect(dropped[2].key == "EHScopedKey", "owed EHScopedKey's willRemove: \(dropped[2])")
        }
        // The hook it owed ran in the background, reported once; no scope was also reported closed.
        #expect(recorder.all.filter { $0.kind == .willRemove && $0.key == "EHScopedKey" }.count == 1)
        #expect(recorder.count(.scopeOpened) == 3)
        #expect(recorder.count(.scopeClosed) == 0, "\(recorder.lines)")
    }

    @Test func aClosedScopeIsNotAlsoReportedDroppedWhenItsHandleGoes() async throws {
        let recorder = EHRecorder()
        var builder = ehBuilder(recorder, kinds: [.scopeOpened, .scopeClosed, .scopeDropped])
        ehChain(&builder)
        let graph = try await builder.build()
        for _ in 0..<20 {
            let scope = try graph.makeScope()
            _ = try await scope.resolve(EHScopedKey.self)
            try await scope.close()
            // Closing twice is not a second close.
            try? await scope.close()
        }
        try await Task.sleep(for: .milliseconds(20))
        try await graph.shutdown()
        #expect(recorder.count(.scopeOpened) == 20)
        #expect(recorder.count(.scopeClosed) == 20, "\(recorder.lines)")
        #expect(recorder.count(.scopeDropped) == 0, "\(recorder.lines)")
    }

    @Test func nestedScopesBalanceWhenOnlyTheOuterIsClosed() async throws {
        let session = ScopeKind("eh-session")
        let request = ScopeKind("eh-request", inside: session)
        let recorder = EHRecorder()
        var builder = ehBuilder(recorder, kinds: [.scopeOpened, .scopeClosed, .scopeDropped])
        builder.inScope(session) { $0.provide(EHScopedKey.self, lifetime: .scoped) { EHHooked("session") } }
        builder.inScope(request) {
            $0.provide(EHPlainScopedKey.self, lifetime: .scoped, dependsOn: EHScopedKey.self) { _ in 1 }
        }
        let graph = try await builder.build()
        try await withDeadline(.seconds(30)) {
            let outer = try graph.makeScope(session)
            var inners: [ServiceScope] = []
            for _ in 0..<5 {
                let inner = try outer.makeScope(request)
                _ = try await inner.resolve(EHPlainScopedKey.self)
                inners.append(inner)
            }
            try await outer.close()
            let allClosed = inners.allSatisfy { $0.isClosed }
            #expect(allClosed, "closing the session closes its requests")
            inners = []
            try await graph.shutdown()
        }
        #expect(recorder.count(.scopeOpened) == 6, "\(recorder.lines)")
        #expect(
            recorder.count(.scopeClosed) + recorder.count(.scopeDropped) == 6,
            "each scope reported once, closed or dropped: \(recorder.lines)"
        )
        #expect(ehRunningCountNeverNegative(recorder.kinds))
    }

    @Test func manyTasksOpenCloseDropAndResolveWhileTheGraphShutsDown() async throws {
        for round in 0..<8 {
            let recorder = EHRecorder()
            var builder = ehBuilder(recorder, resolves: true)
            ehChain(&builder)
            let graph = try await builder.build()
            let resolvesDone = Tally()
            try await withDeadline(.seconds(60)) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<6 {
                        group.addTask {
                            var kept: [ServiceScope] = []
                            for step in 0..<200 {
                                guard let scope = try? graph.makeScope() else { break }
                                if (try? await scope.resolve(EHScopedKey.self)) != nil { resolvesDone.increment() }
                                if (try? await graph.resolve(EHTransientKey.self)) != nil { resolvesDone.increment() }
                                switch (step + task) % 3 {
                                case 0: try? await scope.close()
                                case 1: break  // dropped here
                                default: kept.append(scope)  // left for the shutdown
                                }
                                await Task.yield()
                            }
                            kept = []
                        }
                    }
                    group.addTask {
                        try await Task.sleep(for: .milliseconds(3 + round))
                        try await graph.shutdown()
                    }
                    try await group.waitForAll()
                }
            }
            // The last drops' reports may come in the background, after the tasks let go.
            try await withDeadline(.seconds(30)) {
                try await recorder.wait { events in
                    let opened = events.filter { $0.kind == .scopeOpened }.count
                    let ended = events.filter { $0.kind == .scopeClosed || $0.kind == .scopeDropped }.count
                    return opened == ended
                }
            }
            let kinds = recorder.kinds
            #expect(ehRunningCountNeverNegative(kinds), "a scope reported ended before it was reported opened")
            #expect(recorder.count(.shutdownFinished) == 1)
            #expect(recorder.count(.scopeOpened) > 0)
            // Every successful resolve of the scoped service and the transient was reported.
            let reported = recorder.of(.resolved).filter { $0.key == "EHScopedKey" || $0.key == "EHTransientKey" }
            #expect(reported.count == resolvesDone.count, "\(reported.count) reported of \(resolvesDone.count)")
            // Scoped instances: each made (serviceCreated) got a willRemove, once.
            let created = recorder.all.filter { $0.kind == .serviceCreated && $0.key == "EHScopedKey" }.count
            let removed = recorder.all.filter { $0.kind == .willRemove && $0.key == "EHScopedKey" }.count
            #expect(created == removed, "scoped made \(created), removed \(removed)")
            if let finished = kinds.lastIndex(of: .shutdownFinished), finished != kinds.count - 1 {
                // Not promised by the docs: recorded for the report.
                print("EH observation: events after shutdownFinished: \(recorder.lines[(finished + 1)...])")
            }
        }
    }

    // MARK: - Failures

    @Test func aThrowingFactoryFailsTheBuildWithAnErrorNamingIt() async throws {
        let recorder = EHRecorder()
        var builder = ehBuilder(recorder)
        builder.provide(EHConfigKey.self) { EHHooked("config") }
        builder.provide(EHFailingKey.self, dependsOn: EHConfigKey.self) { _ -> EHHooked in
            throw TestFailure("factory failed on purpose")
        }
        await #expect(throws: ServiceGraphError.self) { _ = try await builder.build() }
        #expect(recorder.all.first?.kind == .buildStarted, "\(recorder.lines)")
        #expect(recorder.count(.buildFinished) == 0)
        let failed = recorder.of(.buildFailed)
        #expect(failed.count == 1, "\(recorder.lines)")
        let message = ehMessage(failed.first)
        #expect(message.contains("EHFailingKey"), "the error names the service: \(message)")
        // What it had started was released: config's didAdd, then its willRemove, before the failure.
        let configKinds = recorder.all.filter { $0.key == "EHConfigKey" }.map(\.kind)
        #expect(configKinds.filter { $0 == .willRemove }.count == 1, "\(configKinds)")
        #expect(recorder.kinds.last == .buildFailed, "\(recorder.lines)")
        #expect(recorder.count(.droppedWithoutShutdown) == 0)
    }

    @Test func aValidationFailureStartsNoBuild() async throws {
        let recorder = EHRecorder()
        var builder = ehBuilder(recorder)
        builder.provide(EHNeedsMissingKey.self, dependsOn: EHMissingKey.self) { $0 }
        await #expect(throws: ServiceGraphError.self) { _ = try await builder.build() }
        // "buildStarted: A build began (after validation)".
        #expect(recorder.count(.buildStarted) == 0, "\(recorder.lines)")
        #expect(recorder.count(.buildFinished) == 0)
        // Whether a validation failure is reported is not said: what is reported must be right.
        for event in recorder.of(.buildFailed) {
            let message = ehMessage(event)
            #expect(message.contains("EHMissingKey"), "\(message)")
        }
        print("EH observation: validation failure events: \(recorder.lines)")
    }

    @Test func failingHooksAreReportedWithTheirErrors() async throws {
        // didAdd failing: the build fails; the didAdd event carries the error.
        let recorder = EHRecorder()
        var builder = ehBuilder(recorder)
        builder.provide(EHConfigKey.self) { EHHooked("config") }
        builder.provide(EHFailingKey.self, dependsOn: EHConfigKey.self) { _ in EHHooked("bad", failDidAdd: true) }
        await #expect(throws: ServiceGraphError.self) { _ = try await builder.build() }
        let badDidAdd = recorder.all.filter { $0.kind == .didAdd && $0.key == "EHFailingKey" }
        #expect(badDidAdd.count == 1, "\(recorder.lines)")
        #expect(ehMessage(badDidAdd.first).contains("failed on purpose"))
        #expect(recorder.all.filter { $0.kind == .didAdd && $0.key == "EHConfigKey" }.first?.error == nil)
        #expect(recorder.count(.buildFailed) == 1)
        #expect(recorder.count(.buildFinished) == 0)

        // willRemove failing: the shutdown throws; the willRemove event carries the error; the others run.
        let second = EHRecorder()
        var other = ehBuilder(second)
        other.provide(EHConfigKey.self) { EHHooked("config") }
        other.provide(EHMidKey.self, dependsOn: EHConfigKey.self) { _ in EHHooked("mid", failWillRemove: true) }
        let graph = try await other.build()
        await #expect(throws: ServiceGraphError.self) { try await graph.shutdown() }
        let removes = second.of(.willRemove)
        #expect(removes.map(\.key) == ["EHMidKey", "EHConfigKey"], "\(second.lines)")
        #expect(ehMessage(removes.first).contains("failed on purpose"))
        #expect(removes.last?.error == nil)
        #expect(second.count(.shutdownFinished) == 1)
        #expect(second.kinds.last == .shutdownFinished, "\(second.lines)")
    }

    @Test func aScopedFactoryThatThrowsIsNotReportedCreated() async throws {
        let recorder = EHRecorder()
        var builder = ehBuilder(recorder)
        let attempts = Tally()
        builder.provide(EHScopedKey.self, lifetime: .scoped) { () -> EHHooked in
            if attempts.increment() == 1 { throw TestFailure("first attempt fails") }
            return EHHooked("scoped")
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        await #expect(throws: (any Error).self) { _ = try await scope.resolve(EHScopedKey.self) }
        #expect(recorder.all.filter { $0.kind == .serviceCreated && $0.key == "EHScopedKey" }.isEmpty)
        _ = try await scope.resolve(EHScopedKey.self)
        try await scope.close()
        try await graph.shutdown()
        let scoped = recorder.all.filter { $0.key == "EHScopedKey" }.map(\.kind)
        #expect(scoped.filter { $0 == .serviceCreated }.count == 1, "\(scoped)")
        #expect(scoped.filter { $0 == .didAdd }.count == 1, "\(scoped)")
        #expect(scoped.filter { $0 == .willRemove }.count == 1, "\(scoped)")
    }

    // MARK: - Dropped graphs

    @Test func aGraphDroppedWithStartedHooksIsReportedOnceNamingThem() async throws {
        let recorder = EHRecorder()
        var builder = ehBuilder(recorder)
        ehChain(&builder)
        do { _ = try await builder.build() }
        try await withDeadline(.seconds(30)) {
            try await recorder.wait { $0.contains { $0.kind == .droppedWithoutShutdown } }
        }
        try await Task.sleep(for: .milliseconds(20))
        let dropped = recorder.of(.droppedWithoutShutdown)
        #expect(dropped.count == 1)
        let key = dropped.first?.key ?? ""
        for name in ["EHConfigKey", "EHMidKey", "EHTopKey"] { #expect(key.contains(name), "\(key)") }
        #expect(recorder.count(.willRemove) == 0, "their willRemove never ran")
        #expect(recorder.count(.shutdownFinished) == 0)
    }

    @Test func aGraphShutDownOrWithoutHooksIsNotReportedDropped() async throws {
        let recorder = EHRecorder()
        var hooked = ehBuilder(recorder)
        ehChain(&hooked)
        do {
            let graph = try await hooked.build()
            try await graph.shutdown()
        }
        var plain = ehBuilder(recorder)
        plain.provide(EHTransientKey.self) { 3 }
        plain.provide(EHPlainScopedKey.self, lifetime: .scoped, dependsOn: EHTransientKey.self) { $0 }
        do {
            let graph = try await plain.build()
            let scope = try graph.makeScope()
            _ = try await scope.resolve(EHPlainScopedKey.self)
            try await scope.close()
        }
        // A graph whose only hooked service was made in a scope, closed: nothing owed.
        do {
            let graph = try await hooked.build()
            let scope = try graph.makeScope()
            _ = try await scope.resolve(EHScopedKey.self)
            try await scope.close()
            try await graph.shutdown()
        }
        // A failed build released what it started.
        var failing = ehBuilder(recorder)
        failing.provide(EHConfigKey.self) { EHHooked("config") }
        failing.provide(EHFailingKey.self, dependsOn: EHConfigKey.self) { _ -> EHHooked in throw TestFailure("no") }
        _ = try? await failing.build()
        try await Task.sleep(for: .milliseconds(50))
        #expect(recorder.count(.droppedWithoutShutdown) == 0, "\(recorder.lines)")
    }

    // MARK: - Handlers that call back into the graph

    @Test(arguments: ServiceGraphEvent.Kind.allCases)
    func aHandlerThatUsesTheGraphForEveryKindNeitherHangsNorRecursesForever(
        kind: ServiceGraphEvent.Kind
    )
        async throws
    {
        let state = EHReentryState()
        let recorder = EHRecorder()
        let kinds = Set(ServiceGraphEvent.Kind.allCases)
        try await withDeadline(.seconds(60)) {
            try await ehEveryKindWorkloadReentering(state, recorder: recorder, kinds: kinds, target: kind)
        }
        #expect(state.calls.count > 0, "the handler was never called for \(kind): \(recorder.lines)")
        #expect(state.maximumDepth.withLock { $0 } < 50, "the handler recursed without end")
    }

    @Test func aLiveGraphHandlerThatReadsTheLiveGraphDoesNotDeadlock() async throws {
        let holder = Locked<LiveGraph?>(nil)
        let seen = Locked<[String]>([])
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        ehChain(&builder)
        builder.eventKinds = [.updateCommitted, .updateFailed, .generationRetired, .buildFinished]
        builder.eventHandler = { event in
            guard let live = holder.withLock({ $0 }) else { return }
            let generation = live.generation
            let current = live.current
            let plan = try? live.plan { $0.override(EHTopKey.self, dependsOn: EHMidKey.self) { _ in EHHooked("t") } }
            let dump = current.dump(.json)
            let scope = try? current.makeScope()
            let scoped = try? scope?.resolveSynchronously(EHTransientKey.self)
            seen.withLock { $0.append("\(event.kind) g\(generation) \(plan != nil) \(!dump.isEmpty) \(scoped ?? -1)") }
        }
        let live = try await LiveGraph(builder)
        holder.withLock { $0 = live }
        try await withDeadline(.seconds(60)) {
            try await live.update { $0.override(EHMidKey.self, dependsOn: EHConfigKey.self) { _ in EHHooked("m2") } }
            _ = try? await live.update { $0.remove(EHConfigKey.self) }
            try await live.shutdown()
        }
        holder.withLock { $0 = nil }
        let lines = seen.withLock { $0 }
        #expect(lines.contains { $0.hasPrefix("update committed g") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("update failed g") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("generation retired g") }, "\(lines)")
    }

    @Test func aSlowHandlerCalledFromManyTasksSeesEveryEvent() async throws {
        let inside = Locked(0)
        let mostAtOnce = Locked(0)
        let resolvedCount = Locked(0)
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        ehChain(&builder)
        builder.reportsResolveEvents = true
        builder.eventKinds = [.resolved, .scopeOpened, .scopeClosed]
        let opened = Locked(0)
        let closed = Locked(0)
        builder.eventHandler = { event in
            let now = inside.withLock {
                $0 += 1
                return $0
            }
            mostAtOnce.withLock { $0 = max($0, now) }
            let until = ContinuousClock.now + .microseconds(300)
            while ContinuousClock.now < until {}
            switch event.kind {
            case .resolved: resolvedCount.withLock { $0 += 1 }
            case .scopeOpened: opened.withLock { $0 += 1 }
            case .scopeClosed: closed.withLock { $0 += 1 }
            default: Issue.record("a kind left out was received: \(event)")
            }
            inside.withLock { $0 -= 1 }
        }
        let graph = try await builder.build()
        try await withDeadline(.seconds(60)) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        for _ in 0..<25 {
                            _ = try await graph.resolve(EHTransientKey.self)
                            let scope = try graph.makeScope()
                            _ = try await scope.resolve(EHPlainScopedKey.self)
                            try await scope.close()
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await graph.shutdown()
        #expect(resolvedCount.withLock { $0 } == 8 * 25 * 2)
        #expect(opened.withLock { $0 } == 200)
        #expect(closed.withLock { $0 } == 200)
        #expect(inside.withLock { $0 } == 0)
        print("EH observation: most handler calls at once: \(mostAtOnce.withLock { $0 })")
    }

    @Test func aChildBuildsHandlerCanUseTheParentWhileTheChildBuilds() async throws {
        let parentRecorder = EHRecorder()
        var builder = ehBuilder(parentRecorder)
        ehChain(&builder)
        let parent = try await builder.build()
        var childBuilder = parent.makeChildBuilder()
        childBuilder.requiresShutdown = false
        let childRecorder = EHRecorder()
        let uses = Tally()
        childBuilder.eventHandler = { event in
            childRecorder.record(event)
            _ = parent.dump(.dot)
            _ = parent.startupReport()
            _ = parent[EHTopKey.self]
            if let scope = try? parent.makeScope() { _ = try? scope.resolveSynchronously(EHTransientKey.self) }
            uses.increment()
        }
        childBuilder.provide(EHChildKey.self, dependsOn: EHTopKey.self) { _ in EHHooked("child") }
        let readyChildBuilder = childBuilder
        try await withDeadline(.seconds(30)) {
            let child = try await readyChildBuilder.build()
            _ = try await child.resolve(EHChildKey.self)
            let scope = try child.makeScope()
            _ = try await scope.resolve(EHScopedKey.self)
            try await scope.close()
            try await parent.shutdown()  // shuts the child down first
            #expect(child.initializationOrder.contains("EHChildKey"))
        }
        // The child's handler heard the child's events; the parent's did not hear the child's service.
        #expect(childRecorder.all.contains { $0.kind == .didAdd && $0.key == "EHChildKey" }, "\(childRecorder.lines)")
        #expect(childRecorder.count(.shutdownFinished) == 1, "\(childRecorder.lines)")
        #expect(!parentRecorder.all.contains { $0.key == "EHChildKey" }, "\(parentRecorder.lines)")
        #expect(parentRecorder.count(.shutdownFinished) == 1)
        #expect(parentRecorder.kinds.last == .shutdownFinished, "\(parentRecorder.lines)")
        // "A child never runs the hooks of its parent's instances": no willRemove of the parent's in the child.
        #expect(
            !childRecorder.all.contains {
                $0.kind == .willRemove && ["EHConfigKey", "EHMidKey", "EHTopKey"].contains($0.key ?? "")
            },
            "\(childRecorder.lines)"
        )
        #expect(uses.count > 0)
    }

    // MARK: - Live graphs

    @Test func updatesReportOnceEachInOrderAndGenerationsRetireOldestFirst() async throws {
        let recorder = EHRecorder()
        var builder = ehBuilder(recorder, kinds: [.updateCommitted, .updateFailed, .generationRetired, .buildFinished])
        ehChain(&builder)
        let live = try await LiveGraph(builder)
        // A scope on generation 1 keeps it from retiring.
        let pinned = try live.current.makeScope()
        _ = try await pinned.resolve(EHScopedKey.self)
        try await withDeadline(.seconds(60)) {
            let plan2 = try await live.update {
                $0.override(EHMidKey.self, dependsOn: EHConfigKey.self) { _ in EHHooked("m2") }
            }
            let plan3 = try await live.update {
                $0.override(EHTopKey.self, dependsOn: EHMidKey.self) { _ in EHHooked("t3") }
            }
            #expect(plan2.generation == 2 && plan3.generation == 3)
            // Validation refuses this one (nothing runs); a factory refuses the next.
            _ = try? await live.update { $0.remove(EHConfigKey.self) }
            _ = try? await live.update {
                $0.override(EHTopKey.self, dependsOn: EHMidKey.self) { _ -> EHHooked in throw TestFailure("t4") }
            }
            #expect(live.generation == 3)
            try await Task.sleep(for: .milliseconds(150))
            // Generation 1 is pinned; generation 2 may not retire before it ("oldest first").
            #expect(recorder.count(.generationRetired) == 0, "\(recorder.lines)")
            try await pinned.close()
            try await recorder.wait { $0.filter { $0.kind == .generationRetired }.count == 2 }
            try await live.shutdown()
        }
        let committed = recorder.of(.updateCommitted)
        #expect(committed.map(\.key) == ["generation 2", "generation 3"], "\(recorder.lines)")
        #expect(committed.allSatisfy { $0.update != nil && $0.duration != nil && $0.error == nil })
        #expect(committed.first?.update?.rebuilt.contains("EHMidKey") == true)
        let failed = recorder.of(.updateFailed)
        #expect(failed.count == 2, "\(recorder.lines)")
        #expect(failed.allSatisfy { $0.error != nil })
        if failed.count == 2 {
            #expect(failed[0].update == nil, "refused by validation: no plan")
            #expect(failed[1].update != nil, "got past validation: the plan")
            #expect(ehMessage(failed[0]).contains("EHConfigKey"))
            #expect(ehMessage(failed[1]).contains("EHTopKey"))
        }
        let retired = recorder.of(.generationRetired)
        #expect(retired.count == 2, "once per replaced generation: \(recorder.lines)")
        if retired.count == 2 {
            #expect(retired[0].key?.contains("1") == true, "oldest first: \(retired.map { "\($0)" })")
            #expect(retired[1].key?.contains("2") == true, "\(retired.map { "\($0)" })")
            #expect(retired.allSatisfy { $0.error == nil })
        }
        // Each committed update after its generation's build; each retirement after its replacement.
        let lines = recorder.lines
        let commit2 = lines.firstIndex(of: "update committed generation 2") ?? -1
        let retire1 = lines.firstIndex { $0.hasPrefix("generation retired") } ?? -1
        #expect(commit2 >= 0 && retire1 > commit2, "\(lines)")
        #expect(recorder.count(.buildFinished) == 3, "generations 1, 2, 3: \(lines)")
    }

    @Test func aRetiringGenerationsFailingWillRemoveIsOnItsRetiredEvent() async throws {
        let recorder = EHRecorder()
        var builder = ehBuilder(recorder, kinds: [.generationRetired, .willRemove, .updateCommitted])
        builder.provide(EHConfigKey.self) { EHHooked("config", failWillRemove: true) }
        let live = try await LiveGraph(builder)
        try await withDeadline(.seconds(60)) {
            try await live.update { $0.override(EHConfigKey.self) { EHHooked("config 2") } }
            try await recorder.wait { $0.contains { $0.kind == .generationRetired } }
            // "Throws: Every willRemove failure, the retired generations' included."
            await #expect(throws: ServiceGraphError.self) { try await live.shutdown() }
        }
        let retired = recorder.of(.generationRetired)
        #expect(retired.count == 1)
        #expect(ehMessage(retired.first).contains("failed on purpose"), "\(recorder.lines)")
        let kinds = recorder.kinds
        if let removal = kinds.firstIndex(of: .willRemove), let retirement = kinds.firstIndex(of: .generationRetired) {
            #expect(removal < retirement, "the retirement is reported after the willRemove it ran: \(recorder.lines)")
        }
    }
}

/// The event's error as text, empty when it has none.
private func ehMessage(_ event: ServiceGraphEvent?) -> String {
    guard let error = event?.error else { return "" }
    return "\(error)"
}

/// Whether the number of scopes reported open never reads below zero.
private func ehRunningCountNeverNegative(_ kinds: [ServiceGraphEvent.Kind]) -> Bool {
    var open = 0
    for kind in kinds {
        switch kind {
        case .scopeOpened: open += 1
        case .scopeClosed, .scopeDropped: open -= 1
        default: break
        }
        if open < 0 { return false }
    }
    return true
}

/// What a re-entering handler needs: the graph once built, its own scopes' budget, its depth.
private final class EHReentryState: Sendable {
    let graph = Locked<ServiceGraph?>(nil)
    let calls = Tally()
    let scopesLeft = Locked(40)
    let depth = Locked(0)
    let maximumDepth = Locked(0)
    let kept = Locked<[ServiceScope]>([])
}

/// The every-kind workload, with a handler that, for events of `target`, dumps the graph in every
/// format, reads its startup report and singletons, resolves through it, opens scopes of its own (one
/// closed from a task, one dropped, one kept for the shutdown).
private func ehEveryKindWorkloadReentering(
    _ state: EHReentryState,
    recorder: EHRecorder,
    kinds: Set<ServiceGraphEvent.Kind>,
    target: ServiceGraphEvent.Kind
) async throws {
    let handler: @Sendable (ServiceGraphEvent) -> Void = { event in
        recorder.record(event)
        guard event.kind == target else { return }
        state.calls.increment()
        let depth = state.depth.withLock {
            $0 += 1
            return $0
        }
        state.maximumDepth.withLock { $0 = max($0, depth) }
        defer { state.depth.withLock { $0 -= 1 } }
        // A handler that resolves on every `resolved` event would recurse by its own doing: it calls
        // back only a few levels deep.
        guard depth <= 3 else { return }
        guard let graph = state.graph.withLock({ $0 }) else { return }
        for format in [DumpFormat.text, .dot, .mermaid, .json] { _ = graph.dump(format) }
        _ = graph.startupReport()
        _ = graph.singletons(as: EHHooked.self)
        _ = try? graph.resolveSynchronously(EHTransientKey.self)
        _ = try? graph.resolveSynchronously(EHTopKey.self)
        _ = graph[EHTopKey.self]
        let mayOpen = state.scopesLeft.withLock { left in
            defer { left -= 1 }
            return left > 0
        }
        guard mayOpen, let scope = try? graph.makeScope() else { return }
        _ = try? scope.resolveSynchronously(EHTransientKey.self)
        switch state.calls.count % 3 {
        case 0: Task { try? await scope.close() }
        case 1: break  // dropped
        default: state.kept.withLock { $0.append(scope) }
        }
    }
    func base() -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.eventHandler = handler
        builder.eventKinds = kinds
        builder.reportsResolveEvents = true
        builder.requiresShutdown = false
        return builder
    }
    var builder = base()
    ehChain(&builder)
    let live = try await LiveGraph(builder)
    state.graph.withLock { $0 = live.current }
    do {
        let graph = live.current
        _ = try await graph.resolve(EHTransientKey.self)
        let closed = try graph.makeScope()
        _ = try await closed.resolve(EHScopedKey.self)
        try await closed.close()
        var dropped: ServiceScope? = try graph.makeScope()
        _ = try await dropped?.resolve(EHScopedKey.self)
        dropped = nil
    }
    try await live.update { $0.override(EHMidKey.self, dependsOn: EHConfigKey.self) { _ in EHHooked("mid 2") } }
    state.graph.withLock { $0 = live.current }
    _ = try? await live.update {
        $0.override(EHMidKey.self, dependsOn: EHConfigKey.self) { _ -> EHHooked in throw TestFailure("no") }
    }
    try await live.shutdown()
    state.graph.withLock { $0 = nil }
    state.kept.withLock { $0 = [] }

    // A failed build and a dropped graph, with the handler holding a running graph of its own.
    var spareBuilder = ServiceGraph.Builder()
    spareBuilder.requiresShutdown = false
    ehChain(&spareBuilder)
    let spare = try await spareBuilder.build()
    state.graph.withLock { $0 = spare }
    var failing = base()
    failing.provide(EHFailingKey.self) { () -> EHHooked in throw TestFailure("failed on purpose") }
    _ = try? await failing.build()
    var dropping = base()
    dropping.provide(EHConfigKey.self) { EHHooked("dropped") }
    _ = try await dropping.build()
    if kinds.contains(.droppedWithoutShutdown) {
        try await recorder.wait { $0.contains { $0.kind == .droppedWithoutShutdown } }
    }
    state.graph.withLock { $0 = nil }
    state.kept.withLock { $0 = [] }
    try await spare.shutdown()
}
