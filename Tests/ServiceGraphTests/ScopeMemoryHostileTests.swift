import ServiceGraph
import ServiceGraphTestSupport
import Testing

// Hostile tests of a scope's memory: one allocation holds the scope's fields and state (the header)
// and its instance cells, creation order, resolve gate and mutex (the tail). Every test here ends by
// counting: each instance made is released exactly once, each `willRemove` owed runs exactly once (a
// dependent's before its dependency's), and nothing is released while a scope, an inner scope or a
// resolve in flight can still read it. No instance holds its dependencies: a scope's cell is the only
// owner of what it made, so freeing a cell early shows as a dead instance, not a hidden retain.

extension ScopeKind {
    fileprivate static let smSession = ScopeKind("sm-session")
    fileprivate static let smRequest = ScopeKind("sm-request", inside: .smSession)
    fileprivate static let smStep = ScopeKind("sm-step", inside: .smRequest)
}

// MARK: - What the instances report to

/// What one test's instances report to: which are alive, by name, each name unique; the hooks and
/// releases, in order; and which instance was made from which.
private final class SMLedger: Sendable {
    private struct State {
        var made = 0
        var alive: Set<String> = []
        var doubleReleases: [String] = []
        var edges: [(dependent: String, dependency: String)] = []
    }

    let log = EventLog()
    private let state = Locked(State())

    /// A new instance's serial and unique name.
    func register(_ prefix: String) -> (serial: Int, name: String) {
        state.withLock { state in
            state.made += 1
            let name = "\(prefix)#\(state.made)"
            state.alive.insert(name)
            return (state.made, name)
        }
    }

    func unregister(_ name: String) {
        state.withLock { state in
            if state.alive.remove(name) == nil { state.doubleReleases.append(name) }
        }
    }

    func edge(_ dependent: String, _ dependency: String) {
        state.withLock { $0.edges.append((dependent, dependency)) }
    }

    func isAlive(_ name: String) -> Bool { state.withLock { $0.alive.contains(name) } }
    var aliveNames: [String] { state.withLock { $0.alive.sorted() } }
    var doubleReleases: [String] { state.withLock { $0.doubleReleases } }
    var edges: [(dependent: String, dependency: String)] { state.withLock { $0.edges } }

    /// The log's entries that start with `prefix`, without it.
    func entries(_ prefix: String) -> [String] {
        log.all.compactMap { $0.hasPrefix(prefix + " ") ? String($0.dropFirst(prefix.count + 1)) : nil }
    }
}

/// An instance that counts itself alive in its ledger and carries a canary derived from its serial:
/// memory freed early or overwritten shows as a canary that does not match.
private class SMNode: @unchecked Sendable {
    let serial: Int
    let name: String
    let ledger: SMLedger
    /// The names of the instances it was made from: not held, so that only their scope keeps them.
    let dependencies: [String]
    private let canary: UInt64

    init(_ prefix: String, _ ledger: SMLedger, after dependencies: [SMNode] = []) {
        (serial, name) = ledger.register(prefix)
        self.ledger = ledger
        self.dependencies = dependencies.map(\.name)
        canary = Self.canary(serial)
        for dependency in dependencies { ledger.edge(name, dependency.name) }
    }

    deinit {
        ledger.log.record("deinit \(name)")
        ledger.unregister(name)
    }

    var isIntact: Bool { canary == Self.canary(serial) && name.hasSuffix("#\(serial)") }

    private static func canary(_ serial: Int) -> UInt64 {
        0x9E37_79B9_7F4A_7C15 &* UInt64(truncatingIfNeeded: serial &+ 1) ^ 0x5EED
    }
}

/// An instance with hooks. Its `willRemove` checks that what it was made from is still alive: a
/// scope releases nothing before every hook it owes has run.
private final class SMHooked: SMNode, LifecycleHooks, @unchecked Sendable {
    func didAdd() async throws {
        ledger.log.record("didAdd \(name)")
    }

    func willRemove() async throws {
        for dependency in dependencies where !ledger.isAlive(dependency) {
            ledger.log.record("lost \(dependency) before willRemove \(name)")
        }
        if !isIntact { ledger.log.record("lost \(name) in its own willRemove") }
        ledger.log.record("willRemove \(name)")
    }
}

/// A generated key's service (one distinct key per index, for scopes of many services) that reports
/// to a ledger through a hooked node it alone holds.
private final class SMGenerated: GeneratedService, LifecycleHooks, @unchecked Sendable {
    let node: SMHooked

    init(_ index: Int, _ ledger: SMLedger) {
        node = SMHooked("g\(index)", ledger)
        super.init(index: index, value: 1)
    }

    func didAdd() async throws { try await node.didAdd() }
    func willRemove() async throws { try await node.willRemove() }
}

/// A seed too wide for any inline storage: 32 words derived from its serial, an object and a string.
private struct SMWide: Sendable {
    typealias Words = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    let serial: Int
    let head: Words
    let body: (Words, Words, Words)
    let token: SMNode
    let label: String

    init(_ serial: Int, token: SMNode) {
        self.serial = serial
        head = Self.words(serial, from: 0)
        body = (Self.words(serial, from: 8), Self.words(serial, from: 16), Self.words(serial, from: 24))
        self.token = token
        label = Self.label(serial)
    }

    var isIntact: Bool {
        let expected = (0..<32).map { Self.word(serial, $0) }
        let actual = Self.flat(head) + Self.flat(body.0) + Self.flat(body.1) + Self.flat(body.2)
        return actual == expected && token.isIntact && label == Self.label(serial)
    }

    private static func label(_ serial: Int) -> String {
        "wide \(serial) " + String(repeating: "w", count: serial % 48)
    }

    private static func word(_ serial: Int, _ index: Int) -> UInt64 {
        UInt64(truncatingIfNeeded: serial) &* 0xBF58_476D_1CE4_E5B9 &+ UInt64(index)
    }

    private static func words(_ serial: Int, from start: Int) -> Words {
        let w = (0..<8).map { word(serial, start + $0) }
        return (w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7])
    }

    private static func flat(_ words: Words) -> [UInt64] {
        withUnsafeBytes(of: words) { raw in (0..<8).map { raw.load(fromByteOffset: $0 * 8, as: UInt64.self) } }
    }
}

/// What a scope hands out that reaches it without its handle.
private struct SMHandles: Sendable {
    let request: Provider<SMRequestKey>
    let work: Provider<SMWorkKey>
    let note: Provider<SMNoteKey>
    let lazyRequest: Lazy<SMRequestKey>
    let lazyWork: Lazy<SMWorkKey>
}

/// The seeds of one test's scopes: each scope's wide value and two connections it owns, made here and
/// held by the scope alone; the names of the owned pairs, to check their order.
private final class SMSeeds: Sendable {
    let ledger: SMLedger
    private let serials = Tally()
    private let pairs = Locked<[(second: String, connection: String)]>([])

    init(ledger: SMLedger) {
        self.ledger = ledger
    }

    /// The owned pairs given so far: (second, connection).
    var owned: [(second: String, connection: String)] { pairs.withLock { $0 } }

