/// What an update of a ``LiveGraph`` does, or would do: which keys it changes, which singletons the
/// next generation makes again and which it takes over from the current one.
///
/// ``LiveGraph/plan(_:)`` returns one without running anything (a dry run); ``LiveGraph/update(_:)``
/// returns the one it committed.
///
/// ```swift
/// let plan = try live.plan { $0.override(ConfigKey.self) { reloaded } }
/// print(plan)
/// // generation 2: changes Config
/// //   rebuilt (2): Config, Mailer
/// //   shared (1): Database
/// ```
public struct GraphUpdatePlan: Sendable, CustomStringConvertible {
    /// The number of the generation the update makes (the first graph is generation 1).
    public let generation: Int
    /// The keys the change set provides, overrides, contributes to, decorates or removes.
    public let changed: [String]
    /// The singletons the next generation makes (again, or for the first time), in dependency order.
    public var rebuilt: [String] { rebuiltSlots.map { plan.name($0) } }
    /// The singletons the next generation takes over from the current one, the same instances: no
    /// hook runs on them.
    public var shared: [String] { sharedSlots.map { plan.name($0) } }
    /// The keys the next generation has and the current one does not.
    public var added: [String] { addedSlots.map { plan.name($0) } }
    /// The keys the current generation has and the next one does not.
    public var removed: [String] { removedSlots.map { current.name($0) } }

    /// How many singletons the next generation makes: ``rebuilt``'s count, without naming them.
    public var rebuiltCount: Int { rebuiltSlots.count }
    /// How many singletons the next generation takes over: ``shared``'s count, without naming them.
    public var sharedCount: Int { sharedSlots.count }

    // Slots, named only when asked for: naming every key of a large graph costs more than the update.
    private let rebuiltSlots: [Int]
    private let sharedSlots: [Int]
    private let addedSlots: [Int]
    private let removedSlots: [Int]
    private let plan: GraphPlan
    private let current: GraphPlan
    /// The next generation's graph, marked, for ``dump(_:)``: made only when asked for.
    private let snapshot: GraphSnapshot

    init(generation: Int, plan: GraphPlan, current: GraphPlan, diff: GenerationDiff) {
        self.generation = generation
        changed = diff.changed
        let lifetimes = plan.lifetimes
        rebuiltSlots = plan.order.filter {
            lifetimes[$0] == .singleton && diff.affected[$0] && plan.deferred?[$0] != true
        }
        var adopted = [Bool](repeating: false, count: plan.count)
        for (_, slot) in diff.adopted { adopted[slot] = true }
        sharedSlots = plan.order.filter { adopted[$0] }
        addedSlots = diff.added
        removedSlots = diff.removed
        self.plan = plan
        self.current = current
        snapshot = GraphSnapshot { GraphDescription(plan: plan).marked(with: diff) }
    }

    /// The next generation's graph in `format`, each service marked with what the update does to it:
    /// made again, shared (the same instance) or added. The removed keys are not in it (see
    /// ``removed``).
    ///
    /// ```swift
    /// let plan = try live.plan { $0.override(ConfigKey.self) { reloaded } }
    /// print(plan.dump(.dot))   // made again in blue, added in green, shared as they were
    /// ```
    public func dump(_ format: DumpFormat = .text) -> String {
        snapshot.description().render(format)
    }

    public var description: String {
        func line(_ title: String, _ names: [String]) -> String {
            "\n  \(title) (\(names.count))" + (names.isEmpty ? "" : ": " + names.joined(separator: ", "))
        }
        return "generation \(generation): changes "
            + (changed.isEmpty ? "nothing" : changed.joined(separator: ", "))
            + line("rebuilt", rebuilt) + line("shared", shared) + line("added", added) + line("removed", removed)
    }
}
