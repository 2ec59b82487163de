/// A neutral description of a graph, built or not, that every dump format renders.
struct GraphDescription: Sendable {
    /// How a problem touches a service (where it broke, or what could not be built because of it), or,
    /// in the dump of an update's plan, what the update does to it.
    enum Mark: String, Sendable {
        case rootCause
        case affected
        /// Made again by the update (or, for a transient or scoped service, made from then on by the
        /// next generation's providers, which changed or depend on what changed).
        case rebuilt
        /// Taken over by the next generation: the same instance.
        case shared
        /// New in the next generation.
        case added
    }

    struct Service: Sendable {
        let name: String
        let valueType: String
        let lifetime: Lifetime
        let site: RegistrationSite
        let isOverride: Bool
        /// Whether the service is a seed, given to each scope (``ServiceGraph/Builder/seed(_:fileID:line:)``).
        let isSeed: Bool
        /// The position in the initialization order, for a built graph's singletons.
        var initializationIndex: Int?
        var factoryDuration: Duration?
        var didAddDuration: Duration?
        var mark: Mark?
        /// The codes of the problems rooted at this service.
        var problemCodes: [String] = []

        /// For a factory with arguments (``ArgumentFactory``), the argument types' names.
        var arguments: [String]?
        /// Whether the service is a singleton created on first use, not by the build (only ``Lazy``
        /// handles reach it).
        var isCreatedOnFirstUse = false
        /// For a scoped service or seed of a kind of scope other than the default, the kind
        /// (`session/request`).
        var scopeKind: String?
        /// The module that registered the service (``GraphModule``), if any.
        var module: String?

        /// The lifetime as the dumps print it: "scoped seed" for a seed, "singleton function" (or
        /// scoped, transient) for a factory with arguments, "lazy singleton" for a singleton created on
        /// first use.
        var lifetimeLabel: String {
            let label =
                isSeed
                ? "scoped seed"
                : arguments != nil
                    ? "\(lifetime) function" : isCreatedOnFirstUse ? "lazy singleton" : lifetime.description
            return scopeKind.map { "\(label) in \($0)" } ?? label
        }
    }

    /// What a dependency edge points to: a service, or a key that has no provider.
    enum Dependency: Equatable {
        /// The slot of the service.
        case service(Int)
        /// The position of the key in ``missingKeys``.
        case missing(Int)

        var isService: Bool {
            if case .service = self { true } else { false }
        }

        var isMissing: Bool { !isService }
    }

    /// The services by slot, in registration order.
    var services: [Service]
    /// The dependencies of each service, in declaration order: a slot, or `-1 - i` for the `i`th of
    /// ``missingKeys``. Edges point at slots, not names, so two keys that read alike stay apart.
    private let edges: Edges
    /// Singleton slots in creation order, for a built graph.
    var initializationOrder: [Int] = []
    var totalDuration: Duration?
    /// Whether this describes a built graph (or the services a failed build created).
    var isBuilt = false
    /// The problems of a broken graph or failed build.
    var problems: [ServiceGraphError.Problem] = []
    /// The names of the keys that are depended on but have no provider, each once, in the order they
    /// are first depended on.
    private(set) var missingKeys: [String] = []
    /// The kind of each edge, parallel to ``edges``; nil when every edge is direct.
    private let edgeKinds: [_DependencyKind]?
    /// By slot: the keys of its optional dependencies that nothing provides (no edge; the factory gets
    /// nil), in declaration order.
    private(set) var absentOptionals: [Int: [String]] = [:]