    /// A new scope's seeds, with `shared` as the caller's (or owned, if `owned`).
    func next(
        shared: SMHooked,
        owned: Bool = false
    ) -> (serial: Int, seeds: [ScopeSeed], names: (connection: String, second: String, token: String)) {
        let serial = serials.increment()
        let connection = SMHooked("connection", ledger)
        let second = SMHooked("second", ledger)
        let token = SMNode("token", ledger)
        pairs.withLock { $0.append((second.name, connection.name)) }
        let seeds = [
            ScopeSeed(SMSharedKey.self, shared, ownedByScope: owned),
            ScopeSeed(SMWideKey.self, SMWide(serial, token: token)),
            ScopeSeed(SMSecondConnectionKey.self, second, ownedByScope: true),
            ScopeSeed(SMConnectionKey.self, connection, ownedByScope: true),
        ]
        return (serial, seeds, (connection.name, second.name, token.name))
    }
}

private enum SMBaseKey: ServiceKey { typealias Value = SMHooked }
private enum SMRequestKey: ServiceKey { typealias Value = SMHooked }
private enum SMWorkKey: ServiceKey { typealias Value = SMHooked }
private enum SMNoteKey: ServiceKey { typealias Value = SMNode }
private enum SMHandlesKey: ServiceKey { typealias Value = SMHandles }
private enum SMUserKey: ServiceKey { typealias Value = SMNode }
private enum SMSessionKey: ServiceKey { typealias Value = SMHooked }
private enum SMCartKey: ServiceKey { typealias Value = SMHooked }
private enum SMStepKey: ServiceKey { typealias Value = SMHooked }
private enum SMConfigKey: ServiceKey { typealias Value = SMNode }
private enum SMEchoKey: ServiceKey { typealias Value = SMNode }
private enum SMEchoMakerKey: ServiceKey { typealias Value = Provider<SMEchoKey> }
private enum SMWideKey: ServiceKey { typealias Value = SMWide }
private enum SMConnectionKey: ServiceKey { typealias Value = SMHooked }
private enum SMSecondConnectionKey: ServiceKey { typealias Value = SMHooked }
private enum SMSharedKey: ServiceKey { typealias Value = SMHooked }
private enum SMHolderKey: ServiceKey { typealias Value = SMHooked }
private enum SMSummaryKey: ServiceKey { typealias Value = String }

/// A singleton base; a synchronous scoped request on it; an asynchronous scoped work on the request
/// (held at `gate` when given); a transient note on the work; a transient of handles on them. With
/// `nested`, a session kind (seeded with a user), a request kind inside it and a step kind inside that.
private func smBuilder(_ ledger: SMLedger, gate: Gate? = nil, nested: Bool = false) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(SMBaseKey.self) { SMHooked("base", ledger) }
    builder.provide(SMRequestKey.self, lifetime: .scoped, dependsOn: SMBaseKey.self) {
        SMHooked("request", ledger, after: [$0])
    }
    builder.provide(SMWorkKey.self, lifetime: .scoped, dependsOn: SMRequestKey.self) { request async in
        await Task.yield()
        if let gate {
            ledger.log.record("start work")
            await gate.wait()
        }
        return SMHooked("work", ledger, after: [request])
    }
    builder.provide(SMNoteKey.self, lifetime: .transient, dependsOn: SMWorkKey.self) {
        SMNode("note", ledger, after: [$0])
    }
    builder.provide(
        SMHandlesKey.self,
        lifetime: .transient,
        dependsOn: Provider<SMRequestKey>.self,
        Provider<SMWorkKey>.self,
        Provider<SMNoteKey>.self,
        Lazy<SMRequestKey>.self,
        Lazy<SMWorkKey>.self
    ) { SMHandles(request: $0, work: $1, note: $2, lazyRequest: $3, lazyWork: $4) }
    guard nested else { return builder }
    builder.inScope(.smSession) { session in
        session.seed(SMUserKey.self)
        session.provide(SMSessionKey.self, lifetime: .scoped, dependsOn: SMUserKey.self, SMBaseKey.self) {
            SMHooked("session", ledger, after: [$0, $1])
        }
    }
    builder.inScope(.smRequest) { request in
        request.provide(SMCartKey.self, lifetime: .scoped, dependsOn: SMSessionKey.self) { session async in
            await Task.yield()
            return SMHooked("cart", ledger, after: [session])
        }
    }
    builder.inScope(.smStep) { step in
        step.provide(SMStepKey.self, lifetime: .scoped, dependsOn: SMCartKey.self, SMSessionKey.self) {
            SMHooked("step", ledger, after: [$0, $1])
        }
    }
    return builder
}

/// Provides generated key `index` as a scoped ``SMGenerated``, made by a synchronous or asynchronous
/// factory.
private func smProvideGenerated(
    _ index: Int,
    asynchronous: Bool,
    ledger: SMLedger,
    into builder: inout ServiceGraph.Builder
) {
    func open<K: GeneratedKey>(_ key: K.Type) {
        if asynchronous {
            builder.provide(key, lifetime: .scoped) { () async -> GeneratedService in
                await Task.yield()
                return SMGenerated(index, ledger)
            }
        } else {
            builder.provide(key, lifetime: .scoped) { () -> GeneratedService in SMGenerated(index, ledger) }
        }
    }
    open(GeneratedKeys.key(index))
}

// MARK: - Checks

/// Every `didAdd` was followed by exactly one `willRemove`; no `willRemove` ran twice or without a
/// `didAdd` (but for the owned seeds, named with a prefix in `ownedSeeds`, which get none); each ran
/// before the instance's release and after that of everything made from the instance while it was
/// live; nothing a hook needed was gone.
private func smExpectHooksRanOnce(
    _ ledger: SMLedger,
    ownedSeeds: [String] = [],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    var didAdd: [String: [Int]] = [:]
    var willRemove: [String: [Int]] = [:]
    var released: [String: Int] = [:]
    var violations: [String] = []
    for (position, entry) in ledger.log.all.enumerated() {
        if entry.hasPrefix("didAdd ") {
            didAdd[String(entry.dropFirst(7)), default: []].append(position)
        } else if entry.hasPrefix("willRemove ") {
            willRemove[String(entry.dropFirst(11)), default: []].append(position)
        } else if entry.hasPrefix("deinit ") {
            released[String(entry.dropFirst(7))] = position
        } else if entry.hasPrefix("lost ") {
            violations.append(entry)
        }
    }
    for (name, positions) in didAdd {
        if positions.count != 1 { violations.append("didAdd \(name) ran \(positions.count) times") }
        guard let removal = willRemove[name] else {
            violations.append("\(name) got didAdd but no willRemove")
            continue
        }
        if removal[0] < positions[0] { violations.append("willRemove \(name) ran before its didAdd") }
    }
    for (name, positions) in willRemove {
        if positions.count != 1 { violations.append("willRemove \(name) ran \(positions.count) times") }
        if didAdd[name] == nil, !ownedSeeds.contains(where: { name.hasPrefix($0) }) {
            violations.append("willRemove \(name) ran without didAdd")
        }
        if let release = released[name], release < positions[0] {
            violations.append("\(name) was released before its willRemove")
        }
    }
    for (dependent, dependency) in ledger.edges {
        guard let first = willRemove[dependent]?.first, let second = willRemove[dependency]?.first else { continue }
        // Made from an instance its owner had ended already (a caller's seed, given again): no order.
        if let added = didAdd[dependent]?.first, added > second { continue }
        if second < first { violations.append("willRemove \(dependency) ran before that of \(dependent)") }
    }
    #expect(
        violations.isEmpty,
        "\(violations.count) violations: \(violations.prefix(12))",
        sourceLocation: sourceLocation
    )
}

