/// A neutral description of a graph, built or not, that every dump format renders.
struct GraphDescription: Sendable {
    /// How a problem touches a service: where it broke, or what could not be built because of it.
    enum Mark: String, Sendable {
        case rootCause
        case affected
    }

    struct Service: Sendable {
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
        var mark: Mark?
        /// The codes of the problems rooted at this service.
        var problemCodes: [String] = []
    }

    var services: [Service]
    /// Singleton slots in creation order, for a built graph.
    var initializationOrder: [Int] = []
    var totalDuration: Duration?
    /// Whether this describes a built graph (or the services a failed build created).
    var isBuilt = false
    /// The problems of a broken graph or failed build.
    var problems: [ServiceGraphError.Problem] = []
    /// Keys that are depended on but have no provider, and whether each is a root cause.
    var missingKeys: [String] = []

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
        isBuilt = true
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

    /// Marks where `problems` broke the graph, and every service that depends on those places.
    func marked(with problems: [ServiceGraphError.Problem]) -> GraphDescription {
        var marked = self
        marked.problems = problems
        var slots: [String: Int] = [:]
        for (slot, service) in services.enumerated() where slots[service.name] == nil {
            slots[service.name] = slot
        }
        var missing: [String] = []
        for problem in problems {
            var roots: [String]
            switch problem.code {
            case .cycle: roots = Array(problem.path.dropLast())
            case .missingProvider:
                if !missing.contains(problem.key) { missing.append(problem.key) }
                roots = Array(problem.path.dropLast().suffix(1))
            default: roots = [problem.key]
            }
            for name in roots {
                guard let slot = slots[name] else { continue }
                marked.services[slot].mark = .rootCause
                if !marked.services[slot].problemCodes.contains(problem.code.description) {
                    marked.services[slot].problemCodes.append(problem.code.description)
                }
            }
        }
        marked.missingKeys = missing
        // Everything that depends, directly or not, on a root cause could not be built.
        var dependents = Array(repeating: [Int](), count: services.count)
        for (slot, service) in services.enumerated() {
            for dependency in service.dependencies {
                if let target = dependency.slot { dependents[target].append(slot) }
            }
        }
        var stack = marked.services.indices.filter { marked.services[$0].mark == .rootCause }
        while let slot = stack.popLast() {
            for dependent in dependents[slot] where marked.services[dependent].mark == nil {
                marked.services[dependent].mark = .affected
                stack.append(dependent)
            }
        }
        return marked
    }

    /// The same description without durations, for output that must not change between runs.
    func withoutTimings() -> GraphDescription {
        var copy = self
        copy.totalDuration = nil
        for slot in copy.services.indices {
            copy.services[slot].factoryDuration = nil
            copy.services[slot].didAddDuration = nil
        }
        return copy
    }

    func render(_ format: DumpFormat) -> String {
        switch format {
        case .dot: DotDump(self).render()
        case .mermaid: MermaidDump(self).render()
        case .json: JSONDump(self).render()
        default: TextDump(self).render()
        }
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
