/// A created instance whose ``LifecycleHooks/didAdd()`` succeeded: it must get ``LifecycleHooks/willRemove()``.
struct StartedService: Sendable {
    let slot: Int
    let hooks: InstanceHooks
}

/// Runs lifecycle hooks, with the graph's timeout, and turns their failures into problems that name
/// the service.
enum Lifecycle {
    /// Calls `didAdd` on a freshly created instance.
    static func didAdd(_ hooks: InstanceHooks, of slot: Int, in core: _GraphCore) async throws(ServiceGraphError) {
        if let problem = await run(.didAdd, of: slot, in: core, hooks.hooks.didAdd) {
            throw ServiceGraphError(problem)
        }
    }

    /// Calls `willRemove` on each started service, most recently started first, and keeps going when
    /// one throws or times out. Each hook runs exactly once, and each instance is given back to the
    /// graph's ``HookClaims`` after its hook.
    ///
    /// Cleanup is not the caller's to abandon: the hooks run in a task of their own, so cancelling the
    /// caller (a `shutdown()` or `close()` in a cancelled task) does not cancel them. Each is bounded
    /// by the graph's hook timeout only.
    ///
    /// - Returns: One problem per hook that failed, in the order they ran.
    nonisolated(nonsending) static func release(
        _ started: [StartedService],
        of core: _GraphCore
    ) async -> [ServiceGraphError.Problem] {
        guard !started.isEmpty else { return [] }
        return await UnretainingTask.start { await releaseInPlace(started, of: core) }.value
    }

    /// ``release(_:of:)`` in the calling task, for callers that are tasks of their own.
    static func releaseInPlace(_ started: [StartedService], of core: _GraphCore) async -> [ServiceGraphError.Problem] {
        var problems: [ServiceGraphError.Problem] = []
        for service in started.reversed() {
            // Another generation's to run (a ``LiveGraph``'s next one took the instance over), or the
            // previous one's again (this one is abandoned).
            guard core.hookClaims.beginRelease(service.hooks) else { continue }
            if let problem = await run(.willRemove, of: service.slot, in: core, service.hooks.hooks.willRemove) {
                problems.append(problem)
            }
            core.hookClaims.giveBack(service.hooks)
        }
        return problems
    }

    /// Runs one hook; nil when it succeeded, else the problem (it threw, or did not finish in time).
    private static func run(
        _ kind: ServiceGraphEvent.Kind,
        of slot: Int,
        in core: _GraphCore,
        _ hook: @escaping @Sendable () async throws -> Void
    ) async -> ServiceGraphError.Problem? {
        let name = core.name(slot)
        let hookName = kind.description
        let clock = ContinuousClock()
        let start = clock.now
        do {
            try await withTimeout(core.hookTimeout, hook)
            core.events.send(ServiceGraphEvent(kind, key: name, duration: start.duration(to: clock.now)))
            return nil
        } catch let timeout as HookTimedOut {
            core.events.send(
                ServiceGraphEvent(kind, key: name, duration: start.duration(to: clock.now), error: timeout)
            )
            return .init(
                .hookTimedOut,
                key: name,
                path: [name],
                site: core.site(slot),
                message: "\(hookName) of \(name) did not finish within \(timeout.limit) and was abandoned"
            )
        } catch {
            core.events.send(ServiceGraphEvent(kind, key: name, duration: start.duration(to: clock.now), error: error))
            return .init(
                kind == .didAdd ? .didAddFailed : .willRemoveFailed,
                key: name,
                path: [name],
                site: core.site(slot),
                message: "\(hookName) of \(name) threw: \(error)",
                underlyingError: error
            )
        }
    }

    /// Runs `operation`, giving up on it after `limit`: the caller goes on, the operation is cancelled
    /// and left to finish (or not) on its own. With no limit, runs it in place.
    static func withTimeout(
        _ limit: Duration?,
        _ operation: @escaping @Sendable () async throws -> Void
    ) async throws {
        guard let limit else {
            try await operation()
            return
        }
        let outcome = OneShot()
        let work = Task {
            do {
                try await operation()
                outcome.finish(.success(()))
            } catch {
                outcome.finish(.failure(error))
            }
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            outcome.finish(.failure(HookTimedOut(limit: limit)))
        }
        defer { timer.cancel() }
        do {
            try await withTaskCancellationHandler {
                try await outcome.wait()
            } onCancel: {
                work.cancel()
            }
        } catch let timeout as HookTimedOut {
            work.cancel()
            throw timeout
        }
    }
}

extension Lifecycle {
    /// The problem of an asynchronous factory abandoned after `limit`.
    static func factoryTimedOut(_ slot: Int, after limit: Duration, in core: _GraphCore) -> ServiceGraphError.Problem {
        let name = core.name(slot)
        return .init(
            .factoryTimedOut,
            key: name,
            path: [name],
            site: core.site(slot),
            message: "the factory of \(name) did not finish within \(limit) and was abandoned"
        )
    }
}

/// A factory that ran out of time.
struct FactoryTimedOut: Error {
    let limit: Duration
}

/// The error a hook that ran out of time is abandoned with.
struct HookTimedOut: Error, CustomStringConvertible {
    let limit: Duration

    var description: String { "did not finish within \(limit)" }
}

/// A result delivered once, to one waiter, whichever side comes first.
private final class OneShot: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Void, any Error>?)
        case done(Result<Void, any Error>)
    }

    private let state = Locked<State>(.waiting(nil))

    func finish(_ result: Result<Void, any Error>) {
        let waiter: CheckedContinuation<Void, any Error>? = state.withLock { state in
            guard case .waiting(let waiter) = state else { return nil }
            state = .done(result)
            return waiter
        }
        waiter?.resume(with: result)
    }

    func wait() async throws {
        try await withCheckedThrowingContinuation { continuation in
            let ready: Result<Void, any Error>? = state.withLock { state in
                switch state {
                case .done(let result): return result
                case .waiting:
                    state = .waiting(continuation)
                    return nil
                }
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}

extension _GraphCore {
    /// Makes a new instance at `slot` (see ``makeBox(at:in:)``) within the factory timeout `limit`: a
    /// scoped instance or a singleton created on first use, whose creation must not wait forever.
    ///
    /// - Throws: ``FactoryTimedOut`` when the factory ran past `limit` (it is cancelled, and what it
    ///   makes later is dropped); otherwise what the factory threw.
    func makeBox(at slot: Int, in scope: _ScopeBody?, within limit: Duration) async throws -> _AnyBox {
        let made = Locked<_AnyBox?>(nil)
        do {
            try await Lifecycle.withTimeout(limit) { [self] in
                let box = try await makeBox(at: slot, in: scope)
                made.withLock { $0 = box }
            }
        } catch is HookTimedOut {
            throw FactoryTimedOut(limit: limit)
        }
        // The closure ran to its end: a timeout throws instead.
        return made.withLock { $0 }!
    }
}
