import Dispatch
import Foundation
@testable import ServiceGraph
import ServiceGraphTestSupport
import Testing

/// The test doubles' lock (the library's own is visible here too, through `@testable`).
private typealias CORLocked = ServiceGraphTestSupport.Locked

extension ScopeKind {
    fileprivate static let corSession = ScopeKind("opening-race-session")
    fileprivate static let corRequest = ScopeKind("opening-race-request", inside: .corSession)
    fileprivate static let corJob = ScopeKind("opening-race-job")
    fileprivate static let corTicketed = ScopeKind("opening-race-ticketed", inside: .corSession)
    fileprivate static let corTicketedJob = ScopeKind("opening-race-ticketed-job")
}

private enum CORUserKey: ServiceKey { typealias Value = String }
private enum CORRequestKey: ServiceKey { typealias Value = Int }
private enum CORJobKey: ServiceKey { typealias Value = Int }
private enum CORCartKey: ServiceKey { typealias Value = String }
private enum CORCheckoutKey: ServiceKey { typealias Value = String }
private enum CORJobWorkKey: ServiceKey { typealias Value = Int }
private enum CORStallKey: ServiceKey { typealias Value = CORStall }
private enum CORTicketKey: ServiceKey { typealias Value = CORTicket }
private enum CORJobTicketKey: ServiceKey { typealias Value = CORTicket }

/// A seed the caller hands to a scope as owned by it: logs its `willRemove`.
private final class CORTicket: LifecycleHooks, Sendable {
    let log = EventLog()
    func didAdd() async throws { log.record("didAdd") }
    func willRemove() async throws { log.record("willRemove") }
}

/// A scoped service whose `willRemove` waits for the test: a shutdown closing its scope stops there.
private final class CORStall: LifecycleHooks, Sendable {
    private let gate: Gate
    init(gate: Gate) { self.gate = gate }
    func didAdd() async throws {}
    func willRemove() async throws { await gate.wait() }
}

/// The scope events, in order ("opened" with the seeds' names, "closed", "dropped"), and an event handler
/// that holds the first opening report whose seeds are `holding` until the test lets it go; or, with
/// `spinning`, takes that long over each such report.
private final class CORWatcher: Sendable {
    private struct State {
        var hasHeld = false
        var isHolding = false
        var timedOut = false
    }
    private let holding: String
    private let spinning: Duration?
    private let events = CORLocked<[String]>([])
    private let state = CORLocked(State())
    private let letGo = DispatchSemaphore(value: 0)

    init(holding: String, spinning: Duration? = nil) {
        self.holding = holding
        self.spinning = spinning
    }

    var recorded: [String] { events.withLock { $0 } }
    var isHolding: Bool { state.withLock { $0.isHolding } }
    var timedOut: Bool { state.withLock { $0.timedOut } }

    func letTheReportGo() { letGo.signal() }

    func forget() { events.withLock { $0 = [] } }

    func record(_ event: ServiceGraphEvent) {
        switch event.kind {
        case .scopeOpened:
            events.withLock { $0.append("opened \(event.key ?? "-")") }
            guard event.key == holding else { return }
            if let spinning {
                let until = ContinuousClock.now + spinning
                while ContinuousClock.now < until {}
                return
            }
            let holds = state.withLock { state in
                defer { state.hasHeld = true }
                state.isHolding = !state.hasHeld
                return state.isHolding
            }
            guard holds else { return }
            let timedOut = letGo.wait(timeout: .now() + .seconds(ProcessEnvironment.isSanitizerRun ? 240 : 60))
            state.withLock {
                $0.isHolding = false
                $0.timedOut = timedOut == .timedOut
            }
        case .scopeClosed: events.withLock { $0.append("closed") }
        case .scopeDropped: events.withLock { $0.append("dropped") }
        default: break
        }
    }

    /// Checks that each scope reported opened was reported closed or dropped once, after its opening:
    /// the count of open scopes never reads below zero, and ends at zero.
    func expectEachOpenedScopeEndedOnce(sourceLocation: SourceLocation = #_sourceLocation) {
        let recorded = self.recorded
        var open = 0
        for (index, event) in recorded.enumerated() {
            open += event.hasPrefix("opened") ? 1 : -1
            guard open >= 0 else {
                Issue.record(
                    "event \(index): a scope ended before it opened: \(recorded)",
                    sourceLocation: sourceLocation
                )
                return
            }
        }
        #expect(open == 0, "\(open) scopes reported opened never ended: \(recorded)", sourceLocation: sourceLocation)
    }
}

