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

    /// The value at `slot`, made without suspending (singletons and synchronous transients).
    ///
    /// The caller has checked `resolvesNow` for the service it resolves, which covers its chain.
    ///
    /// Generic over the value type only, not the key: code generic over keys that share a value type
    /// still calls one specialization.
    @inlinable
    func valueNow<Value: Sendable>(at slot: Int, as type: Value.Type, in scope: ServiceScope?) throws -> Value {
        if let value = singleton(at: slot, as: Value.self) {
            return value
        }
        guard lifetimes[slot] == .transient else { throw core.requiresAwaitError(slot) }
        var arguments = Arguments(self, scope: scope, slot: slot)
        do {
            return try factoryRefs[slot].unsafelyUnwrapped._withUnsafeGuaranteedRef { factory in
                try unsafeDowncast(factory, to: Factory<Value>.self).makeNow(&arguments)
            }
        } catch {
            throw core.failure(error, at: slot)
        }
    }
}
