/// Starts tasks that keep nothing alive once their work is done.
///
/// The runtime frees a finished task object a little after the task ends, and until then the object
/// holds the closure it ran, with everything the closure captured. A task that captured a graph's
/// core or its instances would keep them alive past a shutdown that already returned. These tasks
/// capture only a box that hands the work over, once, and is empty from then on: what the work uses
/// lives in the task's frame, which is gone when the work ends. So awaiting such a task's `value`
/// means its work no longer holds anything, and `then` runs only after the work let go.
enum UnretainingTask {
    /// Starts `work` in a new task; `then` runs in that task once `work` has returned and released
    /// what it captured.
    @discardableResult
    static func start<Result: Sendable>(
        _ work: @escaping @Sendable () async -> Result,
        then: (@Sendable () -> Void)? = nil
    ) -> Task<Result, Never> {
        let handOver = HandOver(work)
        return Task {
            // The task is the only taker, once: the work is there.
            let result = await handOver.take()!()
            then?()
            return result
        }
    }

    /// Starts throwing `work` in a new task.
    static func start(_ work: @escaping @Sendable () async throws -> Void) -> Task<Void, any Error> {
        let handOver = HandOver(work)
        return Task { try await handOver.take()!() }
    }
}

/// Holds a value until it is taken, once.
final class HandOver<Value: Sendable>: Sendable {
    private let value: Locked<Value?>

    init(_ value: Value) {
        self.value = Locked(value)
    }

    func take() -> Value? {
        value.withLock { value in
            defer { value = nil }
            return value
        }
    }
}