/// Where the shutdown's task runs once the opening it waits for lets it go.
enum COROrder: String, CaseIterable, CustomTestStringConvertible {
    /// At once, on the opening's thread, before the opening goes on: the shutdown finishes closing the
    /// new scope before the parent records it.
    case closeFinishesFirst
    /// Held until the opening has returned: the parent records the new scope while its close is under
    /// way.
    case openingReturnsFirst

    var testDescription: String { rawValue }
}

/// Runs the shutdown's task: its jobs on a serial queue of their own, counting those run (a job ends
/// where the task suspends); or held until ``runHeld()``; and a job made ready on the opening's thread
/// runs there at once, when asked to.
private final class CORShutdownExecutor: TaskExecutor {
    private struct State {
        var ranJobs = 0
        var inlineThread: ObjectIdentifier?
        var holds = false
        var held: [UnownedJob] = []
    }
    private let queue = DispatchQueue(label: "ChildScopeOpeningRaceTests.shutdown")
    private let state = CORLocked(State())

    var ranJobs: Int { state.withLock { $0.ranJobs } }

    /// Runs the jobs made ready on `thread` there, at once (nil: none).
    func runInline(on thread: ObjectIdentifier?) { state.withLock { $0.inlineThread = thread } }

    /// Holds the jobs made ready from now on, until ``runHeld()``.
    func hold() { state.withLock { $0.holds = true } }

    func runHeld() {
        let held = state.withLock { state in
            defer { (state.holds, state.held) = (false, []) }
            return state.held
        }
        for job in held { run(job) }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let current = ObjectIdentifier(Thread.current)
        enum Route { case inline, held, queue }
        let route = state.withLock { state -> Route in
            if state.inlineThread == current { return .inline }
            guard state.holds else { return .queue }
            state.held.append(job)
            return .held
        }
        switch route {
        case .inline: job.runSynchronously(on: asUnownedTaskExecutor())
        case .held: break
        case .queue: run(job)
        }
    }

    private func run(_ job: UnownedJob) {
        let executor = asUnownedTaskExecutor()
        queue.async {
            job.runSynchronously(on: executor)
            self.state.withLock { $0.ranJobs += 1 }
        }
    }
}

/// Opens a scope on a thread of its own, which the event handler may block; a job of the shutdown
/// that thread makes ready runs on it at once with ``COROrder/closeFinishesFirst``.
private final class COROpening: Sendable {
    private let outcome = CORLocked<Result<ServiceScope, ServiceGraphError>?>(nil)

    init(
        _ order: COROrder = .openingReturnsFirst,
        _ executor: CORShutdownExecutor? = nil,
        _ open: @escaping @Sendable () throws(ServiceGraphError) -> ServiceScope
    ) {
        let outcome = self.outcome
        let inline = order == .closeFinishesFirst ? executor : nil
        Thread {
            inline?.runInline(on: ObjectIdentifier(Thread.current))
            let result: Result<ServiceScope, ServiceGraphError>
            do throws(ServiceGraphError) {
                result = .success(try open())
            } catch {
                result = .failure(error)
            }
            inline?.runInline(on: nil)
            outcome.withLock { $0 = result }
        }.start()
    }

    /// What the opening returned, once it has.
    func result() async throws -> Result<ServiceScope, ServiceGraphError> {
        try await corWait("the opening to return") { outcome.withLock { $0 != nil } }
        return try #require(outcome.withLock { $0 })
    }
}

/// Waits (polling, with a deadline that fails the test rather than hang it) until `condition` holds.
private func corWait(_ what: String, until condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(ProcessEnvironment.isSanitizerRun ? 240 : 60)
    while !condition() {
        guard ContinuousClock.now < deadline else { throw TestFailure("waited in vain for \(what)") }
        try await Task.sleep(for: .milliseconds(1))
    }
}

