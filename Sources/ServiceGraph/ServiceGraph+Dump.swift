extension ServiceGraph {
    /// Describes the built graph: every service with its value type, lifetime and registration site,
    /// its dependencies, and the initialization order with the time each factory and `didAdd` took.
    public func dump(_ format: DumpFormat = .text) -> String {
        GraphDescription(core: core, record: record).render(format)
    }
}

extension ServiceGraph.Builder {
    /// Describes the graph as registered, without running any factory. Works on a broken graph too:
    /// missing providers and cycles are marked where they occur.
    public func dump(_ format: DumpFormat = .text) -> String {
        GraphDescription(plan: GraphPlan(registrations)).render(format)
    }
}
