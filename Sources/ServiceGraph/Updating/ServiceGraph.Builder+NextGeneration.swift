extension ServiceGraph.Builder {
    /// The plan of this builder, the next generation of `current`, or every problem it has: the whole
    /// graph's, as ``validate()`` reports them, with a key the change set removed that a service still
    /// requires named as removed, and a removed key that neither `current` nor the next graph has (a
    /// removal that removes nothing, most likely a mistaken key).
    func validatedNextPlan(after current: GraphPlan) throws(ServiceGraphError) -> GraphPlan {
        let checked = checkedPlan
        var problems = checked.findings.problems
        if !removedKeys.isEmpty {
            let next = checked.plan
            let unknown = removedKeys.filter { key, _ in
                current.table.slot(for: key) == nil && next.table.slot(for: key) == nil
            }.values
            let removedNames = Set(
                removedKeys.keys.compactMap { key in current.table.slot(for: key).map { current.name($0) } }
            )
            problems = problems.map { problem in
                guard problem.code == .missingProvider, removedNames.contains(problem.key) else { return problem }
                let dependent = problem.path.dropLast().last ?? "a service"
                return .init(
                    .missingProvider,
                    key: problem.key,
                    path: problem.path,
                    site: problem.site,
                    message: "\(problem.key) is removed, but \(dependent) still requires it; remove \(dependent) "
                        + "too, or keep \(problem.key)"
                )
            }
            // Names of keys the graph does not have come from the builder, which removed them.
            for key in unknown.sorted(by: { $0.serviceName < $1.serviceName }) {
                let name = key.serviceName
                problems.append(
                    .init(
                        .keyNotFound,
                        key: name,
                        message: "\(name) is removed, but the current generation has no such key"
                    )
                )
            }
        }
        guard problems.isEmpty else {
            let (plan, found) = (checked.plan, problems)
            throw ServiceGraphError(
                found,
                snapshot: GraphSnapshot { GraphDescription(plan: plan).marked(with: found) }
            )
        }
        return checked.plan
    }

    /// Builds the next generation of `current` from this builder's `plan`: the singletons `diff`
    /// adopts are taken over as they are, with their hooks (no hook runs on them); the others are made
    /// in dependency order, independent ones concurrently, with `didAdd`, as a build makes them.
    ///
    /// If a factory or a `didAdd` fails, what was made is released in reverse order, the taken-over
    /// singletons are left to `current`, and the error names the service and its path.
    nonisolated(nonsending) func buildNextGeneration(
        of current: ServiceGraph,
        plan: GraphPlan,
        diff: GenerationDiff
    ) async throws(ServiceGraphError) -> ServiceGraph {
        let core = _GraphCore(
            plan: plan,
            hookTimeout: hookTimeout,
            factoryTimeout: factoryTimeout,
            parentClaims: nil,
            events: EventSink(handler: eventHandler, kinds: eventKinds),
            reportsResolveEvents: reportsResolveEvents
        )
        var nextSlot = [Int?](repeating: nil, count: current.core.count)
        var boxes = [_AnyBox?](repeating: nil, count: diff.adopted.isEmpty ? 0 : plan.count)
        for (currentSlot, slot) in diff.adopted {
            guard let box = current.core.createdSingletonBox(at: currentSlot)?.takeUnretainedValue() else {
                continue
            }
            nextSlot[currentSlot] = slot
            // One created on first use here is placed where readers look for it; the build places the rest.
            if plan.deferred?[slot] == true, let deferred = core.deferredSingletons {
                deferred.adopt(box, at: slot)
            } else {
                boxes[slot] = box
            }
        }
        // The taken-over hooks are this generation's from the start (in the order they started, which
        // the shutdown reverses): a rebuilt service handing out one of those instances under its own key
        // does not run them again.
        let currentDeferred = current.core.deferredSingletons
        let currentStarted = current.log.started + (currentDeferred?.startedSoFar ?? [])
        let heirs = Dictionary(diff.transferred.map { ($0.currentHolder, $0.next) }) { first, _ in first }
        let adoptedStarted = currentStarted.compactMap { service in
            (nextSlot[service.slot] ?? heirs[service.slot]).map { StartedService(slot: $0, hooks: service.hooks) }
        }
        for service in adoptedStarted { _ = core.hookClaims.claim(service.hooks, for: service.slot) }
        // A singleton made again that returns an instance `current` started takes its hooks over.
        core.hookClaims.follow(current.core.hookClaims)
        let currentAliases = current.log.aliases + (currentDeferred?.aliasesSoFar ?? [])
        let adoptedAliases = currentAliases.compactMap { alias -> HookAlias? in
            guard let slot = nextSlot[alias.slot], let holder = nextSlot[alias.holder] else { return nil }
            return HookAlias(slot, heldBy: holder, in: core)
        }
        var build = SingletonBuild(plan: plan, core: core, adopting: boxes)
        switch await build.run() {
        case .built(var log):
            log.started = adoptedStarted + log.started
            log.aliases = adoptedAliases + log.aliases
            return ServiceGraph(core: core, log: log, parent: nil, childID: -1, requiresShutdown: requiresShutdown)
        case .failed(let error):
            let problems = error.problems
            throw ServiceGraphError(
                problems,
                snapshot: GraphSnapshot(failedBuild: core, log: build.log, problems: problems)
            )
        }
    }
}
