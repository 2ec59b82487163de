/// Finds every problem in a ``GraphPlan`` in one pass over its services and edges.
///
/// Reports, in this order: duplicate providers, unknown overrides, missing
/// providers, cycles (one per strongly connected component, with one full cycle path through it) and
/// captive dependencies; and, at a warning's severity, providers that nothing depends on. Runs no
/// factory.
///
/// - Complexity: O(services + edges).
struct GraphValidator {
    /// What one pass found: the problems that stop a build, and the warnings that do not.
    struct Findings: Sendable {
        let problems: [ServiceGraphError.Problem]
        /// The slots of the providers nothing depends on. ``ServiceGraph/Builder/lint()`` leaves out the
        /// declared entry points and writes the warnings (``GraphValidator/unusedProviderWarning(_:)``):
        /// slots, not warnings, so that a validation nobody lints makes no key names.
        let unusedProviders: [Int]
    }

    let plan: GraphPlan

    init(_ plan: GraphPlan) {
        self.plan = plan
    }

    func findings() -> Findings {
        Findings(
            problems: registrationProblems() + wrapperKeys() + optionalWrappers() + missingProviders() + cycles()
                + captiveDependencies() + scopeKindProblems() + privateDependencies(),
            unusedProviders: unusedProviders()
        )
    }

    /// Duplicate providers, then overrides of keys never provided, as the plan met them.
    private func registrationProblems() -> [ServiceGraphError.Problem] {
        // A factory with arguments provided twice by synchronous closures is one problem, on its
        // asynchronous form: the synchronous forms of both calls are left out.
        let reported = plan.duplicates.filter { first, again in
            !(first.isPairedSynchronousForm && again.isPairedSynchronousForm)
        }
        let duplicates = reported.map { first, again in
            let message =
                switch (first.isSeed, again.isSeed) {
                case (false, false):
                    "\(again.name) is provided twice: first at \(first.site.site), again at \(again.site.site)"
                case (true, true):
                    "\(again.name) is declared as a seed twice: first at \(first.site.site), again at \(again.site.site)"
                default:
                    "\(again.name) is both a seed of each scope (at \((first.isSeed ? first : again).site.site)) and "
                        + "provided (at \((first.isSeed ? again : first).site.site)); a seed's value comes from "
                        + "makeScope(seeding:), not from a provider"
                }
            return ServiceGraphError.Problem(
                .duplicateProvider,
                key: again.name,
                site: again.site.site,
                message: message + modulesOf(first, again)
            )
        }
        let unknownOverrides = plan.unknownOverrides.map { override in
            // Overriding a wrapper (`Key?`) is the wrapper's problem, not a missing key's.
            guard !override.isWrapperKey else {
                return wrapperKeyProblem(override.key, named: override.name, at: override.site.site)
            }
            return ServiceGraphError.Problem(
                .overrideOfUnknownKey,
                key: override.name,
                site: override.site.site,
                message: "\(override.name) is overridden but was never provided"
            )
        }
        return duplicates + unknownOverrides + unpairedForms()
    }

    /// Synchronous forms provided or overridden on their own: the graph makes both forms of a factory
    /// from one closure, so that they never make different things.
    private func unpairedForms() -> [ServiceGraphError.Problem] {
        plan.unpairedForms.map { registration in
            let factory = (registration.key as? any ArgumentFactoryKey.Type)?.otherForm.serviceName ?? registration.name
            let call = registration.isOverride ? "override" : "provide"
            return ServiceGraphError.Problem(
                .invalidKey,
                key: registration.name,
                site: registration.site.site,
                message: "\(registration.name) is a form of \(factory), made with it from one closure, not a key "
                    + "to \(call) on its own: \(call) the factory with `\(call)(_:arguments:dependsOn:factory:)` "
                    + "and a closure that does not await, which gives both forms"
            )
        }
    }

    private func unusedProviders() -> [Int] {
        var dependedOn = plan.edges.nodesDependedOn()
        // The two forms of a factory with arguments are one factory: used when either is, and
        // reported once, as the asynchronous form, when neither is.
        for (slot, other) in plan.pairedForms where plan.providers[slot].argumentFactoryForm == .synchronous {
            if dependedOn[slot] { dependedOn[other] = true }
            dependedOn[slot] = true
        }
        return plan.providers.indices.filter { !dependedOn[$0] }
    }

    /// The warning for the provider at `slot`, which nothing depends on.
    func unusedProviderWarning(_ slot: Int) -> LintWarning {
        let name = plan.name(slot)
        let what = plan.providers[slot].isSeed ? "declared as a seed" : "provided"
        return LintWarning(
            code: .unusedProvider,
            key: name,
            site: plan.providers[slot].site.site,
            message:
                "\(name) is \(what) but nothing depends on it; declare it as an entry point if the application resolves it"
        )
    }

