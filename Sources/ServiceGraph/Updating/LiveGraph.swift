import Synchronization

/// A graph that changes while the program runs: each update derives the next generation from the
/// current one with a change set (services overridden, added or removed), validates it as a whole,
/// makes again only what the change reaches, and commits it.
///
/// ```swift
/// let live = try await LiveGraph(builder)                           // generation 1
/// try await live.update { $0.override(ConfigKey.self) { reloaded } } // generation 2
/// let mailer = live.current[MailerKey.self]                          // made with the new config
/// ```
///
/// An update:
/// - validates the whole next graph first, reporting every problem at once (the same messages as
///   ``ServiceGraph/Builder/validate()``); removing a key a service still requires names that service;
/// - makes again the changed services and everything that depends on them, transitively, in dependency
///   order, with `didAdd`; the other singletons are shared: the next generation takes the same
///   instances over, and no hook runs on them;
/// - is transactional: if a factory or a `didAdd` fails, what it made is released in reverse order and
///   the current generation keeps serving, untouched;
/// - on commit, ``current`` is the new generation, and the replaced generation retires on its own:
///   once no scope opened on it is open and no reader holds its graph, its instances that were not
///   shared get `willRemove`, in reverse dependency order (generations retire oldest first).
///
/// Hold ``current`` for one unit of work and read it again for the next: a graph kept for good keeps
/// its generation from retiring. Updates are serialized: one that starts while another runs waits for
/// it, and derives its generation from the one the other committed.
public final class LiveGraph: Sendable {
    private struct State {
        /// The current generation's builder (its graph is ``LiveGraph/currentGraph``, exchanged under this
        /// state's lock).
        var builder: ServiceGraph.Builder
        var generation: Int
        /// The replaced generations still retiring.
        var retiring: [Int: Task<[ServiceGraphError.Problem], Never>] = [:]
        /// The last replaced generation's retirement: the next one releases nothing before it is done,
        /// since an instance this generation shared on may still be used by that one's scopes.
        var lastRetirement: Task<[ServiceGraphError.Problem], Never>?
        /// What retired generations' `willRemove` hooks reported, for ``shutdown()``.
        var retirementProblems: [ServiceGraphError.Problem] = []
        var isShutDown = false
    }

    private let state: Locked<State>
    /// The current generation: loaded without a lock by readers, exchanged under the state's lock.
    private let currentGraph: AtomicStrongReference<ServiceGraph>
    private let updates = SerialGate()
    /// Set by ``shutdown()``: replaced generations retire without waiting for their readers and scopes.
    private let forced = ForcedRetirement()
    /// The builder's event handler, for the updates' and retirements' events.
    private let events: EventSink

    /// Builds the first generation of the graph `builder` describes.
    ///
    /// - Parameter builder: The builder of a root graph. A child graph's builder
    ///   (``ServiceGraph/makeChildBuilder()``) is refused with ``ServiceGraphError/Code/unsupported``: a
    ///   child shares its parent's singletons, which a generation cannot take over or retire. Make the
    ///   live graph from the root's builder, or make children of ``current``.
    /// - Throws: As ``ServiceGraph/Builder/build()``.
    public init(_ builder: ServiceGraph.Builder) async throws(ServiceGraphError) {
        if builder.parent != nil {
            throw ServiceGraphError(
                .init(
                    .unsupported,
                    key: "LiveGraph",
                    message: "a LiveGraph is made from a root graph's builder, not a child graph's: a child "
                        + "shares its parent's singletons, which a generation cannot take over or retire; make "
                        + "the LiveGraph from the root's builder, or make children of live.current"
                )
            )
        }
        var builder = builder
        builder.removedKeys = [:]
        builder.assignSerials()
        let graph = try await builder.build()
        state = Locked(State(builder: builder, generation: 1))
        currentGraph = AtomicStrongReference(graph)
        events = EventSink(handler: builder.eventHandler, kinds: builder.eventKinds)
    }

    /// The current generation's graph, read without a lock: a reader never sees a generation before
    /// it is committed, and keeps the one it read alive as long as it holds it.
    public var current: ServiceGraph { currentGraph.load() }

    /// The current generation's number: 1 for the first graph, one more for each committed update.
    public var generation: Int { state.withLock { $0.generation } }