    /// Describes a plan, built or not, without running anything.
    ///
    /// - Complexity: O(services + edges), with one reflection per key and per value type.
    init(plan: GraphPlan) {
        let names = plan.names
        var valueTypes = TypeName.ValueTypeNames()
        // One string per file, shared by its sites, rather than one per service.
        var files: [UInt: String] = [:]
        services = plan.providers.indices.map { slot in
            let provider = plan.providers[slot]
            let file = provider.site.fileID
            let address = file.hasPointerRepresentation ? UInt(bitPattern: file.utf8Start) : 0
            let fileID = files[address] ?? file.description
            if address != 0 { files[address] = fileID }
            let site = RegistrationSite(fileID: fileID, line: Int(provider.site.line))
            var service = Service(
                name: names[slot],
                valueType: valueTypes.name(for: provider.key),
                lifetime: provider.lifetime,
                site: site,
                isOverride: plan.overridden[slot],
                isSeed: provider.isSeed
            )
            service.arguments = (provider.key as? any ArgumentFactoryKey.Type)?.argumentNames
            service.isCreatedOnFirstUse = plan.deferred?[slot] ?? false
            if let kind = plan.slotScopeKinds?[slot], kind != 0 {
                service.scopeKind = plan.scopeKinds[Int(kind)].description
            }
            if provider.module != 0 { service.module = plan.providers.modules[Int(provider.module)].name }
            return service
        }
        edgeKinds = plan.edgeKinds
        for (slot, key) in plan.absentOptionals {
            absentOptionals[slot, default: []].append(plan.name(ofMissing: key))
        }
        var missingPositions: [ObjectIdentifier: Int] = [:]
        for slot in plan.providers.indices {
            for (position, target) in plan.edges.dependencies(of: slot).enumerated() where target == GraphPlan.missing {
                let key = plan.edgeKey(of: slot, at: position)
                guard missingPositions[ObjectIdentifier(key)] == nil else { continue }
                missingPositions[ObjectIdentifier(key)] = missingKeys.count
                missingKeys.append(plan.name(ofMissing: key))
            }
        }
        guard !missingKeys.isEmpty else {
            edges = plan.edges
            return
        }
        let providers = plan.providers
        edges = Edges(
            providers.indices.lazy.map { slot in
                plan.edges.dependencies(of: slot).enumerated().lazy.map { position, target in
                    target == GraphPlan.missing
                        ? -1 - missingPositions[ObjectIdentifier(plan.edgeKey(of: slot, at: position))]! : target
                }
            },
            count: providers.count,
            edgeCount: plan.edges.edgeCount
        )
    }

    /// Describes a built graph.
    ///
    /// - Complexity: O(services + edges), with one reflection per key and per value type.
    init(core: _GraphCore, log: BuildLog) {
        self.init(BuiltGraphTables(core), log: log)
    }

    /// Describes a built graph, or the part of one a failed build created, from its core's tables.
    ///
    /// - Complexity: O(services + edges), with one reflection per key and per value type.
    init(_ tables: BuiltGraphTables, log: BuildLog) {
        let names = tables.keyNames.all
        let files = tables.files.map(\.description)
        var valueTypes = TypeName.ValueTypeNames()
        services = (0..<tables.count).map { slot in
            let record = tables.records[slot]
            let key = tables.identities.key(at: slot)
            var service = Service(
                name: names[slot],
                valueType: valueTypes.name(for: key),
                lifetime: tables.lifetimes[slot],
                site: RegistrationSite(fileID: files[Int(record.fileIndex)], line: Int(record.line)),
                isOverride: record.isOverride,
                isSeed: record.isSeed
            )
            service.arguments = (key as? any ArgumentFactoryKey.Type)?.argumentNames
            service.isCreatedOnFirstUse = tables.isCreatedOnFirstUse?[slot] ?? false
            if let kind = tables.slotScopeKinds?[slot], kind != 0 {
                service.scopeKind = tables.scopeKinds[Int(kind)].description
            }
            if let module = tables.slotModules?[slot], module != 0 {
                service.module = tables.modules[Int(module)].name
            }
            return service
        }
        edges = tables.edges
        edgeKinds = tables.edgeKinds
        for (slot, key) in tables.absentOptionals {
            absentOptionals[slot, default: []].append(key.serviceName)
        }
        initializationOrder = tables.initializationOrder
        totalDuration = log.totalDuration
        isBuilt = true
        let (factoryDurations, didAddDurations) = (log.factoryDurations(), log.didAddDurations())
        for (index, slot) in initializationOrder.enumerated() {
            services[slot].initializationIndex = index
            services[slot].factoryDuration = factoryDurations[slot] ?? .zero
            services[slot].didAddDuration = didAddDurations[slot]
        }
    }

    /// The modules the services came from, in the order of their first service, each with its
    /// services' slots: what the graph formats draw as groups.
    var modules: [(name: String, slots: [Int])] {
        var position: [String: Int] = [:]
        var modules: [(name: String, slots: [Int])] = []
        for (slot, service) in services.enumerated() {
            guard let module = service.module else { continue }
            if let index = position[module] {
                modules[index].slots.append(slot)
            } else {
                position[module] = modules.count
                modules.append((module, [slot]))
            }
        }
        return modules
    }

