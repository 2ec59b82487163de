/// Where the tasks of a build report to its coordinator: a queue the coordinator empties in one go,
/// and that stops accepting reports once the build has returned.
final class BuildInbox: Sendable {
    private struct State {
        var queue: [BuildStep] = []
        var waiter: CheckedContinuation<[BuildStep]?, Never>?
        var isCancelled = false
        var isClosed = false
    }

    private let state = Locked(State())

    /// Delivers a report; false when the build has already returned (the sender cleans up after
    /// itself).
    @discardableResult
    func post(_ step: BuildStep) -> Bool {
        let (accepted, waiter) = state.withLock { state -> (Bool, CheckedContinuation<[BuildStep]?, Never>?) in
            guard !state.isClosed else { return (false, nil) }
            state.queue.append(step)
            guard let waiter = state.waiter else { return (true, nil) }
            state.waiter = nil
            return (true, waiter)
        }
        if let waiter { waiter.resume(returning: take()) }
        return accepted
    }

    /// Every report received since the last call, waiting for one if there is none; nil once the
    /// coordinator's task is cancelled.
    func next() async -> [BuildStep]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[BuildStep]?, Never>) in
                let ready = state.withLock { state -> [BuildStep]?? in
                    if state.isCancelled { return .some(nil) }
                    if !state.queue.isEmpty {
                        defer { state.queue = [] }
                        return .some(state.queue)
                    }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.isCancelled = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// Stops accepting reports and returns those not yet taken.
    func close() -> [BuildStep] {
        state.withLock { state in
            state.isClosed = true
            defer { state.queue = [] }
            return state.queue
        }
    }

    /// Whether the build has returned.
    var isClosed: Bool { state.withLock { $0.isClosed } }

    private func take() -> [BuildStep] {
        state.withLock { state in
            defer { state.queue = [] }
            return state.queue
        }
    }
}

/// The race between an asynchronous factory and the factory timeout: whichever finishes first wins.
/// When the timer wins, it reports the timeout and the factory's result, whenever it comes, is dropped.
final class FactoryDeadline: Sendable {
    private enum Phase: Int {
        case running, finished, expired
    }

    private let phase = Locked(Phase.running)
    private let timer: Task<Void, Never>?

    init(_ limit: Duration, slot: Int, inbox: BuildInbox) {
        let phase = self.phase
        timer = UnretainingTask.start {
            do {
                try await Task.sleep(for: limit)
            } catch {
                return
            }
            let expired = phase.withLock { phase in
                guard phase == .running else { return false }
                phase = .expired
                return true
            }
            if expired { inbox.post(.factoryTimedOut(slot: slot, limit: limit)) }
        }
    }

    /// Called when the factory returns or throws; false when the timeout came first.
    func factoryFinished() -> Bool {
        let won = phase.withLock { phase in
            guard phase == .running else { return false }
            phase = .finished
            return true
        }
        timer?.cancel()
        return won
    }
}