    /// What `change` would do to the current generation, without running anything: a dry run of
    /// ``update(_:)``.
    ///
    /// - Parameter change: Changes a copy of the current generation's builder: `provide`, `override`,
    ///   ``ServiceGraph/Builder/remove(_:)``, `contribute`, `decorate`, `include`.
    /// - Throws: Every problem of the next graph, at once.
    public func plan(_ change: (inout ServiceGraph.Builder) -> Void) throws(ServiceGraphError) -> GraphUpdatePlan {
        let (builder, graph, generation) = state.withLock { ($0.builder, currentGraph.load(), $0.generation) }
        return try Self.prepare(change, after: builder, graph: graph, generation: generation).plan
    }

    /// Derives the next generation with `change`, builds it, and commits it.
    ///
    /// - Parameter change: Changes a copy of the current generation's builder (see ``plan(_:)``).
    /// - Returns: What the update did.
    /// - Throws: The next graph's problems (nothing runs then), or the failure of a factory or `didAdd`
    ///   with the service's path (what was made is released; the current generation stays); or
    ///   ``ServiceGraphError/Code/graphShutDown`` once ``shutdown()`` has begun.
    @discardableResult
    public nonisolated(nonsending) func update(
        _ change: (inout ServiceGraph.Builder) -> Void
    ) async throws(ServiceGraphError) -> GraphUpdatePlan {
        await updates.enter()
        defer { updates.leave() }
        let (builder, graph, generation, isShutDown) = state.withLock {
            ($0.builder, currentGraph.load(), $0.generation, $0.isShutDown)
        }
        // The current generation shut down directly (not through ``shutdown()``) has released its
        // instances: none can be taken over.
        guard !isShutDown, !graph.core.isShutDown() else {
            throw ServiceGraphError(graph.core.shutDownProblem("an update"))
        }
        let clock = ContinuousClock()
        let start = clock.now
        var prepared: Prepared
        let next: ServiceGraph
        do {
            prepared = try Self.prepare(change, after: builder, graph: graph, generation: generation)
        } catch {
            events.send(ServiceGraphEvent(.updateFailed, duration: start.duration(to: clock.now), error: error))
            throw error
        }
        do {
            next = try await prepared.builder.buildNextGeneration(
                of: graph,
                plan: prepared.nextPlan,
                diff: prepared.diff
            )
        } catch {
            let duration = start.duration(to: clock.now)
            events.send(ServiceGraphEvent(.updateFailed, duration: duration, error: error, update: prepared.plan))
            throw error
        }
        prepared.builder.removedKeys = [:]
        var handedOver = [Bool](repeating: false, count: graph.core.count)
        for (slot, _) in prepared.diff.adopted { handedOver[slot] = true }
        for (holder, _) in prepared.diff.transferred { handedOver[holder] = true }
        let sharedSlots = handedOver
        let committed = state.withLock { state -> Bool in
            guard !state.isShutDown else { return false }
            state.builder = prepared.builder
            next.core.hookClaims.commitTakeOvers()
            _ = currentGraph.exchange(next)
            state.generation = generation + 1
            let retiring = RetiringGeneration(graph)
            let previous = state.lastRetirement
            let nextClaims = next.core.hookClaims
            let task = Task { [weak self, forced, events] in
                await retiring.waitUntilUnused(unless: forced)
                // Older generations first: what they still use may have been shared into this one.
                _ = await previous?.value
                let problems = await retiring.retire(handingOver: sharedSlots)
                nextClaims.forgetPrevious()
                events.send(
                    ServiceGraphEvent(
                        .generationRetired,
                        key: "generation \(generation)",
                        duration: start.duration(to: clock.now),
                        error: problems.isEmpty ? nil : ServiceGraphError(problems)
                    )
                )
                self?.retired(generation, problems: problems)
                return problems
            }
            state.retiring[generation] = task
            state.lastRetirement = task
            return true
        }
        guard committed else {
            // The taken-over instances stay the current generation's: only what this update made goes.
            var adopted = [Bool](repeating: false, count: next.core.count)
            for (_, slot) in prepared.diff.adopted { adopted[slot] = true }
            _ = await next.retire(handingOver: adopted)
            throw ServiceGraphError(graph.core.shutDownProblem("an update"))
        }
        events.send(
            ServiceGraphEvent(
                .updateCommitted,
                key: "generation \(generation + 1)",
                duration: start.duration(to: clock.now),
                update: prepared.plan
            )
        )
        return prepared.plan
    }

