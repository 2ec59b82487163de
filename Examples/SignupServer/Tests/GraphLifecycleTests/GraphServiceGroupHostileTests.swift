import GraphLifecycle
import Logging
import ServiceGraph
import ServiceLifecycle
import Synchronization
import Testing

// Hostile tests of what `GraphServiceGroup` and `RunningGate` promise in their documentation: many
// services in random order, racing gates, failures and cancellations at awkward moments. Every helper
// here is private so that other test files of the target may use the same names.

// MARK: - Hang guard

private struct Hung: Error, CustomStringConvertible {
    let description: String
}

/// Runs `body` and returns what it returns, failing the test (instead of hanging it) when it has not
/// finished after `limit`. The body keeps running, cancelled, when it is abandoned.
private func withinDeadline<Value: Sendable>(
    _ what: String,
    limit: Duration = .seconds(60),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    let (outcomes, continuation) = AsyncStream.makeStream(of: Result<Value, any Error>.self)
    let work = Task { try await body() }
    Task { continuation.yield(await work.result) }
    let timer = Task {
        guard (try? await Task.sleep(for: limit)) != nil else { return }
        continuation.yield(.failure(Hung(description: "\(what) did not finish within \(limit)")))
    }
    var iterator = outcomes.makeAsyncIterator()
    let first = await iterator.next() ?? .failure(Hung(description: "\(what): no outcome"))
    timer.cancel()
    continuation.finish()
    if case .failure(let error) = first, let hung = error as? Hung {
        Issue.record("\(hung)", sourceLocation: sourceLocation)
        work.cancel()
    }
    return try first.get()
}

