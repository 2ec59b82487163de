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
    /// The keys of the graph's seeds (``ServiceGraph/Builder/seed(_:fileID:line:)``), in registration
    /// order: values each scope is given when it is made, so no part of startup.
    public let seeds: [String]
    /// The keys of the singletons the build left to their first use (only ``Lazy`` handles reach
    /// them), in registration order: no part of startup either.
    public let createdOnFirstUse: [String]

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
        if !seeds.isEmpty {
            lines.append("Given to each scope (seeds): \(seeds.joined(separator: ", "))")
        }
        if !createdOnFirstUse.isEmpty {
            lines.append("Created on first use: \(createdOnFirstUse.joined(separator: ", "))")
        }
        return lines.joined(separator: "\n")
    }
}
