import ServiceGraph

extension SplitMix64 {
    /// True with a probability of `perMille` in a thousand.
    fileprivate mutating func chance(_ perMille: Int) -> Bool { Int.random(in: 0..<1_000, using: &self) < perMille }

    fileprivate mutating func pick<T>(_ elements: [T]) -> T { elements.randomElement(using: &self)! }

    fileprivate mutating func delay() -> ModelDelay {
        switch Int.random(in: 0..<10, using: &self) {
        case 0..<3: .none
        case 3..<6: .yield
        default: .milliseconds(Int.random(in: 1...4, using: &self))
        }
    }
}

/// The kinds of operation, each with its weight given the state of the sequence.
private enum Kind: CaseIterable {
    case newBuilder
    case copyBuilder
    case build
    case buildChild
    case makeScope
    case resolveInScope
    case resolveInGraph
    case close
    case dropScope
    case shutdown
    case dropGraph
    case cancelBuild
    case cancelShutdown
    case cancelClose
    case concurrently
}

extension StatefulRun {
    private var liveGraphs: [GraphModel] { heldGraphs.filter { !$0.isShutDown } }
    private var openScopes: [ScopeModel] { heldScopes.filter(\.isOpen) }

    /// Graphs the test may drop: no scope of theirs is open or still releasing.
    private var droppableGraphs: [GraphModel] {
        heldGraphs.filter { graph in graph.scopes.allSatisfy { $0.state == .closed } }
    }

    /// Open scopes whose graph the test holds and has not shut down: room for a concurrent operation.
    private var concurrentScopes: [ScopeModel] {
        openScopes.filter { $0.graph.isHeld && !$0.graph.isShutDown }
    }

    /// Scopes holding a started instance whose `willRemove` is slow and that depends on a singleton
    /// with hooks: a shutdown that comes while such a scope closes must wait for it.
    private var slowlyClosingScopes: [ScopeModel] {
        concurrentScopes.filter { scope in
            scope.values.values.contains { serial in
                guard let record = journal.record(serial), record.isStarted,
                    case .slow = record.willRemoveFault
                else { return false }
                return record.dependencies.contains { journal.record($0)?.hasHooks == true }
            }
        }
    }

    private func weight(of kind: Kind) -> Int {
        let builderCount = builders.count
        let graphCount = heldGraphs.count
        switch kind {
        case .newBuilder: return builderCount == 0 ? 1_000 : builderCount < 3 ? 15 : 0
        case .copyBuilder: return builderCount > 0 ? 50 : 0
        case .build: return builderCount > 0 && graphCount < 5 ? 45 : 0
        case .buildChild: return graphCount > 0 && graphCount < 6 ? 40 : 0
        case .makeScope: return graphCount > 0 && heldScopes.count < 6 ? 40 : 0
        case .resolveInScope: return heldScopes.isEmpty ? 0 : 70
        case .resolveInGraph: return graphCount > 0 ? 30 : 0
        case .close: return heldScopes.isEmpty ? 0 : 20
        case .dropScope: return heldScopes.isEmpty ? 0 : 20
        case .shutdown: return graphCount > 0 ? 20 : 0
        case .dropGraph: return droppableGraphs.isEmpty ? 0 : 8
        case .cancelBuild: return builderCount > 0 ? 10 : 0
        case .cancelShutdown: return liveGraphs.isEmpty ? 0 : 15
        case .cancelClose: return openScopes.isEmpty ? 0 : 15
        case .concurrently: return concurrentScopes.isEmpty ? 0 : slowlyClosingScopes.isEmpty ? 30 : 60
        }
    }

    /// Draws the next operation from the state of the sequence.
    func nextOperation(_ random: inout SplitMix64) -> StatefulOperation {
        let weights = Kind.allCases.map { ($0, weight(of: $0)) }
        var roll = Int.random(in: 0..<weights.reduce(0) { $0 + $1.1 }, using: &random)
        var kind = Kind.newBuilder
        for (candidate, weight) in weights {
            if roll < weight {
                kind = candidate
                break
            }
            roll -= weight
        }
        return make(kind, &random)
    }