/// Every instance was released exactly once, but for those named with a prefix in `keeping`.
private func smExpectReleased(
    _ ledger: SMLedger,
    keeping: [String] = [],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let alive = ledger.aliveNames.filter { name in !keeping.contains { name.hasPrefix($0) } }
    #expect(
        alive.isEmpty,
        "\(alive.count) instances never released: \(alive.prefix(12))",
        sourceLocation: sourceLocation
    )
    #expect(ledger.doubleReleases.isEmpty, "released twice: \(ledger.doubleReleases)", sourceLocation: sourceLocation)
}

/// Waits (polling, within a generous deadline: a guard against a hang, not a timing assertion) until
/// `condition` holds; the caller then asserts it.
private func smEventually(_ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + .seconds(ProcessEnvironment.isSanitizerRun ? 120 : 30)
    while !condition(), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(2)) }
}

/// Expects `error` to be a scope's or graph's refusal: the scope closed, or the graph shut down.
private func smExpectRefusal(_ error: any Error, sourceLocation: SourceLocation = #_sourceLocation) {
    guard let error = error as? ServiceGraphError else {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        return
    }
    #expect(
        !error.codes.isEmpty && error.codes.allSatisfy { $0 == .scopeClosed || $0 == .graphShutDown },
        "\(error)",
        sourceLocation: sourceLocation
    )
}

/// Expects `error` to be a ``ServiceGraphError`` of exactly `codes`.
private func smExpectCodes(
    _ error: any Error,
    _ codes: [ServiceGraphError.Code],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect((error as? ServiceGraphError)?.codes == codes, "\(error)", sourceLocation: sourceLocation)
}

/// The index a recorder's `willRemove` event names; nil for other events.
private func smRemoved(_ event: GraphRecorder.Event) -> Int? {
    if case .willRemove(let index) = event { index } else { nil }
}

/// Whether the tests run under a sanitizer: the loops are shorter there.
private let smScale = ProcessEnvironment.isSanitizerRun ? 4 : 1

@Suite("Scope memory, hostile", .serialized)
struct ScopeMemoryHostileTests {
    // MARK: Thousands of scopes

    /// 3,200 scopes from 16 tasks at once, ended every way: closed, dropped, closed twice at the same
    /// moment, resolved from four tasks at once, opened and dropped unused, dropped with a provider
    /// used after. Each ends once, each instance is released once, and each dropped scope says so once
    /// (naming the services whose hooks it owed, if any).
    @Test func thousandsOfScopesOpenedClosedAndDroppedFromManyTasksReleaseEachInstanceOnce() async throws {
        let ledger = SMLedger()
        let droppedEvents = Tally()
        let owingEvents = Tally()
        var builder = smBuilder(ledger)
        builder.eventHandler = { event in
            guard event.kind == .scopeDropped else { return }
            droppedEvents.increment()
            if event.key != nil { owingEvents.increment() }
        }
        let graph = try await builder.build()
        let (tasks, perTask) = (16, 200 / smScale)
        try await withDeadline(.seconds(60)) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        for index in 0..<perTask { try await Self.exercise(graph, mode: (task * perTask + index) % 6) }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await graph.shutdown()

        let modes = (0..<(tasks * perTask)).map { $0 % 6 }
        let count = { (selected: Set<Int>) in modes.filter { selected.contains($0) }.count }
        #expect(ledger.log.all.filter { $0.hasPrefix("didAdd request") }.count == count([0, 1, 2, 3, 5]))
        #expect(ledger.log.all.filter { $0.hasPrefix("didAdd work") }.count == count([0, 1, 3, 5]))
        #expect(droppedEvents.count == count([1, 4, 5]), "one scopeDropped per scope dropped, owing hooks or not")
        #expect(owingEvents.count == count([1, 5]), "a key on each dropped scope that owed hooks")
        #expect(ledger.entries("willRemove").last?.hasPrefix("base") == true, "the singleton's hook runs last")
        smExpectHooksRanOnce(ledger)
        smExpectReleased(ledger, keeping: ["base"])
    }

