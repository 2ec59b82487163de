import ServiceLifecycle
import Synchronization

/// Whether a long-running service is running, not just built: opened by the service from its `run()`
/// once it can serve, awaited by the services that need it running.
///
/// Construction is not readiness. A database client such as postgres-nio's can only lease connections
/// while its `run()` is running, so a service that needs the database for its own startup work must
/// wait for that, not for the client's construction, which is all the graph's order guarantees.
public final class RunningGate: Sendable {
    private enum State {
        case waiting([UInt64: CheckedContinuation<Void, any Error>])
        case running
        case stopped(any Error)
    }

    private let state = Locked<(state: State, nextWaiter: UInt64)>((.waiting([:]), 0))

    public init() {}

    /// Opens the gate: the service is running. Later calls do nothing.
    public func markRunning() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            guard case .waiting(let waiters) = state.state else { return [] }
            state.state = .running
            return Array(waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Closes the gate for good without it ever opening: the service stopped before it was running.
    /// Those waiting, and those who wait later, get `error`. Does nothing once the gate is open.
    func markStopped(_ error: any Error) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            guard case .waiting(let waiters) = state.state else { return [] }
            state.state = .stopped(error)
            return Array(waiters.values)
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    /// Whether the service said it is running.
    public var isRunning: Bool {
        state.withLock { state in
            if case .running = state.state { return true }
            return false
        }
    }

    /// Waits until the service is running.
    ///
    /// - Throws: The error the gate was closed with when the service stopped before it was running, or
    ///   `CancellationError` when the waiting task is cancelled.
    public func waitUntilRunning() async throws {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    switch state.state {
                    case .running: return .success(())
                    case .stopped(let error): return .failure(error)
                    case .waiting(var waiters):
                        if Task.isCancelled { return .failure(CancellationError()) }
                        waiters[id] = waiter
                        state.state = .waiting(waiters)
                        return nil
                    }
                }
                if let outcome { waiter.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard case .waiting(var waiters) = state.state, let waiter = waiters.removeValue(forKey: id) else {
                    return nil
                }
                state.state = .waiting(waiters)
                return waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}

/// A long-running service that says when it is running (``running``), for the services that need it
/// running before their own startup work (``NeedsRunningServices``). Its `run()` calls
/// `running.markRunning()` once it can serve.
public protocol ReportsRunning: Service {
    var running: RunningGate { get }
}

/// A long-running service whose startup work needs other services running, not just built:
/// ``GraphServiceGroup`` calls its `run()` only once each of ``needsRunning`` is running.
///
/// The services it names are typically its own dependencies in the graph, so each is created, and
/// started, before it: the group refuses one that starts after it, or that the group does not run.
public protocol NeedsRunningServices: Service {
    var needsRunning: [any ReportsRunning] { get }
}