    private func make(_ kind: Kind, _ random: inout SplitMix64) -> StatefulOperation {
        switch kind {
        case .newBuilder:
            return newBuilderOperation(&random)
        case .copyBuilder:
            return copyBuilderOperation(&random)
        case .build:
            defer { nextGraph += 1 }
            return .build(
                graph: nextGraph,
                builder: random.pick(builders.keys.sorted()),
                validateFirst: random.chance(250)
            )
        case .buildChild:
            return buildChildOperation(&random)
        case .makeScope:
            let candidates = random.chance(900) && !liveGraphs.isEmpty ? liveGraphs : heldGraphs
            defer { nextScope += 1 }
            return .makeScope(scope: nextScope, graph: random.pick(candidates).id)
        case .resolveInScope:
            let candidates = random.chance(900) && !openScopes.isEmpty ? openScopes : heldScopes
            let scope = random.pick(candidates)
            return .resolveInScope(scope: scope.id, key: key(in: scope.graph.spec, preferring: .scoped, &random))
        case .resolveInGraph:
            let candidates = random.chance(850) && !liveGraphs.isEmpty ? liveGraphs : heldGraphs
            let graph = random.pick(candidates)
            return .resolveInGraph(
                graph: graph.id,
                key: key(in: graph.spec, preferring: .transient, &random),
                synchronously: random.chance(250)
            )
        case .close:
            let candidates = random.chance(850) && !openScopes.isEmpty ? openScopes : heldScopes
            return .close(scope: random.pick(candidates).id)
        case .dropScope:
            return .dropScope(scope: random.pick(heldScopes).id, waitForRelease: random.chance(500))
        case .shutdown:
            let candidates = random.chance(850) && !liveGraphs.isEmpty ? liveGraphs : heldGraphs
            return .shutdown(graph: random.pick(candidates).id)
        case .dropGraph:
            return .dropGraph(graph: random.pick(droppableGraphs).id)
        case .cancelBuild:
            defer { nextGraph += 1 }
            return .cancelBuild(graph: nextGraph, builder: random.pick(builders.keys.sorted()), after: random.delay())
        case .cancelShutdown:
            return .cancelShutdown(graph: random.pick(liveGraphs).id, after: random.delay())
        case .cancelClose:
            return .cancelClose(scope: random.pick(openScopes).id, after: random.delay())
        case .concurrently:
            return concurrentOperation(&random)
        }
    }

    /// A key of `spec` to resolve, more often one of the given lifetime; now and then a missing one.
    private func key(in spec: GraphSpec, preferring lifetime: Lifetime, _ random: inout SplitMix64) -> ModelKey {
        if random.chance(40) { return .plain(250) }
        let keys = spec.keys
        let preferred = keys.filter { spec.lifetime(of: $0) == lifetime }
        if !preferred.isEmpty && random.chance(500) { return random.pick(preferred) }
        return random.pick(keys)
    }

    // MARK: Providers

