import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum KA: ServiceKey { typealias Value = Probe }
private enum KB: ServiceKey { typealias Value = Probe }
private enum KC: ServiceKey { typealias Value = Probe }
private enum KD: ServiceKey { typealias Value = Probe }
private enum KE: ServiceKey { typealias Value = Probe }
private enum KF: ServiceKey { typealias Value = Probe }
private enum KX: ServiceKey { typealias Value = Probe }
private enum KY: ServiceKey { typealias Value = Probe }
private enum LazyKey: ServiceKey { typealias Value = Probe }
private enum ReaderKey: ServiceKey { typealias Value = Int }
private enum FailingKey: ServiceKey { typealias Value = Int }

/// A service that logs its hooks; its `didAdd` can be made to wait (polling, and only so long) until
/// another entry is in the log: how a test holds an instance's start open while the rest of the graph
/// goes on, if it may.
private final class Probe: LifecycleHooks, Sendable {
    let name: String
    let log: EventLog
    let waitsFor: String?
    let jitters: Bool

    init(_ name: String, log: EventLog, waitsFor: String? = nil, jitters: Bool = false) {
        self.name = name
        self.log = log
        self.waitsFor = waitsFor
        self.jitters = jitters
        log.record("init \(name)")
    }

    func didAdd() async throws {
        log.record("starting \(name)")
        if let waitsFor { await log.wait(for: waitsFor) }
        if jitters { await randomYields() }
        log.record("didAdd \(name)")
    }

    func willRemove() async throws { log.record("willRemove \(name)") }
}

/// Yields a few times, or none: lets concurrent work finish in a varying order.
private func randomYields() async {
    for _ in 0..<Int.random(in: 0...3) { await Task.yield() }
}

