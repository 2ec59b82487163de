/// The dependency values of one factory call, produced one by one in declaration order.
///
/// A factory thunk calls ``next(_:)`` once per declared dependency; the cursor walks the service's
/// dependency slots in the graph's flat edge list and asks the plan for each value. It holds no
/// strong references: a resolution never outlives the call that started it.
///
/// On the synchronous path ``next(_:)`` recurses into the dependency's factory, counting the depth.
/// Past ``ResolutionPlan/recursionLimit`` levels it hands the rest of the chain to
/// ``ResolutionPlan/valueIteratively(at:in:)``, which calls the factories from an explicit stack and
/// gives each one its dependencies through `prepared`: the fast path pays a comparison per level, and a
/// chain of any depth uses bounded stack.
@usableFromInline
struct Arguments {
    @usableFromInline
    let resolution: ResolutionPlan
    @usableFromInline
    unowned(unsafe) let scope: ServiceScope?
    @usableFromInline
    var position: Int
    /// How many synchronous factory calls this one is nested in.
    @usableFromInline
    let depth: Int
    /// The values the iterative resolution made for this call's transient dependencies, or nil when
    /// the dependencies are made on demand.
    @usableFromInline
    unowned(unsafe) let prepared: PreparedValues?

    @inlinable
    init(_ resolution: ResolutionPlan, scope: ServiceScope?, slot: Int, depth: Int = 0, prepared: PreparedValues? = nil)
    {
        self.resolution = resolution
        self.scope = scope
        self.position = Int(resolution.dependencyStart[slot])
        self.depth = depth
        self.prepared = prepared
    }

    @inlinable
    init(core: GraphCore, scope: ServiceScope?, slot: Int) {
        self.init(core.resolution, scope: scope, slot: slot)
    }

    /// The next dependency's value, made without suspending.
    @inlinable
    @inline(__always)
    mutating func next<Dependency: ServiceKey>(_ key: Dependency.Type) throws -> Dependency.Value {
        let slot = Int(resolution.dependencySlots[position])
        position += 1
        guard depth < ResolutionPlan.recursionLimit else { return try deepValue(at: slot, as: Dependency.Value.self) }
        return try resolution.valueNow(at: slot, as: Dependency.Value.self, in: scope, depth: depth &+ 1)
    }

    /// The value at `slot` past the recursion limit: a singleton, the value prepared for this call, or
    /// the value of a chain resolved iteratively from here (kept out of line: it is the cold path).
    @usableFromInline
    func deepValue<Value: Sendable>(at slot: Int, as type: Value.Type) throws -> Value {
        if let value = resolution.singleton(at: slot, as: Value.self) { return value }
        let box = try prepared?.next() ?? resolution.valueIteratively(at: slot, in: scope)
        return unsafeDowncast(box, to: Box<Value>.self).value
    }

    /// The next dependency's value, awaiting its creation if it is asynchronous or scoped.
    @inlinable
    mutating func nextAwaiting<Dependency: ServiceKey>(_ key: Dependency.Type) async throws -> Dependency.Value {
        let slot = Int(resolution.dependencySlots[position])
        position += 1
        return try await resolution.core.dependencyValue(at: slot, as: key, in: scope)
    }
}