    private func randomLifetime(_ random: inout SplitMix64) -> Lifetime {
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<55: .singleton
        case 55..<82: .scoped
        default: .transient
        }
    }

    /// Keys a service of `lifetime` registered for key `index` may depend on: plain keys of `spec`
    /// below it (so the graph stays acyclic) that it may hold (see `Lifetime.referenceMayDepend(on:)`).
    private func candidates(below index: Int, lifetime: Lifetime, in spec: GraphSpec) -> [ModelKey] {
        spec.keys.filter { key in
            guard case .plain(let other) = key, other < index, let dependency = spec.lifetime(of: key) else {
                return false
            }
            return lifetime.referenceMayDepend(on: dependency)
        }
    }

    private func fault(_ random: inout SplitMix64, throwing: Int, slow: Int, hanging: Int, slowest: Int) -> ModelFault {
        let roll = Int.random(in: 0..<1_000, using: &random)
        if roll < throwing { return .throwing }
        if roll < throwing + hanging { return .hanging }
        if roll < throwing + hanging + slow { return .slow(Int.random(in: 1...slowest, using: &random)) }
        return .none
    }

    /// A provider with a factory for `key`, depending on some of `candidates`.
    private func provider(
        _ key: ModelKey,
        lifetime: Lifetime,
        candidates: [ModelKey],
        prefix: String,
        _ random: inout SplitMix64
    ) -> ProviderSpec {
        var dependencies: [ModelKey] = []
        let count = [0, 0, 0, 1, 1, 1, 2, 2, 3].randomElement(using: &random)!
        for _ in 0..<count where !candidates.isEmpty {
            let dependency = random.pick(candidates)
            if !dependencies.contains(dependency) { dependencies.append(dependency) }
        }
        let isAsync = random.chance(400)
        let hasHooks = random.chance(650)
        let owned = lifetime != .transient
        var spec = ProviderSpec(
            label: makeLabel(prefix),
            key: key,
            lifetime: lifetime,
            dependencies: dependencies,
            isAsync: isAsync,
            hasHooks: hasHooks
        )
        spec.factory = fault(
            &random,
            throwing: 25,
            slow: isAsync ? 150 : 0,
            hanging: isAsync && owned ? 5 : 0,
            slowest: 3
        )
        if hasHooks {
            spec.didAdd = fault(&random, throwing: 25, slow: 120, hanging: owned ? 8 : 0, slowest: 3)
            spec.willRemove = fault(&random, throwing: 50, slow: 300, hanging: owned ? 8 : 0, slowest: 6)
        }
        return spec
    }

    private func addition(
        _ key: ModelKey,
        lifetime: Lifetime,
        candidates: [ModelKey],
        spec: GraphSpec,
        prefix: String,
        _ random: inout SplitMix64
    ) -> AdditionPlan {
        if !candidates.isEmpty && random.chance(70) {
            return .alias(key, lifetime: lifetime, target: random.pick(candidates))
        }
        return .make(provider(key, lifetime: lifetime, candidates: candidates, prefix: prefix, &random))
    }

    // MARK: Builders

    private func newBuilderOperation(_ random: inout SplitMix64) -> StatefulOperation {
        var spec = GraphSpec()
        var plans: [AdditionPlan] = []
        for index in 0..<Int.random(in: 2...7, using: &random) {
            let key = ModelKey.plain(index)
            let lifetime = randomLifetime(&random)
            let allowed = candidates(below: index, lifetime: lifetime, in: spec)
            let plan = addition(key, lifetime: lifetime, candidates: allowed, spec: spec, prefix: "p", &random)
            plans.append(plan)
            spec.entries[key] = KeyEntry(lifetime: lifetime, source: .alias(key))  // only the lifetime matters here
        }
        defer { nextBuilder += 1 }
        return .newBuilder(id: nextBuilder, providers: plans, generousTimeouts: random.chance(250))
    }

    private func copyBuilderOperation(_ random: inout SplitMix64) -> StatefulOperation {
        let source = builders[random.pick(builders.keys.sorted())]!
        var spec = source.spec
        var overrides: [OverridePlan] = []
        let count = [1, 1, 1, 1, 1, 1, 2, 2, 2, 3].randomElement(using: &random)!
        var previous: Int?
        for _ in 0..<count {
            let plainKeys = spec.keys.compactMap { key -> Int? in
                if case .plain(let index) = key { return index }
                return nil
            }
            let index = previous.flatMap { random.chance(300) ? $0 : nil } ?? random.pick(plainKeys)
            let key = ModelKey.plain(index)
            let lifetime = spec.lifetime(of: key) ?? .singleton
            let roll = Int.random(in: 0..<100, using: &random)
            if roll < 45 {
                let allowed = candidates(below: index, lifetime: lifetime, in: spec)
                let plan = provider(key, lifetime: lifetime, candidates: allowed, prefix: "o", &random)
                overrides.append(.factory(plan))
                spec.entries[key]?.source = .make(plan)
            } else if roll < 75 {
                let hooked = random.chance(650)
                overrides.append(.double(key: index, hooked: hooked, label: makeLabel("d")))
            } else if roll < 88 {
                overrides.append(.value(key: index, label: makeLabel("v")))
                spec.entries[key]?.lifetime = .singleton
            } else {
                let unknown = ModelKey.plain(200 + Int.random(in: 0..<10, using: &random))
                let plan = provider(unknown, lifetime: .singleton, candidates: [], prefix: "o", &random)
                overrides.append(.unknown(plan))
            }
            previous = index
        }
        let canBuild = heldGraphs.count < 5
        let use: BuilderUse
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<15: use = .none
        case 15..<40: use = .validate
        case 40..<85: use = canBuild ? .build(graph: nextGraph) : .validate
        default: use = canBuild ? .validateAndBuild(graph: nextGraph) : .validate
        }
        switch use {
        case .build, .validateAndBuild: nextGraph += 1
        case .none, .validate: break
        }
        defer { nextBuilder += 1 }
        return .copyBuilder(
            id: nextBuilder,
            from: source.id,
            overrides: overrides,
            use: use,
            keep: builders.count < 4 && random.chance(450)
        )
    }

    private func buildChildOperation(_ random: inout SplitMix64) -> StatefulOperation {
        let parents = random.chance(850) && !liveGraphs.isEmpty ? liveGraphs : heldGraphs
        let parent = random.pick(parents)
        var spec = parent.spec
        var additions: [AdditionPlan] = []
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            let plainKeys = spec.keys.compactMap { key -> Int? in
                if case .plain(let index) = key { return index }
                return nil
            }
            let replaceable = plainKeys.filter { index in
                index < 100 && !additions.contains { $0.key == .plain(index) }
            }
            if random.chance(400), let index = replaceable.randomElement(using: &random) {
                // Replaces a key of the parent, keeping its lifetime.
                let key = ModelKey.plain(index)
                let lifetime = spec.lifetime(of: key) ?? .singleton
                let allowed = candidates(below: index, lifetime: lifetime, in: spec)
                additions.append(
                    addition(key, lifetime: lifetime, candidates: allowed, spec: spec, prefix: "c", &random)
                )
                continue
            }
            let index = (plainKeys.max() ?? 0) < 100 ? 100 : plainKeys.max()! + 1
            guard index < 200 else { break }
            let key = ModelKey.plain(index)
            let lifetime = randomLifetime(&random)
            let allowed = candidates(below: index, lifetime: lifetime, in: spec)
            additions.append(addition(key, lifetime: lifetime, candidates: allowed, spec: spec, prefix: "c", &random))
            spec.entries[key] = KeyEntry(lifetime: lifetime, source: .alias(key))  // only the lifetime matters here
        }
        defer { nextGraph += 1 }
        return .buildChild(
            graph: nextGraph,
            parent: parent.id,
            additions: additions,
            shutDownParentFirst: !parent.isShutDown && random.chance(60)
        )
    }

    // MARK: Concurrency

    private func concurrentOperation(_ random: inout SplitMix64) -> StatefulOperation {
        let slow = slowlyClosingScopes
        let closeThenShutDown = !slow.isEmpty && random.chance(600)
        let scope = closeThenShutDown ? random.pick(slow) : random.pick(concurrentScopes)
        let spec = scope.graph.spec
        var resolves: [(ModelKey, ModelDelay)] = []
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            resolves.append((key(in: spec, preferring: .scoped, &random), random.delay()))
        }
        var ancestors: [GraphModel] = []
        var graph: GraphModel? = scope.graph
        while let current = graph {
            if current.isHeld && !current.isShutDown { ancestors.append(current) }
            graph = current.parent
        }
        var close: StatefulOperation.ConcurrentClose?
        var shutdown: StatefulOperation.ConcurrentShutdown?
        if !ancestors.isEmpty && (closeThenShutDown || random.chance(350)) {
            // A close that is under way (in a slow willRemove, say) when a shutdown comes.
            close = .init(delay: .none, cancelAfter: nil)
            shutdown = .init(
                graph: random.pick(ancestors).id,
                delay: .milliseconds(Int.random(in: 1...3, using: &random))
            )
        } else {
            if random.chance(800) {
                close = .init(delay: random.delay(), cancelAfter: random.chance(250) ? random.delay() : nil)
            }
            if !ancestors.isEmpty && (close == nil || random.chance(550)) {
                shutdown = .init(graph: random.pick(ancestors).id, delay: random.delay())
            }
        }
        return .concurrently(scope: scope.id, resolves: resolves, close: close, shutdown: shutdown)
    }

    // MARK: The end

    /// The next operation that ends a sequence: open scopes closed, dropped or left to the shutdown,
    /// then graphs shut down or dropped, in a random order; nil once the test holds no graph.
    func nextClosingOperation(_ random: inout SplitMix64) -> StatefulOperation? {
        if let scope = heldScopes.first(where: { $0.isOpen && !leftOpen.contains($0.id) }) {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4: return .close(scope: scope.id)
            case 4..<7: return .dropScope(scope: scope.id, waitForRelease: random.chance(500))
            default: leftOpen.insert(scope.id)
            }
            return nextClosingOperation(&random)
        }
        guard !heldGraphs.isEmpty else { return nil }
        let graph = random.pick(heldGraphs)
        let droppable = graph.scopes.allSatisfy { $0.state == .closed }
        if droppable && (graph.isShutDown || random.chance(250)) { return .dropGraph(graph: graph.id) }
        return .shutdown(graph: graph.id)
    }
}