extension EventLog {
    /// Returns once `entry` is in the log, or after a while without it. A bound, not a timing
    /// assertion: where the order is right, the entry cannot come while the caller waits.
    fileprivate func wait(for entry: String) async {
        for _ in 0..<200 where index(of: entry) == nil {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    fileprivate func entries(_ prefix: String) -> [String] { all.filter { $0.hasPrefix(prefix) } }

    fileprivate func position(_ entry: String) throws -> Int { try #require(index(of: entry), "\(all)") }
}

/// An instance provided under several keys gets its hooks once, started before and removed after every
/// service that depends on any of those keys, whichever key's factory returned it first.
@Suite("Shared instance order")
struct SharedInstanceOrderTests {
    /// KA and KB hold the same instance; KC depends on it through KB. KA (synchronous, declared first)
    /// returns it first and runs its hooks; the instance's `didAdd` waits for KC to be made, which must
    /// not happen before it ends.
    @Test func anInstanceUnderTwoKeysOutlivesTheDependentsOfTheKeyThatDidNotRunItsHooks() async throws {
        let log = EventLog()
        let shared = Probe("shared", log: log, waitsFor: "init KC")
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) { shared }
        builder.provide(KB.self) { () async in
            await Task.yield()
            return shared
        }
        builder.provide(KC.self, dependsOn: KB.self) { _ in Probe("KC", log: log) }
        let graph = try await withDeadline { [builder] in try await builder.build() }
        #expect(try log.position("didAdd shared") < log.position("init KC"))
        try await withDeadline { try await graph.shutdown() }
        #expect(log.entries("didAdd ") == ["didAdd shared", "didAdd KC"])
        #expect(log.entries("willRemove ") == ["willRemove KC", "willRemove shared"])
    }

    /// The same, with both keys asynchronous and the instance's start taking a varying time, so that
    /// either key may return it first: every build must start and remove it in order.
    @Test func eitherKeyMayReturnTheInstanceFirst() async throws {
        try await withDeadline {
            for round in 0..<200 {
                let log = EventLog()
                let shared = Probe("shared", log: log, jitters: true)
                var builder = ServiceGraph.Builder()
                builder.provide(KA.self) { () async in
                    await randomYields()
                    return shared
                }
                builder.provide(KB.self) { () async in
                    await randomYields()
                    return shared
                }
                builder.provide(KC.self, dependsOn: KB.self) { _ in Probe("KC", log: log) }
                let graph = try await builder.build()
                try await graph.shutdown()
                #expect(log.entries("didAdd ") == ["didAdd shared", "didAdd KC"], "round \(round)")
                #expect(log.entries("willRemove ") == ["willRemove KC", "willRemove shared"], "round \(round)")
            }
        }
    }

    /// Three keys hold the instance and each has its own dependent: the instance starts before all of
    /// them and is removed after all of them, once.
    @Test func anInstanceUnderThreeKeysOutlivesTheDependentsOfEach() async throws {
        let log = EventLog()
        let shared = Probe("shared", log: log, waitsFor: "init KE")
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) { shared }
        builder.provide(KB.self) { () async in shared }
        builder.provide(KD.self) { () async in shared }
        builder.provide(KC.self, dependsOn: KB.self) { _ in Probe("KC", log: log) }
        builder.provide(KE.self, dependsOn: KD.self) { _ in Probe("KE", log: log) }
        builder.provide(KF.self, dependsOn: KA.self) { _ in Probe("KF", log: log) }
        let graph = try await withDeadline { [builder] in try await builder.build() }
        for dependent in ["KC", "KE", "KF"] {
            #expect(try log.position("didAdd shared") < log.position("init \(dependent)"))
        }
        try await withDeadline { try await graph.shutdown() }
        let removals = log.entries("willRemove ")
        #expect(removals.count == 4)
        #expect(removals.last == "willRemove shared", "\(removals)")
        #expect(log.count(of: "didAdd shared") == 1)
    }

    /// KA returns the instance first; KB returns it too, made from KY: the instance is removed before
    /// KY, as if KB's were its own (it may hold what KB's factory gave it).
    @Test func anInstanceIsRemovedBeforeWhatAnyKeyHoldingItDependsOn() async throws {
        let log = EventLog()
        let shared = Probe("shared", log: log)
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) { shared }
        builder.provide(KY.self) { Probe("KY", log: log) }
        builder.provide(KB.self, dependsOn: KY.self) { _ in shared }
        let graph = try await withDeadline { [builder] in try await builder.build() }
        try await withDeadline { try await graph.shutdown() }
        #expect(log.entries("willRemove ") == ["willRemove shared", "willRemove KY"])
        #expect(log.count(of: "didAdd shared") == 1)
    }

    /// KB holds the instance and KX depends on KB; KA depends on KX and returns the same instance: no
    /// order satisfies both. The key that returned it first (KB) decides: the instance starts before KX
    /// and is removed after it, once, and nothing hangs.
    @Test func aCycleThroughTheSharedInstanceFollowsTheKeyThatReturnedItFirst() async throws {
        let log = EventLog()
        let shared = Probe("shared", log: log)
        var builder = ServiceGraph.Builder()
        builder.provide(KB.self) { shared }
        builder.provide(KX.self, dependsOn: KB.self) { _ in Probe("KX", log: log) }
        builder.provide(KA.self, dependsOn: KX.self) { _ in shared }
        let graph = try await withDeadline { [builder] in try await builder.build() }
        #expect(graph[KA.self] === graph[KB.self])
        try await withDeadline { try await graph.shutdown() }
        #expect(log.entries("didAdd ") == ["didAdd shared", "didAdd KX"])
        #expect(log.entries("willRemove ") == ["willRemove KX", "willRemove shared"])
    }

