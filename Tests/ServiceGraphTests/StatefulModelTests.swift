import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// Random sequences of operations on builders, graphs, child graphs and scopes, each step checked
/// against a plain reference model (``StatefulRun``): builds from copies with overrides and doubles,
/// aliases, scopes resolved, closed and dropped, child graphs, shutdowns in random orders, cancelled
/// builds, shutdowns and closes, and tasks racing a close or a shutdown, with factories and hooks that
/// throw, hang or are slow.
///
/// A failing sequence is reported with its seed and its operations; `SERVICEGRAPH_STATEFUL_SEED=<seed>
/// swift test --filter Stateful` replays it, `SERVICEGRAPH_STATEFUL_CASES=100000` runs more.
@Suite("Stateful model")
struct StatefulModelTests {
    @Test func randomOperationSequencesKeepEveryLifecycleInvariant() async {
        // Several sequences at once: each spends most of its time waiting (slow and hanging hooks and
        // factories, timeouts), and they share nothing, so running them side by side takes a fraction
        // of the time and adds load to each. Failures are reported in the order of their seeds.
        var outcomes: [(index: Int, outcome: StatefulWatchdog.Outcome)] = []
        var failureCount = 0
        let seeds = StatefulCases.seeds()
        await withTaskGroup(of: (Int, StatefulWatchdog.Outcome).self) { group in
            var next = 0
            func startNext() {
                guard next < seeds.count else { return }
                let (index, seed) = (next, seeds[next])
                group.addTask { (index, await StatefulWatchdog.check(seed: seed)) }
                next += 1
            }
            for _ in 0..<StatefulCases.lanes { startNext() }
            while let (index, outcome) = await group.next() {
                outcomes.append((index, outcome))
                if outcome.failure != nil { failureCount += 1 }
                if failureCount < StatefulCases.maximumIssues { startNext() }
            }
        }
        outcomes.sort { $0.index < $1.index }
        let sequences = outcomes.count
        let failures = outcomes.compactMap(\.outcome.failure).prefix(StatefulCases.maximumIssues)
        let kindsRun = outcomes.reduce(into: Set<String>()) { $0.formUnion($1.outcome.kindsRun) }
        for failure in failures {
            Issue.record(Comment(rawValue: failure))
        }
        if failures.count >= StatefulCases.maximumIssues {
            Issue.record("stopped after \(failures.count) failing sequences of \(sequences)")
        }
        if !StatefulCases.isReplay && failures.isEmpty {
            #expect(kindsRun == StatefulOperation.kinds, "the generator reaches every kind of operation")
        }
    }
}

/// Which sequences the stateful test runs: `SERVICEGRAPH_STATEFUL_SEED=N` replays one,
/// `SERVICEGRAPH_STATEFUL_CASES=N` runs more (1,000 by default), ``lanes`` sets how many run at once, and
/// `SERVICEGRAPH_STATEFUL_MAX_ISSUES=N` sets how many failing sequences are reported before the test
/// stops (10 by default).
enum StatefulCases {
    static func seeds(default count: Int = 1_000) -> [UInt64] {
        if let seed = ProcessEnvironment.value("SERVICEGRAPH_STATEFUL_SEED").flatMap(UInt64.init) { return [seed] }
        let total = ProcessEnvironment.value("SERVICEGRAPH_STATEFUL_CASES").flatMap(Int.init) ?? count
        return (0..<UInt64(total)).map { 7 &* 1_000_003 &+ $0 }
    }

    /// How many sequences run at once: `SERVICEGRAPH_STATEFUL_LANES=N` (4 by default; 1 for a replay).
    static var lanes: Int {
        if isReplay { return 1 }
        return max(1, ProcessEnvironment.value("SERVICEGRAPH_STATEFUL_LANES").flatMap(Int.init) ?? 4)
    }

    static var isReplay: Bool { ProcessEnvironment.value("SERVICEGRAPH_STATEFUL_SEED") != nil }

    static var maximumIssues: Int {
        ProcessEnvironment.value("SERVICEGRAPH_STATEFUL_MAX_ISSUES").flatMap(Int.init) ?? 10
    }
}
