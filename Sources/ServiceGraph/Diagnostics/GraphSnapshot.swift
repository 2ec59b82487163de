/// What a ``ServiceGraphError`` can describe of its graph, made only if someone asks for a dump.
final class GraphSnapshot: Sendable {
    let description: @Sendable () -> GraphDescription

    init(_ description: @escaping @Sendable () -> GraphDescription) {
        self.description = description
    }

    /// The snapshot of a build (or an update) that failed with `problems`, showing what it created.
    ///
    /// It keeps a copy of the core's tables, not the core, nor the instances the log noted: the error may
    /// be kept for long, and the core holds the event handler and the factories, with what they capture.
    ///
    /// - Complexity: O(services + edges), copies of flat arrays: the dump's names are made only if asked for.
    convenience init(failedBuild core: _GraphCore, log: BuildLog, problems: [ServiceGraphError.Problem]) {
        let tables = BuiltGraphTables(core)
        var log = log
        log.started = []  // the instances, which the rollback released
        self.init { [log] in GraphDescription(tables, log: log).marked(with: problems) }
    }
}