    /// A singleton created on first use during the build (a factory reads its lazy handle) returns the
    /// instance first; KB, built after it started, returns it too, and KC depends on KB: KC is removed
    /// first.
    @Test func anInstanceFirstReturnedByALazySingletonOutlivesTheDependentsOfTheBuiltKey() async throws {
        let log = EventLog()
        let shared = Probe("shared", log: log)
        var builder = ServiceGraph.Builder()
        builder.provide(LazyKey.self) { shared }
        builder.provide(ReaderKey.self, dependsOn: Lazy<LazyKey>.self) { lazy in
            _ = try await lazy.value
            return 1
        }
        builder.provide(KB.self) { () async in
            await log.wait(for: "didAdd shared")
            return shared
        }
        builder.provide(KC.self, dependsOn: KB.self) { _ in Probe("KC", log: log) }
        let graph = try await withDeadline { [builder] in try await builder.build() }
        try await withDeadline { try await graph.shutdown() }
        #expect(log.entries("didAdd ") == ["didAdd shared", "didAdd KC"])
        #expect(log.entries("willRemove ") == ["willRemove KC", "willRemove shared"])
    }

    /// The instance is shared by a parent and its child: the parent runs its hooks, the child (where
    /// two keys hold it) does not, and the child's dependent is removed with the child, before.
    @Test func aChildThatSharesItsParentsInstanceLeavesItsHooksToTheParent() async throws {
        let log = EventLog()
        let shared = Probe("shared", log: log)
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) { shared }
        let parent = try await withDeadline { [builder] in try await builder.build() }
        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(KB.self) { () async in shared }
        childBuilder.provide(KD.self) { shared }
        childBuilder.provide(KC.self, dependsOn: KB.self) { _ in Probe("KC", log: log) }
        let child = try await withDeadline { [childBuilder] in try await childBuilder.build() }
        try await withDeadline { try await child.shutdown() }
        #expect(log.entries("willRemove ") == ["willRemove KC"])
        try await withDeadline { try await parent.shutdown() }
        #expect(log.entries("didAdd ") == ["didAdd shared", "didAdd KC"])
        #expect(log.entries("willRemove ") == ["willRemove KC", "willRemove shared"])
    }

    /// A build that fails after the instance and KC started releases them in order: KC first.
    @Test func aFailedBuildReleasesTheSharedInstanceAfterTheDependentsOfEitherKey() async throws {
        let log = EventLog()
        let shared = Probe("shared", log: log, waitsFor: "init KC")
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) { shared }
        builder.provide(KB.self) { () async in
            await Task.yield()
            return shared
        }
        builder.provide(KC.self, dependsOn: KB.self) { _ in Probe("KC", log: log) }
        builder.provide(FailingKey.self, dependsOn: KC.self) { _ in throw TestFailure("fails on purpose") }
        await #expect(throws: ServiceGraphError.self) {
            try await withDeadline { [builder] in try await builder.build() }
        }
        #expect(log.entries("willRemove ") == ["willRemove KC", "willRemove shared"])
        #expect(log.count(of: "didAdd shared") == 1)
    }

    /// Two scoped keys hold the instance, and SC depends on it through the one that did not run its
    /// hooks: while its `didAdd` runs, SC is not made, and SC is removed first.
    @Test func aScopedInstanceUnderTwoKeysOutlivesTheDependentsOfEither() async throws {
        let log = EventLog()
        let shared = Probe("shared", log: log, waitsFor: "init KC")
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self, lifetime: .scoped) { shared }
        builder.provide(KB.self, lifetime: .scoped) { shared }
        builder.provide(KC.self, lifetime: .scoped, dependsOn: KB.self) { _ in Probe("KC", log: log) }
        let graph = try await withDeadline { [builder] in try await builder.build() }
        let scope = try graph.makeScope()
        try await withDeadline {
            let first = Task { try await scope.resolve(KA.self) }
            // KA's instance is starting: KC is asked for meanwhile.
            for _ in 0..<10_000 where log.index(of: "starting shared") == nil { await Task.yield() }
            _ = try await scope.resolve(KC.self)
            _ = try await first.value
        }
        #expect(try log.position("didAdd shared") < log.position("init KC"))
        try await withDeadline { try await scope.close() }
        #expect(log.entries("willRemove ") == ["willRemove KC", "willRemove shared"])
        try await graph.shutdown()
    }
}
