extension _GraphCore {
    /// The core's buffers seen through raw pointers, and a cursor over one factory call's dependencies:
    /// what a factory thunk pulls its dependencies from, in declaration order, with ``next(_:)`` or
    /// ``nextAwaiting(_:)``.
    ///
    /// Handed out only for the length of one call (``_GraphCore/withUnsafeResolver(in:_:)``, or `inout`
    /// to a factory thunk), the way swift-collections hands out `_HashTable.UnsafeHandle` only inside a
    /// closure: it holds no strong references, and is valid only while the graph or scope whose call made
    /// it is running that call, which keeps the core (and the scope) alive.
    ///
    /// On the synchronous path ``next(_:)`` recurses into the dependency's factory, counting the depth.
    /// Past ``recursionLimit`` levels it hands the rest of the chain to ``valueIteratively(at:)``, which
    /// calls the factories from an explicit stack and gives each one its dependencies through
    /// ``_PreparedValues``: the fast path pays a comparison per level, and a chain of any depth uses
    /// bounded stack.
    @usableFromInline
    struct _UnsafeResolver {
        // Safety: the core outlives the resolver (see the type's note); kept for errors and the
        // asynchronous path.
        @usableFromInline
        unowned(unsafe) let core: _GraphCore
        // Safety: the scope whose resolve or creation task made the resolver, running until it returns.
        @usableFromInline
        unowned(unsafe) let scope: _ScopeBody?
        /// The core's buffers, valid while the core lives.
        @usableFromInline
        let buffers: _Buffers
        /// The next dependency of the factory being called, in `dependencySlots`.
        @usableFromInline
        var position: Int
        /// How many synchronous factory calls this one is nested in.
        @usableFromInline
        let depth: Int
        // Safety: lives as long as the `valueIteratively(at:)` call that made it and this resolver.
        /// The values the iterative resolution made for this call's transient dependencies, or nil when
        /// the dependencies are made on demand.
        @usableFromInline
        unowned(unsafe) let prepared: _PreparedValues?
        #if SERVICEGRAPH_INTERNAL_CHECKS
        /// Where this call's dependencies end: ``nextSlot()`` never reads past it.
        @usableFromInline
        let end: Int
        #endif

        /// A resolver at the start of `slot`'s dependencies (or of none, for -1). With `prepared`, the
        /// dependencies that are not singletons are read from it, in order (see
        /// ``_GraphCore/preparedDependencies(of:in:)``).
        @inlinable
        init(core: _GraphCore, scope: _ScopeBody?, slot: Int, prepared: _PreparedValues? = nil) {
            self.core = core
            self.scope = scope
            buffers = core.buffers
            position = slot < 0 ? 0 : Int(buffers.dependencyStart[slot])
            // Past the recursion limit, `next(_:)` reads what is prepared instead of making it.
            depth = prepared == nil ? 0 : Self.recursionLimit
            self.prepared = prepared
            #if SERVICEGRAPH_INTERNAL_CHECKS
            end = slot < 0 ? 0 : Int(buffers.dependencyStart[slot + 1])
            #endif
        }

        /// A resolver for the call of `slot`'s factory, nested `depth` calls deep.
        @inlinable
        init(_ outer: _UnsafeResolver, slot: Int, depth: Int, prepared: _PreparedValues? = nil) {
            outer.buffers.checkSlot(slot)
            core = outer.core
            scope = outer.scope
            buffers = outer.buffers
            position = Int(outer.buffers.dependencyStart[slot])
            self.depth = depth
            self.prepared = prepared
            #if SERVICEGRAPH_INTERNAL_CHECKS
            end = Int(outer.buffers.dependencyStart[slot + 1])
            #endif
        }

        /// How deep the synchronous path recurses before it resolves the rest of a chain iteratively.
        ///
        /// Far deeper than real graphs go, so they never leave the fast path; shallow enough that the
        /// recursion fits in a small stack even in a debug build.
        @inlinable
        static var recursionLimit: Int { 64 }

