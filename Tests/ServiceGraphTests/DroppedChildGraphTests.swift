import Foundation
@testable import ServiceGraph
import ServiceGraphTestSupport
import Testing

/// The test doubles' lock (the library's own is visible here too, through `@testable`).
private typealias DCLocked = ServiceGraphTestSupport.Locked

private enum DCParentKey: ServiceKey { typealias Value = HookedService }
private enum DCChildKey: ServiceKey { typealias Value = HookedService }

/// The child's `droppedWithoutShutdown` handler: notes whether the parent still counts the child then,
/// and holds the report until the test lets it go.
private final class DCReport: Sendable {
    private struct State {
        var parentWaits: Bool?
        var timedOut = false
    }
    private let state = DCLocked(State())
    private let letGo = DispatchSemaphore(value: 0)
    private let log: EventLog

    init(log: EventLog) { self.log = log }

    /// Whether the parent counted the child as unfinished while the child reported; nil before the report.
    var parentWaits: Bool? { state.withLock { $0.parentWaits } }
    var timedOut: Bool { state.withLock { $0.timedOut } }

    func letTheReportGo() { letGo.signal() }

    func record(_ event: ServiceGraphEvent, parent: ServiceGraph) {
        guard event.kind == .droppedWithoutShutdown else { return }
        state.withLock { $0.parentWaits = parent.hasUnfinishedDependents }
        let outcome = letGo.wait(timeout: .now() + .seconds(ProcessEnvironment.isSanitizerRun ? 240 : 60))
        state.withLock { $0.timedOut = outcome == .timedOut }
        log.record("child reported dropped")
    }
}

/// Waits (polling, with a deadline that fails the test rather than hang it) until `condition` holds.
private func dcWait(_ what: String, until condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(ProcessEnvironment.isSanitizerRun ? 240 : 60)
    while !condition() {
        guard ContinuousClock.now < deadline else { throw TestFailure("waited in vain for \(what)") }
        try await Task.sleep(for: .milliseconds(1))
    }
}

@Suite("A child graph dropped without shutdown")
struct DroppedChildGraphTests {
    /// The child reports that it was dropped owing hooks before it tells its parent it has finished: the
    /// parent's shutdown, started meanwhile, waits for the report, and removes the parent's singleton
    /// after it.
    @Test func itReportsTheDropBeforeItsParentsShutdownPassesIt() async throws {
        let log = EventLog()
        let report = DCReport(log: log)
        var builder = ServiceGraph.Builder()
        builder.requiresShutdown = false
        builder.provide(DCParentKey.self) { HookedService("parent", log: log) }
        let parent = try await builder.build()
        try await withDeadline(.seconds(60)) {
            var childBuilder = parent.makeChildBuilder()
            childBuilder.eventKinds = [.droppedWithoutShutdown]
            childBuilder.eventHandler = { report.record($0, parent: parent) }
            childBuilder.provide(DCChildKey.self, dependsOn: DCParentKey.self) {
                HookedService("child of \($0.name)", log: log)
            }
            // Dropped on a thread of its own, which the report holds.
            let child = DCLocked<ServiceGraph?>(try await childBuilder.build())
            Thread { _ = child.withLock { $0.take() } }.start()
            try await dcWait("the child's report") { report.parentWaits != nil }
            #expect(report.parentWaits == true, "the parent was told the child finished before the child reported")
            let shutdown = Task { try await parent.shutdown() }
            try await dcWait("the parent's shutdown to start") { parent.core.isShutDown() }
            report.letTheReportGo()
            try await shutdown.value
        }
        #expect(!report.timedOut)
        #expect(
            log.all == [
                "init parent", "didAdd parent", "init child of parent", "didAdd child of parent",
                "child reported dropped", "willRemove parent",
            ]
        )
    }
}
