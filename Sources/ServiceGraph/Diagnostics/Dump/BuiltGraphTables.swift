/// What a dump reads of a built graph's core, copied out of it: the key table, sites, lifetimes,
/// edges and initialization order, without the core's factories, instances and event handler.
///
/// The dump of a failed build (in its ``ServiceGraphError``) keeps these rather than the core, so an
/// error the caller keeps does not keep the handler, or what the factories capture, alive. Making them
/// copies flat arrays and reflects on nothing: the names and types are made by the dump.
struct BuiltGraphTables: Sendable {
    let keyNames: KeyNames
    let identities: _KeyIdentities
    let records: [ServiceRecord]
    let files: [StaticString]
    let lifetimes: [Lifetime]
    /// Per slot, whether it is a singleton created on first use; nil when none is.
    let isCreatedOnFirstUse: [Bool]?
    let edges: Edges
    let edgeKinds: [_DependencyKind]?
    let absentOptionals: [(slot: Int, key: any ServiceKey.Type)]
    let scopeKinds: [ScopeKind]
    let slotScopeKinds: [UInt16]?
    let slotModules: [UInt16]?
    let modules: [ModuleInfo]
    /// The singletons in the order they were created: the build's, then those created on first use so
    /// far.
    let initializationOrder: [Int]

    /// - Complexity: O(services + edges).
    init(_ core: _GraphCore) {
        keyNames = core.keyNames
        identities = core.identities
        records = core.records
        files = core.files
        lifetimes = core.lifetimes
        isCreatedOnFirstUse = core.deferredSingletons.map { _ in (0..<core.count).map(core.isDeferred) }
        edges = core.edges
        edgeKinds = core.edgeKinds
        absentOptionals = core.absentOptionals
        scopeKinds = core.scopeKinds
        slotScopeKinds = core.slotScopeKinds
        slotModules = core.slotModules
        modules = core.modules
        initializationOrder = core.creationOrder + (core.deferredSingletons?.createdSlots ?? [])
    }

    var count: Int { records.count }
}