    /// The warning for an optional dependency of the provider at `slot` on `key`, which nothing provides.
    func absentOptionalWarning(_ absent: (slot: Int, key: any ServiceKey.Type)) -> LintWarning {
        let name = plan.name(absent.slot)
        let missing = plan.name(ofMissing: absent.key)
        return LintWarning(
            code: .absentOptionalDependency,
            key: name,
            site: plan.providers[absent.slot].site.site,
            message: "\(name) depends on \(missing)? but nothing provides \(missing): its factory gets nil"
        )
    }

    /// Providers whose key is a wrapper (`AnalyticsKey?`): a wrapper names how a provider depends on a
    /// key, and is no key of its own.
    private func wrapperKeys() -> [ServiceGraphError.Problem] {
        guard plan.hasWrapperKeys else { return [] }
        return plan.providers.indices.compactMap { slot in
            guard plan.providers[slot].isWrapperKey else { return nil }
            return wrapperKeyProblem(
                plan.providers[slot].key,
                named: plan.name(slot),
                at: plan.providers[slot].site.site
            )
        }
    }

    /// The problem of a dependency of `slot` that wraps a wrapper (`Provider<Key>?`, `Provider<Key?>`):
    /// only a plain key can be optional, or provided.
    private func nestedWrapper(_ wrapped: String, in slot: Int) -> ServiceGraphError.Problem {
        let name = plan.name(slot)
        return .init(
            .invalidKey,
            key: name,
            path: plan.pathFromRoot(to: slot),
            site: plan.providers[slot].site.site,
            message: "\(name) depends on a wrapper of \(wrapped), which is no key: only a plain key can be "
                + "optional, lazy or behind a provider"
        )
    }

    /// Optional dependencies on a wrapper (`Provider<Key>?`): never provided, so always nil, silently.
    private func optionalWrappers() -> [ServiceGraphError.Problem] {
        plan.absentOptionals.compactMap { slot, key in
            key._dependencyKind == .direct || plan.isReportedWithItsPair(slot)
                ? nil : nestedWrapper(key.serviceName, in: slot)
        }
    }

    /// The problem of a wrapper (`Key?`, `Provider<Key>`) provided or overridden as if it were a key.
    private func wrapperKeyProblem(
        _ key: any ServiceKey.Type,
        named name: String,
        at site: RegistrationSite
    ) -> ServiceGraphError.Problem {
        let wrapped = key._dependencyTarget.serviceName
        let what =
            switch key._dependencyKind {
            case .provider: "a provider"
            case .lazy: "a lazy dependency"
            default: "an optional dependency"
            }
        return .init(
            .invalidKey,
            key: name,
            site: site,
            message: "\(name) is \(what) of \(wrapped), not a key: provide \(wrapped) itself"
        )
    }

    private func missingProviders() -> [ServiceGraphError.Problem] {
        guard plan.missingEdgeCount > 0 else { return [] }
        var byValueType: [ObjectIdentifier: [Int]] = [:]
        var factoriesByProduct: [ObjectIdentifier: [String]]?
        var problems: [ServiceGraphError.Problem] = []
        var indexed = false
        for (slot, provider) in plan.providers.enumerated() where !plan.isReportedWithItsPair(slot) {
            for (position, dependency) in plan.edges.dependencies(of: slot).enumerated()
            where dependency == GraphPlan.missing {
                if !indexed {
                    for (candidate, other) in plan.providers.enumerated() {
                        byValueType[other.key.valueTypeID, default: []].append(candidate)
                    }
                    indexed = true
                }
                let missingKey = plan.edgeKey(of: slot, at: position)
                let missingName = plan.name(ofMissing: missingKey)
                // A wrapper of a wrapper (`Provider<Key?>`) names no key at all.
                if missingKey._dependencyKind != .direct {
                    problems.append(nestedWrapper(missingName, in: slot))
                    continue
                }
                var message = "\(missingName) has no provider; \(plan.name(slot)) requires it"
                // A key made with arguments is in the graph as its function.
                if factoriesByProduct == nil {
                    factoriesByProduct = argumentFactoriesByProduct(among: plan.providers.lazy.map(\.key))
                }
                if let factories = factoriesByProduct?[ObjectIdentifier(missingKey)] {
                    message +=
                        "; it is made with arguments: depend on \(factories.joined(separator: " or ")), a function of them"
                }
                // The synchronous form of a factory the graph has only in its asynchronous form.
                if let form = missingKey as? any ArgumentFactoryKey.Type, form.isSynchronousForm,
                    let asynchronous = plan.table.slot(for: ObjectIdentifier(form.otherForm)),
                    let other = form.otherForm as? any ArgumentFactoryKey.Type
                {
                    let closure = plan.overridden[asynchronous] ? "its override's closure" : "its closure"
                    message +=
                        "; \(plan.name(asynchronous)) has no synchronous form, as \(closure) is asynchronous: "
                        + "depend on \(other.spelledName) and await it, or give it a closure that does not await"
                }
                // A list that needs a contribution and has none.
                if let list = ContributedCollection(missingKey), list.needsContribution {
                    message +=
                        "; it is a list that needs at least one contribution (`contribute(\(missingName).self, ...)`), and none was made"
                }
                let candidates = byValueType[missingKey.valueTypeID] ?? []
                // The service that requires the key is no answer to "did you mean", even when it
                // provides the same type (a decorator of the missing service).
                let others = candidates.count - (provider.key.valueTypeID == missingKey.valueTypeID ? 1 : 0)
                let suggestions = NameSuggestions.sameValueType(
                    missingName,
                    among: candidates,
                    excluding: slot,
                    named: plan.name
                )
                if !suggestions.isEmpty {
                    var list = suggestions.joined(separator: ", ")
                    if others > suggestions.count {
                        list += " (or \(others - suggestions.count) more keys of that type)"
                    }
                    message += ". Did you mean \(list)? (also provides \(missingKey.valueTypeName))"
                }
                problems.append(
                    .init(
                        .missingProvider,
                        key: missingName,
                        path: plan.pathFromRoot(to: slot) + [missingName],
                        site: provider.site.site,
                        message: message
                    )
                )
            }
        }
        return problems
    }