        /// The slot of the next dependency of the factory being called.
        @inlinable
        @inline(__always)
        mutating func nextSlot() -> Int {
            #if SERVICEGRAPH_INTERNAL_CHECKS
            _internalInvariant(position < end, "a factory asked for more dependencies than it declared")
            #endif
            let slot = Int(buffers.dependencySlots[position])
            position += 1
            return slot
        }

        /// The next dependency's value, made without suspending, or read from the prepared values.
        ///
        /// Only the read of a singleton is inlined in the factory's thunk; anything else is one call to
        /// ``dependencyValue(at:as:)``, specialized once per value type: the thunks stay small.
        @inlinable
        @inline(__always)
        mutating func next<Dependency: ServiceKey>(_ key: Dependency.Type) throws -> Dependency.Value {
            // A wrapper (`Optional<Key>`) says how its value is read; for a plain key the test is a
            // constant once the thunk is specialized.
            if Dependency._dependencyKind != .direct { return try Dependency._dependencyValue(from: &self) }
            return try nextDirect(key)
        }

        /// The next dependency's value, a direct one (see ``next(_:)``).
        @inlinable
        @inline(__always)
        mutating func nextDirect<Dependency: ServiceKey>(_ key: Dependency.Type) throws -> Dependency.Value {
            let slot = nextSlot()
            if let box = buffers.singletonBox(at: slot) {
                return _GraphCore._Buffers.value(in: box, as: Dependency.Value.self)
            }
            return try dependencyValue(at: slot, as: Dependency.Value.self)
        }

        /// The value at `slot`, a dependency of the factory being called that is not a created singleton.
        @inlinable
        @inline(never)
        func dependencyValue<Value: Sendable>(at slot: Int, as type: Value.Type) throws -> Value {
            // A seed of the scope making this call, in its cell from the start: a request-scoped service's
            // usual dependency, read first (the lifetime and seed tables are more data fetched, cold). Not
            // with prepared values, which hold the scoped instances this call awaited, in order (a created
            // one is in its cell too, and must be taken from the list). Without them, nothing this call
            // reads from the scope but a seed is created (``_GraphCore/readsDependenciesInPlace(of:in:)``).
            if prepared == nil, let scope, let box = scope._ownBox(at: slot) { return box.value(as: Value.self) }
            guard depth < Self.recursionLimit else { return try deepValue(at: slot, as: Value.self) }
            // `next(_:)` has looked for a singleton already.
            return try madeSynchronously(at: slot, as: Value.self, depth: depth &+ 1)
        }

        /// The next dependency's value, for an asynchronous factory's thunk: a singleton or a value the
        /// graph prepared for the call (see ``_GraphCore/preparedDependencies(of:in:)``).
        @inlinable
        mutating func nextPrepared<Dependency: ServiceKey>(_ key: Dependency.Type) throws -> Dependency.Value {
            // A prepared resolver reads past the recursion limit: `next` reads what is prepared too.
            if Dependency._dependencyKind != .direct { return try Dependency._dependencyValue(from: &self) }
            return try deepValue(at: nextSlot(), as: Dependency.Value.self)
        }

        /// The value at `slot`, made without suspending (singletons and synchronous transients).
        ///
        /// The caller has checked ``_GraphCore/resolvesSynchronously(_:)`` for the service it resolves,
        /// which covers its chain. `depth` counts the factory calls this one is nested in.
        ///
        /// Generic over the value type only, not the key: code generic over keys that share a value type
        /// still calls one specialization.
        @inlinable
        func valueSynchronously<Value: Sendable>(at slot: Int, as type: Value.Type, depth: Int) throws -> Value {
            if let box = buffers.singletonBox(at: slot) { return _GraphCore._Buffers.value(in: box, as: Value.self) }
            return try madeSynchronously(at: slot, as: Value.self, depth: depth)
        }