/// Awaits a run started with `start(_:)` under the hang guard, and returns the errors it reported.
private func outcome(
    of run: Task<Result<Void, any Error>, Never>,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [any Error] {
    errors(of: try await withinDeadline("run()", sourceLocation: sourceLocation) { await run.value })
}

/// Waits (polling) until `condition` holds; fails the test after `limit`.
private func waitUntil(
    _ what: String,
    limit: Duration = .seconds(30),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while !condition() {
        guard clock.now < deadline else {
            Issue.record("\(what) did not happen within \(limit)", sourceLocation: sourceLocation)
            throw Hung(description: what)
        }
        try await Task.sleep(for: .milliseconds(1))
    }
}

/// Holds the group for a service that needs to reach it from its own `run()`.
private final class GroupBox: Sendable {
    private let stored = Locked<GraphServiceGroup?>(nil)
    var group: GraphServiceGroup? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}

// MARK: - Scripted services

/// A long-running service whose `run()` and `willRemove()` the test scripts. Journals like
/// `FakeService`: "run N", "running N" (recorded before its gate opens, so the journal is causal),
/// "stop N", "willRemove N".
private final class Probe: NeedsRunningServices, ReportsRunning, LifecycleHooks {
    typealias Script = @Sendable (Probe) async throws -> Void

    let name: String
    let journal: Journal
    let running = RunningGate()
    /// Opened by the test, for a script that waits for it (``waitForRelease()``).
    let release = RunningGate()
    /// The probes it was made from (its dependencies in the graph).
    let upstream: [Probe]
    private let needs: [any ReportsRunning]
    private let needsItself: Bool
    private let script: Script
    private let hook: Script

    init(
        _ name: String,
        journal: Journal,
        upstream: [Probe] = [],
        needs: [any ReportsRunning] = [],
        needsItself: Bool = false,
        script: @escaping Script = Probe.serve,
        hook: @escaping Script = { _ in }
    ) {
        self.name = name
        self.journal = journal
        self.upstream = upstream
        self.needs = needs
        self.needsItself = needsItself
        self.script = script
        self.hook = hook
    }

    var needsRunning: [any ReportsRunning] { needsItself ? needs + [self] : needs }

    func markRunning() {
        journal.record("running \(name)")
        running.markRunning()
    }

    /// Waits until the test opens ``release``; a graceful shutdown cancels the wait.
    func waitForRelease() async throws {
        try await cancelWhenGracefulShutdown { try await self.release.waitUntilRunning() }
    }

    func run() async throws {
        journal.record("run \(name)")
        defer { journal.record("stop \(name)") }
        try await script(self)
    }

    func willRemove() async throws {
        journal.record("willRemove \(name)")
        try await hook(self)
    }

    /// Says it is running at once, then runs until the graceful shutdown.
    static let serve: Script = { probe in
        probe.markRunning()
        try await gracefulShutdown()
    }

    /// Every probe it was made from, directly or not, by name.
    static func ancestors(of upstream: [Probe]) -> [String: Probe] {
        var found: [String: Probe] = [:]
        var pending = upstream
        while let probe = pending.popLast() {
            guard found[probe.name] == nil else { continue }
            found[probe.name] = probe
            pending.append(contentsOf: probe.upstream)
        }
        return found
    }
}

/// A server stand-in whose `run()` the test scripts; journals "run <name>" and "stop <name>".
private final class ScriptedServer: Service {
    let name: String
    let journal: Journal
    let script: @Sendable () async throws -> Void

    init(
        _ name: String = "server",
        journal: Journal,
        script: @escaping @Sendable () async throws -> Void = { try await gracefulShutdown() }
    ) {
        self.name = name
        self.journal = journal
        self.script = script
    }

    func run() async throws {
        journal.record("run \(name)")
        defer { journal.record("stop \(name)") }
        try await script()
    }
}

/// A value-type service: its gate is the only reference it holds besides the journal.
private struct Gauge: NeedsRunningServices, ReportsRunning, LifecycleHooks {
    let name: String
    let journal: Journal
    let running = RunningGate()
    let needsRunning: [any ReportsRunning]

    func run() async throws {
        journal.record("run \(name)")
        defer { journal.record("stop \(name)") }
        journal.record("running \(name)")
        running.markRunning()
        try await gracefulShutdown()
    }

    func willRemove() async throws { journal.record("willRemove \(name)") }
}

/// A singleton with hooks that is not a service.
private final class HooksOnly: LifecycleHooks {
    let journal: Journal
    init(journal: Journal) { self.journal = journal }
    func willRemove() async throws { journal.record("willRemove hooksOnly") }
}

private enum KA: ServiceKey {
    typealias Value = Probe
    static var serviceName: String { "KA" }
}
private enum KB: ServiceKey {
    typealias Value = Probe
    static var serviceName: String { "KB" }
}
private enum KC: ServiceKey {
    typealias Value = Probe
    static var serviceName: String { "KC" }
}
private enum KD: ServiceKey {
    typealias Value = Probe
    static var serviceName: String { "KD" }
}
private enum GaugeA: ServiceKey {
    typealias Value = Gauge
    static var serviceName: String { "GaugeA" }
}
private enum GaugeB: ServiceKey {
    typealias Value = Gauge
    static var serviceName: String { "GaugeB" }
}
private enum AnyServiceKey: ServiceKey {
    typealias Value = any Service
    static var serviceName: String { "AnyServiceKey" }
}
private enum NumberKey: ServiceKey {
    typealias Value = Int
    static var serviceName: String { "NumberKey" }
}
private enum HooksOnlyKey: ServiceKey {
    typealias Value = HooksOnly
    static var serviceName: String { "HooksOnlyKey" }
}

// MARK: - Keys made at run time: `Node<T>` is the key "N<index of T>"

private protocol Tag { static var index: Int { get } }
private enum Zero: Tag { static var index: Int { 0 } }
private enum Bit0<Rest: Tag>: Tag { static var index: Int { Rest.index * 2 } }
private enum Bit1<Rest: Tag>: Tag { static var index: Int { Rest.index * 2 + 1 } }

private enum Node<T: Tag>: ServiceKey {
    typealias Value = Probe
    static var serviceName: String { "N\(T.index)" }
}

/// The tag type of `index` (below 4096): one type per number, its bits from the most significant.
private func tag(_ index: Int) -> any Tag.Type {
    var tag: any Tag.Type = Zero.self
    for bit in (0..<12).reversed() { tag = wrap(tag, one: (index >> bit) & 1 == 1) }
    return tag
}

private func wrap<T: Tag>(_: T.Type, one: Bool) -> any Tag.Type { one ? Bit1<T>.self : Bit0<T>.self }

private typealias MakeProbe = @Sendable ([Probe]) -> Probe

/// Provides the key "N<node>", depending on the keys of `dependencies` (at most three).
private func provideNode(
    _ node: Int,
    dependsOn dependencies: [Int],
    in builder: inout ServiceGraph.Builder,
    make: @escaping MakeProbe
) {
    provideOpened(tag(node), dependencies.map(tag), &builder, make)
}

private func provideOpened<T: Tag>(
    _: T.Type,
    _ dependencies: [any Tag.Type],
    _ builder: inout ServiceGraph.Builder,
    _ make: @escaping MakeProbe
) {
    switch dependencies.count {
    case 0: builder.provide(Node<T>.self) { make([]) }
    case 1: provide1(T.self, dependencies[0], &builder, make)
    case 2: provide2(T.self, dependencies[0], dependencies[1], &builder, make)
    default: provide3(T.self, dependencies[0], dependencies[1], dependencies[2], &builder, make)
    }
}

private func provide1<T: Tag, D1: Tag>(
    _: T.Type,
    _: D1.Type,
    _ builder: inout ServiceGraph.Builder,
    _ make: @escaping MakeProbe
) {
    builder.provide(Node<T>.self, dependsOn: Node<D1>.self) { make([$0]) }
}

private func provide2<T: Tag, D1: Tag, D2: Tag>(
    _: T.Type,
    _: D1.Type,
    _: D2.Type,
    _ builder: inout ServiceGraph.Builder,
    _ make: @escaping MakeProbe
) {
    builder.provide(Node<T>.self, dependsOn: Node<D1>.self, Node<D2>.self) { make([$0, $1]) }
}

private func provide3<T: Tag, D1: Tag, D2: Tag, D3: Tag>(
    _: T.Type,
    _: D1.Type,
    _: D2.Type,
    _: D3.Type,
    _ builder: inout ServiceGraph.Builder,
    _ make: @escaping MakeProbe
) {
    builder.provide(Node<T>.self, dependsOn: Node<D1>.self, Node<D2>.self, Node<D3>.self) { make([$0, $1, $2]) }
}

// MARK: - Random graphs

/// A seeded generator, so that a failure's seed reproduces its graph.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A random graph of probes "N0"…: each depends on up to three nodes with a lower index, needs running
/// a random few of everything it depends on (directly or not, sometimes the same one twice), and
/// yields a random number of times before it says it is running. The nodes are declared shuffled.
private struct RandomGraph: Sendable {
    let seed: UInt64
    let count: Int
    let dependencies: [[Int]]
    let needs: [[Int]]
    let yields: [Int]
    let declarationOrder: [Int]

    init(count: Int, seed: UInt64 = .random(in: .min ... .max)) {
        var random = SplitMix64(state: seed)
        var dependencies: [[Int]] = []
        var ancestors: [Set<Int>] = []
        var needs: [[Int]] = []
        var yields: [Int] = []
        for node in 0..<count {
            var chosen: [Int] = []
            let wanted = Int.random(in: 0...min(3, node), using: &random)
            while chosen.count < wanted {
                // Mostly recent nodes, so that the graph has long chains, sometimes any.
                let low = Bool.random(using: &random) ? max(0, node - 8) : 0
                let candidate = Int.random(in: low..<node, using: &random)
                if !chosen.contains(candidate) { chosen.append(candidate) }
            }
            dependencies.append(chosen)
            var mine = Set(chosen)
            for dependency in chosen { mine.formUnion(ancestors[dependency]) }
            ancestors.append(mine)
            let pool = mine.sorted()
            if !pool.isEmpty && Int.random(in: 0..<3, using: &random) > 0 {
                needs.append(
                    (0..<Int.random(in: 1...3, using: &random)).map { _ in pool.randomElement(using: &random)! }
                )
            } else {
                needs.append([])
            }
            yields.append(Int.random(in: 0...6, using: &random))
        }
        self.seed = seed
        self.count = count
        self.dependencies = dependencies
        self.needs = needs
        self.yields = yields
        self.declarationOrder = (0..<count).shuffled(using: &random)
    }

    func builder(journal: Journal, hook: @escaping Probe.Script = { _ in }) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        for node in declarationOrder {
            let needed = needs[node]
            let yields = yields[node]
            provideNode(node, dependsOn: dependencies[node], in: &builder) { upstream in
                let known = Probe.ancestors(of: upstream)
                return Probe(
                    "N\(node)",
                    journal: journal,
                    upstream: upstream,
                    needs: needed.compactMap { known["N\($0)"] },
                    script: { probe in
                        for _ in 0..<yields { await Task.yield() }
                        probe.markRunning()
                        try await gracefulShutdown()
                    },
                    hook: hook
                )
            }
        }
        return builder
    }
}

