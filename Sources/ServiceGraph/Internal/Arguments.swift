/// The dependency values of one factory call, produced one by one in declaration order.
///
/// A factory thunk calls ``next(_:)`` once per declared dependency; the cursor walks the service's
/// dependency slots in the graph's flat edge list and asks the graph for each value. It holds its
/// graph and scope unowned: a resolution never outlives the call that started it.
@usableFromInline
struct Arguments {
    @usableFromInline
    unowned(unsafe) let core: GraphCore
    @usableFromInline
    unowned(unsafe) let scope: ServiceScope?
    @usableFromInline
    var position: Int

    @inlinable
    init(core: GraphCore, scope: ServiceScope?, slot: Int) {
        self.core = core
        self.scope = scope
        self.position = core.dependencyStart[slot]
    }

    /// The next dependency's value, made without suspending.
    @inlinable
    mutating func next<Dependency: ServiceKey>(_ key: Dependency.Type) throws -> Dependency.Value {
        let slot = core.dependencySlots[position]
        position += 1
        return try core.valueNow(at: slot, as: key, in: scope)
    }

    /// The next dependency's value, awaiting its creation if it is asynchronous or scoped.
    @inlinable
    mutating func nextAwaiting<Dependency: ServiceKey>(_ key: Dependency.Type) async throws -> Dependency.Value {
        let slot = core.dependencySlots[position]
        position += 1
        return try await core.value(at: slot, as: key, in: scope)
    }
}
