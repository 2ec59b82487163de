extension ServiceGraph {
    /// Describes the built graph: every service with its value type, lifetime and registration site,
    /// whether it is an override, its dependencies, and the initialization order with the time each
    /// factory and `didAdd` took.
    ///
    /// Services are listed in registration order and dependencies in declaration order, so the output
    /// is stable; pass `includingTimings: false` for output that does not change between runs (for
    /// snapshot tests).
    ///
    /// - Complexity: O(services + edges), in time and in the size of the output, in every format.
    public func dump(_ format: DumpFormat = .text, includingTimings: Bool = true) -> String {
        let description = GraphDescription(core: core, log: log)
        return (includingTimings ? description : description.withoutTimings()).render(format)
    }
}

extension ServiceGraph.Builder {
    /// Describes the graph as registered, without running any factory.
    ///
    /// Works on a broken graph too: it is validated, the services where it broke are marked as root
    /// causes (a missing key, the members of a cycle, a duplicate, a captive dependency), and every
    /// service that depends on them as affected.
    ///
    /// - Complexity: O(services + edges), in time and in the size of the output, in every format.
    public func dump(_ format: DumpFormat = .text) -> String {
        // The checked plan (and the names made for this dump) serves the next dump, validation or build.
        let checked = checkedPlan
        let description = GraphDescription(plan: checked.plan)
        let problems = checked.findings.problems
        return (problems.isEmpty ? description : description.marked(with: problems)).render(format)
    }
}

extension ServiceGraphError {
    /// Describes the graph this error is about, with the problem nodes marked: for a failed
    /// validation, where it broke; for a failed build, the failing service as the root cause, the
    /// services that could not be built because of it as affected, and the ones that had been created
    /// (and were released) with their initialization order. Nil for errors that are not about a
    /// graph as a whole (a missing key at resolve, a closed scope).
    ///
    /// - Complexity: O(services + edges), in time and in the size of the output, in every format.
    public func dump(_ format: DumpFormat = .text) -> String? {
        snapshot?.description().render(format)
    }
}