private func corBuilder(_ watcher: CORWatcher?, gate: Gate = Gate()) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.inScope(.corSession) { session in
        session.seed(CORUserKey.self)
        session.provide(CORCartKey.self, lifetime: .scoped, dependsOn: CORUserKey.self) { "cart of \($0)" }
    }
    builder.inScope(.corRequest) { request in
        request.seed(CORRequestKey.self)
        request.provide(CORCheckoutKey.self, lifetime: .scoped, dependsOn: CORRequestKey.self, CORCartKey.self) {
            "checkout \($0) with \($1)"
        }
    }
    builder.inScope(.corJob) { job in
        job.seed(CORJobKey.self)
        job.provide(CORJobWorkKey.self, lifetime: .scoped, dependsOn: CORJobKey.self) { $0 + 1 }
    }
    builder.provide(CORStallKey.self, lifetime: .scoped) { CORStall(gate: gate) }
    if let watcher {
        builder.eventKinds = [.scopeOpened, .scopeClosed, .scopeDropped]
        builder.eventHandler = { watcher.record($0) }
    }
    return builder
}

/// ``corBuilder(_:gate:)`` with a kind inside sessions and a kind the graph opens, each seeded with a
/// ``CORTicket``.
private func corTicketBuilder(_ watcher: CORWatcher) -> ServiceGraph.Builder {
    var builder = corBuilder(watcher)
    builder.inScope(.corTicketed) { $0.seed(CORTicketKey.self) }
    builder.inScope(.corTicketedJob) { $0.seed(CORJobTicketKey.self) }
    return builder
}

/// Checks that `scope`, which the graph's shutdown closed, is closed to every use.
private func corExpectClosed(_ scope: ServiceScope, sourceLocation: SourceLocation = #_sourceLocation) async {
    #expect(scope.isClosed, sourceLocation: sourceLocation)
    let resolved = await #expect(throws: ServiceGraphError.self, sourceLocation: sourceLocation) {
        try await scope.resolve(CORCartKey.self)
    }
    #expect(resolved?.codes == [.scopeClosed], sourceLocation: sourceLocation)
    let synchronous = #expect(throws: ServiceGraphError.self, sourceLocation: sourceLocation) {
        try scope.resolveSynchronously(CORCartKey.self)
    }
    #expect(synchronous?.codes == [.scopeClosed], sourceLocation: sourceLocation)
    let closed = await #expect(throws: ServiceGraphError.self, sourceLocation: sourceLocation) {
        try await scope.close()
    }
    #expect(closed?.codes == [.scopeClosed], sourceLocation: sourceLocation)
}

/// A scope opened from another (a child) while the graph's shutdown starts, with an event handler that
/// takes its time over the child's `scopeOpened`: the shutdown closes the child while its opening is
/// reported, and the opening then records it with its parent. The parent must keep no entry for a child
/// that has finished, must close after it, and every scope must be reported closed once.
@Suite("A child scope whose opening the graph's shutdown overtakes", .serialized)
struct ChildScopeOpeningRaceTests {
    /// The shutdown starts while the child's opening is reported, and closes it: the child comes back
    /// closed, as a scope the graph opens does (its seeds were its own, and released), and its parent
    /// records nothing of it, whether the child's close finished before the opening went on or after.
    /// (A child recorded once its close had ended would stay recorded for good: its parent, idle, could
    /// no longer close at once, and its close would visit a child long gone.)
    @Test(arguments: COROrder.allCases)
    func aChildTheShutdownClosesWhileItsOpeningIsReportedIsReturnedClosedAndNotRecorded(order: COROrder) async throws {
        let watcher = CORWatcher(holding: "CORRequestKey")
        let gate = Gate()
        let graph = try await corBuilder(watcher, gate: gate).build()
        try await withDeadline(.seconds(60)) {
            let session = try graph.makeScope(.corSession, seeding: ScopeSeed(CORUserKey.self, "ada"))
            #expect(try await session.resolve(CORCartKey.self) == "cart of ada")
            // Opened after the session and before the request: the shutdown, which closes scopes newest
            // first, stops at it between the two.
            let stalled = try graph.makeScope()
            _ = try await stalled.resolve(CORStallKey.self)
            let executor = CORShutdownExecutor()
            do {
                let opening = COROpening(order, executor) { () throws(ServiceGraphError) -> ServiceScope in
                    try session.makeScope(.corRequest, seeding: ScopeSeed(CORRequestKey.self, 1))
                }
                try await corWait("the request scope's opening report") { watcher.isHolding }
                let shutdown = Task(executorPreference: executor) { try await graph.shutdown() }
                // The shutdown's first job ends where it waits for the report to end: it has begun closing
                // the request scope.
                try await corWait("the shutdown to wait for the request scope") { executor.ranJobs >= 1 }
                if order == .openingReturnsFirst { executor.hold() }
                watcher.letTheReportGo()
                let request = try await opening.result().get()
                let counts = session._body.childCounts
                #expect(counts.recorded <= counts.unfinished, "a finished child is recorded: \(counts)")
                if order == .closeFinishesFirst {
                    #expect(counts.recorded == 0, "the parent records a child that has finished: \(counts)")
                }
                await corExpectClosed(request)
                if order == .openingReturnsFirst { executor.runHeld() }
                try await corWait("the request scope to finish") { session._body.childCounts.unfinished == 0 }
                #expect(session._body.childCounts == (recorded: 0, unfinished: 0))
                // Nothing is left of its child: the session, idle, closes at once (its close would
                // otherwise have visited the child the shutdown had closed).
                let closedAtOnce = session._body._closeIfIdle()
                #expect(closedAtOnce, "the session, idle and without children, did not close at once")
                if !closedAtOnce { try await session.close() }
                await gate.open()
                try await shutdown.value
                await corExpectClosed(request)
            }
            #expect(session.isClosed && stalled.isClosed)
            #expect(session._body.childCounts == (recorded: 0, unfinished: 0))
        }
        #expect(!watcher.timedOut)
        // The request scope's handle, let go, reports nothing more: it was closed.
        #expect(watcher.recorded.filter { $0.hasPrefix("opened") }.count == 3, "\(watcher.recorded)")
        #expect(watcher.recorded.filter { $0 == "closed" }.count == 3, "\(watcher.recorded)")
        #expect(!watcher.recorded.contains("dropped"), "\(watcher.recorded)")
        watcher.expectEachOpenedScopeEndedOnce()
    }

