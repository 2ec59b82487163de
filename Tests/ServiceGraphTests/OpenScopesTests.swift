import ServiceGraph
import ServiceGraphTestSupport
import Testing

// A graph keeps its open scopes at places a closed scope gives back, in room that grows with the most
// scopes open at once. Sequences of opens and closes around that room's first size (8) and its growth,
// in a random order, then a shutdown: each scope closes once, and the shutdown closes the ones still
// open newest first.

private enum ScopeNumber: ServiceKey { typealias Value = Int }
private enum Recorder: ServiceKey { typealias Value = NumberedRecorder }

private final class NumberedRecorder: LifecycleHooks, Sendable {
    let number: Int
    let log: EventLog

    init(number: Int, log: EventLog) {
        self.number = number
        self.log = log
    }

    func didAdd() async throws {}
    func willRemove() async throws { log.record("\(number)") }
}

@Suite("Open scopes, many at once")
struct OpenScopesTests {
    @Test(arguments: [1, 7, 8, 9, 17, 300])
    func shutdownClosesWhatIsStillOpenNewestFirstAfterPlacesAreReused(openAtOnce: Int) async throws {
        var random = SplitMix64(seed: UInt64(openAtOnce) &* 0x9E37_79B9)
        let log = EventLog()
        var builder = ServiceGraph.Builder()
        builder.seed(ScopeNumber.self)
        builder.provide(Recorder.self, lifetime: .scoped, dependsOn: ScopeNumber.self) { number in
            NumberedRecorder(number: number, log: log)
        }
        let graph = try await builder.build()

        var open: [(number: Int, scope: ServiceScope)] = []
        var allScopes: [ServiceScope] = []
        var closedByCaller: [Int] = []
        var next = 0
        func openOne() async throws {
            let scope = try graph.makeScope(seeding: ScopeSeed(ScopeNumber.self, next))
            let recorder = try await scope.resolve(Recorder.self)
            #expect(recorder.number == next)
            open.append((next, scope))
            allScopes.append(scope)
            next += 1
        }
        // Three rounds: fill to `openAtOnce`, close a random part of what is open in a random order.
        for _ in 0..<3 {
            while open.count < openAtOnce { try await openOne() }
            for _ in 0..<Int.random(in: 0...open.count, using: &random) {
                let (number, scope) = open.remove(at: Int.random(in: 0..<open.count, using: &random))
                try await scope.close()
                closedByCaller.append(number)
            }
        }
        #expect(log.all == closedByCaller.map(String.init))

        try await graph.shutdown()

        // Opened later means a higher number: the shutdown's part of the log is descending.
        let stillOpen = open.map(\.number)
        #expect(Array(log.all.dropFirst(closedByCaller.count)) == stillOpen.sorted(by: >).map(String.init))
        #expect(allScopes.filter { !$0.isClosed }.isEmpty)
        #expect(Set(log.all).count == next && log.all.count == next)
    }
}