        /// The value at `slot`, which is not a created singleton, made without suspending: a new
        /// transient (anything else cannot be made here, and throws).
        @inlinable
        @inline(__always)
        func madeSynchronously<Value: Sendable>(at slot: Int, as type: Value.Type, depth: Int) throws -> Value {
            guard buffers.lifetimes[slot] == .transient else {
                // An empty singleton slot is seen only by a factory a failed build abandoned (see
                // `_GraphCore.awaitedBox(at:in:startsChain:)`): the same cancellation on every path.
                // A singleton created on first use is read in place once created.
                if buffers.lifetimes[slot] == .singleton {
                    return try core.createdDeferredValue(at: slot, as: Value.self)
                }
                // A seed of the scope resolving the chain, in place from the start.
                if let box = seedBox(at: slot) { return box.value(as: Value.self) }
                throw unavailableError(slot)
            }
            var resolver = _UnsafeResolver(self, slot: slot, depth: depth)
            do {
                return try buffers.withFactory(at: slot) { try $0.make(&resolver, as: Value.self) }
            } catch {
                throw core.failure(error, at: slot)
            }
        }

        /// The seed at `slot` of the scope resolving the chain; nil for any other service, or outside a
        /// scope.
        ///
        /// Seeds are the one kind of scoped service read in place on every path: each is published when
        /// its scope is made, so the paths that prepare a factory's dependencies
        /// (``_GraphCore/preparedDependencies(of:in:)``) and the ones that read them agree on which are
        /// prepared. A scoped instance created meanwhile would not: it is always prepared.
        @usableFromInline
        func seedBox(at slot: Int) -> _GraphCore._PublishedBox? {
            guard buffers.lifetimes[slot] == .scoped, let scope, core.isSeed(slot) else { return nil }
            return scope._publishedBox(at: slot)
        }

        /// The error for the scoped service at `slot`, which this chain cannot read in place: of a kind of
        /// scope the resolving scope is not within (``ServiceGraphError/Code/wrongScopeKind``), or one to
        /// await.
        @usableFromInline
        func unavailableError(_ slot: Int) -> ServiceGraphError {
            if let scope, buffers.lifetimes[slot] == .scoped {
                do { _ = try scope._owner(of: slot) } catch { return error }
            }
            return core.requiresAwaitError(slot)
        }

        /// The value at `slot` past the recursion limit: a singleton, the value prepared for this call, or
        /// the value of a chain resolved iteratively from here (kept out of line: it is the cold path).
        @usableFromInline
        func deepValue<Value: Sendable>(at slot: Int, as type: Value.Type) throws -> Value {
            if let box = buffers.singletonBox(at: slot) { return _GraphCore._Buffers.value(in: box, as: Value.self) }
            // Only a factory a failed build abandoned sees an empty singleton slot (see
            // `_GraphCore.awaitedBox(at:in:startsChain:)`); it must not take a prepared value meant for another
            // dependency. A singleton created on first use is read in place, never prepared.
            if buffers.lifetimes[slot] == .singleton { return try core.createdDeferredValue(at: slot, as: Value.self) }
            // A seed of the scope: read where it is asked for, never prepared (see `seedBox(at:)`).
            if let box = seedBox(at: slot) { return box.value(as: Value.self) }
            let box = try prepared?.next() ?? valueIteratively(at: slot)
            return _unsafeValue(of: box, as: Value.self)
        }