/// A journal read once: the first position and the number of each entry.
private struct Timeline {
    let entries: [String]
    private var first: [String: Int] = [:]
    private var counts: [String: Int] = [:]

    init(_ journal: Journal) {
        entries = journal.all
        for (position, entry) in entries.enumerated() {
            counts[entry, default: 0] += 1
            if first[entry] == nil { first[entry] = position }
        }
    }

    subscript(entry: String) -> Int? { first[entry] }

    func count(_ entry: String) -> Int { counts[entry] ?? 0 }

    func matching(_ prefix: String) -> [String] { entries.filter { $0.hasPrefix(prefix) } }

    /// The position of the last "stop …" (-1 when none) and of the first "willRemove …".
    var lastStop: Int { entries.lastIndex { $0.hasPrefix("stop ") } ?? -1 }
    var firstWillRemove: Int { entries.firstIndex { $0.hasPrefix("willRemove ") } ?? Int.max }
}

extension RandomGraph {
    /// What must hold after any run of this graph that ended, however it ended: each service stopped
    /// as often as it ran (at most once), every hook ran exactly once, in reverse dependency order,
    /// after every service stopped. Returns the violations.
    func endedViolations(_ timeline: Timeline) -> [String] {
        var violations: [String] = []
        for node in 0..<count {
            let name = "N\(node)"
            let runs = timeline.count("run \(name)")
            if runs > 1 { violations.append("\(name) ran \(runs) times") }
            if timeline.count("stop \(name)") != runs {
                violations.append("\(name) ran \(runs) times but stopped \(timeline.count("stop \(name)")) times")
            }
            if timeline.count("willRemove \(name)") != 1 {
                violations.append("willRemove \(name) ran \(timeline.count("willRemove \(name)")) times")
            }
            for dependency in dependencies[node] {
                if let mine = timeline["willRemove \(name)"], let theirs = timeline["willRemove N\(dependency)"],
                    mine > theirs
                {
                    violations.append("willRemove N\(dependency) ran before willRemove \(name), which depends on it")
                }
            }
        }
        if timeline.lastStop > timeline.firstWillRemove {
            violations.append("a willRemove hook ran before every service had stopped")
        }
        return violations
    }

    /// What must hold of the startup: each service ran after everything it needs running said so.
    func startupViolations(_ timeline: Timeline) -> [String] {
        var violations: [String] = []
        for node in 0..<count {
            guard let started = timeline["run N\(node)"] else { continue }
            for needed in needs[node] {
                guard let running = timeline["running N\(needed)"], running < started else {
                    violations.append("N\(node) ran before N\(needed), which it needs, was running")
                    continue
                }
            }
        }
        return violations
    }
}

/// A group configuration with no readiness timeout: a service waits for what it needs for as long as
/// that takes.
private let noReadinessLimit = testConfiguration(readinessTimeout: nil)

// MARK: - Tests

@Suite("GraphServiceGroup: hostile cases")
struct GraphServiceGroupHostileTests {
    // MARK: Many services

    @Test(arguments: 1...3)
    func hundredsOfServicesInRandomOrderStartAfterWhatTheyNeedAndStopInReverse(round: Int) async throws {
        let shape = RandomGraph(count: 300)
        let seed = "round \(round), seed \(shape.seed)"
        let journal = Journal()
        let (graph, group) = try await makeGroup(
            shape.builder(journal: journal),
            journal: journal,
            configuration: noReadinessLimit
        )
        // The group's order is the graph's creation order, which puts each node after its dependencies.
        let names = Array(group.serviceNames.dropLast())
        #expect(group.serviceNames.last == "server")
        #expect(names == graph.singletons(as: (any Service).self).map(\.key), "\(seed)")
        #expect(Set(names) == Set((0..<shape.count).map { "N\($0)" }), "\(seed)")
        let position = Dictionary(names.enumerated().map { ($1, $0) }) { first, _ in first }
        var outOfOrder: [String] = []
        for node in 0..<shape.count {
            for dependency in shape.dependencies[node]
            where (position["N\(dependency)"] ?? .max) > (position["N\(node)"] ?? .min) {
                outOfOrder.append("N\(node) is before N\(dependency)")
            }
        }
        #expect(outOfOrder.isEmpty, "\(seed)")

        let run = start(group)
        try await journal.waitFor("run server")
        await group.triggerGracefulShutdown()
        let found = try await outcome(of: run)
        #expect(found.isEmpty, "\(seed): \(found)")

        let timeline = Timeline(journal)
        #expect(shape.startupViolations(timeline) == [], "\(seed)")
        #expect(shape.endedViolations(timeline) == [], "\(seed)")
        // Every service ran once and said it was running before the server ran.
        #expect(timeline.matching("run ").count == shape.count + 1, "\(seed)")
        let lastRunning = timeline.entries.lastIndex { $0.hasPrefix("running ") } ?? .max
        #expect(lastRunning < (timeline["run server"] ?? .min), "\(seed)")
        // Stopped exactly in reverse: the server first.
        #expect(timeline.matching("stop ") == ["stop server"] + names.reversed().map { "stop \($0)" }, "\(seed)")
    }

    /// Without readiness needs, the group starts the services' tasks in the graph's order, but their
    /// `run()` calls may interleave (swift-service-lifecycle does not wait for one to start the next):
    /// the names are in order, and the stops and hooks keep the graph's order strictly.
    @Test func withoutReadinessNeedsTheStopsAndHooksStillFollowTheGraph() async throws {
        for _ in 0..<5 {
            let journal = Journal()
            let count = 200
            var builder = ServiceGraph.Builder()
            // A chain N0 <- N1 <- … declared backwards, no readiness needs at all.
            for node in (0..<count).reversed() {
                provideNode(node, dependsOn: node == 0 ? [] : [node - 1], in: &builder) { upstream in
                    Probe("N\(node)", journal: journal, upstream: upstream)
                }
            }
            let group = try await makeGroup(builder, journal: journal).group
            let names = (0..<count).map { "N\($0)" }
            #expect(group.serviceNames == names + ["server"])
            let run = start(group)
            try await journal.waitFor("run server")
            await group.triggerGracefulShutdown()
            #expect(try await outcome(of: run).isEmpty)
            let timeline = Timeline(journal)
            #expect(timeline.matching("run ").count == count + 1)
            // The shutdown and the hooks keep the graph's order strictly.
            #expect(timeline.matching("stop ") == ["stop server"] + names.reversed().map { "stop \($0)" })
            #expect(timeline.matching("willRemove ") == names.reversed().map { "willRemove \($0)" })
        }
    }

