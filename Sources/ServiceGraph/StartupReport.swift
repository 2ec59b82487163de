/// Where a graph's startup time went: the slowest services, and the critical path, the chain of
/// dependencies that bounded the build (independent services are built concurrently, so startup
/// takes about as long as this chain, not the sum of all factories).
public struct StartupReport: Sendable, CustomStringConvertible {
    /// One service's share of the startup.
    public struct Entry: Sendable, Equatable, CustomStringConvertible {
        /// The service's key name.
        public let key: String
        /// How long its factory took.
        public let factory: Duration
        /// How long its `didAdd` took (zero without hooks).
        public let didAdd: Duration

        /// Factory and `didAdd` together.
        public var total: Duration { factory + didAdd }

        public var description: String {
            "\(key) \(total.milliseconds) (factory \(factory.milliseconds), didAdd \(didAdd.milliseconds))"
        }
    }

    /// The wall-clock time of the whole build.
    public let totalDuration: Duration
    /// The slowest services, slowest first.
    public let slowest: [Entry]
    /// The chain of dependencies with the largest summed time, from the first service built to the
    /// last.
    public let criticalPath: [Entry]

    /// The summed time of the critical path: the least the build could take, however many cores.
    public var criticalPathDuration: Duration {
        criticalPath.reduce(.zero) { $0 + $1.total }
    }

    public var description: String {
        var lines = ["Startup took \(totalDuration.milliseconds); critical path \(criticalPathDuration.milliseconds):"]
        lines.append("  " + criticalPath.map(\.key).joined(separator: " → "))
        lines.append("Slowest services:")
        for (index, entry) in slowest.enumerated() {
            lines.append("  \(index + 1). \(entry)")
        }
        return lines.joined(separator: "\n")
    }
}

extension ServiceGraph {
    /// The startup report of this graph's build: the `limit` slowest services and the critical path.
    ///
    /// - Complexity: O(services + edges).
    public func startupReport(slowest limit: Int = 5) -> StartupReport {
        let order = record.order.map { Int($0) }
        func entry(_ slot: Int) -> StartupReport.Entry {
            StartupReport.Entry(
                key: core.name(slot),
                factory: record.factoryDuration(slot) ?? .zero,
                didAdd: record.didAddDuration(slot) ?? .zero
            )
        }
        // Longest path through the singletons, in their (topological) initialization order.
        var finish = Array(repeating: Duration.zero, count: core.count)
        var previous = Array(repeating: -1, count: core.count)
        for slot in order {
            var start = Duration.zero
            for edge in Int(core.dependencyStart[slot])..<Int(core.dependencyStart[slot + 1]) {
                let dependency = Int(core.dependencySlots[edge])
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
            totalDuration: record.totalDuration,
            slowest: Array(slowest),
            criticalPath: path.reversed()
        )
    }
}