    /// The same window for a scope the graph opens: it comes back closed, consistently (closed to
    /// resolves and to a close), reported closed once, after it was reported opened; the shutdown returns.
    @Test(arguments: COROrder.allCases)
    func aScopeTheShutdownClosesWhileItsOpeningIsReportedIsReturnedClosedAndReportedOnce(order: COROrder) async throws {
        let watcher = CORWatcher(holding: "CORJobKey")
        let graph = try await corBuilder(watcher).build()
        try await withDeadline(.seconds(60)) {
            let executor = CORShutdownExecutor()
            let opening = COROpening(order, executor) { () throws(ServiceGraphError) -> ServiceScope in
                try graph.makeScope(.corJob, seeding: ScopeSeed(CORJobKey.self, 1))
            }
            try await corWait("the job scope's opening report") { watcher.isHolding }
            let shutdown = Task(executorPreference: executor) { try await graph.shutdown() }
            try await corWait("the shutdown to wait for the job scope") { executor.ranJobs >= 1 }
            if order == .openingReturnsFirst { executor.hold() }
            watcher.letTheReportGo()
            let job = try await opening.result().get()
            #expect(job.isClosed)
            let work = await #expect(throws: ServiceGraphError.self) { try await job.resolve(CORJobWorkKey.self) }
            #expect(work?.codes == [.scopeClosed])
            if order == .openingReturnsFirst { executor.runHeld() }
            try await shutdown.value
            let closed = await #expect(throws: ServiceGraphError.self) { try await job.close() }
            #expect(closed?.codes == [.scopeClosed])
        }
        #expect(!watcher.timedOut)
        #expect(watcher.recorded == ["opened CORJobKey", "closed"])
    }

    /// A parent closed (not by the shutdown) while its child's opening is reported: the close waits for
    /// the child, the opening is refused with scopeClosed, the child is dropped and reported so after it
    /// was reported opened, and the parent's close returns.
    @Test func aParentClosedWhileItsChildsOpeningIsReportedRefusesTheChildAndWaitsForIt() async throws {
        let watcher = CORWatcher(holding: "CORRequestKey")
        let graph = try await corBuilder(watcher).build()
        try await withDeadline(.seconds(60)) {
            let session = try graph.makeScope(.corSession, seeding: ScopeSeed(CORUserKey.self, "ada"))
            let opening = COROpening { () throws(ServiceGraphError) -> ServiceScope in
                try session.makeScope(.corRequest, seeding: ScopeSeed(CORRequestKey.self, 1))
            }
            try await corWait("the request scope's opening report") { watcher.isHolding }
            let close = Task { try await session.close() }
            try await corWait("the session to start closing") { session.isClosed }
            watcher.letTheReportGo()
            let refused = try await opening.result()
            guard case .failure(let error) = refused else {
                Issue.record("a scope opened from a closing one was returned")
                return
            }
            #expect(error.codes == [.scopeClosed])
            try await close.value
            #expect(session._body.childCounts == (recorded: 0, unfinished: 0))
            try await graph.shutdown()
        }
        #expect(!watcher.timedOut)
        #expect(watcher.recorded == ["opened CORUserKey", "opened CORRequestKey", "dropped", "closed"])
    }