    // MARK: RunningGate under races

    @Test func aGateOpenedFromManyTasksAtOnceReleasesEveryWaiter() async throws {
        for _ in 0..<20 {
            let gate = RunningGate()
            let journal = Journal()
            try await withinDeadline("waiters") {
                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    for waiter in 0..<200 {
                        tasks.addTask {
                            try await gate.waitUntilRunning()
                            journal.record("released \(waiter)")
                        }
                    }
                    for _ in 0..<16 {
                        tasks.addTask {
                            await Task.yield()
                            gate.markRunning()
                        }
                    }
                    try await tasks.waitForAll()
                }
            }
            #expect(gate.isRunning)
            #expect(Set(journal.all).count == 200)
            // Waiting once it is open returns at once; opening it again does nothing.
            gate.markRunning()
            try await withinDeadline("a late waiter") { try await gate.waitUntilRunning() }
            #expect(gate.isRunning)
        }
    }

    @Test func cancellingSomeWaitersPartWayThrowsCancellationToThemAndLeavesTheOthersWaiting() async throws {
        let gate = RunningGate()
        let waiters = (0..<300).map { _ in Task { try await gate.waitUntilRunning() } }
        // Let some of them start waiting, then cancel every other one.
        for _ in 0..<50 { await Task.yield() }
        for (index, waiter) in waiters.enumerated() where index.isMultiple(of: 2) { waiter.cancel() }
        for (index, waiter) in waiters.enumerated() where index.isMultiple(of: 2) {
            let result = try await withinDeadline("a cancelled waiter") { await waiter.result }
            guard case .failure(let error) = result else {
                Issue.record("cancelled waiter \(index) returned though the gate never opened")
                continue
            }
            #expect(error is CancellationError, "waiter \(index) threw \(error)")
        }
        #expect(!gate.isRunning)
        gate.markRunning()
        for (index, waiter) in waiters.enumerated() where !index.isMultiple(of: 2) {
            let result = try await withinDeadline("a waiter") { await waiter.result }
            if case .failure(let error) = result { Issue.record("waiter \(index) threw \(error)") }
        }
        // A task cancelled before it waits on a closed gate throws at once.
        let other = RunningGate()
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await other.waitUntilRunning()
        }
        let result = try await withinDeadline("an already cancelled waiter") { await early.result }
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test func cancellingWaitersWhileTheGateOpensNeverLosesOne() async throws {
        for _ in 0..<30 {
            let gate = RunningGate()
            let waiters = (0..<100).map { _ in Task { try await gate.waitUntilRunning() } }
            let canceller = Task {
                for (index, waiter) in waiters.enumerated() where index % 3 == 0 { waiter.cancel() }
            }
            let opener = Task {
                await Task.yield()
                gate.markRunning()
            }
            await canceller.value
            await opener.value
            for (index, waiter) in waiters.enumerated() {
                let result = try await withinDeadline("a waiter racing cancellation") { await waiter.result }
                guard case .failure(let error) = result else { continue }
                // Only a cancelled waiter may throw, and only CancellationError.
                #expect(index % 3 == 0 && error is CancellationError, "waiter \(index) threw \(error)")
            }
        }
    }

    // MARK: Failures during startup

    /// N0 fails before it is running while fifty services and some outside tasks wait on its gate:
    /// every one of them is released, none runs, the run names N0, and a later wait fails at once.
    @Test func aServiceFailingBeforeItIsRunningReleasesEveryoneWaitingOnIt() async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        provideNode(0, dependsOn: [], in: &builder) { _ in
            Probe("N0", journal: journal) { probe in
                try await probe.waitForRelease()
                throw Failure("no disk")
            }
        }
        for node in 1...50 {
            provideNode(node, dependsOn: [0], in: &builder) { upstream in
                Probe("N\(node)", journal: journal, upstream: upstream, needs: upstream)
            }
        }
        let (graph, group) = try await makeGroup(builder, journal: journal, configuration: noReadinessLimit)
        let failing = try #require(graph.singletons(as: Probe.self).first { $0.key == "N0" }?.value)
        let outside = (0..<20).map { _ in Task { try await failing.running.waitUntilRunning() } }
        let run = start(group)
        try await journal.waitFor("run N0")
        failing.release.markRunning()
        let found = try await outcome(of: run)

        let named = found.compactMap { $0 as? GraphLifecycleError }.filter { $0.service == "N0" }
        #expect(named.map(\.description).contains("N0 failed: no disk"), "\(found)")
        let timeline = Timeline(journal)
        #expect(timeline.matching("run ") == ["run N0"])
        #expect(timeline.matching("stop ") == ["stop N0"])
        #expect(timeline.matching("willRemove ").count == 51)
        #expect(timeline["willRemove N0"] == timeline.entries.count - 1)
        #expect(!failing.running.isRunning)
        for waiter in outside {
            let result = try await withinDeadline("an outside waiter") { await waiter.result }
            #expect(throws: (any Error).self) { try result.get() }
        }
        // "those who wait later get error": a wait after the run fails at once instead of hanging.
        let late = try await withinDeadline("a wait after the run") {
            await Task { try await failing.running.waitUntilRunning() }.result
        }
        #expect(throws: (any Error).self) { try late.get() }
    }

    /// A shutdown while KA waits to be running: KA stops before it was running and KB, which needs it,
    /// never runs. Nobody waiting on either gate, before or after the run, is left hanging.
    @Test func gatesOfServicesStoppedBeforeRunningDoNotStrandTheirWaiters() async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) {
            Probe("KA", journal: journal) { probe in
                try await probe.waitForRelease()
                probe.markRunning()
            }
        }
        builder.provide(KB.self, dependsOn: KA.self) { Probe("KB", journal: journal, upstream: [$0], needs: [$0]) }
        let (graph, group) = try await makeGroup(builder, journal: journal, configuration: noReadinessLimit)
        let probes = [graph[KA.self], graph[KB.self]]
        let before = probes.map { probe in Task { try await probe.running.waitUntilRunning() } }
        let run = start(group)
        try await journal.waitFor("run KA")
        await group.triggerGracefulShutdown()
        #expect(try await outcome(of: run).isEmpty)
        #expect(Timeline(journal).matching("run ") == ["run KA"])
        for (waiter, name) in zip(before, ["KA", "KB"]) {
            let result = try await withinDeadline("a wait on \(name) begun before the run", limit: .seconds(5)) {
                await waiter.result
            }
            #expect(throws: (any Error).self, "\(name)") { try result.get() }
        }
        for probe in probes {
            let name = probe.name
            let result = try await withinDeadline("a wait on \(name) after the run", limit: .seconds(5)) {
                await Task { try await probe.running.waitUntilRunning() }.result
            }
            #expect(throws: (any Error).self, "\(name)") { try result.get() }
        }
    }

    /// A service that says it is running and then fails keeps its gate open: those that started after
    /// it ran, and a later wait returns.
    @Test func aServiceFailingAfterItIsRunningKeepsItsGateOpen() async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) {
            Probe("KA", journal: journal) { probe in
                probe.markRunning()
                try await probe.waitForRelease()
                throw Failure("lost the lease")
            }
        }
        builder.provide(KB.self, dependsOn: KA.self) { Probe("KB", journal: journal, upstream: [$0], needs: [$0]) }
        let (graph, group) = try await makeGroup(builder, journal: journal)
        let run = start(group)
        try await journal.waitFor("run server")
        graph[KA.self].release.markRunning()
        let found = try await outcome(of: run)
        let error = try #require(found.first as? GraphLifecycleError, "\(found)")
        #expect(error.description == "KA failed: lost the lease")
        #expect(Timeline(journal).matching("stop ") == ["stop KA", "stop server", "stop KB"])
        #expect(graph[KA.self].running.isRunning)
        try await withinDeadline("a wait on an open gate") { try await graph[KA.self].running.waitUntilRunning() }
        #expect(Timeline(journal).matching("willRemove ") == ["willRemove KB", "willRemove KA"])
    }

    /// A service that throws `CancellationError` though nobody cancelled it and no shutdown began: the
    /// docs say a service that throws shuts the group down and `run()` throws an error naming it.
    @Test(arguments: [true, false])
    func aServiceThrowingCancellationErrorOnItsOwnIsAFailureNamingIt(afterRunning: Bool) async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) { Probe("KA", journal: journal) }
        builder.provide(KB.self, dependsOn: KA.self) {
            Probe("KB", journal: journal, upstream: [$0], needs: [$0]) { probe in
                if afterRunning { probe.markRunning() }
                try await probe.waitForRelease()
                throw CancellationError()
            }
        }
        builder.provide(KC.self, dependsOn: KB.self) { Probe("KC", journal: journal, upstream: [$0], needs: [$0]) }
        let (graph, group) = try await makeGroup(builder, journal: journal)
        let run = start(group)
        try await journal.waitFor(afterRunning ? "run server" : "run KB")
        graph[KB.self].release.markRunning()
        let found = try await outcome(of: run)
        #expect(!found.isEmpty, "run() returned normally though KB threw on its own")
        let named = found.compactMap { $0 as? GraphLifecycleError }
        #expect(named.contains { $0.service == "KB" }, "\(found)")
        let timeline = Timeline(journal)
        #expect(timeline.count("stop KA") == 1)
        #expect(timeline.matching("willRemove ") == ["willRemove KC", "willRemove KB", "willRemove KA"])
        #expect(timeline.lastStop < timeline.firstWillRemove)
    }

    /// A gate opened by someone else before the service's `run()` was called does not let the services
    /// that need it start before it: they wait for its `run()` too.
    @Test func aGateOpenedFromOutsideDoesNotLetADependentStartBeforeTheServiceRuns() async throws {
        for _ in 0..<10 {
            let journal = Journal()
            var builder = ServiceGraph.Builder()
            builder.provide(KA.self) {
                Probe("KA", journal: journal) { probe in
                    try await probe.waitForRelease()
                    probe.markRunning()
                    try await gracefulShutdown()
                }
            }
            builder.provide(KB.self, dependsOn: KA.self) { Probe("KB", journal: journal, upstream: [$0], needs: [$0]) }
            let (graph, group) = try await makeGroup(builder, journal: journal, configuration: noReadinessLimit)
            graph[KA.self].running.markRunning()
            let run = start(group)
            try await journal.waitFor("run KB")
            graph[KA.self].release.markRunning()
            try await journal.waitFor("run server")
            await group.triggerGracefulShutdown()
            #expect(try await outcome(of: run).isEmpty)
            let timeline = Timeline(journal)
            #expect(try #require(timeline["run KA"]) < (try #require(timeline["run KB"])))
            #expect(timeline.matching("stop ") == ["stop server", "stop KB", "stop KA"])
        }
    }

    /// A service that throws while it shuts down (not a cancellation): the run still reports it by key,
    /// and the others still stop and are removed.
    @Test func aServiceThrowingWhileItShutsDownIsReportedByKey() async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) { Probe("KA", journal: journal) }
        builder.provide(KB.self, dependsOn: KA.self) {
            Probe("KB", journal: journal, upstream: [$0], needs: [$0]) { probe in
                probe.markRunning()
                try await gracefulShutdown()
                throw Failure("could not flush")
            }
        }
        builder.provide(KC.self, dependsOn: KB.self) { Probe("KC", journal: journal, upstream: [$0], needs: [$0]) }
        let group = try await makeGroup(builder, journal: journal).group
        let run = start(group)
        try await journal.waitFor("run server")
        await group.triggerGracefulShutdown()
        let found = try await outcome(of: run)
        #expect(found.compactMap { $0 as? GraphLifecycleError }.map(\.description) == ["KB failed: could not flush"])
        let timeline = Timeline(journal)
        #expect(timeline.matching("stop ") == ["stop server", "stop KC", "stop KB", "stop KA"])
        #expect(timeline.matching("willRemove ") == ["willRemove KC", "willRemove KB", "willRemove KA"])
    }

    // MARK: The server

    enum ServerFault: String, CaseIterable, Sendable {
        case throwsAnError, returnsEarly, throwsCancellation
    }

    @Test(arguments: ServerFault.allCases)
    func aFailingServerBringsTheGroupDownNamingTheServer(fault: ServerFault) async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) { Probe("KA", journal: journal) }
        builder.provide(KB.self, dependsOn: KA.self) { Probe("KB", journal: journal, upstream: [$0], needs: [$0]) }
        let release = RunningGate()
        let server = ScriptedServer("http", journal: journal) {
            try await release.waitUntilRunning()
            switch fault {
            case .throwsAnError: throw Failure("port taken")
            case .returnsEarly: return
            case .throwsCancellation: throw CancellationError()
            }
        }
        let group = try await makeGroup(builder, journal: journal, server: .custom("http", server)).group
        #expect(group.serviceNames == ["KA", "KB", "http"])
        let run = start(group)
        try await journal.waitFor("run http")
        release.markRunning()
        let found = try await outcome(of: run)
        let error = try #require(found.first as? GraphLifecycleError, "\(found)")
        #expect(error.service == "http")
        switch fault {
        case .throwsAnError: #expect(error.description == "http failed: port taken")
        case .returnsEarly: #expect(error.description == "http stopped running before the service group was shut down")
        case .throwsCancellation: break
        }
        let timeline = Timeline(journal)
        #expect(timeline.matching("stop ") == ["stop http", "stop KB", "stop KA"])
        #expect(timeline.matching("willRemove ") == ["willRemove KB", "willRemove KA"])
    }

    // MARK: Shutdown at awkward moments

    @Test func aShutdownTriggeredManyTimesAtOnceStopsEachServiceOnce() async throws {
        for round in 0..<10 {
            let shape = RandomGraph(count: 40)
            let seed = "round \(round), seed \(shape.seed)"
            let journal = Journal()
            let group = try await makeGroup(
                shape.builder(journal: journal),
                journal: journal,
                configuration: noReadinessLimit
            ).group
            let run = start(group)
            // Every other round, the shutdowns race the startup.
            let raced = !round.isMultiple(of: 2)
            if !raced { try await journal.waitFor("run server") }
            await withTaskGroup(of: Void.self) { triggers in
                for _ in 0..<100 { triggers.addTask { await group.triggerGracefulShutdown() } }
            }
            let found = try await outcome(of: run)
            #expect(found.isEmpty, "\(seed): \(found)")
            let timeline = Timeline(journal)
            #expect(shape.endedViolations(timeline) == [], "\(seed)")
            #expect(shape.startupViolations(timeline) == [], "\(seed)")
            if !raced {
                let names = group.serviceNames.dropLast()
                #expect(
                    timeline.matching("stop ") == ["stop server"] + names.reversed().map { "stop \($0)" },
                    "\(seed)"
                )
            }
            // Once it has ended, a further trigger does nothing.
            await group.triggerGracefulShutdown()
            #expect(Timeline(journal).entries == timeline.entries)
        }
    }

    @Test func aShutdownTriggeredBeforeRunStillEndsAndRunsEveryHookOnce() async throws {
        let shape = RandomGraph(count: 30)
        let journal = Journal()
        let group = try await makeGroup(
            shape.builder(journal: journal),
            journal: journal,
            configuration: noReadinessLimit
        ).group
        await group.triggerGracefulShutdown()
        await group.triggerGracefulShutdown()
        let found = try await outcome(of: start(group))
        #expect(found.isEmpty, "seed \(shape.seed): \(found)")
        let timeline = Timeline(journal)
        #expect(shape.endedViolations(timeline) == [], "seed \(shape.seed)")
        #expect(timeline.count("run server") == timeline.count("stop server"))
    }

    /// A second `run()` while the first runs must not shut the graph down under the running services,
    /// and one after the first ended must not run anything again.
    @Test func runningTheGroupTwiceNeitherRerunsTheServicesNorTheHooks() async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) { Probe("KA", journal: journal) }
        builder.provide(KB.self, dependsOn: KA.self) { Probe("KB", journal: journal, upstream: [$0], needs: [$0]) }
        let group = try await makeGroup(builder, journal: journal).group
        let first = start(group)
        try await journal.waitFor("run server")
        let second = try await outcome(of: start(group))
        #expect(!second.isEmpty, "a second concurrent run() returned as if it had run the services")
        var timeline = Timeline(journal)
        #expect(timeline.matching("stop ").isEmpty)
        #expect(timeline.matching("willRemove ").isEmpty, "the second run() shut the graph down under the first")
        #expect(timeline.count("run KA") == 1)

        await group.triggerGracefulShutdown()
        #expect(try await outcome(of: first).isEmpty)
        _ = try await outcome(of: start(group))
        timeline = Timeline(journal)
        #expect(timeline.matching("run ") == ["run KA", "run KB", "run server"])
        #expect(timeline.matching("stop ") == ["stop server", "stop KB", "stop KA"])
        #expect(timeline.matching("willRemove ") == ["willRemove KB", "willRemove KA"])
        #expect(timeline.lastStop < timeline.firstWillRemove)
    }

    /// Cancelling the task that runs `run()` at a random moment (before it starts, during startup,
    /// while running, during the graph's shutdown) never hangs, and every hook still runs once.
    @Test func cancellingTheRunAtRandomMomentsStillStopsEverythingAndRunsEveryHookOnce() async throws {
        for round in 0..<30 {
            let shape = RandomGraph(count: 30)
            let seed = "round \(round), seed \(shape.seed)"
            let journal = Journal()
            let builder = shape.builder(journal: journal) { _ in
                for _ in 0..<3 { await Task.yield() }
            }
            let group = try await makeGroup(builder, journal: journal, configuration: noReadinessLimit).group
            let run = start(group)
            switch round % 3 {
            case 0: for _ in 0..<Int.random(in: 0...200) { await Task.yield() }
            case 1: try await Task.sleep(for: .microseconds(Int.random(in: 0...3000)))
            default: try await journal.waitFor(Bool.random() ? "run server" : "running N\(Int.random(in: 0..<30))")
            }
            run.cancel()
            _ = try await outcome(of: run)
            let timeline = Timeline(journal)
            #expect(shape.endedViolations(timeline) == [], "\(seed)")
            #expect(shape.startupViolations(timeline) == [], "\(seed)")
            #expect(timeline.count("run server") == timeline.count("stop server"), "\(seed)")
        }
    }

    /// Cancelling the run while `graph.shutdown()` is part-way through its hooks: every hook still runs
    /// exactly once, in reverse dependency order.
    @Test func cancellingTheRunWhileTheGraphShutsDownStillRunsEveryHookOnce() async throws {
        for round in 0..<10 {
            let shape = RandomGraph(count: 30)
            let seed = "round \(round), seed \(shape.seed)"
            let journal = Journal()
            let builder = shape.builder(journal: journal) { _ in try? await Task.sleep(for: .milliseconds(1)) }
            let group = try await makeGroup(builder, journal: journal, configuration: noReadinessLimit).group
            let run = start(group)
            try await journal.waitFor("run server")
            await group.triggerGracefulShutdown()
            try await waitUntil("\(round * 3 + 1) hooks ran") { journal.matching("willRemove ").count > round * 3 }
            run.cancel()
            #expect(try await outcome(of: run).isEmpty, "\(seed)")
            let timeline = Timeline(journal)
            #expect(shape.endedViolations(timeline) == [], "\(seed)")
            let names = group.serviceNames.dropLast()
            #expect(timeline.matching("stop ") == ["stop server"] + names.reversed().map { "stop \($0)" }, "\(seed)")
        }
    }

    /// A service that triggers the group's shutdown from inside its own `run()`, while the services
    /// after it are still starting: the run ends cleanly.
    @Test func aServiceTriggeringTheShutdownFromItsOwnRunEndsTheGroupCleanly() async throws {
        for _ in 0..<10 {
            let journal = Journal()
            let box = GroupBox()
            var builder = ServiceGraph.Builder()
            builder.provide(KA.self) { Probe("KA", journal: journal) }
            builder.provide(KB.self, dependsOn: KA.self) {
                Probe("KB", journal: journal, upstream: [$0], needs: [$0]) { probe in
                    probe.markRunning()
                    await box.group?.triggerGracefulShutdown()
                    try await gracefulShutdown()
                }
            }
            builder.provide(KC.self, dependsOn: KB.self) { Probe("KC", journal: journal, upstream: [$0], needs: [$0]) }
            let group = try await makeGroup(builder, journal: journal, configuration: noReadinessLimit).group
            box.group = group
            let found = try await outcome(of: start(group))
            #expect(found.isEmpty, "\(found)")
            let timeline = Timeline(journal)
            for name in ["KA", "KB", "KC", "server"] {
                #expect(timeline.count("run \(name)") == timeline.count("stop \(name)"), "\(name)")
            }
            #expect(timeline.count("run KA") == 1 && timeline.count("run KB") == 1)
            #expect(timeline.matching("willRemove ") == ["willRemove KC", "willRemove KB", "willRemove KA"])
            #expect(timeline.lastStop < timeline.firstWillRemove)
        }
    }

    // MARK: Hooks

    @Test func hooksThatThrowDuringTheShutdownAreReportedByKeyAndTheOthersStillRun() async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) {
            Probe("KA", journal: journal, hook: { _ in throw Failure("A's hook broke") })
        }
        builder.provide(KB.self, dependsOn: KA.self) { Probe("KB", journal: journal, upstream: [$0], needs: [$0]) }
        builder.provide(KC.self, dependsOn: KB.self) {
            Probe("KC", journal: journal, upstream: [$0], hook: { _ in throw Failure("C's hook broke") })
        }
        let group = try await makeGroup(builder, journal: journal).group
        let run = start(group)
        try await journal.waitFor("run server")
        await group.triggerGracefulShutdown()
        let found = try await outcome(of: run)
        #expect(!found.contains { $0 is GraphLifecycleError }, "the services themselves stopped cleanly: \(found)")
        let described = found.map { "\($0)" }.joined(separator: "\n")
        #expect(described.contains("KA") && described.contains("A's hook broke"), "\(described)")
        #expect(described.contains("KC") && described.contains("C's hook broke"), "\(described)")
        #expect(!described.contains("KB"), "\(described)")
        let timeline = Timeline(journal)
        #expect(timeline.matching("willRemove ") == ["willRemove KC", "willRemove KB", "willRemove KA"])
        #expect(timeline.lastStop < timeline.firstWillRemove)
    }

    /// A failing service and a throwing hook: the group's error comes first, the hook's after it.
    @Test func aServiceFailureAndAHookFailureAreBothReportedInThatOrder() async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) {
            Probe("KA", journal: journal, hook: { _ in throw Failure("A's hook broke") })
        }
        builder.provide(KB.self, dependsOn: KA.self) {
            Probe("KB", journal: journal, upstream: [$0], needs: [$0]) { probe in
                probe.markRunning()
                try await probe.waitForRelease()
                throw Failure("B broke")
            }
        }
        let (graph, group) = try await makeGroup(builder, journal: journal, server: nil)
        let run = start(group)
        try await journal.waitFor("running KB")
        graph[KB.self].release.markRunning()
        let found = try await outcome(of: run)
        #expect(found.count >= 2, "\(found)")
        #expect((found.first as? GraphLifecycleError)?.description == "KB failed: B broke", "\(found)")
        #expect(found.dropFirst().contains { "\($0)".contains("KA") && "\($0)".contains("A's hook broke") }, "\(found)")
        #expect(Timeline(journal).matching("willRemove ") == ["willRemove KB", "willRemove KA"])
    }

    // MARK: Odd graphs

    @Test func aServiceNeedingItselfIsRefusedBeforeAnythingStarts() async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) { Probe("KA", journal: journal) }
        builder.provide(KB.self, dependsOn: KA.self) {
            Probe("KB", journal: journal, upstream: [$0], needs: [$0], needsItself: true)
        }
        let graph = try await GraphServiceGroup.build(builder)
        #expect {
            try GraphServiceGroup(
                graph: graph,
                server: ("server", ScriptedServer(journal: journal)),
                configuration: testConfiguration(),
                logger: testLogger
            )
        } throws: { error in
            guard let error = error as? GraphLifecycleError, case .needsServiceOutOfOrder(let needed) = error.reason
            else { return false }
            return error.service == "KB" && needed == "KB"
        }
        #expect(journal.all.isEmpty)
        try await graph.shutdown()
        #expect(journal.all == ["willRemove KB", "willRemove KA"])
    }

    /// One instance under two keys: the run ends cleanly, and its hook runs once after every stop.
    @Test func theSameInstanceUnderTwoKeysEndsCleanlyWithOneHook() async throws {
        let journal = Journal()
        let shared = Probe("shared", journal: journal)
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) { shared }
        builder.provide(KB.self) { shared }
        builder.provide(KC.self, dependsOn: KB.self) { Probe("KC", journal: journal, upstream: [$0], needs: [$0]) }
        let group = try await makeGroup(builder, journal: journal).group
        let run = start(group)
        try await journal.waitFor("run server")
        await group.triggerGracefulShutdown()
        let found = try await outcome(of: run)
        #expect(found.isEmpty, "\(found)")
        let timeline = Timeline(journal)
        // Unspecified by the docs: the group lists both keys and calls the instance's run() once per
        // key. Whatever it does, each run() it made stopped, KC ran once the instance was running, and
        // the graph ran the instance's hook once, after every service stopped.
        #expect(timeline.count("run shared") >= 1)
        #expect(timeline.count("stop shared") == timeline.count("run shared"), "\(timeline.entries)")
        #expect(try #require(timeline["running shared"]) < (try #require(timeline["run KC"])))
        // The instance is one service under both keys: removed after KC, which uses it through KB,
        // whichever key's factory returned it first.
        #expect(timeline.matching("willRemove ") == ["willRemove KC", "willRemove shared"])
        #expect(timeline.lastStop < timeline.firstWillRemove)
    }

    @Test func valueTypeServicesRunAfterWhatTheyNeedAndStopInReverse() async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        builder.provide(GaugeB.self, dependsOn: GaugeA.self) {
            Gauge(name: "GaugeB", journal: journal, needsRunning: [$0])
        }
        builder.provide(GaugeA.self) { Gauge(name: "GaugeA", journal: journal, needsRunning: []) }
        // A struct behind an existential key, needing a copy of GaugeB.
        builder.provide(AnyServiceKey.self, dependsOn: GaugeB.self) {
            Gauge(name: "AnyServiceKey", journal: journal, needsRunning: [$0]) as any Service
        }
        let group = try await makeGroup(builder, journal: journal).group
        #expect(group.serviceNames == ["GaugeA", "GaugeB", "AnyServiceKey", "server"])
        let run = start(group)
        try await journal.waitFor("run server")
        await group.triggerGracefulShutdown()
        #expect(try await outcome(of: run).isEmpty)
        let timeline = Timeline(journal)
        #expect(try #require(timeline["running GaugeA"]) < (try #require(timeline["run GaugeB"])))
        #expect(try #require(timeline["running GaugeB"]) < (try #require(timeline["run AnyServiceKey"])))
        #expect(
            timeline.matching("stop ") == ["stop server", "stop AnyServiceKey", "stop GaugeB", "stop GaugeA"]
        )
        #expect(
            timeline.matching("willRemove ") == ["willRemove AnyServiceKey", "willRemove GaugeB", "willRemove GaugeA"]
        )
    }

    @Test(arguments: [false, true])
    func aGraphWithNoServicesRunsNothingAndStillShutsTheGraphDown(withServer: Bool) async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        builder.provide(NumberKey.self) { 7 }
        builder.provide(HooksOnlyKey.self, dependsOn: NumberKey.self) { _ in HooksOnly(journal: journal) }
        let group = try await makeGroup(builder, journal: journal, server: withServer ? .standIn : nil).group
        #expect(group.serviceNames == (withServer ? ["server"] : []))
        let run = start(group)
        if withServer { try await journal.waitFor("run server") }
        await group.triggerGracefulShutdown()
        #expect(try await outcome(of: run).isEmpty)
        #expect(journal.all == (withServer ? ["run server", "stop server"] : []) + ["willRemove hooksOnly"])

        // A graph with nothing in it at all.
        let nothing = try await makeGroup(ServiceGraph.Builder(), journal: journal, server: nil).group
        #expect(nothing.serviceNames.isEmpty)
        let emptyRun = start(nothing)
        await nothing.triggerGracefulShutdown()
        #expect(try await outcome(of: emptyRun).isEmpty)
    }

    /// A child graph's group runs the child's own services only: the parent's keep running, and the
    /// child's shutdown runs the child's hooks only. Needing a parent's service is refused.
    @Test func aChildGraphsGroupRunsOnlyTheChildsServices() async throws {
        let journal = Journal()
        var builder = ServiceGraph.Builder()
        builder.provide(KA.self) { Probe("KA", journal: journal) }
        builder.provide(KB.self, dependsOn: KA.self) { Probe("KB", journal: journal, upstream: [$0], needs: [$0]) }
        let (parent, parentGroup) = try await makeGroup(builder, journal: journal, server: nil)
        let parentRun = start(parentGroup)
        try await journal.waitFor("running KB")

        var childBuilder = parent.makeChildBuilder()
        childBuilder.provide(KC.self, dependsOn: KA.self) { Probe("KC", journal: journal, upstream: [$0]) }
        childBuilder.provide(KD.self, dependsOn: KC.self) { Probe("KD", journal: journal, upstream: [$0], needs: [$0]) }
        let childGroup = try await makeGroup(
            childBuilder,
            journal: journal,
            server: .custom("child", ScriptedServer("child", journal: journal))
        ).group
        #expect(childGroup.serviceNames == ["KC", "KD", "child"])
        let childRun = start(childGroup)
        try await journal.waitFor("run child")
        await childGroup.triggerGracefulShutdown()
        #expect(try await outcome(of: childRun).isEmpty)
        var timeline = Timeline(journal)
        #expect(timeline.count("run KA") == 1 && timeline.count("run KB") == 1)
        #expect(timeline.count("stop KA") == 0 && timeline.count("stop KB") == 0)
        #expect(timeline.matching("willRemove ") == ["willRemove KD", "willRemove KC"])
        #expect(parent[KA.self].running.isRunning)

        // A child service needing the parent's KA running: the child's group does not run KA.
        var needy = parent.makeChildBuilder()
        needy.provide(KC.self, dependsOn: KA.self) { Probe("needy", journal: journal, upstream: [$0], needs: [$0]) }
        let needyGraph = try await GraphServiceGroup.build(needy)
        #expect(throws: GraphLifecycleError.self) {
            try GraphServiceGroup(
                graph: needyGraph,
                server: nil,
                configuration: testConfiguration(),
                logger: testLogger
            )
        }
        try await needyGraph.shutdown()

        await parentGroup.triggerGracefulShutdown()
        #expect(try await outcome(of: parentRun).isEmpty)
        timeline = Timeline(journal)
        #expect(timeline.matching("run ") == ["run KA", "run KB", "run KC", "run KD", "run child"])
        #expect(timeline.count("run needy") == 0)
        #expect(
            timeline.matching("willRemove ") == [
                "willRemove KD", "willRemove KC", "willRemove needy", "willRemove KB", "willRemove KA",
            ]
        )
    }
}