    /// The dependencies of `slot`, in declaration order.
    func dependencies(of slot: Int) -> LazyMapCollection<Edges.Row, Dependency> {
        edges.dependencies(of: slot).lazy.map(Self.dependency)
    }

    /// Calls `body` with every edge, `slot` by `slot`, each slot's dependencies in declaration order:
    /// the order every graph format draws them in.
    func forEachEdge(_ body: (_ slot: Int, _ dependency: Dependency) -> Void) {
        for slot in services.indices {
            for dependency in dependencies(of: slot) { body(slot, dependency) }
        }
    }

    /// The `position`th dependency of `slot`.
    func dependency(_ position: Int, of slot: Int) -> Dependency {
        let row = edges.dependencies(of: slot)
        return Self.dependency(row[row.startIndex + position])
    }

    /// How many dependencies `slot` declares.
    func dependencyCount(of slot: Int) -> Int { edges.dependencies(of: slot).count }

    /// How `slot` depends on its `position`th dependency.
    func kind(_ position: Int, of slot: Int) -> _DependencyKind {
        guard let edgeKinds else { return .direct }
        return edgeKinds[edges.dependencies(of: slot).startIndex + position]
    }

    /// Calls `body` with every edge as ``forEachEdge(_:)`` does, with its kind.
    func forEachEdgeWithKind(_ body: (_ slot: Int, _ dependency: Dependency, _ kind: _DependencyKind) -> Void) {
        for slot in services.indices {
            for (position, dependency) in dependencies(of: slot).enumerated() {
                body(slot, dependency, kind(position, of: slot))
            }
        }
    }

    private static func dependency(_ target: Int) -> Dependency {
        target < 0 ? .missing(-1 - target) : .service(target)
    }

    /// The name of what `dependency` points to.
    func name(of dependency: Dependency) -> String {
        switch dependency {
        case .service(let slot): services[slot].name
        case .missing(let position): missingKeys[position]
        }
    }

    /// The number of dependency edges.
    var edgeCount: Int { edges.edgeCount }

    /// Slots that nothing depends on, in slot order: where the trees start.
    var roots: [Int] {
        let dependedOn = edges.nodesDependedOn()
        return services.indices.filter { !dependedOn[$0] }
    }

    /// Marks where `problems` broke the graph, and every service that depends on those places.
    ///
    /// Consuming: a description made for one dump is marked in place, not copied.
    ///
    /// - Complexity: O(services + edges + the length of the problems' paths).
    consuming func marked(with problems: [ServiceGraphError.Problem]) -> GraphDescription {
        var marked = self
        marked.problems = problems
        // Problems name their keys; names are unique within a graph but for names keys give
        // themselves, where the first service of the name is taken.
        var slots: [String: Int] = [:]
        slots.reserveCapacity(marked.services.count)
        for slot in marked.services.indices where slots[marked.services[slot].name] == nil {
            slots[marked.services[slot].name] = slot
        }
        for problem in problems {
            let roots: ArraySlice<String>
            switch problem.code {
            case .cycle: roots = problem.path.dropLast()
            case .missingProvider: roots = problem.path.dropLast().suffix(1)
            default: roots = [problem.key]
            }
            let code = problem.code.description
            for name in roots {
                guard let slot = slots[name] else { continue }
                marked.services[slot].mark = .rootCause
                if !marked.services[slot].problemCodes.contains(code) {
                    marked.services[slot].problemCodes.append(code)
                }
            }
        }
        // Everything that depends, directly or not, on a root cause could not be built.
        let rootCauses = marked.services.indices.filter { marked.services[$0].mark == .rootCause }
        for slot in Topology.dependents(of: rootCauses, in: marked.edges) where marked.services[slot].mark == nil {
            marked.services[slot].mark = .affected
        }
        return marked
    }

    /// Marks what an update does to each service of the next generation: made again, shared or added.
    consuming func marked(with diff: GenerationDiff) -> GraphDescription {
        var marked = self
        let added = Set(diff.added)
        for (_, slot) in diff.adopted { marked.services[slot].mark = .shared }
        for slot in marked.services.indices where diff.affected[slot] {
            marked.services[slot].mark = added.contains(slot) ? .added : .rebuilt
        }
        return marked
    }

    /// The same description without durations, for output that must not change between runs.
    consuming func withoutTimings() -> GraphDescription {
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
