/// The dependency values of one factory call, produced one by one in declaration order.
///
/// A factory thunk calls ``next(_:)`` once per declared dependency; the cursor walks the service's
/// dependency slots in the graph's flat edge list and asks the plan for each value. It holds no
/// strong references: a resolution never outlives the call that started it.
@usableFromInline
struct Arguments {
    @usableFromInline
    let resolution: ResolutionPlan
    @usableFromInline
    unowned(unsafe) let scope: ServiceScope?
    @usableFromInline
    var position: Int

    @inlinable
    init(_ resolution: ResolutionPlan, scope: ServiceScope?, slot: Int) {
        self.resolution = resolution
        self.scope = scope
        self.position = Int(resolution.dependencyStart[slot])
    }

    @inlinable
    init(core: GraphCore, scope: ServiceScope?, slot: Int) {
        self.init(core.resolution, scope: scope, slot: slot)
    }

    /// The next dependency's value, made without suspending.
    @inlinable
    mutating func next<Dependency: ServiceKey>(_ key: Dependency.Type) throws -> Dependency.Value {
        let slot = Int(resolution.dependencySlots[position])
        position += 1
        return try resolution.valueNow(at: slot, as: Dependency.Value.self, in: scope)
    }

    /// The next dependency's value, awaiting its creation if it is asynchronous or scoped.
    @inlinable
    mutating func nextAwaiting<Dependency: ServiceKey>(_ key: Dependency.Type) async throws -> Dependency.Value {
        let slot = Int(resolution.dependencySlots[position])
        position += 1
        return try await resolution.core.value(at: slot, as: key, in: scope)
    }
}
