/// Where a cleanup that runs once stands: a graph's shutdown, a scope's close.
///
/// A failed build's release of what it started needs none of this: it has one caller (the build's
/// coordinator, which has not handed the graph to anyone) and no waiter, so it calls
/// ``Lifecycle/release(_:of:)``, the same release routine these runs call, directly. Work the build
/// abandoned releases what it started itself, once ``BuildInbox`` refuses its report.
///
/// The first caller to ``start()`` it runs it; a later or concurrent caller finds it running or
/// finished and, if it needs the outcome, waits for the first run's with ``Locked/outcome(of:)``. A
/// waiter is a continuation, resumed only by ``finish(with:)``: cancelling a waiting task neither ends
/// its wait early nor touches the run, and the run itself takes cancellation-proof steps only
/// (``Lifecycle/release(_:of:)``).
///
/// A value kept in its owner's locked state, so that starting the cleanup and the owner's other
/// changes (refusing new work, taking what is still open) happen together.
struct Teardown<Outcome: Sendable> {
    private enum Phase {
        case notStarted
        case running(waiters: [CheckedContinuation<Outcome, Never>])
        case finished(Outcome)
    }

    /// What a caller of ``start()`` is to do.
    enum Turn {
        /// Run the cleanup, then call ``finish(with:)``: this caller came first.
        case run
        /// Another caller is running it.
        case running
        /// It ran, with this outcome.
        case finished(Outcome)
    }

    /// The callers waiting for a run's outcome, to resume once out of the owner's lock.
    struct Waiters {
        fileprivate var waiters: [CheckedContinuation<Outcome, Never>] = []

        /// Resumes them; the test for none is inlined, as there usually are none.
        @inline(__always)
        func resume(returning outcome: Outcome) {
            if !waiters.isEmpty { resumeEach(returning: outcome) }
        }

        @inline(never)
        private func resumeEach(returning outcome: Outcome) {
            for waiter in waiters { waiter.resume(returning: outcome) }
        }
    }

    private var phase = Phase.notStarted

    /// Whether the cleanup has started (and new work must be refused).
    var hasStarted: Bool {
        if case .notStarted = phase { return false }
        return true
    }

    /// Starts the cleanup if nobody has; says who runs it.
    mutating func start() -> Turn {
        switch phase {
        case .notStarted:
            phase = .running(waiters: [])
            return .run
        case .running: return .running
        case .finished(let outcome): return .finished(outcome)
        }
    }

    /// Starts and finishes a cleanup that has not started, with nothing to report and no one waiting:
    /// a scope's close with nothing to run, in one turn of its lock.
    mutating func finishAtOnce() where Outcome == [ServiceGraphError.Problem] {
        _internalInvariant(!hasStarted, "a cleanup finished at once had started")
        phase = .finished([])
    }

    /// Keeps the outcome of the run.
    ///
    /// - Returns: The callers waiting for it: resume them once out of the owner's lock.
    mutating func finish(with outcome: Outcome) -> Waiters {
        defer { phase = .finished(outcome) }
        guard case .running(let waiters) = phase else { return Waiters() }
        return Waiters(waiters: waiters)
    }

    /// The outcome when the cleanup has finished; otherwise keeps `waiter` for ``finish(with:)`` and
    /// returns nil.
    mutating func outcome(orWait waiter: CheckedContinuation<Outcome, Never>) -> Outcome? {
        switch phase {
        case .finished(let outcome):
            return outcome
        case .running(var waiters):
            waiters.append(waiter)
            phase = .running(waiters: waiters)
            return nil
        case .notStarted:
            preconditionFailure("waiting for a cleanup that has not started")
        }
    }
}

extension Teardown {
    /// Waits for the outcome of a started teardown, which `outcomeOrWait` reaches under its lock (see
    /// ``outcome(orWait:)``).
    static func outcome(_ outcomeOrWait: (CheckedContinuation<Outcome, Never>) -> Outcome?) async -> Outcome {
        await withCheckedContinuation { waiter in
            if let finished = outcomeOrWait(waiter) { waiter.resume(returning: finished) }
        }
    }
}

extension Locked {
    /// Waits for the outcome of the started ``Teardown`` at `teardown` in the locked state.
    func outcome<Outcome>(of teardown: WritableKeyPath<State, Teardown<Outcome>>) async -> Outcome {
        await Teardown.outcome { waiter in withLock { $0[keyPath: teardown].outcome(orWait: waiter) } }
    }
}