        /// The value at `slot`, a synchronous transient, made without recursion: the chain below it is
        /// walked depth first from an explicit stack, each factory called once its transient dependencies
        /// are made (post-order), its value boxed until its dependent's factory takes it.
        ///
        /// Factories run in the same order as on the recursive path, and a failure gets the same path.
        ///
        /// - Complexity: One factory call and one box per transient in the chain; stack use does not grow
        ///   with the depth.
        @usableFromInline
        func valueIteratively(at root: Int) throws -> _AnyBox {
            /// A service whose factory waits for its dependencies; `position` is the next one to look at.
            struct Frame {
                let slot: Int
                var position: Int
                /// Where its dependencies' values start in `prepared.boxes`.
                let firstValue: Int
            }
            let prepared = _PreparedValues()
            var frames = [Frame(slot: root, position: Int(buffers.dependencyStart[root]), firstValue: 0)]
            /// `error` as it leaves the chain: each service still waiting on the stack in front of its path.
            func unwinding(_ error: ServiceGraphError) -> ServiceGraphError {
                frames.reversed().reduce(error) { core.failure($0, at: $1.slot) }
            }
            while let top = frames.indices.last {
                let frame = frames[top]
                if frame.position < Int(buffers.dependencyStart[frame.slot + 1]) {
                    let dependency = Int(buffers.dependencySlots[frame.position])
                    // A provider or lazy edge makes nothing now (see `_nextHandle`).
                    if core.edgeKinds?[frame.position].isHandle == true {
                        frames[top].position += 1
                        continue
                    }
                    frames[top].position += 1
                    // A singleton is read where its value is asked for; only transients are made here.
                    if buffers.singletonBox(at: dependency) != nil { continue }
                    if core.isDeferred(dependency), core.deferredSingletons?.createdBox(at: dependency) != nil {
                        continue
                    }
                    // So is a seed of the scope (see `seedBox(at:)`).
                    if seedBox(at: dependency) != nil { continue }
                    guard buffers.lifetimes[dependency] == .transient else {
                        throw unwinding(unavailableError(dependency))
                    }
                    frames.append(
                        Frame(
                            slot: dependency,
                            position: Int(buffers.dependencyStart[dependency]),
                            firstValue: prepared.boxes.count
                        )
                    )
                    continue
                }
                frames.removeLast()
                prepared.cursor = frame.firstValue
                var resolver = _UnsafeResolver(self, slot: frame.slot, depth: Self.recursionLimit, prepared: prepared)
                let box: _AnyBox
                do {
                    box = try buffers.withFactory(at: frame.slot) { try $0.makeBoxSynchronously(&resolver) }
                } catch {
                    throw unwinding(core.failure(error, at: frame.slot))
                }
                prepared.boxes.removeSubrange(frame.firstValue...)
                prepared.boxes.append(box)
            }
            return prepared.boxes[0]
        }
    }

    /// The values an iterative resolution has made and not yet handed to a factory: a stack of boxes,
    /// the dependencies of the factory being called on top, in declaration order.
    ///
    /// See ``_UnsafeResolver/valueIteratively(at:)``. Lives only as long as that call.
    @usableFromInline
    final class _PreparedValues {
        var boxes: [_AnyBox] = []
        /// The next box to hand out.
        var cursor = 0

        init() {}

        /// The next prepared value of the factory being called.
        @usableFromInline
        func next() -> _AnyBox {
            defer { cursor += 1 }
            return boxes[cursor]
        }
    }

    /// Calls `body` with a resolver outside any factory call, for resolves made on behalf of `scope`.
    @inlinable
    @inline(__always)
    func withUnsafeResolver<Result>(
        in scope: _ScopeBody?,
        _ body: (inout _UnsafeResolver) throws -> Result
    ) rethrows -> Result {
        var resolver = _UnsafeResolver(core: self, scope: scope, slot: -1)
        return try body(&resolver)
    }

    /// Makes a new instance at `slot` with its synchronous `factory`: a synchronous singleton the
    /// build makes.
    func makeBoxSynchronously(at slot: Int, with factory: borrowing _AnyFactory) throws -> _AnyBox {
        var resolver = _UnsafeResolver(core: self, scope: nil, slot: slot)
        return try factory.makeBoxSynchronously(&resolver)
    }

    /// Makes a new instance at `slot`, awaiting its dependencies: an asynchronous singleton the build
    /// makes, or a scoped instance `scope` makes.
    nonisolated(nonsending) func makeBox(at slot: Int, in scope: _ScopeBody?) async throws -> _AnyBox {
        let prepared = try await preparedDependencies(of: slot, in: scope)
        // The resolver does not retain what is prepared.
        defer { withExtendedLifetime(prepared) {} }
        var resolver = _UnsafeResolver(core: self, scope: scope, slot: slot, prepared: prepared)
        return try await factory(at: slot).makeBox(&resolver)
    }

