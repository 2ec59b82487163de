import ServiceGraph
import ServiceGraphTestSupport

/// Runs one sequence in a task of its own and fails it, with its seed and trace, when it breaks an
/// invariant or when one operation runs longer than ``operationLimit`` (a hang: the sequence's task is
/// cancelled and, if it does not end, left behind).
enum StatefulWatchdog {
    /// Far longer than any operation takes (the slowest wait on purpose for a tenth of a second).
    static let operationLimit = Duration.seconds(30)

    struct Outcome {
        /// The failure, with the seed and the operations so far; nil when the sequence passed.
        let failure: String?
        let kindsRun: Set<String>
    }

    static func check(seed: UInt64) async -> Outcome {
        let run = StatefulRun(seed: seed)
        let verdict = Verdict()
        let work = Task {
            do {
                try await run.run()
                verdict.finish(nil)
            } catch {
                verdict.finish("\(error)")
            }
            verdict.markEnded()
        }
        let monitor = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(20))
                if let running = run.trace.running, running.elapsed > operationLimit {
                    verdict.finish(
                        "hang: operation \(running.index) did not finish within \(operationLimit) (cancelled it)"
                    )
                    work.cancel()
                    return
                }
            }
        }
        let message = await verdict.wait()
        monitor.cancel()
        if message != nil {
            // Give a cancelled sequence a moment to end; one that does not is left behind.
            let deadline = ContinuousClock.now + .seconds(10)
            while !verdict.hasEnded && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        }
        let failure = message.map { message in
            """
            seed \(seed): \(message)
              replay: SERVICEGRAPH_STATEFUL_SEED=\(seed) swift test --filter Stateful
            \(run.trace.text)
            """
        }
        return Outcome(failure: failure, kindsRun: verdict.hasEnded ? run.kindsRun : [])
    }
}

/// The first verdict on a sequence, delivered once to one waiter.
private final class Verdict: Sendable {
    private struct State {
        var message: String??
        var waiter: CheckedContinuation<String?, Never>?
        var ended = false
    }

    private let state = Locked(State())

    func finish(_ message: String?) {
        let waiter = state.withLock { state -> CheckedContinuation<String?, Never>? in
            guard state.message == nil else { return nil }
            state.message = .some(message)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: message)
    }

    func markEnded() { state.withLock { $0.ended = true } }

    var hasEnded: Bool { state.withLock { $0.ended } }

    func wait() async -> String? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> String?? in
                if let message = state.message { return .some(message) }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