    /// As above, with a seed the child would own: the refused child runs no hook on it, gives its claim
    /// back (another scope may own it at once), and the parent's close still waits for the child's end.
    @Test func aParentClosedWhileItsChildsOpeningIsReportedLeavesTheChildsOwnedSeedToTheCaller() async throws {
        let watcher = CORWatcher(holding: "CORTicketKey")
        let graph = try await corTicketBuilder(watcher).build()
        let ticket = CORTicket()
        try await withDeadline(.seconds(60)) {
            let session = try graph.makeScope(.corSession, seeding: ScopeSeed(CORUserKey.self, "ada"))
            let opening = COROpening { () throws(ServiceGraphError) -> ServiceScope in
                try session.makeScope(.corTicketed, seeding: ScopeSeed(CORTicketKey.self, ticket, ownedByScope: true))
            }
            try await corWait("the ticketed scope's opening report") { watcher.isHolding }
            let close = Task { try await session.close() }
            try await corWait("the session to start closing") { session.isClosed }
            watcher.letTheReportGo()
            guard case .failure(let error) = try await opening.result() else {
                Issue.record("a scope opened from a closing one was returned")
                return
            }
            #expect(error.codes == [.scopeClosed])
            // Once the session has closed, the refused child has ended, and whatever it ran has run.
            try await close.value
            #expect(session._body.childCounts == (recorded: 0, unfinished: 0))
            #expect(ticket.log.all.isEmpty, "a hook ran on a seed of a scope that was not made")
            // The claim was given back: another scope may own the ticket, and ends it once.
            let next = try graph.makeScope(.corSession, seeding: ScopeSeed(CORUserKey.self, "bob"))
            let owner = try next.makeScope(
                .corTicketed,
                seeding: ScopeSeed(CORTicketKey.self, ticket, ownedByScope: true)
            )
            try await owner.close()
            try await next.close()
            #expect(ticket.log.all == ["willRemove"])
            try await graph.shutdown()
        }
        #expect(!watcher.timedOut)
        #expect(
            watcher.recorded == [
                "opened CORUserKey", "opened CORTicketKey", "dropped", "closed",
                "opened CORUserKey", "opened CORTicketKey", "closed", "closed",
            ]
        )
    }

    /// A child with an owned seed that the graph's shutdown begins closing while its opening is reported,
    /// its parent starting to close meanwhile too: the shutdown's close runs the seed's `willRemove`, so
    /// the child is returned closed (as a scope the graph opens then is) rather than refused, which would
    /// tell the caller the seed is still its own.
    @Test(arguments: COROrder.allCases)
    func aChildTheShutdownClosesWhileItsParentStartsClosingIsReturnedClosedWithItsSeedEnded(
        order: COROrder
    ) async throws {
        let watcher = CORWatcher(holding: "CORTicketKey")
        let graph = try await corTicketBuilder(watcher).build()
        let ticket = CORTicket()
        try await withDeadline(.seconds(60)) {
            let session = try graph.makeScope(.corSession, seeding: ScopeSeed(CORUserKey.self, "ada"))
            let executor = CORShutdownExecutor()
            let opening = COROpening(order, executor) { () throws(ServiceGraphError) -> ServiceScope in
                try session.makeScope(.corTicketed, seeding: ScopeSeed(CORTicketKey.self, ticket, ownedByScope: true))
            }
            try await corWait("the ticketed scope's opening report") { watcher.isHolding }
            let shutdown = Task(executorPreference: executor) { try await graph.shutdown() }
            try await corWait("the shutdown to wait for the ticketed scope") { executor.ranJobs >= 1 }
            let close = Task { try await session.close() }
            try await corWait("the session to start closing") { session.isClosed }
            if order == .openingReturnsFirst { executor.hold() }
            watcher.letTheReportGo()
            let result = try await opening.result()
            if order == .openingReturnsFirst { executor.runHeld() }
            guard case .success(let ticketed) = result else {
                Issue.record("the child was refused, but its seed was the scope's: \(result)")
                try await close.value
                try await shutdown.value
                return
            }
            try await close.value
            try await shutdown.value
            await corExpectClosed(ticketed)
            #expect(session._body.childCounts == (recorded: 0, unfinished: 0))
        }
        #expect(!watcher.timedOut)
        #expect(ticket.log.all == ["willRemove"])
        watcher.expectEachOpenedScopeEndedOnce()
    }

    /// The graph-level twin: a scope with an owned seed that the shutdown closes while its opening is
    /// reported comes back closed, its seed ended once, as documented.
    @Test(arguments: COROrder.allCases)
    func aScopeWithAnOwnedSeedTheShutdownClosesWhileItsOpeningIsReportedIsReturnedClosed(
        order: COROrder
    ) async throws {
        let watcher = CORWatcher(holding: "CORJobTicketKey")
        let graph = try await corTicketBuilder(watcher).build()
        let ticket = CORTicket()
        try await withDeadline(.seconds(60)) {
            let executor = CORShutdownExecutor()
            let opening = COROpening(order, executor) { () throws(ServiceGraphError) -> ServiceScope in
                try graph.makeScope(
                    .corTicketedJob,
                    seeding: ScopeSeed(CORJobTicketKey.self, ticket, ownedByScope: true)
                )
            }
            try await corWait("the job scope's opening report") { watcher.isHolding }
            let shutdown = Task(executorPreference: executor) { try await graph.shutdown() }
            try await corWait("the shutdown to wait for the job scope") { executor.ranJobs >= 1 }
            if order == .openingReturnsFirst { executor.hold() }
            watcher.letTheReportGo()
            let job = try await opening.result().get()
            #expect(job.isClosed)
            if order == .openingReturnsFirst { executor.runHeld() }
            try await shutdown.value
            let closed = await #expect(throws: ServiceGraphError.self) { try await job.close() }
            #expect(closed?.codes == [.scopeClosed])
        }
        #expect(!watcher.timedOut)
        #expect(ticket.log.all == ["willRemove"])
        #expect(watcher.recorded == ["opened CORJobTicketKey", "closed"])
    }

    /// Child scopes opened from a session by several tasks while the graph shuts down, round after round,
    /// with or without a handler that takes its time over each child's `scopeOpened`: the shutdown
    /// returns, every session ends with no child recorded or unfinished, and each scope reported opened
    /// is reported closed or dropped once, after its opening.
    @Test(arguments: [true, false])
    func childScopesOpenedWhileTheGraphShutsDownAllEndAndLeaveNothingRecorded(reports: Bool) async throws {
        let watcher = CORWatcher(holding: "CORRequestKey", spinning: .microseconds(300))
        let builder = corBuilder(reports ? watcher : nil)
        for round in 0..<40 {
            watcher.forget()
            let graph = try await builder.build()
            try await withDeadline(.seconds(60)) {
                let sessions = try (0..<4).map { user in
                    try graph.makeScope(.corSession, seeding: ScopeSeed(CORUserKey.self, "user \(user)"))
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for session in sessions {
                        group.addTask {
                            // Opened until refused, and kept: the shutdown closes them.
                            var requests: [ServiceScope] = []
                            while requests.count < 1_000,
                                let request = try? session.makeScope(
                                    .corRequest,
                                    seeding: ScopeSeed(CORRequestKey.self, requests.count)
                                )
                            {
                                requests.append(request)
                                if requests.count % 4 == 0 { await Task.yield() }
                            }
                        }
                    }
                    group.addTask {
                        try await Task.sleep(for: .microseconds(200 * (round % 10)))
                        try await graph.shutdown()
                    }
                    try await group.waitForAll()
                }
                for session in sessions {
                    #expect(session.isClosed)
                    #expect(session._body.childCounts == (recorded: 0, unfinished: 0), "round \(round)")
                }
            }
            if reports { watcher.expectEachOpenedScopeEndedOnce() }
        }
    }
}
