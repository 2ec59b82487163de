extension _GraphCore {
    /// The value at `slot`, made without suspending: where `resolveSynchronously` starts a chain.
    ///
    /// A singleton is read as is. A transient is made in its own entry of the current thread's trail
    /// (``_ThreadTrail``), so that a factory asking for it again, through a graph or scope it captured,
    /// gets ``ServiceGraphError/Code/reentrantResolution`` instead of recursing without end.
    @inlinable
    @inline(__always)
    func valueSynchronously<Key: ServiceKey>(
        at slot: Int,
        as key: Key.Type,
        in scope: _ScopeBody?
    ) throws -> Key.Value {
        if let value = singleton(at: slot, as: Key.Value.self) {
            return value
        }
        guard _ThreadTrail.hasThreads else {
            return try _ResolutionTrail.current.withValue(try trail(entering: slot)) {
                try withUnsafeResolver(in: scope) { try $0.valueSynchronously(at: slot, as: Key.Value.self, depth: 0) }
            }
        }
        let trail = try _ThreadTrail.enter(slot, of: self)
        defer { _ThreadTrail.leave(trail) }
        return try withUnsafeResolver(in: scope) { try $0.valueSynchronously(at: slot, as: Key.Value.self, depth: 0) }
    }

    /// The instance at `slot` for a `resolve` that must await (a transient with an asynchronous factory
    /// in its chain, or a scoped instance not yet made), held as the graph holds it (see ``_AnyBox``);
    /// reported when resolve events are on.
    ///
    /// Out of line, so that the synchronous path of the `resolve` that calls it, inlined in the caller,
    /// makes no asynchronous call; and not generic, so that no code specialized in the caller carries
    /// a value across suspension points, only a reference (with Swift 6.3, values of 16-byte
    /// alignment carried across them there made release builds abort in the task allocator).
    @usableFromInline
    nonisolated(nonsending) func boxAwaiting(at slot: Int, in scope: _ScopeBody?) async throws -> _AnyBox {
        guard reportsResolves else { return try await awaitedBox(at: slot, in: scope) }
        let start = ContinuousClock.now
        let result: Result<_AnyBox, any Error>
        do { result = .success(try await awaitedBox(at: slot, in: scope)) } catch { result = .failure(error) }
        return try reported(result, of: slot, since: start)
    }

    /// The instance at `slot`, awaiting asynchronous factories and scoped instances: where `resolve`
    /// starts a chain (`startsChain`), or a dependency a factory on the asynchronous path needs.
    ///
    /// A transient starting a chain is made in its own entry of the task's ``_ResolutionTrail`` (one
    /// whose chain is synchronous is made by `resolve` itself, as `resolveSynchronously` makes it, on
    /// the thread's trail); a dependency whose chain is synchronous is made here without suspending. A
    /// scope's creation task makes its own entry for a scoped instance.
    nonisolated(nonsending) func awaitedBox(
        at slot: Int,
        in scope: _ScopeBody?,
        startsChain: Bool = true
    ) async throws -> _AnyBox {
        if let box = buffers.singletonBox(at: slot) { return box.takeUnretainedValue() }
        switch lifetime(of: slot) {
        case .transient:
            if startsChain {
                return try await _ResolutionTrail.current.withValue(try trail(entering: slot, in: scope)) {
                    try await transientBox(at: slot, in: scope)
                }
            }
            let synchronous = scope == nil ? resolvesSynchronously(slot) : resolvesSynchronouslyInScope(slot)
            guard synchronous else { return try await transientBox(at: slot, in: scope) }
            do {
                var resolver = _UnsafeResolver(core: self, scope: scope, slot: slot)
                return try factory(at: slot).makeBoxSynchronously(&resolver)
            } catch {
                throw failure(error, at: slot)
            }
        case .scoped:
            guard let scope else { throw ServiceGraphError(scopeRequired(slot)) }
            // A service of an outer kind of scope is the outer scope's.
            return try await scope._owner(of: slot)._instanceBox(at: slot)
        case .singleton:
            if isDeferred(slot), let deferredSingletons { return try await deferredSingletons.box(at: slot, in: self) }
            // A built graph has every other singleton, and a build starts a factory only once its
            // dependencies exist: an empty singleton slot is seen only by a factory of a failed or
            // cancelled build that it abandoned (and cancelled), after the build released what it made.
            throw CancellationError()
        }
    }

    /// Resolves `slot` without suspending and reports it (out of line: only with resolve events on).
    @usableFromInline
    func valueSynchronouslyReporting<Key: ServiceKey>(
        at slot: Int,
        as key: Key.Type,
        in scope: _ScopeBody?
    ) throws -> Key.Value {
        let start = ContinuousClock.now
        return try reported(Result { try valueSynchronously(at: slot, as: key, in: scope) }, of: slot, since: start)
    }

    /// Sends the ``ServiceGraphEvent/Kind/resolved`` event of a resolve of `slot` and hands on its result.
    private func reported<Value>(
        _ result: Result<Value, any Error>,
        of slot: Int,
        since start: ContinuousClock.Instant
    ) throws -> Value {
        let error: (any Error)? = if case .failure(let error) = result { error } else { nil }
        events.send(ServiceGraphEvent(.resolved, key: name(slot), duration: start.duration(to: .now), error: error))
        return try result.get()
    }

    /// The current task's ``_ResolutionTrail`` with the transient at `slot` pushed on it.
    ///
    /// - Throws: ``ServiceGraphError/Code/reentrantResolution`` when the current task is making it.
    @usableFromInline
    func trail(entering slot: Int, in scope: _ScopeBody? = nil) throws(ServiceGraphError) -> _ResolutionTrail {
        guard let trail = _ResolutionTrail.entering(slot, of: self, in: scope) else { throw reentrantError(slot) }
        return trail
    }
}
