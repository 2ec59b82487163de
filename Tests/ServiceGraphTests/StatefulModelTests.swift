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
        var failures: [String] = []
        var kindsRun: Set<String> = []
        var sequences = 0
        for seed in StatefulCases.seeds() {
            await Task.yield()  // a long loop: let the suite's other tests have the threads too
            let outcome = await StatefulWatchdog.check(seed: seed)
            sequences += 1
            kindsRun.formUnion(outcome.kindsRun)
            if let failure = outcome.failure {
                failures.append(failure)
                if failures.count >= StatefulCases.maximumIssues { break }
            }
        }
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
/// `SERVICEGRAPH_STATEFUL_CASES=N` runs more (1,000 by default), and
/// `SERVICEGRAPH_STATEFUL_MAX_ISSUES=N` sets how many failing sequences are reported before the test
/// stops (10 by default).
enum StatefulCases {
    static func seeds(default count: Int = 1_000) -> [UInt64] {
        if let seed = ProcessEnvironment.value("SERVICEGRAPH_STATEFUL_SEED").flatMap(UInt64.init) { return [seed] }
        let total = ProcessEnvironment.value("SERVICEGRAPH_STATEFUL_CASES").flatMap(Int.init) ?? count
        return (0..<UInt64(total)).map { 7 &* 1_000_003 &+ $0 }
    }

    static var isReplay: Bool { ProcessEnvironment.value("SERVICEGRAPH_STATEFUL_SEED") != nil }

    static var maximumIssues: Int {
        ProcessEnvironment.value("SERVICEGRAPH_STATEFUL_MAX_ISSUES").flatMap(Int.init) ?? 10
    }
}