    private func cycles() -> [ServiceGraphError.Problem] {
        // Dependency order reaches every service unless one is on a cycle: then only is the search for
        // the cycles' components worth its cost.
        guard plan.order.count < plan.count else { return [] }
        let cyclic = Topology.stronglyConnectedComponents(of: plan.edges)
            .filter { component in
                component.count > 1 || plan.edges.dependencies(of: component[0]).contains(component[0])
            }
            .map { (start: $0.min()!, members: $0) }
            .sorted { $0.start < $1.start }
        guard !cyclic.isEmpty else { return [] }
        // Scratch space shared by every component, so finding all cycles stays linear.
        var isMember = Array(repeating: false, count: plan.count)
        var parent = Array(repeating: -1, count: plan.count)
        return cyclic.map { start, component in
            for member in component { isMember[member] = true }
            let slots = cyclePath(through: start, isMember: isMember, parent: &parent)
            let cycle = slots.map(plan.name)
            for member in component { isMember[member] = false }
            var message = "cycle: \(describeCycle(slots))"
            if component.count > cycle.count - 1 {
                let others = component.sorted().map(plan.name).joined(separator: ", ")
                message += " (\(component.count) services depend on each other here: \(others))"
            }
            return .init(
                .cycle,
                key: plan.name(start),
                path: cycle,
                site: plan.providers[start].site.site,
                message: message
            )
        }
    }

    /// Per service, whether resolving it needs a scope: scoped, or depending (through any edge) on a
    /// service that is. Services on a cycle, reported apart, count as not needing one.
    private func servicesNeedingScope() -> [Bool] {
        var needsScope = Array(repeating: false, count: plan.count)
        for slot in plan.order {
            var needs = plan.lifetimes[slot] == .scoped
            plan.edges.forEachDependency(of: slot) { dependency in
                if dependency >= 0 && needsScope[dependency] { needs = true }
            }
            needsScope[slot] = needs
        }
        return needsScope
    }

    /// The cycle's names joined by arrows, each step through a provider or lazy handle marked: a cycle
    /// through one is still reported, as the handle's first use would come back to its holder.
    private func describeCycle(_ slots: [Int]) -> String {
        var text = plan.name(slots[0])
        for (from, to) in zip(slots, slots.dropFirst()) {
            text += " → " + plan.name(to)
            switch edgeKind(from: from, to: to) {
            case .provider: text += " (through a provider)"
            case .lazy: text += " (lazy)"
            default: break
            }
        }
        return text
    }

    /// The kind of the first edge from `from` to `to`.
    private func edgeKind(from: Int, to: Int) -> _DependencyKind {
        guard let edgeKinds = plan.edgeKinds else { return .direct }
        let first = plan.edges.firstEdge(of: from)
        for (offset, target) in plan.edges.dependencies(of: from).enumerated() where target == to {
            return edgeKinds[first + offset]
        }
        return .direct
    }

    /// The shortest cycle from `start` back to itself through members only (breadth-first).
    ///
    /// `parent` is all -1 on entry and on return.
    private func cyclePath(through start: Int, isMember: [Bool], parent: inout [Int]) -> [Int] {
        var queue = [start]
        var head = 0
        defer {
            for node in queue { parent[node] = -1 }
        }
        while head < queue.count {
            let node = queue[head]
            head += 1
            for next in plan.edges.dependencies(of: node) where next != GraphPlan.missing && isMember[next] {
                if next == start {
                    var path = [start]
                    var current = node
                    while current != start {
                        path.append(current)
                        current = parent[current]
                    }
                    return [start] + path.dropFirst().reversed() + [start]
                }
                if parent[next] == -1 {
                    parent[next] = node
                    queue.append(next)
                }
            }
        }
        return [start, start]
    }