    /// One scope's life, ended as `mode` says.
    private static func exercise(_ graph: ServiceGraph, mode: Int) async throws {
        if mode == 5 {
            // Dropped while a provider and a lazy handle from it are still held: both refuse.
            let handles = try await handlesOfADroppedScope(graph)
            let provided = await #expect(throws: ServiceGraphError.self) { try await handles.work() }
            #expect(provided?.codes == [.scopeClosed])
            let lazy = await #expect(throws: ServiceGraphError.self) { try await handles.lazyRequest.value }
            #expect(lazy?.codes == [.scopeClosed])
            return
        }
        let scope = try graph.makeScope()
        switch mode {
        case 0:
            let work = try await scope.resolve(SMWorkKey.self)
            let request = try await scope.resolve(SMRequestKey.self)
            #expect(work.isIntact && request.isIntact && work.dependencies == [request.name])
            try await scope.close()
            #expect(scope.isClosed)
        case 1:
            // Dropped on return, without a close.
            #expect(try await scope.resolve(SMWorkKey.self).isIntact)
        case 2:
            #expect(try await scope.resolve(SMRequestKey.self).isIntact)
            let closed = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        do {
                            try await scope.close()
                            return 1
                        } catch {
                            smExpectCodes(error, [.scopeClosed])
                            return 0
                        }
                    }
                }
                return await group.reduce(0, +)
            }
            #expect(closed == 1, "exactly one of two closes at once closes the scope")
        case 3:
            let identities = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
                for _ in 0..<4 { group.addTask { ObjectIdentifier(try await scope.resolve(SMWorkKey.self)) } }
                return try await group.reduce(into: Set<ObjectIdentifier>()) { $0.insert($1) }
            }
            #expect(identities.count == 1)
            #expect(try await scope.resolve(SMNoteKey.self).isIntact)
            try await scope.close()
        default:
            break  // Opened and dropped, nothing made.
        }
    }

    /// The handles of a scope that made its work through one of them and was then dropped.
    private static func handlesOfADroppedScope(_ graph: ServiceGraph) async throws -> SMHandles {
        let scope = try graph.makeScope()
        let handles = try await scope.resolve(SMHandlesKey.self)
        #expect(try await handles.work().isIntact)
        return handles
    }

    // MARK: Providers and lazy handles in flight

    /// The last handle of a scope is dropped while another task, through one of the scope's providers
    /// or lazy handles, waits for an instance being made. The scope refuses new work at once but
    /// releases nothing, and runs no hook, until that call has returned; a lazy handle's value outlives
    /// the scope, and is released with the handle.
    @Test(arguments: [false, true])
    func aScopeDroppedWhileAnotherTaskMakesAnInstanceThroughItReleasesOnlyAfterTheCallReturns(
        throughLazy: Bool
    ) async throws {
        let ledger = SMLedger()
        let gate = Gate()
        let graph = try await smBuilder(ledger, gate: gate).build()
        var scope: ServiceScope? = try graph.makeScope()
        let requestName = try await scope?.resolve(SMRequestKey.self).name ?? ""
        var handles: SMHandles? = try await scope?.resolve(SMHandlesKey.self)
        // Handed over, so that the task keeps nothing once it returns.
        let handOver = Locked(handles)
        let inFlight = Task { () -> String in
            guard let handles = handOver.withLock({ $0.take() }) else { return "no handles" }
            do {
                let work = throughLazy ? try await handles.lazyWork.value : try await handles.work()
                let ok = work.isIntact && work.dependencies == [requestName]
                return ok ? work.name : "corrupt \(work.name)"
            } catch {
                smExpectRefusal(error)
                return "refused"
            }
        }
        try await ledger.log.waitFor("start work")
        scope = nil  // The last handle.

        // New work is refused at once...
        let refused = await #expect(throws: ServiceGraphError.self) { try await handles?.lazyRequest.value }
        #expect(refused?.codes == [.scopeClosed])
        for _ in 0..<64 { await Task.yield() }
        // ...but what the scope made stays until the call in flight returns.
        #expect(ledger.isAlive(requestName))
        #expect(ledger.log.count(of: "willRemove \(requestName)") == 0)
        await gate.open()
        let outcome = await inFlight.value
        #expect(!outcome.hasPrefix("corrupt") && outcome != "no handles", "\(outcome)")
        try await graph.shutdown()

        #expect(ledger.log.count(of: "willRemove \(requestName)") == 1)
        #expect(!ledger.isAlive(requestName))
        if outcome.hasPrefix("work") {
            #expect(ledger.log.count(of: "willRemove \(outcome)") == 1)
            if throughLazy {
                // The lazy handle keeps the value it made past its scope's end, readable and whole.
                #expect(handles?.lazyWork.isMade == true)
                let kept = try await handles?.lazyWork.value
                #expect(kept?.name == outcome && kept?.isIntact == true)
                #expect(ledger.isAlive(outcome))
            } else {
                #expect(!ledger.isAlive(outcome))
            }
        }
        let late = await #expect(throws: ServiceGraphError.self) { try await handles?.request() }
        #expect(late?.codes == [.scopeClosed])
        handles = nil
        smExpectHooksRanOnce(ledger)
        smExpectReleased(ledger, keeping: ["base"])
    }

    /// Tasks read a scope's instance through its providers and lazy handles, checking it whole on every
    /// read, while the scope's last handle is dropped at a different moment each round: each read gets
    /// the one instance, whole, or a refusal; each instance is released once, after its hook.
    @Test func providersHammeringAScopeWhoseLastHandleIsDroppedReadWholeInstancesOrARefusal() async throws {
        let ledger = SMLedger()
        let graph = try await smBuilder(ledger).build()
        let served = Tally()
        try await withDeadline(.seconds(60)) {
            for round in 0..<(160 / smScale) {
                let holder = Locked<ServiceScope?>(nil)
                let (requestName, handles) = try await Self.openHeld(graph, in: holder)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, handle) in handles.enumerated() {
                        group.addTask {
                            for read in 0..<30 {
                                do {
                                    let request =
                                        (read + index).isMultiple(of: 3)
                                        ? try await handle.lazyRequest.value : try await handle.request()
                                    #expect(request.isIntact && request.name == requestName)
                                    served.increment()
                                } catch {
                                    smExpectRefusal(error)
                                    return
                                }
                            }
                        }
                    }
                    group.addTask {
                        for _ in 0..<(round % 11) { await Task.yield() }
                        let last = holder.withLock { $0.take() }
                        _ = last
                    }
                    try await group.waitForAll()
                }
            }
        }
        try await graph.shutdown()
        #expect(served.count > 0)
        // Lazy handles keep what they made until the tasks that held them are gone.
        await smEventually { ledger.aliveNames.allSatisfy { $0.hasPrefix("base") } }
        smExpectHooksRanOnce(ledger)
        smExpectReleased(ledger, keeping: ["base"])
    }

    /// Opens a scope that only `holder` keeps, makes its request, and returns the request's name and
    /// four sets of the scope's handles.
    private static func openHeld(
        _ graph: ServiceGraph,
        in holder: Locked<ServiceScope?>
    ) async throws -> (String, [SMHandles]) {
        let scope = try graph.makeScope()
        holder.withLock { $0 = scope }
        let requestName = try await scope.resolve(SMRequestKey.self).name
        var handles: [SMHandles] = []
        for _ in 0..<4 { handles.append(try await scope.resolve(SMHandlesKey.self)) }
        return (requestName, handles)
    }

    // MARK: Nested kinds

    /// A session, two requests inside it and a step inside one request: the outer handles are dropped
    /// first, in several orders, or the session is closed under its inner scopes. An inner scope keeps
    /// the outer ones, and reads their instances, until it ends; then everything goes, inner first.
    @Test func outerScopesDroppedBeforeInnerOnesStayReadableAndReleaseInnermostFirst() async throws {
        let ledger = SMLedger()
        let graph = try await smBuilder(ledger, nested: true).build()
        try await withDeadline(.seconds(60)) {
            for round in 0..<40 {
                try await Self.nestedRound(graph, ledger: ledger, variant: round % 5)
            }
        }
        try await graph.shutdown()
        smExpectHooksRanOnce(ledger)
        smExpectReleased(ledger, keeping: ["base"])
    }

    private static func nestedRound(_ graph: ServiceGraph, ledger: SMLedger, variant: Int) async throws {
        var session: ServiceScope? = try graph.makeScope(
            .smSession,
            seeding: ScopeSeed(SMUserKey.self, SMNode("user", ledger))
        )
        var request: ServiceScope? = try session?.makeScope(.smRequest)
        var sibling: ServiceScope? = try session?.makeScope(.smRequest)
        var step: ServiceScope? = try request?.makeScope(.smStep)
        let stepName = try #require(try await step?.resolve(SMStepKey.self).name)
        let cartName = try #require(try await step?.resolve(SMCartKey.self).name)
        let sessionName = try #require(try await step?.resolve(SMSessionKey.self).name)
        let userName = try #require(step?.resolveSynchronously(SMUserKey.self).name)
        let siblingCart = try #require(try await sibling?.resolve(SMCartKey.self).name)
        #expect(siblingCart != cartName)
        #expect(try await request?.resolve(SMCartKey.self).name == cartName)

        if variant == 4 {
            // Closed under its inner scopes, still held: they close first, and all is released.
            try await session?.close()
            #expect(step?.isClosed == true && request?.isClosed == true && sibling?.isClosed == true)
            let refused = await #expect(throws: ServiceGraphError.self) { try await step?.resolve(SMSessionKey.self) }
            #expect(refused?.codes == [.scopeClosed])
            for name in [stepName, cartName, siblingCart, sessionName, userName] {
                #expect(!ledger.isAlive(name), "\(name) outlived its closed session")
            }
            return
        }
        // The outer handles go first.
        session = nil
        if variant == 2 { sibling = nil }
        request = nil
        // The step keeps its request and session: it still reads them, whole, and they owe their hooks.
        for _ in 0..<16 { await Task.yield() }
        #expect(try await Self.isWhole(step?.resolve(SMSessionKey.self), named: sessionName))
        #expect(try await step?.resolve(SMCartKey.self).name == cartName)
        #expect(try await step?.resolve(SMStepKey.self).name == stepName)
        for name in [cartName, sessionName, userName] {
            #expect(ledger.isAlive(name), "\(name) released while an inner scope could read it")
            #expect(ledger.log.count(of: "willRemove \(name)") == 0)
        }
        switch variant {
        case 0:
            step = nil
            sibling = nil
        case 1:
            sibling = nil
            #expect(ledger.isAlive(sessionName))
            step = nil
        case 2:
            step = nil
        default:
            try await step?.close()
            step = nil
            #expect(!ledger.isAlive(stepName), "a closed step releases its own at once")
            #expect(ledger.isAlive(sessionName), "the sibling still holds the session")
            try await sibling?.close()
            sibling = nil
        }
        // Everything of the session goes once the last inner scope does (hooks of a dropped scope run
        // in the background).
        await smEventually {
            ![stepName, cartName, siblingCart, sessionName, userName].contains(where: ledger.isAlive)
        }
        for name in [stepName, cartName, siblingCart, sessionName, userName] {
            #expect(!ledger.isAlive(name), "\(name) never released")
        }
    }

    /// Whether `node` is whole and named `name` (the caller does not keep it).
    private static func isWhole(_ node: SMNode?, named name: String) -> Bool {
        node?.isIntact == true && node?.name == name
    }

    /// Many tasks open request scopes from one session, resolve in them, close or drop them, while the
    /// session closes: each open succeeds or is refused, the session's close returns only once every
    /// scope opened from it has ended, and then nothing of the round is alive.
    @Test func innerScopesOpenedAndDroppedWhileTheirSessionClosesAllEndBeforeTheCloseReturns() async throws {
        let ledger = SMLedger()
        let graph = try await smBuilder(ledger, nested: true).build()
        let (opened, refused) = (Tally(), Tally())
        try await withDeadline(.seconds(60)) {
            for round in 0..<(40 / smScale) {
                let session = try graph.makeScope(
                    .smSession,
                    seeding: ScopeSeed(SMUserKey.self, SMNode("user", ledger))
                )
                let sessionName = try await session.resolve(SMSessionKey.self).name
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<8 {
                        group.addTask {
                            for attempt in 0..<8 {
                                let request: ServiceScope
                                do {
                                    request = try session.makeScope(.smRequest)
                                } catch {
                                    smExpectCodes(error, [.scopeClosed])
                                    refused.increment()
                                    return
                                }
                                opened.increment()
                                do {
                                    let cart = try await request.resolve(SMCartKey.self)
                                    #expect(cart.isIntact && cart.dependencies == [sessionName])
                                    if attempt.isMultiple(of: 3) {
                                        let step = try request.makeScope(.smStep)
                                        #expect(try await step.resolve(SMStepKey.self).isIntact)
                                    }
                                    if task.isMultiple(of: 2) { try await request.close() }
                                } catch {
                                    smExpectRefusal(error)
                                }
                            }
                        }
                    }
                    group.addTask {
                        for _ in 0..<(round % 13) { await Task.yield() }
                        try await session.close()
                        // Everything opened from the session has ended by now.
                        #expect(!ledger.isAlive(sessionName))
                    }
                    try await group.waitForAll()
                }
            }
        }
        try await graph.shutdown()
        #expect(opened.count > 0)
        await smEventually { ledger.aliveNames.allSatisfy { $0.hasPrefix("base") } }
        smExpectHooksRanOnce(ledger)
        smExpectReleased(ledger, keeping: ["base"])
    }

    // MARK: Sizes of the tail

    /// A graph with no scoped service at all (a tail of no cells): 2,000 scopes resolve singletons
    /// and transients in every way and end every way; scopes kept open keep the graph alive after its
    /// last reference is gone, and let it go, with its singleton, once they end.
    @Test func scopesWithNoScopedServiceWorkEndAndLetTheirGraphGo() async throws {
        let ledger = SMLedger()
        var builder = ServiceGraph.Builder()
        builder.provide(SMConfigKey.self) { SMNode("config", ledger) }
        builder.provide(SMEchoKey.self, lifetime: .transient, dependsOn: SMConfigKey.self) {
            SMNode("echo", ledger, after: [$0])
        }
        builder.provide(SMEchoMakerKey.self, lifetime: .transient, dependsOn: Provider<SMEchoKey>.self) { $0 }
        weak var weakGraph: ServiceGraph?
        var kept: [ServiceScope] = []
        let configName: String
        do {
            let graph = try await builder.build()
            weakGraph = graph
            configName = graph[SMConfigKey.self].name
            try await withDeadline(.seconds(60)) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<8 {
                        group.addTask {
                            for index in 0..<(250 / smScale) {
                                try await Self.useEmptyScope(graph, mode: (task + index) % 3, configName: configName)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            kept = try (0..<6).map { _ in try graph.makeScope() }
        }
        // The graph's last reference is gone: the open scopes keep it, and its singleton, whole.
        #expect(weakGraph != nil)
        for scope in kept {
            #expect(scope[SMConfigKey.self].name == configName && scope[SMConfigKey.self].isIntact)
            #expect(try scope.resolveSynchronously(SMEchoKey.self).isIntact)
            #expect(try await scope.resolve(SMEchoMakerKey.self)().isIntact)
        }
        try await kept[0].close()
        try await kept[1].close()
        kept.removeFirst(4)  // Two closed, two dropped.
        #expect(ledger.isAlive(configName), "two scopes are still open")
        #expect(kept[0][SMConfigKey.self].isIntact)
        try await kept[0].close()
        kept.removeAll()  // The last one dropped.
        await smEventually { weakGraph == nil && !ledger.isAlive(configName) }
        #expect(weakGraph == nil, "scopes that ended let their graph go")
        smExpectReleased(ledger)
    }

    private static func useEmptyScope(_ graph: ServiceGraph, mode: Int, configName: String) async throws {
        let maker = try await useEmptyScopeOnce(graph, mode: mode, configName: configName)
        // Mode 1 drops the scope and its provider; the others keep the provider of a scope closed or gone.
        guard mode != 1 else { return }
        let provided = await #expect(throws: ServiceGraphError.self) { try await maker() }
        #expect(provided?.codes == [.scopeClosed])
    }

    /// Opens a scope, uses it, closes it (mode 0) or not, and returns a provider made in it.
    private static func useEmptyScopeOnce(
        _ graph: ServiceGraph,
        mode: Int,
        configName: String
    ) async throws -> Provider<SMEchoKey> {
        let scope = try graph.makeScope(seeding: [])
        #expect(scope[SMConfigKey.self].name == configName)
        let echo = try scope.resolveSynchronously(SMEchoKey.self)
        #expect(echo.isIntact && echo.dependencies == [configName])
        #expect(try await scope.resolve(SMEchoKey.self).isIntact)
        let maker = try await scope.resolve(SMEchoMakerKey.self)
        #expect(try await maker().isIntact)
        #expect(try maker.resolveSynchronously().isIntact)
        guard mode == 0 else { return maker }
        try await scope.close()
        #expect(scope.isClosed)
        let again = await #expect(throws: ServiceGraphError.self) { try await scope.close() }
        #expect(again?.codes == [.scopeClosed])
        let resolve = await #expect(throws: ServiceGraphError.self) { try await scope.resolve(SMEchoKey.self) }
        #expect(resolve?.codes == [.scopeClosed])
        let synchronous = #expect(throws: ServiceGraphError.self) { try scope.resolveSynchronously(SMEchoKey.self) }
        #expect(synchronous?.codes == [.scopeClosed])
        return maker
    }

    /// Scopes of 1 to 257 scoped services (one cell each, then the creation order, then the gate and
    /// the mutex, in one tail): a chain that fills every cell and every place of the creation order,
    /// then is read back, closed, dropped, or closed by the shutdown. The order that fills last sits
    /// right before the gate: one place too few would corrupt the gate or the lock.
    @Test(arguments: [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64, 65, 129, 255, 256, 257])
    func aChainOfScopedServicesFillsEveryCellAndEmptiesInReverse(count: Int) async throws {
        try await withDeadline(.seconds(60)) { try await Self.fillAndEmpty(count) }
    }

    private static func fillAndEmpty(_ count: Int) async throws {
        let recorder = GraphRecorder()
        var builder = ServiceGraph.Builder()
        // An odd count has a seed too, one more cell, at the chain's root.
        let seeded = !count.isMultiple(of: 2)
        if seeded { GeneratedKeys.seed(count, into: &builder) }
        for index in 0..<count {
            GeneratedKeys.provide(
                index,
                lifetime: .scoped,
                dependsOn: index > 0 ? [index - 1] : seeded ? [count] : [],
                asynchronous: index % 3 == 2,
                recorder: recorder,
                into: &builder
            )
        }
        let graph = try await builder.build()
        let seedValue = seeded ? 1_000 : 0
        let open = { () throws -> ServiceScope in
            seeded ? try graph.makeScope(seeding: GeneratedKeys.scopeSeed(count, value: 1_000)) : try graph.makeScope()
        }
        func created(since start: Int) -> [Int] {
            recorder.events[start...].compactMap { event -> Int? in
                if case .created(let index) = event { index } else { nil }
            }
        }
        func removed(since start: Int) -> [Int] {
            recorder.events[start...].compactMap(smRemoved)
        }

        // Filled, read back, closed: made in chain order, ended in reverse, all released.
        var start = recorder.events.count
        let first = try open()
        #expect(try await first.resolveGenerated(count - 1).value == count + seedValue)
        for index in 0..<count { #expect(try await first.resolveGenerated(index).value == index + 1 + seedValue) }
        try await first.close()
        #expect(created(since: start) == Array(0..<count))
        #expect(removed(since: start) == Array((0..<count).reversed()))
        #expect(recorder.alive == 0, "instances \(recorder.aliveIndices) outlived their closed scope")

        // Filled, read from many tasks at once, dropped.
        start = recorder.events.count
        do {
            let second = try open()
            _ = try await second.resolveGenerated(count - 1)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask { () async throws in
                        for offset in 0..<count {
                            let index = (offset + task * 7) % count
                            #expect(try await second.resolveGenerated(index).value == index + 1 + seedValue)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        await smEventually { recorder.count(of: .willRemove(0)) == 2 && recorder.alive == 0 }
        #expect(removed(since: start) == Array((0..<count).reversed()))
        #expect(recorder.alive == 0, "instances \(recorder.aliveIndices) outlived their dropped scope")

        // Half filled and full, both left to the shutdown.
        let third = try open()
        _ = try await third.resolveGenerated(count / 2)
        let fourth = try open()
        _ = try await fourth.resolveGenerated(count - 1)
        try await graph.shutdown()
        #expect(third.isClosed && fourth.isClosed)
        #expect(recorder.alive == 0, "instances \(recorder.aliveIndices) outlived the shutdown")
        for index in 0..<count {
            let made = recorder.count(of: .created(index))
            #expect(made == (index <= count / 2 ? 4 : 3))
            #expect(recorder.count(of: .didAdd(index)) == made && recorder.count(of: .willRemove(index)) == made)
        }
    }

    /// 256 scoped services in each of four scopes, each made by 8 tasks at once in different orders:
    /// one instance per service and scope, whole, hooks once, all released when the scope ends.
    @Test func hundredsOfScopedServicesMadeAtOnceInSeveralScopesAreMadeAndReleasedOnce() async throws {
        let recorder = GraphRecorder()
        let width = 256
        var builder = ServiceGraph.Builder()
        GeneratedKeys.provide(0, lifetime: .scoped, dependsOn: [], recorder: recorder, into: &builder)
        for index in 1..<width {
            GeneratedKeys.provide(
                index,
                lifetime: .scoped,
                dependsOn: [0],
                asynchronous: !index.isMultiple(of: 2),
                recorder: recorder,
                into: &builder
            )
        }
        let graph = try await builder.build()
        var scopes = try (0..<4).map { _ in try graph.makeScope() }
        let tasksPerScope = 8 / smScale + 1
        let identities = try await withDeadline(.seconds(60)) { [scopes] in
            try await withThrowingTaskGroup(of: (Int, [ObjectIdentifier]).self) { group in
                for (number, scope) in scopes.enumerated() {
                    for task in 0..<tasksPerScope {
                        group.addTask {
                            var found = [ObjectIdentifier?](repeating: nil, count: width)
                            for offset in 0..<width {
                                let index = task.isMultiple(of: 2) ? (offset + task * 37) % width : width - 1 - offset
                                let service = try await scope.resolveGenerated(index)
                                #expect(service.index == index && service.value == (index == 0 ? 1 : 2))
                                found[index] = ObjectIdentifier(service)
                            }
                            return (number, found.compactMap { $0 })
                        }
                    }
                }
                return try await group.reduce(into: [Int: [[ObjectIdentifier]]]()) {
                    $0[$1.0, default: []].append($1.1)
                }
            }
        }
        for number in 0..<4 {
            let seen = identities[number] ?? []
            #expect(seen.count == tasksPerScope && seen.allSatisfy { $0 == seen[0] })
        }
        #expect(Set(identities.values.flatMap { $0[0] }).count == 4 * width, "no instance shared between scopes")
        for index in 0..<width { #expect(recorder.count(of: .created(index)) == 4) }
        #expect(recorder.alive == 4 * width)

        // Closed: its services' hooks once each, the shared root's last; all of its instances released.
        let start = recorder.events.count
        try await scopes[0].close()
        let removed = recorder.events[start...].compactMap(smRemoved)
        #expect(removed.count == width && Set(removed).count == width && removed.last == 0)
        #expect(recorder.alive == 3 * width)
        scopes.remove(at: 0)  // Its handle goes: nothing more to release.
        scopes.remove(at: 0)  // Dropped with all of its instances.
        try await graph.shutdown()
        #expect(scopes.allSatisfy { $0.isClosed })
        #expect(recorder.alive == 0, "instances \(recorder.aliveIndices.prefix(12)) outlived the shutdown")
        for index in 0..<width { #expect(recorder.count(of: .willRemove(index)) == 4) }
    }

    // MARK: Failures part-way

    /// A chain of 160 scoped services whose 101st factory throws, resolved at once from many tasks:
    /// what was made before it stays, once, and is ended in reverse; a chain whose 51st `didAdd`
    /// throws releases each failed instance at once, and the scope still ends whole when dropped.
    @Test func aFactoryOrDidAddThatThrowsPartWayLeavesTheScopeWholeAndReleasesEverythingOnce() async throws {
        try await withDeadline(.seconds(60)) {
            try await Self.failingFactoryChain()
            try await Self.failingDidAddChain()
        }
    }

    private static func failingFactoryChain() async throws {
        let recorder = GraphRecorder(plan: FailurePlan(failingFactory: 100))
        var builder = ServiceGraph.Builder()
        for index in 0..<160 {
            GeneratedKeys.provide(
                index,
                lifetime: .scoped,
                dependsOn: index == 0 ? [] : [index - 1],
                asynchronous: index.isMultiple(of: 4),
                recorder: recorder,
                into: &builder
            )
        }
        let graph = try await builder.build()
        let scope = try graph.makeScope()
        let error = await #expect(throws: ServiceGraphError.self) { try await scope.resolveGenerated(159) }
        #expect(error?.contains(.factoryFailed) == true, "\(String(describing: error))")
        #expect(error?.problems.contains(where: { $0.key == GeneratedKeys.name(100) }) == true)
        #expect(recorder.aliveIndices == Array(0..<100))
        let failures = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<16 {
                group.addTask {
                    do {
                        _ = try await scope.resolveGenerated(task.isMultiple(of: 2) ? 159 : 120)
                        return 0
                    } catch let error as ServiceGraphError {
                        #expect(error.contains(.factoryFailed))
                        return 1
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(failures == 16)
        #expect(try await scope.resolveGenerated(99).value == 100)
        for index in 0..<100 { #expect(recorder.count(of: .created(index)) == 1, "made \(index) again") }
        #expect(recorder.aliveIndices == Array(0..<100))
        let start = recorder.events.count
        try await scope.close()
        let removed = recorder.events[start...].compactMap(smRemoved)
        #expect(removed == Array((0..<100).reversed()))
        #expect(recorder.alive == 0, "instances \(recorder.aliveIndices) outlived their closed scope")
        try await graph.shutdown()
    }

    private static func failingDidAddChain() async throws {
        let recorder = GraphRecorder(plan: FailurePlan(failingDidAdd: 50))
        var builder = ServiceGraph.Builder()
        for index in 0..<80 {
            GeneratedKeys.provide(
                index,
                lifetime: .scoped,
                dependsOn: index == 0 ? [] : [index - 1],
                asynchronous: index.isMultiple(of: 3),
                recorder: recorder,
                into: &builder
            )
        }
        let graph = try await builder.build()
        do {
            let scope = try graph.makeScope()
            for attempt in 1...3 {
                let error = await #expect(throws: ServiceGraphError.self) { try await scope.resolveGenerated(79) }
                #expect(error?.contains(.didAddFailed) == true, "\(String(describing: error))")
                #expect(recorder.count(of: .created(50)) == attempt, "each resolve tries again")
                // The failed instance is not kept: only what was made before it is alive.
                #expect(recorder.aliveIndices == Array(0..<50))
            }
        }
        await smEventually { recorder.alive == 0 }
        #expect(recorder.alive == 0, "instances \(recorder.aliveIndices) outlived their dropped scope")
        try await graph.shutdown()
        let removed = recorder.events.compactMap(smRemoved)
        #expect(removed.filter { $0 != 50 } == Array((0..<50).reversed()))
        for index in 0..<50 { #expect(recorder.count(of: .didAdd(index)) == 1) }
    }

    // MARK: Seeds

    /// 600 scopes from 6 tasks, each seeded with a 32-word value holding an object, two connections it
    /// owns and one connection every scope shares as the caller's: the wide value reads back whole
    /// from every path; each owned connection gets one `willRemove`, after the scope's services and in
    /// reverse order of declaration, and no `didAdd`; the shared one gets no hook until, every scope
    /// done, one scope owns it; each is released once, whether the scope closed, was dropped, was
    /// closed from another task, was closed by the shutdown or was never made.
    @Test func wideSeedsAndSeedsTheScopeOwnsAreReadWholeAndEndedOnceEveryWay() async throws {
        let ledger = SMLedger()
        var builder = ServiceGraph.Builder()
        builder.seed(SMWideKey.self)
        builder.seed(SMConnectionKey.self)
        builder.seed(SMSecondConnectionKey.self)
        builder.seed(SMSharedKey.self)
        builder.provide(
            SMHolderKey.self,
            lifetime: .scoped,
            dependsOn: SMConnectionKey.self,
            SMSecondConnectionKey.self,
            SMSharedKey.self,
            SMWideKey.self
        ) { connection, second, shared, wide in
            SMHooked("holder", ledger, after: [connection, second, shared, wide.token])
        }
        builder.provide(SMSummaryKey.self, lifetime: .transient, dependsOn: SMWideKey.self, SMSecondConnectionKey.self)
        {
            "\($0.serial) \($0.isIntact) \($1.name)"
        }
        let graph = try await builder.build()
        var shared: SMHooked? = SMHooked("shared", ledger)
        let sharedName = try #require(shared?.name)
        let seeds = SMSeeds(ledger: ledger)
        let left = Locked<[ServiceScope]>([])
        try await withDeadline(.seconds(60)) { [shared] in
            let shared = try #require(shared)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        for _ in 0..<(100 / smScale) {
                            if let scope = try await Self.useSeededScope(graph, seeds: seeds, shared: shared) {
                                left.withLock { $0.append(scope) }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            // The scopes left open are closed all at once, each from a task of its own.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for scope in left.withLock({ $0 }) { group.addTask { try await scope.close() } }
                try await group.waitForAll()
            }
            left.withLock { $0.removeAll() }
            // Every scope done, a scope may own the shared connection: no claim on it was left behind.
            let owning = try graph.makeScope(seeding: seeds.next(shared: shared, owned: true).seeds)
            #expect(ledger.log.count(of: "willRemove \(sharedName)") == 0)
            try await owning.close()
            #expect(ledger.log.count(of: "willRemove \(sharedName)") == 1)
            // Borrowed again, by scopes the shutdown closes.
            for _ in 0..<4 {
                let scope = try graph.makeScope(seeding: seeds.next(shared: shared).seeds)
                _ = try await scope.resolve(SMHolderKey.self)
                left.withLock { $0.append(scope) }
            }
        }
        try await graph.shutdown()
        #expect(left.withLock { $0.count == 4 && $0.allSatisfy { $0.isClosed } })
        left.withLock { $0.removeAll() }

        #expect(ledger.log.count(of: "willRemove \(sharedName)") == 1)
        #expect(ledger.entries("didAdd").allSatisfy { $0.hasPrefix("holder") }, "no seed gets didAdd")
        let removals = Dictionary(
            ledger.entries("willRemove").enumerated().map { ($1, $0) },
            uniquingKeysWith: { first, _ in first }
        )
        for (second, connection) in seeds.owned {
            #expect(ledger.log.count(of: "willRemove \(second)") == 1)
            #expect(ledger.log.count(of: "willRemove \(connection)") == 1)
            #expect((removals[second] ?? .max) < (removals[connection] ?? .min), "\(second) ends before \(connection)")
        }
        smExpectHooksRanOnce(ledger, ownedSeeds: ["connection", "second", "shared"])
        smExpectReleased(ledger, keeping: ["shared"])
        #expect(ledger.isAlive(sharedName), "the caller's seed is the caller's")
        shared = nil
        smExpectReleased(ledger)
    }

    /// One seeded scope: read, then closed, dropped, or returned to be closed later. Every fourth is
    /// first refused (a seed given twice), and its values are given to the next scope.
    private static func useSeededScope(
        _ graph: ServiceGraph,
        seeds: SMSeeds,
        shared: SMHooked
    ) async throws -> ServiceScope? {
        let (serial, given, names) = seeds.next(shared: shared)
        if serial % 4 == 3 {
            // Refused: the values stay the caller's, and the next scope may own them.
            let error = #expect(throws: ServiceGraphError.self) { try graph.makeScope(seeding: given + [given[2]]) }
            #expect(error?.contains(.duplicateSeed) == true)
        }
        let scope = try graph.makeScope(seeding: given)
        let wide = try scope.resolveSynchronously(SMWideKey.self)
        #expect(wide.isIntact && wide.serial == serial && wide.token.name == names.token)
        #expect(try scope.resolveSynchronously(SMSummaryKey.self) == "\(serial) true \(names.second)")
        let holder = try await scope.resolve(SMHolderKey.self)
        #expect(holder.dependencies == [names.connection, names.second, shared.name, names.token])
        #expect(try await scope.resolve(SMWideKey.self).isIntact)
        switch serial % 3 {
        case 0:
            try await scope.close()
            return nil
        case 1: return nil  // Dropped.
        default: return scope
        }
    }

    // MARK: Close, resolve and shutdown at once

    /// Scopes of every kind closed, dropped, resolved through handles and opened anew, all while the
    /// graph shuts down: every call succeeds with a whole instance or is refused; the shutdown leaves
    /// no scope open; every hook runs once, the singleton's last; every instance is released once.
    @Test func closeRacingResolveRacingShutdownEndsEveryScopeOnce() async throws {
        try await withDeadline(.seconds(90)) {
            for round in 0..<(16 / smScale) { try await Self.raceRound(round) }
        }
    }

    private static func raceRound(_ round: Int) async throws {
        let ledger = SMLedger()
        let graph = try await smBuilder(ledger, nested: true).build()
        var held: [ServiceScope] = []
        var holders: [Locked<ServiceScope?>] = []
        var handles: [SMHandles] = []
        for index in 0..<16 {
            let scope = try graph.makeScope()
            _ = try await scope.resolve(SMRequestKey.self)
            handles.append(try await scope.resolve(SMHandlesKey.self))
            if index % 4 == 1 || index % 4 == 3 { holders.append(Locked(scope)) } else { held.append(scope) }
        }
        for _ in 0..<3 {
            let session = try graph.makeScope(.smSession, seeding: ScopeSeed(SMUserKey.self, SMNode("user", ledger)))
            let request = try session.makeScope(.smRequest)
            _ = try await request.resolve(SMCartKey.self)
            held.append(request)
            holders.append(Locked(session))
        }
        try await withThrowingTaskGroup(of: Void.self) { [held, holders, handles] group in
            for (index, scope) in held.enumerated() {
                group.addTask {
                    for attempt in 0..<12 {
                        do {
                            if scope.scopeKind == .smRequest {
                                #expect(try await scope.resolve(SMCartKey.self).isIntact)
                            } else {
                                if attempt.isMultiple(of: 2) {
                                    #expect(try await scope.resolve(SMWorkKey.self).isIntact)
                                } else {
                                    #expect(try await scope.resolve(SMRequestKey.self).isIntact)
                                }
                                #expect(try await scope.resolve(SMNoteKey.self).isIntact)
                            }
                        } catch {
                            smExpectRefusal(error)
                        }
                        if attempt == 4 + index % 5, index.isMultiple(of: 2) {
                            do { try await scope.close() } catch { smExpectCodes(error, [.scopeClosed]) }
                        }
                    }
                }
            }
            for handle in handles {
                group.addTask {
                    for _ in 0..<12 {
                        do {
                            #expect(try await handle.work().isIntact)
                            #expect(try await handle.lazyRequest.value.isIntact)
                            #expect(try await handle.note().isIntact)
                        } catch {
                            smExpectRefusal(error)
                        }
                    }
                }
            }
            for (index, holder) in holders.enumerated() {
                group.addTask {
                    for _ in 0..<(index % 7) { await Task.yield() }
                    let last = holder.withLock { $0.take() }
                    _ = last
                }
            }
            group.addTask {
                for attempt in 0..<400 {
                    let scope: ServiceScope
                    do {
                        scope = try graph.makeScope()
                    } catch {
                        smExpectCodes(error, [.graphShutDown])
                        return
                    }
                    do {
                        #expect(try await scope.resolve(SMWorkKey.self).isIntact)
                        if attempt.isMultiple(of: 2) { try await scope.close() }
                    } catch {
                        smExpectRefusal(error)
                    }
                }
            }
            group.addTask {
                for _ in 0..<(round % 9) { await Task.yield() }
                try await graph.shutdown()
            }
            try await group.waitForAll()
        }
        #expect(held.allSatisfy { $0.isClosed }, "the shutdown left no scope open")
        let refused = try #require(throws: ServiceGraphError.self) { try graph.makeScope() }
        #expect(refused.codes == [.graphShutDown])
        held.removeAll()
        handles.removeAll()
        holders.removeAll()
        await smEventually { ledger.aliveNames.allSatisfy { $0.hasPrefix("base") } }
        #expect(ledger.entries("willRemove").last?.hasPrefix("base") == true, "the singleton's hook runs last")
        smExpectHooksRanOnce(ledger)
        smExpectReleased(ledger, keeping: ["base"])
    }

    // MARK: Order

    /// One scope of 40 services made in a shuffled order, with two seeds it owns, ended each way (closed,
    /// dropped, closed by the shutdown, closed while the graph shuts down): every `willRemove` runs
    /// once, in reverse creation order, the owned seeds last in reverse order of declaration; the
    /// instances are released in that same reverse order, the seeds after them.
    @Test(arguments: 0..<4)
    func everyWayAScopeEndsRunsWillRemoveOnceInReverseCreationOrderAndReleasesInThatOrder(ending: Int) async throws {
        let ledger = SMLedger()
        var builder = ServiceGraph.Builder()
        builder.seed(SMConnectionKey.self)
        builder.seed(SMSecondConnectionKey.self)
        for index in 0..<40 { smProvideGenerated(index, asynchronous: index % 4 == 3, ledger: ledger, into: &builder) }
        let graph = try await builder.build()
        var (scope, seedNames) = try Self.scopeOwningTwoSeeds(graph, ledger: ledger)
        var random = SplitMix64(seed: UInt64(ending) &+ 17)
        var made: [String] = []
        for index in (0..<40).shuffled(using: &random) {
            let service = try #require(try await scope?.resolveGenerated(index) as? SMGenerated)
            made.append(service.node.name)
        }
        // Read again: nothing new is made.
        for index in 0..<40 { _ = try await scope?.resolveGenerated(index) }
        #expect(ledger.entries("didAdd") == made)

        switch ending {
        case 0: try await scope?.close()
        case 1: scope = nil  // Dropped: its hooks run in the background.
        case 2: try await graph.shutdown()
        default:
            let target = try #require(scope)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    do { try await target.close() } catch { smExpectCodes(error, [.scopeClosed]) }
                }
                group.addTask { try await graph.shutdown() }
                try await group.waitForAll()
            }
        }
        if ending >= 2 { #expect(scope?.isClosed == true) }
        scope = nil
        await smEventually { ledger.aliveNames.isEmpty }
        if ending < 2 { try await graph.shutdown() }

        #expect(ledger.entries("willRemove") == made.reversed() + seedNames)
        let released = ledger.entries("deinit")
        #expect(Array(released.prefix(made.count)) == made.reversed(), "released most recent first")
        #expect(Set(released.suffix(2)) == Set(seedNames), "the seeds are released after the services")
        smExpectHooksRanOnce(ledger, ownedSeeds: ["connection", "second"])
        smExpectReleased(ledger)
    }

    /// A scope that owns two seeds, which nothing else holds; their names in the order of their
    /// `willRemove` (reverse order of declaration).
    private static func scopeOwningTwoSeeds(
        _ graph: ServiceGraph,
        ledger: SMLedger
    ) throws -> (ServiceScope?, [String]) {
        let connection = SMHooked("connection", ledger)
        let second = SMHooked("second", ledger)
        let scope = try graph.makeScope(
            seeding: ScopeSeed(SMConnectionKey.self, connection, ownedByScope: true),
            ScopeSeed(SMSecondConnectionKey.self, second, ownedByScope: true)
        )
        return (scope, [second.name, connection.name])
    }
}
