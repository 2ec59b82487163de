/// The dependency values of one factory call, produced one by one in declaration order.
///
/// A factory thunk calls ``next(_:)`` once per declared dependency; the cursor maps each call to the
/// dependency's slot in the graph and asks the graph for its value.
struct Arguments {
    let core: GraphCore
    let scope: ServiceScope?
    let slots: [Int]
    var index = 0

    init(core: GraphCore, scope: ServiceScope?, slots: [Int]) {
        self.core = core
        self.scope = scope
        self.slots = slots
    }

    /// The next dependency's value, made without suspending.
    mutating func next<Dependency: ServiceKey>(_ key: Dependency.Type) throws -> Dependency.Value {
        let slot = slots[index]
        index += 1
        return try core.valueNow(at: slot, as: key, in: scope)
    }

    /// The next dependency's value, awaiting its creation if it is asynchronous or scoped.
    mutating func nextAwaiting<Dependency: ServiceKey>(_ key: Dependency.Type) async throws -> Dependency.Value {
        let slot = slots[index]
        index += 1
        return try await core.value(at: slot, as: key, in: scope)
    }
}