    private func captiveDependencies() -> [ServiceGraphError.Problem] {
        var problems: [ServiceGraphError.Problem] = []
        // Lifetimes are read from the plan's byte array, the edges in place; a provider is looked at only
        // when it is wrong.
        let lifetimes = plan.lifetimes
        var captives: [(slot: Int, dependency: Int, kind: _DependencyKind)] = []
        let edgeKinds = plan.edgeKinds
        // A singleton's provider of a transient that needs a scope further down would resolve it
        // outside any scope: made only where a graph has providers.
        let needsScope = edgeKinds?.contains(.provider) == true ? servicesNeedingScope() : nil
        for slot in lifetimes.indices where edgeKinds == nil {
            // Every edge direct (most graphs): the lifetimes alone decide.
            plan.edges.forEachDependency(of: slot) { dependency in
                if dependency != GraphPlan.missing, !lifetimes[slot].mayDepend(on: lifetimes[dependency]) {
                    captives.append((slot, dependency, .direct))
                }
            }
        }
        for slot in lifetimes.indices where edgeKinds != nil {
            var position = plan.edges.firstEdge(of: slot)
            plan.edges.forEachDependency(of: slot) { dependency in
                defer { position += 1 }
                guard dependency != GraphPlan.missing else { return }
                let kind = edgeKinds?[position] ?? .direct
                if !lifetimes[slot].mayDepend(on: lifetimes[dependency], through: kind)
                    || kind == .provider && lifetimes[slot] == .singleton && needsScope?[dependency] == true
                {
                    captives.append((slot, dependency, kind))
                }
            }
        }
        for (slot, dependency, kind) in captives where !plan.isReportedWithItsPair(slot) {
            let provider = plan.providers[slot]
            let captive = plan.providers[dependency]
            problems.append(
                .init(
                    .captiveDependency,
                    key: plan.name(slot),
                    path: plan.pathFromRoot(to: slot) + [plan.name(dependency)],
                    site: provider.site.site,
                    message: kind == .provider
                        ? "captive dependency: \(plan.name(slot)) (\(provider.lifetime)) depends on a provider of \(plan.name(dependency)) (\(captive.lifetime)\(captive.lifetime == .scoped ? "" : ", which needs a scoped service")), which would resolve it outside any scope"
                        : captive.isSeed
                            ? "captive dependency: \(plan.name(slot)) (\(provider.lifetime)) depends on \(plan.name(dependency)) (a seed, given to each scope), which a \(provider.lifetime) would keep alive past its scope"
                            : "captive dependency: \(plan.name(slot)) (\(provider.lifetime)) depends on \(plan.name(dependency)) (\(captive.lifetime)), which would be kept alive longer than its lifetime allows"
                )
            )
        }
        return problems
    }
}

// MARK: - Modules

extension GraphValidator {
    /// " (from module A and module B)" for duplicates registered by modules; nothing otherwise.
    fileprivate func modulesOf(_ first: Registration, _ again: Registration) -> String {
        guard first.module != 0 || again.module != 0 else { return "" }
        let modules = plan.providers.modules
        let names = [first, again].map {
            $0.module == 0 ? "outside any module" : "module \(modules[Int($0.module)].name)"
        }
        return " (\(names[0]), then \(names[1]))"
    }

    /// Edges from a service outside a module to a key the module keeps private, each with both sites.
    fileprivate func privateDependencies() -> [ServiceGraphError.Problem] {
        let modules = plan.providers.modules
        guard modules.count > 1, modules.contains(where: { !$0.privateKeys.isEmpty }) else { return [] }
        var problems: [ServiceGraphError.Problem] = []
        for slot in plan.providers.indices {
            let module = plan.providers[slot].module
            for target in plan.edges.dependencies(of: slot) where target != GraphPlan.missing {
                let owner = plan.providers[target].module
                guard owner != 0, owner != module,
                    modules[Int(owner)].privateKeys.contains(plan.providers[target].keyID)
                else { continue }
                let dependent = plan.name(slot)
                let key = plan.name(target)
                let from = module == 0 ? "outside any module" : "in module \(modules[Int(module)].name)"
                problems.append(
                    .init(
                        .privateDependency,
                        key: key,
                        path: [dependent, key],
                        site: plan.providers[slot].site.site,
                        message:
                            "\(dependent) (\(from)) depends on \(key), which is private to module \(modules[Int(owner)].name) (provided at \(plan.providers[target].site.site))"
                    )
                )
            }
        }
        return problems
    }
}
