/// The singletons a graph creates on first use rather than in its build (``GraphPlan/deferred``):
/// those that only ``Lazy`` handles reach. Each is created once, by the first use; uses at the same
/// time wait for that one. A created instance is published in a cell of its own, read with one atomic
/// load, and kept until the graph's core is released (as the build's singletons are).
///
/// Creation runs the factory (within the factory timeout), then `didAdd`; a failure is not kept, so a
/// later use tries again. The graph's shutdown refuses new creations, waits for those under way, and
/// releases the created instances with the build's (``Lifecycle/startOrder(of:and:aliases:in:)``).
final class DeferredSingletons: Sendable {
    private struct State {
        /// The creations under way, by slot.
        var creating: [Int: Task<Void, any Error>] = [:]
        /// The created instances whose hooks this graph runs, in creation order.
        var started: [StartedService] = []
        /// Every created instance's slot, in creation order (for dumps).
        var created: [Int] = []
        /// The created instances that hand out one whose hooks another singleton runs.
        var aliases: [HookAlias] = []
        var isClosed = false
        /// Whether the close waits for the creations under way (a shutdown) rather than leaving them to
        /// remove what they make (a failed build).
        var waitsForCreations = true
    }

    let cells: _GraphCore.ScopeCells
    /// The cells' memory, kept as long as they are read (only kept alive, never read).
    private nonisolated(unsafe) let cellStorage: AnyObject
    private let state = Locked(State())

    init(core: _GraphCore) {
        (cells, cellStorage) = _GraphCore.ScopeCells.make(
            layout: _GraphCore.ScopeLayout(core: core, where: core.isDeferred)
        )
    }

    /// The created instance at `slot`, not retained; nil until it is created. The core keeps it until it
    /// is released itself, and the caller holds the core.
    func createdBox(at slot: Int) -> _GraphCore._PublishedBox? {
        cells.box(at: slot)
    }

    /// The instance at `slot`, created by this call or by the use that was first to ask for it.
    nonisolated(nonsending) func box(at slot: Int, in core: _GraphCore) async throws -> _AnyBox {
        if let box = cells.box(at: slot) { return box.box.takeUnretainedValue() }
        let task = state.withLock { state -> Task<Void, any Error>? in
            // Created since the first look: its creation published it under this lock.
            if cells.box(at: slot) != nil || state.isClosed { return nil }
            if let task = state.creating[slot] { return task }
            let task = UnretainingTask.start { try await self.create(slot, in: core) }
            state.creating[slot] = task
            return task
        }
        if let task {
            // Being made by this task (or the one that asked for it): waiting would never end.
            if _ResolutionTrail.isMaking(slot, of: self) { throw core.reentrantError(slot) }
            try await task.value
        }
        // Refused, or made and the graph shut down in between (its instance is kept: read it).
        guard let box = cells.box(at: slot) else { throw core.shutDownError(at: slot) }
        return box.box.takeUnretainedValue()
    }

    /// Creates the instance at `slot` and runs its `didAdd`, in its own entry of the
    /// ``_ResolutionTrail`` (a factory or hook asking for it again is refused, not left waiting for
    /// itself); on failure, forgets the attempt.
    private func create(_ slot: Int, in core: _GraphCore) async throws {
        try await _ResolutionTrail.current.withValue(_ResolutionTrail(making: slot, of: self)) {
            let factory = core.serviceFactory(at: slot)
            let clock = ContinuousClock()
            let start = clock.now
            let box: _AnyBox
            do {
                if let limit = core.factoryTimeout, !factory.isSynchronous {
                    box = try await core.makeBox(at: slot, in: nil, within: limit)
                } else {
                    box = try await core.makeBox(at: slot, in: nil)
                }
            } catch let timeout as FactoryTimedOut {
                forget(slot)
                throw ServiceGraphError(Lifecycle.factoryTimedOut(slot, after: timeout.limit, in: core))
            } catch {
                forget(slot)
                throw core.failure(error, at: slot)
            }
            // A parent's singleton a child graph shares: the parent made it, and reports it.
            if !factory.isBorrowed {
                core.events.send(
                    ServiceGraphEvent(.serviceCreated, key: core.name(slot), duration: start.duration(to: clock.now))
                )
            }
            let claim = factory.claimHooks(of: box, for: slot, in: core.hookClaims, takingOver: true)
            let hooks = claim.hooks
            if let hooks = claim.hooksToStart {
                do {
                    try await Lifecycle.didAdd(hooks, of: slot, in: core)
                } catch {
                    core.hookClaims.giveBack(hooks)
                    forget(slot)
                    throw error
                }
            }
            let isClosed = state.withLock { state in
                state.creating[slot] = nil
                // Closed meanwhile by a failed build, which did not wait: not published, and removed here.
                if state.isClosed && !state.waitsForCreations { return true }
                cells.publish(box, at: slot)
                state.created.append(slot)
                if let hooks { state.started.append(StartedService(slot: slot, hooks: hooks)) }
                if case .held(let holder) = claim, let alias = HookAlias(slot, heldBy: holder, in: core) {
                    state.aliases.append(alias)
                }
                return false
            }
            if isClosed {
                if let hooks {
                    _ = await Lifecycle.releaseInPlace([StartedService(slot: slot, hooks: hooks)], of: core)
                }
                throw core.shutDownError(at: slot)
            }
        }
    }

    /// Places the instance at `slot` that a ``LiveGraph``'s next generation took over from the current
    /// one, as if created here (its hooks are the next generation's build log's, started already).
    /// Only while the next generation is being made, before any reader.
    func adopt(_ box: _AnyBox, at slot: Int) {
        cells.publish(box, at: slot)
        state.withLock { $0.created.append(slot) }
    }

    private func forget(_ slot: Int) {
        state.withLock { _ = $0.creating.removeValue(forKey: slot) }
    }

    /// Refuses new creations without waiting for those under way, which remove what they make
    /// themselves: a failed build's, which must not wait for a factory that may never end.
    ///
    /// - Returns: The created instances whose hooks this graph runs, in creation order.
    func closeWithoutWaiting() -> [StartedService] {
        state.withLock { state in
            state.isClosed = true
            state.waitsForCreations = false
            return state.started
        }
    }

    /// The slots of the instances created so far, in creation order.
    var createdSlots: [Int] { state.withLock { $0.created } }

    /// The created instances whose hooks this graph runs so far, in creation order.
    var startedSoFar: [StartedService] { state.withLock { $0.started } }

    /// The created instances so far that hand out one whose hooks another singleton runs.
    var aliasesSoFar: [HookAlias] { state.withLock { $0.aliases } }

    /// Refuses new creations and waits for those under way (a failing one is forgotten as usual).
    ///
    /// - Returns: The created instances whose hooks this graph runs, in creation order.
    nonisolated(nonsending) func close() async -> [StartedService] {
        let creating = state.withLock { state in
            state.isClosed = true
            return Array(state.creating.values)
        }
        for task in creating { _ = try? await task.value }
        return state.withLock { $0.started }
    }
}