    /// Shuts the graph down: lets an update under way finish (committed or rolled back), retires the
    /// replaced generations at once, oldest first (closing the scopes still open on them, as
    /// ``ServiceGraph/shutdown()`` does), then shuts the current one down. Updates are refused from then
    /// on.
    ///
    /// - Throws: Every `willRemove` failure, the retired generations' included.
    public nonisolated(nonsending) func shutdown() async throws(ServiceGraphError) {
        // An update under way finishes (committed or rolled back) first: its next generation shares
        // instances with the current one.
        await updates.enter()
        defer { updates.leave() }
        let (graph, retiring) = state.withLock { state in
            state.isShutDown = true
            return (currentGraph.load(), Array(state.retiring.values))
        }
        forced.set()
        for task in retiring { _ = await task.value }
        var problems = state.withLock { state in
            defer { state.retirementProblems = [] }
            return state.retirementProblems
        }
        do {
            try await graph.shutdown()
        } catch {
            problems += error.problems
        }
        if !problems.isEmpty { throw ServiceGraphError(problems) }
    }

    private func retired(_ generation: Int, problems: [ServiceGraphError.Problem]) {
        state.withLock { state in
            state.retiring[generation] = nil
            if state.retiring.isEmpty { state.lastRetirement = nil }
            state.retirementProblems += problems
        }
    }

    /// A change set applied to a copy of the current builder, validated, and compared with the current
    /// generation.
    private struct Prepared {
        var builder: ServiceGraph.Builder
        let nextPlan: GraphPlan
        let diff: GenerationDiff
        let plan: GraphUpdatePlan
    }

    private static func prepare(
        _ change: (inout ServiceGraph.Builder) -> Void,
        after builder: ServiceGraph.Builder,
        graph: ServiceGraph,
        generation: Int
    ) throws(ServiceGraphError) -> Prepared {
        let current = try builder.validatedPlan()
        var next = builder
        change(&next)
        next.assignSerials()
        let nextPlan = try next.validatedNextPlan(after: current)
        let diff = GenerationDiff(from: graph, plan: current, to: nextPlan)
        return Prepared(
            builder: next,
            nextPlan: nextPlan,
            diff: diff,
            plan: GraphUpdatePlan(generation: generation + 1, plan: nextPlan, current: current, diff: diff)
        )
    }
}

/// A replaced generation on its way out: it retires once nothing uses it any more, that is once no
/// scope opened on it is open and no reader holds it (the retirement's reference is the only one).
private final class RetiringGeneration: @unchecked Sendable {
    // Only the retirement's task touches it, after the update that made it returns.
    private var graph: ServiceGraph?

    init(_ graph: ServiceGraph) {
        self.graph = graph
    }

    /// Returns once the generation is unused, or `forced` is set. Looks at once, then at growing
    /// intervals (1 to 100 ms): a generation is usually unused as soon as the update returns.
    func waitUntilUnused(unless forced: ForcedRetirement) async {
        var interval = Duration.milliseconds(1)
        while !forced.isSet {
            if isKnownUniquelyReferenced(&graph), graph?.hasUnfinishedDependents == false { return }
            try? await Task.sleep(for: interval)
            interval = min(interval * 2, .milliseconds(100))
        }
    }

    func retire(handingOver handedOver: [Bool]) async -> [ServiceGraphError.Problem] {
        guard let graph else { return [] }
        self.graph = nil
        return await graph.retire(handingOver: handedOver)
    }
}

/// A flag set once, read without a lock.
private final class ForcedRetirement: Sendable {
    private let flag = Atomic<Bool>(false)

    var isSet: Bool { flag.load(ordering: .acquiring) }

    func set() { flag.store(true, ordering: .releasing) }
}

/// Lets one caller in at a time, the others waiting in order.
private final class SerialGate: Sendable {
    private let state = Locked<(isBusy: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func enter() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let entered = state.withLock { state in
                if !state.isBusy {
                    state.isBusy = true
                    return true
                }
                state.waiters.append(waiter)
                return false
            }
            if entered { waiter.resume() }
        }
    }

    func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.isBusy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
