extension ServiceGraph {
    /// The startup report of this graph's build: the `limit` slowest services and the critical path.
    ///
    /// - Complexity: O(services + edges).
    public func startupReport(slowest limit: Int = 5) -> StartupReport {
        let order = core.creationOrder
        let (factoryDurations, didAddDurations) = (log.factoryDurations(), log.didAddDurations())
        func entry(_ slot: Int) -> StartupReport.Entry {
            StartupReport.Entry(
                key: core.name(slot),
                factory: factoryDurations[slot] ?? .zero,
                didAdd: didAddDurations[slot] ?? .zero
            )
        }
        // Longest path through the singletons, in their (topological) initialization order.
        var finish = Array(repeating: Duration.zero, count: core.count)
        var previous = Array(repeating: -1, count: core.count)
        for slot in order {
            var start = Duration.zero
            for dependency in core.dependencies(of: slot) {
                if finish[dependency] > start || previous[slot] == -1 && finish[dependency] == start {
                    start = finish[dependency]
                    previous[slot] = dependency
                }
            }
            finish[slot] = start + entry(slot).total
        }
        var path: [StartupReport.Entry] = []
        if var slot = order.max(by: { finish[$0] < finish[$1] }) {
            while slot != -1 {
                path.append(entry(slot))
                slot = previous[slot]
            }
        }
        let slowest = order.map(entry).sorted { ($0.total, $1.key) > ($1.total, $0.key) }.prefix(limit)
        return StartupReport(
            totalDuration: log.totalDuration,
            slowest: Array(slowest),
            criticalPath: path.reversed(),
            seeds: core.seedSlots.map(core.name),
            createdOnFirstUse: (0..<core.count).filter(core.isDeferred).map(core.name)
        )
    }
}