    /// Makes a new instance of the transient at `slot`, awaiting its dependencies, and holds it as the
    /// graph does (see ``_AnyBox``).
    ///
    /// Not generic, so that what crosses suspension points is a reference whatever the value's type:
    /// with Swift 6.3, a value of 16-byte alignment returned through the task-local scope of
    /// ``_GraphCore/boxAwaiting(at:in:)``, in code specialized in the client, made release
    /// builds abort in the task allocator ("freed pointer was not the last allocation").
    @usableFromInline
    nonisolated(nonsending) func transientBox(at slot: Int, in scope: _ScopeBody?) async throws -> _AnyBox {
        do {
            return try await makeBox(at: slot, in: scope)
        } catch {
            throw failure(error, at: slot)
        }
    }

    /// Whether the dependency `dependency`, at `position` in its dependent's list, is read in place by
    /// the factory's thunk, with nothing to make or await first: a created singleton; a lazy or provider
    /// edge, whose thunk takes a handle (`_nextHandle`); or a seed of `scope`
    /// (`_UnsafeResolver.seedBox(at:)`).
    private func isReadInPlace(_ dependency: Int, at position: Int, in scope: _ScopeBody?) -> Bool {
        if buffers.singletonBox(at: dependency) != nil { return true }
        if edgeKinds?[position].isHandle == true { return true }
        guard let scope, lifetime(of: dependency) == .scoped, isSeed(dependency) else { return false }
        return scope._publishedBox(at: dependency) != nil
    }

    /// Whether every dependency of the service at `slot` is read in place in `scope` (see
    /// ``isReadInPlace(_:at:in:)``): ``preparedDependencies(of:in:)`` would prepare nothing.
    func readsDependenciesInPlace(of slot: Int, in scope: _ScopeBody) -> Bool {
        let start = Int(buffers.dependencyStart[slot])
        let end = Int(buffers.dependencyStart[slot + 1])
        return (start..<end).allSatisfy { isReadInPlace(Int(buffers.dependencySlots[$0]), at: $0, in: scope) }
    }

    /// The dependencies of `slot` that are not read in place, each awaited in declaration order: what
    /// the factory's thunk then reads without suspending. Nil when there are none.
    ///
    /// This is where the asynchronous path suspends, once per dependency that must be awaited, so that no
    /// factory needs an asynchronous thunk of its own for its dependencies.
    @usableFromInline
    nonisolated(nonsending) func preparedDependencies(
        of slot: Int,
        in scope: _ScopeBody?
    ) async throws -> _PreparedValues? {
        var prepared: _PreparedValues?
        let start = Int(buffers.dependencyStart[slot])
        let end = Int(buffers.dependencyStart[slot + 1])
        for position in start..<end {
            let dependency = Int(buffers.dependencySlots[position])
            if isReadInPlace(dependency, at: position, in: scope) { continue }
            // A singleton created on first use is created here if need be, and read in place.
            if isDeferred(dependency), let deferredSingletons {
                _ = try await deferredSingletons.box(at: dependency, in: self)
                continue
            }
            let box = try await awaitedBox(at: dependency, in: scope, startsChain: false)
            if prepared == nil { prepared = _PreparedValues() }
            prepared?.boxes.append(box)
        }
        return prepared
    }

}

extension _GraphCore._UnsafeResolver: _DependencyReading {
    @inlinable
    mutating func _next<Key: ServiceKey>(_ key: Key.Type) throws -> Key.Value {
        try nextDirect(key)
    }

    /// The next dependency's value if the graph provides `key`: an optional dependency on a key the
    /// graph does not provide has no edge (see ``GraphPlan/absentOptionals``), so nothing is read.
    @inlinable
    mutating func _nextIfProvided<Key: ServiceKey>(_ key: Key.Type) throws -> Key.Value? {
        guard core.slot(of: key) != nil else { return nil }
        return try nextDirect(key)
    }

    /// A handle to resolve the next dependency later, in this call's scope or graph: nothing is read
    /// now (the paths that prepare dependencies leave provider and lazy edges out too).
    @usableFromInline
    mutating func _nextHandle<Key: ServiceKey>(_ key: Key.Type) -> _ServiceHandle {
        _ = nextSlot()
        return _ServiceHandle(core: core, scope: scope)
    }
}
