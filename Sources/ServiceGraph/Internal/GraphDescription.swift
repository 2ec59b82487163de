/// A neutral description of a graph, built or not, that every dump format renders.
struct GraphDescription {
    struct Service {
        let name: String
        let valueType: String
        let lifetime: Lifetime
        let site: RegistrationSite
        let isOverride: Bool
        /// Dependency names, in declaration order, with the slot of each (nil when it has no provider).
        let dependencies: [(name: String, slot: Int?)]
        /// The position in the initialization order, for a built graph's singletons.
        var initializationIndex: Int?
        var factoryDuration: Duration?
        var didAddDuration: Duration?
    }

    var services: [Service]
    /// Singleton slots in creation order, for a built graph.
    var initializationOrder: [Int] = []
    var totalDuration: Duration?

    init(plan: GraphPlan) {
        services = plan.providers.indices.map { slot in
            let provider = plan.providers[slot]
            return Service(
                name: provider.name,
                valueType: provider.key.valueTypeName,
                lifetime: provider.lifetime,
                site: provider.site.site,
                isOverride: plan.overridden[slot],
                dependencies: zip(provider.dependencies, plan.dependencies[slot]).map { key, slot in
                    (key.serviceName, slot == GraphPlan.missing ? nil : slot)
                }
            )
        }
    }

    init(core: GraphCore, record: BuildRecord) {
        services = (0..<core.count).map { slot in
            let record = core.records[slot]
            let edges = Int(core.dependencyStart[slot])..<Int(core.dependencyStart[slot + 1])
            let dependencies = edges.map { edge in
                let dependency = Int(core.dependencySlots[edge])
                return (name: core.name(dependency), slot: Optional(dependency))
            }
            return Service(
                name: record.name,
                valueType: record.key.valueTypeName,
                lifetime: record.lifetime,
                site: core.site(slot),
                isOverride: record.isOverride,
                dependencies: dependencies
            )
        }
        initializationOrder = record.order.map { Int($0) }
        totalDuration = record.totalDuration
        for (index, slot) in initializationOrder.enumerated() {
            services[slot].initializationIndex = index
            services[slot].factoryDuration = record.factoryDuration(slot)
            services[slot].didAddDuration = record.didAddDuration(slot)
        }
    }

    /// Slots that nothing depends on, in slot order: where the trees start.
    var roots: [Int] {
        var isDependency = Array(repeating: false, count: services.count)
        for service in services {
            for dependency in service.dependencies {
                if let slot = dependency.slot { isDependency[slot] = true }
            }
        }
        let roots = services.indices.filter { !isDependency[$0] }
        // A graph that is one big cycle has no root; start from the first service.
        return roots.isEmpty && !services.isEmpty ? [0] : roots
    }

    func render(_ format: DumpFormat) -> String {
        TextDump(self).render()
    }
}

extension Duration {
    /// Milliseconds with two decimals, for dumps.
    var milliseconds: String {
        let (seconds, attoseconds) = components
        let hundredths = seconds * 100_000 + attoseconds / 10_000_000_000_000
        let whole = hundredths / 100
        let fraction = hundredths % 100
        return "\(whole).\(fraction < 10 ? "0" : "")\(fraction) ms"
    }
}
