/// The synchronous resolve path over a graph's flat plan: raw pointers only, so walking a chain of
/// transients costs no reference counting beyond the values it makes.
///
/// Valid only while its ``GraphCore`` is alive, which every caller guarantees: a resolution runs
/// inside a call on the graph or scope that owns the core.
@usableFromInline
struct ResolutionPlan {
    /// For errors and the asynchronous path only.
    @usableFromInline
    unowned(unsafe) let core: GraphCore
    @usableFromInline
    let singletonRefs: UnsafeMutablePointer<Unmanaged<AnyBox>?>
    @usableFromInline
    let factoryRefs: UnsafeMutablePointer<Unmanaged<AnyFactory>?>
    @usableFromInline
    let lifetimes: UnsafeMutablePointer<Lifetime>
    @usableFromInline
    let dependencyStart: UnsafeMutablePointer<Int32>
    @usableFromInline
    let dependencySlots: UnsafeMutablePointer<Int32>

    @inlinable
    init(
        core: GraphCore,
        singletonRefs: UnsafeMutablePointer<Unmanaged<AnyBox>?>,
        factoryRefs: UnsafeMutablePointer<Unmanaged<AnyFactory>?>,
        lifetimes: UnsafeMutablePointer<Lifetime>,
        dependencyStart: UnsafeMutablePointer<Int32>,
        dependencySlots: UnsafeMutablePointer<Int32>
    ) {
        self.core = core
        self.singletonRefs = singletonRefs
        self.factoryRefs = factoryRefs
        self.lifetimes = lifetimes
        self.dependencyStart = dependencyStart
        self.dependencySlots = dependencySlots
    }

    /// The singleton at `slot` as a `Value` (guaranteed by construction), or nil when the slot holds
    /// no singleton. Retains only the value.
    ///
    /// - Complexity: O(1), no lock, no allocation.
    @inlinable
    func singleton<Value: Sendable>(at slot: Int, as type: Value.Type) -> Value? {
        guard let box = singletonRefs[slot] else { return nil }
        return box._withUnsafeGuaranteedRef { unsafeDowncast($0, to: Box<Value>.self).value }
    }

    /// How deep the synchronous path recurses before it resolves the rest of a chain iteratively.
    ///
    /// Far deeper than real graphs go, so they never leave the fast path; shallow enough that the
    /// recursion fits in a small stack even in a debug build.
    @inlinable
    static var recursionLimit: Int { 64 }

    /// The value at `slot`, made without suspending (singletons and synchronous transients).
    ///
    /// The caller has checked `resolvesNow` for the service it resolves, which covers its chain.
    /// `depth` counts the factory calls this one is nested in; ``Arguments/next(_:)`` stops recursing at
    /// ``recursionLimit``.
    ///
    /// Generic over the value type only, not the key: code generic over keys that share a value type
    /// still calls one specialization.
    @inlinable
    func valueNow<Value: Sendable>(
        at slot: Int,
        as type: Value.Type,
        in scope: ServiceScope?,
        depth: Int
    ) throws -> Value {
        if let value = singleton(at: slot, as: Value.self) {
            return value
        }
        guard lifetimes[slot] == .transient else { throw core.requiresAwaitError(slot) }
        var arguments = Arguments(self, scope: scope, slot: slot, depth: depth)
        do {
            return try factoryRefs[slot].unsafelyUnwrapped._withUnsafeGuaranteedRef { factory in
                try unsafeDowncast(factory, to: Factory<Value>.self).makeNow(&arguments)
            }
        } catch {
            throw core.failure(error, at: slot)
        }
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
    func valueIteratively(at root: Int, in scope: ServiceScope?) throws -> AnyBox {
        /// A service whose factory waits for its dependencies; `position` is the next one to look at.
        struct Frame {
            let slot: Int
            var position: Int
            /// Where its dependencies' values start in `prepared.boxes`.
            let firstValue: Int
        }
        let prepared = PreparedValues()
        var frames = [Frame(slot: root, position: Int(dependencyStart[root]), firstValue: 0)]
        /// `error` as it leaves the chain: each service still waiting on the stack in front of its path.
        func unwinding(_ error: ServiceGraphError) -> ServiceGraphError {
            frames.reversed().reduce(error) { core.failure($0, at: $1.slot) }
        }
        while let top = frames.indices.last {
            let frame = frames[top]
            if frame.position < Int(dependencyStart[frame.slot + 1]) {
                let dependency = Int(dependencySlots[frame.position])
                frames[top].position += 1
                // A singleton is read where its value is asked for; only transients are made here.
                if singletonRefs[dependency] != nil { continue }
                guard lifetimes[dependency] == .transient else {
                    throw unwinding(core.requiresAwaitError(dependency))
                }
                frames.append(
                    Frame(
                        slot: dependency,
                        position: Int(dependencyStart[dependency]),
                        firstValue: prepared.boxes.count
                    )
                )
                continue
            }
            frames.removeLast()
            prepared.cursor = frame.firstValue
            var arguments = Arguments(
                self,
                scope: scope,
                slot: frame.slot,
                depth: Self.recursionLimit,
                prepared: prepared
            )
            let box: AnyBox
            do {
                box = try factoryRefs[frame.slot].unsafelyUnwrapped._withUnsafeGuaranteedRef { factory in
                    try factory.makeBoxNow(&arguments)
                }
            } catch {
                throw unwinding(core.failure(error, at: frame.slot))
            }
            prepared.boxes.removeSubrange(frame.firstValue...)
            prepared.boxes.append(box)
        }
        return prepared.boxes[0]
    }
}
